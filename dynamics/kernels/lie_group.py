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

from ..jit import borrowed, chunk_range, copy_into, in_parallel, keep_alive, njit
from .dense import gemm, gemm_tn
from .kinematics import FF, PLA, RUB, SPH
from .packed_model import unpack

_JIT = dict(cache=True, error_model="numpy")


def _c_coefficients(n_terms=40):
    """Taylor coefficients of c(u): |B_2n| / (2n)!, n = 1..n_terms (exact rationals -> float)."""
    B = [Fraction(1)]
    for m in range(1, 2 * n_terms + 1):  # Bernoulli numbers by the standard recurrence
        B.append(-sum(Fraction(factorial(m + 1), factorial(k) * factorial(m + 1 - k)) * B[k]
                      for k in range(m)) / (m + 1))
    return np.array([float(abs(B[2 * n]) / factorial(2 * n)) for n in range(1, n_terms + 1)])


C_COEFFS = _c_coefficients()


@njit(callee=True, **_JIT)
def c_series(u):
    """(c, dc/du, d2c/du2) at u = theta^2 (module docstring), by Horner's scheme: the three
    recurrences advance together in one loop (independent chains, so their latencies overlap)."""
    n = C_COEFFS.shape[0]
    c = 0.0
    cu = 0.0
    cuu = 0.0
    for k in range(n - 1, 1, -1):
        ck = C_COEFFS[k]
        c = c * u + ck
        cu = cu * u + k * ck
        cuu = cuu * u + k * (k - 1) * ck
    c = c * u + C_COEFFS[1]
    cu = cu * u + C_COEFFS[1]
    c = c * u + C_COEFFS[0]
    return c, cu, cuu


@njit(callee=True, **_JIT)
def _skew_apply(w, x, out):
    out[0] = w[1] * x[2] - w[2] * x[1]
    out[1] = w[2] * x[0] - w[0] * x[2]
    out[2] = w[0] * x[1] - w[1] * x[0]


@njit(callee=True, **_JIT)
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


@njit(callee=True, **_JIT)
def _eps(a, b, c):
    """The Levi-Civita symbol of three indices in {0, 1, 2}."""
    return 0.5 * (a - b) * (b - c) * (c - a)


@njit(callee=True, **_JIT)
def inverse_jacobian(w, s, K, dK, ddK, order=2):
    """K = I + s/2 [w]x + c [w]x^2 (s = +1: Jr^-1, s = -1: Jl^-1) with, from ``order`` 1,
    dK[m] = dK/dw_m and, at ``order`` 2, ddK[m, n] = d2K/dw_m dw_n (3x3 each).  Closed forms,
    with E_m = [e_m]x:  [w]x^2 = w w^T - u I,  E_m [w]x + [w]x E_m = e_m w^T + w e_m^T - 2 w_m I,
    E_m E_n + E_n E_m = e_m e_n^T + e_n e_m^T - 2 delta_mn I."""
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    c, cu, cuu = c_series(u)
    for r in range(3):
        for k in range(3):
            W2 = w[r] * w[k] - (u if r == k else 0.0)
            K[r, k] = (1.0 if r == k else 0.0) - 0.5 * s * _eps(r, k, 0) * w[0] \
                - 0.5 * s * _eps(r, k, 1) * w[1] - 0.5 * s * _eps(r, k, 2) * w[2] + c * W2
    if order == 0:
        return
    for m in range(3):
        for r in range(3):
            for k in range(3):
                W2 = w[r] * w[k] - (u if r == k else 0.0)
                EW = (w[k] if r == m else 0.0) + (w[r] if k == m else 0.0) \
                    - (2.0 * w[m] if r == k else 0.0)
                dK[m, r, k] = -0.5 * s * _eps(r, k, m) + 2.0 * cu * w[m] * W2 + c * EW
    if order == 1:
        return
    for m in range(3):
        for n in range(3):
            for r in range(3):
                for k in range(3):
                    W2 = w[r] * w[k] - (u if r == k else 0.0)
                    EWn = (w[k] if r == n else 0.0) + (w[r] if k == n else 0.0) \
                        - (2.0 * w[n] if r == k else 0.0)
                    EWm = (w[k] if r == m else 0.0) + (w[r] if k == m else 0.0) \
                        - (2.0 * w[m] if r == k else 0.0)
                    EE = (1.0 if (r == m and k == n) else 0.0) \
                        + (1.0 if (r == n and k == m) else 0.0) \
                        - (2.0 if (m == n and r == k) else 0.0)
                    x = 4.0 * cuu * w[m] * w[n] * W2 + 2.0 * cu * w[m] * EWn \
                        + 2.0 * cu * w[n] * EWm + c * EE
                    if m == n:
                        x += 2.0 * cu * W2
                    ddK[m, n, r, k] = x


