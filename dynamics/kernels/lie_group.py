"""Exact second-order expansions of the group logarithm on SO(3), SE(3) and SE(2), compiled.

For a group element E and a tangent perturbation xi (local, ``E Exp(xi)``), each ``*_expansion``
returns the value ``r = Log(E)``, the Jacobian ``J = d r / d xi`` and the Hessian
``H[a, j, k] = d^2 r_a / d xi_j d xi_k`` at ``xi = 0``: what an exact cost Hessian on the
manifold needs (costs on frame placements, rotations and configurations).  Tangent vectors of
SE(3) are ``[v, w]`` and of SE(2) ``[v_x, v_y, w]``, as in Pinocchio.

Everything is built on one scalar function of u = theta^2,

    c(u) = (1 - theta sin(theta) / (2 (1 - cos theta))) / theta^2 = sum_{n>=1} |B_2n| / (2n)! u^(n-1),

through ``Jr^-1(w) = I + 1/2 [w]x + c [w]x^2`` (right inverse Jacobian of SO(3)),
``Jl^-1(w) = I - 1/2 [w]x + c [w]x^2`` (the V^-1 of the SE(3) logarithm) and, on SE(2),
``V^-1(theta) = (1 - u c) I - theta/2 [e_z]x``.  The power series (Bernoulli numbers) converges
for theta < 2 pi and is evaluated with 40 terms: exact to rounding for every angle up to pi, with
its derivatives c_u, c_uu, and no small-angle branch.  The logarithm is not differentiable at a
rotation angle of pi; there the results are not finite.

Derivation of the second order (checked against CasADi AD and central differences in the tests):
``d/dxi Log(E Exp(xi)) = Jr^-1(Log(E Exp(xi))) Jr(xi)`` and ``Jr(xi) = I - 1/2 ad_xi + O(xi^2)``,
so on SO(3) ``H[a, j, k] = sum_m dJr^-1_aj / dw_m Jr^-1_mk - 1/2 (Jr^-1 (e_k x e_j))_a``
(symmetric in j, k).  SE(3) and SE(2) follow by the chain rule through ``Log = (V^-1(w) p, w)``
with ``p(xi) = p + R (xi_v + 1/2 xi_w x xi_v) + O(xi^3)``.
"""

from fractions import Fraction
from math import factorial

import numpy as np
from numba import njit

_JIT = dict(cache=True, error_model="numpy")


def _c_coefficients(n_terms=40):
    """Taylor coefficients of c(u): |B_2n| / (2n)!, n = 1..n_terms (exact rationals -> float)."""
    B = [Fraction(1)]
    for m in range(1, 2 * n_terms + 1):  # Bernoulli numbers by the standard recurrence
        B.append(-sum(Fraction(factorial(m + 1), factorial(k) * factorial(m + 1 - k)) * B[k]
                      for k in range(m)) / (m + 1))
    return np.array([float(abs(B[2 * n]) / factorial(2 * n)) for n in range(1, n_terms + 1)])


C_COEFFS = _c_coefficients()


@njit(**_JIT)
def c_series(u):
    """(c, dc/du, d2c/du2) at u = theta^2 (module docstring), by Horner's scheme."""
    n = C_COEFFS.shape[0]
    c = 0.0
    cu = 0.0
    cuu = 0.0
    for k in range(n - 1, -1, -1):
        c = c * u + C_COEFFS[k]
    for k in range(n - 1, 0, -1):
        cu = cu * u + k * C_COEFFS[k]
    for k in range(n - 1, 1, -1):
        cuu = cuu * u + k * (k - 1) * C_COEFFS[k]
    return c, cu, cuu


@njit(**_JIT)
def _skew_apply(w, x, out):
    out[0] = w[1] * x[2] - w[2] * x[1]
    out[1] = w[2] * x[0] - w[0] * x[2]
    out[2] = w[0] * x[1] - w[1] * x[0]


