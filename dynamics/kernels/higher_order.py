"""Higher-order time derivatives of inverse, forward and hybrid dynamics (Ali, Gabellieri, Franchi
2026: H-GRNE-FBS, H-GABI-FBS, H-GHYB-FBS), compiled with numba.

Formulation.  The paper propagates spatial (inertial-frame) twists and the derivatives of the joint
screws, S^(r) = sum C(r-1, j) ad_{V^(j)} S^(r-1-j).  We propagate the same Taylor coefficients in
body frames (Featherstone/Pinocchio), where the body inertias and the motion subspaces S are constant
and the only time-varying objects are the joint transforms X_J(q(t)) = (R(t), p(t)).  Their
derivatives follow from R' = R [w_J]x and p' = R v_J (the joint twist xi_J = S v_j is expressed in
the child frame, for every joint type), so by the Leibniz rule

    R^(k+1) = sum_j C(k, j) R^(k-j) [w_J^(j)]x,      p^(k+1) = sum_j C(k, j) R^(k-j) v_J^(j).

Every other relation is bilinear and differentiates by the Leibniz rule as well:

    V_i            = X_J^-1 X_P^-1 V_parent + S v_i                     (body twist)
    F_i            = I V_i' + V_i x* (I V_i) + I G_i + sum_children X^T F_c   (transmitted wrench)
    G_i'           = -w_i x G_i    (gravity as a fictitious acceleration of the ground, body frame)
    tau_i          = S^T F_i

so order k costs O(k) products per body and orders 0..r cost O(N r^2), as in the paper.  The
articulated-body inertia is order independent (the paper's Lemma 2): forward dynamics computes it
once and runs, per order, one backward pass for the bias wrench and one forward pass for the new
acceleration, exactly the structure of Alg. 3; marking joints as motion-prescribed turns the same
passes into the hybrid algorithm (Alg. 4).  The paper's reported pitfalls (App. E's sign of
ad_V^T Pi, the base block's S^T ad_V^T versus S-dot^T, A^0_1) concern the spatial formulation and
have no counterpart here; the tests against IDSVA/IDSVA-SO chain rules, CasADi AD in time and
finite differences in time would catch any such error.

Conventions (the toolkit's): q on the manifold, v Pinocchio's velocity (local free-flyer twist),
vd[k] = d^k v / dt^k along the curve with q' = v (right/local), tau = rnea(q, v, v'), all joint types
(revolute, unbounded revolute, prismatic, helical, spherical, planar, free-flyer).

Series arrays (one sample; joint 0 is the universe and stays zero), K = highest velocity order:
    R (nj, K+1, 3, 3), P (nj, K+1, 3)  joint transform series
    XI (nj, K+1, 6)   joint twist S v_i series          V (nj, K+1, 6)  body twist series
    Z (nj, K+1, 6)    parent twist through the placement and the joint translation
                      [W_lin - (p x W_ang), W_ang] with W = X_P^-1 V_parent
    G (nj, K+1, 3)    gravity acceleration (linear part; its angular part is zero)
    PI (nj, K+1, 6)   momenta I V                       FF (nj, K+1, 6) transmitted wrench series
    FP (nj, K+1, 6)   the wrench series through the joint transform, [R f, R n + p x R f]
"""

import numpy as np
from numba import njit, prange

from .kinematics import FF, HEL, PLA, PRI, forward_kinematics, joint_transform
from .layout import unpack
from .spatial import body_coriolis_add, dot6, ground_inertia, matvec6, motion_cross

_JIT = dict(cache=True, error_model="numpy")
_INL = dict(cache=True, error_model="numpy", inline="always")


@njit(**_JIT)
def binomials(K):
    """Pascal's triangle B[n, k] = C(n, k) for 0 <= k <= n <= K (zero above the diagonal)."""
    B = np.zeros((K + 1, K + 1))
    for n in range(K + 1):
        B[n, 0] = 1.0
        for k in range(1, n + 1):
            B[n, k] = B[n - 1, k - 1] + (B[n - 1, k] if k < n else 0.0)
    return B


@njit(**_JIT)
def workspace(nj, K):
    """The series arrays of one sample (see module docstring) and per-order scratch."""
    R = np.zeros((nj, K + 1, 3, 3))
    P = np.zeros((nj, K + 1, 3))
    XI = np.zeros((nj, K + 1, 6))
    V = np.zeros((nj, K + 1, 6))
    Z = np.zeros((nj, K + 1, 6))
    G = np.zeros((nj, K + 1, 3))
    PI = np.zeros((nj, K + 1, 6))
    FF_ = np.zeros((nj, K + 1, 6))
    FP = np.zeros((nj, K + 1, 6))
    acc = np.zeros((nj, 6))  # per-order wrench accumulator (children's share, bias wrench)
    cb = np.zeros((nj, 6))  # per-order twist bias
    sc = np.zeros((3, 6))  # three 6-vectors of scratch
    return R, P, XI, V, Z, G, PI, FF_, FP, acc, cb, sc


