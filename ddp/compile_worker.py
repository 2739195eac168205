"""The process aside of :mod:`ddp.compile_aside`: ``python -m ddp.compile_worker GROUP ...``
compiles the kernels of each group into numba's cache, on a small problem of its own, and prints
the group's name when they are cached.

* ``passes``: every compiled kernel of a solve on the analytical backend but the knots'
  derivatives and the closed-loop rollout with its cost, which the solver's warm-up compiles
  meanwhile (the costs alone first, then rollouts, the backward pass, the gradient), on
  derivative records of zeros;
* ``protocol``: the kernels of the protocol path that the passes do not share: the derivatives,
  costs and rollouts of a problem on the finite-difference backend, and the expansion of (+)
  that the CasADi backend's problems take from the kernels.  ``soddp compare`` compiles them in
  its own process while the process aside compiles the passes
  (``compile_aside.start(meanwhile=...)``).

A kernel has one compiled signature whatever the robot, so the small problem (a random tree of
three bodies, four knots) compiles what any problem of the same backend loads.
"""

from __future__ import annotations

import sys

import numpy as np

import dynamics
from dynamics import lie

from . import costs as _costs
from . import solver
from .problem import ShootingProblem


def small_problem(backend) -> ShootingProblem:
    """Four knots of a three-body random tree on ``backend`` (a Dynamics class taking the
    model), with state and control regularization."""
    m = dynamics.robots.random_tree(3, seed=0)
    d = backend(m)
    x0 = np.concatenate([m.neutral(), np.zeros(m.nv)])
    running = _costs.Sum([_costs.StateRegularization(d, x0, 1.0),
                          _costs.ControlRegularization(m.nv, 1e-3)])
    return ShootingProblem(d, x0, 4, 0.01, running, _costs.StateRegularization(d, x0, 1.0))


def compile_passes() -> None:
    P = small_problem(dynamics.AnalyticalDynamics)
    us = np.zeros((P.T, P.nu))
    xs = np.repeat(P.x0[None], P.T + 1, axis=0)
    # the costs first: the derivatives (in the other process) call the cost program last, and
    # load it from the cache when it is there by then
    P.cost(xs, us)
    models = solver.warm_models(P)
    derivatives = [P.evaluation.unevaluated_derivatives(xs, us, m) for m in models]
    solver.warm_up_passes(P, derivatives, models)


def compile_protocol() -> None:
    P = small_problem(dynamics.FiniteDifferenceDynamics)
    us = np.zeros((P.T, P.nu))
    xs = P.rollout(us)
    for m in solver.warm_models(P):
        P.calc_diff(xs, us, m)
    P.cost(xs, us)
    solver.warm_up_closed_loop(P, xs, us)
    P.failure(xs, us)
    q = np.repeat(P.x0[None, :P.nq], P.T, axis=0)
    lie.integrate_second_order(P.dynamics.model, q, np.zeros((P.T, P.nv)))  # the AD backend's


GROUPS = {"passes": compile_passes, "protocol": compile_protocol}


def main(groups) -> int:
    for g in groups:
        with np.errstate(all="ignore"):
            GROUPS[g]()
        print(g, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
