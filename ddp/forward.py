"""The forward pass: a backtracking line search on the step length of the closed-loop rollout
of a :class:`~ddp.backward.Policy` (each trial one compiled rollout and one batched cost call)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Step:
    """An accepted step: the new trajectory, its cost, the step length and the expected and
    actual decrease."""

    xs: np.ndarray
    us: np.ndarray
    cost: float
    alpha: float
    expected: float
    actual: float


def line_search(problem, policy, cost, alphas, c1) -> Step | None:
    """The first step length of ``alphas`` whose actual decrease is at least ``c1`` times the
    expected one (and not an increase beyond rounding); None when none is."""
    for alpha in alphas:
        xs, us = problem.closed_loop(policy.xs, policy.us, policy.k, policy.K, alpha)
        new = problem.cost(xs, us)
        expected = policy.expected_decrease(alpha)
        actual = cost - new
        if np.isfinite(new) and actual >= c1 * expected and actual > -1e-14 * abs(cost):
            return Step(xs, us, new, alpha, expected, actual)
    return None
