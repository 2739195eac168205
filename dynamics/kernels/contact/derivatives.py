"""The constrained dynamics' first derivatives and their second derivatives contracted with a
co-state (the package docstring): the contact rows of the residual's derivatives, the Hessian
blocks of rho . r, and their contraction with Z = [I ; d(a, lam)/dx].  The impact map
(:mod:`.impulse`) runs the same functions on its own residual.
"""

import numpy as np

from ...jit import borrowed, carve, copy_into, extent, keep_alive, njit
from ..spatial import add_t, cross3_into, dot_t, scale_t
from .chain import (C_INTS, chain_dofs, chain_levels, column_derivative_t, contact_gains,
                    contact_placement, contact_reference, drift_derivative, level_sums,
                    point_columns)
from .kkt import (OK, constrained_dynamics_point, idsva_at_knot, idsva_so_at_knot, kkt_costate,
                  kkt_derivatives, solve_spd)
from .point import point_second_order, weighted_hessian
from .surface import surface_position_gain, surface_residual, surface_second_order

_JIT = dict(cache=True, error_model="numpy")
#: the floating-point freedoms of the dense solves and products: fused multiply-adds and
#: reassociation (ATLAS, first derivatives: 74 -> 67 us a knot), but no assumption that values
#: are finite, so that a NaN still reaches the statuses
_FMA = {"contract", "reassoc"}


@njit(callee=True, **_JIT)
def contact_residual_derivatives(m, cints, cfloats, q, v, a, lam, S0, oR, op, Rq, Rv):
    """The contact parts of dr/dq, dr/dv (module docstring) at (q, v, a, lam), after forward
    kinematics (oR, op, S0): subtracted from the first nv rows of Rq (-d(J^T lam)/dq), and the
    rows of J a + gamma (nc rows after the first nv) of Rq (nv + nc, nv) and Rv (nv + nc, nv)
    written."""
    nv = v.shape[0]
    shapes = ((4, 3, nv), (2, nv), (2, 3, 3), (4, 3), (6,), (6, nv), (3, nv + 1, 3))
    own = (np.empty((2, nv), dtype=np.int64), np.empty(extent(shapes)))
    chain_ints = borrowed(own[0])  # (module docstring, Memory)
    dofs, lev = chain_ints[0], chain_ints[1]
    cols, chain, R2, v3, g6, D6, sums = carve(own[1], shapes)
    # dvp: d(sum_j P_j v_j)/dq_k = sum_j v_j dP(j, k)
    P, W, dvp, Dq, vc, ac = cols[0], cols[1], cols[2], cols[3], chain[0], chain[1]
    Rf, Rr, CWle, CWlt, PGE = R2[0], R2[1], sums[0], sums[1], sums[2]
    pf, t, t1, pr = v3[0], v3[1], v3[2], v3[3]
    for c in range(cints[0]):
        joint, row = cints[2 + C_INTS * c], cints[3 + C_INTS * c]
        rr = nv + row
        surface, kpp, kps, kd = contact_gains(cints, cfloats, c)
        contact_placement(oR, op, cfloats, c, joint, Rf, pf)
        nd = chain_dofs(m, joint, dofs, lev)
        point_columns(S0, dofs, nd, pf, P, W)
        for i in range(nd):
            vc[i] = v[dofs[i]]
            ac[i] = a[dofs[i]]
        for r in range(3):
            for k in range(nv):
                Rq[rr + r, k] = 0.0
                Rv[rr + r, k] = 0.0
        lam_c = (lam[row], lam[row + 1], lam[row + 2])
        for k in range(nd):
            dja = (0.0, 0.0, 0.0)
            for j in range(nd):
                dpjk = column_derivative_t(P, W, lev, j, k)
                Rq[dofs[j], dofs[k]] -= dot_t(lam_c, dpjk)  # -(d(J^T lam)/dq)[j, k]
                dja = add_t(dja, scale_t(dpjk, ac[j]))
            for r in range(3):
                Rq[rr + r, dofs[k]] += dja[r]  # d(J a)/dq_k
        level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
        for k in range(nd):  # d(J v)/dq_k = sum_j v_j dP(j, k) = w_k x PGE + CWlt x P_k
            cross3_into(W[:, k], PGE[lev[k]], t)
            cross3_into(CWlt[lev[k]], P[:, k], t1)
            for r in range(3):
                dvp[r, k] = t[r] + t1[r]
        drift_derivative(P, W, lev, nd, vc, CWle, CWlt, PGE, Dq)
        for l in range(nd):
            for r in range(3):
                Rq[rr + r, dofs[l]] += Dq[r, l] + kpp * P[r, l] + kd * dvp[r, l]
        for m_ in range(nd):  # d(drift)/dv_m = g_m + sum_j v_j dP(j, m)
            cross3_into(CWle[lev[m_]], P[:, m_], t)  # g_m = Omega_m x P_m + w_m x Psi_m
            cross3_into(W[:, m_], PGE[lev[m_] + 1], t1)
            for r in range(3):
                Rv[rr + r, dofs[m_]] = t[r] + t1[r] + dvp[r, m_] + kd * P[r, m_]
        if surface:
            surface_residual(P, W, lev, nd, vc, ac, lam[row + 3:row + 6], kd, dofs, rr, dvp, Rq,
                             Rv)
            if kps != 0.0:
                contact_reference(cfloats, c, Rr, pr)
                surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, g6, np.int64(1), g6, D6,
                                      D6)
                for k in range(nd):
                    for r in range(6):
                        Rq[rr + r, dofs[k]] += kps * D6[r, k]
    keep_alive(own)


