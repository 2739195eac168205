"""Geometric linearization of moving-base dynamics (Bos, Traversaro, Pucci, Saccon, J. Geometric
Mechanics 14(4), 2022), compiled with numba: EIDAmb (Table 4), its derivatives (Tables 5-8) and
IMMAmb (Table 9).

Tables 4-8 are in body frames, as in the paper: body i's twist, acceleration and wrenches are
expressed in its own joint frame (Table 9's recursion is evaluated in the ground frame, which
changes no number: see :func:`immamb_core`), and ``X_i`` = ``^iX_{lambda(i)}`` maps motions
of the parent to body i (``parent_M_i = placement * X_J(q)``).  6D vectors are [linear; angular]
(Pinocchio).  This shares no algorithm with IDSVA / FDSVA (ground frame, :mod:`.inverse`,
:mod:`.forward`): the two are independent references for each other.

How the paper's moving base maps onto a :class:`~dynamics.model.RobotModel`:

* With a free-flyer root (joint 1), the base is body 1, ``H = oM_1``, and the body base twist
  ``v_0`` is Pinocchio's local velocity ``v[:6]``; the base acceleration ``^0a_{A,0}`` is
  ``a[:6]`` (the derivative of the body twist, i.e. the intrinsic acceleration in the body
  frame).  Treated as a joint with S = I6, the free-flyer reproduces Table 4's base lines 5-11:
  ``v_1 = v_0`` and ``a_1 = ^0X_A a_grav + ^0a_{A,0}``, where ``a_grav = -g``.
* Without a free-flyer the base is the ground and the same recursions give the fixed-base case.
* Multi-DoF joints (spherical, planar, free-flyer deeper in the tree) have constant motion
  subspaces S in their child frame; a local perturbation ``q (+) d`` changes X_i by
  ``dX_i/dd_k = -(S_k x) X_i``, which is the ``jcalcderiv`` of Table 6 line 2 for every type.

Two simplifications of Table 4 that change no number:

* The base acceleration enters as the initial value of ``a^r`` (lines 6 and 30-31 combined):
  ``M^c_i ^ia_{A,0} + b^c_i`` is ``b^c_i`` computed with ``a^r_0 + ^0a_{A,0}``.  The composite
  inertias ``M^c`` and the starred ``b^vp``, ``F`` (used by the paper to separate the base
  acceleration) are then not needed for the outputs; line 40 is ``b^c_0``.
* Tables 5-8 are one forward-mode sweep: every column (a derivative direction) is propagated by
  the same linearized lines 16, 17, 20, 21, 26 and 31; only the seeds differ (a body carries
  the columns of its chain, see :func:`column_slots`):

  ==============  ======================  =============================  =====================
  columns         table                   seed at the joint              what is held fixed
  ==============  ======================  =============================  =====================
  0 .. nv-1       6 (and Table 5 without  dv_i = (X_i v_lam) x S_k,      body base twist
                  its line 1 at the base) da_i = (X_i a_lam) x S_k,
                                          db_lam += X^T (S_k x* b^c_i)
  nv .. 2nv-1     7 (base) and 8          dv_i = S_k,                    q
                                          da_i = v_i x S_k + S_k x v_J
  2nv .. 2nv+5    5 (free-flyer only)     dv_0 = crm(v_0) e_k (line 1),  inertial base twist
                                          da_0 = crm(a^r_0) e_k (line 2)
  ==============  ======================  =============================  =====================

  Table 5 line 1 as printed places the 0(3x3) block top-right; the derivative of
  ``v_0 = ^0X_A ^Av_{A,0}`` along ``H exp(xi)`` is ``v_0 x xi = crm(v_0) xi``, whose 0 block is
  bottom-left (``crm(v) = [[w^, v_l^], [0, w^]]``); lines 1 and 2 share that pattern.

IMMAmb (Table 9) is written for joints of any number of DoFs (D_i is nv_i x nv_i); at the base
(a free-flyer joint, S = I6) it reduces to the paper's lines 15, 20 and 26.  The table's index
slips are corrected here: line 18 reads ``P_lam[:, i+6:]``, the lower triangle (including the
block Minv[7:, 1:6]) is the transpose of the upper one, and ``M^A_0`` starts at ``M_0``.
"""

import numpy as np

from ..jit import borrowed, chunk_range, copy_into, in_parallel, keep_alive, njit
from .dense import symm_gemm_col_sparse
from .forward import small_spd_inverse
from .kinematics import FF, PLA, SPH, compose_placements, ground_motion_subspace, joint_transform
from .packed_model import unpack
from .spatial import force_cross_add, ground_inertia, motion_cross, motion_cross_add, tup6

# contract: LLVM may fuse a * b + c into one FMA (rounding changes in the last bits; measured on
# HyQ and ATLAS: the Tables 5-8 sweep 8% faster, IMMAmb 4-6%).  No other fast-math flag.
_JIT = dict(cache=True, error_model="numpy", fastmath={"contract"})
_INLINE = dict(_JIT, inline="always")


# ---------------------------------------------------------------------------------- small algebra
@njit(**_INLINE)
def _to_child(R, p, m, out):
    """out = X m: a motion of the parent expressed in the child frame (parent_M_child = (R, p))."""
    wx, wy, wz = m[3], m[4], m[5]
    lx = m[0] - (p[1] * wz - p[2] * wy)
    ly = m[1] - (p[2] * wx - p[0] * wz)
    lz = m[2] - (p[0] * wy - p[1] * wx)
    out[0] = R[0, 0] * lx + R[1, 0] * ly + R[2, 0] * lz
    out[1] = R[0, 1] * lx + R[1, 1] * ly + R[2, 1] * lz
    out[2] = R[0, 2] * lx + R[1, 2] * ly + R[2, 2] * lz
    out[3] = R[0, 0] * wx + R[1, 0] * wy + R[2, 0] * wz
    out[4] = R[0, 1] * wx + R[1, 1] * wy + R[2, 1] * wz
    out[5] = R[0, 2] * wx + R[1, 2] * wy + R[2, 2] * wz


