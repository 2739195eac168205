"""Compiling on two cores: on a machine's first run, a second process compiles part of the
solver's kernels into numba's cache while this process compiles the rest.

numba compiles on one thread, and the solver's kernels form independent trees: the knots'
derivatives (:mod:`ddp.kernels.evaluation`, about half of a cold UR3 compile),
the passes (rollouts, the backward pass, the costs alone) and the derivatives of the protocol path
(the costs and the dynamics of the finite-difference and CasADi backends).  Every kernel has one
compiled signature (``tests/test_cache_guard.py``), so a process that runs a kernel on a small
problem of its own compiles the very machine code that this process then loads from the cache.

:func:`start` launches ``python -m ddp.compile_worker GROUP ...`` (:data:`GROUPS`) when one of
the groups is not cached yet, the machine has two cores or more and ``SODDP_COMPILE_ASIDE`` is not
``0``; :func:`wait` blocks until the process has compiled them (it prints each group's name when
done).  The solver's warm-up (:func:`ddp.solver.warm_up`) compiles the derivatives and the
closed-loop rollout with its cost here, then waits, then loads the rest; a solve is never timed
while the process aside compiles.  The cost program compiles in one process only, first (in
this one, or aside: :func:`groups_of`), and the other loads it from the cache (compiling it in
both processes at once took each of them 15-30 s).  If the process fails, this
one compiles what is missing itself: the aside only ever saves time.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
from pathlib import Path

from .kernels import assemble_step_chunk
from .kernels import contact_knots as _contact_knots
from .kernels import costs as _kcosts
from .kernels import is_cached
from .kernels import linked as _linked
from .kernels import passes as _passes
from .kernels.records import SecondOrderMode

#: what the process aside can compile, and the kernel whose cache entry says it is compiled
GROUPS = {"costs": _kcosts.cost_knots, "passes": _passes.backward_pass,
          "protocol": assemble_step_chunk,
          "lie": _linked.knot_lie_expansion, "contracted": _linked.knot_second_order,
          "contacts": _contact_knots.contact_second_order}

_ROOT = Path(__file__).resolve().parent.parent  # the folder that holds the ddp package


class _Aside:
    """The process aside, the groups it was asked for and those it reported done."""

    def __init__(self, groups):
        env = dict(os.environ, SODDP_COMPILE_ASIDE="0",
                   PYTHONPATH=os.pathsep.join([str(_ROOT)] + [
                       p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        self.groups, self.done = tuple(groups), set()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ddp.compile_worker", *self.groups], stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, text=True)

    def wait(self, group=None):
        want = set(self.groups) if group is None else {group} & set(self.groups)
        while not want <= self.done:
            line = self.process.stdout.readline()
            if not line:  # the process ended (or failed): this one compiles what is missing
                self.done |= want
                break
            self.done.add(line.strip())
        if self.done >= set(self.groups):
            self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_ASIDE: _Aside | None = None


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def contracted(problem) -> bool:
    """Whether DDP's solve of ``problem`` (``second_order`` auto) links the free knots'
    contracted second-order terms (the group ``contracted``)."""
    integrator = problem.integrator
    return (integrator.dynamics.compiled and not integrator.all_contacts
            and integrator.second_order_mode("auto") == SecondOrderMode.CONTRACTED)


def has_lie_joints(problem) -> bool:
    """Whether the robot of ``problem`` has Lie-group joints, whose expansion of (+) the knots'
    derivatives and the CasADi backend take from the kernels (the group ``lie``)."""
    return problem.integrator.record.lie_offsets.shape[0] > 0


def groups_of(problem, protocol=False) -> tuple:
    """The groups that the process aside compiles for a solve of ``problem`` on the analytical
    backend (and the protocol path's with ``protocol``: ``soddp compare``), in the order it
    compiles them.  Without contacts the warm-up compiles the cost program first, and the
    process aside the expansion of (+) first (the warm-up links it with the knots' derivatives
    and waits for it there).  With contacts the warm-up starts with the contact knots'
    derivatives, which take long enough for the process aside to compile the costs first
    (measured, cold ``soddp solve hyq-walk``: 114 s this way, 138 s with the order without
    contacts); it links the expansion of (+) itself."""
    contacts = problem.integrator.has_contacts
    lie_first = ("lie",) * (has_lie_joints(problem) and not contacts)
    return (("costs",) * contacts + lie_first + ("passes",)
            + ("contracted",) * contracted(problem) + ("protocol",) * protocol
            + ("contacts",) * contacts)


def compiles(group) -> bool:
    """Whether a process aside runs that was given ``group`` (and has not reported it done)."""
    return _ASIDE is not None and group in _ASIDE.groups and group not in _ASIDE.done


def start(groups=("passes",)) -> bool:
    """Launch the process aside for those of ``groups`` (names of :data:`GROUPS`) that numba has
    not cached, unless one runs already, the machine has one core or ``SODDP_COMPILE_ASIDE=0``.
    True when a process was launched."""
    global _ASIDE
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"groups: expected names of {sorted(GROUPS)}; got {unknown}")
    if _ASIDE is not None or os.environ.get("SODDP_COMPILE_ASIDE") == "0" or _cores() < 2:
        return False
    cold = [g for g in groups if not is_cached(GROUPS[g])]
    if not cold:
        return False
    _ASIDE = _Aside(cold)
    atexit.register(_ASIDE.stop)
    return True


def wait(group=None) -> None:
    """Block until the process aside has compiled ``group`` (every group it was given when
    None); at once when there is none."""
    if _ASIDE is not None:
        _ASIDE.wait(group)


def wait_for_solver() -> None:
    """Block until the process aside has compiled every group a solve on the analytical
    backend loads: all but ``protocol``, which the process aside compiles last, while this one
    loads the others."""
    if _ASIDE is not None:
        for group in _ASIDE.groups:
            if group != "protocol":
                _ASIDE.wait(group)
