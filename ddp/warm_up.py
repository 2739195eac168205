"""Loading (or, on a machine's first run, compiling) every compiled kernel a solve runs, before the
solve, so that compiling is never counted as solve time: :func:`warm_up`, which
:meth:`ddp.problem.ShootingProblem.prepare` calls once per kind of problem and process.

On a machine's first run, a process aside (:class:`dynamics.jit.CompileAside`, ``python -m
ddp.compile_worker GROUP ...``) compiles some groups of the solver's kernels into numba's cache
while this process compiles the others; the groups and what compiles them are here. The solver's
kernels form independent trees:

* ``costs``: the cost program alone (first, for a problem with contacts: the warm-up then
  starts with the contact knots' derivatives and reaches the costs later);
* ``passes``: every compiled kernel of a solve on the analytical backend but the knots'
  derivatives and the closed-loop rollout with its cost, which the warm-up compiles meanwhile
  (rollouts, the backward pass, the gradient, then the costs alone), on derivative records of
  zeros;
* ``protocol``: the kernels of the protocol path that the passes do not share: the derivatives,
  costs and rollouts of a problem on the finite-difference backend (``soddp compare``);
* ``lie``: the expansion of (+) of robots with Lie-group joints, which the knots' derivatives
  link and the CasADi backend's problems take batched from the kernels;
* ``contracted``: DDP's contracted second-order terms at the free knots
  (:func:`~ddp.kernels.linked.knot_second_order`, which the backward pass links when DDP takes
  them: robots of more than four DoFs);
* ``contacts``: DDP's second-order terms at the knots with contacts
  (:func:`~ddp.kernels.contact_knots.contact_second_order`), on a floating random tree with one
  point contact, while the warm-up compiles the contact knots' derivatives and steps.

A kernel has one compiled signature whatever the robot, so the small problem of the process aside
(a random tree of three bodies, four knots) compiles what any problem of the same backend loads.
The cost program compiles in one process only, first (in this one, or aside), and the other loads
it from the cache (compiling it in both processes at once took each of them 15-30 s).
"""

from __future__ import annotations

import weakref
from pathlib import Path

import numpy as np

from dynamics.jit import CompileAside

from .backward import backward, gradient_norm
from .kernels import assemble_step_chunk, compile_notice, every_thread
from .kernels import contact_knots as _contact_knots
from .kernels import costs as _kcosts
from .kernels import evaluation as _kev
from .kernels import linked as _linked
from .kernels import passes as _passes
from .kernels.records import Regularization, SecondOrderMode
from .local_model import GAUSS_NEWTON, exact_model

#: the process aside of a first run: its groups, each with the kernel whose cache entry says it
#: is compiled
ASIDE = CompileAside("ddp.compile_worker", {
    "costs": _kcosts.cost_knots, "passes": _passes.backward_pass,
    "protocol": assemble_step_chunk, "lie": _linked.knot_lie_expansion,
    "contracted": _linked.knot_second_order, "contacts": _contact_knots.contact_second_order},
    Path(__file__).resolve().parent.parent)


def contracted(problem) -> bool:
    """Whether DDP's solve of ``problem`` (``second_order`` auto) links the free knots'
    contracted second-order terms (the group ``contracted``)."""
    C = problem.compiled_problem
    return (C.links_knots and not C.all_contacts
            and C.second_order_mode("auto") == SecondOrderMode.CONTRACTED)


def has_lie_joints(problem) -> bool:
    """Whether the robot of ``problem`` has Lie-group joints, whose expansion of (+) the knots'
    derivatives and the CasADi backend take from the kernels (the group ``lie``)."""
    return problem.compiled_problem.lie_joints


def groups_of(problem, protocol=False) -> tuple:
    """The groups that the process aside compiles for a solve of ``problem`` on the analytical
    backend (and the protocol path's with ``protocol``: ``soddp compare``), in the order it
    compiles them.  Without contacts the warm-up compiles the cost program first, and the
    process aside the expansion of (+) first (the warm-up links it with the knots' derivatives
    and waits for it there).  With contacts the warm-up starts with the contact knots'
    derivatives, which take long enough for the process aside to compile the costs first
    (measured, cold ``soddp solve hyq-walk``: 114 s this way, 138 s with the order without
    contacts); it links the expansion of (+) itself."""
    contacts = problem.compiled_problem.has_contacts
    lie_first = ("lie",) * (has_lie_joints(problem) and not contacts)
    return (("costs",) * contacts + lie_first + ("passes",)
            + ("contracted",) * contracted(problem) + ("protocol",) * protocol
            + ("contacts",) * contacts)