@njit(**_JIT)
def so3_log_expansion(R, r, J, H, hessian=True):
    """r = log3(R), J (3x3) and, with ``hessian``, H (3, 3, 3) of log3(R exp(xi)) at xi = 0
    (module docstring; without ``hessian`` H is not written: Gauss-Newton needs only J)."""
    rotation_log(R, r)
    dK = np.empty((3, 3, 3))
    unused = np.empty((1, 1, 1, 1))
    inverse_jacobian(r, 1.0, J, dK, unused, 1 if hessian else 0)  # H needs dK, not ddK
    if not hessian:
        return
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


@njit(callee=True, **_JIT)
def se3_log(R, p, r):
    """r = log6((R, p)) = (Jl^-1(w) p, w), w = log3(R) (the value of :func:`se3_log_expansion`)."""
    w = r[3:]
    rotation_log(R, w)
    c = c_series(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])[0]
    wp0 = w[1] * p[2] - w[2] * p[1]  # w x p, then w x (w x p)
    wp1 = w[2] * p[0] - w[0] * p[2]
    wp2 = w[0] * p[1] - w[1] * p[0]
    r[0] = p[0] - 0.5 * wp0 + c * (w[1] * wp2 - w[2] * wp1)
    r[1] = p[1] - 0.5 * wp1 + c * (w[2] * wp0 - w[0] * wp2)
    r[2] = p[2] - 0.5 * wp2 + c * (w[0] * wp1 - w[1] * wp0)


@njit(**_JIT)
def se3_log_jacobian(R, p, r, J):
    """r = log6((R, p)) and J (6x6), the Jacobian of :func:`se3_log_expansion` without its
    Hessian (what Gauss-Newton needs), in closed form and without work arrays:

        J = [[Jl^-1(w) R, D Jr^-1(w)], [0, Jr^-1(w)]],  D = d(Jl^-1(w) p)/dw
          = 1/2 [p]x + 2 c_u (w x (w x p)) w^T + c ((w.p) I + w p^T - 2 p w^T)

    (D is the contraction of the dK of :func:`inverse_jacobian` with p.)"""
    rotation_log(R, r[3:])
    w0, w1, w2 = r[3], r[4], r[5]
    u = w0 * w0 + w1 * w1 + w2 * w2
    c, cu, _ = c_series(u)
    p0, p1, p2 = p[0], p[1], p[2]
    wp0, wp1, wp2 = w1 * p2 - w2 * p1, w2 * p0 - w0 * p2, w0 * p1 - w1 * p0
    ww0, ww1, ww2 = w1 * wp2 - w2 * wp1, w2 * wp0 - w0 * wp2, w0 * wp1 - w1 * wp0
    r[0] = p0 - 0.5 * wp0 + c * ww0  # as se3_log
    r[1] = p1 - 0.5 * wp1 + c * ww1
    r[2] = p2 - 0.5 * wp2 + c * ww2
    wdp = w0 * p0 + w1 * p1 + w2 * p2
    J[:, :] = 0.0
    for a in range(3):
        wa = r[3 + a]
        pa = p[a]
        wwa = ww0 if a == 0 else (ww1 if a == 1 else ww2)
        for k in range(3):
            wk = r[3 + k]
            W2 = wa * wk - (u if a == k else 0.0)
            skew = _eps(a, 0, k) * w0 + _eps(a, 1, k) * w1 + _eps(a, 2, k) * w2  # [w]x[a, k]
            J[3 + a, 3 + k] = (1.0 if a == k else 0.0) + 0.5 * skew + c * W2  # Jr^-1(w)
            # D[a, k]; [p]x[a, k] = eps(a, b, k) p_b
            J[a, 3 + k] = 0.5 * (_eps(a, 0, k) * p0 + _eps(a, 1, k) * p1
                                 + _eps(a, 2, k) * p2) + 2.0 * cu * wwa * wk \
                + c * ((wdp if a == k else 0.0) + wa * p[k] - 2.0 * pa * wk)
    # J[:3, :3] = Jl^-1(w) R (Jl^-1 = I - 1/2 [w]x + c [w]x^2), then D Jr^-1 in place by rows
    D = J[:3, 3:]
    for a in range(3):
        d0, d1, d2 = D[a, 0], D[a, 1], D[a, 2]
        wa = r[3 + a]
        for k in range(3):
            D[a, k] = d0 * J[3, 3 + k] + d1 * J[4, 3 + k] + d2 * J[5, 3 + k]
            s = 0.0
            for b in range(3):
                Kab = (1.0 if a == b else 0.0) - 0.5 * (_eps(a, 0, b) * w0 + _eps(a, 1, b) * w1
                                                        + _eps(a, 2, b) * w2) \
                    + c * (wa * r[3 + b] - (u if a == b else 0.0))
                s += Kab * R[b, k]
            J[a, k] = s


