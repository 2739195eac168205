"""A flat foot (kind SURFACE, Crocoddyl's ``ContactModel6D``): the angular rows, the spatial
acceleration's terms and the position gain ``Kp log6`` on top of its origin's point rows, with
their first and second derivatives on the chain (the package docstring).
"""

import numpy as np

from ...jit import borrowed, carve, extent, keep_alive, njit
from ..lie_group import se3_log_hessian_contracted, se3_log_jacobian
from ..spatial import (add_t, col3, cross3_add, cross3_into, cross_t, dot6, dot_t, matTvec6,
                       matTvec_at, matvec6, matvec_at, row3, row3_at, scale_t, sub_t, tup3)
from .chain import chain_levels, from_level_up, level_sums

_JIT = dict(cache=True, error_model="numpy")


@njit(callee=True, **_JIT)
def _angular_derivatives(W, lev, nd, dW):
    """dW[j, k] = dw_j/dq_k = [lev_k <= lev_j] w_k x w_j (module docstring)."""
    for j in range(nd):
        wj = col3(W, j)
        for k in range(nd):
            if lev[k] <= lev[j]:
                dW[j, k, 0], dW[j, k, 1], dW[j, k, 2] = cross_t(col3(W, k), wj)
            else:
                dW[j, k, 0], dW[j, k, 1], dW[j, k, 2] = 0.0, 0.0, 0.0


@njit(callee=True, **_JIT)
def _twist(P, W, nd, vc, om, pd):
    """om = sum_j v_j w_j and pd = sum_j v_j P_j: the frame's angular velocity and its origin's
    velocity, in the world's axes."""
    for r in range(3):
        om[r] = 0.0
        pd[r] = 0.0
        for j in range(nd):
            om[r] += vc[j] * W[r, j]
            pd[r] += vc[j] * P[r, j]


@njit(callee=True, **_JIT)
def _angular_level_sums(W, lev, nd, vc, dW, nlev, CWlt, DWlt):
    """Prefix sums over the chain's levels: CWlt[L] = sum_{lev_i < L} v_i w_i (so U_j =
    CWlt[lev_j], the angular velocity of the joints above j's, and om = CWlt[nlev]) and
    DWlt[L, l] = sum_{lev_i < L} v_i dW(i, l) (its derivatives L_l), into CWlt (nlev + 1, 3)
    and DWlt (nlev + 1, nd, 3)."""
    CWlt[:, :] = 0.0
    DWlt[:, :, :] = 0.0
    for i in range(nd):
        for r in range(3):
            CWlt[lev[i] + 1, r] += vc[i] * W[r, i]
            for l in range(nd):
                DWlt[lev[i] + 1, l, r] += vc[i] * dW[i, l, r]
    for L in range(1, nlev + 1):
        for r in range(3):
            CWlt[L, r] += CWlt[L - 1, r]
            for l in range(nd):
                DWlt[L, l, r] += DWlt[L - 1, l, r]


@njit(callee=True, **_JIT)
def surface_gamma(P, W, lev, nd, vc, CWlt, kd, g):
    """A surface contact's drift rows beyond its origin's point rows (module docstring): the
    linear rows are the spatial acceleration, g[:3] -= om x pd, and the angular rows
    g[3:] = sum_j v_j U_j x w_j + Kd om (U_j = CWlt[lev_j], :func:`level_sums`)."""
    own = np.empty((3, 3))
    v3 = borrowed(own)  # (module docstring, Memory)
    om, pd, t = v3[0], v3[1], v3[2]
    _twist(P, W, nd, vc, om, pd)
    cross3_into(om, pd, t)
    for r in range(3):
        g[r] -= t[r]
        g[3 + r] = kd * om[r]
    for j in range(nd):
        cross3_into(CWlt[lev[j]], W[:, j], t)
        for r in range(3):
            g[3 + r] += vc[j] * t[r]
    keep_alive(own)


