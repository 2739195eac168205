"""A point contact's second-order terms on its chain: the weighted Hessians of the columns and of
the drift, in O(nd^2) by level sums (the package docstring).
"""

import numpy as np

from ...jit import carve, extent, keep_alive, njit
from ..spatial import (add_t, col3, cross_t, dot_t, matTvec_at, matvec_at, row3, row3_at, scale_t,
                       sub_t, tup3)
from .chain import below_level, chain_levels, from_level_up, level_sums

_JIT = dict(cache=True, error_model="numpy")


@njit(callee=True, **_JIT)
def weighted_hessian(P, W, lev, nd, c, nlev, H):
    """H[k, l] += L_l L_k F for F = sum_j c_j . P_j with constant weights c (nd, 3), that is
    sum_j c_j . ddP(j, k, l), in O(nd^2) (instead of O(nd^3)).  With X_j = P_j x c_j and
    Y_j = c_j x w_j, L_k F = w_k . X>=(K) + P_k . Y<(K) (K = lev_k; >= and < sum over the levels
    of the chain), and by the rules of the module docstring, for L = lev_l, M = max(K, L)::

        L_l L_k F = [L <= K] (w_l x w_k) . X>=(K) + dP(k, l) . Y<(K)
                    + w_k . (MPC>=(M) w_l - w_l sPC>=(M) + P_l sWC[K, L) - MWC[K, L) P_l)
                    + P_k . (w_l sWC[L, K) - MWC[L, K) w_l)

    with MPC = sum P_j c_j^T, sPC = sum P_j . c_j, MWC = sum w_j c_j^T, sWC = sum w_j . c_j over
    the levels given ([A, B): the levels from A to B - 1, empty when B <= A).  By the triple
    product, each entry is then two or three dot products with vectors formed once per DoF
    (sWC(K), MWC(K): the sums over the levels below K)::

        L <= K:  w_l . z_k - sWC(L) (P_k . w_l) + P_k . MWC(L) w_l
        L > K:   w_k . e_l + P_l . f_k
        z_k = P_k x Y<(K) + w_k x X>=(K) + MPC>=(K)^T w_k - sPC>=(K) w_k
              + sWC(K) P_k - MWC(K)^T P_k
        f_k = Y<(K) x w_k + MWC(K)^T w_k - sWC(K) w_k
        e_l = MPC>=(L) w_l - sPC>=(L) w_l + sWC(L) P_l - MWC(L) P_l

    (at L = K the last two terms of the first line cancel those of z_k; HyQ's foot: 1.25 ->
    0.78 us)."""
    shapes = ((2, nlev + 1, 3), (2, nlev + 1, 3, 3), (2, nlev + 1), (4, nd, 3))
    own = np.zeros(extent(shapes))
    sums3, sums33, sums1, per_dof = carve(own, shapes)  # (module docstring, Memory)
    # the level sums, suffix (>= L) then prefix (< L)
    Xge, Ylt, MPC, MWC, sPC, sWC = sums3[0], sums3[1], sums33[0], sums33[1], sums1[0], sums1[1]
    for j in range(nd):  # per level first
        L = lev[j]
        cj, pj, wj = row3(c, j), col3(P, j), col3(W, j)
        X, Y = cross_t(pj, cj), cross_t(cj, wj)
        for a in range(3):
            Xge[L, a] += X[a]
            Ylt[L + 1, a] += Y[a]
            for b in range(3):
                MPC[L, a, b] += pj[a] * cj[b]
                MWC[L + 1, a, b] += wj[a] * cj[b]
        sPC[L] += dot_t(pj, cj)
        sWC[L + 1] += dot_t(wj, cj)
    for L in range(nlev - 1, -1, -1):
        sPC[L] += sPC[L + 1]
        for a in range(3):
            Xge[L, a] += Xge[L + 1, a]
            for b in range(3):
                MPC[L, a, b] += MPC[L + 1, a, b]
    for L in range(1, nlev + 1):
        sWC[L] += sWC[L - 1]
        for a in range(3):
            Ylt[L, a] += Ylt[L - 1, a]
            for b in range(3):
                MWC[L, a, b] += MWC[L - 1, a, b]
    # per DoF j at level J: as the row k, z_j (columns l at levels <= J) and f_j (above J);
    # as the column l, m_j = MWC[J] w_j and e_j
    Z, F, Mw, E = per_dof[0], per_dof[1], per_dof[2], per_dof[3]
    for j in range(nd):
        J = lev[j]
        wj, pj = col3(W, j), col3(P, j)
        xj, yj, s_p, s_w = row3(Xge, J), row3(Ylt, J), sPC[J], sWC[J]
        z = add_t(add_t(cross_t(pj, yj), cross_t(wj, xj)),
                   sub_t(add_t(matTvec_at(MPC, J, wj), scale_t(pj, s_w)),
                          add_t(scale_t(wj, s_p), matTvec_at(MWC, J, pj))))
        f = add_t(cross_t(yj, wj), sub_t(matTvec_at(MWC, J, wj), scale_t(wj, s_w)))
        mw = matvec_at(MWC, J, wj)
        e = sub_t(add_t(matvec_at(MPC, J, wj), scale_t(pj, s_w)),
                   add_t(scale_t(wj, s_p), matvec_at(MWC, J, pj)))
        for r in range(3):
            Z[j, r], F[j, r], Mw[j, r], E[j, r] = z[r], f[r], mw[r], e[r]
    for k in range(nd):
        K = lev[k]
        wk, pk, zk, fk = col3(W, k), col3(P, k), row3(Z, k), row3(F, k)
        for l in range(nd):
            wl, pl = col3(W, l), col3(P, l)
            if lev[l] <= K:
                H[k, l] += dot_t(wl, zk) - sWC[lev[l]] * dot_t(pk, wl) + dot_t(pk, row3(Mw, l))
            else:
                H[k, l] += dot_t(wk, row3(E, l)) + dot_t(pl, fk)
    keep_alive(own)


