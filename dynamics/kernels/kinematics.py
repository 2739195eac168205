"""Joint models, forward kinematics in the ground frame, and the configuration-space Lie group
operations (integrate / difference), compiled with numba.

Joint type codes (``KernelModel.jtype``) and their configuration layout, exactly as in Pinocchio:

==========  ====  ==  ==  =============================================================
code        name  nq  nv  q                 motion subspace S (joint frame, [lin, ang])
==========  ====  ==  ==  =============================================================
0           REV   1   1   angle             [0, u]
1           RUB   2   1   cos, sin          [0, u]
2           PRI   1   1   displacement      [u, 0]
3           SPH   4   3   quaternion xyzw   [0; I3]
4           FF    7   6   xyz, quat xyzw    I6      (local velocity [v_lin, w])
5           PLA   4   3   x, y, cos, sin    [e_x, e_y, 0; 0, 0, e_z]
6           HEL   1   1   angle             [h u, u]  (rotation by q about u, translation h q u;
                                            h is the pitch, ``KernelModel.pitch``)
==========  ====  ==  ==  =============================================================

For every type the joint transform satisfies ``X_J(q (+) d) = X_J(q) exp(S d)``, so the Lie
derivative of the configuration along DoF k of joint i is the ground-frame column ``S0[k]``: this is
what makes the derivative kernels follow the right-perturbation convention of the papers.
"""

import math

import numpy as np

from ..jit import chunk_range, in_parallel, njit
from .packed_model import unpack

REV, RUB, PRI, SPH, FF, PLA, HEL = 0, 1, 2, 3, 4, 5, 6

_JIT = dict(cache=True, error_model="numpy")


@njit(cache=True, error_model="numpy", inline="always")
def quat_to_rot(x, y, z, w, R):
    n = math.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@njit(cache=True, error_model="numpy", inline="always")
def axis_angle_to_rot(u, c, s, R):
    """Rodrigues: R = c I + s [u]x + (1 - c) u u^T for a unit axis u."""
    t = 1.0 - c
    R[0, 0] = c + t * u[0] * u[0]
    R[0, 1] = t * u[0] * u[1] - s * u[2]
    R[0, 2] = t * u[0] * u[2] + s * u[1]
    R[1, 0] = t * u[1] * u[0] + s * u[2]
    R[1, 1] = c + t * u[1] * u[1]
    R[1, 2] = t * u[1] * u[2] - s * u[0]
    R[2, 0] = t * u[2] * u[0] - s * u[1]
    R[2, 1] = t * u[2] * u[1] + s * u[0]
    R[2, 2] = c + t * u[2] * u[2]


@njit(cache=True, error_model="numpy", inline="always")
def joint_transform(jtype, u, h, q, iq, R, p):
    """Rotation R and translation p of the joint transform X_J(q) (child frame in joint frame);
    ``u`` is the axis and ``h`` the pitch (helical joints only)."""
    if jtype == REV:
        axis_angle_to_rot(u, math.cos(q[iq]), math.sin(q[iq]), R)
        p[0] = 0.0
        p[1] = 0.0
        p[2] = 0.0
    elif jtype == RUB:
        n = math.hypot(q[iq], q[iq + 1])
        axis_angle_to_rot(u, q[iq] / n, q[iq + 1] / n, R)
        p[0] = 0.0
        p[1] = 0.0
        p[2] = 0.0
    elif jtype == PRI:
        for r in range(3):
            for c in range(3):
                R[r, c] = 0.0
            R[r, r] = 1.0
            p[r] = q[iq] * u[r]
    elif jtype == HEL:
        axis_angle_to_rot(u, math.cos(q[iq]), math.sin(q[iq]), R)
        for r in range(3):
            p[r] = h * q[iq] * u[r]
    elif jtype == SPH:
        quat_to_rot(q[iq], q[iq + 1], q[iq + 2], q[iq + 3], R)
        p[0] = 0.0
        p[1] = 0.0
        p[2] = 0.0
    elif jtype == FF:
        quat_to_rot(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], R)
        p[0] = q[iq]
        p[1] = q[iq + 1]
        p[2] = q[iq + 2]
    else:  # PLA
        n = math.hypot(q[iq + 2], q[iq + 3])
        c, s = q[iq + 2] / n, q[iq + 3] / n
        R[0, 0] = c
        R[0, 1] = -s
        R[0, 2] = 0.0
        R[1, 0] = s
        R[1, 1] = c
        R[1, 2] = 0.0
        R[2, 0] = 0.0
        R[2, 1] = 0.0
        R[2, 2] = 1.0
        p[0] = q[iq]
        p[1] = q[iq + 1]
        p[2] = 0.0


