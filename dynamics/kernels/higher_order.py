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

from ..jit import chunk_range, in_parallel, njit
from .forward import small_spd_inverse
from .kinematics import FF, HEL, PLA, PRI, forward_kinematics, joint_transform
from .packed_model import unpack
from .spatial import body_coriolis_add, dot6, ground_inertia, matvec6, motion_cross

_JIT = dict(cache=True, error_model="numpy")
_INL = dict(cache=True, error_model="numpy", inline="always")


@njit(callee=True, **_JIT)
def binomials(K):
    """Pascal's triangle B[n, k] = C(n, k) for 0 <= k <= n <= K (zero above the diagonal)."""
    B = np.zeros((K + 1, K + 1))
    for n in range(K + 1):
        B[n, 0] = 1.0
        for k in range(1, n + 1):
            B[n, k] = B[n - 1, k - 1] + (B[n - 1, k] if k < n else 0.0)
    return B


@njit(callee=True, **_JIT)
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
    sc = np.zeros((3, 6))  # three 6-vectors of scratch
    return R, P, XI, V, Z, G, PI, FF_, FP, acc, sc


# Hot-path helpers take the model's arrays and index the series arrays with scalars: passing the
# KernelModel namedtuple (or creating row views) inside the inlined per-body, per-order code costs
# reference-count updates on every call, about a third of the run time at r = 5.


@njit(**_INL)
def _has_translation(jtype):
    return jtype == PRI or jtype == HEL or jtype == PLA or jtype == FF


@njit(**_INL)
def _joint_twist(S, d0, n, vd, k, XI, i):
    """XI[i, k] = S_i v_i^(k) (joint twist in the child frame; DoFs d0 .. d0+n-1)."""
    for r in range(6):
        XI[i, k, r] = 0.0
    for d in range(d0, d0 + n):
        s = vd[k, d]
        for r in range(6):
            XI[i, k, r] += S[d, r] * s


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
        a = k - 1 - j
        for r in range(3):
            a0, a1, a2 = R[i, a, r, 0], R[i, a, r, 1], R[i, a, r, 2]
            R[i, k, r, 0] += a1 * w2 - a2 * w1
            R[i, k, r, 1] += a2 * w0 - a0 * w2
            R[i, k, r, 2] += a0 * w1 - a1 * w0
            if trans:
                P[i, k, r] += a0 * l0 + a1 * l1 + a2 * l2


@njit(**_INL)
def _twist_bias(i, k, B, R, P, Z, trans, V):
    """V[i, k] = the part of V_i^(k) known before V_parent^(k) and v_i^(k): sum_{j>=1} C(k, j)
    (X_J^-1)^(j) Z^(k-j) + R0^T z_partial; writes z_partial (the known part of Z[i, k, :3])."""
    zp0 = 0.0
    zp1 = 0.0
    zp2 = 0.0
    if trans:
        for j in range(1, k + 1):
            b = B[k, j]
            p0, p1, p2 = b * P[i, j, 0], b * P[i, j, 1], b * P[i, j, 2]
            a = k - j
            zp0 -= p1 * Z[i, a, 5] - p2 * Z[i, a, 4]
            zp1 -= p2 * Z[i, a, 3] - p0 * Z[i, a, 5]
            zp2 -= p0 * Z[i, a, 4] - p1 * Z[i, a, 3]
    Z[i, k, 0] = zp0
    Z[i, k, 1] = zp1
    Z[i, k, 2] = zp2
    for c in range(3):
        V[i, k, c] = R[i, 0, 0, c] * zp0 + R[i, 0, 1, c] * zp1 + R[i, 0, 2, c] * zp2
        V[i, k, 3 + c] = 0.0
    for j in range(1, k + 1):
        b = B[k, j]
        a = k - j
        z0, z1, z2 = Z[i, a, 0], Z[i, a, 1], Z[i, a, 2]
        z3, z4, z5 = Z[i, a, 3], Z[i, a, 4], Z[i, a, 5]
        for c in range(3):
            r0, r1, r2 = R[i, j, 0, c], R[i, j, 1, c], R[i, j, 2, c]
            V[i, k, c] += b * (r0 * z0 + r1 * z1 + r2 * z2)
            V[i, k, 3 + c] += b * (r0 * z3 + r1 * z4 + r2 * z5)