@njit(**_INL)
def _has_translation(jtype):
    return jtype == PRI or jtype == HEL or jtype == PLA or jtype == FF


@njit(**_INL)
def _joint_twist(m, i, vk, out):
    """out = S_i v_i (joint twist in the child frame) for the velocity-order vector vk."""
    for r in range(6):
        out[r] = 0.0
    for d in range(m.iv[i], m.iv[i] + m.nvj[i]):
        s = vk[d]
        for r in range(6):
            out[r] += m.S_local[d, r] * s


@njit(**_INL)
def _joint_series(i, k, B, XI, R, P, trans):
    """R^(k), P^(k) (k >= 1) from the lower orders and the joint twist up to order k-1."""
    for r in range(3):
        P[i, k, r] = 0.0
        for c in range(3):
            R[i, k, r, c] = 0.0
    for j in range(k):
        b = B[k - 1, j]
        w0, w1, w2 = b * XI[i, j, 3], b * XI[i, j, 4], b * XI[i, j, 5]
        l0, l1, l2 = b * XI[i, j, 0], b * XI[i, j, 1], b * XI[i, j, 2]
        A = R[i, k - 1 - j]
        for r in range(3):
            a0, a1, a2 = A[r, 0], A[r, 1], A[r, 2]
            R[i, k, r, 0] += a1 * w2 - a2 * w1
            R[i, k, r, 1] += a2 * w0 - a0 * w2
            R[i, k, r, 2] += a0 * w1 - a1 * w0
            if trans:
                P[i, k, r] += a0 * l0 + a1 * l1 + a2 * l2


@njit(**_INL)
def _twist_bias(i, k, B, R, P, Z, trans, out):
    """The part of V_i^(k) known before V_parent^(k) and v_i^(k): out = sum_{j>=1} C(k, j)
    (X_J^-1)^(j) Z^(k-j) + R0^T z_partial; writes z_partial (the known part of Z[i, k, :3])."""
    zp0 = 0.0
    zp1 = 0.0
    zp2 = 0.0
    if trans:
        for j in range(1, k + 1):
            b = B[k, j]
            p0, p1, p2 = b * P[i, j, 0], b * P[i, j, 1], b * P[i, j, 2]
            w = Z[i, k - j]
            zp0 -= p1 * w[5] - p2 * w[4]
            zp1 -= p2 * w[3] - p0 * w[5]
            zp2 -= p0 * w[4] - p1 * w[3]
    Z[i, k, 0] = zp0
    Z[i, k, 1] = zp1
    Z[i, k, 2] = zp2
    R0 = R[i, 0]
    for c in range(3):
        out[c] = R0[0, c] * zp0 + R0[1, c] * zp1 + R0[2, c] * zp2
        out[3 + c] = 0.0
    for j in range(1, k + 1):
        b = B[k, j]
        A = R[i, j]
        zz = Z[i, k - j]
        for c in range(3):
            out[c] += b * (A[0, c] * zz[0] + A[1, c] * zz[1] + A[2, c] * zz[2])
            out[3 + c] += b * (A[0, c] * zz[3] + A[1, c] * zz[4] + A[2, c] * zz[5])


@njit(**_INL)
def _twist_complete(m, i, k, Vp, R, P, Z, out):
    """Adds the parent twist Vp = V_parent^(k) to Z[i, k] and out += X0 Vp (X0: child from
    parent at the current configuration)."""
    RP = m.place_R[i]
    pP = m.place_p[i]
    # W = X_P^-1 Vp = (RP^T (v - pP x w), RP^T w)
    v0 = Vp[0] - (pP[1] * Vp[5] - pP[2] * Vp[4])
    v1 = Vp[1] - (pP[2] * Vp[3] - pP[0] * Vp[5])
    v2 = Vp[2] - (pP[0] * Vp[4] - pP[1] * Vp[3])
    wl0 = RP[0, 0] * v0 + RP[1, 0] * v1 + RP[2, 0] * v2
    wl1 = RP[0, 1] * v0 + RP[1, 1] * v1 + RP[2, 1] * v2
    wl2 = RP[0, 2] * v0 + RP[1, 2] * v1 + RP[2, 2] * v2
    wa0 = RP[0, 0] * Vp[3] + RP[1, 0] * Vp[4] + RP[2, 0] * Vp[5]
    wa1 = RP[0, 1] * Vp[3] + RP[1, 1] * Vp[4] + RP[2, 1] * Vp[5]
    wa2 = RP[0, 2] * Vp[3] + RP[1, 2] * Vp[4] + RP[2, 2] * Vp[5]
    p = P[i, 0]
    z0 = wl0 - (p[1] * wa2 - p[2] * wa1)
    z1 = wl1 - (p[2] * wa0 - p[0] * wa2)
    z2 = wl2 - (p[0] * wa1 - p[1] * wa0)
    Z[i, k, 0] += z0
    Z[i, k, 1] += z1
    Z[i, k, 2] += z2
    Z[i, k, 3] = wa0
    Z[i, k, 4] = wa1
    Z[i, k, 5] = wa2
    R0 = R[i, 0]
    for c in range(3):
        out[c] += R0[0, c] * z0 + R0[1, c] * z1 + R0[2, c] * z2
        out[3 + c] += R0[0, c] * wa0 + R0[1, c] * wa1 + R0[2, c] * wa2