@njit(**_INLINE)
def _to_parent_add(R, p, f, scale, out):
    """out += scale X^T f: a wrench of the child expressed in the parent frame."""
    fx = R[0, 0] * f[0] + R[0, 1] * f[1] + R[0, 2] * f[2]
    fy = R[1, 0] * f[0] + R[1, 1] * f[1] + R[1, 2] * f[2]
    fz = R[2, 0] * f[0] + R[2, 1] * f[1] + R[2, 2] * f[2]
    nx = R[0, 0] * f[3] + R[0, 1] * f[4] + R[0, 2] * f[5] + p[1] * fz - p[2] * fy
    ny = R[1, 0] * f[3] + R[1, 1] * f[4] + R[1, 2] * f[5] + p[2] * fx - p[0] * fz
    nz = R[2, 0] * f[3] + R[2, 1] * f[4] + R[2, 2] * f[5] + p[0] * fy - p[1] * fx
    out[0] += scale * fx
    out[1] += scale * fy
    out[2] += scale * fz
    out[3] += scale * nx
    out[4] += scale * ny
    out[5] += scale * nz


@njit(**_INLINE)
def _inertia_apply(mass, mc, Io, v, out):
    """out = M v for the body-frame spatial inertia [[m I, -[mc]x], [[mc]x, Io]] (``mc`` the
    first moment m c, ``Io`` the rotational inertia about the frame origin)."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = mass * vx - (mc[1] * wz - mc[2] * wy)
    out[1] = mass * vy - (mc[2] * wx - mc[0] * wz)
    out[2] = mass * vz - (mc[0] * wy - mc[1] * wx)
    out[3] = mc[1] * vz - mc[2] * vy + Io[0, 0] * wx + Io[0, 1] * wy + Io[0, 2] * wz
    out[4] = mc[2] * vx - mc[0] * vz + Io[1, 0] * wx + Io[1, 1] * wy + Io[1, 2] * wz
    out[5] = mc[0] * vy - mc[1] * vx + Io[2, 0] * wx + Io[2, 1] * wy + Io[2, 2] * wz


@njit(**_INLINE)
def _wrench(mass, mc, Io, v, a, mom, out):
    """out = M a + v x* (M v) (lines 20-21 of Table 4); ``mom`` receives M v."""
    _inertia_apply(mass, mc, Io, v, mom)
    _inertia_apply(mass, mc, Io, a, out)
    force_cross_add(v, mom, out)


# ------------------------------------------------------ the same, on slots (columns of a sweep)
@njit(callee=True, **_JIT)
def _to_child_slots(R, p, src, dst, j0, j1):
    """dst[:, j] = X src[:, j] for slots j0 <= j < j1 (motions stored (6, slots))."""
    r00, r01, r02, r10, r11, r12 = R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22, p0, p1, p2 = R[2, 0], R[2, 1], R[2, 2], p[0], p[1], p[2]
    s0, s1, s2, s3, s4, s5 = src[0], src[1], src[2], src[3], src[4], src[5]
    d0, d1, d2, d3, d4, d5 = dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]
    for j in range(j0, j1):
        wx, wy, wz = s3[j], s4[j], s5[j]
        lx = s0[j] - (p1 * wz - p2 * wy)
        ly = s1[j] - (p2 * wx - p0 * wz)
        lz = s2[j] - (p0 * wy - p1 * wx)
        d0[j] = r00 * lx + r10 * ly + r20 * lz
        d1[j] = r01 * lx + r11 * ly + r21 * lz
        d2[j] = r02 * lx + r12 * ly + r22 * lz
        d3[j] = r00 * wx + r10 * wy + r20 * wz
        d4[j] = r01 * wx + r11 * wy + r21 * wz
        d5[j] = r02 * wx + r12 * wy + r22 * wz


@njit(callee=True, **_JIT)
def _to_parent_add_slots(R, p, src, dst, n):
    """dst[:, j] += X^T src[:, j] for slots j < n (wrenches stored (6, slots))."""
    r00, r01, r02, r10, r11, r12 = R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22, p0, p1, p2 = R[2, 0], R[2, 1], R[2, 2], p[0], p[1], p[2]
    s0, s1, s2, s3, s4, s5 = src[0], src[1], src[2], src[3], src[4], src[5]
    d0, d1, d2, d3, d4, d5 = dst[0], dst[1], dst[2], dst[3], dst[4], dst[5]
    for j in range(n):
        f0, f1, f2, n0, n1, n2 = s0[j], s1[j], s2[j], s3[j], s4[j], s5[j]
        fx = r00 * f0 + r01 * f1 + r02 * f2
        fy = r10 * f0 + r11 * f1 + r12 * f2
        fz = r20 * f0 + r21 * f1 + r22 * f2
        d0[j] += fx
        d1[j] += fy
        d2[j] += fz
        d3[j] += r00 * n0 + r01 * n1 + r02 * n2 + p1 * fz - p2 * fy
        d4[j] += r10 * n0 + r11 * n1 + r12 * n2 + p2 * fx - p0 * fz
        d5[j] += r20 * n0 + r21 * n1 + r22 * n2 + p0 * fy - p1 * fx


@njit(callee=True, **_JIT)
def _cross_add_slots(dV, vJ, dA, j0, j1):
    """dA[:, j] += dV[:, j] x vJ for slots j0 <= j < j1."""
    ux, uy, uz, ax, ay, az = vJ[0], vJ[1], vJ[2], vJ[3], vJ[4], vJ[5]
    v0, v1, v2, v3, v4, v5 = dV[0], dV[1], dV[2], dV[3], dV[4], dV[5]
    a0, a1, a2, a3, a4, a5 = dA[0], dA[1], dA[2], dA[3], dA[4], dA[5]
    for j in range(j0, j1):
        vx, vy, vz, wx, wy, wz = v0[j], v1[j], v2[j], v3[j], v4[j], v5[j]
        a0[j] += wy * uz - wz * uy + vy * az - vz * ay
        a1[j] += wz * ux - wx * uz + vz * ax - vx * az
        a2[j] += wx * uy - wy * ux + vx * ay - vy * ax
        a3[j] += wy * az - wz * ay
        a4[j] += wz * ax - wx * az
        a5[j] += wx * ay - wy * ax


@njit(callee=True, **_JIT)
def _wrench_slots(mass, mc, Io, V, mom, dA, dV, dB, n, n1):
    """Line 21 linearized for slots j < n: dB = M dA + dV x* (M V) + V x* (M dV), where ``mom``
    is M V; slots j < n1 carry dA only (dV = 0): dB = M dA."""
    c0, c1, c2 = mc[0], mc[1], mc[2]
    i00, i01, i02, i10, i11, i12 = Io[0, 0], Io[0, 1], Io[0, 2], Io[1, 0], Io[1, 1], Io[1, 2]
    i20, i21, i22 = Io[2, 0], Io[2, 1], Io[2, 2]
    a0, a1, a2, a3, a4, a5 = dA[0], dA[1], dA[2], dA[3], dA[4], dA[5]
    b0, b1, b2, b3, b4, b5 = dB[0], dB[1], dB[2], dB[3], dB[4], dB[5]
    for j in range(n):  # M dA (as _inertia_apply)
        vx, vy, vz, wx, wy, wz = a0[j], a1[j], a2[j], a3[j], a4[j], a5[j]
        b0[j] = mass * vx - (c1 * wz - c2 * wy)
        b1[j] = mass * vy - (c2 * wx - c0 * wz)
        b2[j] = mass * vz - (c0 * wy - c1 * wx)
        b3[j] = c1 * vz - c2 * vy + i00 * wx + i01 * wy + i02 * wz
        b4[j] = c2 * vx - c0 * vz + i10 * wx + i11 * wy + i12 * wz
        b5[j] = c0 * vy - c1 * vx + i20 * wx + i21 * wy + i22 * wz
    Vx, Vy, Vz, Wx, Wy, Wz = V[0], V[1], V[2], V[3], V[4], V[5]
    Fx, Fy, Fz, Nx, Ny, Nz = mom[0], mom[1], mom[2], mom[3], mom[4], mom[5]
    v0, v1, v2, v3, v4, v5 = dV[0], dV[1], dV[2], dV[3], dV[4], dV[5]
    for j in range(n1, n):
        vx, vy, vz, wx, wy, wz = v0[j], v1[j], v2[j], v3[j], v4[j], v5[j]
        t0 = mass * vx - (c1 * wz - c2 * wy)  # t = M dV
        t1 = mass * vy - (c2 * wx - c0 * wz)
        t2 = mass * vz - (c0 * wy - c1 * wx)
        t3 = c1 * vz - c2 * vy + i00 * wx + i01 * wy + i02 * wz
        t4 = c2 * vx - c0 * vz + i10 * wx + i11 * wy + i12 * wz
        t5 = c0 * vy - c1 * vx + i20 * wx + i21 * wy + i22 * wz
        b0[j] += wy * Fz - wz * Fy + Wy * t2 - Wz * t1  # dV x* mom + V x* t
        b1[j] += wz * Fx - wx * Fz + Wz * t0 - Wx * t2
        b2[j] += wx * Fy - wy * Fx + Wx * t1 - Wy * t0
        b3[j] += wy * Nz - wz * Ny + vy * Fz - vz * Fy + Wy * t5 - Wz * t4 + Vy * t2 - Vz * t1
        b4[j] += wz * Nx - wx * Nz + vz * Fx - vx * Fz + Wz * t3 - Wx * t5 + Vz * t0 - Vx * t2
        b5[j] += wx * Ny - wy * Nx + vx * Fy - vy * Fx + Wx * t4 - Wy * t3 + Vx * t1 - Vy * t0


@njit(callee=True, **_JIT)
def _rows_slots(S, dB, slot, n, Dk):
    """Dk[slot[j, 0]] = S . dB[:, j] for slots j < n (line 31 linearized, one row of D)."""
    S0, S1, S2, S3, S4, S5 = S[0], S[1], S[2], S[3], S[4], S[5]
    b0, b1, b2, b3, b4, b5 = dB[0], dB[1], dB[2], dB[3], dB[4], dB[5]
    for j in range(n):
        Dk[slot[j, 0]] = (S0 * b0[j] + S1 * b1[j] + S2 * b2[j] + S3 * b3[j] + S4 * b4[j]
                          + S5 * b5[j])


# ---------------------------------------------------------------------------------- model pieces
@njit(callee=True, **_JIT)
def body_placements(m, q, R, p):
    """parent_M_i = placement_i X_J(q_i) of every joint i >= 1 (rotation R[i], translation p[i])."""
    RJ = np.empty((3, 3))
    pJ = np.empty(3)
    for i in range(1, m.parent.shape[0]):
        joint_transform(m.jtype[i], m.axis[i], m.pitch[i], q, m.iq[i], RJ, pJ)
        compose_placements(m.place_R[i], m.place_p[i], RJ, pJ, R[i], p[i])


@njit(callee=True, **_JIT)
def body_inertias(m, mc, Io):
    """First moment m c (nj, 3) and rotational inertia about the joint-frame origin (nj, 3, 3)."""
    for i in range(1, m.parent.shape[0]):
        ms = m.mass[i]
        c = m.com[i]
        cc = c[0] * c[0] + c[1] * c[1] + c[2] * c[2]
        for r in range(3):
            mc[i, r] = ms * c[r]
            for k in range(3):
                Io[i, r, k] = m.Icom[i, r, k] - ms * c[r] * c[k]
            Io[i, r, r] += ms * cc


@njit(callee=True, **_JIT)
def subtree_ends(m, end):
    """end[i]: one past the last DoF of joint i's subtree (DoFs of a subtree are contiguous)."""
    nj = m.parent.shape[0]
    for i in range(nj):
        end[i] = m.iv[i] + m.nvj[i] if i > 0 else 0
    for i in range(nj - 1, 0, -1):
        lam = m.parent[i]
        if lam > 0 and end[i] > end[lam]:
            end[lam] = end[i]