@njit(**_INL)
def _twist_complete(place_R, place_p, i, lam, k, R, P, Z, V):
    """Adds the parent twist V[lam, k] to Z[i, k] and V[i, k] += X0 V[lam, k] (X0: child from
    parent at the current configuration)."""
    u0, u1, u2 = V[lam, k, 0], V[lam, k, 1], V[lam, k, 2]
    u3, u4, u5 = V[lam, k, 3], V[lam, k, 4], V[lam, k, 5]
    pp0, pp1, pp2 = place_p[i, 0], place_p[i, 1], place_p[i, 2]
    # W = X_P^-1 Vp = (RP^T (v - pP x w), RP^T w)
    v0 = u0 - (pp1 * u5 - pp2 * u4)
    v1 = u1 - (pp2 * u3 - pp0 * u5)
    v2 = u2 - (pp0 * u4 - pp1 * u3)
    wl0 = place_R[i, 0, 0] * v0 + place_R[i, 1, 0] * v1 + place_R[i, 2, 0] * v2
    wl1 = place_R[i, 0, 1] * v0 + place_R[i, 1, 1] * v1 + place_R[i, 2, 1] * v2
    wl2 = place_R[i, 0, 2] * v0 + place_R[i, 1, 2] * v1 + place_R[i, 2, 2] * v2
    wa0 = place_R[i, 0, 0] * u3 + place_R[i, 1, 0] * u4 + place_R[i, 2, 0] * u5
    wa1 = place_R[i, 0, 1] * u3 + place_R[i, 1, 1] * u4 + place_R[i, 2, 1] * u5
    wa2 = place_R[i, 0, 2] * u3 + place_R[i, 1, 2] * u4 + place_R[i, 2, 2] * u5
    p0, p1, p2 = P[i, 0, 0], P[i, 0, 1], P[i, 0, 2]
    z0 = wl0 - (p1 * wa2 - p2 * wa1)
    z1 = wl1 - (p2 * wa0 - p0 * wa2)
    z2 = wl2 - (p0 * wa1 - p1 * wa0)
    Z[i, k, 0] += z0
    Z[i, k, 1] += z1
    Z[i, k, 2] += z2
    Z[i, k, 3] = wa0
    Z[i, k, 4] = wa1
    Z[i, k, 5] = wa2
    for c in range(3):
        r0, r1, r2 = R[i, 0, 0, c], R[i, 0, 1, c], R[i, 0, 2, c]
        V[i, k, c] += r0 * z0 + r1 * z1 + r2 * z2
        V[i, k, 3 + c] += r0 * wa0 + r1 * wa1 + r2 * wa2


@njit(**_INL)
def _momentum(mass, com, Icom, i, k, V, PI):
    """PI[i, k] = I_i V[i, k] (body-frame spatial inertia: f = m (x_l - c x x_a),
    n = Ic x_a + c x f)."""
    c0, c1, c2 = com[i, 0], com[i, 1], com[i, 2]
    x0, x1, x2 = V[i, k, 0], V[i, k, 1], V[i, k, 2]
    x3, x4, x5 = V[i, k, 3], V[i, k, 4], V[i, k, 5]
    M = mass[i]
    f0 = M * (x0 - (c1 * x5 - c2 * x4))
    f1 = M * (x1 - (c2 * x3 - c0 * x5))
    f2 = M * (x2 - (c0 * x4 - c1 * x3))
    PI[i, k, 0] = f0
    PI[i, k, 1] = f1
    PI[i, k, 2] = f2
    PI[i, k, 3] = Icom[i, 0, 0] * x3 + Icom[i, 0, 1] * x4 + Icom[i, 0, 2] * x5 + c1 * f2 - c2 * f1
    PI[i, k, 4] = Icom[i, 1, 0] * x3 + Icom[i, 1, 1] * x4 + Icom[i, 1, 2] * x5 + c2 * f0 - c0 * f2
    PI[i, k, 5] = Icom[i, 2, 0] * x3 + Icom[i, 2, 1] * x4 + Icom[i, 2, 2] * x5 + c0 * f1 - c1 * f0


