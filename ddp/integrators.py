"""Discrete dynamics x+ = F(x, u) on the state manifold and its exact first and second derivatives.

State x = (q, v) (size nq + nv), tangent dx = (dq, dv) (size 2 nv), control u (size nu),
generalized force tau = B u with the actuation matrix B (nv x nu, identity by default).

:class:`SemiImplicitEuler` (as Crocoddyl's Euler integrator)::

    a = FD(q, v, B u),   v+ = v + dt a,   q+ = q (+) dt v+

Derivatives are those of ``h(dx, du) = F(x (+) dx, u + du) (-) F(x, u)`` at 0: ``Fx``, ``Fu``
and, contracted with a co-state ``lam`` (size 2 nv, tangent at x+), the symmetric Hessians
``Fxx``, ``Fxu``, ``Fuu`` of ``lam . h``.  With ``w = dt v+`` and ``G(dq, dw) = ((q (+) dq) (+)
(w + dw)) (-) (q (+) w)`` (the backend's ``integrate_second_order``)::

    lam . d2h = Jz^T (lam_q . d2G) Jz  +  dt * (mu . d2a),   mu = lam_v + dt J_w^T lam_q

where ``Jz`` maps (dx, du) to (dq, dw) to first order and ``mu . d2a`` are the FD-SO terms of the
backend contracted with mu.  The first term holds the second-order terms of (+) on SO(3) / SE(3) /
SE(2) joints; it vanishes on vector spaces.  The solver evaluates these terms inside its compiled
backward pass (:mod:`ddp.kernels.passes`); :meth:`SemiImplicitEuler.hessians` gives them for one
knot through the same kernel.

Everything goes through the public :class:`~dynamics.protocol.Dynamics` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamics import AnalyticalDynamics, robots
from dynamics.kernels.layout import num_chunks
from dynamics.kernels.step import assemble_step_derivatives

from .kernels import passes as _passes

#: where DDP's second-order dynamics terms come from (see :class:`ddp.SolverSettings`)
SECOND_ORDER = ("auto", "tensor", "contracted")
#: up to this nv, "auto" computes the full FD-SO tensors of all knots in the batched derivative
#: call and contracts them in the backward pass; above, the analytical backend's contracted
#: FDSVA-SO kernel runs at each knot inside the backward pass (O(n^3) instead of O(n^4)).
#: Measured per DDP solve (2-core Zen 5): tensors 1-7% faster at nv = 1, 2 (pendulum, double
#: pendulum, pendubot), the contracted kernel 3-5% faster at nv = 6 (UR3)
TENSOR_MAX_NV = 4


@dataclass
class StepDerivatives:
    """First derivatives of the step at T knots, and what the second-order terms need.

    Fx (T, ndx, ndx), Fu (T, ndx, nu); da_dq, da_dv (T, n, n), Minv_B (T, n, nu); the expansion of
    (+) (:class:`~dynamics.lie.IntegrateExpansion`, with Jq, Jw (T, n, n)); ``so_mode`` (0 none,
    1 full FD-SO ``tensors``, 2 the contracted kernel at each knot) and its data: for so_mode 2
    the knots' q, v (T, nq / nv), accelerations ``acc`` (T, n) and ``Minv`` (T, n, n)."""

    Fx: np.ndarray
    Fu: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    Minv_B: np.ndarray
    expansion: object
    so_mode: int = 0
    tensors: tuple = ()
    q: np.ndarray | None = None
    v: np.ndarray | None = None
    acc: np.ndarray | None = None
    Minv: np.ndarray | None = None