@njit(callee=True, **_JIT)
def surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, rho, order, g, D, H):
    """A flat foot's position gain term ``R log6(ref^-1 oMf)`` (Crocoddyl's ``Kp log6``, rotated
    to the world's axes block by block; module docstring), for the frame oMf = (Rf, pf) and the
    reference (Rr, pr): its value into g (6,); with ``order`` >= 1 its q-derivatives along the
    chain columns into D (6, nd); with ``order`` 2, L_l L_k (rho . g) into H (nd, nd) [k, l]
    (rho (6,) in the world's axes).  Not multiplied by Kp."""
    shapes = ((3, 3), (6, 6), (6, 6), (nd, 6), (6, nd), (4, 3), (4, 6), (2, nd, 3), (nd, 6))
    own = np.zeros(extent(shapes))  # (module docstring, Memory)
    RE, Jl, G, xi, X, v3, v6, per_dof, Gx = carve(own, shapes)
    pE, t, cw, u = v3[0], v3[1], v3[2], v3[3]
    ell, y, sig, kap = v6[0], v6[1], v6[2], v6[3]
    E, Y = per_dof[0], per_dof[1]
    for r in range(3):
        pE[r] = Rr[0, r] * (pf[0] - pr[0]) + Rr[1, r] * (pf[1] - pr[1]) + Rr[2, r] * (pf[2] - pr[2])
        for col in range(3):
            RE[r, col] = Rr[0, r] * Rf[0, col] + Rr[1, r] * Rf[1, col] + Rr[2, r] * Rf[2, col]
    se3_log_jacobian(RE, pE, ell, Jl)
    for b in range(2):
        for r in range(3):
            g[3 * b + r] = (Rf[r, 0] * ell[3 * b] + Rf[r, 1] * ell[3 * b + 1]
                            + Rf[r, 2] * ell[3 * b + 2])
    if order == 0:
        keep_alive(own)
        return
    # xi: the local twists of the chain's DoFs (R^T P_k, R^T w_k); X: R (Jlog6 xi_k), block by
    # block (the world-axes log derivatives)
    for k in range(nd):
        for r in range(3):
            xi[k, r] = Rf[0, r] * P[0, k] + Rf[1, r] * P[1, k] + Rf[2, r] * P[2, k]
            xi[k, 3 + r] = Rf[0, r] * W[0, k] + Rf[1, r] * W[1, k] + Rf[2, r] * W[2, k]
        matvec6(Jl, xi[k], y)
        for b in range(2):
            cross3_into(W[:, k], g[3 * b:3 * b + 3], t)
            for r in range(3):
                X[3 * b + r, k] = (Rf[r, 0] * y[3 * b] + Rf[r, 1] * y[3 * b + 1]
                                   + Rf[r, 2] * y[3 * b + 2])
                D[3 * b + r, k] = t[r] + X[3 * b + r, k]
    if order == 1:
        keep_alive(own)
        return
    # L_l L_k (rho . g) = [lev_l <= lev_k] (w_l x w_k) . c + w_k . e_l + w_l . y_k
    #   + xi_l^T G xi_k + (1/2 - [lev_l > lev_k]) kappa . ad(xi_l) xi_k, with c = sum_b g_b x
    #   rho_b, e_l = sum_b D_lb x rho_b, y_k = sum_b X_kb x rho_b, sigma = R^T rho (by block),
    #   G = sigma . H(log6), kappa = Jlog6^T sigma (written with R kappa in the world's axes)
    for b in range(2):
        for r in range(3):
            sig[3 * b + r] = (Rf[0, r] * rho[3 * b] + Rf[1, r] * rho[3 * b + 1]
                              + Rf[2, r] * rho[3 * b + 2])
        cross3_add(g[3 * b:3 * b + 3], rho[3 * b:3 * b + 3], cw)
    matTvec6(Jl, sig, y)
    for b in range(2):
        for r in range(3):
            kap[3 * b + r] = (Rf[r, 0] * y[3 * b] + Rf[r, 1] * y[3 * b + 1]
                              + Rf[r, 2] * y[3 * b + 2])
    se3_log_hessian_contracted(RE, pE, ell, Jl, sig, G)
    for k in range(nd):
        for b in range(2):
            cross3_add(D[3 * b:3 * b + 3, k], rho[3 * b:3 * b + 3], E[k])
            cross3_add(X[3 * b:3 * b + 3, k], rho[3 * b:3 * b + 3], Y[k])
        matvec6(G, xi[k], Gx[k])
    for k in range(nd):
        for l in range(nd):
            x = (W[0, k] * E[l, 0] + W[1, k] * E[l, 1] + W[2, k] * E[l, 2]
                 + W[0, l] * Y[k, 0] + W[1, l] * Y[k, 1] + W[2, l] * Y[k, 2]
                 + dot6(xi[l], Gx[k]))
            cross3_into(W[:, l], W[:, k], t)  # ad(xi_l) xi_k in the world's axes: (w_l x P_k
            cross3_into(W[:, l], P[:, k], u)  # + P_l x w_k, w_l x w_k)
            cross3_add(P[:, l], W[:, k], u)
            ad = (kap[0] * u[0] + kap[1] * u[1] + kap[2] * u[2]
                  + kap[3] * t[0] + kap[4] * t[1] + kap[5] * t[2])
            if lev[l] <= lev[k]:
                x += cw[0] * t[0] + cw[1] * t[1] + cw[2] * t[2] + 0.5 * ad
            else:
                x -= 0.5 * ad
            H[k, l] += x
    keep_alive(own)