@njit(cache=True, error_model="numpy", inline="always")
def compose_placements(R1, p1, R2, p2, R, p):
    """(R, p) = (R1, p1) * (R2, p2), the product of two placements (R must not alias R1 or R2)."""
    for r in range(3):
        s = p1[r]
        for c in range(3):
            s += R1[r, c] * p2[c]
            t = 0.0
            for k in range(3):
                t += R1[r, k] * R2[k, c]
            R[r, c] = t
        p[r] = s


@njit(cache=True, error_model="numpy", inline="always")
def forward_kinematics(m, q, oR, op, S0):
    """World placements (oR[i], op[i]) of every joint frame and the ground-frame motion subspace
    columns S0[k] (one row per DoF, [lin, ang]).  Joint 0 is the universe."""
    work = np.empty((8, 3))  # one allocation (this is inlined in every per-knot loop)
    RJ, pJ, Rl, pl = work[0:3], work[3], work[4:7], work[7]
    for r in range(3):
        for c in range(3):
            oR[0, r, c] = 1.0 if r == c else 0.0
        op[0, r] = 0.0
    for i in range(1, m.parent.shape[0]):
        lam = m.parent[i]
        joint_transform(m.jtype[i], m.axis[i], m.pitch[i], q, m.iq[i], RJ, pJ)
        PR = m.place_R[i]
        Pp = m.place_p[i]
        compose_placements(PR, Pp, RJ, pJ, Rl, pl)  # liMi = placement * X_J
        compose_placements(oR[lam], op[lam], Rl, pl, oR[i], op[i])  # oMi = oM_lambda * liMi
        ground_motion_subspace(m, i, oR[i], op[i], S0)


@njit(callee=True, cache=True, error_model="numpy")
def ground_motion_subspace(m, i, R, p, S0):
    """S0[k] for the DoFs k of joint i: its motion subspace columns mapped to the ground frame by
    the joint frame's placement (R, p): ang0 = R s_a, lin0 = R s_l + p x ang0."""
    for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
        s0, s1, s2, s3, s4, s5 = (m.S_local[k, 0], m.S_local[k, 1], m.S_local[k, 2],
                                  m.S_local[k, 3], m.S_local[k, 4], m.S_local[k, 5])
        ax = R[0, 0] * s3 + R[0, 1] * s4 + R[0, 2] * s5
        ay = R[1, 0] * s3 + R[1, 1] * s4 + R[1, 2] * s5
        az = R[2, 0] * s3 + R[2, 1] * s4 + R[2, 2] * s5
        S0[k, 0] = R[0, 0] * s0 + R[0, 1] * s1 + R[0, 2] * s2 + p[1] * az - p[2] * ay
        S0[k, 1] = R[1, 0] * s0 + R[1, 1] * s1 + R[1, 2] * s2 + p[2] * ax - p[0] * az
        S0[k, 2] = R[2, 0] * s0 + R[2, 1] * s1 + R[2, 2] * s2 + p[0] * ay - p[1] * ax
        S0[k, 3] = ax
        S0[k, 4] = ay
        S0[k, 5] = az


# ----------------------------------------------------------------------------------------------
# Lie group operations on the configuration manifold (same results as pinocchio.integrate /
# pinocchio.difference, joint by joint).
# ----------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy", inline="always")
def _quat_mul(a, b, out):
    """Hamilton product out = a * b, quaternions stored xyzw."""
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    out[0] = aw * bx + ax * bw + ay * bz - az * by
    out[1] = aw * by - ax * bz + ay * bw + az * bx
    out[2] = aw * bz + ax * by - ay * bx + az * bw
    out[3] = aw * bw - ax * bx - ay * by - az * bz


@njit(cache=True, error_model="numpy", inline="always")
def _quat_exp(w, out):
    th = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if th < 1e-8:
        k = 0.5 - th * th / 48.0
    else:
        k = math.sin(0.5 * th) / th
    out[0] = k * w[0]
    out[1] = k * w[1]
    out[2] = k * w[2]
    out[3] = math.cos(0.5 * th)


@njit(cache=True, error_model="numpy", inline="always")
def _quat_log(qr, out):
    """Rotation vector of the unit quaternion qr (shortest rotation)."""
    x, y, z, w = qr[0], qr[1], qr[2], qr[3]
    if w < 0.0:
        x, y, z, w = -x, -y, -z, -w
    n = math.sqrt(x * x + y * y + z * z)
    th = 2.0 * math.atan2(n, w)
    if n < 1e-8:
        k = 2.0 / w * (1.0 - n * n / (3.0 * w * w))
    else:
        k = th / n
    out[0] = k * x
    out[1] = k * y
    out[2] = k * z