@njit(inline="always", **_JIT)
def _dK_contracted(s, w, u, c, cu, x, out):
    """out[m, d] = sum_r x_r dK[m, r, d]: the dK of :func:`inverse_jacobian` (w, s) contracted
    with x (3,) over its row index, in closed form ((x cross e_d)_m = eps(m, r, d) x_r)."""
    xw = x[0] * w[0] + x[1] * w[1] + x[2] * w[2]
    for m in range(3):
        for d in range(3):
            xe = _eps(m, 0, d) * x[0] + _eps(m, 1, d) * x[1] + _eps(m, 2, d) * x[2]
            out[m, d] = -0.5 * s * xe + 2.0 * cu * w[m] * (xw * w[d] - u * x[d]) \
                + c * (x[m] * w[d] + (xw if d == m else 0.0) - 2.0 * w[m] * x[d])


@njit(inline="always", **_JIT)
def _so3_contracted(w, u, c, cu, A, lam, P, G):
    """G (3x3) = sum_a lam_a H[a] for the Hessian H of :func:`so3_log_expansion` at w with
    A = Jr^-1(w): 1/2 (P^T A + A^T P), P[m, j] = sum_a lam_a dJr^-1_aj / dw_m (work array)."""
    _dK_contracted(1.0, w, u, c, cu, lam, P)
    for j in range(3):
        for k in range(j, 3):
            x = 0.0
            for m in range(3):
                x += P[m, j] * A[m, k] + P[m, k] * A[m, j]
            G[j, k] = 0.5 * x
            G[k, j] = 0.5 * x


@njit(**_JIT)
def so3_log_hessian_contracted(w, A, lam, G):
    """G (3x3) = sum_a lam_a H[a] for the Hessian H (3, 3, 3) of :func:`so3_log_expansion`, from
    its w = log3(R) and J = A (inputs): what the exact Hessian of 1/2 r^T W r needs (lam = W r),
    in closed form, without forming H."""
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    c, cu, _ = c_series(u)
    work = np.empty((3, 3))
    _so3_contracted(w, u, c, cu, A, lam, borrowed(work), G)
    keep_alive(work)


