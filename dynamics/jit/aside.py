"""Compiling on two cores: on a machine's first run, a second process compiles some groups of
kernels into numba's cache while this process compiles the others.

numba compiles on one thread, and a program's kernels often form independent trees.  Every kernel
has one compiled signature (``tests/test_cache_guard.py``), so a process that runs a kernel on a
small problem of its own compiles the very machine code that the first process then loads from
the cache.  A :class:`CompileAside` names the groups a worker module can compile (each with the
kernel whose cache entry says it is done); :meth:`~CompileAside.start` launches
``python -m WORKER GROUP ...`` for the groups not cached yet, when the machine has two cores or
more and ``SODDP_COMPILE_ASIDE`` is not ``0``; the worker prints each group's name when it has
compiled it, and :meth:`~CompileAside.wait` blocks until then.  If the process fails, the first
one compiles what is missing itself: the aside only ever saves time.  Two processes never
compile one kernel at once: the kernels' cache lock (:mod:`.dispatch`) makes the second wait
and load.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys

from .cache import is_cached


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Process:
    """The process aside, the groups it was asked for and those it reported done."""

    def __init__(self, worker, groups, root):
        env = dict(os.environ, SODDP_COMPILE_ASIDE="0",
                   PYTHONPATH=os.pathsep.join([str(root)] + [
                       p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
        self.groups, self.done = tuple(groups), set()
        self.process = subprocess.Popen(
            [sys.executable, "-m", worker, *self.groups], stdout=subprocess.PIPE,
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


class CompileAside:
    """The groups of kernels that ``python -m worker GROUP ...`` compiles (``groups``: name ->
    the kernel whose cache entry says the group is compiled), run with ``root`` (the folder
    that holds the worker's package) first on its ``PYTHONPATH``; at most one process aside
    per instance and process."""

    def __init__(self, worker: str, groups: dict, root):
        self.worker, self.groups, self.root = worker, dict(groups), root
        self._process: _Process | None = None

    def start(self, groups) -> bool:
        """Launch the process aside for those of ``groups`` (names of :attr:`groups`) that
        numba has not cached, unless one runs already, the machine has one core or
        ``SODDP_COMPILE_ASIDE=0``.  True when a process was launched."""
        unknown = [g for g in groups if g not in self.groups]
        if unknown:
            raise ValueError(f"groups: expected names of {sorted(self.groups)}; got {unknown}")
        if (self._process is not None or os.environ.get("SODDP_COMPILE_ASIDE") == "0"
                or cores() < 2):
            return False
        cold = [g for g in groups if not is_cached(self.groups[g])]
        if not cold:
            return False
        self._process = _Process(self.worker, cold, self.root)
        atexit.register(self._process.stop)
        return True

    def compiles(self, group) -> bool:
        """Whether a process aside runs that was given ``group`` and has not reported it
        done."""
        p = self._process
        return p is not None and group in p.groups and group not in p.done

    def wait(self, group=None) -> None:
        """Block until the process aside has compiled ``group`` (every group it was given
        when None); at once when there is none."""
        if self._process is not None:
            self._process.wait(group)

    def wait_all_but(self, *groups) -> None:
        """Block until the process aside has compiled every group it was given but
        ``groups``."""
        if self._process is not None:
            for group in self._process.groups:
                if group not in groups:
                    self._process.wait(group)