@njit(**_INL)
def _gravity_elem(parent, gravity, place_R, i, k, B, V, G, R):
    """G_i^(k): k = 0 transports the parent's value, k >= 1 uses G' = -w x G."""
    if k == 0:
        lam = parent[i]
        if lam == 0:
            g0, g1, g2 = -gravity[0], -gravity[1], -gravity[2]
        else:
            g0, g1, g2 = G[lam, 0, 0], G[lam, 0, 1], G[lam, 0, 2]
        h0 = place_R[i, 0, 0] * g0 + place_R[i, 1, 0] * g1 + place_R[i, 2, 0] * g2
        h1 = place_R[i, 0, 1] * g0 + place_R[i, 1, 1] * g1 + place_R[i, 2, 1] * g2
        h2 = place_R[i, 0, 2] * g0 + place_R[i, 1, 2] * g1 + place_R[i, 2, 2] * g2
        for c in range(3):
            G[i, 0, c] = R[i, 0, 0, c] * h0 + R[i, 0, 1, c] * h1 + R[i, 0, 2, c] * h2
    else:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for j in range(k):
            b = B[k - 1, j]
            w3, w4, w5 = V[i, j, 3], V[i, j, 4], V[i, j, 5]
            a = k - 1 - j
            g0, g1, g2 = G[i, a, 0], G[i, a, 1], G[i, a, 2]
            s0 += b * (w4 * g2 - w5 * g1)
            s1 += b * (w5 * g0 - w3 * g2)
            s2 += b * (w3 * g1 - w4 * g0)
        G[i, k, 0] = -s0
        G[i, k, 1] = -s1
        G[i, k, 2] = -s2


@njit(**_INL)
def _wrench_bias_add(mass, com, i, k, B, V, G, PI, acc):
    """acc[i] += I G^(k) + sum_j C(k, j) V^(j) x* PI^(k-j): the body's own wrench at order k
    without its momentum derivative PI^(k+1)."""
    M = mass[i]
    c0, c1, c2 = com[i, 0], com[i, 1], com[i, 2]
    f0, f1, f2 = M * G[i, k, 0], M * G[i, k, 1], M * G[i, k, 2]
    o0 = f0
    o1 = f1
    o2 = f2
    o3 = c1 * f2 - c2 * f1
    o4 = c2 * f0 - c0 * f2
    o5 = c0 * f1 - c1 * f0
    for j in range(k + 1):
        b = B[k, j]
        v0, v1, v2 = V[i, j, 0], V[i, j, 1], V[i, j, 2]
        v3, v4, v5 = V[i, j, 3], V[i, j, 4], V[i, j, 5]
        a = k - j
        p0, p1, p2 = PI[i, a, 0], PI[i, a, 1], PI[i, a, 2]
        p3, p4, p5 = PI[i, a, 3], PI[i, a, 4], PI[i, a, 5]
        # v x* f = [w x f_l, w x f_a + v_l x f_l]
        o0 += b * (v4 * p2 - v5 * p1)
        o1 += b * (v5 * p0 - v3 * p2)
        o2 += b * (v3 * p1 - v4 * p0)
        o3 += b * (v4 * p5 - v5 * p4 + v1 * p2 - v2 * p1)
        o4 += b * (v5 * p3 - v3 * p5 + v2 * p0 - v0 * p2)
        o5 += b * (v3 * p4 - v4 * p3 + v0 * p1 - v1 * p0)
    acc[i, 0] += o0
    acc[i, 1] += o1
    acc[i, 2] += o2
    acc[i, 3] += o3
    acc[i, 4] += o4
    acc[i, 5] += o5