@njit(**_INL)
def _inertia_apply(m, i, x, out):
    """out = I_i x (body-frame spatial inertia: f = m (x_l - c x x_a), n = Ic x_a + c x f)."""
    c = m.com[i]
    M = m.mass[i]
    f0 = M * (x[0] - (c[1] * x[5] - c[2] * x[4]))
    f1 = M * (x[1] - (c[2] * x[3] - c[0] * x[5]))
    f2 = M * (x[2] - (c[0] * x[4] - c[1] * x[3]))
    Ic = m.Icom[i]
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = Ic[0, 0] * x[3] + Ic[0, 1] * x[4] + Ic[0, 2] * x[5] + c[1] * f2 - c[2] * f1
    out[4] = Ic[1, 0] * x[3] + Ic[1, 1] * x[4] + Ic[1, 2] * x[5] + c[2] * f0 - c[0] * f2
    out[5] = Ic[2, 0] * x[3] + Ic[2, 1] * x[4] + Ic[2, 2] * x[5] + c[0] * f1 - c[1] * f0


@njit(**_INL)
def _gravity_elem(m, i, k, B, V, G, R):
    """G_i^(k): k = 0 transports the parent's value, k >= 1 uses G' = -w x G."""
    if k == 0:
        lam = m.parent[i]
        if lam == 0:
            g0, g1, g2 = -m.gravity[0], -m.gravity[1], -m.gravity[2]
        else:
            g0, g1, g2 = G[lam, 0, 0], G[lam, 0, 1], G[lam, 0, 2]
        RP = m.place_R[i]
        h0 = RP[0, 0] * g0 + RP[1, 0] * g1 + RP[2, 0] * g2
        h1 = RP[0, 1] * g0 + RP[1, 1] * g1 + RP[2, 1] * g2
        h2 = RP[0, 2] * g0 + RP[1, 2] * g1 + RP[2, 2] * g2
        R0 = R[i, 0]
        for c in range(3):
            G[i, 0, c] = R0[0, c] * h0 + R0[1, c] * h1 + R0[2, c] * h2
        return
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for j in range(k):
        b = B[k - 1, j]
        w = V[i, j]
        g = G[i, k - 1 - j]
        s0 += b * (w[4] * g[2] - w[5] * g[1])
        s1 += b * (w[5] * g[0] - w[3] * g[2])
        s2 += b * (w[3] * g[1] - w[4] * g[0])
    G[i, k, 0] = -s0
    G[i, k, 1] = -s1
    G[i, k, 2] = -s2


@njit(**_INL)
def _wrench_bias(m, i, k, B, V, G, PI, out):
    """out = I G^(k) + sum_j C(k, j) V^(j) x* PI^(k-j): the body's own wrench at order k without
    its momentum derivative PI^(k+1)."""
    g = G[i, k]
    M = m.mass[i]
    c = m.com[i]
    f0, f1, f2 = M * g[0], M * g[1], M * g[2]
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = c[1] * f2 - c[2] * f1
    out[4] = c[2] * f0 - c[0] * f2
    out[5] = c[0] * f1 - c[1] * f0
    for j in range(k + 1):
        b = B[k, j]
        v = V[i, j]
        f = PI[i, k - j]
        # v x* f = [w x f_l, w x f_a + v_l x f_l]
        out[0] += b * (v[4] * f[2] - v[5] * f[1])
        out[1] += b * (v[5] * f[0] - v[3] * f[2])
        out[2] += b * (v[3] * f[1] - v[4] * f[0])
        out[3] += b * (v[4] * f[5] - v[5] * f[4] + v[1] * f[2] - v[2] * f[1])
        out[4] += b * (v[5] * f[3] - v[3] * f[5] + v[2] * f[0] - v[0] * f[2])
        out[5] += b * (v[3] * f[4] - v[4] * f[3] + v[0] * f[1] - v[1] * f[0])


