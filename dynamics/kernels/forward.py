"""Forward dynamics and its first-order derivatives (ground frame), compiled with numba.

* ``aba_point``: the Articulated-Body Algorithm.  It also leaves behind, per DoF, U_k = IA S_k and
  per joint D^{-1} (stored row-wise in ``Dinv[k, :nv_i]``), which depend on q only; with them the
  ABA-Zero-Algorithm (AZA: ABA with qdot = 0 and no gravity) applies M^{-1} to a vector in O(N).
* ``ltdl_factor`` / ``ltdl_solve_rows``: M = L^T D L with branch-induced sparsity (Featherstone,
  RBDA Sec. 6.5), O(n d^2) to factor and O(n d) per right-hand side, d the depth of the tree in DoFs.
* ``fdsva_core``: FDSVA (first-order paper Sec. IV): a = ABA(q, qdot, tau), then IDSVA at
  (q, qdot, a) (both on one forward kinematics), then the inverse-partial relation (IPR)
      da/dq = -M^{-1} dtau/dq,   da/dqdot = -M^{-1} dtau/dqdot,   da/dtau = M^{-1},
  applied with a dense matrix product against M^{-1} (DMM), column by column with AZA, or as one
  block solve with the sparse factor of M (LTDL).
"""

import numpy as np

from ..jit import borrowed, carve, chunk_range, copy_into, extent, in_parallel, keep_alive, njit
from .dense import gemm
from .inverse import crba_point, idsva_sweeps, kinematics_and_inertias
from .packed_model import unpack
from .spatial import dot6, force_cross, matvec6, motion_cross

IPR_DMM = 0  # dense product with M^{-1}
IPR_AZA = 1  # ABA-Zero-Algorithm, column by column
IPR_LTDL = 2  # block solve with the sparse L^T D L factor of M


@njit(callee=True, cache=True, error_model="numpy")
def small_spd_inverse(D, n, out):
    """out[:n, :n] = inverse of the leading n x n block of the SPD matrix D (n <= 6) by
    Gauss-Jordan elimination (no pivoting needed), without allocating: D is overwritten."""
    for r in range(n):
        for c in range(n):
            out[r, c] = 1.0 if r == c else 0.0
    for c in range(n):
        piv = D[c, c]
        for k in range(n):
            D[c, k] /= piv
            out[c, k] /= piv
        for r in range(n):
            if r != c:
                f = D[r, c]
                if f != 0.0:
                    for k in range(n):
                        D[r, k] -= f * D[c, k]
                        out[r, k] -= f * out[c, k]


@njit(callee=True, cache=True, error_model="numpy")
def aba_point(m, q, v, tau, qdd, S0, I0, U, Dinv):
    """ABA at one knot.  ``S0`` and ``I0`` are filled by the kinematics; ``U`` (nv, 6) and ``Dinv``
    (nv, 6) are left for :func:`aza_apply`."""
    nj = m.parent.shape[0]
    oR = np.empty((nj, 3, 3))
    op = np.empty((nj, 3))
    kinematics_and_inertias(m, q, oR, op, S0, I0)  # I0 becomes the articulated inertia IA
    aba_sweeps(m, v, tau, qdd, S0, I0, U, Dinv)