@njit(**_INL)
def _placement_force_add(place_R, place_p, i, f, acc, lam):
    """acc[lam] += X_P f: a wrench in joint i's parent-side frame moved to the parent body frame."""
    a0 = place_R[i, 0, 0] * f[0] + place_R[i, 0, 1] * f[1] + place_R[i, 0, 2] * f[2]
    a1 = place_R[i, 1, 0] * f[0] + place_R[i, 1, 1] * f[1] + place_R[i, 1, 2] * f[2]
    a2 = place_R[i, 2, 0] * f[0] + place_R[i, 2, 1] * f[1] + place_R[i, 2, 2] * f[2]
    pp0, pp1, pp2 = place_p[i, 0], place_p[i, 1], place_p[i, 2]
    acc[lam, 0] += a0
    acc[lam, 1] += a1
    acc[lam, 2] += a2
    acc[lam, 3] += (place_R[i, 0, 0] * f[3] + place_R[i, 0, 1] * f[4] + place_R[i, 0, 2] * f[5]
                    + pp1 * a2 - pp2 * a1)
    acc[lam, 4] += (place_R[i, 1, 0] * f[3] + place_R[i, 1, 1] * f[4] + place_R[i, 1, 2] * f[5]
                    + pp2 * a0 - pp0 * a2)
    acc[lam, 5] += (place_R[i, 2, 0] * f[3] + place_R[i, 2, 1] * f[4] + place_R[i, 2, 2] * f[5]
                    + pp0 * a1 - pp1 * a0)


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
        a = k - j
        F0, F1, F2 = b * FF_[i, a, 0], b * FF_[i, a, 1], b * FF_[i, a, 2]
        F3, F4, F5 = b * FF_[i, a, 3], b * FF_[i, a, 4], b * FF_[i, a, 5]
        f0 += R[i, j, 0, 0] * F0 + R[i, j, 0, 1] * F1 + R[i, j, 0, 2] * F2
        f1 += R[i, j, 1, 0] * F0 + R[i, j, 1, 1] * F1 + R[i, j, 1, 2] * F2
        f2 += R[i, j, 2, 0] * F0 + R[i, j, 2, 1] * F1 + R[i, j, 2, 2] * F2
        n0 += R[i, j, 0, 0] * F3 + R[i, j, 0, 1] * F4 + R[i, j, 0, 2] * F5
        n1 += R[i, j, 1, 0] * F3 + R[i, j, 1, 1] * F4 + R[i, j, 1, 2] * F5
        n2 += R[i, j, 2, 0] * F3 + R[i, j, 2, 1] * F4 + R[i, j, 2, 2] * F5
    if trans:
        for j in range(1, k + 1):
            b = B[k, j]
            a = k - j
            p0, p1, p2 = b * P[i, j, 0], b * P[i, j, 1], b * P[i, j, 2]
            g0, g1, g2 = FP[i, a, 0], FP[i, a, 1], FP[i, a, 2]
            n0 += p1 * g2 - p2 * g1
            n1 += p2 * g0 - p0 * g2
            n2 += p0 * g1 - p1 * g0
        p0, p1, p2 = P[i, 0, 0], P[i, 0, 1], P[i, 0, 2]
        n0 += p1 * f2 - p2 * f1
        n1 += p2 * f0 - p0 * f2
        n2 += p0 * f1 - p1 * f0
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
def _force_complete(i, k, FF_, R, P, FP, out):
    """Completes FP[i, k] with FF_[i, k] (set by the caller) and writes out = X_J FF_[i, k] at
    the current configuration (joint-side frame)."""
    F0, F1, F2 = FF_[i, k, 0], FF_[i, k, 1], FF_[i, k, 2]
    F3, F4, F5 = FF_[i, k, 3], FF_[i, k, 4], FF_[i, k, 5]
    a0 = R[i, 0, 0, 0] * F0 + R[i, 0, 0, 1] * F1 + R[i, 0, 0, 2] * F2
    a1 = R[i, 0, 1, 0] * F0 + R[i, 0, 1, 1] * F1 + R[i, 0, 1, 2] * F2
    a2 = R[i, 0, 2, 0] * F0 + R[i, 0, 2, 1] * F1 + R[i, 0, 2, 2] * F2
    p0, p1, p2 = P[i, 0, 0], P[i, 0, 1], P[i, 0, 2]
    out[0] = a0
    out[1] = a1
    out[2] = a2
    out[3] = (R[i, 0, 0, 0] * F3 + R[i, 0, 0, 1] * F4 + R[i, 0, 0, 2] * F5) + p1 * a2 - p2 * a1
    out[4] = (R[i, 0, 1, 0] * F3 + R[i, 0, 1, 1] * F4 + R[i, 0, 1, 2] * F5) + p2 * a0 - p0 * a2
    out[5] = (R[i, 0, 2, 0] * F3 + R[i, 0, 2, 1] * F4 + R[i, 0, 2, 2] * F5) + p0 * a1 - p1 * a0
    FP[i, k, 0] += a0
    FP[i, k, 1] += a1
    FP[i, k, 2] += a2