@njit(callee=True, **_JIT)
def _drift_hessian_terms(P, W, lev, nd, vc, rho, S, nlev, H):
    """H[k, l] += sum_j v_j rho . [LlLk U_j x P_j + Lk U_j x dP(j, l) + Ll U_j x dP(j, k)], the
    drift's terms of the (q, q) Hessian besides U_j x ddP(j, k, l), in O(nd^2 + nlev^2 nd):
    with Lk U_j = w_k x S_j(K), LlLk U_j = [L <= K] (w_l x w_k) x S_j(K) + w_k x (w_l x S_j(M))
    (K, L the levels of k, l, M = max(K, L); S_j(K) = S[lev_j, K]) and Z_j = v_j P_j x rho, the
    sums over j become level sums: Q(K) = sum_j S_j(K) x Z_j, R(M) = sum_j S_j(M) Z_j^T, and
    over the j at levels >= L (A1, B1) or < L (C1, D1) of v_j S_j(K) x P_j,
    v_j (P_j . rho) S_j(K), v_j (w_j . rho) S_j(K) and v_j S_j(K) x w_j::

        first  = [L <= K] (w_l x w_k) . Q(K) + w_k^T R(M) w_l - tr R(M) (w_k . w_l)
        T(k, l) = (w_l . rho) w_k . A1(K, L) - (w_l x w_k) . B1(K, L)
                  + (w_k x C1(K, L)) . P_l - (P_l . rho) w_k . D1(K, L)
        H[k, l] += first + T(k, l) + T(l, k)

    Each entry then takes a few dot products with vectors formed once per DoF or per DoF and
    level (the triple products; HyQ's foot: 1.53 -> 1.22 us).
    """
    n1 = nlev + 1
    shapes = ((n1, 3), (n1, 3, 3), (4, n1, n1 + 1, 3), (2, nd), (2, nd, 3), (nlev, 8), (nd, nd))
    own = np.zeros(extent(shapes))
    Q, R, sums, per_dof, per_dof3, TK, T2 = carve(own, shapes)  # (module docstring, Memory)
    # [K, L]: A1, B1 over j with lev_j >= L (suffix in L), C1, D1 over lev_j < L (prefix)
    A1, B1, C1, D1 = sums[0], sums[1], sums[2], sums[3]
    rh = tup3(rho)
    for j in range(nd):
        vj = vc[j]
        if vj == 0.0:
            continue
        lj = lev[j]
        pj, wj = col3(P, j), col3(W, j)
        z = cross_t(pj, rh)
        pr, wr = dot_t(pj, rh), dot_t(wj, rh)
        for K in range(lj + 1):  # S_j(K) = 0 for K > lev_j
            sK = row3_at(S, lj, K)
            qK, aK, dK = cross_t(sK, z), cross_t(sK, pj), cross_t(sK, wj)
            for r in range(3):
                Q[K, r] += vj * qK[r]
                for c in range(3):
                    R[K, r, c] += vj * sK[r] * z[c]
                A1[K, lj, r] += vj * aK[r]
                B1[K, lj, r] += vj * pr * sK[r]
                C1[K, lj + 1, r] += vj * wr * sK[r]
                D1[K, lj + 1, r] += vj * dK[r]
    for K in range(n1):
        for L in range(nlev - 1, -1, -1):
            for r in range(3):
                A1[K, L, r] += A1[K, L + 1, r]
                B1[K, L, r] += B1[K, L + 1, r]
        for L in range(1, n1 + 1):
            for r in range(3):
                C1[K, L, r] += C1[K, L - 1, r]
                D1[K, L, r] += D1[K, L - 1, r]
    # T(k, l) = (w_l . rho) al - w_l . be + P_l . ga - (P_l . rho) de, with al = w_k . A1(K, L),
    # be = w_k x B1(K, L), ga = w_k x C1(K, L), de = w_k . D1(K, L) formed once per DoF k and
    # level L; and first = w_l . u_k (L <= K) or w_k . x_l (L > K), u_k = w_k x Q(K) +
    # (R(K) - tr R(K))^T w_k, x_l = (R(L) - tr R(L)) w_l (the trace times the identity)
    wrho, prho, U, X = per_dof[0], per_dof[1], per_dof3[0], per_dof3[1]
    for j in range(nd):
        J = lev[j]
        wj = col3(W, j)
        wrho[j], prho[j] = dot_t(wj, rh), dot_t(col3(P, j), rh)
        tr = R[J, 0, 0] + R[J, 1, 1] + R[J, 2, 2]
        u = add_t(cross_t(wj, row3(Q, J)), sub_t(matTvec_at(R, J, wj), scale_t(wj, tr)))
        x = sub_t(matvec_at(R, J, wj), scale_t(wj, tr))
        for r in range(3):
            U[j, r], X[j, r] = u[r], x[r]
    for k in range(nd):
        K = lev[k]
        wk = col3(W, k)
        for L in range(nlev):
            be, ga = cross_t(wk, row3_at(B1, K, L)), cross_t(wk, row3_at(C1, K, L))
            TK[L, 0] = dot_t(wk, row3_at(A1, K, L))
            TK[L, 1], TK[L, 2], TK[L, 3] = be
            TK[L, 4], TK[L, 5], TK[L, 6] = ga
            TK[L, 7] = dot_t(wk, row3_at(D1, K, L))
        for l in range(nd):
            L = lev[l]
            T2[k, l] = (wrho[l] * TK[L, 0] - dot_t(col3(W, l), (TK[L, 1], TK[L, 2], TK[L, 3]))
                        + dot_t(col3(P, l), (TK[L, 4], TK[L, 5], TK[L, 6]))
                        - prho[l] * TK[L, 7])
    for k in range(nd):
        K = lev[k]
        wk, uk = col3(W, k), row3(U, k)
        for l in range(nd):
            h = T2[k, l] + T2[l, k]
            if lev[l] <= K:
                h += dot_t(col3(W, l), uk)
            else:
                h += dot_t(wk, row3(X, l))
            H[k, l] += h
    keep_alive(own)


