"""The backward pass: the Riccati recursion of DDP / iLQR over all knots, in one compiled call
(:func:`ddp.kernels.passes.backward_pass`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import passes as _passes
from .kernels.records import Box, Costs, Regularization, SecondOrderMode, empty_gains
from .local_model import LocalModel


@dataclass
class Policy:
    """The result of a backward pass: feedforward k (T, nu) and feedback K (T, nu, ndx) gains
    about the trajectory (xs, us), the terms dV1 = sum k.Qu, dV2 = 1/2 sum k.Quu.k, the value
    gradients Vx (T + 1, ndx) and, for a multiple-shooting trajectory, its ``gaps``
    (T + 1, ndx, None when feasible) with ``fVxx[t] = V_xx,t f_t``.  ``gauss_newton_knots``:
    knots where the safeguard dropped the exact second-order terms.  Run it with
    :meth:`ddp.ShootingProblem.closed_loop` or :meth:`control`."""

    xs: np.ndarray
    us: np.ndarray
    k: np.ndarray
    K: np.ndarray
    dV1: float
    dV2: float
    Vx: np.ndarray | None = None
    gaps: np.ndarray | None = None
    fVxx: np.ndarray | None = None
    gauss_newton_knots: int = 0

    def expected_decrease(self, alpha: float, dxs=None) -> float:
        """The decrease of the total cost that the local model predicts for a step of length
        alpha: ``-(alpha dV1 + alpha^2 dV2)`` on a feasible trajectory.  With gaps it also needs
        the deviations ``dxs`` (T + 1, ndx) = x_try (-) xs of the trial rollout::

            - sum_t [alpha Vx_t.f_t - alpha^2/2 f_t.Vxx_t.f_t - (1 - alpha) (Vxx_t f_t).dx_t]

        which is exact on linear-quadratic problems (the FDDP model of Mastalli et al. 2020,
        derived for our sign conventions: Vx_t holds V_x + V_xx f)."""
        base = -(alpha * self.dV1 + alpha ** 2 * self.dV2)
        if self.gaps is None:
            return base
        if dxs is None:
            raise ValueError("dxs: a trajectory with gaps needs the trial deviations")
        f, fV = self.gaps, self.fVxx
        gap = (alpha * np.sum(self.Vx * f) - 0.5 * alpha ** 2 * np.sum(f * fV)
               - (1 - alpha) * np.sum(fV * dxs))
        return base - gap

    def control(self, t: int, dx, alpha: float = 1.0):
        """u_t for a state deviation dx = x_t (-) xs_t (tangent, 2 nv)."""
        return self.us[t] + alpha * self.k[t] + self.K[t] @ np.asarray(dx, dtype=float)


def backward(problem, xs, us, derivatives, local: LocalModel, regularization=Regularization(),
             gaps=None, box_qp_iter=50, structured=None, reuse=False, keep=None):
    """(Policy, None) or (None, knot where Q_uu was not positive definite).  ``local``: the
    :class:`~ddp.local_model.LocalModel` of the iteration (its ``second_order`` mode adds DDP's
    exact second-order dynamics terms, from the data in ``derivatives.second_order``; NONE drops
    them).  ``regularization``: a :data:`~ddp.kernels.records.Regularization` (shifts u, x, v
    and the safeguard; see :func:`ddp.kernels.passes.backward_pass`); ``gaps`` (T + 1, ndx): the
    defects of a multiple-shooting trajectory (None: feasible).  ``structured``: how F^T V_xx F
    is formed (see :func:`~ddp.kernels.passes.backward_pass`; None: by size, from
    ``nv >= STRUCTURED_MIN_NV``); both give the same numbers to rounding.  ``reuse``: the
    gains go into the problem's work arrays (the solver's passes), never into those of the
    gains ``keep`` (the last policy's k); otherwise into new arrays."""
    P, d = problem, derivatives
    T, nu, ndx = P.T, P.nu, P.ndx
    gains = P.compiled_problem.gains(T, nu, ndx, keep) if reuse else empty_gains(T, nu, ndx)
    so = d.second_order
    if local.second_order == SecondOrderMode.NONE:
        so = so._replace(mode=int(SecondOrderMode.NONE))
    elif so.mode != local.second_order:
        raise ValueError(f"local: the derivatives carry {SecondOrderMode(so.mode).name} "
                         f"second-order data; the local model asks for "
                         f"{local.second_order.name}")
    r = regularization
    r = Regularization(float(r.u), float(r.x), float(r.v), bool(r.safeguard))
    box = Box(np.ascontiguousarray(us, dtype=float), P.u_min, P.u_max, P.bounded,
              int(box_qp_iter))
    g = P.gaps_record(gaps)
    if structured is None:
        structured = P.nv >= _passes.STRUCTURED_MIN_NV
    status, knot = P.compiled_problem.backward_pass(d.step, so, Costs(d.running, d.terminal), r,
                                                    box, g, gains, bool(structured))
    if status != _passes.OK:
        return None, int(knot)
    return Policy(xs, us, gains.k, gains.K, float(gains.dV[0]), float(gains.dV[1]), gains.Vx,
                  gaps, gains.fVxx, int(gains.gauss_newton_knots[0])), None


def gradient_norm(problem, us, derivatives) -> float:
    """|| dJ/du || of the total cost (projected onto the control box), by the adjoint sweep.
    On a trajectory with gaps: the control part of the KKT residual of multiple shooting (the
    multipliers solving the state part)."""
    d = derivatives
    return float(_passes.gradient_norm(d.step.Fx, d.step.Fu, d.running.lx, d.running.lu,
                                       d.terminal.lx[0], us, problem.u_min, problem.u_max))