class SemiImplicitEuler:
    """Semi-implicit Euler step of a :class:`~dynamics.protocol.Dynamics` backend (see module
    docstring).  ``actuation``: (nv, nu) matrix B, or None for full actuation."""

    def __init__(self, dynamics, dt: float, actuation=None):
        self.dynamics = dynamics
        self.nq, self.nv = int(dynamics.nq), int(dynamics.nv)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a positive time step; got {dt!r}")
        self.dt = float(dt)
        B = np.eye(self.nv) if actuation is None else np.asarray(actuation, dtype=float)
        if B.ndim != 2 or B.shape[0] != self.nv or not np.all(np.isfinite(B)):
            raise ValueError(f"actuation: expected a finite ({self.nv}, nu) matrix; got shape "
                             f"{B.shape}")
        self.B = np.ascontiguousarray(B)
        self.nu = B.shape[1]
        self.nx, self.ndx = self.nq + self.nv, 2 * self.nv
        #: the compiled passes run on the analytical backend's kernels
        self.compiled = isinstance(dynamics, AnalyticalDynamics)
        if getattr(dynamics, "model", None) is None and self.nq != self.nv:
            raise ValueError("dynamics: a system without a RobotModel must have nq == nv")

    def second_order_mode(self, second_order: str) -> int:
        """The ``so_mode`` of the backward pass for a ``second_order`` setting."""
        if second_order not in SECOND_ORDER:
            raise ValueError(f"second_order: expected one of {', '.join(SECOND_ORDER)}; got "
                             f"{second_order!r}")
        if second_order == "contracted" and not self.compiled:
            raise ValueError(f"second_order: 'contracted' needs the analytical backend; "
                             f"{type(self.dynamics).__name__} gives 'tensor' (or 'auto')")
        if second_order == "auto":
            second_order = ("contracted" if self.compiled and self.nv > TENSOR_MAX_NV
                            else "tensor")
        return 1 if second_order == "tensor" else 2

    # ------------------------------------------------------------------ state manifold
    def integrate(self, x, dx):
        """x (+) dx, batched or not."""
        x, dx = np.asarray(x, dtype=float), np.asarray(dx, dtype=float)
        q = self.dynamics.integrate(x[..., :self.nq], dx[..., :self.nv])
        return np.concatenate([q, x[..., self.nq:] + dx[..., self.nv:]], axis=-1)

    def difference(self, x0, x1):
        """x1 (-) x0 (tangent at x0), batched or not."""
        x0, x1 = np.asarray(x0, dtype=float), np.asarray(x1, dtype=float)
        dq = self.dynamics.difference(x0[..., :self.nq], x1[..., :self.nq])
        return np.concatenate([dq, x1[..., self.nq:] - x0[..., self.nq:]], axis=-1)

    # ------------------------------------------------------------------ step
    def step(self, x, u):
        """F(x, u) for one knot (nx,), (nu,) or a batch (T, nx), (T, nu)."""
        x, u = np.asarray(x, dtype=float), np.asarray(u, dtype=float)
        q, v = x[..., :self.nq], x[..., self.nq:]
        with np.errstate(all="ignore"):
            a = self.dynamics.aba(q, v, u @ self.B.T)
            v1 = v + self.dt * a
        bad = ~np.all(np.isfinite(v1), axis=-1)
        if np.any(bad):  # a diverged step: NaN state, no exception (the solver reports it)
            v1 = np.where(bad[..., None], 0.0, v1)
        x1 = np.concatenate([self.dynamics.integrate(q, self.dt * v1), v1], axis=-1)
        x1[bad] = np.nan
        return x1

    def derivatives(self, xs, us, so_mode: int = 0) -> StepDerivatives:
        """Fx, Fu of a batch (T, nx), (T, nu), with one batched (parallel) FD call; with
        ``so_mode`` 1 that call also returns the full FD-SO tensors."""
        xs, us = np.atleast_2d(xs), np.atleast_2d(us)
        T, n, dt = xs.shape[0], self.nv, self.dt
        q, v = np.ascontiguousarray(xs[:, :self.nq]), np.ascontiguousarray(xs[:, self.nq:])
        tau = np.ascontiguousarray(us @ self.B.T)
        d = self.dynamics.fd_derivatives(q, v, tau, order=2 if so_mode == 1 else 1)
        a, da_dq, da_dv, Minv = (np.asarray(x).reshape(T, *np.shape(x)[-(2 if i else 1):])
                                 for i, x in enumerate((d.a, d.da_dq, d.da_dv, d.da_dtau)))
        w = dt * (v + dt * a)
        e = self.dynamics.integrate_second_order(q, w, hessian=so_mode > 0)
        Fx = np.empty((T, 2 * n, 2 * n))
        Fu = np.empty((T, 2 * n, self.nu))
        Minv_B = np.empty((T, n, self.nu))
        da_dq, da_dv = np.ascontiguousarray(da_dq), np.ascontiguousarray(da_dv)
        Minv = np.ascontiguousarray(Minv)
        assemble_step_derivatives(self.B, dt, da_dq, da_dv, Minv, np.ascontiguousarray(e.Jq),
                                  np.ascontiguousarray(e.Jw), e.offsets, e.sizes, Fx, Fu, Minv_B,
                                  num_chunks(T))
        tensors = ()
        if so_mode == 1:
            tensors = tuple(np.ascontiguousarray(np.reshape(getattr(d, k), (T, n, n, n)))
                            for k in ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"))
        point = (np.ascontiguousarray(a), Minv) if so_mode == 2 else (None, None)
        return StepDerivatives(Fx, Fu, da_dq, da_dv, Minv_B, e, so_mode, tensors, q, v, *point)

    def kernel_args(self):
        """The model buffers the compiled passes read (a vector space for a user system)."""
        model = getattr(self.dynamics, "model", None)
        return (model if model is not None else robots.vector_space(self.nv)).kernel_args

    def second_order_arguments(self, d: StepDerivatives):
        """The arguments of the compiled second-order terms after ``lam`` (see
        :func:`ddp.kernels.passes.backward_pass`)."""
        T = d.Fx.shape[0]
        e = d.expansion
        empty4 = np.zeros((T, 0, 0, 0))
        T2 = d.tensors if d.so_mode == 1 else (empty4,) * 4
        point = ((d.q, d.v, d.acc, d.Minv) if d.so_mode == 2
                 else (np.zeros((T, 0)),) * 3 + (np.zeros((T, 0, 0)),))
        return (self.dt, self.B, np.ascontiguousarray(e.Jw), d.da_dq, d.da_dv, d.Minv_B,
                d.so_mode, *T2, *self.kernel_args(), *point, e.offsets, e.sizes,
                np.ascontiguousarray(e.H))

    def hessians(self, x, u, lam, d: StepDerivatives, t: int):
        """(Fxx, Fxu, Fuu) of ``lam . h`` at knot t (lam (2 nv,) tangent at x+), by the same
        compiled function as the backward pass."""
        if d.so_mode == 0:
            raise ValueError("d: derivatives computed with so_mode=0 carry no second-order data")
        return _passes.step_hessians(t, np.asarray(lam, dtype=float),
                                     *self.second_order_arguments(d))