@njit(callee=True, **_JIT)
def _qv_drift_terms(P, W, lev, nd, rho, kd, CWle, CWlt, PGE, Aqv):
    """Aqv[l, m] += rho . (sum_i v_i ddP(i, m, l) + L_l g_m + Kd dP(m, l)) for the drift's
    terms g_m = Omega_m x P_m + w_m x Psi_m (:func:`drift_derivative`), each entry two or
    three dot products with vectors formed once per DoF (the triple products of its rules):
    with om = Omega_m, ps = Psi_m, cl = CWlt[lev_l], c_m = rho x w_m and pg = PGE[lev_m],

        lev_l <= lev_m:  w_l . (a_m + z_m) - 2 (rho . cl) (w_l . P_m) + 2 (rho . w_l) (cl . P_m)
        lev_l > lev_m:   P_l . (b_m + f_m) + w_m . (e_l + (w_l x PGE[lev_l] + cl x P_l) x rho)
        a_m = (rho . om) P_m + P_m x (rho x om) + (rho . w_m) ps + ps x c_m
              - (om . P_m + w_m . ps) rho + Kd P_m x rho
        b_m = (rho x om) x w_m - c_m x om + Kd c_m

    The first term, sum_i v_i rho . ddP(i, m, l), is the weighted Hessian
    (:func:`weighted_hessian`) of the weights v_i rho, whose level sums are those of the
    velocity: X>=(K) = PGE[K] x rho, Y<(K) = rho x CWlt[K], MPC>=(K) = PGE[K] rho^T,
    MWC(K) = CWlt[K] rho^T; its vectors are then (cm = CWlt[lev_m])

        z_m = P_m x (rho x cm) + w_m x (pg x rho) + (pg . w_m) rho - (pg . rho) w_m
              + (cm . rho) P_m - (cm . P_m) rho
        f_m = (rho x cm) x w_m + (cm . w_m) rho - (cm . rho) w_m
        e_l = (rho . w_l) PGE[L] - (PGE[L] . rho) w_l + (cl . rho) P_l - (rho . P_l) cl

    and its pairs have the same form as the drift's, so they share their dot products (HyQ's
    four feet: 0.76 us a foot less than a weighted Hessian of its own)."""
    rh = tup3(rho)
    shapes = ((3, nd, 3), (2, nd))
    own = np.empty(extent(shapes))
    per_dof3, per_dof = carve(own, shapes)  # (module docstring, Memory)
    A, Bm, E = per_dof3[0], per_dof3[1], per_dof3[2]  # E: e_l + (w_l x PGE[L] + cl x P_l) x rho
    rc, rw = per_dof[0], per_dof[1]  # per l: rho . cl, rho . w_l
    for j in range(nd):
        J = lev[j]
        wj, pj = col3(W, j), col3(P, j)
        om, ps = row3(CWle, J), row3(PGE, J + 1)
        cl, pg = row3(CWlt, J), row3(PGE, J)
        ro, cj = cross_t(rh, om), cross_t(rh, wj)
        a = add_t(scale_t(pj, dot_t(rh, om)), cross_t(pj, ro))
        a = add_t(a, add_t(scale_t(ps, dot_t(rh, wj)), cross_t(ps, cj)))
        a = sub_t(a, scale_t(rh, dot_t(om, pj) + dot_t(wj, ps)))
        a = add_t(a, scale_t(cross_t(pj, rh), kd))
        b = add_t(sub_t(cross_t(ro, wj), cross_t(cj, om)), scale_t(cj, kd))
        rcl, rpg = cross_t(rh, cl), cross_t(pg, rh)
        cr, pr, cp = dot_t(cl, rh), dot_t(pg, rh), dot_t(cl, pj)
        rw[j], rc[j] = dot_t(rh, wj), cr
        z = add_t(add_t(cross_t(pj, rcl), cross_t(wj, rpg)),
                   add_t(scale_t(rh, dot_t(pg, wj) - cp), sub_t(scale_t(pj, cr),
                                                                   scale_t(wj, pr))))
        f = add_t(cross_t(rcl, wj), sub_t(scale_t(rh, dot_t(cl, wj)), scale_t(wj, cr)))
        e = add_t(sub_t(scale_t(pg, rw[j]), scale_t(wj, pr)),
                  sub_t(scale_t(pj, cr), scale_t(cl, dot_t(rh, pj))))
        g = add_t(cross_t(wj, pg), cross_t(cl, pj))
        e = add_t(e, cross_t(g, rh))
        for r in range(3):
            A[j, r], Bm[j, r], E[j, r] = a[r] + z[r], b[r] + f[r], e[r]
    for l in range(nd):
        L = lev[l]
        wl, pl, cl = col3(W, l), col3(P, l), row3(CWlt, L)
        c2, w2 = 2.0 * rc[l], 2.0 * rw[l]
        el = row3(E, l)
        for m_ in range(nd):
            pm = col3(P, m_)
            if L <= lev[m_]:
                h = dot_t(wl, row3(A, m_)) - c2 * dot_t(wl, pm) + w2 * dot_t(cl, pm)
            else:
                h = dot_t(pl, row3(Bm, m_)) + dot_t(col3(W, m_), el)
            Aqv[l, m_] += h
    keep_alive(own)