@njit(**_JIT)
def se3_log_hessian_contracted(R, p, r, J, lam, G):
    """G (6x6) = sum_a lam_a H[a] for the Hessian H (6, 6, 6) of :func:`se3_log_expansion`, from
    the r and J of :func:`se3_log_jacobian` (inputs), in closed form without forming H (with
    :func:`se3_log_jacobian`: 0.42 us, against 1.24 for :func:`se3_log_expansion` with H).  With mu = lam[:3], K = Jl^-1(w) and its derivatives
    dK, ddK (:func:`inverse_jacobian` with s = -1), A = Jr^-1(w) and KR = K R (J's blocks), the
    blocks of :func:`se3_log_expansion`'s H contract to::

        G[v_a, w_b] = 1/2 (KR^T mu) . (e_b x e_a) + sum_m N[m, a] A[m, b],
                      N = dK_mu R,  dK_mu[m, d] = sum_c mu_c dK[m, c, d]
        G[w, w]     = sum_m nu_m H3[m] + A^T E A,  nu = dK_mu p + lam[3:],
                      E[m, n] = mu^T ddK[m, n] p
                              = 4 c_uu w_m w_n s + 2 c_u w_m (mu_n w.p + p_n mu.w - 2 w_n mu.p)
                                + 2 c_u w_n (mu_m w.p + p_m mu.w - 2 w_m mu.p)
                                + c (mu_m p_n + mu_n p_m) + delta_mn (2 c_u s - 2 c mu.p),
                      s = mu^T [w]x^2 p = (mu.w)(w.p) - |w|^2 mu.p

    with H3 the SO(3) Hessian (:func:`so3_log_hessian_contracted`); the v-v block is zero."""
    w = r[3:]
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    c, cu, cuu = c_series(u)
    A = J[3:, 3:]
    KR = J[:3, :3]
    mu = lam[:3]
    work = np.empty((4, 3, 3))
    dKmu, P, E, v3 = borrowed((work[0], work[1], work[2], work[3]))
    nu, uv = v3[0], v3[1]
    _dK_contracted(-1.0, w, u, c, cu, mu, dKmu)
    for m in range(3):
        nu[m] = dKmu[m, 0] * p[0] + dKmu[m, 1] * p[1] + dKmu[m, 2] * p[2] + lam[3 + m]
        uv[m] = KR[0, m] * mu[0] + KR[1, m] * mu[1] + KR[2, m] * mu[2]
    mw = mu[0] * w[0] + mu[1] * w[1] + mu[2] * w[2]
    mp = mu[0] * p[0] + mu[1] * p[1] + mu[2] * p[2]
    wp = w[0] * p[0] + w[1] * p[1] + w[2] * p[2]
    s2 = mw * wp - u * mp
    for m in range(3):
        for n in range(3):
            x = 4.0 * cuu * w[m] * w[n] * s2 \
                + 2.0 * cu * w[m] * (mu[n] * wp + p[n] * mw - 2.0 * w[n] * mp) \
                + 2.0 * cu * w[n] * (mu[m] * wp + p[m] * mw - 2.0 * w[m] * mp) \
                + c * (mu[m] * p[n] + mu[n] * p[m])
            if m == n:
                x += 2.0 * cu * s2 - 2.0 * c * mp
            E[m, n] = x
    G[:3, :3] = 0.0
    for a in range(3):
        for b in range(3):
            x = 0.5 * (_eps(b, a, 0) * uv[0] + _eps(b, a, 1) * uv[1] + _eps(b, a, 2) * uv[2])
            for m in range(3):
                x += (dKmu[m, 0] * R[0, a] + dKmu[m, 1] * R[1, a] + dKmu[m, 2] * R[2, a]) \
                    * A[m, b]
            G[a, 3 + b] = x
            G[3 + b, a] = x
    _so3_contracted(w, u, c, cu, A, nu, P, G[3:, 3:])
    for j in range(3):
        for k in range(3):
            x = 0.0
            for m in range(3):
                for n in range(3):
                    x += A[m, j] * E[m, n] * A[n, k]
            G[3 + j, 3 + k] += x
    keep_alive(work)


@njit(callee=True, **_JIT)
def se2_log(c0, s0, px, py, r):
    """The value of :func:`se2_log_expansion`."""
    th = np.arctan2(s0, c0)
    h = 1.0 - th * th * c_series(th * th)[0]
    r[0] = h * px + 0.5 * th * py
    r[1] = -0.5 * th * px + h * py
    r[2] = th


@njit(**_JIT)
def se3_log_expansion(R, p, r, J, H, hessian=True):
    """r = log6(M) for M = (R, p), J (6x6) and, with ``hessian``, H (6, 6, 6) of log6(M Exp(xi))
    at xi = 0, with tangent vectors [v, w] (module docstring; without ``hessian`` H is not
    written: :func:`se3_log_jacobian`)."""
    if not hessian:
        se3_log_jacobian(R, p, r, J)
        return
    w = np.empty(3)
    A = np.empty((3, 3))
    H3 = np.empty((3, 3, 3))
    so3_log_expansion(R, w, A, H3, hessian)
    K = np.empty((3, 3))
    dK = np.empty((3, 3, 3))
    ddK = np.empty((3, 3, 3, 3) if hessian else (1, 1, 3, 3))
    inverse_jacobian(w, -1.0, K, dK, ddK, 2 if hessian else 1)  # Jl^-1(w) = V^-1(w)
    # D[:, m] = dK_m p ; DD[m, n] = ddK_mn p
    D = np.zeros((3, 3))
    DD = np.zeros((3, 3, 3))
    for m in range(3):
        for a in range(3):
            for b in range(3):
                D[a, m] += dK[m, a, b] * p[b]
                if hessian:
                    for n in range(3):
                        DD[m, n, a] += ddK[m, n, a, b] * p[b]
    KR = np.empty((3, 3))
    DA = np.empty((3, 3))
    gemm(K, R, KR, 1.0)
    gemm(D, A, DA, 1.0)
    for a in range(3):
        r[a] = K[a, 0] * p[0] + K[a, 1] * p[1] + K[a, 2] * p[2]
        r[3 + a] = w[a]
    J[:, :] = 0.0
    for a in range(3):
        for k in range(3):
            J[a, k] = KR[a, k]
            J[a, 3 + k] = DA[a, k]
            J[3 + a, 3 + k] = A[a, k]
    if not hessian:
        return
    H[:, :, :] = 0.0
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