@njit(callee=True, **_JIT)
def body_geometry(m, q):
    """What Tables 4-9 read at a point, computed once: placements (R, p) of every joint in its
    parent (:func:`body_placements`), first moments ``mc`` and rotational inertias ``Io``
    (:func:`body_inertias`) and the subtree ends (:func:`subtree_ends`)."""
    nj = m.parent.shape[0]
    R = np.empty((nj, 3, 3))
    p = np.empty((nj, 3))
    mc = np.empty((nj, 3))
    Io = np.empty((nj, 3, 3))
    end = np.empty(nj, dtype=np.int64)
    body_placements(m, q, R, p)
    body_inertias(m, mc, Io)
    subtree_ends(m, end)
    return R, p, mc, Io, end


# ---------------------------------------------------------------------------------- Table 4
@njit(callee=True, **_JIT)
def eidamb_point(m, q, v, a, tau):
    """EIDAmb (Table 4): tau = [base wrench (free-flyer root); joint torques] in Pinocchio's
    order, i.e. ``rnea(q, v, a)``; the base wrench is expressed in the base frame."""
    eidamb_core(m, body_geometry(m, q), v, a, tau)


@njit(callee=True, **_JIT)
def eidamb_core(m, geometry, v, a, tau):
    """:func:`eidamb_point` on the :func:`body_geometry` of the point."""
    R, p, mc, Io, _ = borrowed(geometry)  # borrowed views: no reference counting
    v, a, tau = borrowed((v, a, tau))
    nj = m.parent.shape[0]
    work = (np.zeros((nj, 6)), np.zeros((nj, 6)), np.zeros((nj, 6)), np.empty(6), np.empty(6))
    V, A, Bc, mom, vJ = borrowed(work)
    for r in range(6):
        A[0, r] = -m.gravity[r]
    for i in range(1, nj):
        lam = m.parent[i]
        for r in range(6):
            vJ[r] = 0.0
        for k in range(m.nvj[i]):
            d = m.iv[i] + k
            for r in range(6):
                vJ[r] += m.S_local[d, r] * v[d]
                A[i, r] += m.S_local[d, r] * a[d]
        _to_child(R[i], p[i], V[lam], V[i])
        for r in range(6):
            V[i, r] += vJ[r]
        _to_child(R[i], p[i], A[lam], mom)
        for r in range(6):
            A[i, r] += mom[r]
        motion_cross_add(V[i], vJ, A[i])
        _wrench(m.mass[i], mc[i], Io[i], V[i], A[i], mom, Bc[i])
    for i in range(nj - 1, 0, -1):
        for k in range(m.nvj[i]):
            d = m.iv[i] + k
            s = 0.0
            for r in range(6):
                s += m.S_local[d, r] * Bc[i, r]
            tau[d] = s + m.armature[d] * a[d]
        lam = m.parent[i]
        if lam > 0:
            _to_parent_add(R[i], p[i], Bc[i], 1.0, Bc[lam])
    keep_alive(work)