@njit(callee=True, **_JIT)
def surface_residual(P, W, lev, nd, vc, ac, lam_w, kd, dofs, rr, dvp, Rq, Rv):
    """A surface contact's terms of dr/dq, dr/dv beyond its origin's point terms: the torque's
    -d(W^T lam_w)/dq on the first rows, -om x pd's derivatives on the linear rows rr.., and the
    angular rows rr + 3.. (W a + sum_j v_j U_j x w_j + Kd om) written; ``dvp`` (3, nd): the
    derivatives of pd = sum_j v_j P_j along the chain (:func:`contact_residual_derivatives`)."""
    nv = Rq.shape[1]
    nlev = chain_levels(lev, nd)
    shapes = ((nd, nd, 3), (4, 3), (nlev + 1, 3), (nlev + 1, nd, 3))
    own = np.empty(extent(shapes))
    dW, v3, CWlt, DWlt = carve(own, shapes)  # (module docstring, Memory)
    om, pd, t, x = v3[0], v3[1], v3[2], v3[3]
    _angular_derivatives(W, lev, nd, dW)
    _twist(P, W, nd, vc, om, pd)
    _angular_level_sums(W, lev, nd, vc, dW, nlev, CWlt, DWlt)
    for r in range(3):
        for k in range(nv):
            Rq[rr + 3 + r, k] = 0.0
            Rv[rr + 3 + r, k] = 0.0
    omt, pdt = tup3(om), tup3(pd)
    for l in range(nd):
        dom = row3_at(DWlt, nlev, l)
        lin = add_t(cross_t(dom, pdt), cross_t(omt, col3(dvp, l)))  # L_l (om x pd)
        ang = scale_t(dom, kd)
        for j in range(nd):  # W a and sum_j v_j (L_l U_j x w_j + U_j x dW(j, l))
            dwj = row3_at(dW, j, l)
            u = add_t(cross_t(row3_at(DWlt, lev[j], l), col3(W, j)),
                       cross_t(row3(CWlt, lev[j]), dwj))
            ang = add_t(ang, add_t(scale_t(dwj, ac[j]), scale_t(u, vc[j])))
        for r in range(3):
            Rq[rr + r, dofs[l]] -= lin[r]
            Rq[rr + 3 + r, dofs[l]] = ang[r]
    for k in range(nd):
        for j in range(nd):
            Rq[dofs[j], dofs[k]] -= (lam_w[0] * dW[j, k, 0] + lam_w[1] * dW[j, k, 1]
                                     + lam_w[2] * dW[j, k, 2])
    for m_ in range(nd):
        cross3_into(W[:, m_], pd, t)
        cross3_add(om, P[:, m_], t)
        for r in range(3):
            Rv[rr + r, dofs[m_]] -= t[r]
            x[r] = kd * W[r, m_]
        for k in range(nd):
            for r in range(3):
                x[r] += vc[k] * (dW[m_, k, r] + dW[k, m_, r])
        for r in range(3):
            Rv[rr + 3 + r, dofs[m_]] = x[r]
    keep_alive(own)