@njit(callee=True, **_JIT)
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
    WR = np.empty((2, 2))
    W1R = np.empty((2, 2))
    gemm(W, R2, WR, 1.0)
    gemm(W1, R2, W1R, 1.0)
    WRJ2 = np.empty((2, 2))  # W R J2, J2 = [[0, -1], [1, 0]]
    for a in range(2):
        WRJ2[a, 0] = WR[a, 1]
        WRJ2[a, 1] = -WR[a, 0]
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


# ---------------------------------------------------------------------------------- integrate
def _series_coefficients():
    """Taylor coefficients in u = theta^2 of the right-Jacobian functions (alternating series)::

        a(u) = (1 - cos t) / t^2,  b(u) = (t - sin t) / t^3,
        c2(u) = (t^2 + 2 cos t - 2) / (2 t^4),  c3(u) = (2 t - 3 sin t + t cos t) / (2 t^5)
    """
    n = 12
    a = [(-1) ** k / factorial(2 * k + 2) for k in range(n)]
    b = [(-1) ** k / factorial(2 * k + 3) for k in range(n)]
    c2 = [(-1) ** k / factorial(2 * k + 4) for k in range(n)]
    # c3 = (b - 3 ... ) : 2 t - 3 sin t + t cos t = sum_k (-1)^k t^(2k+1) (-3/(2k+1)! + 1/(2k)!)
    c3 = [0.5 * (-1) ** (k + 2) * (-3.0 / factorial(2 * k + 5) + 1.0 / factorial(2 * k + 4))
          for k in range(n)]
    return np.array([a, b, c2, c3])


RJ_COEFFS = _series_coefficients()


@njit(callee=True, **_JIT)
def _rj_functions(u):
    """(a, b, c2, c3) of :func:`_series_coefficients` at u = theta^2: the series for small angles,
    the closed forms above."""
    if u < 0.25:
        out = np.zeros(4)
        for r in range(4):
            s = 0.0
            for k in range(RJ_COEFFS.shape[1] - 1, -1, -1):
                s = s * u + RJ_COEFFS[r, k]
            out[r] = s
        return out[0], out[1], out[2], out[3]
    t = np.sqrt(u)
    st, ct = np.sin(t), np.cos(t)
    return ((1.0 - ct) / u, (t - st) / (u * t), (u + 2.0 * ct - 2.0) / (2.0 * u * u),
            (2.0 * t - 3.0 * st + t * ct) / (2.0 * u * u * t))


@njit(callee=True, **_JIT)
def _skew(w, W):
    W[0, 0], W[0, 1], W[0, 2] = 0.0, -w[2], w[1]
    W[1, 0], W[1, 1], W[1, 2] = w[2], 0.0, -w[0]
    W[2, 0], W[2, 1], W[2, 2] = -w[1], w[0], 0.0


@njit(callee=True, **_JIT)
def so3_exp_and_right_jacobian(w, R, Jr):
    """R = exp([w]x) and Jr(w) = I - a [w]x + b [w]x^2 (exp(w + d) = exp(w) exp(Jr d + ...))."""
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a, b, _, _ = _rj_functions(u)
    # sin(t)/t = 1 - u b, (1 - cos t)/t^2 = a
    s1 = 1.0 - u * b
    W = np.empty((3, 3))
    W2 = np.empty((3, 3))
    _skew(w, W)
    gemm(W, W, W2, 1.0)
    for r in range(3):
        for c in range(3):
            e = 1.0 if r == c else 0.0
            R[r, c] = e + s1 * W[r, c] + a * W2[r, c]
            Jr[r, c] = e - a * W[r, c] + b * W2[r, c]