@njit(cache=True, error_model="numpy", inline="always")
def _so3_V(w, x, out):
    """out = V(w) x with V = I + (1 - cos t)/t^2 [w]x + (t - sin t)/t^3 [w]x^2 (SE(3) exp)."""
    t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    t = math.sqrt(t2)
    if t < 1e-4:
        a = 0.5 - t2 / 24.0
        b = 1.0 / 6.0 - t2 / 120.0
    else:
        a = (1.0 - math.cos(t)) / t2
        b = (t - math.sin(t)) / (t2 * t)
    wx = np.empty(3)
    wwx = np.empty(3)
    wx[0] = w[1] * x[2] - w[2] * x[1]
    wx[1] = w[2] * x[0] - w[0] * x[2]
    wx[2] = w[0] * x[1] - w[1] * x[0]
    wwx[0] = w[1] * wx[2] - w[2] * wx[1]
    wwx[1] = w[2] * wx[0] - w[0] * wx[2]
    wwx[2] = w[0] * wx[1] - w[1] * wx[0]
    for r in range(3):
        out[r] = x[r] + a * wx[r] + b * wwx[r]


@njit(cache=True, error_model="numpy", inline="always")
def _so3_Vinv(w, x, out):
    """out = V(w)^{-1} x = x - 1/2 [w]x x + (1/t^2)(1 - t sin t / (2 (1 - cos t))) [w]x^2 x."""
    t2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2]
    t = math.sqrt(t2)
    if t < 1e-4:
        b = 1.0 / 12.0 + t2 / 720.0
    else:
        b = (1.0 - t * math.sin(t) / (2.0 * (1.0 - math.cos(t)))) / t2
    wx = np.empty(3)
    wwx = np.empty(3)
    wx[0] = w[1] * x[2] - w[2] * x[1]
    wx[1] = w[2] * x[0] - w[0] * x[2]
    wx[2] = w[0] * x[1] - w[1] * x[0]
    wwx[0] = w[1] * wx[2] - w[2] * wx[1]
    wwx[1] = w[2] * wx[0] - w[0] * wx[2]
    wwx[2] = w[0] * wx[1] - w[1] * wx[0]
    for r in range(3):
        out[r] = x[r] - 0.5 * wx[r] + b * wwx[r]


@njit(cache=True, error_model="numpy", inline="always")
def _normalize_quat_like(q0, out):
    """Normalize ``out`` (xyzw) and give it a non-negative dot product with ``q0`` (Pinocchio)."""
    d = q0[0] * out[0] + q0[1] * out[1] + q0[2] * out[2] + q0[3] * out[3]
    n = math.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2] + out[3] * out[3])
    if d < 0.0:
        n = -n
    for k in range(4):
        out[k] /= n


@njit(cache=True, error_model="numpy", inline="always")
def integrate_point(m, q, v, out):
    """out = q (+) v, joint by joint (q: nq, v: nv, out: nq).  Work arrays are allocated in the
    branches that need them: a robot without Lie-group joints (UR3) allocates none.  Inlined into
    the per-knot loops (the rollout, the batches): a call passes the model's 16 arrays, which on
    UR3 cost more than the arithmetic (rollout per knot, integrate 400 -> 160 cycles and
    difference 400 -> 120)."""
    for i in range(1, m.parent.shape[0]):
        t, iq, iv = m.jtype[i], m.iq[i], m.iv[i]
        if t == REV or t == PRI or t == HEL:
            out[iq] = q[iq] + v[iv]
        elif t == RUB:
            c, s = q[iq], q[iq + 1]
            cv, sv = math.cos(v[iv]), math.sin(v[iv])
            c1, s1 = c * cv - s * sv, s * cv + c * sv
            n = math.hypot(c1, s1)
            out[iq] = c1 / n
            out[iq + 1] = s1 / n
        elif t == SPH:
            e = np.empty(4)
            _quat_exp(v[iv:iv + 3], e)
            _quat_mul(q[iq:iq + 4], e, out[iq:iq + 4])
            _normalize_quat_like(q[iq:iq + 4], out[iq:iq + 4])
        elif t == FF:
            work = np.empty(16)
            e, tmp, R = work[:4], work[4:7], work[7:].reshape((3, 3))
            quat_to_rot(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6], R)
            _so3_V(v[iv + 3:iv + 6], v[iv:iv + 3], tmp)
            for r in range(3):
                out[iq + r] = q[iq + r] + R[r, 0] * tmp[0] + R[r, 1] * tmp[1] + R[r, 2] * tmp[2]
            _quat_exp(v[iv + 3:iv + 6], e)
            _quat_mul(q[iq + 3:iq + 7], e, out[iq + 3:iq + 7])
            _normalize_quat_like(q[iq + 3:iq + 7], out[iq + 3:iq + 7])
        else:  # PLA: SE(2)
            n = math.hypot(q[iq + 2], q[iq + 3])
            c, s = q[iq + 2] / n, q[iq + 3] / n
            vx, vy, w = v[iv], v[iv + 1], v[iv + 2]
            if abs(w) < 1e-6:
                sa, ca = 1.0 - w * w / 6.0, 0.5 * w - w * w * w / 24.0
            else:
                sa, ca = math.sin(w) / w, (1.0 - math.cos(w)) / w
            lx, ly = sa * vx - ca * vy, ca * vx + sa * vy
            out[iq] = q[iq] + c * lx - s * ly
            out[iq + 1] = q[iq + 1] + s * lx + c * ly
            cw, sw = math.cos(w), math.sin(w)
            out[iq + 2] = c * cw - s * sw
            out[iq + 3] = s * cw + c * sw