@njit(**_INL)
def _placement_force_add(m, i, f, out):
    """out += X_P f: a wrench in joint i's parent-side frame moved to the parent body frame."""
    RP = m.place_R[i]
    pP = m.place_p[i]
    a0 = RP[0, 0] * f[0] + RP[0, 1] * f[1] + RP[0, 2] * f[2]
    a1 = RP[1, 0] * f[0] + RP[1, 1] * f[1] + RP[1, 2] * f[2]
    a2 = RP[2, 0] * f[0] + RP[2, 1] * f[1] + RP[2, 2] * f[2]
    out[0] += a0
    out[1] += a1
    out[2] += a2
    out[3] += (RP[0, 0] * f[3] + RP[0, 1] * f[4] + RP[0, 2] * f[5]) + pP[1] * a2 - pP[2] * a1
    out[4] += (RP[1, 0] * f[3] + RP[1, 1] * f[4] + RP[1, 2] * f[5]) + pP[2] * a0 - pP[0] * a2
    out[5] += (RP[2, 0] * f[3] + RP[2, 1] * f[4] + RP[2, 2] * f[5]) + pP[0] * a1 - pP[1] * a0


@njit(**_INL)
def _force_bias(i, k, B, R, P, FF_, FP, trans, out):
    """The part of (X_J F_i)^(k) known before F_i^(k) (joint-side frame); stores its force part
    in FP[i, k] for the completion."""
    f0 = 0.0
    f1 = 0.0
    f2 = 0.0
    n0 = 0.0
    n1 = 0.0
    n2 = 0.0
    for j in range(1, k + 1):
        b = B[k, j]
        A = R[i, j]
        F = FF_[i, k - j]
        f0 += b * (A[0, 0] * F[0] + A[0, 1] * F[1] + A[0, 2] * F[2])
        f1 += b * (A[1, 0] * F[0] + A[1, 1] * F[1] + A[1, 2] * F[2])
        f2 += b * (A[2, 0] * F[0] + A[2, 1] * F[1] + A[2, 2] * F[2])
        n0 += b * (A[0, 0] * F[3] + A[0, 1] * F[4] + A[0, 2] * F[5])
        n1 += b * (A[1, 0] * F[3] + A[1, 1] * F[4] + A[1, 2] * F[5])
        n2 += b * (A[2, 0] * F[3] + A[2, 1] * F[4] + A[2, 2] * F[5])
    if trans:
        for j in range(1, k + 1):
            b = B[k, j]
            p = P[i, j]
            g = FP[i, k - j]
            n0 += b * (p[1] * g[2] - p[2] * g[1])
            n1 += b * (p[2] * g[0] - p[0] * g[2])
            n2 += b * (p[0] * g[1] - p[1] * g[0])
        p = P[i, 0]
        n0 += p[1] * f2 - p[2] * f1
        n1 += p[2] * f0 - p[0] * f2
        n2 += p[0] * f1 - p[1] * f0
    FP[i, k, 0] = f0
    FP[i, k, 1] = f1
    FP[i, k, 2] = f2
    out[0] = f0
    out[1] = f1
    out[2] = f2
    out[3] = n0
    out[4] = n1
    out[5] = n2


@njit(**_INL)
def _force_complete(i, k, F, R, P, FP, out):
    """FF[i, k] = F must be set by the caller; completes FP[i, k] and writes out = X_J F at the
    current configuration (joint-side frame)."""
    A = R[i, 0]
    a0 = A[0, 0] * F[0] + A[0, 1] * F[1] + A[0, 2] * F[2]
    a1 = A[1, 0] * F[0] + A[1, 1] * F[1] + A[1, 2] * F[2]
    a2 = A[2, 0] * F[0] + A[2, 1] * F[1] + A[2, 2] * F[2]
    p = P[i, 0]
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = (A[0, 0] * F[3] + A[0, 1] * F[4] + A[0, 2] * F[5]) + p[1] * a2 - p[2] * a1
    out[4] = (A[1, 0] * F[3] + A[1, 1] * F[4] + A[1, 2] * F[5]) + p[2] * a0 - p[0] * a2
    out[5] = (A[2, 0] * F[3] + A[2, 1] * F[4] + A[2, 2] * F[5]) + p[0] * a1 - p[1] * a0
    FP[i, k, 0] += a0
    FP[i, k, 1] += a1
    FP[i, k, 2] += a2


@njit(**_INL)
def _kinematics_order0(m, i, q, v, ws):
    """Order-0 joint transform, joint twist, twist, momentum and gravity of body i."""
    R, P, XI, V, Z, G, PI, FF_, FP, acc, cb, sc = ws
    joint_transform(m.jtype[i], m.axis[i], m.pitch[i], q, m.iq[i], R[i, 0], P[i, 0])
    _joint_twist(m, i, v, XI[i, 0])
    lam = m.parent[i]
    for r in range(6):
        V[i, 0, r] = XI[i, 0, r]
        Z[i, 0, r] = 0.0
    if lam > 0:
        _twist_complete(m, i, 0, V[lam, 0], R, P, Z, V[i, 0])
    _inertia_apply(m, i, V[i, 0], PI[i, 0])


