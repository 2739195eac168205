"""Inverse dynamics and its first-order derivatives (ground-frame formulation), compiled with numba.

* ``rnea_point``: the Recursive Newton-Euler Algorithm.
* ``idsva_point``: IDSVA, Alg. 1 of the first-order paper (Singh, Russell, Wensing) generalised to
  multi-DoF joints (second-order paper eq. 12-15): dtau/dq, dtau/dqdot and the mass matrix M in one
  forward and one backward sweep.

Every ``*_point`` kernel evaluates one knot; every ``*_batch`` kernel loops over a leading knot axis
in ``nchunks`` parallel chunks of knots (:func:`dynamics.jit.num_chunks`; one chunk
runs on the calling thread).  The Python wrappers in :mod:`dynamics.algorithms` pass a single
point as the batch of one.

Joint armature (rotor inertia reflected on a DoF, ``m.armature``, Pinocchio's
``model.armature``) adds diag(armature) to M and armature * a to tau, as in Pinocchio's RNEA,
CRBA and ABA; being constant, it changes no derivative in q or qdot.

Per-DoF quantities are stored one row per DoF (``(nv, 6)``), per-body quantities one row per joint
(``(njoints, ...)``, row 0 the universe).  With S_k the ground-frame motion subspace column of DoF k
of joint i and lambda(i) its parent:

    Psid_k  = v_lambda x S_k                      (time derivative of S_k due to the parent moving)
    Psidd_k = a_lambda x S_k + v_lambda x Psid_k
    Sd_k    = v_i x S_k                           (time derivative of S_k)
"""

import numpy as np

from ..jit import carve, chunk_range, extent, in_parallel, keep_alive, njit
from .kinematics import forward_kinematics
from .packed_model import unpack
from .spatial import (body_coriolis_add, dot6, force_cross_add, ground_inertia, matTvec6, matvec6,
                      motion_cross, motion_cross_add, tup6)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def kinematics_and_inertias(m, q, oR, op, S0, I0):
    """Forward kinematics plus the ground-frame spatial inertia I0[i] of every body."""
    forward_kinematics(m, q, oR, op, S0)
    ground_inertias(m, oR, op, I0)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def ground_inertias(m, oR, op, I0):
    """The ground-frame spatial inertia I0[i] of every body, after forward kinematics."""
    for r in range(6):
        for c in range(6):
            I0[0, r, c] = 0.0
    for i in range(1, m.parent.shape[0]):
        ground_inertia(oR[i], op[i], m.mass[i], m.com[i], m.Icom[i], I0[i])


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def velocity_acceleration_pass(m, S0, I0, v, a, Vel, Acc, F):
    """Forward sweep of RNEA: body velocities/accelerations (ground frame, spatial) and body
    forces F[i] = I_i a_i + v_i x* I_i v_i.  Acc[0] = -gravity."""
    own = np.empty(12)  # the work arrays: one allocation (dynamics.jit.carve), borrowed
    vJ, h = carve(own, ((6,), (6,)))
    for r in range(6):
        Vel[0, r] = 0.0
        Acc[0, r] = -m.gravity[r]
        F[0, r] = 0.0
    for i in range(1, m.parent.shape[0]):
        lam = m.parent[i]
        for r in range(6):
            vJ[r] = 0.0
            Acc[i, r] = Acc[lam, r]
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            for r in range(6):
                vJ[r] += S0[k, r] * v[k]
                Acc[i, r] += S0[k, r] * a[k]
        for r in range(6):
            Vel[i, r] = Vel[lam, r] + vJ[r]
        motion_cross_add(Vel[i], vJ, Acc[i])
        matvec6(I0[i], Vel[i], h)
        matvec6(I0[i], Acc[i], F[i])
        force_cross_add(Vel[i], h, F[i])
    keep_alive(own)


@njit(callee=True, cache=True, error_model="numpy")
def rnea_point(m, q, v, a, tau):
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    S0 = np.empty((nv, 6))
    I0 = np.empty((nj, 6, 6))
    Vel = np.empty((nj, 6))
    Acc = np.empty((nj, 6))
    F = np.empty((nj, 6))
    kinematics_and_inertias(m, q, oR, op, S0, I0)
    velocity_acceleration_pass(m, S0, I0, v, a, Vel, Acc, F)
    for i in range(nj - 1, 0, -1):
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            tau[k] = dot6(S0[k], F[i]) + m.armature[k] * a[k]
        lam = m.parent[i]
        if lam > 0:
            for r in range(6):
                F[lam, r] += F[i, r]


