"""LQR on a linearization (:func:`dynamics.linearize`): infinite horizon about an equilibrium and
time-varying about a trajectory.

Gains follow the solver's convention (:class:`ddp.Policy`): ``u = u_ref + K dx`` with
``dx = x (-) x_ref`` in the tangent coordinates (dq, dv) of the linearization.  Costs are
``1/2 dx'Q dx + dx'N du + 1/2 du'R du`` per knot (per unit time in continuous time) and
``1/2 dx'Qf dx`` at the end of a finite horizon.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg


@dataclass
class LQRGains:
    """Feedback gains K (nu, nx) or (T, nu, nx) and the value Hessians P (nx, nx) or
    (T + 1, nx, nx)."""

    K: np.ndarray
    P: np.ndarray


def _weights(X, n, name, T=None):
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = np.diag(X)
    shape = (n, n) if T is None else (T, n, n)
    if T is not None and X.shape == (n, n):
        X = np.broadcast_to(X, shape)
    if X.shape != shape or not np.all(np.isfinite(X)):
        raise ValueError(f"{name}: expected a finite ({n},) diagonal or {shape} matrix; got "
                         f"shape {X.shape}")
    return X


def infinite_horizon(lin, Q, R) -> LQRGains:
    """Infinite-horizon LQR about one point of a :class:`~dynamics.linearization.Linearization`
    (an equilibrium): the continuous algebraic Riccati equation if ``lin.dt`` is None, else the
    discrete one.  Q (nx, nx) or its diagonal, R (nu, nu) or its diagonal."""
    A, B = np.asarray(lin.A), np.asarray(lin.B)
    if A.ndim != 2:
        raise ValueError(f"lin: expected the linearization at one point; got A of shape {A.shape}")
    nx, nu = B.shape
    Q, R = _weights(Q, nx, "Q"), _weights(R, nu, "R")
    if lin.dt is None:
        P = scipy.linalg.solve_continuous_are(A, B, Q, R)
        K = -np.linalg.solve(R, B.T @ P)
    else:
        P = scipy.linalg.solve_discrete_are(A, B, Q, R)
        K = -np.linalg.solve(R + B.T @ P @ B, B.T @ P @ A)
    return LQRGains(K, 0.5 * (P + P.T))


def time_varying(lin, Q, R, Qf, N=None) -> LQRGains:
    """Finite-horizon, time-varying LQR along a discrete linearization (``lin.dt`` set, A (T, nx,
    nx), B (T, nx, nu)), by the backward Riccati recursion.  Q, R, N may vary per knot (leading T
    axis); Qf (nx, nx).  With the cost Hessians of a :class:`ddp.ShootingProblem` (lxx, luu, lxu,
    terminal lxx) these are iLQR's gains (zero regularization) about the same trajectory."""
    A, B = np.asarray(lin.A), np.asarray(lin.B)
    if lin.dt is None or A.ndim != 3:
        raise ValueError("lin: expected a discrete linearization (dt set) of a trajectory "
                         f"(A of shape (T, nx, nx)); got dt={lin.dt}, A of shape {A.shape}")
    T, nx, nu = B.shape
    Q, R = _weights(Q, nx, "Q", T), _weights(R, nu, "R", T)
    Qf = _weights(Qf, nx, "Qf")
    N = np.zeros((T, nx, nu)) if N is None else np.asarray(N, dtype=float)
    if N.shape != (T, nx, nu):
        raise ValueError(f"N: expected shape {(T, nx, nu)}; got {N.shape}")
    K = np.empty((T, nu, nx))
    P = np.empty((T + 1, nx, nx))
    P[T] = Qf
    for t in range(T - 1, -1, -1):
        PA, PB = P[t + 1] @ A[t], P[t + 1] @ B[t]
        Quu = R[t] + B[t].T @ PB
        Qux = N[t].T + B[t].T @ PA
        K[t] = -np.linalg.solve(Quu, Qux)
        Pt = Q[t] + A[t].T @ PA + Qux.T @ K[t]
        P[t] = 0.5 * (Pt + Pt.T)
    return LQRGains(K, P)