@njit(**_JIT)
def rnea_point(m, q, vd, B, ws, tau):
    """H-GRNE: tau[k] = d^k/dt^k rnea(q, v, v') for k = 0..r, from vd[k] = v^(k), k = 0..r+1.
    ``tau`` (r+1, nv); ``ws`` = workspace(nj, r+1); ``B`` = binomials(r+1)."""
    R, P, XI, V, Z, G, PI, FF_, FP, acc, cb, sc = ws
    nj = m.parent.shape[0]
    K = vd.shape[0] - 1
    tmp = sc[0]
    for i in range(1, nj):
        _kinematics_order0(m, i, q, vd[0], ws)
        _gravity_elem(m, i, 0, B, V, G, R)
    for k in range(1, K + 1):
        for i in range(1, nj):
            trans = _has_translation(m.jtype[i])
            _joint_series(i, k, B, XI, R, P, trans)
            _joint_twist(m, i, vd[k], XI[i, k])
            _twist_bias(i, k, B, R, P, Z, trans, V[i, k])
            for r in range(6):
                V[i, k, r] += XI[i, k, r]
            lam = m.parent[i]
            if lam > 0:
                _twist_complete(m, i, k, V[lam, k], R, P, Z, V[i, k])
            else:
                for r in range(3, 6):
                    Z[i, k, r] = 0.0
            _inertia_apply(m, i, V[i, k], PI[i, k])
            if k < K:
                _gravity_elem(m, i, k, B, V, G, R)
    for k in range(K):
        for i in range(nj):
            for r in range(6):
                acc[i, r] = 0.0
        for i in range(nj - 1, 0, -1):
            F = FF_[i, k]
            _wrench_bias(m, i, k, B, V, G, PI, F)
            for r in range(6):
                F[r] += PI[i, k + 1, r] + acc[i, r]
            for d in range(m.iv[i], m.iv[i] + m.nvj[i]):
                s = 0.0
                for r in range(6):
                    s += m.S_local[d, r] * F[r]
                tau[k, d] = s
            lam = m.parent[i]
            trans = _has_translation(m.jtype[i])
            _force_bias(i, k, B, R, P, FF_, FP, trans, tmp)
            if lam > 0:
                _placement_force_add(m, i, tmp, acc[lam])
            _force_complete(i, k, F, R, P, FP, tmp)
            if lam > 0:
                _placement_force_add(m, i, tmp, acc[lam])


@njit(**_INL)
def _motion_matrix(m, i, R, P, X):
    """X (6x6): child-from-parent motion transform of joint i at the current configuration,
    [[Rc^T, -Rc^T [pc]x], [0, Rc^T]] for the child placement (Rc, pc) = X_P X_J in the parent."""
    RP = m.place_R[i]
    pP = m.place_p[i]
    R0 = R[i, 0]
    p0 = P[i, 0]
    pc0 = pP[0] + RP[0, 0] * p0[0] + RP[0, 1] * p0[1] + RP[0, 2] * p0[2]
    pc1 = pP[1] + RP[1, 0] * p0[0] + RP[1, 1] * p0[1] + RP[1, 2] * p0[2]
    pc2 = pP[2] + RP[2, 0] * p0[0] + RP[2, 1] * p0[1] + RP[2, 2] * p0[2]
    for r in range(3):
        # row r of Rc^T is column r of Rc = RP R0[:, r]
        a0 = RP[0, 0] * R0[0, r] + RP[0, 1] * R0[1, r] + RP[0, 2] * R0[2, r]
        a1 = RP[1, 0] * R0[0, r] + RP[1, 1] * R0[1, r] + RP[1, 2] * R0[2, r]
        a2 = RP[2, 0] * R0[0, r] + RP[2, 1] * R0[1, r] + RP[2, 2] * R0[2, r]
        X[r, 0] = a0
        X[r, 1] = a1
        X[r, 2] = a2
        X[3 + r, 3] = a0
        X[3 + r, 4] = a1
        X[3 + r, 5] = a2
        X[3 + r, 0] = 0.0
        X[3 + r, 1] = 0.0
        X[3 + r, 2] = 0.0
        # (-Rc^T [pc]x)[r, :] = -(a x pc)^T = (pc x a)^T
        X[r, 3] = pc1 * a2 - pc2 * a1
        X[r, 4] = pc2 * a0 - pc0 * a2
        X[r, 5] = pc0 * a1 - pc1 * a0