@njit(**_JIT)
def rotation_log(R, w):
    """w = log3(R) (rotation vector, angle in [0, pi]), through the quaternion of R."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 0.5 / np.sqrt(tr + 1.0)
        qw, qx, qy, qz = 0.25 / s, (R[2, 1] - R[1, 2]) * s, (R[0, 2] - R[2, 0]) * s, \
            (R[1, 0] - R[0, 1]) * s
    elif R[0, 0] > R[1, 1] and R[0, 0] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        qw, qx, qy, qz = (R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, \
            (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] > R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        qw, qx, qy, qz = (R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, \
            (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        qw, qx, qy, qz = (R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, \
            (R[1, 2] + R[2, 1]) / s, 0.25 * s
    if qw < 0.0:
        qw, qx, qy, qz = -qw, -qx, -qy, -qz
    n = np.sqrt(qx * qx + qy * qy + qz * qz)
    th = 2.0 * np.arctan2(n, qw)
    k = th / n if n > 1e-12 else 2.0 / qw
    w[0] = k * qx
    w[1] = k * qy
    w[2] = k * qz


@njit(**_JIT)
def inverse_jacobian(w, s, K, dK, ddK):
    """K = I + s/2 [w]x + c [w]x^2 (s = +1: Jr^-1, s = -1: Jl^-1) with dK[m] = dK/dw_m and
    ddK[m, n] = d2K/dw_m dw_n (3x3 each)."""
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    c, cu, cuu = c_series(u)
    W = np.zeros((3, 3))
    W[0, 1], W[0, 2], W[1, 0], W[1, 2], W[2, 0], W[2, 1] = -w[2], w[1], w[2], -w[0], -w[1], w[0]
    W2 = W @ W
    E = np.zeros((3, 3, 3))  # E[m] = [e_m]x
    E[0, 1, 2], E[0, 2, 1] = -1.0, 1.0
    E[1, 0, 2], E[1, 2, 0] = 1.0, -1.0
    E[2, 0, 1], E[2, 1, 0] = -1.0, 1.0
    for r in range(3):
        for k in range(3):
            K[r, k] = (1.0 if r == k else 0.0) + 0.5 * s * W[r, k] + c * W2[r, k]
    EW = np.empty((3, 3, 3))  # E_m W + W E_m
    for m in range(3):
        EW[m] = E[m] @ W + W @ E[m]
        for r in range(3):
            for k in range(3):
                dK[m, r, k] = 0.5 * s * E[m, r, k] + 2.0 * cu * w[m] * W2[r, k] + c * EW[m, r, k]
    for m in range(3):
        for n in range(3):
            EE = E[m] @ E[n] + E[n] @ E[m]
            for r in range(3):
                for k in range(3):
                    x = 4.0 * cuu * w[m] * w[n] * W2[r, k] + 2.0 * cu * w[m] * EW[n, r, k] \
                        + 2.0 * cu * w[n] * EW[m, r, k] + c * EE[r, k]
                    if m == n:
                        x += 2.0 * cu * W2[r, k]
                    ddK[m, n, r, k] = x


@njit(**_JIT)
def so3_log_expansion(R, r, J, H):
    """r = log3(R), J (3x3) and H (3, 3, 3) of log3(R exp(xi)) at xi = 0 (module docstring)."""
    rotation_log(R, r)
    dK = np.empty((3, 3, 3))
    ddK = np.empty((3, 3, 3, 3))
    inverse_jacobian(r, 1.0, J, dK, ddK)
    # H[a, j, k] = sum_m dK_m[a, j] J[m, k] - 1/2 (J (e_k x e_j))_a is symmetric in (j, k); its
    # symmetric part is written, in which the antisymmetric bracket term cancels
    for a in range(3):
        for j in range(3):
            for k in range(j, 3):
                x = 0.0
                for m in range(3):
                    x += dK[m, a, j] * J[m, k] + dK[m, a, k] * J[m, j]
                H[a, j, k] = 0.5 * x
                H[a, k, j] = 0.5 * x


@njit(**_JIT)
def se3_log_expansion(R, p, r, J, H):
    """r = log6(M) for M = (R, p), J (6x6) and H (6, 6, 6) of log6(M Exp(xi)) at xi = 0, with
    tangent vectors [v, w] (module docstring)."""
    w = np.empty(3)
    A = np.empty((3, 3))
    H3 = np.empty((3, 3, 3))
    so3_log_expansion(R, w, A, H3)
    K = np.empty((3, 3))
    dK = np.empty((3, 3, 3))
    ddK = np.empty((3, 3, 3, 3))
    inverse_jacobian(w, -1.0, K, dK, ddK)  # Jl^-1(w) = V^-1(w)
    # D[:, m] = dK_m p ; DD[m, n] = ddK_mn p
    D = np.zeros((3, 3))
    DD = np.zeros((3, 3, 3))
    for m in range(3):
        for a in range(3):
            for b in range(3):
                D[a, m] += dK[m, a, b] * p[b]
                for n in range(3):
                    DD[m, n, a] += ddK[m, n, a, b] * p[b]
    KR = K @ R
    DA = D @ A
    for a in range(3):
        r[a] = K[a, 0] * p[0] + K[a, 1] * p[1] + K[a, 2] * p[2]
        r[3 + a] = w[a]
    J[:, :] = 0.0
    H[:, :, :] = 0.0
    for a in range(3):
        for k in range(3):
            J[a, k] = KR[a, k]
            J[a, 3 + k] = DA[a, k]
            J[3 + a, 3 + k] = A[a, k]
    # v-w block: 1/2 K R [e_b]x e_a + sum_m dK_m A_mb R e_a ; [e_b]x e_a = e_b x e_a
    eb = np.zeros(3)
    ea = np.zeros(3)
    ba = np.empty(3)
    for va in range(3):
        for wb in range(3):
            eb[:] = 0.0
            ea[:] = 0.0
            eb[wb] = 1.0
            ea[va] = 1.0
            _skew_apply(eb, ea, ba)
            for c in range(3):
                x = 0.0
                for m in range(3):
                    x += 0.5 * KR[c, m] * ba[m]
                    s = 0.0
                    for d in range(3):
                        s += dK[m, c, d] * R[d, va]
                    x += s * A[m, wb]
                H[c, va, 3 + wb] = x
                H[c, 3 + wb, va] = x
    # w-w block: sum_mn DD_mn A_mj A_nk + sum_m D_m H3[m, j, k]
    for c in range(3):
        for j in range(3):
            for k in range(3):
                x = 0.0
                for m in range(3):
                    x += D[c, m] * H3[m, j, k]
                    for n in range(3):
                        x += DD[m, n, c] * A[m, j] * A[n, k]
                H[c, 3 + j, 3 + k] = x
                H[3 + c, 3 + j, 3 + k] = H3[c, j, k]


@njit(**_JIT)
def se2_log_expansion(c0, s0, px, py, r, J, H):
    """r = log of the SE(2) element (rotation angle atan2(s0, c0), translation (px, py)), J (3x3)
    and H (3, 3, 3) of Log(M Exp(xi)) at xi = 0, tangent [v_x, v_y, w] (module docstring)."""
    th = np.arctan2(s0, c0)
    u = th * th
    c, cu, cuu = c_series(u)
    h = 1.0 - u * c
    h1 = -2.0 * th * (c + u * cu)
    h2 = -2.0 * (c + u * cu) - 4.0 * u * (2.0 * cu + u * cuu)
    # W = V^-1 = h I - th/2 J2, J2 = [[0, -1], [1, 0]]; W' = h1 I - 1/2 J2; W'' = h2 I
    W = np.array([[h, 0.5 * th], [-0.5 * th, h]])
    W1 = np.array([[h1, 0.5], [-0.5, h1]])
    R2 = np.array([[c0, -s0], [s0, c0]])
    WR = W @ R2
    W1R = W1 @ R2
    WRJ2 = WR @ np.array([[0.0, -1.0], [1.0, 0.0]])
    r[0] = W[0, 0] * px + W[0, 1] * py
    r[1] = W[1, 0] * px + W[1, 1] * py
    r[2] = th
    J[:, :] = 0.0
    H[:, :, :] = 0.0
    for a in range(2):
        for k in range(2):
            J[a, k] = WR[a, k]
        J[a, 2] = W1[a, 0] * px + W1[a, 1] * py
    J[2, 2] = 1.0
    for a in range(2):
        for k in range(2):
            x = W1R[a, k] + 0.5 * WRJ2[a, k]
            H[a, k, 2] = x
            H[a, 2, k] = x
        H[a, 2, 2] = h2 * (px if a == 0 else py)
