"""Discrete dynamics x+ = F(x, u) on the state manifold and its exact first and second derivatives.

State x = (q, v) (size nq + nv), tangent dx = (dq, dv) (size 2 nv), control u (size nu),
generalized force tau = B u with the actuation matrix B (nv x nu, identity by default).

:class:`SemiImplicitEuler` (as Crocoddyl's Euler integrator)::

    a = FD(q, v, B u),   v+ = v + dt a,   q+ = q (+) dt v+

Derivatives are those of ``h(dx, du) = F(x (+) dx, u + du) (-) F(x, u)`` at 0: ``Fx``, ``Fu``
and, contracted with a co-state ``lam`` (size 2 nv, tangent at x+), the symmetric Hessians
``Fxx``, ``Fxu``, ``Fuu`` of ``lam . h``.  With ``w = dt v+`` and ``G(dq, dw) = ((q (+) dq) (+)
(w + dw)) (-) (q (+) w)`` (:func:`dynamics.lie.integrate_expansion`)::

    lam . d2h = Jz^T (lam_q . d2G) Jz  +  dt * (mu . d2a),   mu = lam_v + dt J_w^T lam_q

where ``Jz`` maps (dx, du) to (dq, dw) to first order and ``mu . d2a`` is the ``lam``-contracted
FD-SO of the backend (``fd_derivatives(order=2, lam=mu)``).  The first term holds the second-order
terms of (+) on SO(3) / SE(3) / SE(2) joints; it vanishes on vector spaces.
"""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass

import numpy as np

from dynamics.lie import LIE_TYPES, integrate_expansion


@dataclass
class StepDerivatives:
    """First derivatives of the step at T knots: Fx (T, ndx, ndx), Fu (T, ndx, nu), and what the
    second-order terms need at each knot (kept for :meth:`SemiImplicitEuler.hessians`)."""

    Fx: np.ndarray
    Fu: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    Minv_B: np.ndarray
    Jq: np.ndarray
    Jw: np.ndarray
    w: np.ndarray
    tensors: object = None  # full FD-SO tensors of every knot (second_order="tensor")