@njit(callee=True, **_JIT)
def constrained_derivatives_point(m, cints, cfloats, q, v, tau, damping, a, lam, da_dq, da_dv,
                                  da_dtau, dlam_dq, dlam_dv, dlam_dtau, work):
    """(a, lam) of :func:`constrained_dynamics_point` and their derivatives in q, v, tau (module
    docstring); returns a status."""
    nv = v.shape[0]
    status = constrained_dynamics_point(m, cints, cfloats, q, v, tau, damping, a, lam, work)
    if status != OK:
        return status
    LM, J, Y, LL = work.LM, work.J, work.Y, work.LL
    nc = J.shape[0]
    shapes = ((nv,), (2, nv + nc, nv), (nc, nv), (nc, nv), (nv, nv))
    own = np.zeros(extent(shapes))
    tau_a, R, YT, LY, eye = carve(own, shapes)  # (module docstring, Memory)
    Rq, Rv = R[0], R[1]  # dr/dq, dr/dv
    idsva_at_knot(m, v, a, tau_a, Rq[:nv], Rv[:nv], work)
    contact_residual_derivatives(m, cints, cfloats, q, v, a, lam, work.S0, work.oR, work.op, Rq,
                                 Rv)
    kkt_derivatives(LM, LL, J, Y, Rq, Rv, da_dq, da_dv, dlam_dq, dlam_dv)
    # tau: X_lam = -Lambda^-1 Y^T, X_a = M^-1 - Y Lambda^-1 Y^T
    copy_into(YT, Y.T)
    for r in range(nv):
        eye[r, r] = 1.0
    solve_spd(LL, YT, LY)
    solve_spd(LM, eye, da_dtau)
    for r in range(nv):
        dr = da_dtau[r]
        for i in range(nc):
            y = Y[r, i]
            ly = LY[i]
            for col in range(nv):
                dr[col] -= y * ly[col]
    for i in range(nc):
        for col in range(nv):
            dlam_dtau[i, col] = -LY[i, col]
    keep_alive(own)
    return OK


@njit(callee=True, **_JIT)
def constrained_so_contracted_point(m, cints, cfloats, q, v, tau, damping, mu_a, mu_l, a, lam,
                                    da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq, Lv,
                                    Lqv, Lt, work):
    """:func:`constrained_derivatives_point`, and the second derivatives of mu . (a, lam)
    (mu = (mu_a (nv,), mu_l (nc,))) without forming any tensor: Lq (q, q), Lv (v, v), Lqv (q
    then v) and Lt (tau then q), each (nv, nv), in the convention of the contracted FD-SO.

    With rho = K^-T mu and Z = [I; d(a, lam)/dx], mu . d2(a, lam)/dx2 = -Z^T (d2 rho.r) Z
    (module docstring): rho_a . ID's second derivatives by the contracted IDSVA-SO at the
    constrained acceleration, the contacts' by :func:`point_second_order`; of the blocks of
    d2 rho.r only (q, q), (v, v), (q, v), (q, a) and (q, lam) are not zero."""
    status = constrained_derivatives_point(m, cints, cfloats, q, v, tau, damping, a, lam, da_dq,
                                           da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, work)
    if status != OK:
        return status
    so_contracted_terms(m, cints, cfloats, q, v, mu_a, mu_l, a, lam, da_dq, da_dv, da_dtau,
                        dlam_dq, dlam_dv, dlam_dtau, Lq, Lv, Lqv, Lt, work)
    return OK