@njit(callee=True, **_JIT)
def surface_second_order(P, W, lev, nd, vc, ac, rac, lam_w, rho_l, rho_w, kd, Aqq, Avv, Aqv,
                         Bqa, Bqw, cq):
    """A surface contact's terms of the Hessian of rho_a . r1 + rho . r2 beyond its origin's
    point terms (:func:`point_second_order`, same blocks and chain indices): those of the
    torque lam_w, of -rho_l . (om x pd) and of rho_w . (W a + D + Kd om), D = sum_j v_j U_j x w_j;
    Bqw (nd, 3) the (q, lam_w) block; the weights of its ddP terms are added to ``cq``, as for
    the point terms.  By the rules of the module docstring, with
    ddW(j, k, l) = L_l dW(j, k) = [lev_k <= lev_j] (dW(k, l) x w_j + w_k x dW(j, l)).

    Every term is a sum over the chain of a weight dotted with dW, dP, ddW or ddP, or a product
    of first derivatives.  With dW(j, k) = [lev_k <= lev_j] w_k x w_j and, for the level sums
    CW[L] = sum_{lev_i < L} v_i w_i (om = CW[nlev]) and PG[L] = sum_{lev_i >= L} v_i P_i,
    L_l om = w_l x (om - CW[lev_l]) and L_l pd = w_l x PG[lev_l] + CW[lev_l] x P_l, the sums over
    j become sums over levels, and by the triple product each entry of a block is a few dot
    products with vectors formed once per DoF or per level: O(nd^2 + nlev nd) (the two flat
    feet of Talos's legs, all their chain terms: 41.0 -> 25.6 us a knot, against forming the
    products entry by entry).  In the (q, v) block, with
    c_m = CW[lev_m], ro = rho_l x om, wr_m = w_m x rho_w::

        lev_l <= lev_m:  w_l . alpha_m - wr_m . (w_l x CW[lev_l])
        lev_l >  lev_m:  L_l om . (rho_w x w_m) - P_l . (ro x w_m)
        both:            L_l pd . (w_m x rho_l) - L_l om . (P_m x rho_l)
        alpha_m = Kd wr_m - w_m x (pd x rho_l) - P_m x ro + CW[lev_m + 1] x wr_m
                  + w_m x (rho_w x CW[lev_m + 1]) + w_m x ((om - c_m) x rho_w)
                  + (om - c_m) x (rho_w x w_m)

    and in the (q, q) block the weights G_j of ddW sum as w_k . (MG>=(N) w_l - sG>=(N) w_l),
    N = max(lev_k, lev_l), MG = sum w_j G_j^T, sG = sum w_j . G_j; the drift's products of
    first derivatives S[k, l] = sum_L' L_k U(L') . E[L', l] as suffix sums over the levels
    L' >= max(lev_k + 1, lev_l) of CW[L'] x Vw[L'], Vw, Vr CW[L'] and Vr (Vw, Vr: the sums of
    v_j w_j and v_j w_j . rho_w over the DoFs of level L')."""
    nlev = chain_levels(lev, nd)
    n1 = nlev + 1
    rl, rw, lw = tup3(rho_l), tup3(rho_w), tup3(lam_w)
    # level sums: CW[L] = sum_{lev_j < L} v_j w_j (om = CW[nlev]) and PG[L] = sum_{lev_j >= L}
    # v_j P_j (:func:`level_sums`); RW[L] = sum_{lev_j >= L} rho_a,j w_j; per level
    # Vw = sum v_j w_j, Vr = sum v_j w_j . rw
    shapes = ((3, n1, 3), (3, n1, 3), (2, n1), (13, nd, 3), (n1, 3, 3), (3, n1 + 1, 3),
              (n1 + 1,), (nd,), (nd, nd))
    own = np.zeros(extent(shapes))
    lsums, zsums, zsums1, per_dof, MG, xsums, X4, S1, S = carve(own, shapes)  # (module docstring)
    CWle, CW, PG = lsums[0], lsums[1], lsums[2]
    level_sums(P, W, lev, nd, vc, CWle, CW, PG)
    RW, Vw, Vr = zsums[0], zsums[1], zsums1[0]
    for j in range(nd):
        L = lev[j]
        wj, vj = col3(W, j), vc[j]
        for r in range(3):
            Vw[L, r] += vj * wj[r]
            RW[L, r] += rac[j] * wj[r]
        Vr[L] += vj * dot_t(wj, rw)
    from_level_up(RW, nlev)
    om, pd = row3(CW, nlev), row3(PG, 0)
    ro = cross_t(rl, om)
    # per DoF j (level J, c = CW[J]): e = w x (om - c) (= L_j om), dpd = L_j pd, and the
    # products with the co-states
    E, DPD = per_dof[0], per_dof[1]
    PL = per_dof[2]  # P x rl
    WR = per_dof[3]  # w x rw
    WL = per_dof[4]  # w x rl
    F = per_dof[5]  # w x c
    AL = per_dof[6]  # alpha
    for j in range(nd):
        J = lev[j]
        wj, pj, c, c1 = col3(W, j), col3(P, j), row3(CW, J), row3(CW, J + 1)
        e = cross_t(wj, sub_t(om, c))
        dpd = add_t(cross_t(wj, row3(PG, J)), cross_t(c, pj))
        wr = cross_t(wj, rw)
        oc = sub_t(om, c)
        al = sub_t(scale_t(wr, kd), add_t(cross_t(wj, cross_t(pd, rl)), cross_t(pj, ro)))
        al = add_t(al, add_t(cross_t(c1, wr), cross_t(wj, cross_t(rw, c1))))
        al = add_t(al, add_t(cross_t(wj, cross_t(oc, rw)), cross_t(oc, cross_t(rw, wj))))
        pl, wl, f = cross_t(pj, rl), cross_t(wj, rl), cross_t(wj, c)
        for r in range(3):
            E[j, r], DPD[j, r], PL[j, r], WR[j, r] = e[r], dpd[r], pl[r], wr[r]
            WL[j, r], F[j, r], AL[j, r] = wl[r], f[r], al[r]
    # (q, a), (q, lam_w), (v, v)
    for k in range(nd):
        K = lev[k]
        wk = col3(W, k)
        t = cross_t(wk, row3(RW, K))
        for r in range(3):
            Bqw[k, r] -= t[r]
        for j in range(nd):  # rho_w . dW(j, k) = [K <= lev_j] w_k . (w_j x rho_w)
            wj = col3(W, j)
            h = -dot_t(wk, row3(PL, j)) - dot_t(wj, row3(PL, k))
            if lev[j] <= K:
                h += dot_t(wj, row3(WR, k))
            if K <= lev[j]:
                x = dot_t(wk, row3(WR, j))
                Bqa[k, j] += x
                h += x
            Avv[k, j] += h
    # (q, v)
    for l in range(nd):
        L = lev[l]
        wl, pl, el, dl, fl = col3(W, l), col3(P, l), row3(E, l), row3(DPD, l), row3(F, l)
        for m_ in range(nd):
            h = dot_t(dl, row3(WL, m_)) - dot_t(el, row3(PL, m_))
            if L <= lev[m_]:
                h += dot_t(wl, row3(AL, m_)) - dot_t(row3(WR, m_), fl)
            else:
                wm = col3(W, m_)
                h += dot_t(el, cross_t(rw, wm)) - dot_t(pl, cross_t(ro, wm))
            Aqv[l, m_] += h
    # (q, q).  The weights of ddW(j, k, l): G_j = (a_j + Kd v_j) rho_w - rho_a,j lam_w
    # + v_j ((om - CW[lev_j + 1]) x rho_w + rho_l x pd + rho_w x CW[lev_j])
    rp = cross_t(rl, pd)
    A = zsums[2]  # suffix sums of w_j x G_j
    # MG: of w_j G_j^T
    sG = zsums1[1]  # of w_j . G_j
    for j in range(nd):
        J, vj, wj = lev[j], vc[j], col3(W, j)
        t = add_t(add_t(cross_t(sub_t(om, row3(CW, J + 1)), rw), rp),
                   cross_t(rw, row3(CW, J)))
        g = sub_t(add_t(scale_t(rw, ac[j] + kd * vj), scale_t(t, vj)), scale_t(lw, rac[j]))
        a = cross_t(wj, g)
        for r in range(3):
            A[J, r] += a[r]
            for c in range(3):
                MG[J, r, c] += wj[r] * g[c]
        sG[J] += dot_t(wj, g)
    # S's suffix sums over the levels L' >= N: X1 = CW[L'] x Vw[L'], X2 = Vw, X3 = Vr CW[L'],
    # X4 = Vr
    X1, X2, X3 = xsums[0], xsums[1], xsums[2]
    for L in range(nlev - 1, -1, -1):
        t = cross_t(row3(CW, L), row3(Vw, L))
        sG[L] += sG[L + 1]
        for r in range(3):
            A[L, r] += A[L + 1, r]
            X1[L, r] = X1[L + 1, r] + t[r]
            X2[L, r] = X2[L + 1, r] + Vw[L, r]
            X3[L, r] = X3[L + 1, r] + Vr[L] * CW[L, r]
            for c in range(3):
                MG[L, r, c] += MG[L + 1, r, c]
        X4[L] = X4[L + 1] + Vr[L]
    # per DoF k (level K): the row terms for the columns l at levels <= K (u) and the parts of S
    U = per_dof[7]
    GAM = per_dof[8]  # per column l: MG(L) w_l - sG(L) w_l
    SG = per_dof[9]  # w_k x CW[K]
    SIG = per_dof[10]
    H3 = per_dof[11]  # X3(L) x w_l
    RE = per_dof[12]  # rl x e
    for k in range(nd):
        K = lev[k]
        wk, ck = col3(W, k), row3(CW, K)
        u = add_t(cross_t(wk, row3(A, K)), sub_t(matTvec_at(MG, K, wk), scale_t(wk, sG[K])))
        gam = sub_t(matvec_at(MG, K, wk), scale_t(wk, sG[K]))
        s1 = dot_t(wk, sub_t(row3(X1, K + 1), cross_t(ck, row3(X2, K + 1))))
        sig = cross_t(wk, sub_t(row3(X3, K + 1), scale_t(ck, X4[K + 1])))
        sg, h3, re = cross_t(wk, ck), cross_t(row3(X3, K), wk), cross_t(rl, row3(E, k))
        S1[k] = s1
        for r in range(3):
            U[k, r], GAM[k, r], SG[k, r], SIG[k, r], H3[k, r], RE[k, r] = \
                u[r], gam[r], sg[r], sig[r], h3[r], re[r]
    for k in range(nd):
        K = lev[k]
        wk, gk = col3(W, k), row3(SG, k)
        for l in range(nd):
            L = lev[l]
            wl = col3(W, l)
            wlr = dot_t(wl, rw)
            if L <= K:
                S[k, l] = wlr * S1[k] - dot_t(wl, row3(SIG, k))
            else:
                S[k, l] = (wlr * (dot_t(wk, row3(X1, L)) - dot_t(row3(X2, L), gk))
                           - dot_t(wk, row3(H3, l)) + X4[L] * dot_t(wl, gk))
    for k in range(nd):
        K = lev[k]
        wk, dk, rek = col3(W, k), row3(DPD, k), row3(RE, k)
        for l in range(nd):
            h = S[k, l] + S[l, k] - dot_t(row3(DPD, l), rek) - dot_t(dk, row3(RE, l))
            if lev[l] <= K:
                h += dot_t(col3(W, l), row3(U, k))
            else:
                h += dot_t(wk, row3(GAM, l))
            Aqq[k, l] += h
    t = cross_t(om, rl)
    for j in range(nd):
        for r in range(3):
            cq[j, r] += vc[j] * t[r]
    keep_alive(own)