class SemiImplicitEuler:
    """Semi-implicit Euler step of a :class:`~dynamics.protocol.Dynamics` backend (see module
    docstring).  ``actuation``: (nv, nu) matrix B, or None for full actuation."""

    #: up to this nv, ``second_order="auto"`` computes the full FD-SO tensors of all knots in the
    #: batched derivative call and contracts them in the backward pass; above, each knot's
    #: contracted FD-SO is computed in the backward pass (O(n^3) instead of O(n^4) per knot)
    TENSOR_MAX_NV = 12

    def __init__(self, dynamics, dt: float, actuation=None, second_order: str = "auto"):
        self.dynamics = dynamics
        self.nq, self.nv = int(dynamics.nq), int(dynamics.nv)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a positive time step; got {dt!r}")
        self.dt = float(dt)
        B = np.eye(self.nv) if actuation is None else np.asarray(actuation, dtype=float)
        if B.ndim != 2 or B.shape[0] != self.nv or not np.all(np.isfinite(B)):
            raise ValueError(f"actuation: expected a finite ({self.nv}, nu) matrix; got shape "
                             f"{B.shape}")
        self.B = B
        self.nu = B.shape[1]
        if second_order not in ("auto", "tensor", "contracted"):
            raise ValueError(f"second_order: expected 'auto', 'tensor' or 'contracted'; got "
                             f"{second_order!r}")
        if second_order == "auto":
            second_order = "tensor" if self.nv <= self.TENSOR_MAX_NV else "contracted"
        self.second_order = second_order
        self.nx, self.ndx = self.nq + self.nv, 2 * self.nv
        self._model = getattr(dynamics, "model", None)
        if self._model is None and self.nq != self.nv:
            raise ValueError("dynamics: a system without a RobotModel must have nq == nv")

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

    def derivatives(self, xs, us, order: int = 1) -> StepDerivatives:
        """Fx, Fu of a batch (T, nx), (T, nu), with one batched (parallel) FD call; with
        ``order=2`` and ``second_order="tensor"`` that call also returns the full FD-SO tensors."""
        xs, us = np.atleast_2d(xs), np.atleast_2d(us)
        T, n, dt = xs.shape[0], self.nv, self.dt
        q, v = xs[:, :self.nq], xs[:, self.nq:]
        full = order == 2 and self.second_order == "tensor"
        d = self.dynamics.fd_derivatives(q, v, us @ self.B.T, order=2 if full else 1)
        a, da_dq, da_dv, Minv = (np.asarray(x).reshape(T, *np.shape(x)[-(2 if i else 1):])
                                 for i, x in enumerate((d.a, d.da_dq, d.da_dv, d.da_dtau)))
        w = dt * (v + dt * a)
        Jq, Jw = self._integrate_jacobians(q, w)
        Minv_B = Minv @ self.B
        dv_dq, dv_dv, dv_du = dt * da_dq, np.eye(n) + dt * da_dv, dt * Minv_B
        Fx = np.empty((T, 2 * n, 2 * n))
        Fx[:, :n, :n] = Jq + dt * Jw @ dv_dq
        Fx[:, :n, n:] = dt * Jw @ dv_dv
        Fx[:, n:, :n] = dv_dq
        Fx[:, n:, n:] = dv_dv
        Fu = np.concatenate([dt * Jw @ dv_du, dv_du], axis=1)
        return StepDerivatives(Fx, Fu, da_dq, da_dv, Minv_B, Jq, Jw, w, d if full else None)

    def _integrate_jacobians(self, q, w):
        T, n = q.shape[0], self.nv
        if self._model is None:
            I = np.broadcast_to(np.eye(n), (T, n, n)).copy()
            return I, I.copy()
        Jq, Jw, _ = integrate_expansion(self._model, q, w, np.zeros((T, n)))
        return Jq, Jw

    def hessians(self, x, u, lam, d: StepDerivatives, t: int):
        """(Fxx, Fxu, Fuu) of ``lam . h`` at knot t (one point; lam (2 nv,) tangent at x+)."""
        n, dt = self.nv, self.dt
        q, v = x[:self.nq], x[self.nq:]
        lam_q, lam_v = lam[:n], lam[n:]
        mu = lam_v + dt * d.Jw[t].T @ lam_q
        if d.tensors is not None:  # contract the precomputed tensors of knot t with mu
            s = _Contracted(*(np.tensordot(mu, np.reshape(getattr(d.tensors, k), (-1, n, n, n))[t],
                                           1) for k in _Contracted._fields))
        else:
            s = self.dynamics.fd_derivatives(q, v, self.B @ u, order=2, lam=mu)
        Aqq = 0.5 * (s.d2a_dq2 + s.d2a_dq2.T)
        Aqu = s.d2a_dtaudq.T @ self.B
        Fxx = np.zeros((2 * n, 2 * n))
        Fxx[:n, :n] = dt * Aqq
        Fxx[:n, n:] = dt * s.d2a_dqdv
        Fxx[n:, :n] = dt * s.d2a_dqdv.T
        Fxx[n:, n:] = dt * s.d2a_dv2
        Fxu = np.zeros((2 * n, self.nu))
        Fxu[:n] = dt * Aqu
        Fuu = np.zeros((self.nu, self.nu))
        if self._model is not None and not _is_vector_space(self._model):
            _, _, HG = integrate_expansion(self._model, q, d.w[t], lam_q)
            # Jz: (dx, du) -> (dq, dw), dw = dt dv+
            Jz = np.zeros((2 * n, 2 * n + self.nu))
            Jz[:n, :n] = np.eye(n)
            Jz[n:, :n] = dt * dt * d.da_dq[t]
            Jz[n:, n:2 * n] = dt * (np.eye(n) + dt * d.da_dv[t])
            Jz[n:, 2 * n:] = dt * dt * d.Minv_B[t]
            P = Jz.T @ HG @ Jz
            Fxx += P[:2 * n, :2 * n]
            Fxu += P[:2 * n, 2 * n:]
            Fuu += P[2 * n:, 2 * n:]
        return Fxx, Fxu, Fuu


_Contracted = namedtuple("_Contracted", "d2a_dq2 d2a_dv2 d2a_dqdv d2a_dtaudq")


def _is_vector_space(model) -> bool:
    return not any(int(t) in LIE_TYPES for t in model.arrays.jtype[1:])