@njit(callee=True, **_JIT)
def se3_integrate_jacobians(xi, Jq, Jw, R, p):
    """For M = Exp(xi) = (R, p), xi = [v, w]: Jq = Ad(M)^-1 and Jw = Jr(xi) (6x6 each): the
    Jacobians of ``(X Exp(dq)) Exp(xi + dw)`` in the local frame of ``X Exp(xi)`` (Pinocchio's
    dIntegrate); R (3x3) and p (3,) are written too."""
    v = xi[:3]
    w = xi[3:]
    J3 = np.empty((3, 3))
    so3_exp_and_right_jacobian(w, R, J3)
    u = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    a, b, c2, c3 = _rj_functions(u)
    # p = V(w) v, V = Jl(w) = I + a W + b W^2
    W = np.empty((3, 3))
    W2 = np.empty((3, 3))
    _skew(w, W)
    gemm(W, W, W2, 1.0)
    for r in range(3):
        p[r] = 0.0
        for c in range(3):
            p[r] += ((1.0 if r == c else 0.0) + a * W[r, c] + b * W2[r, c]) * v[c]
    P = np.empty((3, 3))
    _skew(p, P)
    Jq[:, :] = 0.0
    Jw[:, :] = 0.0
    # Ad(M)^-1 = [[R^T, -R^T [p]x], [0, R^T]]
    RTP = np.empty((3, 3))
    gemm_tn(R, P, RTP, -1.0, 0.0)
    for r in range(3):
        for c in range(3):
            Jq[r, c] = R[c, r]
            Jq[3 + r, 3 + c] = R[c, r]
            Jq[r, 3 + c] = RTP[r, c]
            Jw[r, c] = J3[r, c]
            Jw[3 + r, 3 + c] = J3[r, c]
    # Jr(xi) = Jl(-xi): the upper-right block is Q(-v, -w) (Barfoot), written with V = [-v]x,
    # W = [-w]x: 1/2 V + b (WV + VW + WVW) + c2 (W^2 V + V W^2 - 3 WVW) + c3 (WVW^2 + W^2VW)
    mv = np.empty(3)
    mw = np.empty(3)
    for r in range(3):
        mv[r] = -v[r]
        mw[r] = -w[r]
    Vm = np.empty((3, 3))
    Wm = np.empty((3, 3))
    _skew(mv, Vm)
    _skew(mw, Wm)
    WV = np.empty((3, 3))
    VW = np.empty((3, 3))
    WVW = np.empty((3, 3))
    WW = np.empty((3, 3))
    WWV = np.empty((3, 3))
    VWW = np.empty((3, 3))
    WVWW = np.empty((3, 3))
    WWVW = np.empty((3, 3))
    gemm(Wm, Vm, WV, 1.0)
    gemm(Vm, Wm, VW, 1.0)
    gemm(WV, Wm, WVW, 1.0)
    gemm(Wm, Wm, WW, 1.0)
    gemm(WW, Vm, WWV, 1.0)
    gemm(Vm, WW, VWW, 1.0)
    gemm(WVW, Wm, WVWW, 1.0)
    gemm(Wm, WVW, WWVW, 1.0)
    for r in range(3):
        for c in range(3):
            Jw[r, 3 + c] = (0.5 * Vm[r, c] + b * (WV[r, c] + VW[r, c] + WVW[r, c])
                            + c2 * (WWV[r, c] + VWW[r, c] - 3.0 * WVW[r, c])
                            + c3 * (WVWW[r, c] + WWVW[r, c]))


@njit(callee=True, **_JIT)
def se2_integrate_jacobians(xi, Jq, Jw, R, p):
    """For M = Exp(xi), xi = [v_x, v_y, w] on SE(2): Jq = Ad(M)^-1 and Jw = Jr(xi) (3x3 each);
    M's rotation is written to R[:2, :2] and its translation to p[:2]."""
    th = xi[2]
    u = th * th
    a, b, _, _ = _rj_functions(u)
    s1 = 1.0 - u * b          # sin(th) / th
    c1 = a * th               # (1 - cos th) / th
    ct, st = np.cos(th), np.sin(th)
    # p = V v, V = [[s1, -c1], [c1, s1]]
    px = s1 * xi[0] - c1 * xi[1]
    py = c1 * xi[0] + s1 * xi[1]
    R[0, 0], R[0, 1], R[1, 0], R[1, 1] = ct, -st, st, ct
    p[0], p[1] = px, py
    # Ad(M) = [[R, -J2 p], [0, 1]] with J2 p = (-p_y, p_x); inverse: [[R^T, J2 R^T p], [0, 1]]
    rx = ct * px + st * py
    ry = -st * px + ct * py
    Jq[:, :] = 0.0
    Jq[0, 0], Jq[0, 1], Jq[1, 0], Jq[1, 1] = ct, st, -st, ct
    Jq[0, 2], Jq[1, 2], Jq[2, 2] = -ry, rx, 1.0
    # Jr = [[s1, c1, d1], [-c1, s1, d2], [0, 0, 1]]: derivative of Exp along w, right-trivialized
    # d1 = (th v_x - v_y + v_y cos th - v_x sin th) / th^2, d2 = (v_x + th v_y - v_x cos th -
    # v_y sin th) / th^2, written with a = (1 - cos)/th^2 and b = (th - sin)/th^3
    Jw[:, :] = 0.0
    Jw[0, 0], Jw[0, 1], Jw[1, 0], Jw[1, 1] = s1, c1, -c1, s1
    Jw[0, 2] = b * th * xi[0] - a * xi[1]
    Jw[1, 2] = a * xi[0] + b * th * xi[1]
    Jw[2, 2] = 1.0


