"""The process aside of :data:`ddp.warm_up.ASIDE`: ``python -m ddp.compile_worker GROUP ...``
compiles the kernels of each group (:mod:`ddp.warm_up` lists them) into numba's cache, on a small
problem of its own, and prints the group's name when they are cached.  A kernel has one compiled
signature whatever the robot, so the small problem (a random tree of three bodies, four knots)
compiles what any problem of the same backend loads.
"""

from __future__ import annotations

import sys

import numpy as np
import pinocchio

import dynamics
from dynamics import lie

from . import costs as _costs
from .kernels import every_thread
from .kernels.records import LINKED_LIE_EXPANSION, LINKED_SECOND_ORDER, SecondOrderMode
from .local_model import GAUSS_NEWTON, exact_model
from .phases import Phase
from .problem import ShootingProblem
from .warm_up import warm_models, warm_up_closed_loop, warm_up_passes


def small_problem(backend, model=None, phases=None) -> ShootingProblem:
    """Four knots of a three-body random tree (or of ``model``, over ``phases``) on ``backend``
    (a Dynamics class taking the model), with state and control regularization."""
    m = dynamics.robots.random_tree(3, seed=0) if model is None else model
    d = backend(m)
    x0 = np.concatenate([m.neutral(), np.zeros(m.nv)])
    running = _costs.Sum([_costs.StateRegularization(d, x0, 1.0),
                          _costs.ControlRegularization(m.nv, 1e-3)])
    return ShootingProblem(d, x0, None if phases else 4, 0.01, running,
                           _costs.StateRegularization(d, x0, 1.0), phases=phases)


def compile_passes() -> None:
    P = small_problem(dynamics.AnalyticalDynamics)
    us = np.zeros((P.T, P.nu))
    xs = np.repeat(P.x0[None], P.T + 1, axis=0)
    # DDP with the full tensors, which the backward pass contracts itself: the contracted terms
    # it links are the group "contracted"'s
    models = (exact_model("ddp", "exact", SecondOrderMode.TENSORS), GAUSS_NEWTON)
    derivatives = [P.evaluation.unevaluated_derivatives(xs, us, m) for m in models]
    warm_up_passes(P, derivatives, models)
    P.cost(xs, us)


def compile_costs() -> None:
    """The group ``costs``: the cost program alone."""
    P = small_problem(dynamics.AnalyticalDynamics)
    P.cost(np.repeat(P.x0[None], P.T + 1, axis=0), np.zeros((P.T, P.nu)))


def compile_protocol() -> None:
    """The group ``protocol``, on a small random tree of revolute joints (the expansion of (+),
    which robots with Lie-group joints take, is the group ``lie``)."""
    tree = dynamics.robots.random_tree(3, joint_types=("revolute",), seed=0)
    P = small_problem(dynamics.FiniteDifferenceDynamics, tree)
    us = np.zeros((P.T, P.nu))
    xs = P.rollout(us)
    for m in warm_models(P):
        P.calc_diff(xs, us, m)
    P.cost(xs, us)
    warm_up_closed_loop(P, xs, us)
    P.failure(xs, us)


def compile_lie() -> None:
    """The group ``lie``: the expansion of (+) of robots with Lie-group joints, which the
    derivatives link (:func:`~ddp.kernels.linked.knot_lie_expansion`) and the CasADi backend's
    problems take batched from the kernels, on the small random tree."""
    P = small_problem(dynamics.AnalyticalDynamics)
    P.compiled_problem.link(LINKED_LIE_EXPANSION)
    q = np.repeat(P.x0[None, :P.nq], P.T, axis=0)
    lie.integrate_second_order(P.dynamics.model, q, np.zeros((P.T, P.nv)))


def compile_contracted() -> None:
    P = small_problem(dynamics.AnalyticalDynamics)
    us = np.zeros((P.T, P.nu))
    xs = np.repeat(P.x0[None], P.T + 1, axis=0)
    local = exact_model("ddp", "exact", SecondOrderMode.CONTRACTED)
    d = P.evaluation.unevaluated_derivatives(xs, us, local)
    P.compiled_problem.link_second_order(d.step, d.second_order)


def compile_contacts() -> None:
    m = dynamics.robots.random_tree(3, floating_base=True, seed=0)
    foot = pinocchio.Frame("foot", m.njoints - 1, pinocchio.SE3.Identity(),
                           pinocchio.FrameType.OP_FRAME)
    m.pin_model.addFrame(foot)
    P = small_problem(dynamics.AnalyticalDynamics, m, [Phase(2, (foot.name,))])
    us = np.zeros((P.T, P.nu))
    xs = np.repeat(P.x0[None], P.T + 1, axis=0)
    derivatives = P.evaluation.unevaluated_derivatives(xs, us, warm_models(P)[0])
    P.compiled_problem.link(LINKED_SECOND_ORDER, derivatives=derivatives.step,
                            second_order=derivatives.second_order)


GROUPS = {"costs": compile_costs, "passes": compile_passes, "protocol": compile_protocol,
          "lie": compile_lie,
          "contracted": compile_contracted, "contacts": compile_contacts}


def main(groups) -> int:
    for g in groups:
        with np.errstate(all="ignore"), every_thread():  # the parallel doors too
            GROUPS[g]()
        print(g, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