@njit(callee=True, **_JIT)
def contact_hessian_blocks(m, cints, cfloats, S0, oR, op, v, a, rho_a, rho_l, lam, Aqq, Avv,
                           Aqv, Bqa, Bql):
    """Add every contact's terms of d2 (rho . r) (:func:`point_second_order`) at the velocity
    v and the acceleration a (the contact rows J a + gamma(q, v)), after forward kinematics."""
    nv = v.shape[0]
    # (module docstring, Memory)
    shapes = ((2, 3, nv), (2, 3, 3), (4, 3), (2, 6), (6, nv), (3, nv), (4, nv, nv), (2, nv, 3),
              (nv, 3))
    own = (np.empty((2, nv), dtype=np.int64), np.empty(extent(shapes)))
    chain_ints = borrowed(own[0])
    PW, R2, v3, g6, D6, chain, blocks, forces, cq = carve(own[1], shapes)
    dofs, lev, P, W, Rf, Rr = chain_ints[0], chain_ints[1], PW[0], PW[1], R2[0], R2[1]
    pf, rho, lam_c, pr = v3[0], v3[1], v3[2], v3[3]
    # chain: v, a and rho_a on a contact's chain; blocks: its (q, q), (v, v), (q, v), (q, a)
    # blocks; forces: its (q, lam) blocks, force and torque; cq: its weighted Hessian's weights
    for c in range(cints[0]):
        joint, row = cints[2 + C_INTS * c], cints[3 + C_INTS * c]
        contact_placement(oR, op, cfloats, c, joint, Rf, pf)
        nd = chain_dofs(m, joint, dofs, lev)
        point_columns(S0, dofs, nd, pf, P, W)
        vc, ac, rac = chain[0, :nd], chain[1, :nd], chain[2, :nd]
        for i in range(nd):
            vc[i], ac[i], rac[i] = v[dofs[i]], a[dofs[i]], rho_a[dofs[i]]
        for r in range(3):
            rho[r] = rho_l[row + r]
            lam_c[r] = lam[row + r]
        blocks[:, :nd, :nd] = 0.0
        forces[:, :nd] = 0.0
        cq[:nd] = 0.0
        cqq, cvv, cqv, cqa = blocks[0, :nd, :nd], blocks[1, :nd, :nd], blocks[2, :nd, :nd], \
            blocks[3, :nd, :nd]
        cql, cqw = forces[0, :nd], forces[1, :nd]
        surface, kpp, kps, kd = contact_gains(cints, cfloats, c)
        point_second_order(P, W, lev, nd, vc, ac, rac, lam_c, rho, kpp, kd, cqq, cvv, cqv, cqa,
                           cql, cq)
        if surface:
            surface_second_order(P, W, lev, nd, vc, ac, rac, lam[row + 3:row + 6], rho,
                                 rho_l[row + 3:row + 6], kd, cqq, cvv, cqv, cqa, cqw, cq)
            if kps != 0.0:
                contact_reference(cfloats, c, Rr, pr)
                rho6 = g6[1]
                for r in range(6):
                    rho6[r] = rho_l[row + r] * kps
                surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, rho6, np.int64(2), g6[0],
                                      D6, blocks[0])  # cqq's entries
        weighted_hessian(P, W, lev, nd, cq, chain_levels(lev, nd), cqq)
        for i in range(nd):
            di = dofs[i]
            for k in range(nd):
                dk = dofs[k]
                Aqq[di, dk] += cqq[i, k]
                Avv[di, dk] += cvv[i, k]
                Aqv[di, dk] += cqv[i, k]
                Bqa[di, dk] += cqa[i, k]
            for r in range(3):
                Bql[di, row + r] += cql[i, r]
                if surface:
                    Bql[di, row + 3 + r] += cqw[i, r]
    keep_alive(own)