@njit(callee=True, **_JIT)
def _kinematics_order0(m, q, vd, R, P, XI, V, Z, PI):
    """Order-0 joint transforms, joint twists, twists and momenta of every body."""
    parent, iv, nvj, S = m.parent, m.iv, m.nvj, m.S_local
    place_R, place_p, mass, com, Icom = m.place_R, m.place_p, m.mass, m.com, m.Icom
    for i in range(1, parent.shape[0]):
        joint_transform(m.jtype[i], m.axis[i], m.pitch[i], q, m.iq[i], R[i, 0], P[i, 0])
        _joint_twist(S, iv[i], nvj[i], vd, 0, XI, i)
        lam = parent[i]
        for r in range(6):
            V[i, 0, r] = XI[i, 0, r]
            Z[i, 0, r] = 0.0
        if lam > 0:
            _twist_complete(place_R, place_p, i, lam, 0, R, P, Z, V)
        _momentum(mass, com, Icom, i, 0, V, PI)


@njit(**_JIT)
def rnea_point(m, q, vd, B, ws, tau):
    """H-GRNE: tau[k] = d^k/dt^k rnea(q, v, v') for k = 0..r, from vd[k] = v^(k), k = 0..r+1.
    ``tau`` (r+1, nv); ``ws`` = workspace(nj, r+1); ``B`` = binomials(r+1)."""
    R, P, XI, V, Z, G, PI, FF_, FP, acc, sc = ws
    parent, jtype, iv, nvj, S = m.parent, m.jtype, m.iv, m.nvj, m.S_local
    place_R, place_p, mass, com, Icom = m.place_R, m.place_p, m.mass, m.com, m.Icom
    gravity = m.gravity
    nj = parent.shape[0]
    K = vd.shape[0] - 1
    tmp = sc[0]
    _kinematics_order0(m, q, vd, R, P, XI, V, Z, PI)
    for i in range(1, nj):
        _gravity_elem(parent, gravity, place_R, i, 0, B, V, G, R)
    for k in range(1, K + 1):
        for i in range(1, nj):
            trans = _has_translation(jtype[i])
            _joint_series(i, k, B, XI, R, P, trans)
            _joint_twist(S, iv[i], nvj[i], vd, k, XI, i)
            _twist_bias(i, k, B, R, P, Z, trans, V)
            for r in range(6):
                V[i, k, r] += XI[i, k, r]
            lam = parent[i]
            if lam > 0:
                _twist_complete(place_R, place_p, i, lam, k, R, P, Z, V)
            else:
                for r in range(3, 6):
                    Z[i, k, r] = 0.0
            _momentum(mass, com, Icom, i, k, V, PI)
        if k < K:
            for i in range(1, nj):
                _gravity_elem(parent, gravity, place_R, i, k, B, V, G, R)
    for k in range(K):
        for i in range(nj):
            for r in range(6):
                acc[i, r] = 0.0
        for i in range(1, nj):
            _wrench_bias_add(mass, com, i, k, B, V, G, PI, acc)
        for i in range(nj - 1, 0, -1):
            for r in range(6):
                FF_[i, k, r] = acc[i, r] + PI[i, k + 1, r]
            for d in range(iv[i], iv[i] + nvj[i]):
                s = 0.0
                for r in range(6):
                    s += S[d, r] * FF_[i, k, r]
                tau[k, d] = s + m.armature[d] * vd[k + 1, d]
            lam = parent[i]
            if lam > 0:
                trans = _has_translation(jtype[i])
                _force_bias(i, k, B, R, P, FF_, FP, trans, tmp)
                _placement_force_add(place_R, place_p, i, tmp, acc, lam)
                _force_complete(i, k, FF_, R, P, FP, tmp)
                _placement_force_add(place_R, place_p, i, tmp, acc, lam)


