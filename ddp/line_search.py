"""The forward pass: a backtracking line search on the step length of the closed-loop rollout
of a :class:`~ddp.backward.Policy`.  Each trial is one
:meth:`~ddp.problem.ShootingProblem.closed_loop_cost` (on the analytical backend one compiled
call: the rollout, then the costs of its knots in parallel, on the rollout's kinematics).  On a
multiple-shooting trajectory with gaps the rollout is FDDP's feasibility-driven one (each state
keeps the fraction 1 - alpha of its gap) and the predicted decrease is FDDP's model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class AcceptedStep:
    """An accepted step: the new trajectory, its cost, the step length, the expected and actual
    decrease and their ratio."""

    xs: np.ndarray
    us: np.ndarray
    cost: float
    alpha: float
    expected: float
    actual: float

    @property
    def ratio(self) -> float:
        return self.actual / self.expected if self.expected != 0 else float("nan")


def line_search(problem, policy, cost, alphas, c1, max_increase_ratio=2.0,
                out=None) -> AcceptedStep | None:
    """The first step length of ``alphas`` whose actual decrease is at least ``c1`` times the
    expected one (and not an increase beyond rounding); while gaps remain, a step whose model
    predicts an increase is accepted when the actual increase is at most ``max_increase_ratio``
    times the predicted one.  None when no step length is accepted.  ``out``: the work arrays
    the trials are rolled out into (``problem.evaluation.trial_record``; None: new arrays)."""
    gaps = policy.gaps
    for alpha in alphas:
        xs, us, new = problem.closed_loop_cost(policy.xs, policy.us, policy.k, policy.K, alpha,
                                               gaps=gaps, out=out)
        if not np.isfinite(new):
            continue
        dxs = None if gaps is None else problem.integrator.difference(policy.xs, xs)
        expected = policy.expected_decrease(alpha, dxs)
        actual = cost - new
        if expected >= 0:
            ok = actual >= c1 * expected and actual > -1e-14 * abs(cost)
        else:
            ok = gaps is not None and actual >= max_increase_ratio * expected
        if ok:
            return AcceptedStep(xs, us, new, alpha, expected, actual)
    return None
