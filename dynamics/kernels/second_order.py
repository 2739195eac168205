"""IDSVA-SO: analytical second-order derivatives of inverse dynamics (Singh, Russell & Wensing,
"On Second-Order Derivatives of Rigid-Body Dynamics", Alg. 1 and App. C), ground frame, any joint
of :mod:`dynamics.kernels.kinematics` (multi-DoF included), fixed or floating base.

Outputs, for n = nv, all (n, n, n) with ``T[i, j, k] = L_{x_k}(L_{x_j} tau_i)``:

* ``d2q[i, j, k]  = d/dq_k (dtau_i/dq_j)``     (Lie derivatives along the joint motion subspaces)
* ``d2v[i, j, k]  = d^2 tau_i / dv_j dv_k``
* ``d2qv[i, j, k] = d/dv_k (dtau_i/dq_j)``
* ``dM[i, j, k]   = dM_ij / dq_k``

The remaining second derivatives follow by construction and are not stored: tau is affine in the
acceleration a, so d2tau/da2 = 0 and d2tau/dadv = 0, and d2tau/da_j dq_k = dM_ij/dq_k = dM[:, j, k].
The first-order fields (tau, dtau/dq, dtau/dv, M) come out of the same sweep: the IDSVA terms
t1..t4 are among Alg. 1's common terms (t1 = w0, t2 = w7, t3 = w5, t4 = w4 below).

Implementation notes (identities used to trim Alg. 1; B without the 1/2, as in the paper):
for DoF p of joint i with s = S_p, I = I_i^C, B = B_i^C, f = f_i^C,

    A0 = (I s) xbar*            antisymmetric, applied as  A0 x = x x* (I s)
    A1 = (s x*) I - I (s x)     symmetric (I symmetric)
    B(I, s) = A1 + A0,  A2 = A0 - A1,  A3 = B(I, psid) + (s x*) B - B (s x)
    A4, A5, A7 = (w4, w5, w7) xbar*  with  w4 = B^T s,  w5 = B psid + I psidd + s x* f,
                                           w7 = B s + I (psid + sd)
so that u2 = u12 = A1 s_t, u8 = u5, u10 = A1 s_t + u9, u11 = A1 s_t - u9, and the Psid + Sd
of every DoF is formed once.
"""

import numpy as np

from ..jit import carve, chunk_range, extent, in_parallel, keep_alive, njit
from .inverse import add_armature, composite_sums, idsva_forward_pass
from .packed_model import unpack
from .spatial import (add_force_bar, dot6, force_cross, force_cross_add, matTvec6, matvec6,
                      motion_cross, row6, tup6)