@njit(**_INL)
def _motion_matrix(place_R, place_p, i, R, P, X0):
    """X0[i] (6x6): child-from-parent motion transform of joint i at the current configuration,
    [[Rc^T, -Rc^T [pc]x], [0, Rc^T]] for the child placement (Rc, pc) = X_P X_J in the parent."""
    p0, p1, p2 = P[i, 0, 0], P[i, 0, 1], P[i, 0, 2]
    pc0 = place_p[i, 0] + place_R[i, 0, 0] * p0 + place_R[i, 0, 1] * p1 + place_R[i, 0, 2] * p2
    pc1 = place_p[i, 1] + place_R[i, 1, 0] * p0 + place_R[i, 1, 1] * p1 + place_R[i, 1, 2] * p2
    pc2 = place_p[i, 2] + place_R[i, 2, 0] * p0 + place_R[i, 2, 1] * p1 + place_R[i, 2, 2] * p2
    for r in range(3):
        # row r of Rc^T is column r of Rc = RP R0[:, r]
        b0, b1, b2 = R[i, 0, 0, r], R[i, 0, 1, r], R[i, 0, 2, r]
        a0 = place_R[i, 0, 0] * b0 + place_R[i, 0, 1] * b1 + place_R[i, 0, 2] * b2
        a1 = place_R[i, 1, 0] * b0 + place_R[i, 1, 1] * b1 + place_R[i, 1, 2] * b2
        a2 = place_R[i, 2, 0] * b0 + place_R[i, 2, 1] * b1 + place_R[i, 2, 2] * b2
        X0[i, r, 0] = a0
        X0[i, r, 1] = a1
        X0[i, r, 2] = a2
        X0[i, 3 + r, 3] = a0
        X0[i, 3 + r, 4] = a1
        X0[i, 3 + r, 5] = a2
        X0[i, 3 + r, 0] = 0.0
        X0[i, 3 + r, 1] = 0.0
        X0[i, 3 + r, 2] = 0.0
        # (-Rc^T [pc]x)[r, :] = -(a x pc)^T = (pc x a)^T
        X0[i, r, 3] = pc1 * a2 - pc2 * a1
        X0[i, r, 4] = pc2 * a0 - pc0 * a2
        X0[i, r, 5] = pc0 * a1 - pc1 * a0


@njit(callee=True, **_JIT)
def articulated_inertias(m, motion, R, P, X0, IA, U, Dinv, tmp, Ia, eye3, zero3):
    """Order-independent part of H-GABI/H-GHYB (the paper's Lemma 2): X0[i] (6x6 child from
    parent), articulated inertias IA[i], U[i] = IA S (first nvj columns) and Dinv[i] = (S^T IA S)^-1
    for prescribed-torque joints (``motion[i] == 0``); motion-prescribed joints pass IA unprojected.
    R[:, 0], P[:, 0] are the joint transforms of the order-0 kinematics; ``tmp``, ``Ia`` (6x6)
    are scratch; ``eye3``, ``zero3`` the identity placement (body-frame inertias)."""
    parent, iv, nvj, S = m.parent, m.iv, m.nvj, m.S_local
    place_R, place_p = m.place_R, m.place_p
    nj = parent.shape[0]
    for i in range(1, nj):
        _motion_matrix(place_R, place_p, i, R, P, X0)
        ground_inertia(eye3, zero3, m.mass[i], m.com[i], m.Icom[i], IA[i])
    for i in range(nj - 1, 0, -1):
        n = nvj[i]
        d0 = iv[i]
        for a in range(n):
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += IA[i, r, c] * S[d0 + a, c]
                U[i, r, a] = s
        for r in range(6):
            for c in range(6):
                Ia[r, c] = IA[i, r, c]
        if motion[i] == 0 and n == 1:
            d = m.armature[d0]
            for r in range(6):
                d += S[d0, r] * U[i, r, 0]
            Dinv[i, 0, 0] = 1.0 / d
            for r in range(6):
                for c in range(6):
                    Ia[r, c] -= U[i, r, 0] * U[i, c, 0] / d
        elif motion[i] == 0:
            for a in range(n):
                for b in range(n):
                    s = 0.0
                    for r in range(6):
                        s += S[d0 + a, r] * U[i, r, b]
                    tmp[a, b] = s
                tmp[a, a] += m.armature[d0 + a]
            small_spd_inverse(tmp, n, Dinv[i])
            if parent[i] > 0:  # the root's projected inertia is not needed
                for r in range(6):
                    for c in range(6):
                        s = 0.0
                        for a in range(n):
                            for b in range(n):
                                s += U[i, r, a] * Dinv[i, a, b] * U[i, c, b]
                        Ia[r, c] -= s
        lam = parent[i]
        if lam > 0:
            # IA[lam] += X^T Ia X; X's lower-left block is zero and the result symmetric
            for r in range(6):
                for c in range(6):
                    s = 0.0
                    for k in range(3 if c < 3 else 6):
                        s += Ia[r, k] * X0[i, k, c]
                    tmp[r, c] = s
            for r in range(6):
                for c in range(r, 6):
                    s = 0.0
                    for k in range(3 if r < 3 else 6):
                        s += X0[i, k, r] * tmp[k, c]
                    IA[lam, r, c] += s
                    if c != r:
                        IA[lam, c, r] += s