@njit(callee=True, **_JIT)
def point_second_order(P, W, lev, nd, vc, ac, rac, lam_c, rho, kp, kd, Aqq, Avv, Aqv, Bqa,
                       Bql, cq):
    """The contact's terms of the Hessian of rho_a . r1 + rho . r2 (rho: the contact's part of
    rho_lam) over its chain (module docstring, second order), in chain indices: Aqq (nd, nd)
    [k, l] = L_l L_k, Avv, Aqv (q_l, v_m), Bqa (q_k, a_j), Bql (q_k, 3): the contact's force
    columns.  ``rac``: rho_a on the chain, ``lam_c`` the contact's force.

    The terms linear in the columns P_j with constant weights (J a, Kd J v, -lam . J rho_a, and
    the drift's U_j x ddP part) are one weighted Hessian (:func:`weighted_hessian`, O(nd^2)):
    their weights are added to ``cq`` (nd, 3), whose Hessian the caller adds to Aqq (once for the
    point and surface terms of a contact);
    the drift's other terms (with U_j = sum_i c_ij v_i w_i, written S_j(level) summed from a
    level on) take O(nd^2 + nlev^2 nd) small products (:func:`_drift_hessian_terms`,
    :func:`_qv_drift_terms`, which also takes the weighted Hessian of the (q, v) block), each
    entry a few dot products with vectors formed once per DoF (HyQ's four feet, all their chain
    terms: 29.6 -> 22.5 us a knot by the triple products, then 24.1 -> 20.0 us in another run
    by the (q, v) block's weighted Hessian in :func:`_qv_drift_terms`)."""
    nlev = chain_levels(lev, nd)
    # S[J, L] = sum_{i: L <= lev_i <= J} c_i v_i w_i, c_i = 1 at level J, else 2: S_j(L) of
    # every DoF j at level J
    shapes = ((nlev, nlev + 1, 3), (nd, 3), (nd, nd), (2, nlev + 1, 3), (3, nlev + 1, 3))
    own = np.zeros(extent(shapes))
    S, PR, D, sums, vsums = carve(own, shapes)  # (module docstring, Memory)
    for J in range(nlev):
        for i in range(nd):
            if lev[i] <= J:
                c = (1.0 if lev[i] == J else 2.0) * vc[i]
                for r in range(3):
                    S[J, lev[i], r] += c * W[r, i]
        for ll in range(nlev - 1, -1, -1):
            for r in range(3):
                S[J, ll, r] += S[J, ll + 1, r]
    # D[j, k] = rho . dP(j, k): w_k . (P_j x rho) if lev_k <= lev_j, else w_j . (P_k x rho)
    rh = tup3(rho)
    for j in range(nd):
        PR[j, 0], PR[j, 1], PR[j, 2] = cross_t(col3(P, j), rh)
    for j in range(nd):
        for k in range(nd):
            if lev[k] <= lev[j]:
                D[j, k] = dot_t(col3(W, k), row3(PR, j))
            else:
                D[j, k] = dot_t(col3(W, j), row3(PR, k))
    # B: d/dq_k d/da_j of rho . J a; vv: rho . (dP(k, m) + dP(m, k)); qq: Kp rho . dP(k, l)
    for k in range(nd):
        for j in range(nd):
            Bqa[k, j] += D[j, k]
            Avv[k, j] += D[k, j] + D[j, k]
            Aqq[k, j] += kp * D[k, j]
    # d/dq_k d/dlam of -lam . J rho_a: -sum_j rho_a,j dP(j, k) = -(w_k x RP>=(K) + RW<(K) x P_k)
    # with the level sums RP of rho_a,j P_j and RW of rho_a,j w_j
    RP, RW = sums[0], sums[1]
    for j in range(nd):
        for r in range(3):
            RP[lev[j], r] += rac[j] * P[r, j]
            RW[lev[j] + 1, r] += rac[j] * W[r, j]
    from_level_up(RP, nlev)
    below_level(RW, nlev)
    for k in range(nd):
        K = lev[k]
        t = add_t(cross_t(col3(W, k), row3(RP, K)), cross_t(row3(RW, K), col3(P, k)))
        for r in range(3):
            Bql[k, r] -= t[r]
    # qq: the weights c_j (into cq) of the weighted Hessian of sum_j c_j . P_j, c_j = (a_j + Kd
    #     v_j) rho - rho_a,j lam + v_j rho x U_j (the drift's U_j x ddP(j, k, l) term)
    for j in range(nd):
        t = cross_t(rh, row3_at(S, lev[j], 0))
        for r in range(3):
            cq[j, r] += (ac[j] + kd * vc[j]) * rh[r] - rac[j] * lam_c[r] + vc[j] * t[r]
    _drift_hessian_terms(P, W, lev, nd, vc, rho, S, nlev, Aqq)
    # qv: rho . [sum_i v_i ddP(i, m, l) + L_l g_m + Kd dP(m, l)], g_m = sum_i v_i dP(m, i)
    CWle, CWlt, PGE = vsums[0], vsums[1], vsums[2]
    level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
    _qv_drift_terms(P, W, lev, nd, rho, kd, CWle, CWlt, PGE, Aqv)
    keep_alive(own)