@njit(cache=True, error_model="numpy", inline="always")
def _sym_from_forcecross(s, I, tmp, out):
    """out = X + X^T with X = (s x*) I  (= (s x*) I - I (s x) for symmetric I)."""
    for c in range(6):
        force_cross(s, I[:, c], tmp[:, c])
    for r in range(6):
        for c in range(6):
            out[r, c] = tmp[r, c] + tmp[c, r]


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def _dof_forces(I, B, f, s, psd, psdd, sd, w0, w4, w5, w7):
    """The forces of Alg. 1 that depend on DoF p alone (s = S_p, I, B, f: the composites of its
    joint): w0 = I s, w4 = B^T s, w5 = B psid + I psidd + s x* f, w7 = B s + I (psid + sd)."""
    matvec6(I, s, w0)
    for c in range(6):
        acc = 0.0
        for r in range(6):
            acc += B[r, c] * s[r]
        w4[c] = acc
    for r in range(6):
        acc5 = 0.0
        acc7 = 0.0
        for c in range(6):
            acc5 += B[r, c] * psd[c] + I[r, c] * psdd[c]
            acc7 += B[r, c] * s[c] + I[r, c] * (psd[c] + sd[c])
        w5[r] = acc5
        w7[r] = acc7
    force_cross_add(s, f, w5)


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def _dof_terms(I, B, f, s, psd, psdd, sd, w0, w4, w5, w7, A1, A3, tmp66, x6):
    """The forces of :func:`_dof_forces` and the 6x6 terms of DoF p, A1 = (s x*) I - I (s x)
    and A3 = B(I, psid) + (s x*) B - B (s x)."""
    _dof_forces(I, B, f, s, psd, psdd, sd, w0, w4, w5, w7)
    _sym_from_forcecross(s, I, tmp66, A1)
    # A3 = B(I, psid) + (s x*) B - B (s x), B(I, psid) = X + X^T + (I psid) xbar*
    _sym_from_forcecross(psd, I, tmp66, A3)
    matvec6(I, psd, x6)
    add_force_bar(x6, 1.0, A3)
    for c in range(6):
        force_cross(s, B[:, c], tmp66[:, c])  # (s x*) B
    for r in range(6):
        for c in range(6):
            A3[r, c] += tmp66[r, c]
    for c in range(6):
        force_cross(s, B[c, :], tmp66[:, c])  # column c of (s x*) B^T
    for r in range(6):
        for c in range(6):
            A3[r, c] += tmp66[c, r]  # - B (s x) = ((s x*) B^T)^T


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def _dof_products(I, B, s, psd, C, IC_C, Bt_C, C1, C3, t6, u6, x6):
    """C1 = A1 C and C3 = A3^T C for DoF p (:func:`_dof_terms`) without forming A1 and A3,
    given I C and B^T C (``IC_C``, ``Bt_C``, the same for every DoF of a joint): with
    (v x*)^T = -(v x) and the antisymmetric (f xbar*)^T x = -(x x* f),

        A1 C   = s x* (I C) - I (s x C)
        A3^T C = psid x* (I C) - I (psid x C) - C x* (I psid) - B^T (s x C) + s x* (B^T C)

    (t6, u6, x6: scratch)."""
    motion_cross(s, C, t6)  # s x C
    matvec6(I, t6, u6)
    force_cross(s, IC_C, C1)
    for r in range(6):
        C1[r] -= u6[r]
    matTvec6(B, t6, u6)  # B^T (s x C)
    force_cross(psd, IC_C, C3)
    force_cross_add(s, Bt_C, C3)
    for r in range(6):
        C3[r] -= u6[r]
    motion_cross(psd, C, t6)
    matvec6(I, t6, u6)  # I (psid x C)
    matvec6(I, psd, x6)
    force_cross(C, x6, t6)  # C x* (I psid)
    for r in range(6):
        C3[r] -= u6[r] + t6[r]