@njit(**_INL)
def _torque_joint_solve(S, d0, n, i, tau, k, acc, U, Dinv, V, tmp, u):
    """u = D^-1 (tau_i^(k) - S^T pA - U^T x) for a prescribed-torque joint i (ABA's joint
    equation; pA = acc[i], x = V[i, k+1] holds the joint's twist before S u: its bias, plus the
    parent's acceleration once known)."""
    for a in range(n):
        s = tau[k, d0 + a]
        for r in range(6):
            s -= S[d0 + a, r] * acc[i, r] + U[i, r, a] * V[i, k + 1, r]
        tmp[a] = s
    for a in range(n):
        s = 0.0
        for b in range(n):
            s += Dinv[i, a, b] * tmp[b]
        u[a] = s


@njit(callee=True, **_JIT)
def hybrid_point(m, q, vd, tau, motion, B, ws, buffers):
    """H-GABI / H-GHYB at one sample, orders k = 0..r.

    ``vd`` (r+2, nv): vd[0] = v; vd[k+1] for DoFs of motion-prescribed joints (``motion[i] == 1``)
    is input, for the others output.  ``tau`` (r+1, nv): input for prescribed-torque joints, output
    for motion-prescribed ones.  With no motion-prescribed joint this is H-GABI (forward dynamics).
    """
    R, P, XI, V, Z, G, PI, FF_, FP, acc, sc = ws
    X0, IA, U, Dinv, tmp66, Ia, eye3, zero3 = buffers
    parent, jtype, iv, nvj, S = m.parent, m.jtype, m.iv, m.nvj, m.S_local
    place_R, place_p, mass, com, Icom = m.place_R, m.place_p, m.mass, m.com, m.Icom
    gravity = m.gravity
    nj = parent.shape[0]
    r_max = tau.shape[0] - 1
    _kinematics_order0(m, q, vd, R, P, XI, V, Z, PI)
    articulated_inertias(m, motion, R, P, X0, IA, U, Dinv, tmp66, Ia, eye3, zero3)
    tmp = sc[0]
    x = sc[1]
    u = sc[2]
    for k in range(r_max + 1):
        # forward: what order k+1 knows before the new accelerations (V[i, k+1] holds the
        # twist bias until the parent's acceleration and the joint's are added)
        for i in range(nj):
            for r in range(6):
                acc[i, r] = 0.0
        for i in range(1, nj):
            _gravity_elem(parent, gravity, place_R, i, k, B, V, G, R)
        for i in range(1, nj):
            trans = _has_translation(jtype[i])
            _joint_series(i, k + 1, B, XI, R, P, trans)
            _twist_bias(i, k + 1, B, R, P, Z, trans, V)
        for i in range(1, nj):
            _wrench_bias_add(mass, com, i, k, B, V, G, PI, acc)
        for i in range(1, nj):
            if parent[i] > 0:
                _force_bias(i, k, B, R, P, FF_, FP, _has_translation(jtype[i]), tmp)
                _placement_force_add(place_R, place_p, i, tmp, acc, parent[i])
        # backward: bias wrenches of the articulated bodies
        for i in range(nj - 1, 0, -1):
            lam = parent[i]
            if lam == 0:
                continue
            n = nvj[i]
            d0 = iv[i]
            # x = pA + IA c (+ IA S u for motion joints; + U Dinv (tau - S^T pA - U^T c) otherwise)
            for r in range(6):
                s = acc[i, r]
                for c in range(6):
                    s += IA[i, r, c] * V[i, k + 1, c]
                x[r] = s
            if motion[i] == 1:
                for a in range(n):
                    s = vd[k + 1, d0 + a]
                    for r in range(6):
                        x[r] += U[i, r, a] * s
            else:
                _torque_joint_solve(S, d0, n, i, tau, k, acc, U, Dinv, V, tmp, u)
                for a in range(n):
                    for r in range(6):
                        x[r] += U[i, r, a] * u[a]
            for c in range(6):
                s = 0.0
                for r in range(6):
                    s += X0[i, r, c] * x[r]
                acc[lam, c] += s
        # forward: accelerations of order k+1
        for i in range(1, nj):
            lam = parent[i]
            n = nvj[i]
            d0 = iv[i]
            if lam > 0:
                _twist_complete(place_R, place_p, i, lam, k + 1, R, P, Z, V)
            if motion[i] == 0:
                _torque_joint_solve(S, d0, n, i, tau, k, acc, U, Dinv, V, tmp, u)
                for a in range(n):
                    vd[k + 1, d0 + a] = u[a]
            _joint_twist(S, d0, n, vd, k + 1, XI, i)
            for r in range(6):
                V[i, k + 1, r] += XI[i, k + 1, r]
        # wrenches and torques of order k, momenta of order k+1
        for i in range(1, nj):
            for r in range(6):
                s = acc[i, r]
                for c in range(6):
                    s += IA[i, r, c] * V[i, k + 1, c]
                FF_[i, k, r] = s
            if motion[i] == 1:
                for d in range(iv[i], iv[i] + nvj[i]):
                    s = m.armature[d] * vd[k + 1, d]
                    for r in range(6):
                        s += S[d, r] * FF_[i, k, r]
                    tau[k, d] = s
            if parent[i] > 0:
                _force_complete(i, k, FF_, R, P, FP, tmp)
            _momentum(mass, com, Icom, i, k + 1, V, PI)