# ---------------------------------------------------------------------------------- Tables 5-8
@njit(callee=True, **_JIT)
def eidamb_derivatives_point(m, q, v, a, tau, D):
    """EIDAmb and its derivatives (Tables 5-8) in one forward-mode sweep (see module docstring).

    tau (nv,): as :func:`eidamb_point`.  D (nv, ncol), overwritten: columns [0, nv) are
    dtau/dq (local perturbations; for the base the body twist is held fixed, Pinocchio's
    convention), [nv, 2nv) dtau/dv (Tables 7 and 8), and with a free-flyer root [2nv, 2nv + 6)
    the left-trivialized dtau/dH with the inertial base twist held fixed (Table 5).
    """
    eidamb_derivatives_core(m, body_geometry(m, q), column_slots(m, D.shape[1]), v, a, tau, D)


@njit(callee=True, **_JIT)
def column_slots(m, ncol):
    """Which derivative columns the sweep of :func:`eidamb_derivatives_core` carries at each body,
    in which order: its model-only part, computed once per model by batches.

    Body i carries the columns of its chain (its ancestors' DoFs and its own, in the q and v sets,
    and the pose set of the base): ``nslot[i, 0]`` slots, the first ``nslot[parent, 0]`` those of
    its parent in the parent's order, then its own.  So the columns inherited from the parent are
    one contiguous range, transformed by loops over slots that LLVM vectorizes.  ``slot[i, j]`` =
    (column of D, seed: 0 position / 1 velocity / 2 base pose, DoF).  The position columns of a
    root joint come first: the motion of the ground is held fixed, so they carry dA only (dV = 0
    down the tree); ``nslot[i, 1]`` counts them.  Those whose seed da = (X a_grav) x S_k is zero
    for every q (S_k without an angular part, e.g. a free-flyer's translations, with gravity
    linear) are not carried at all: their columns of D are zero.  Returns (nslot (nj, 2),
    slot (nj, max slots, 3))."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    g_lin = m.gravity[3] == 0.0 and m.gravity[4] == 0.0 and m.gravity[5] == 0.0
    nslot = np.zeros((nj, 2), dtype=np.int64)
    slot = np.zeros((nj, 2 * nv + (m.nvj[1] if ncol > 2 * nv else 0), 3), dtype=np.int64)
    for i in range(1, nj):
        lam = m.parent[i]
        k = nslot[lam, 0]
        copy_into(slot[i, :k], slot[lam, :k])
        nslot[i, 1] = nslot[lam, 1]
        lo, hi = m.iv[i], m.iv[i] + m.nvj[i]
        for d in range(lo, hi):  # position columns
            S = m.S_local[d]
            if lam == 0 and g_lin and S[3] == 0.0 and S[4] == 0.0 and S[5] == 0.0:
                continue
            slot[i, k, 0], slot[i, k, 1], slot[i, k, 2] = d, 0, d
            k += 1
        if lam == 0:
            nslot[i, 1] = k
        for d in range(lo, hi):  # velocity columns
            slot[i, k, 0], slot[i, k, 1], slot[i, k, 2] = nv + d, 1, d
            k += 1
        if i == 1 and ncol > 2 * nv:  # base pose columns (Table 5)
            for d in range(lo, hi):
                slot[i, k, 0], slot[i, k, 1], slot[i, k, 2] = 2 * nv + d, 2, d
                k += 1
        nslot[i, 0] = k
    # trimmed to the longest chain: the sweep's work arrays are as wide as ``slot``
    return nslot, slot[:, :max(1, nslot[:, 0].max())].copy()


@njit(callee=True, **_JIT)
def eidamb_derivatives_core(m, geometry, slots, v, a, tau, D):
    """:func:`eidamb_derivatives_point` on the :func:`body_geometry` of the point and the
    model's :func:`column_slots` for D's columns.

    The columns a body carries are stored by slot, [linear; angular] row by row (``dA[i, r, j]``):
    the inherited ones go through each linearized line as one loop over slots, which LLVM
    vectorizes (ATLAS: the sweep 11% faster than column by column).  Columns of DoFs below body
    i (reached through line 26 and the backward sums only) are kept by column index in ``desc``."""
    R, p, mc, Io, end = borrowed(geometry)  # borrowed views: no reference counting
    nslot, slot = borrowed(slots)
    v, a, tau, D = borrowed((v, a, tau, D))
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    ncol = D.shape[1]
    ns = slot.shape[1]
    work = (np.zeros((nj, 6)), np.zeros((nj, 6)), np.zeros((nj, 6)), np.empty((nj, 6)),
            np.zeros((nj, 6)), np.empty((nj, 6, ns)), np.empty((nj, 6, ns)),
            np.empty((nj, 6, ns)), np.empty((nj, ncol, 6)), np.empty(6), np.empty(6),
            np.empty(6), np.empty(6))
    V, A, Bc, Mom, VJ, dV, dA, dB, desc, Xv, Xa, u, w = borrowed(work)
    for r in range(6):
        A[0, r] = -m.gravity[r]
    D[:, :] = 0.0
    # ---------------------------------------------------------------- forward sweep (lines 12-23)
    for i in range(1, nj):
        lam = m.parent[i]
        vJ = VJ[i]
        for k in range(m.nvj[i]):
            d = m.iv[i] + k
            for r in range(6):
                vJ[r] += m.S_local[d, r] * v[d]
                A[i, r] += m.S_local[d, r] * a[d]
        _to_child(R[i], p[i], V[lam], Xv)
        _to_child(R[i], p[i], A[lam], Xa)
        for r in range(6):
            V[i, r] = Xv[r] + vJ[r]
            A[i, r] += Xa[r]
        motion_cross_add(V[i], vJ, A[i])
        _wrench(m.mass[i], mc[i], Io[i], V[i], A[i], Mom[i], Bc[i])
        n, n1 = nslot[i, 0], nslot[i, 1]
        nl = nslot[lam, 0]
        # inherited columns (lines 16, 17 linearized)
        _to_child_slots(R[i], p[i], dA[lam], dA[i], np.int64(0), nl)
        _to_child_slots(R[i], p[i], dV[lam], dV[i], n1, nl)
        _cross_add_slots(dV[i], vJ, dA[i], n1, nl)
        # own columns: the seeds
        for j in range(nl, n):
            S = m.S_local[slot[i, j, 2]]
            seed = slot[i, j, 1]
            if seed == 0:  # Table 6: d(X_i v_lam)/ds_k = (X_i v_lam) x S_k (and for a)
                motion_cross(Xv, S, u)
                motion_cross(Xa, S, w)
                motion_cross_add(u, vJ, w)
            elif seed == 1:  # Table 8 (Table 7 at the base): dv_i/dr_k = S_k
                for r in range(6):
                    u[r] = S[r]
                motion_cross(S, vJ, w)
                motion_cross_add(V[i], S, w)
            else:  # Table 5 lines 1-2 (no v x v_J term at the base: v_J is v_0 itself)
                motion_cross(V[i], S, u)
                motion_cross(Xa, S, w)
            for r in range(6):
                dV[i, r, j] = u[r]
                dA[i, r, j] = w[r]
        # line 21 linearized, for every column of the chain
        _wrench_slots(m.mass[i], mc[i], Io[i], V[i], Mom[i], dA[i], dV[i], dB[i], n, n1)
        # the descendants' columns are accumulated in the backward sweep
        for d in range(m.iv[i] + m.nvj[i], end[i]):
            for s in range(2):
                for r in range(6):
                    desc[i, d + s * nv, r] = 0.0
    # ---------------------------------------------------------------- backward sweep (lines 24-31)
    for i in range(nj - 1, 0, -1):
        lam = m.parent[i]
        lo, hi = m.iv[i], m.iv[i] + m.nvj[i]
        n = nslot[i, 0]
        for k in range(lo, hi):
            S = m.S_local[k]
            s_ = 0.0
            for r in range(6):
                s_ += S[r] * Bc[i, r]
            tau[k] = s_ + m.armature[k] * a[k]
            # rows of joint i (line 31 linearized): the chain's columns, then the descendants'
            _rows_slots(S, dB[i], slot[i], n, D[k])
            for d in range(hi, end[i]):
                for s in range(2):
                    c = d + s * nv
                    s_ = 0.0
                    for r in range(6):
                        s_ += S[r] * desc[i, c, r]
                    D[k, c] = s_
        if lam == 0:
            continue
        # the parent's sums (line 26): its chain's columns by slot, the others by column
        _to_parent_add(R[i], p[i], Bc[i], 1.0, Bc[lam])
        nl = nslot[lam, 0]
        _to_parent_add_slots(R[i], p[i], dB[i], dB[lam], nl)
        for j in range(nl, n):
            for r in range(6):
                u[r] = dB[i, r, j]
            _to_parent_add(R[i], p[i], u, 1.0, desc[lam, slot[i, j, 0]])
        for d in range(hi, end[i]):
            for s in range(2):
                c = d + s * nv
                _to_parent_add(R[i], p[i], desc[i, c], 1.0, desc[lam, c])
        # line 26 linearized in s_i: d(X^T b)/ds_k = X^T (S_k x* b)
        for k in range(lo, hi):
            for r in range(6):
                u[r] = 0.0
            force_cross_add(m.S_local[k], Bc[i], u)
            _to_parent_add(R[i], p[i], u, 1.0, desc[lam, k])
    keep_alive(work)


# ---------------------------------------------------------------------------------- Table 9
@njit(callee=True, **_JIT)
def immamb_point(m, q, Minv):
    """IMMAmb (Table 9): the inverse mass matrix (nv, nv), for joints of any number of DoFs (the
    free-flyer base is a 6-DoF joint with S = I6: lines 15, 20 and 26)."""
    immamb_core(m, body_geometry(m, q), Minv)


@njit(callee=True, **_JIT)
def immamb_core(m, geometry, Minv):
    """:func:`immamb_point` on the :func:`body_geometry` of the point.

    Table 9's recursion, line by line, with its quantities held in the ground frame instead of
    body frames: M^A_i, U_i = M^A_i S_i and the wrench and motion sets F_i, P_i (Table 3) are
    ``^0X_i^{-T} (.) ^0X_i^{-1}``, ``^0X_i^{-T} (.)`` and ``^0X_i (.)`` of the table's.  Every
    pairing (D_i = S^T U, S^T F on line 10, U^T P on line 17) is frame-free, so the numbers are
    the table's; lines 11, 12-13 and 18 then add to the parent without a transform X_i per
    column or the congruence X^T M X per joint.  F and P are stored row by row (``F[i, r, c]``)
    and only their non-zero columns are touched: F_i on the strict subtree of i, P_i on the
    columns from i on.  One-DoF joints (most of a robot) take a path with the joint's vectors in
    registers."""
    R, p, _, _, end = borrowed(geometry)  # borrowed views: no reference counting
    Minv = borrowed(Minv)
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    # IA; oR, op: the ground placement of every joint frame; oS: S in the ground frame; U: M^A S
    # in the ground frame; F, P; Dinv; Dm, UD, w: scratch
    work = (np.empty((nj, 6, 6)), np.empty((nj, 3, 3)), np.empty((nj, 3)), np.empty((nv, 6)),
            np.empty((nv, 6)), np.empty((nj, 6, nv)), np.empty((nj, 6, nv)), np.empty((nj, 6, 6)),
            np.empty((6, 6)), np.empty((6, 6)), np.empty(6))
    IA, oR, op, oS, U, F, P, Dinv, Dm, UD, w = borrowed(work)
    Minv[:, :] = 0.0
    for i in range(1, nj):  # lines 1-5: M^A_i = M_i; F_i = 0 on its strict subtree
        lam = m.parent[i]
        if lam == 0:
            copy_into(oR[i], R[i])
            copy_into(op[i], p[i])
        else:
            compose_placements(oR[lam], op[lam], R[i], p[i], oR[i], op[i])
        ground_inertia(oR[i], op[i], m.mass[i], m.com[i], m.Icom[i], IA[i])
        ground_motion_subspace(m, i, oR[i], op[i], oS)
        for r in range(6):
            F[i, r, m.iv[i] + m.nvj[i]:end[i]] = 0.0
    for i in range(nj - 1, 0, -1):  # lines 6-14
        lam = m.parent[i]
        lo, ni, e = m.iv[i], m.nvj[i], end[i]
        hi = lo + ni
        for k in range(ni):  # line 7: U = M^A S
            for r in range(6):
                s = 0.0
                for c in range(6):
                    s += IA[i, r, c] * oS[lo + k, c]
                U[lo + k, r] = s
        for k in range(ni):  # line 8: D = S^T U
            for l in range(ni):
                s = 0.0
                for r in range(6):
                    s += oS[lo + k, r] * U[lo + l, r]
                Dm[k, l] = s
            Dm[k, k] += m.armature[lo + k]
        small_spd_inverse(Dm, ni, Dinv[i])
        for k in range(ni):  # line 9
            for l in range(ni):
                Minv[lo + k, lo + l] = Dinv[i, k, l]
        if ni == 1:  # lines 10-11 for a one-DoF joint
            s0, s1, s2, s3, s4, s5 = tup6(oS[lo])
            u0, u1, u2, u3, u4, u5 = tup6(U[lo])
            dd = Dinv[i, 0, 0]
            Fi = F[i]
            Fl = F[lam]
            mr = Minv[lo]
            for c in range(hi, e):
                f0, f1, f2, f3, f4, f5 = Fi[0, c], Fi[1, c], Fi[2, c], Fi[3, c], Fi[4, c], Fi[5, c]
                mk = mr[c] - dd * (s0 * f0 + s1 * f1 + s2 * f2 + s3 * f3 + s4 * f4 + s5 * f5)
                mr[c] = mk
                if lam > 0:
                    Fl[0, c] += f0 + u0 * mk
                    Fl[1, c] += f1 + u1 * mk
                    Fl[2, c] += f2 + u2 * mk
                    Fl[3, c] += f3 + u3 * mk
                    Fl[4, c] += f4 + u4 * mk
                    Fl[5, c] += f5 + u5 * mk
            if lam > 0:
                Fl[0, lo] += u0 * dd
                Fl[1, lo] += u1 * dd
                Fl[2, lo] += u2 * dd
                Fl[3, lo] += u3 * dd
                Fl[4, lo] += u4 * dd
                Fl[5, lo] += u5 * dd
        else:
            for c in range(hi, e):  # line 10: Minv[i, c] -= D^-1 S^T F_i[:, c] on the subtree
                _minv_subtract(Dinv[i], oS, lo, ni, F[i], c, w, Minv)
            if lam > 0:
                for c in range(lo, e):  # line 11: F_lam[:, c] += F_i[:, c] + U Minv[i, c]
                    for r in range(6):
                        s = F[i, r, c] if c >= hi else 0.0
                        for k in range(ni):
                            s += U[lo + k, r] * Minv[lo + k, c]
                        F[lam, r, c] += s
        if lam == 0:
            continue
        for k in range(ni):  # lines 12-13: M^A_lam += M^A_i - U D^-1 U^T
            for r in range(6):
                s = 0.0
                for l in range(ni):
                    s += Dinv[i, k, l] * U[lo + l, r]
                UD[k, r] = s
        for r in range(6):
            for c in range(6):
                s = IA[i, r, c]
                for k in range(ni):
                    s -= U[lo + k, r] * UD[k, c]
                IA[lam, r, c] += s
    for i in range(1, nj):  # lines 16-19
        lam = m.parent[i]
        lo, ni = m.iv[i], m.nvj[i]
        Pi = P[i]
        if ni == 1 and lam > 0:  # a one-DoF joint
            s0, s1, s2, s3, s4, s5 = tup6(oS[lo])
            u0, u1, u2, u3, u4, u5 = tup6(U[lo])
            dd = Dinv[i, 0, 0]
            Pl = P[lam]
            mr = Minv[lo]
            for c in range(lo, nv):
                p0, p1, p2, p3, p4, p5 = Pl[0, c], Pl[1, c], Pl[2, c], Pl[3, c], Pl[4, c], Pl[5, c]
                mk = mr[c] - dd * (u0 * p0 + u1 * p1 + u2 * p2 + u3 * p3 + u4 * p4 + u5 * p5)
                mr[c] = mk
                Pi[0, c] = p0 + s0 * mk
                Pi[1, c] = p1 + s1 * mk
                Pi[2, c] = p2 + s2 * mk
                Pi[3, c] = p3 + s3 * mk
                Pi[4, c] = p4 + s4 * mk
                Pi[5, c] = p5 + s5 * mk
            continue
        for c in range(lo, nv):
            if lam > 0:  # line 17: Minv[i, c] -= D^-1 U^T P_lam[:, c]
                _minv_subtract(Dinv[i], U, lo, ni, P[lam], c, w, Minv)
            for r in range(6):  # line 18: P_i[:, c] = S Minv[i, c] + P_lam[:, c]
                s = P[lam, r, c] if lam > 0 else 0.0
                for k in range(ni):
                    s += oS[lo + k, r] * Minv[lo + k, c]
                Pi[r, c] = s
    for r in range(nv):  # lines 21-25
        for c in range(r):
            Minv[r, c] = Minv[c, r]
    keep_alive(work)


@njit(**_INLINE)
def _minv_subtract(Dinv, Y, lo, ni, B, c, w, Minv):
    """Lines 10 and 17 of Table 9 for a multi-DoF joint: Minv[lo + k, c] -= sum_l Dinv[k, l]
    (Y[lo + l] . B[:, c]) for k < ni (``w`` is scratch of ni)."""
    for k in range(ni):
        s = 0.0
        for r in range(6):
            s += Y[lo + k, r] * B[r, c]
        w[k] = s
    for k in range(ni):
        s = 0.0
        for l in range(ni):
            s += Dinv[k, l] * w[l]
        Minv[lo + k, c] -= s


# ---------------------------------------------------------------------------------- linearization
@njit(callee=True, **_JIT)
def derivative_column_support(m, ncol):
    """Where column c of the EIDAmb derivatives D (nv, ncol) can be non-zero: the derivative of
    tau along the position or velocity of DoF c reaches the ancestors of c and c's subtree only;
    the base-pose columns [2 nv, ncol) reach every row.  Returns row ranges ``seg[c, s]`` =
    [start, stop), s < ``nseg[c]``, for :func:`~.dense.symm_gemm_col_sparse` (about 40% of D
    on ATLAS and Talos).  It depends on the model only: batches compute it once."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    end = np.empty(nj, dtype=np.int64)
    subtree_ends(m, end)
    seg = np.empty((ncol, nj, 2), dtype=np.int64)
    nseg = np.ones(ncol, dtype=np.int64)
    for c in range(2 * nv, ncol):
        seg[c, 0, 0] = 0
        seg[c, 0, 1] = nv
    for i in range(1, nj):
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            n = 0
            stop = end[i]  # the chain's last range ends with the subtree
            d = k
            while d >= 0:
                while d > 0 and m.dof_parent[d] == d - 1:
                    d -= 1
                seg[k, n, 0] = d
                seg[k, n, 1] = stop
                n += 1
                d = m.dof_parent[d]
                stop = d + 1
            nseg[k] = n
            copy_into(seg[nv + k, :n], seg[k, :n])
            nseg[nv + k] = n
    return seg, nseg