@njit(callee=True, **_JIT)
def _bracket(kind, x, y, out):
    """out = ad_x y = [x^, y^]v on so(3) (kind SPH), se(3) (FF: [v, w]) or se(2) (PLA)."""
    if kind == SPH:
        _skew_apply(x, y, out)
    elif kind == FF:
        _skew_apply(x[3:], y[:3], out[:3])      # w1 x v2
        t = np.empty(3)
        _skew_apply(x[:3], y[3:], t)            # + v1 x w2
        for a in range(3):
            out[a] += t[a]
        _skew_apply(x[3:], y[3:], out[3:])      # w1 x w2
    else:  # se(2): (w1 J2 v2 - w2 J2 v1, 0), J2 (x, y) = (-y, x)
        out[0] = -x[2] * y[1] + y[2] * x[1]
        out[1] = x[2] * y[0] - y[2] * x[0]
        out[2] = 0.0


@njit(callee=True, **_JIT)
def _integrate_hessian_block(kind, R, p, Ad, Jr, Hb):
    """Hb (k, 2k, 2k): the Hessians of ``G(a, b) = Log(Exp(w)^-1 Exp(a) Exp(w + b))`` at 0 in
    (a, b) for one Lie-group joint (k = 3 or 6), given Exp(w) (rotation R; SE(3), SE(2):
    translation p; SE(2) in R[:2, :2], p[:2]), Ad = Ad(Exp(w))^-1 and Jr = Jr(w).

    ``Exp(-w) Exp(a) Exp(w) = Exp(Ad a)`` and ``Exp(w + b) = Exp(w) Exp(c(b))``, so by
    Baker-Campbell-Hausdorff ``G = Ad a + c(b) + 1/2 ad_{Ad a} c(b) + O(3)``: no a-a term, the
    a-b term ``1/2 ad_{Ad e_j} Jr e_k``, and the b-b term of c, the inverse of
    ``c -> Log(Exp(w) Exp(c)) - w = Jr^-1 c + 1/2 L[c, c] + O(3)`` (L the Hessian of the
    logarithm, :func:`so3_log_expansion` and the others):  ``c''[b, b] = -Jr L[Jr b, Jr b]``."""
    k = Jr.shape[0]
    r = np.empty(k)
    Jlog = np.empty((k, k))  # the logarithm's Jacobian: not needed here
    L = np.empty((k, k, k))
    if kind == SPH:
        so3_log_expansion(R, r, Jlog, L, np.bool_(True))
    elif kind == FF:
        se3_log_expansion(R, p, r, Jlog, L, np.bool_(True))
    else:
        se2_log_expansion(R[0, 0], R[1, 0], p[0], p[1], r, Jlog, L)
    Hb[:, :, :] = 0.0
    x = np.empty(k)
    y = np.empty(k)
    for j in range(k):
        for c in range(k):
            x[c] = Ad[c, j]
        for kk in range(k):
            _bracket(kind, x, Jr[:, kk], y)
            for i in range(k):
                Hb[i, j, k + kk] = 0.5 * y[i]
                Hb[i, k + kk, j] = 0.5 * y[i]
    # LJ[i, p, kk] = sum_r L[i, p, r] Jr[r, kk]; JLJ[i, j, kk] = sum_p Jr[p, j] LJ[i, p, kk]
    LJ = np.zeros((k, k, k))
    for i in range(k):
        for p_ in range(k):
            for r_ in range(k):
                l = L[i, p_, r_]
                if l != 0.0:
                    for kk in range(k):
                        LJ[i, p_, kk] += l * Jr[r_, kk]
    JLJ = np.zeros((k, k, k))
    for i in range(k):
        for p_ in range(k):
            for j in range(k):
                jr = Jr[p_, j]
                if jr != 0.0:
                    for kk in range(k):
                        JLJ[i, j, kk] += jr * LJ[i, p_, kk]
    for i in range(k):
        for j in range(k):
            for kk in range(k):
                x_ = 0.0
                for a_ in range(k):
                    x_ -= Jr[i, a_] * JLJ[a_, j, kk]
                Hb[i, k + j, k + kk] = x_