@njit(callee=True, fastmath=_FMA, **_JIT)
def contract_blocks(Aqq, Avv, Aqv, Bqa, Bql, dy_dq, dy_dv, dy_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq,
                    Lv, Lqv, Lt):
    """-Z^T (d2 rho.r) Z on (q, q), (v, v), (q, v) and (tau, q), Z = [I; d(y, lam)/dx], from the
    nonzero blocks of d2 rho.r: A (x, x), Bqa (q, y), Bql (q, lam):  Lq = -(Aqq + B W + (B W)^T),
    Lv = -Avv, Lqv = -(Aqv + B W_v), Lt = -(B W_tau)^T (tau enters r linearly), with
    B W = Bqa dy/dq + Bql dlam/dq.  The products run along the rows of W (vectorized), skipping
    the zeros of B.  B W_q, B W_v and B W_tau are arrays of their own, so that the transposed
    reads stay in one (n, n) block (Talos, n = 50: 33 -> 31 us a knot).  Without a tau block
    (dy_dtau with no rows: an impact), Lt is not written."""
    nv = Aqq.shape[0]
    nc = Bql.shape[1]
    tau = dy_dtau.shape[0] > 0
    shapes = ((2, nv, nv), (nv, nv) if tau else (0, 0))
    own = np.zeros(extent(shapes))  # (module docstring, Memory)
    BW, BWt = carve(own, shapes)
    BWq, BWv = BW[0], BW[1]
    for r in range(nv):
        bq, bv = BWq[r], BWv[r]
        for k in range(nv + nc):
            x = Bqa[r, k] if k < nv else Bql[r, k - nv]
            if x == 0.0:
                continue
            wq = dy_dq[k] if k < nv else dlam_dq[k - nv]
            wv = dy_dv[k] if k < nv else dlam_dv[k - nv]
            for col in range(nv):
                bq[col] += x * wq[col]
                bv[col] += x * wv[col]
            if tau:
                bt = BWt[r]
                wt = dy_dtau[k] if k < nv else dlam_dtau[k - nv]
                for col in range(nv):
                    bt[col] += x * wt[col]
    for r in range(nv):
        for col in range(nv):
            Lq[r, col] = -(Aqq[r, col] + BWq[r, col] + BWq[col, r])
            Lv[r, col] = -Avv[r, col]
            Lqv[r, col] = -(Aqv[r, col] + BWv[r, col])
    if tau:
        for col in range(nv):
            for r in range(nv):
                Lt[col, r] = -BWt[r, col]
    keep_alive(own)


@njit(callee=True, **_JIT)
def so_contracted_terms(m, cints, cfloats, q, v, mu_a, mu_l, a, lam, da_dq, da_dv, da_dtau,
                        dlam_dq, dlam_dv, dlam_dtau, Lq, Lv, Lqv, Lt, work):
    """The second-order part of :func:`constrained_so_contracted_point`, given the knot's first
    derivatives and the work arrays :func:`constrained_derivatives_point` left."""
    nv = v.shape[0]
    nc = work.J.shape[0]
    shapes = ((nv,), (nc,), (5, nv, nv), (nv, nc))
    own = np.zeros(extent(shapes))  # (module docstring, Memory)
    rho_a, rho_l, blocks, Bql = carve(own, shapes)
    kkt_costate(work.LM, work.LL, work.Y, mu_a, mu_l, rho_a, rho_l)
    Aqq, Avv, Aqv, G, Bqa = blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
    idsva_so_at_knot(m, rho_a, Aqq, Avv, Aqv, G, work)
    copy_into(Bqa, G.T)
    contact_hessian_blocks(m, cints, cfloats, work.S0, work.oR, work.op, v, a, rho_a, rho_l,
                           lam, Aqq, Avv, Aqv, Bqa, Bql)
    contract_blocks(Aqq, Avv, Aqv, Bqa, Bql, da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq,
                    Lv, Lqv, Lt)
    keep_alive(own)


@njit(callee=True, **_JIT)
def unit_costate(i, mu_y, mu_l):
    """The co-state of output row i of (y, lam) (y: a, or v+ at an impact) into mu_y (nv,) and
    mu_l (nc,): the full second-derivative tensors are the contractions with these."""
    mu_y[:] = 0.0
    mu_l[:] = 0.0
    nv = mu_y.shape[0]
    if i < nv:
        mu_y[i] = 1.0
    else:
        mu_l[i - nv] = 1.0