@njit(**_JIT)
def column_support(ints, floats, ncol):
    """What the geometric batch kernels need to know of ncol derivative columns of the packed
    model (ints, floats), computed once per model: (seg, nseg) of
    :func:`derivative_column_support` and (nslot, slot) of :func:`column_slots`.  The form Python
    calls (``unpack``'s borrowed views stay inside compiled code)."""
    m = unpack(ints, floats)
    seg, nseg = derivative_column_support(m, ncol)
    nslot, slot = column_slots(m, ncol)
    return seg, nseg, nslot, slot


@njit(callee=True, **_JIT)
def geometric_fd_point(m, q, v, tau, support, acc, Minv, dacc):
    """Forward dynamics and its derivatives by the geometric route: Minv = IMMAmb, acc =
    Minv (tau - EIDAmb(q, v, 0)), dacc = -Minv D with D the EIDAmb derivatives at (q, v, acc)
    (columns as in :func:`eidamb_derivatives_point`: 2 nv, or 2 nv + 6 with the pose columns).
    ``support`` is :func:`column_support` for dacc's columns: (seg, nseg, nslot, slot)."""
    nv = m.S_local.shape[0]
    q, v, tau, acc, Minv, dacc = borrowed((q, v, tau, acc, Minv, dacc))
    geometry = body_geometry(m, q)
    immamb_core(m, geometry, Minv)
    work = (np.empty(nv), np.zeros(nv), np.empty(dacc.shape), np.empty(nv))
    bias, zero, D, t = borrowed(work)
    eidamb_core(m, geometry, v, zero, bias)
    for r in range(nv):
        s = 0.0
        for c in range(nv):
            s += Minv[r, c] * (tau[c] - bias[c])
        acc[r] = s
    seg, nseg, nslot, slot = borrowed(support)
    eidamb_derivatives_core(m, geometry, (nslot, slot), v, acc, t, D)
    symm_gemm_col_sparse(Minv, D, seg, nseg, nv, dacc, -1.0)
    keep_alive(work)