@njit(**_INL)
def _spd_inverse(W, n, out):
    """out[:n, :n] = inverse of the symmetric positive-definite W[:n, :n] by Gauss-Jordan
    elimination (no pivoting needed); W is overwritten."""
    for r in range(n):
        for c in range(n):
            out[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        piv = 1.0 / W[k, k]
        for c in range(n):
            W[k, c] *= piv
            out[k, c] *= piv
        for r in range(n):
            if r != k:
                f = W[r, k]
                for c in range(n):
                    W[r, c] -= f * W[k, c]
                    out[r, c] -= f * out[k, c]


@njit(**_JIT)
def articulated_inertias(m, motion, R, P, X0, IA, U, Dinv, tmp, Ia, eye3, zero3):
    """Order-independent part of H-GABI/H-GHYB (the paper's Lemma 2): X0[i] (6x6 child from
    parent), articulated inertias IA[i], U[i] = IA S (first nvj columns) and Dinv[i] = (S^T IA S)^-1
    for prescribed-torque joints (``motion[i] == 0``); motion-prescribed joints pass IA unprojected.
    R[:, 0], P[:, 0] are the joint transforms of the order-0 kinematics; ``tmp``, ``Ia`` (6x6)
    are scratch; ``eye3``, ``zero3`` the identity placement (body-frame inertias)."""
    nj = m.parent.shape[0]
    for i in range(1, nj):
        _motion_matrix(m, i, R, P, X0[i])
        ground_inertia(eye3, zero3, m.mass[i], m.com[i], m.Icom[i], IA[i])
    for i in range(nj - 1, 0, -1):
        n = m.nvj[i]
        iv = m.iv[i]
        for a in range(n):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += IA[i, r, c] * m.S_local[iv + a, c]
                U[i, r, a] = s
        for r in range(6):
            for c in range(6):
                Ia[r, c] = IA[i, r, c]
        if motion[i] == 0 and n == 1:
            d = 0.0
            for r in range(6):
                d += m.S_local[iv, r] * U[i, r, 0]
            Dinv[i, 0, 0] = 1.0 / d
            for r in range(6):
                for c in range(6):
                    Ia[r, c] -= U[i, r, 0] * U[i, c, 0] / d
        elif motion[i] == 0:
            for a in range(n):
                for b in range(n):
                    s = 0.0
                    for r in range(6):
                        s += m.S_local[iv + a, r] * U[i, r, b]
                    tmp[a, b] = s
            _spd_inverse(tmp, n, Dinv[i])
            if m.parent[i] > 0:  # the root's projected inertia is not needed
                for r in range(6):
                    for c in range(6):
                        s = 0.0
                        for a in range(n):
                            for b in range(n):
                                s += U[i, r, a] * Dinv[i, a, b] * U[i, c, b]
                        Ia[r, c] -= s
        lam = m.parent[i]
        if lam > 0:
            # IA[lam] += X^T Ia X; X's lower-left block is zero and the result symmetric
            X = X0[i]
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for k in range(3 if c < 3 else 6):
                        s += Ia[r, k] * X[k, c]
                    tmp[r, c] = s
            for r in range(6):
                for c in range(r, 6):
                    s = 0.0
                    for k in range(3 if r < 3 else 6):
                        s += X[k, r] * tmp[k, c]
                    IA[lam, r, c] += s
                    if c != r:
                        IA[lam, c, r] += s


@njit(**_INL)
def _torque_joint_solve(m, i, tau_k, pA, U, Dinv, x, tmp, u):
    """u = D^-1 (tau_i - S^T pA - U^T x) for a prescribed-torque joint i (ABA's joint equation;
    x is the joint's twist before S u: its bias, plus the parent's acceleration once known)."""
    n = m.nvj[i]
    iv = m.iv[i]
    for a in range(n):
        s = tau_k[iv + a]
        for r in range(6):
            s -= m.S_local[iv + a, r] * pA[r] + U[i, r, a] * x[r]
        tmp[a] = s
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += Dinv[i, a, b] * tmp[b]
        u[a] = s


@njit(**_JIT)
def hybrid_point(m, q, vd, tau, motion, B, ws, buffers):
    """H-GABI / H-GHYB at one sample, orders k = 0..r.

    ``vd`` (r+2, nv): vd[0] = v; vd[k+1] for DoFs of motion-prescribed joints (``motion[i] == 1``)
    is input, for the others output.  ``tau`` (r+1, nv): input for prescribed-torque joints, output
    for motion-prescribed ones.  With no motion-prescribed joint this is H-GABI (forward dynamics).
    """
    R, P, XI, V, Z, G, PI, FF_, FP, acc, cb, sc = ws
    X0, IA, U, Dinv, tmp66, Ia, eye3, zero3 = buffers
    nj = m.parent.shape[0]
    r_max = tau.shape[0] - 1
    for i in range(1, nj):
        _kinematics_order0(m, i, q, vd[0], ws)
    articulated_inertias(m, motion, R, P, X0, IA, U, Dinv, tmp66, Ia, eye3, zero3)
    tmp = sc[0]
    x = sc[1]
    u = sc[2]
    for k in range(r_max + 1):
        # forward: what order k+1 knows before the new accelerations
        for i in range(1, nj):
            trans = _has_translation(m.jtype[i])
            _gravity_elem(m, i, k, B, V, G, R)
            _joint_series(i, k + 1, B, XI, R, P, trans)
            _twist_bias(i, k + 1, B, R, P, Z, trans, cb[i])
            _wrench_bias(m, i, k, B, V, G, PI, acc[i])
        # backward: bias wrenches of the articulated bodies
        for i in range(nj - 1, 0, -1):
            lam = m.parent[i]
            trans = _has_translation(m.jtype[i])
            _force_bias(i, k, B, R, P, FF_, FP, trans, tmp)
            if lam == 0:
                continue
            _placement_force_add(m, i, tmp, acc[lam])
            n = m.nvj[i]
            iv = m.iv[i]
            # x = pA + IA c (+ IA S u for motion joints; + U Dinv (tau - S^T pA - U^T c) otherwise)
            for r in range(6):
                s = acc[i, r]
                for c in range(6):
                    s += IA[i, r, c] * cb[i, c]
                x[r] = s
            if motion[i] == 1:
                for a in range(n):
                    s = vd[k + 1, iv + a]
                    for r in range(6):
                        x[r] += U[i, r, a] * s
            else:
                _torque_joint_solve(m, i, tau[k], acc[i], U, Dinv, cb[i], tmp, u)
                for a in range(n):
                    for r in range(6):
                        x[r] += U[i, r, a] * u[a]
            for c in range(6):
                s = 0.0
                for r in range(6):
                    s += X0[i, r, c] * x[r]
                acc[lam, c] += s
        # forward: accelerations of order k+1, wrenches and torques of order k
        for i in range(1, nj):
            lam = m.parent[i]
            n = m.nvj[i]
            iv = m.iv[i]
            for r in range(6):
                x[r] = cb[i, r]
            if lam > 0:
                _twist_complete(m, i, k + 1, V[lam, k + 1], R, P, Z, x)
            if motion[i] == 1:
                for a in range(n):
                    u[a] = vd[k + 1, iv + a]
            else:
                _torque_joint_solve(m, i, tau[k], acc[i], U, Dinv, x, tmp, u)
                for a in range(n):
                    vd[k + 1, iv + a] = u[a]
            _joint_twist(m, i, vd[k + 1], XI[i, k + 1])
            for r in range(6):
                V[i, k + 1, r] = x[r] + XI[i, k + 1, r]
            F = FF_[i, k]
            for r in range(6):
                s = acc[i, r]
                for c in range(6):
                    s += IA[i, r, c] * V[i, k + 1, c]
                F[r] = s
            if motion[i] == 1:
                for a in range(n):
                    s = 0.0
                    for r in range(6):
                        s += m.S_local[iv + a, r] * F[r]
                    tau[k, iv + a] = s
            _force_complete(i, k, F, R, P, FP, tmp)
            _inertia_apply(m, i, V[i, k + 1], PI[i, k + 1])
        for i in range(nj):
            for r in range(6):
                acc[i, r] = 0.0


@njit(**_JIT)
def _hybrid_buffers(nj):
    """X0, IA, U, Dinv (nj, 6, 6) each, two 6x6 scratch matrices and the identity placement
    (eye3, zero3) of :func:`articulated_inertias`."""
    return (np.zeros((nj, 6, 6)), np.zeros((nj, 6, 6)), np.zeros((nj, 6, 6)),
            np.zeros((nj, 6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.eye(3), np.zeros(3))


@njit(parallel=True, **_JIT)
def rnea_batch(ints, floats, Q, VD, nthreads):
    """:func:`rnea_point` at every sample, in parallel: Q (T, nq), VD (T, r+2, nv) -> (T, r+1, nv).
    One workspace per chunk of samples."""
    T, K1, nv = VD.shape
    out = np.empty((T, K1 - 1, nv))
    nchunk = min(T, nthreads)
    for c in prange(nchunk):
        m = unpack(ints, floats)
        B = binomials(K1 - 1)
        ws = workspace(m.parent.shape[0], K1 - 1)
        for t in range(c * T // nchunk, (c + 1) * T // nchunk):
            rnea_point(m, Q[t], VD[t], B, ws, out[t])
    return out


@njit(**_JIT)
def rnea_serial(ints, floats, Q, VD):
    """:func:`rnea_batch` on one thread (no parallel launch: single calls and small batches)."""
    T, K1, nv = VD.shape
    out = np.empty((T, K1 - 1, nv))
    m = unpack(ints, floats)
    B = binomials(K1 - 1)
    ws = workspace(m.parent.shape[0], K1 - 1)
    for t in range(T):
        rnea_point(m, Q[t], VD[t], B, ws, out[t])
    return out


@njit(parallel=True, **_JIT)
def hybrid_batch(ints, floats, Q, VD, TAU, motion, nthreads):
    """:func:`hybrid_point` at every sample, in parallel; VD (T, r+2, nv) and TAU (T, r+1, nv) are
    completed in place (see hybrid_point for which entries are inputs)."""
    T = Q.shape[0]
    nchunk = min(T, nthreads)
    for c in prange(nchunk):
        m = unpack(ints, floats)
        K = TAU.shape[1]
        B = binomials(K)
        ws = workspace(m.parent.shape[0], K)
        buffers = _hybrid_buffers(m.parent.shape[0])
        for t in range(c * T // nchunk, (c + 1) * T // nchunk):
            hybrid_point(m, Q[t], VD[t], TAU[t], motion, B, ws, buffers)


@njit(**_JIT)
def hybrid_serial(ints, floats, Q, VD, TAU, motion):
    """:func:`hybrid_batch` on one thread."""
    m = unpack(ints, floats)
    K = TAU.shape[1]
    B = binomials(K)
    ws = workspace(m.parent.shape[0], K)
    buffers = _hybrid_buffers(m.parent.shape[0])
    for t in range(Q.shape[0]):
        hybrid_point(m, Q[t], VD[t], TAU[t], motion, B, ws, buffers)


# ----------------------------------------------------------------------------------------------
# Closed form (the paper's Prop. 1 and Lemma 1), in the ground frame.
# ----------------------------------------------------------------------------------------------


@njit(**_JIT)
def closed_form_point(m, q, v, M, h, g, C):
    """M(q), h(q, v) = C(q, v) v, g(q) and an admissible Coriolis matrix C with
    M' - 2 C skew-symmetric (M' = dM/dt along q' = v), so tau = M v' + h + g.

    With ground-frame Jacobians J_i (columns S0_d of body i's ancestor DoFs), inertias I0_i and
    spatial twists V0_i:  M = sum J_i^T I0_i J_i,  g = -sum J_i^T I0_i a_g,  and
    C = sum J_i^T (I0_i J_i' + B(I0_i, V0_i) J_i), where J_i' has the columns V0_j(d) x S0_d and
    B = 1/2 [(V x*) I - I (V x) + (I V) xbar*]: B V = V x* I V, and B + B^T = I0_i' (the
    ground-frame inertia's rate), which makes C + C^T = M' (the factorization of Lemma 1).
    """
    nj = m.parent.shape[0]
    nv = v.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    S0 = np.empty((nv, 6))
    forward_kinematics(m, q, oR, op, S0)
    V0 = np.zeros((nj, 6))
    for i in range(1, nj):
        lam = m.parent[i]
        for r in range(6):
            s = V0[lam, r]
            for d in range(m.iv[i], m.iv[i] + m.nvj[i]):
                s += S0[d, r] * v[d]
            V0[i, r] = s
    for a in range(nv):
        g[a] = 0.0
        for b in range(nv):
            M[a, b] = 0.0
            C[a, b] = 0.0
    I0 = np.empty((6, 6))
    Bm = np.zeros((6, 6))
    tmp66 = np.empty((6, 6))
    tmp6 = np.empty(6)
    col = np.empty(6)
    dofs = np.empty(nv, dtype=np.int64)
    owner = np.empty(nv, dtype=np.int64)
    IS = np.empty((nv, 6))
    Y = np.empty((nv, 6))
    for i in range(1, nj):
        # ancestor DoFs of body i
        n = 0
        j = i
        while j > 0:
            for d in range(m.iv[j], m.iv[j] + m.nvj[j]):
                dofs[n] = d
                owner[n] = j
                n += 1
            j = m.parent[j]
        ground_inertia(oR[i], op[i], m.mass[i], m.com[i], m.Icom[i], I0)
        for r in range(6):
            for c in range(6):
                Bm[r, c] = 0.0
        body_coriolis_add(I0, V0[i], tmp66, tmp6, Bm)
        for e in range(n):
            d = dofs[e]
            matvec6(I0, S0[d], IS[e])
            # Y[e] = I0 (V0_j x S0_d) + B S0_d  (V0_j x S0_d: the column of J_i')
            motion_cross(V0[owner[e]], S0[d], col)
            matvec6(I0, col, Y[e])
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += Bm[r, c] * S0[d, c]
                Y[e, r] += s
        for e in range(n):
            da = dofs[e]
            for f in range(n):
                db = dofs[f]
                M[da, db] += dot6(S0[da], IS[f])
                C[da, db] += dot6(S0[da], Y[f])
            g[da] -= (IS[e, 0] * m.gravity[0] + IS[e, 1] * m.gravity[1] + IS[e, 2] * m.gravity[2]
                      + IS[e, 3] * m.gravity[3] + IS[e, 4] * m.gravity[4] + IS[e, 5] * m.gravity[5])
    for a in range(nv):
        s = 0.0
        for b in range(nv):
            s += C[a, b] * v[b]
        h[a] = s


@njit(parallel=True, **_JIT)
def closed_form_batch(ints, floats, Q, Vel):
    """:func:`closed_form_point` at every sample: M, h, g, C of shapes (T, nv, nv), (T, nv),
    (T, nv), (T, nv, nv)."""
    T, nv = Vel.shape
    M = np.empty((T, nv, nv))
    h = np.empty((T, nv))
    g = np.empty((T, nv))
    C = np.empty((T, nv, nv))
    for t in prange(T):
        m = unpack(ints, floats)
        closed_form_point(m, Q[t], Vel[t], M[t], h[t], g[t], C[t])
    return M, h, g, C