@njit(cache=True, error_model="numpy", inline="always")
def aba_sweeps(m, v, tau, qdd, S0, I0, U, Dinv):
    """:func:`aba_point` after :func:`~dynamics.kernels.inverse.kinematics_and_inertias` (S0 and
    the ground-frame inertias I0 given; I0 becomes the articulated inertias)."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    # the work arrays: one allocation (dynamics.jit.carve), borrowed
    shapes = ((nj, 6), (nj, 6), (nj, 6), (nj, 6), (nv,), (6,), (6,), (6, 6), (6, 6), (6,), (6,),
              (6,))
    own = np.empty(extent(shapes))
    Vel, C, PA, Acc, u, vJ, h, D, Ia, pa, Du, w = carve(own, shapes)
    for r in range(6):
        Vel[0, r] = 0.0
    for i in range(1, nj):
        lam = m.parent[i]
        for r in range(6):
            vJ[r] = 0.0
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            for r in range(6):
                vJ[r] += S0[k, r] * v[k]
        for r in range(6):
            Vel[i, r] = Vel[lam, r] + vJ[r]
        motion_cross(Vel[i], vJ, C[i])
        matvec6(I0[i], Vel[i], h)
        force_cross(Vel[i], h, PA[i])
    for i in range(nj - 1, 0, -1):
        i0, ni = m.iv[i], m.nvj[i]
        lam = m.parent[i]
        if ni == 1:  # a one-DoF joint (most of a robot): D^-1 is a scalar, no temporaries
            Ui, Si, Ii = U[i0], S0[i0], I0[i]
            matvec6(Ii, Si, Ui)
            dinv = 1.0 / (dot6(Si, Ui) + m.armature[i0])
            Dinv[i0, 0] = dinv
            u[i0] = tau[i0] - dot6(Si, PA[i])
            if lam == 0:
                continue
            # IA_lam += IA - U U^T / D ;  pA_lam += pA + (IA - U U^T / D) c + U u / D
            f = dinv * (u[i0] - dot6(Ui, C[i]))
            matvec6(Ii, C[i], pa)
            Il = I0[lam]
            for r in range(6):
                PA[lam, r] += PA[i, r] + pa[r] + Ui[r] * f
                ur = Ui[r] * dinv
                for c in range(6):
                    Il[r, c] += Ii[r, c] - ur * Ui[c]
            continue
        for a_ in range(ni):
            k = i0 + a_
            matvec6(I0[i], S0[k], U[k])
            u[k] = tau[k] - dot6(S0[k], PA[i])
        for a_ in range(ni):
            for b in range(ni):
                D[a_, b] = dot6(S0[i0 + a_], U[i0 + b])
            D[a_, a_] += m.armature[i0 + a_]
        small_spd_inverse(D, ni, Dinv[i0:i0 + ni])
        if lam == 0:
            continue
        # Ia = IA - U Dinv U^T ;  pa = pA + Ia c + U Dinv u
        for r in range(6):
            for c in range(6):
                Ia[r, c] = I0[i, r, c]
        for a_ in range(ni):
            s = 0.0
            for b in range(ni):
                s += Dinv[i0 + a_, b] * u[i0 + b]
            Du[a_] = s
        for a_ in range(ni):
            for r in range(6):
                w[r] = 0.0
                for b in range(ni):
                    w[r] += U[i0 + b, r] * Dinv[i0 + b, a_]
            for r in range(6):
                for c in range(6):
                    Ia[r, c] -= w[r] * U[i0 + a_, c]
        matvec6(Ia, C[i], pa)
        for r in range(6):
            pa[r] += PA[i, r]
            for a_ in range(ni):
                pa[r] += U[i0 + a_, r] * Du[a_]
            PA[lam, r] += pa[r]
            for c in range(6):
                I0[lam, r, c] += Ia[r, c]
    for r in range(6):
        Acc[0, r] = -m.gravity[r]
    for i in range(1, nj):
        lam = m.parent[i]
        i0, ni = m.iv[i], m.nvj[i]
        for r in range(6):
            w[r] = Acc[lam, r] + C[i, r]
        if ni == 1:
            a1 = Dinv[i0, 0] * (u[i0] - dot6(U[i0], w))
            qdd[i0] = a1
            for r in range(6):
                Acc[i, r] = w[r] + S0[i0, r] * a1
            continue
        for a_ in range(ni):
            Du[a_] = u[i0 + a_] - dot6(U[i0 + a_], w)
        for a_ in range(ni):
            s = 0.0
            for b in range(ni):
                s += Dinv[i0 + a_, b] * Du[b]
            qdd[i0 + a_] = s
        for r in range(6):
            Acc[i, r] = w[r]
            for a_ in range(ni):
                Acc[i, r] += S0[i0 + a_, r] * qdd[i0 + a_]
    keep_alive(own)


@njit(callee=True, cache=True, error_model="numpy")
def aza_apply(m, S0, U, Dinv, b, x, PA, Acc):
    """x = M^{-1} b with the ABA-Zero-Algorithm (qdot = 0, no gravity), reusing U and Dinv from
    :func:`aba_point`.  ``PA`` and ``Acc`` are (njoints, 6) scratch arrays."""
    nj = m.parent.shape[0]
    u = np.empty(6)
    Du = np.empty(6)
    for i in range(nj):
        for r in range(6):
            PA[i, r] = 0.0
    for i in range(nj - 1, 0, -1):
        i0, ni = m.iv[i], m.nvj[i]
        for a_ in range(ni):
            u[a_] = b[i0 + a_] - dot6(S0[i0 + a_], PA[i])
        lam = m.parent[i]
        # remember u in x for the outward sweep
        for a_ in range(ni):
            x[i0 + a_] = u[a_]
        if lam == 0:
            continue
        for a_ in range(ni):
            s = 0.0
            for c in range(ni):
                s += Dinv[i0 + a_, c] * u[c]
            Du[a_] = s
        for r in range(6):
            s = PA[i, r]
            for a_ in range(ni):
                s += U[i0 + a_, r] * Du[a_]
            PA[lam, r] += s
    for r in range(6):
        Acc[0, r] = 0.0
    for i in range(1, nj):
        lam = m.parent[i]
        i0, ni = m.iv[i], m.nvj[i]
        for a_ in range(ni):
            Du[a_] = x[i0 + a_] - dot6(U[i0 + a_], Acc[lam])
        for a_ in range(ni):
            s = 0.0
            for c in range(ni):
                s += Dinv[i0 + a_, c] * Du[c]
            x[i0 + a_] = s
        for r in range(6):
            s = Acc[lam, r]
            for a_ in range(ni):
                s += S0[i0 + a_, r] * x[i0 + a_]
            Acc[i, r] = s


@njit(callee=True, cache=True, error_model="numpy")
def ltdl_factor(m, H):
    """In place: H = M (lower triangle read) becomes L (strictly lower, unit diagonal implied) and
    D (diagonal) with M = L^T D L, following the DoF-parent array ``m.dof_parent``."""
    n = H.shape[0]
    lp = m.dof_parent
    for k in range(n - 1, -1, -1):
        i = lp[k]
        while i >= 0:
            a = H[k, i] / H[k, k]
            j = i
            while j >= 0:
                H[i, j] -= a * H[k, j]
                j = lp[j]
            H[k, i] = a
            i = lp[i]


@njit(callee=True, cache=True, error_model="numpy")
def ltdl_solve_rows(m, H, B):
    """In place: B <- M^{-1} B for a block of right-hand sides B (n, k), with the factor from
    :func:`ltdl_factor`.  Each elimination step is a contiguous row operation on B (vectorized)."""
    n, k = B.shape
    lp = m.dof_parent
    for i in range(n - 1, -1, -1):
        j = lp[i]
        while j >= 0:
            h = H[i, j]
            for c in range(k):
                B[j, c] -= h * B[i, c]
            j = lp[j]
    for i in range(n):
        d = 1.0 / H[i, i]
        for c in range(k):
            B[i, c] *= d
    for i in range(n):
        j = lp[i]
        while j >= 0:
            h = H[i, j]
            for c in range(k):
                B[i, c] -= h * B[j, c]
            j = lp[j]


@njit(callee=True, cache=True, error_model="numpy")
def minv_from_factor(m, H, Minv):
    """Minv = M^{-1} from the L^T D L factor H."""
    n = H.shape[0]
    for r in range(n):
        for c in range(n):
            Minv[r, c] = 0.0
        Minv[r, r] = 1.0
    ltdl_solve_rows(m, H, Minv)


@njit(callee=True, cache=True, error_model="numpy")
def minv_from_mass_matrix(m, M, Minv):
    """Minv = M^{-1} via the sparse L^T D L factorization (M is left untouched)."""
    H = M.copy()
    ltdl_factor(m, H)
    minv_from_factor(m, H, Minv)


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_workspace(nj, nv):
    """The work arrays of :func:`fdsva_core` for a thread, in its argument order: M, dtau_dq,
    dtau_dv (nv, nv) (to be zeroed before each call), S0 (nv, 6), IA (nj, 6, 6), U, Dinv
    (nv, 6), oR (nj, 3, 3), op (nj, 3)."""
    return (np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, 6)),
            np.empty((nj, 6, 6)), np.empty((nv, 6)), np.empty((nv, 6)), np.empty((nj, 3, 3)),
            np.empty((nj, 3)))


@njit(callee=True, cache=True, error_model="numpy")
def fdsva_core(m, q, v, tau, ipr, qdd, da_dq, da_dv, Minv, M, dtau_dq, dtau_dv, S0, IA, U, Dinv,
               oR, op):
    """FDSVA at one knot: qdd, da/dq, da/dqdot, Minv (= da/dtau); also leaves M and the ID
    derivatives at (q, qdot, qdd) in the given arrays (M, dtau_dq, dtau_dv zero on entry).  The
    ABA work arrays S0, IA, U, Dinv (see :func:`aba_point`) are supplied by the caller, who may
    reuse S0, U and Dinv afterwards for :func:`aza_apply`; so are oR, op, which, with S0, keep the
    forward kinematics of q (the knot's costs use them)."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    # arguments and work arrays as borrowed views (dynamics.jit: no reference counting)
    q, v, tau, qdd, da_dq, da_dv, Minv = borrowed((q, v, tau, qdd, da_dq, da_dv, Minv))
    M, dtau_dq, dtau_dv, S0, IA, U, Dinv = borrowed((M, dtau_dq, dtau_dv, S0, IA, U, Dinv))
    oR, op = borrowed((oR, op))
    nb = nv if ipr == IPR_LTDL else 0
    shapes = ((nv,), (nj, 6, 6), (nv, nv), (nb, 2 * nb))
    work = np.empty(extent(shapes))  # one allocation (dynamics.jit.carve)
    tau_id, IC, H, B = carve(work, shapes)
    kinematics_and_inertias(m, q, oR, op, S0, IC)  # once, for ABA and IDSVA
    copy_into(IA, IC)
    aba_sweeps(m, v, tau, qdd, S0, IA, U, Dinv)
    idsva_sweeps(m, S0, IC, v, qdd, tau_id, dtau_dq, dtau_dv, M)
    copy_into(H, M)
    ltdl_factor(m, H)
    minv_from_factor(m, H, Minv)
    if ipr == IPR_DMM:
        gemm(Minv, dtau_dq, da_dq, -1.0)
        gemm(Minv, dtau_dv, da_dv, -1.0)
    elif ipr == IPR_LTDL:
        for r in range(nv):
            for c in range(nv):
                B[r, c] = -dtau_dq[r, c]
                B[r, nv + c] = -dtau_dv[r, c]
        ltdl_solve_rows(m, H, B)
        for r in range(nv):
            for c in range(nv):
                da_dq[r, c] = B[r, c]
                da_dv[r, c] = B[r, nv + c]
    else:
        PA = np.empty((nj, 6))
        Acc = np.empty((nj, 6))
        b = np.empty(nv)
        x = np.empty(nv)
        for src in range(2):
            J = dtau_dq if src == 0 else dtau_dv
            out = da_dq if src == 0 else da_dv
            for k in range(nv):
                for r in range(nv):
                    b[r] = -J[r, k]
                aza_apply(m, S0, U, Dinv, b, x, PA, Acc)
                for r in range(nv):
                    out[r, k] = x[r]
    keep_alive(work)


@njit(cache=True, error_model="numpy")
def aba_chunk(ints, floats, Q, V, TAU, out, chunk, nchunks):
    nj = ints[0]
    nv = ints[1]
    m = unpack(ints, floats)
    S0 = np.empty((nv, 6))
    IA = np.empty((nj, 6, 6))
    U = np.empty((nv, 6))
    Dinv = np.empty((nv, 6))
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        aba_point(m, Q[t], V[t], TAU[t], out[t], S0, IA, U, Dinv)


@njit(cache=True, error_model="numpy")
def aba_batch(ints, floats, Q, V, TAU, out, chunks):
    """The door of :func:`aba_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, out), chunks)


@njit(cache=True, error_model="numpy")
def minv_chunk(ints, floats, Q, out, chunk, nchunks):
    """M^{-1} at the knots of chunk ``chunk`` of ``nchunks`` into out (T, nv, nv): CRBA, then the
    sparse L^T D L factorization."""
    m = unpack(ints, floats)
    nv = ints[1]
    M = np.empty((nv, nv))
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        M[:, :] = 0.0
        crba_point(m, Q[t], M)
        minv_from_mass_matrix(m, M, out[t])


@njit(cache=True, error_model="numpy")
def minv_batch(ints, floats, Q, out, chunks):
    """The door of :func:`minv_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, out), chunks)


@njit(cache=True, error_model="numpy")
def fdsva_batch(ints, floats, Q, V, TAU, ipr, qdd, da_dq, da_dv, Minv, chunks):
    """The door of :func:`fdsva_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, TAU, ipr, qdd, da_dq, da_dv, Minv), chunks)


@njit(cache=True, error_model="numpy")
def fdsva_chunk(ints, floats, Q, V, TAU, ipr, qdd, da_dq, da_dv, Minv, chunk, nchunks):
    """:func:`fdsva_core` at the knots of chunk ``chunk`` of ``nchunks`` into qdd (T, nv),
    da_dq, da_dv, Minv (T, nv, nv), with work arrays of its own."""
    m = unpack(ints, floats)
    nj = ints[0]
    nv = ints[1]
    M, dq, dv, S0, IA, U, Dinv, oR, op = fdsva_workspace(nj, nv)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        M[:, :] = 0.0
        dq[:, :] = 0.0
        dv[:, :] = 0.0
        fdsva_core(m, Q[t], V[t], TAU[t], ipr, qdd[t], da_dq[t], da_dv[t], Minv[t], M, dq, dv, S0,
                   IA, U, Dinv, oR, op)