@njit(**_JIT)
def geometric_fd_chunk(ints, floats, Q, V, TAU, support, acc, Minv, dacc, chunk, nchunks):
    """:func:`geometric_fd_point` at the knots of chunk ``chunk`` of ``nchunks``: acc (T, nv), Minv
    (T, nv, nv), dacc (T, nv, ncol). ``support``: the model's :func:`column_support` (seg, nseg,
    nslot, slot) for ncol = ``seg.shape[0]`` columns (computed once per model by the caller: it
    costs about as much as the Minv product of a point)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        geometric_fd_point(m, Q[t], V[t], TAU[t], support, acc[t], Minv[t], dacc[t])


@njit(cache=True, error_model="numpy")
def geometric_fd_batch(ints, floats, Q, V, TAU, support, acc, Minv, dacc, chunks):
    """The door of :func:`geometric_fd_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, support, acc, Minv, dacc), chunks)


@njit(**_INLINE)
def _configuration_rows(m, v, A, B, ad):
    """The first nv rows of the continuous-time A (2nv, 2nv) and B (2nv, nv) in the body base
    twist: d(dq)/dt = -ad_v dq + dv, so A[:nv] = [-ad_v, I] and B[:nv] = 0.  ``ad`` (nv, nv):
    work (C-contiguous, not a view of A: :func:`tangent_ad_point` keeps one signature)."""
    nv = v.shape[0]
    tangent_ad_point(m, v, ad)
    for r in range(nv):
        for c in range(nv):
            A[r, c] = -ad[r, c]
            A[r, nv + c] = 0.0
            B[r, c] = 0.0
        A[r, nv + r] = 1.0


@njit(**_JIT)
def geometric_linearization_chunk(ints, floats, Q, V, TAU, support, acc, A, B, chunk, nchunks):
    """The continuous-time linearization in the body base twist (``dynamics.linearize``'s default)
    at the knots of chunk ``chunk`` of ``nchunks``, assembled where it is computed: acc (T, nv), A
    (T, 2nv, 2nv) = [[-ad_v, I], [da_dq, da_dv]] and B (T, 2nv, nv) = [[0], [Minv]]; the
    forward-dynamics derivatives of :func:`geometric_fd_point` are written into A's and B's
    acceleration rows (no copy: on ATLAS the numpy assembly of A and B cost more than the kernel
    itself). ``support``: :func:`column_support` for 2 nv columns (as
    :func:`geometric_fd_chunk`)."""
    m = unpack(ints, floats)
    nv = ints[1]
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    ad = np.empty((nv, nv))
    for t in range(t0, t1):
        At, Bt = A[t], B[t]
        # the acceleration rows of A are [da_dq, da_dv], those of B are Minv: written in place
        geometric_fd_point(m, Q[t], V[t], TAU[t], support, acc[t], Bt[nv:], At[nv:])
        _configuration_rows(m, V[t], At, Bt, ad)


@njit(cache=True, error_model="numpy")
def geometric_linearization_batch(ints, floats, Q, V, TAU, support, acc, A, B, chunks):
    """The door of :func:`geometric_linearization_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, support, acc, A, B), chunks)


