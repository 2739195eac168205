"""The backward pass: the Riccati recursion of DDP / iLQR over all knots, in one compiled call
(:func:`ddp.kernels.passes.backward_pass`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import passes as _passes


@dataclass
class Policy:
    """The result of a backward pass: feedforward k (T, nu) and feedback K (T, nu, ndx) gains
    about the trajectory (xs, us), and the expected decrease ``-(alpha dV1 + alpha^2 dV2)`` of a
    step of length alpha.  Run it with :meth:`ddp.ShootingProblem.closed_loop` or
    :meth:`control`."""

    xs: np.ndarray
    us: np.ndarray
    k: np.ndarray
    K: np.ndarray
    dV1: float
    dV2: float

    def expected_decrease(self, alpha: float) -> float:
        return -(alpha * self.dV1 + alpha ** 2 * self.dV2)

    def control(self, t: int, dx, alpha: float = 1.0):
        """u_t for a state deviation dx = x_t (-) xs_t (tangent, 2 nv)."""
        return self.us[t] + alpha * self.k[t] + self.K[t] @ np.asarray(dx, dtype=float)


def backward(problem, xs, us, derivatives, method, reg_u, reg_x=0.0, box_qp_iter=50):
    """(Policy, None) or (None, knot where Q_uu was not positive definite).  ``method``: "ddp"
    adds the exact second-order dynamics terms, "ilqr" drops them."""
    P, d = problem, derivatives
    run, term, step = d.running, d.terminal, d.step
    T, nu, ndx = P.T, P.nu, P.ndx
    k = np.zeros((T, nu))
    K = np.zeros((T, nu, ndx))
    dV = np.zeros(2)
    Vx0 = np.zeros(ndx)
    so = P.integrator.second_order_arguments(step)
    if method != "ddp":
        so = so[:6] + (0,) + so[7:]
    status, knot = _passes.backward_pass(
        step.Fx, step.Fu, run.lx, run.lu, run.lxx, run.lxu, run.luu, term.lx[0], term.lxx[0],
        float(reg_u), float(reg_x), us, P.u_min, P.u_max, P.bounded, int(box_qp_iter), *so, k, K,
        dV, Vx0)
    if status != _passes.OK:
        return None, int(knot)
    return Policy(xs, us, k, K, float(dV[0]), float(dV[1])), None


def gradient_norm(problem, us, derivatives) -> float:
    """|| dJ/du || of the total cost (projected onto the control box), by the adjoint sweep."""
    d = derivatives
    return float(_passes.gradient_norm(d.step.Fx, d.step.Fu, d.running.lx, d.running.lu,
                                       d.terminal.lx[0], us, problem.u_min, problem.u_max))