_WARM = set()  # the kinds of problems whose compiled kernels this process has loaded
#: the problems on a backend other than the analytical one that were warmed up: such a backend
#: may build functions of its own per model and contact set (CasADi), so each problem is warmed
_WARM_PROBLEMS = weakref.WeakSet()


def warm_up(problem) -> None:
    """Load (or, on a machine's first run, compile) every compiled kernel a solve of
    ``problem`` calls, untimed: the derivatives with DDP's exact model and with Gauss-Newton,
    a backward pass, a closed-loop rollout and its cost, the gradient, the costs alone.  Called
    by :func:`~ddp.solver.solve` once per kind of problem and process (on a backend other than the
    analytical one, once per problem: CasADi builds its functions per model and contact set),
    so that compiling is never counted as solve time; on a cold cache it prints one line saying
    so first.  There, on the analytical backend, a process aside compiles the passes while this
    one compiles the derivatives and the closed-loop rollout with its cost
    (:data:`ASIDE`); this returns when the process aside is done."""
    compiled = problem.dynamics.compiled
    warmed, key = (_WARM, _kind(problem)) if compiled else (_WARM_PROBLEMS, problem)
    if key in warmed:
        return
    kernel = _kev.derivatives_chunk if compiled else _passes.backward_pass
    # measured: 57-63 s (soddp compare ur3 and soddp solve hyq, cold, 2 cores, with the
    # process aside)
    cold = compile_notice(kernel, "the solver's kernels", 60)
    if compiled and (cold or problem.compiled_problem.has_contacts):  # only the groups not cached
        ASIDE.start(groups_of(problem))
    P = problem
    if not compiled:  # a backend's own failures show as the solve meets them: its rollout first
        with np.errstate(all="ignore"):
            P.rollout(P.initial_controls())
    # every thread: the parallel doors compile here, not in the first timed solve
    with np.errstate(all="ignore"), every_thread():
        # any states and controls: the rollout and RNEA may compile aside
        xs = np.repeat(P.x0[None], P.T + 1, axis=0)
        us = np.zeros((P.T, P.nu))
        models = warm_models(P)
        if not ASIDE.compiles("costs"):
            # the cost program first: the process aside's passes load it from the cache
            # (compiled in both processes at once, it took each of them 15-30 s)
            P.cost(xs, us)
        ASIDE.wait("lie")  # the expansion of (+) that the derivatives link
        derivatives = [P.calc_diff(xs, us, m) for m in models]
        warm_up_closed_loop(P, xs, us)  # here: the process aside has the other passes
        if contracted(P) and not ASIDE.compiles("contracted"):
            d = derivatives[0]  # DDP's contracted terms (linked), here too
            P.compiled_problem.link_second_order(d.step, d.second_order)
        ASIDE.wait_all_but("protocol")  # the protocol path may still compile aside
        warm_up_passes(P, derivatives, models)
    ASIDE.wait()  # a solve is never timed while the process aside compiles
    warmed.add(key)


def _kind(problem) -> tuple:
    """What sets the compiled kernels that a solve of ``problem`` loads: its evaluation and
    backend, and what it links (:meth:`~ddp.compiled_problem.CompiledProblem.link`: DDP's
    second-order mode, contacts, Lie-group joints)."""
    C = problem.compiled_problem
    return (type(problem.evaluation), type(problem.dynamics), C.second_order_mode("auto"),
            C.has_contacts, C.all_contacts, C.lie_joints)


def warm_models(problem):
    """The local models whose kernels a solve of ``problem`` runs: DDP's exact model (its
    second-order mode by the problem's size) and Gauss-Newton."""
    return (exact_model("ddp", "exact", problem.second_order_mode("auto")),
            GAUSS_NEWTON)


def warm_up_closed_loop(problem, xs, us) -> None:
    """The closed-loop rollout and its cost (the line search's kernel), with zero gains."""
    P = problem
    P.closed_loop_cost(xs, us, np.zeros((P.T, P.nu)), np.zeros((P.T, P.nu, P.ndx)), 0.5)


def warm_up_passes(problem, derivatives, models) -> None:
    """Run every compiled kernel of a solve of ``problem`` but the knots' derivatives and the
    closed-loop rollout with its cost (:func:`warm_up_closed_loop`, which the warm-up runs while
    the process aside compiles these): the initial guess, rollouts, backward passes, the
    gradient, the costs alone, the diagnosis of a failure, on the derivatives ``derivatives`` of
    the local models ``models``."""
    P = problem
    us = P.initial_controls()
    xs = P.rollout(us)
    P.failure(xs, us)
    for d, local in zip(derivatives, models):
        backward(P, xs, us, d, local, Regularization(1.0))
    gradient_norm(P, us, d)
    d.all_finite()
    P.cost_derivatives(xs, us, "gauss-newton", d.step.forces)