@njit(**_JIT)
def continuous_linearization_chunk(ints, floats, V, da_dq, da_dv, Minv, A, B, chunk, nchunks):
    """The A (T, 2nv, 2nv) and B (T, 2nv, nv) of :func:`geometric_linearization_chunk` from
    forward-dynamics derivatives computed otherwise (da_dq, da_dv, Minv (T, nv, nv), e.g. by
    FDSVA) at velocities V (T, nv), at the knots of chunk ``chunk`` of ``nchunks``."""
    m = unpack(ints, floats)
    nv = ints[1]
    t0, t1 = chunk_range(V.shape[0], chunk, nchunks)
    ad = np.empty((nv, nv))
    for t in range(t0, t1):
        for r in range(nv):
            for c in range(nv):
                A[t, nv + r, c] = da_dq[t, r, c]
                A[t, nv + r, nv + c] = da_dv[t, r, c]
                B[t, nv + r, c] = Minv[t, r, c]
        _configuration_rows(m, V[t], A[t], B[t], ad)


@njit(cache=True, error_model="numpy")
def continuous_linearization_batch(ints, floats, V, da_dq, da_dv, Minv, A, B, chunks):
    """The door of :func:`continuous_linearization_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, V, da_dq, da_dv, Minv, A, B), chunks)


@njit(**_JIT)
def eidamb_chunk(ints, floats, Q, V, A, tau, chunk, nchunks):
    """:func:`eidamb_point` at the knots of chunk ``chunk`` of ``nchunks``: tau (T, nv)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        eidamb_point(m, Q[t], V[t], A[t], tau[t])


