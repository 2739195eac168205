"""FDSVA-SO: second-order derivatives of forward dynamics from those of inverse dynamics
(second-order paper Sec. VI, eq. 44-52), compiled with numba.

Differentiating ID(x, FD(x, tau)) = tau twice (u = x_j first, w = x_k second, x = (q, v)):

    d2a[:, j, k] = -M^{-1} ( d2tau[:, j, k] + dM/dx_k da[:, j] + dM/dx_j da[:, k] )     (eq. 46)
                   `-Outer-´ `------------------- Inner-Term ---------------------´

with dM/dv = 0 (eq. 47-49) and d2a/dtau dq_k = dMinv/dq_k = -M^{-1} dM/dq_k M^{-1} (eq. 44).
The Inner-Term is formed by DTM (direct tensor-matrix products) or IDFOZA (eq. 52: IDSVA with
qdot = 0, no gravity and a = b returns dM/dq b, one column at a time); the Outer-Term by DTM
(M^{-1} times the tensor as one matrix product) or AZA (ABA-Zero-Algorithm per column).

Contracted with a co-state lam (what the DDP backward pass needs), with mu = M^{-1} lam and
G[m, k] = sum_l mu_l dM[l, m, k]:

    lam . d2a_dq2   = -(Hq(mu) + da_dq^T G + G^T da_dq)
    lam . d2a_dv2   = -Hv(mu)
    lam . d2a_dqdv  = -(Hqv(mu) + G^T da_dv)
    lam . d2a_dtaudq = -M^{-1} G

where H(mu) are the mu-weighted ID second derivatives, accumulated without forming any n^3 tensor
by :func:`~dynamics.kernels.second_order.idsva_so_contracted` (O(n d) pairs of DoFs + a few n^3
products instead of O(n^4)).
"""

import numpy as np

from ..jit import chunk_range, copy_into, in_parallel, njit
from .dense import gemm, gemm_tn
from .forward import IPR_LTDL, aza_apply, fdsva_core
from .inverse import idsva_point
from .packed_model import KernelModel, unpack
from .second_order import id_so_views, idsva_so_contracted, idsva_so_point

INNER_DTM, INNER_IDFOZA = 0, 1
OUTER_DTM, OUTER_AZA = 0, 1


@njit(callee=True, cache=True, error_model="numpy")
def _zero_gravity(m):
    return KernelModel(m.parent, m.jtype, m.axis, m.iq, m.nqj, m.iv, m.nvj, m.place_R, m.place_p,
                       m.mass, m.com, m.Icom, m.S_local, m.dof_parent, np.zeros(6), m.pitch,
                       m.armature)


@njit(callee=True, cache=True, error_model="numpy")
def idfoza(mz, q, b, out, zv, tau, dv, M):
    """IDFOZA (eq. 52): out[l, k] = sum_m dM[l, m, k] b_m, i.e. IDSVA at (q, 0, b) with the
    zero-gravity model ``mz``.  ``zv`` is a zero n-vector; tau, dv, M are scratch."""
    out[:, :] = 0.0
    dv[:, :] = 0.0
    M[:, :] = 0.0
    idsva_point(mz, q, zv, b, tau, out, dv, M)