@njit(callee=True, cache=True, error_model="numpy", forceinline=True)
def _pair_workspace():
    """Scratch of the pair loops of :func:`idsva_so_point`: tmp66, A1, A3 (6, 6) and w0, w4,
    w5, w7, x6 (6,)."""
    m66, v6 = np.empty((3, 6, 6)), np.empty((5, 6))  # two allocations, not eight
    return m66[0], m66[1], m66[2], v6[0], v6[1], v6[2], v6[3], v6[4]


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def idsva_so_point(m, q, v, a, tau, dtau_dq, dtau_dv, M, d2q, d2v, d2qv, dM):
    """IDSVA-SO at one knot.  All outputs must be zero on entry (only structurally non-zero
    entries are written, each once: Alg. 1 line 50 writes the dM pair twice when k == j; we write
    it once).  Their sums weighted over the output index are :func:`idsva_so_contracted`."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    S0, IC, BC, FC, Psid, Psidd, Sd = idsva_forward_pass(m, q, v, a, 2.0)  # B without the 1/2
    PsSd = np.empty((nv, 6))  # Psid + Sd
    tmp66, A1, A3, w0, w4, w5, w7, x6 = _pair_workspace()
    A1s = np.empty(6)
    A1pd = np.empty(6)
    u1 = np.empty(6)
    u3 = np.empty(6)
    u4 = np.empty(6)
    u5 = np.empty(6)
    u6 = np.empty(6)
    u7 = np.empty(6)
    u9 = np.empty(6)
    u11 = np.empty(6)

    # flat views of the (nv, nv, nv) outputs: T[x, y, z] is Tf[x * nv^2 + y * nv + z]
    d2qf = d2q.reshape(-1)
    d2vf = d2v.reshape(-1)
    d2qvf = d2qv.reshape(-1)
    dMf = dM.reshape(-1)
    nn = nv * nv

    for k in range(nv):
        for r in range(6):
            PsSd[k, r] = Psid[k, r] + Sd[k, r]
    composite_sums(m, IC, BC, FC)  # a joint reads its whole subtree's sums only

    for i in range(nj - 1, 0, -1):
        I = IC[i]
        B = BC[i]
        f = FC[i]
        for pa in range(m.iv[i], m.iv[i] + m.nvj[i]):
            s = S0[pa]
            psd = Psid[pa]
            psdd = Psidd[pa]
            sd = Sd[pa]
            tau[pa] = dot6(s, f)
            _dof_terms(I, B, f, s, psd, psdd, sd, w0, w4, w5, w7, A1, A3, tmp66, x6)

            j = i
            while j > 0:
                for pb in range(m.iv[j], m.iv[j] + m.nvj[j]):
                    st = S0[pb]
                    pdt = Psid[pb]
                    pddt = Psidd[pb]
                    sdt = Sd[pb]
                    # ---- first order (IDSVA) and the mass matrix: the same entries as the
                    # j-loop of inverse.idsva_point (t1..t4 = w0, w7, w5, w4).  Written out twice
                    # on purpose: a shared helper measured 30% slower here (ATLAS 116 -> 150 us)
                    # and ~20% slower in idsva_point, inlined or not.
                    dtau_dq[pa, pb] = dot6(w4, pdt) + dot6(w0, pddt)
                    dtau_dv[pa, pb] = dot6(w4, st) + dot6(w0, pdt) + dot6(w0, sdt)
                    mm = dot6(st, w0)
                    M[pa, pb] = mm
                    M[pb, pa] = mm
                    if j != i:
                        dtau_dq[pb, pa] = dot6(st, w5)
                        dtau_dv[pb, pa] = dot6(st, w7)
                    # ---- common terms of Alg. 1 (lines 29-36)
                    for r in range(6):
                        a1s = 0.0
                        a1pd = 0.0
                        a1pdd = 0.0
                        a1sd = 0.0
                        a3ts = 0.0
                        a3pd = 0.0
                        a3s = 0.0
                        ist = 0.0
                        for c in range(6):
                            a1 = A1[r, c]
                            a1s += a1 * st[c]
                            a1pd += a1 * pdt[c]
                            a1pdd += a1 * pddt[c]
                            a1sd += a1 * sdt[c]
                            a3ts += A3[c, r] * st[c]
                            a3pd += A3[r, c] * pdt[c]
                            a3s += A3[r, c] * st[c]
                            ist += I[r, c] * st[c]
                        A1s[r] = a1s
                        A1pd[r] = a1pd
                        u1[r] = a3ts
                        u3[r] = a3pd + a1pdd
                        u7[r] = a3s + a1pd + a1sd
                        x6[r] = ist
                    force_cross_add(st, w5, u3)                # u3 = A3 psd_t + A1 psdd_t + A5 s_t
                    force_cross(s, x6, u4)
                    force_cross_add(st, w0, u4)                # u4 = A6 s_t
                    force_cross(st, w0, u9)                    # u9 = A0 s_t
                    force_cross(pdt, w0, u5)
                    force_cross_add(st, w4, u5)                # u5 = u8 = A2 psd_t + A4 s_t
                    force_cross(pdt, w0, u6)
                    force_cross_add(st, w7, u6)                # u6 = B(I,s) psd_t + A7 s_t
                    for r in range(6):
                        u5[r] -= A1pd[r]
                        u6[r] += A1pd[r]
                        u11[r] = A1s[r] - u9[r]                # B(I, s)^T s_t
                    # u2 = u12 = A1s ; u10 = A1s + u9 (used as A1s.s_r + u9.s_r)
                    t_u1 = tup6(u1)
                    t_u3 = tup6(u3)
                    t_u4 = tup6(u4)
                    t_u5 = tup6(u5)
                    t_u6 = tup6(u6)
                    t_u7 = tup6(u7)
                    t_u9 = tup6(u9)
                    t_u11 = tup6(u11)
                    t_A1s = tup6(A1s)
                    k = j
                    while k > 0:
                        for pc in range(m.iv[k], m.iv[k] + m.nvj[k]):
                            sr = tup6(S0[pc])
                            pdr = tup6(Psid[pc])
                            pddr = tup6(Psidd[pc])
                            psr = tup6(PsSd[pc])
                            p1 = dot6(t_u11, pdr)
                            p2 = dot6(t_u5, pdr) + dot6(t_u9, pddr)
                            d2qf[pa * nn + pb * nv + pc] = p2
                            d2qvf[pa * nn + pc * nv + pb] = -p1
                            if j != i:
                                x = dot6(t_u1, pdr) + dot6(t_A1s, pddr)
                                d2qf[pb * nn + pc * nv + pa] = x
                                d2qf[pb * nn + pa * nv + pc] = x
                                d2qvf[pb * nn + pa * nv + pc] = dot6(t_u1, sr) + dot6(t_A1s, psr)
                                d2qvf[pb * nn + pc * nv + pa] = p1
                                y = dot6(t_u11, sr)
                                d2vf[pb * nn + pc * nv + pa] = y
                                d2vf[pb * nn + pa * nv + pc] = y
                                z = dot6(sr, t_A1s)
                                dMf[pc * nn + pb * nv + pa] = z
                                if k != j:  # for k == j the (t, r) loops visit both orders
                                    dMf[pb * nn + pc * nv + pa] = z
                            if k != j:
                                d2qf[pa * nn + pc * nv + pb] = p2
                                x3 = dot6(sr, t_u3)
                                d2qf[pc * nn + pa * nv + pb] = x3
                                y = -dot6(t_u11, sr)
                                d2vf[pa * nn + pb * nv + pc] = y
                                d2vf[pa * nn + pc * nv + pb] = y
                                d2qvf[pa * nn + pb * nv + pc] = dot6(sr, t_u5) + dot6(t_u9, psr)
                                d2qvf[pc * nn + pb * nv + pa] = dot6(sr, t_u6)
                                z2 = dot6(sr, t_u9)
                                dMf[pc * nn + pa * nv + pb] = z2
                                dMf[pa * nn + pc * nv + pb] = z2
                                if j != i:
                                    d2qf[pc * nn + pb * nv + pa] = x3
                                    d2qvf[pc * nn + pa * nv + pb] = dot6(sr, t_u7)
                                    y = dot6(sr, t_A1s) + z2  # u10 . s_r, u10 = A1 s_t + u9
                                    d2vf[pc * nn + pa * nv + pb] = y
                                    d2vf[pc * nn + pb * nv + pa] = y
                                else:
                                    d2vf[pc * nn + pb * nv + pa] = dot6(sr, t_u4)
                            else:
                                d2vf[pa * nn + pb * nv + pc] = -dot6(t_A1s, sr)
                        k = m.parent[k]
                j = m.parent[j]
    add_armature(m, a, tau, M)


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def idsva_so_contracted(m, q, v, a, mu, Hq, Hv, Hqv, G):
    """The IDSVA-SO tensors at one knot contracted over their output index with ``mu`` (nv,),
    without forming them: ``Hq[j, k] = sum_i mu_i d2q[i, j, k]``, likewise Hv, Hqv from d2v,
    d2qv, and ``G[j, k] = sum_i mu_i dM[i, j, k]`` (all (nv, nv), zero on entry).

    Alg. 1 visits every triple of DoFs (p, t, r) on one chain (p deepest, r shallowest) and
    writes each term to the output index p, t or r: O(n d^2) for depth d.  Each term is linear
    in one quantity of each DoF (of p: the 6x6 A1, A3 and the forces w0 ... w7 of
    :func:`_dof_terms`; of t and r: their motion vectors s, psid, psidd, sd), so contracted, the
    triple loop factors into pairs, with sums over the third DoF:

    * output at p (weight mu_p): the subtree sums  W0, W4, A1^ = sum_p mu_p (w0, w4, A1) over
      the DoFs p below each joint, then one pass over the pairs (t, r);
    * output at t (weight mu_t): sums over the t between r and p, i.e. A1 Delta, A3^T Delta with
      Delta = sum_t mu_t s_t = sigma_in(parent of p's joint) - sigma(r's joint);
    * output at r (weight mu_r): sigma(t's joint) = sum_r mu_r s_r over its strict ancestors
      (sigma_in: its own DoFs included), formed once down the tree; dotted through A1 sigma,
      A3^T sigma and (s_t x sigma) . w.

    So O(n d) pairs of DoFs.  For r on a strict ancestor joint of p, the outputs at r and at t
    land on the same entries, (p, r) and (r, p), and in their sum sigma enters only as
    sigma(r's joint) + Delta = C = sigma_in(parent of p's joint): A1 C and A3^T C are formed
    once per DoF p, and such a pair costs about ten dot products (ATLAS 42.7 -> 33.1 us a knot,
    Talos 65 -> 48 us, against taking the two outputs apart).  The pairs within p's own joint
    take A1 sigma and A3^T sigma with sigma(p's joint) = C too.  A1 C and A3^T C come from
    I C and B^T C, once per joint, without forming the 6x6 A1 and A3 of each DoF
    (:func:`_dof_products`), and the subtree sums of mu_p A1 add A1(sum_p mu_p s_p) once per
    joint (A1 is linear in s): HyQ 18.9 -> 17.5 us a knot.  Checked against the contraction
    of the full tensors (tests/test_forward_second_order.py)."""
    S0, IC, BC, FC, Psid, Psidd, Sd = idsva_forward_pass(m, q, v, a, 1.0)
    composite_sums(m, IC, BC, FC)
    idsva_so_contracted_sweep(m, S0, IC, BC, FC, Psid, Psidd, Sd, np.empty((0, 4, 6)), mu, Hq,
                              Hv, Hqv, G)


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def idsva_so_contracted_sweep(m, S0, IC, BC, FC, Psid, Psidd, Sd, dof_forces, mu, Hq, Hv, Hqv,
                              G):
    """:func:`idsva_so_contracted` given the forward pass at the point, with the composite
    inertias, body-Coriolis matrices (eq. 14, with its 1/2) and forces of every subtree (IC,
    BC, FC: what :func:`~.inverse.idsva_backward_sweep` leaves, read only), and the forces
    w0, w4, w5, w7 of every DoF (:func:`_dof_forces`) in ``dof_forces`` (nv, 4, 6) if it has
    rows (else formed here).  The contact dynamics keep them from their first derivatives at
    the same acceleration (IDSVA's t1, t4, t3, t2), so that their second order forms neither
    the forward pass nor the per-DoF forces again."""
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    kept = dof_forces.shape[0] > 0
    # every scratch array in one allocation, borrowed (dynamics.jit.carve)
    shapes = ((3, 6, 6), (19, 6), (4, nj, 6), (3, nv, 6), (nj, 6, 6))
    own = np.zeros(extent(shapes))
    m66, v6, per_joint, per_dof, A1h = carve(own, shapes)
    tmp66, A1, B = m66[0], m66[1], m66[2]
    w0, w4, w5, w7, x6 = v6[14], v6[15], v6[16], v6[17], v6[18]
    u4, C1, C3, IC_C, Bt_C, mi, t6, u6, dl, YB = (v6[0], v6[1], v6[2], v6[3], v6[4], v6[5],
                                                  v6[6], v6[7], v6[8], v6[9])
    x5, x9, x11, xa = v6[10], v6[11], v6[12], v6[13]
    # sigma of every joint's strict ancestors, and with its own DoFs (sigma_in); W0, W4 below
    sig, sig_in, W0, W4 = per_joint[0], per_joint[1], per_joint[2], per_joint[3]
    for j in range(1, nj):
        lam = m.parent[j]
        for r in range(6):
            sig[j, r] = sig_in[lam, r]
            sig_in[j, r] = sig[j, r]
        for pc in range(m.iv[j], m.iv[j] + m.nvj[j]):
            for r in range(6):
                sig_in[j, r] += mu[pc] * S0[pc, r]
    # per DoF t of joint j: s_t x sigma(j), psid_t x sigma(j), psid_t + sd_t
    cs, cpd, PsSd = per_dof[0], per_dof[1], per_dof[2]
    for j in range(1, nj):
        for pb in range(m.iv[j], m.iv[j] + m.nvj[j]):
            motion_cross(S0[pb], sig[j], cs[pb])
            motion_cross(Psid[pb], sig[j], cpd[pb])
            for r in range(6):
                PsSd[pb, r] = Psid[pb, r] + Sd[pb, r]

    for i in range(nj - 1, 0, -1):
        I = IC[i]
        for r in range(6):  # B without the 1/2
            for c in range(6):
                B[r, c] = 2.0 * BC[i, r, c]
        lam = m.parent[i]
        C = sig_in[lam]  # zero at the root; sig[i], the sigma of p's own joint, is the same
        matvec6(I, C, IC_C)
        matTvec6(B, C, Bt_C)
        mi[:] = 0.0
        for pa in range(m.iv[i], m.iv[i] + m.nvj[i]):
            s = S0[pa]
            if kept:
                for r in range(6):
                    w0[r] = dof_forces[pa, 0, r]
                    w4[r] = dof_forces[pa, 1, r]
                    w5[r] = dof_forces[pa, 2, r]
                    w7[r] = dof_forces[pa, 3, r]
            else:
                _dof_forces(I, B, FC[i], s, Psid[pa], Psidd[pa], Sd[pa], w0, w4, w5, w7)
            mua = mu[pa]
            for r in range(6):
                W0[i, r] += mua * w0[r]
                W4[i, r] += mua * w4[r]
                mi[r] += mua * s[r]
            _dof_products(I, B, s, Psid[pa], C, IC_C, Bt_C, C1, C3, t6, u6, x6)
            j = i
            while j > 0:
                sg = sig[j]
                if j == i:  # the DoFs of p's own joint: output at r only (sg = C)
                    for pb in range(m.iv[j], m.iv[j] + m.nvj[j]):
                        st, pdt, cst = row6(S0, pb), row6(Psid, pb), row6(cs, pb)
                        Hq[pa, pb] += dot6(C3, pdt) + dot6(C1, row6(Psidd, pb)) - dot6(cst, w5)
                        Hqv[pb, pa] += dot6(C1, pdt) - dot6(row6(cpd, pb), w0) - dot6(cst, w7)
                        G[pa, pb] -= dot6(cst, w0)
                        matvec6(I, st, x6)  # u4 = s x* (I s_t) + s_t x* w0
                        force_cross(s, x6, u4)
                        force_cross_add(st, w0, u4)
                        Hv[pb, pa] += dot6(sg, u4)
                else:  # an ancestor joint: outputs at r and at t land on the same entries
                    for r in range(6):
                        dl[r] = C[r] - sg[r]
                    force_cross(dl, w0, YB)
                    for r in range(6):
                        YB[r] = C1[r] - YB[r]
                    for pb in range(m.iv[j], m.iv[j] + m.nvj[j]):
                        st, pdt, cst = row6(S0, pb), row6(Psid, pb), row6(cs, pb)
                        x = dot6(C3, pdt) + dot6(C1, row6(Psidd, pb)) - dot6(cst, w5)
                        z2 = -dot6(cst, w0)
                        Hq[pa, pb] += x
                        Hq[pb, pa] += x
                        Hqv[pa, pb] += dot6(C3, st) + dot6(C1, row6(PsSd, pb))
                        Hqv[pb, pa] += dot6(YB, pdt) - dot6(row6(cpd, pb), w0) - dot6(cst, w7)
                        G[pa, pb] += z2
                        G[pb, pa] += dot6(C1, st)
                        y = dot6(YB, st) + z2
                        Hv[pa, pb] += y
                        Hv[pb, pa] += y
                j = m.parent[j]
        # A1 is linear in s: the joint's sum_p mu_p A1(s_p) is A1(sum_p mu_p s_p)
        _sym_from_forcecross(mi, I, tmp66, A1)
        for r in range(6):
            for c in range(6):
                A1h[i, r, c] += A1[r, c]
        if lam > 0:
            for r in range(6):
                W0[lam, r] += W0[i, r]
                W4[lam, r] += W4[i, r]
                for c in range(6):
                    A1h[lam, r, c] += A1h[i, r, c]

    # output at p: every DoF t with the DoFs r of its own joint and of its ancestors
    for j in range(1, nj):
        for pb in range(m.iv[j], m.iv[j] + m.nvj[j]):
            st = S0[pb]
            force_cross(st, W0[j], x9)
            force_cross(Psid[pb], W0[j], x5)
            force_cross_add(st, W4[j], x5)
            matvec6(A1h[j], Psid[pb], x6)
            matvec6(A1h[j], st, xa)
            for r in range(6):
                x5[r] -= x6[r]
                x11[r] = xa[r] - x9[r]
            k = j
            while k > 0:
                for pc in range(m.iv[k], m.iv[k] + m.nvj[k]):
                    sr, pdr = row6(S0, pc), row6(Psid, pc)
                    p2 = dot6(x5, pdr) + dot6(x9, row6(Psidd, pc))
                    Hq[pb, pc] += p2
                    Hqv[pc, pb] -= dot6(x11, pdr)
                    if k != j:
                        Hq[pc, pb] += p2
                        y = dot6(x11, sr)
                        Hv[pb, pc] -= y
                        Hv[pc, pb] -= y
                        Hqv[pb, pc] += dot6(x5, sr) + dot6(x9, row6(PsSd, pc))
                        G[pc, pb] += dot6(x9, sr)
                    else:
                        Hv[pb, pc] -= dot6(xa, sr)
                k = m.parent[k]
    keep_alive(own)


@njit(cache=True, error_model="numpy")
def id_so_views(buf, T, nv):
    """The eight outputs as views of one flat buffer of ``id_so_size(T, nv)`` floats (one argument
    to unbox instead of eight): tau, dtau_dq, dtau_dv, M, d2q, d2v, d2qv, dM."""
    n2, n3 = nv * nv, nv * nv * nv
    o = 0
    tau = buf[o:o + T * nv].reshape((T, nv))
    o += T * nv
    dq = buf[o:o + T * n2].reshape((T, nv, nv))
    o += T * n2
    dv = buf[o:o + T * n2].reshape((T, nv, nv))
    o += T * n2
    M = buf[o:o + T * n2].reshape((T, nv, nv))
    o += T * n2
    d2q = buf[o:o + T * n3].reshape((T, nv, nv, nv))
    o += T * n3
    d2v = buf[o:o + T * n3].reshape((T, nv, nv, nv))
    o += T * n3
    d2qv = buf[o:o + T * n3].reshape((T, nv, nv, nv))
    o += T * n3
    dM = buf[o:o + T * n3].reshape((T, nv, nv, nv))
    return tau, dq, dv, M, d2q, d2v, d2qv, dM


def id_so_size(T, nv):
    return T * (nv + 3 * nv * nv + 4 * nv ** 3)


@njit(cache=True, error_model="numpy")
def idsva_so_chunk(ints, floats, Q, V, A, buf, chunk, nchunks):
    """IDSVA-SO at the knots of chunk ``chunk`` of ``nchunks``, in place into ``buf`` (see
    :func:`id_so_views`).  The buffer is allocated by the caller (numpy's allocator uses huge
    pages for large arrays, numba's does not); every knot's outputs are zeroed by the thread
    that computes them."""
    m = unpack(ints, floats)
    tau, dq, dv, M, d2q, d2v, d2qv, dM = id_so_views(buf, Q.shape[0], ints[1])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        dq[t] = 0.0
        dv[t] = 0.0
        M[t] = 0.0
        d2q[t] = 0.0
        d2v[t] = 0.0
        d2qv[t] = 0.0
        dM[t] = 0.0
        idsva_so_point(m, Q[t], V[t], A[t], tau[t], dq[t], dv[t], M[t], d2q[t], d2v[t], d2qv[t],
                       dM[t])


@njit(cache=True, error_model="numpy")
def idsva_so_batch(ints, floats, Q, V, A, buf, chunks):
    """The door of :func:`idsva_so_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, Q, V, A, buf), chunks)