@njit(callee=True, **_JIT)
def _hybrid_buffers(nj):
    """X0, IA, U, Dinv (nj, 6, 6) each, two 6x6 scratch matrices and the identity placement
    (eye3, zero3) of :func:`articulated_inertias`."""
    return (np.zeros((nj, 6, 6)), np.zeros((nj, 6, 6)), np.zeros((nj, 6, 6)),
            np.zeros((nj, 6, 6)), np.zeros((6, 6)), np.zeros((6, 6)), np.eye(3), np.zeros(3))


@njit(**_JIT)
def rnea_chunk(ints, floats, Q, VD, out, chunk, nchunks):
    """:func:`rnea_point` at the samples of chunk ``chunk`` of ``nchunks``: Q (T, nq), VD (T, r+2,
    nv) -> out (T, r+1, nv). One workspace per chunk."""
    m = unpack(ints, floats)
    B = binomials(VD.shape[1] - 1)
    ws = workspace(m.parent.shape[0], VD.shape[1] - 1)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        rnea_point(m, Q[t], VD[t], B, ws, out[t])


@njit(cache=True, error_model="numpy")
def rnea_batch(ints, floats, Q, VD, out, chunks):
    """The door of :func:`rnea_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, VD, out), chunks)


@njit(**_JIT)
def hybrid_chunk(ints, floats, Q, VD, TAU, motion, chunk, nchunks):
    """:func:`hybrid_point` at the samples of chunk ``chunk`` of ``nchunks``; VD (T, r+2, nv) and
    TAU (T, r+1, nv) are completed in place (see hybrid_point for which entries are inputs)."""
    m = unpack(ints, floats)
    K = TAU.shape[1]
    B = binomials(K)
    ws = workspace(m.parent.shape[0], K)
    buffers = _hybrid_buffers(m.parent.shape[0])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        hybrid_point(m, Q[t], VD[t], TAU[t], motion, B, ws, buffers)


@njit(cache=True, error_model="numpy")
def hybrid_batch(ints, floats, Q, VD, TAU, motion, chunks):
    """The door of :func:`hybrid_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, VD, TAU, motion), chunks)


# ----------------------------------------------------------------------------------------------
# Closed form (the paper's Prop. 1 and Lemma 1), in the ground frame.
# ----------------------------------------------------------------------------------------------


@njit(callee=True, **_JIT)
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
        M[a, a] += m.armature[a]
        s = 0.0
        for b in range(nv):
            s += C[a, b] * v[b]
        h[a] = s


@njit(**_JIT)
def closed_form_chunk(ints, floats, Q, Vel, M, h, g, C, chunk, nchunks):
    """:func:`closed_form_point` at the samples of chunk ``chunk`` of ``nchunks``: M, h, g, C of
    shapes (T, nv, nv), (T, nv), (T, nv), (T, nv, nv)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        closed_form_point(m, Q[t], Vel[t], M[t], h[t], g[t], C[t])


@njit(cache=True, error_model="numpy")
def closed_form_batch(ints, floats, Q, Vel, M, h, g, C, chunks):
    """The door of :func:`closed_form_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, Vel, M, h, g, C), chunks)