@njit(cache=True, error_model="numpy")
def _first_order(m, q, v, tau, qdd, da_dq, da_dv, Minv, S0, U, Dinv):
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    M = np.zeros((nv, nv))
    dtq = np.zeros((nv, nv))
    dtv = np.zeros((nv, nv))
    IA = np.empty((nj, 6, 6))
    fdsva_core(m, q, v, tau, np.int64(IPR_LTDL), qdd, da_dq, da_dv, Minv, M, dtq, dtv, S0, IA, U,
               Dinv, np.empty((nj, 3, 3)), np.empty((nj, 3)))


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_so_point(m, q, v, tau, inner, outer, qdd, da_dq, da_dv, Minv, d2q, d2v, d2qv, d2t):
    """Full FDSVA-SO tensors at one knot (outputs overwritten, no need to zero them)."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    S0 = np.empty((nv, 6))
    U = np.empty((nv, 6))
    Dinv = np.empty((nv, 6))
    _first_order(m, q, v, tau, qdd, da_dq, da_dv, Minv, S0, U, Dinv)

    # ID second derivatives at (q, v, qdd), written straight into the outputs; dM kept aside
    dM = np.zeros((nv, nv, nv))
    d2q[:] = 0.0
    d2v[:] = 0.0
    d2qv[:] = 0.0
    t_id = np.empty(nv)
    z2 = np.zeros((3, nv, nv))
    idsva_so_point(m, q, v, qdd, t_id, z2[0], z2[1], z2[2], d2q, d2v, d2qv, dM)

    # Inner-Term
    if inner == INNER_DTM:
        P = np.empty((nv, nv))
        for l in range(nv):
            gemm_tn(dM[l], da_dq, P, 1.0, 0.0)  # P[k, j] = sum_m dM[l, m, k] da_dq[m, j]
            for r in range(nv):
                for c in range(nv):
                    d2q[l, r, c] += P[r, c] + P[c, r]
            gemm_tn(dM[l], da_dv, d2qv[l], 1.0, 1.0)
    else:
        mz = _zero_gravity(m)
        zv = np.zeros(nv)
        Y = np.empty((nv, nv))
        b = np.empty(nv)
        s_tau = np.empty(nv)
        s_dv = np.empty((nv, nv))
        s_M = np.empty((nv, nv))
        for j in range(nv):
            copy_into(b, da_dq[:, j])
            idfoza(mz, q, b, Y, zv, s_tau, s_dv, s_M)  # Y[l, k] = sum_m dM[l, m, k] da_dq[m, j]
            for l in range(nv):
                for k in range(nv):
                    d2q[l, j, k] += Y[l, k]
                    d2q[l, k, j] += Y[l, k]
            copy_into(b, da_dv[:, j])
            idfoza(mz, q, b, Y, zv, s_tau, s_dv, s_M)  # Y[l, i] = sum_m dM[l, m, i] da_dv[m, j]
            for l in range(nv):
                for i in range(nv):
                    d2qv[l, i, j] += Y[l, i]
    for l in range(nv):
        gemm(Minv, dM[l], d2t[l], 1.0)  # X[l, j, k] = sum_m Minv[j, m] dM[l, m, k]

    # Outer-Term: X <- -M^{-1} X over the first index
    if outer == OUTER_DTM:
        tmp = np.empty((nv, nv * nv))
        for X in (d2q, d2v, d2qv, d2t):
            X2 = X.reshape((nv, nv * nv))
            gemm(Minv, X2, tmp, -1.0)
            copy_into(X2, tmp)
    else:
        PA = np.empty((nj, 6))
        Acc = np.empty((nj, 6))
        bb = np.empty(nv)
        x = np.empty(nv)
        for X in (d2q, d2v, d2qv, d2t):
            for j in range(nv):
                for k in range(nv):
                    for l in range(nv):
                        bb[l] = -X[l, j, k]
                    aza_apply(m, S0, U, Dinv, bb, x, PA, Acc)
                    for l in range(nv):
                        X[l, j, k] = x[l]


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_so_lam_point(m, q, v, tau, lam, qdd, da_dq, da_dv, Minv, Lq, Lv, Lqv, Lt):
    """FDSVA-SO contracted with the co-state ``lam`` at one knot: the (n, n) matrices
    Lq = sum_i lam_i d2a_dq2[i], Lv, Lqv, Lt (= sum_i lam_i dMinv_i./dq), after the first-order
    FDSVA (qdd, da_dq, da_dv, Minv, overwritten)."""
    nv = m.S_local.shape[0]
    S0 = np.empty((nv, 6))
    U = np.empty((nv, 6))
    Dinv = np.empty((nv, 6))
    _first_order(m, q, v, tau, qdd, da_dq, da_dv, Minv, S0, U, Dinv)
    fdsva_so_lam_core(m, q, v, qdd, da_dq, da_dv, Minv, lam, Lq, Lv, Lqv, Lt)


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_so_lam_core(m, q, v, qdd, da_dq, da_dv, Minv, lam, Lq, Lv, Lqv, Lt):
    """:func:`fdsva_so_lam_point` given the first-order FDSVA of the knot (qdd (n,), da_dq,
    da_dv, Minv (n, n)): the contracted IDSVA-SO sweep at (q, v, qdd) and its chain rule alone.
    ``Lt`` = -Minv G (:func:`fdsva_so_lam_terms`)."""
    nv = m.S_local.shape[0]
    G = np.empty((nv, nv))
    fdsva_so_lam_terms(m, q, v, qdd, da_dq, da_dv, Minv, lam, Lq, Lv, Lqv, G)
    gemm(Minv, G, Lt, -1.0)


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_so_lam_terms(m, q, v, qdd, da_dq, da_dv, Minv, lam, Lq, Lv, Lqv, G):
    """Lq, Lv, Lqv of :func:`fdsva_so_lam_core`, and G (n, n), G[j, k] = sum_i mu_i dM[i, j, k]
    with mu = Minv lam, so that Lt = -Minv G.  A DDP backward pass calls this with what its
    derivative phase already computed, and needs Lt only as Lt^T B = -G^T (Minv B), which
    saves the n^3 product Minv G."""
    nv = m.S_local.shape[0]
    mu = np.zeros(nv)
    for i in range(nv):
        for j in range(nv):
            mu[i] += Minv[i, j] * lam[j]
    Hq = np.zeros((nv, nv))
    Hv = np.zeros((nv, nv))
    Hqv = np.zeros((nv, nv))
    G[:, :] = 0.0
    idsva_so_contracted(m, q, v, qdd, mu, Hq, Hv, Hqv, G)
    GT_daq = np.empty((nv, nv))
    gemm_tn(G, da_dq, GT_daq, 1.0, 0.0)
    for r in range(nv):
        for c in range(nv):
            Lq[r, c] = -(Hq[r, c] + GT_daq[c, r] + GT_daq[r, c])
            Lv[r, c] = -Hv[r, c]
            Lqv[r, c] = -Hqv[r, c]
    gemm_tn(G, da_dv, Lqv, -1.0, 1.0)


def fd_lam_size(T, nv):
    return T * (nv + 7 * nv * nv)


@njit(cache=True, error_model="numpy")
def fd_lam_views(buf, T, nv):
    """a (T, n) and seven (T, n, n) blocks: da_dq, da_dv, da_dtau, Lq, Lv, Lqv, Lt."""
    n2 = nv * nv
    a = buf[:T * nv].reshape((T, nv))
    o = T * nv
    mats = []
    for _ in range(7):
        mats.append(buf[o:o + T * n2].reshape((T, nv, nv)))
        o += T * n2
    return a, mats[0], mats[1], mats[2], mats[3], mats[4], mats[5], mats[6]


@njit(cache=True, error_model="numpy")
def fdsva_so_chunk(ints, floats, Q, V, TAU, inner, outer, buf, chunk, nchunks):
    """Full FDSVA-SO at the knots of chunk ``chunk`` of ``nchunks``, in place into ``buf`` (layout
    of ``id_so_views``)."""
    m = unpack(ints, floats)
    a, dq, dv, Minv, d2q, d2v, d2qv, d2t = id_so_views(buf, Q.shape[0], ints[1])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        fdsva_so_point(m, Q[t], V[t], TAU[t], inner, outer, a[t], dq[t], dv[t], Minv[t], d2q[t],
                       d2v[t], d2qv[t], d2t[t])


@njit(cache=True, error_model="numpy")
def fdsva_so_batch(ints, floats, Q, V, TAU, inner, outer, buf, chunks):
    """The door of :func:`fdsva_so_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, inner, outer, buf), chunks)


@njit(cache=True, error_model="numpy")
def fdsva_so_lam_chunk(ints, floats, Q, V, TAU, LAM, buf, chunk, nchunks):
    """Contracted FDSVA-SO at the knots of chunk ``chunk`` of ``nchunks``, in place into ``buf``
    (layout of ``fd_lam_views``)."""
    m = unpack(ints, floats)
    a, dq, dv, Minv, Lq, Lv, Lqv, Lt = fd_lam_views(buf, Q.shape[0], ints[1])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        fdsva_so_lam_point(m, Q[t], V[t], TAU[t], LAM[t], a[t], dq[t], dv[t], Minv[t], Lq[t],
                           Lv[t], Lqv[t], Lt[t])


@njit(cache=True, error_model="numpy")
def fdsva_so_lam_batch(ints, floats, Q, V, TAU, LAM, buf, chunks):
    """The door of :func:`fdsva_so_lam_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, LAM, buf), chunks)