@njit(callee=True, cache=True, error_model="numpy")
def crba_point(m, q, M):
    """Composite-rigid-body algorithm: the full (symmetric) joint-space mass matrix."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    S0 = np.empty((nv, 6))
    IC = np.empty((nj, 6, 6))
    t1 = np.empty(6)
    kinematics_and_inertias(m, q, oR, op, S0, IC)
    for i in range(nj - 1, 0, -1):
        for p in range(m.iv[i], m.iv[i] + m.nvj[i]):
            matvec6(IC[i], S0[p], t1)
            j = i
            while j > 0:
                for r in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    x = dot6(S0[r], t1)
                    M[p, r] = x
                    M[r, p] = x
                j = m.parent[j]
        lam = m.parent[i]
        if lam > 0:
            for r in range(6):
                for c in range(6):
                    IC[lam, r, c] += IC[i, r, c]
    for k in range(nv):
        M[k, k] += m.armature[k]


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def add_armature(m, a, tau, M):
    """tau += armature * a and M += diag(armature): the rotor inertias (module docstring) on
    what a sweep over the bodies left."""
    for k in range(m.armature.shape[0]):
        tau[k] += m.armature[k] * a[k]
        M[k, k] += m.armature[k]


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def motion_subspace_rates(m, S0, Vel, Acc, Psid, Psidd, Sd):
    """Psid, Psidd and Sd for every DoF (see module docstring)."""
    for i in range(1, m.parent.shape[0]):
        lam = m.parent[i]
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            motion_cross(Vel[lam], S0[k], Psid[k])
            motion_cross(Acc[lam], S0[k], Psidd[k])
            motion_cross_add(Vel[lam], Psid[k], Psidd[k])
            motion_cross(Vel[i], S0[k], Sd[k])


@njit(callee=True, cache=True, error_model="numpy")
def ground_kinematics(m, q):
    """What the ground-frame sweeps read at a configuration: the motion subspaces S0 (nv, 6) and
    the body inertias IC (njoints, 6, 6), both in the ground frame
    (:func:`~.kinematics.kinematics_and_inertias`)."""
    nj = m.parent.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    S0 = np.empty((m.S_local.shape[0], 6))
    IC = np.empty((nj, 6, 6))
    kinematics_and_inertias(m, q, oR, op, S0, IC)
    return S0, IC


@njit(callee=True, cache=True, error_model="numpy")
def idsva_forward_pass(m, q, v, a, bc_scale):
    """The forward sweep shared by IDSVA and IDSVA-SO.  Returns, in the ground frame,
    S0 (nv, 6), the body inertias IC and body-Coriolis matrices BC (njoints, 6, 6) scaled by
    ``bc_scale`` (1: eq. 14 with its 1/2; 2: Alg. 1's convention without it), the body forces FC
    (njoints, 6) and Psid, Psidd, Sd (nv, 6).  IC, BC and FC are per body; the backward sweeps
    accumulate them into composites."""
    S0, IC = ground_kinematics(m, q)
    BC, FC, Psid, Psidd, Sd = idsva_forward_sweep(m, S0, IC, v, a, bc_scale)
    return S0, IC, BC, FC, Psid, Psidd, Sd


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def idsva_forward_sweep(m, S0, IC, v, a, bc_scale):
    """:func:`idsva_forward_pass` after :func:`ground_kinematics` (S0, IC given): returns
    BC, FC, Psid, Psidd, Sd."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    BC = np.zeros((nj, 6, 6))
    FC = np.empty((nj, 6))
    Psid = np.empty((nv, 6))
    Psidd = np.empty((nv, 6))
    Sd = np.empty((nv, 6))
    idsva_forward_into(m, S0, IC, v, a, bc_scale, BC, FC, Psid, Psidd, Sd)
    return BC, FC, Psid, Psidd, Sd


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def idsva_forward_into(m, S0, IC, v, a, bc_scale, BC, FC, Psid, Psidd, Sd):
    """:func:`idsva_forward_sweep` into given arrays: BC (njoints, 6, 6, zero on entry), FC
    (njoints, 6) per body, Psid, Psidd, Sd (nv, 6)."""
    nj = m.parent.shape[0]
    shapes = ((nj, 6), (nj, 6), (6, 6), (6,))
    own = np.empty(extent(shapes))  # one allocation (dynamics.jit.carve), borrowed
    Vel, Acc, tmp66, tmp6 = carve(own, shapes)
    velocity_acceleration_pass(m, S0, IC, v, a, Vel, Acc, FC)
    motion_subspace_rates(m, S0, Vel, Acc, Psid, Psidd, Sd)
    for i in range(1, nj):
        body_coriolis_add(IC[i], Vel[i], tmp66, tmp6, BC[i])
        if bc_scale != 1.0:
            for r in range(6):
                for c in range(6):
                    BC[i, r, c] *= bc_scale
    keep_alive(own)


@njit(callee=True, cache=True, error_model="numpy")
def idsva_point(m, q, v, a, tau, dtau_dq, dtau_dv, M):
    """IDSVA: tau, dtau/dq (Lie derivatives along S), dtau/dqdot and M at one knot.

    For DoF p of joint i and DoF r of an ancestor-or-self joint j (paper eq. 12-13):
        dtau_p/dq_r    = t4.Psid_r + t1.Psidd_r                     (j <= i)
        dtau_r/dq_p    = S_r . t3                                   (j <  i)
        dtau_p/dqdot_r = t4.S_r + t1.(Psid_r + Sd_r)                (j <= i)
        dtau_r/dqdot_p = S_r . t2                                   (j <  i)
        M_pr = M_rp    = S_r . t1
    with t1 = IC S_p, t2 = 2 BC S_p + IC (Psid_p + Sd_p), t3 = 2 BC Psid_p + IC Psidd_p + S_p x* fC,
    t4 = 2 BC^T S_p, where IC, BC, fC are the composite inertia, body-Coriolis matrix and force of
    the subtree rooted at i.
    """
    S0, IC = ground_kinematics(m, q)
    idsva_sweeps(m, S0, IC, v, a, tau, dtau_dq, dtau_dv, M)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def idsva_sweeps(m, S0, IC, v, a, tau, dtau_dq, dtau_dv, M):
    """:func:`idsva_point` after :func:`ground_kinematics` (S0 and IC given; IC is
    accumulated into the composite inertias)."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    shapes = ((nj, 6, 6), (nj, 6), (nv, 6), (nv, 6), (nv, 6), (nv, 4, 6))
    own = np.empty(extent(shapes))  # one allocation (dynamics.jit.carve), borrowed
    BC, FC, Psid, Psidd, Sd, dof_forces = carve(own, shapes)
    BC[:, :, :] = 0.0
    idsva_forward_into(m, S0, IC, v, a, 1.0, BC, FC, Psid, Psidd, Sd)
    idsva_backward_sweep(m, S0, IC, BC, FC, Psid, Psidd, Sd, tau, dtau_dq, dtau_dv, M,
                         dof_forces)
    add_armature(m, a, tau, M)
    keep_alive(own)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def idsva_backward_sweep(m, S0, IC, BC, FC, Psid, Psidd, Sd, tau, dtau_dq, dtau_dv, M, dof_forces):
    """IDSVA's backward sweep after its forward sweep (:func:`idsva_forward_into`, bc_scale 1):
    IC, BC, FC are accumulated in place into the composites of the subtrees, and the terms
    t1, t4, t3, t2 of every DoF are kept in ``dof_forces`` (nv, 4, 6): what the contracted
    IDSVA-SO at the same point can take (:func:`~.second_order.idsva_so_contracted_sweep`: its
    w0, w4, w5, w7)."""
    nj = m.parent.shape[0]
    own = np.empty(36)  # the work arrays: one allocation (dynamics.jit.carve), borrowed
    tmp6, t1, t2, t3, t4, w = carve(own, ((6,), (6,), (6,), (6,), (6,), (6,)))
    composite_sums(m, IC, BC, FC)  # a joint reads its whole subtree's sums only
    for i in range(nj - 1, 0, -1):
        for p in range(m.iv[i], m.iv[i] + m.nvj[i]):
            tau[p] = dot6(S0[p], FC[i])
            matvec6(IC[i], S0[p], t1)
            # t2 = 2 BC S_p + IC (Psid_p + Sd_p)
            for r in range(6):
                w[r] = Psid[p, r] + Sd[p, r]
            matvec6(IC[i], w, t2)
            matvec6(BC[i], S0[p], tmp6)
            for r in range(6):
                t2[r] += 2.0 * tmp6[r]
            # t3 = 2 BC Psid_p + IC Psidd_p + S_p x* fC
            matvec6(IC[i], Psidd[p], t3)
            matvec6(BC[i], Psid[p], tmp6)
            for r in range(6):
                t3[r] += 2.0 * tmp6[r]
            force_cross_add(S0[p], FC[i], t3)
            # t4 = 2 BC^T S_p
            matTvec6(BC[i], S0[p], t4)
            for r in range(6):
                t4[r] *= 2.0
            for r in range(6):
                dof_forces[p, 0, r] = t1[r]
                dof_forces[p, 1, r] = t4[r]
                dof_forces[p, 2, r] = t3[r]
                dof_forces[p, 3, r] = t2[r]
            # tuples: held in registers, they cannot alias the outputs (no reload after stores)
            u1, u2, u3, u4 = tup6(t1), tup6(t2), tup6(t3), tup6(t4)
            j = i
            while j > 0:
                for r in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    sr, pdr, pddr, sdr = tup6(S0[r]), tup6(Psid[r]), tup6(Psidd[r]), tup6(Sd[r])
                    dtau_dq[p, r] = dot6(u4, pdr) + dot6(u1, pddr)
                    dtau_dv[p, r] = dot6(u4, sr) + dot6(u1, pdr) + dot6(u1, sdr)
                    x = dot6(sr, u1)
                    M[p, r] = x
                    M[r, p] = x
                    if j != i:
                        dtau_dq[r, p] = dot6(sr, u3)
                        dtau_dv[r, p] = dot6(sr, u2)
                j = m.parent[j]
    keep_alive(own)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def composite_sums(m, IC, BC, FC):
    """Accumulate the per-body IC, BC, FC of :func:`idsva_forward_into` in place into the
    composites of the subtrees (what :func:`idsva_backward_sweep` leaves)."""
    for i in range(m.parent.shape[0] - 1, 0, -1):
        lam = m.parent[i]
        if lam > 0:
            for r in range(6):
                FC[lam, r] += FC[i, r]
                for c in range(6):
                    IC[lam, r, c] += IC[i, r, c]
                    BC[lam, r, c] += BC[i, r, c]


@njit(cache=True, error_model="numpy")
def rnea_chunk(ints, floats, Q, V, A, out, chunk, nchunks):
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        rnea_point(m, Q[t], V[t], A[t], out[t])


@njit(cache=True, error_model="numpy")
def rnea_batch(ints, floats, Q, V, A, out, chunks):
    """The door of :func:`rnea_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, A, out), chunks)


@njit(cache=True, error_model="numpy")
def crba_chunk(ints, floats, Q, out, chunk, nchunks):
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        out[t] = 0.0
        crba_point(m, Q[t], out[t])


@njit(cache=True, error_model="numpy")
def crba_batch(ints, floats, Q, out, chunks):
    """The door of :func:`crba_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, out), chunks)


@njit(cache=True, error_model="numpy")
def idsva_chunk(ints, floats, Q, V, A, tau, dq, dv, M, chunk, nchunks):
    m = unpack(ints, floats)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        dq[t] = 0.0
        dv[t] = 0.0
        M[t] = 0.0
        idsva_point(m, Q[t], V[t], A[t], tau[t], dq[t], dv[t], M[t])


@njit(cache=True, error_model="numpy")
def idsva_batch(ints, floats, Q, V, A, tau, dq, dv, M, chunks):
    """The door of :func:`idsva_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, A, tau, dq, dv, M), chunks)