@njit(cache=True, error_model="numpy", inline="always")
def difference_point(m, q0, q1, out):
    """out = q1 (-) q0 = log(q0^{-1} q1), joint by joint (out: nv).  Work arrays are allocated
    in the branches that need them, and it is inlined (both as in :func:`integrate_point`)."""
    for i in range(1, m.parent.shape[0]):
        t, iq, iv = m.jtype[i], m.iq[i], m.iv[i]
        if t == REV or t == PRI or t == HEL:
            out[iv] = q1[iq] - q0[iq]
        elif t == RUB:
            c0, s0, c1, s1 = q0[iq], q0[iq + 1], q1[iq], q1[iq + 1]
            out[iv] = math.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
        elif t == SPH or t == FF:
            work = np.empty(23)
            qi, qr, w, dp, R = (work[:4], work[4:8], work[8:11], work[11:14],
                                work[14:].reshape((3, 3)))
            o = iq if t == SPH else iq + 3
            n = math.sqrt(q0[o] ** 2 + q0[o + 1] ** 2 + q0[o + 2] ** 2 + q0[o + 3] ** 2)
            qi[0], qi[1], qi[2], qi[3] = -q0[o] / n, -q0[o + 1] / n, -q0[o + 2] / n, q0[o + 3] / n
            _quat_mul(qi, q1[o:o + 4], qr)
            n1 = math.sqrt(qr[0] ** 2 + qr[1] ** 2 + qr[2] ** 2 + qr[3] ** 2)
            for k in range(4):
                qr[k] /= n1
            _quat_log(qr, w)
            if t == SPH:
                out[iv] = w[0]
                out[iv + 1] = w[1]
                out[iv + 2] = w[2]
            else:
                quat_to_rot(q0[iq + 3], q0[iq + 4], q0[iq + 5], q0[iq + 6], R)
                for r in range(3):
                    dp[r] = 0.0
                for c in range(3):
                    d = q1[iq + c] - q0[iq + c]
                    for r in range(3):
                        dp[r] += R[c, r] * d
                _so3_Vinv(w, dp, out[iv:iv + 3])
                out[iv + 3] = w[0]
                out[iv + 4] = w[1]
                out[iv + 5] = w[2]
        else:  # PLA
            n0 = math.hypot(q0[iq + 2], q0[iq + 3])
            n1 = math.hypot(q1[iq + 2], q1[iq + 3])
            c0, s0 = q0[iq + 2] / n0, q0[iq + 3] / n0
            c1, s1 = q1[iq + 2] / n1, q1[iq + 3] / n1
            th = math.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
            dx, dy = q1[iq] - q0[iq], q1[iq + 1] - q0[iq + 1]
            lx, ly = c0 * dx + s0 * dy, -s0 * dx + c0 * dy
            if abs(th) < 1e-6:
                sa, ca = 1.0 - th * th / 6.0, 0.5 * th - th * th * th / 24.0
            else:
                sa, ca = math.sin(th) / th, (1.0 - math.cos(th)) / th
            det = sa * sa + ca * ca
            out[iv] = (sa * lx + ca * ly) / det
            out[iv + 1] = (-ca * lx + sa * ly) / det
            out[iv + 2] = th


@njit(cache=True, error_model="numpy")
def integrate_chunk(ints, floats, Q, V, out, chunk, nchunks):
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        integrate_point(m, Q[t], V[t], out[t])


@njit(cache=True, error_model="numpy")
def integrate_batch(ints, floats, Q, V, out, chunks):
    """The door of :func:`integrate_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, out), chunks)


@njit(cache=True, error_model="numpy")
def difference_chunk(ints, floats, Q0, Q1, out, chunk, nchunks):
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q0.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        difference_point(m, Q0[t], Q1[t], out[t])


@njit(cache=True, error_model="numpy")
def difference_batch(ints, floats, Q0, Q1, out, chunks):
    """The door of :func:`difference_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q0, Q1, out), chunks)