@njit(cache=True, error_model="numpy")
def eidamb_batch(ints, floats, Q, V, A, tau, chunks):
    """The door of :func:`eidamb_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, A, tau), chunks)


@njit(**_JIT)
def eidamb_derivatives_chunk(ints, floats, Q, V, A, tau, D, chunk, nchunks):
    """:func:`eidamb_derivatives_point` at the knots of chunk ``chunk`` of ``nchunks``: tau (T, nv),
    D (T, nv, ncol)."""
    m = unpack(ints, floats)
    slots = column_slots(m, D.shape[2])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        eidamb_derivatives_core(m, body_geometry(m, Q[t]), slots, V[t], A[t], tau[t], D[t])


@njit(cache=True, error_model="numpy")
def eidamb_derivatives_batch(ints, floats, Q, V, A, tau, D, chunks):
    """The door of :func:`eidamb_derivatives_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, A, tau, D), chunks)


@njit(**_JIT)
def immamb_chunk(ints, floats, Q, Minv, chunk, nchunks):
    """:func:`immamb_point` at the knots of chunk ``chunk`` of ``nchunks``: Minv (T, nv, nv)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        immamb_point(m, Q[t], Minv[t])


@njit(cache=True, error_model="numpy")
def immamb_batch(ints, floats, Q, Minv, chunks):
    """The door of :func:`immamb_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, Minv), chunks)


@njit(callee=True, **_JIT)
def tangent_ad_point(m, v, out):
    """out (nv, nv) = ad_v of a tangent vector v (a velocity, an acceleration) on the
    configuration group, block by joint: crm(v_j) for a free-flyer, [w]x for a spherical joint,
    the se(2) ad for a planar joint, 0 on vector-space and SO(2) joints.  The local error dq of
    q = q_ref (+) dq obeys d(dq)/dt = dv - ad_{v_ref} dq to first order."""
    out[:, :] = 0.0
    for i in range(1, m.parent.shape[0]):
        t, o = m.jtype[i], m.iv[i]
        if t == FF:
            vx, vy, vz, wx, wy, wz = v[o], v[o + 1], v[o + 2], v[o + 3], v[o + 4], v[o + 5]
            for b in range(2):  # w^ on both diagonal blocks
                r0 = o + 3 * b
                out[r0, r0 + 1] = -wz
                out[r0, r0 + 2] = wy
                out[r0 + 1, r0] = wz
                out[r0 + 1, r0 + 2] = -wx
                out[r0 + 2, r0] = -wy
                out[r0 + 2, r0 + 1] = wx
            out[o, o + 4] = -vz  # v_l^ top-right
            out[o, o + 5] = vy
            out[o + 1, o + 3] = vz
            out[o + 1, o + 5] = -vx
            out[o + 2, o + 3] = -vy
            out[o + 2, o + 4] = vx
        elif t == SPH:
            wx, wy, wz = v[o], v[o + 1], v[o + 2]
            out[o, o + 1] = -wz
            out[o, o + 2] = wy
            out[o + 1, o] = wz
            out[o + 1, o + 2] = -wx
            out[o + 2, o] = -wy
            out[o + 2, o + 1] = wx
        elif t == PLA:
            vx, vy, w = v[o], v[o + 1], v[o + 2]
            out[o, o + 1] = -w
            out[o, o + 2] = vy
            out[o + 1, o] = w
            out[o + 1, o + 2] = -vx


@njit(**_JIT)
def tangent_ad_chunk(ints, floats, V, out, chunk, nchunks):
    """:func:`tangent_ad_point` at the knots of chunk ``chunk`` of ``nchunks``: out (T, nv, nv)."""
    m = unpack(ints, floats)
    t0, t1 = chunk_range(V.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        tangent_ad_point(m, V[t], out[t])


@njit(cache=True, error_model="numpy")
def tangent_ad_batch(ints, floats, V, out, chunks):
    """The door of :func:`tangent_ad_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, V, out), chunks)


@njit(**_JIT)
def base_adjoint_chunk(ints, floats, Q, out, chunk, nchunks):
    """Ad(H) (T, 6, 6) of the pose H = oM_1 of the root joint, [lin; ang]: [[R, [p]x R], [0, R]],
    at the knots of chunk ``chunk`` of ``nchunks`` (out zeroed by the caller)."""
    m = unpack(ints, floats)
    RJ = np.empty((3, 3))
    pJ = np.empty(3)
    R = np.empty((3, 3))
    p = np.empty(3)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        joint_transform(m.jtype[1], m.axis[1], m.pitch[1], Q[t], m.iq[1], RJ, pJ)
        compose_placements(m.place_R[1], m.place_p[1], RJ, pJ, R, p)
        Ad = out[t]
        for r in range(3):
            for c in range(3):
                Ad[r, c] = R[r, c]
                Ad[3 + r, 3 + c] = R[r, c]
        for c in range(3):  # [p]x R, column by column: p x R[:, c]
            Ad[0, 3 + c] = p[1] * R[2, c] - p[2] * R[1, c]
            Ad[1, 3 + c] = p[2] * R[0, c] - p[0] * R[2, c]
            Ad[2, 3 + c] = p[0] * R[1, c] - p[1] * R[0, c]


@njit(cache=True, error_model="numpy")
def base_adjoint_batch(ints, floats, Q, out, chunks):
    """The door of :func:`base_adjoint_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, out), chunks)