@njit(callee=True, **_JIT)
def integrate_expansion_point(m, w, Jq, Jw, H, hessian):
    """Jq, Jw (n, n) of ``(q (+) dq) (+) (w + dw)`` at 0, joint block by joint block (identity
    on vector-space joints), and with ``hessian`` H (nb, 6, 12, 12): for the b-th Lie-group
    joint (in tree order; an unbounded revolute joint's SO(2) is commutative, so its block is
    zero) the Hessians of each component in (dq, dw) of that joint (zero-padded; not written
    without ``hessian``).  None depends on q (left invariance)."""
    n = w.shape[0]
    for r in range(n):
        for c in range(n):
            Jq[r, c] = 1.0 if r == c else 0.0
            Jw[r, c] = 1.0 if r == c else 0.0
    if hessian:
        H[:, :, :, :] = 0.0
    block = 0
    for i in range(1, m.parent.shape[0]):
        t, o = m.jtype[i], m.iv[i]
        # the work arrays of a Lie-group joint, allocated only there (a vector-space joint costs
        # its type test alone: UR3's expansion per knot 0.44 -> 0.28 us)
        if t == SPH:
            R = np.empty((3, 3))  # Exp(w) of the joint
            B3w = np.empty((3, 3))
            so3_exp_and_right_jacobian(w[o:o + 3], R, B3w)
            Ad = R.T.copy()  # Ad(exp(w))^-1 = exp(w)^T on SO(3)
            _put_block(Ad, B3w, o, Jq, Jw)
            if hessian:
                Hb3 = np.empty((3, 6, 6))
                _integrate_hessian_block(np.int64(SPH), R, np.empty(3), Ad, B3w, Hb3)
                copy_into(H[block, :3, :6, :6], Hb3)
        elif t == FF:
            R = np.empty((3, 3))
            p = np.empty(3)
            B6q = np.empty((6, 6))
            B6w = np.empty((6, 6))
            se3_integrate_jacobians(w[o:o + 6], B6q, B6w, R, p)
            _put_block(B6q, B6w, o, Jq, Jw)
            if hessian:
                Hb6 = np.empty((6, 12, 12))
                _integrate_hessian_block(np.int64(FF), R, p, B6q, B6w, Hb6)
                copy_into(H[block], Hb6)
        elif t == PLA:
            R = np.empty((3, 3))
            p = np.empty(3)
            B3q = np.empty((3, 3))
            B3w = np.empty((3, 3))
            se2_integrate_jacobians(w[o:o + 3], B3q, B3w, R, p)
            _put_block(B3q, B3w, o, Jq, Jw)
            if hessian:
                Hb3 = np.empty((3, 6, 6))
                _integrate_hessian_block(np.int64(PLA), R, p, B3q, B3w, Hb3)
                copy_into(H[block, :3, :6, :6], Hb3)
        if t == SPH or t == FF or t == PLA or t == RUB:
            block += 1


@njit(callee=True, **_JIT)
def _put_block(Bq, Bw, o, Jq, Jw):
    k = Bq.shape[0]
    for r in range(k):
        for c in range(k):
            Jq[o + r, o + c] = Bq[r, c]
            Jw[o + r, o + c] = Bw[r, c]


@njit(**_JIT)
def integrate_expansion_chunk(ints, floats, W, hessian, Jq, Jw, H, chunk, nchunks):
    """:func:`integrate_expansion_point` at the knots of chunk ``chunk`` of ``nchunks`` of W
    (T, nv) into (Jq, Jw) (T, nv, nv) and H (T, nblocks, 6, 12, 12) (zeroed by the caller; left
    so without ``hessian``)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(W.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        integrate_expansion_point(m, W[t], Jq[t], Jw[t], H[t], hessian)


@njit(cache=True, error_model="numpy")
def integrate_expansion_batch(ints, floats, W, hessian, Jq, Jw, H, chunks):
    """The door of :func:`integrate_expansion_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, W, hessian, Jq, Jw, H), chunks)

