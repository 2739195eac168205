"""The KKT system of a knot: its factors (M, Lambda = J M^-1 J^T + damping I), the constrained
dynamics (a, lam), the derivatives of the solution from those of the residual (the implicit
function theorem), the co-state of the contracted second order, and a knot's work arrays
(:data:`ContactWork`), which also keep IDSVA's forward pass at the knot for the second order.
The constrained dynamics and the impact map share it (:mod:`.derivatives`, :mod:`.impulse`).
"""

from collections import namedtuple

import numpy as np

from ...jit import borrowed, carve, copy_into, extent, keep_alive, njit
from ..dense import back_substitution, cholesky, cholesky_solve_vector, forward_substitution
from ..inverse import (add_armature, crba_point, ground_inertias, idsva_backward_sweep,
                       idsva_forward_into, rnea_point)
from ..kinematics import forward_kinematics
from ..second_order import idsva_so_contracted_sweep
from .chain import (C_FLOATS, C_INTS, chain_dofs, contact_gains, contact_placement,
                    contact_reference, level_sums, point_columns, point_drift)
from .surface import surface_gamma, surface_position_gain

_JIT = dict(cache=True, error_model="numpy")
#: the floating-point freedoms of the dense solves and products: fused multiply-adds and
#: reassociation (ATLAS, first derivatives: 74 -> 67 us a knot), but no assumption that values
#: are finite, so that a NaN still reaches the statuses
_FMA = {"contract", "reassoc"}


#: the work arrays of one knot (:func:`contact_workspace`): the KKT system's M, M's factor LM,
#: J, Y = M^-1 J^T, Lambda and its factor LL, gamma, b (nv,), the forward kinematics S0, oR, op;
#: and IDSVA's forward pass at the knot's acceleration, with the composite inertias, body-Coriolis
#: matrices and forces IC, BC, FC (njoints, ...), Psid, Psidd, Sd (nv, 6) and the forces of every
#: DoF (nv, 4, 6), which the second order reads (:func:`idsva_so_at_knot`)
ContactWork = namedtuple("ContactWork",
                         "M LM J Y Lam LL gamma b S0 oR op IC BC FC Psid Psidd Sd dof_forces")


#: statuses of the contact kernels
OK, SINGULAR_MASS, SINGULAR_CONTACT = 0, 1, 2


@njit(callee=True, **_JIT)
def contact_jacobian_drift(m, cints, cfloats, q, v, J, gamma, S0, oR, op):
    """J (nc, nv) and gamma (nc,) of every contact (module docstring), after forward kinematics
    into oR, op, S0."""
    nv = v.shape[0]
    forward_kinematics(m, q, oR, op, S0)
    J[:, :] = 0.0
    shapes = ((2, 3, nv), (nv,), (2, 3, 3), (4, 3), (6,), (0, 0), (3, nv + 1, 3))
    own = (np.empty((2, nv), dtype=np.int64), np.empty(extent(shapes)))
    chain_ints = borrowed(own[0])  # (module docstring, Memory)
    dofs, lev = chain_ints[0], chain_ints[1]
    PW, vc, R2, v3, g6, D0, sums = carve(own[1], shapes)
    P, W, Rf, Rr, CWle, CWlt, PGE = PW[0], PW[1], R2[0], R2[1], sums[0], sums[1], sums[2]
    pf, t, drift, pr = v3[0], v3[1], v3[2], v3[3]
    for c in range(cints[0]):
        joint, row = cints[2 + C_INTS * c], cints[3 + C_INTS * c]
        contact_placement(oR, op, cfloats, c, joint, Rf, pf)
        nd = chain_dofs(m, joint, dofs, lev)
        point_columns(S0, dofs, nd, pf, P, W)
        for i in range(nd):
            vc[i] = v[dofs[i]]
            for r in range(3):
                J[row + r, dofs[i]] = P[r, i]
        level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
        point_drift(P, W, lev, nd, vc, CWle, PGE, t, drift)
        o = c * C_FLOATS
        surface, kpp, kps, kd = contact_gains(cints, cfloats, c)
        for r in range(3):
            vp = 0.0
            for i in range(nd):
                vp += P[r, i] * vc[i]
            gamma[row + r] = drift[r] + kpp * (pf[r] - cfloats[o + 12 + r]) + kd * vp
        if surface:
            for i in range(nd):
                for r in range(3):
                    J[row + 3 + r, dofs[i]] = W[r, i]
            surface_gamma(P, W, lev, nd, vc, CWlt, kd, gamma[row:row + 6])
            if kps != 0.0:
                contact_reference(cfloats, c, Rr, pr)
                surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, g6, np.int64(0), g6, D0,
                                      D0)
                for r in range(6):
                    gamma[row + r] += kps * g6[r]
    keep_alive(own)


@njit(callee=True, fastmath=_FMA, **_JIT)
def solve_spd(L, B, X):
    """X = (L L^T)^-1 B."""
    forward_substitution(L, B, X)
    back_substitution(L, X)
    for i in range(X.shape[0]):
        for c in range(X.shape[1]):
            X[i, c] = -X[i, c]


@njit(callee=True, **_JIT)
def kkt_factor(M, J, damping, LM, Y, Lam, LL):
    """The Cholesky factors LM of M and LL of Lam = J M^-1 J^T + damping I, and Y = M^-1 J^T.
    Returns a status."""
    nc, nv = J.shape
    if not cholesky(M, LM):
        return SINGULAR_MASS
    own = np.empty((nv, nc))
    JT = borrowed(own)  # (module docstring, Memory)
    copy_into(JT, J.T)
    solve_spd(LM, JT, Y)
    keep_alive(own)
    for i in range(nc):
        for k in range(nc):
            s = 0.0
            for r in range(nv):
                s += J[i, r] * Y[r, k]
            Lam[i, k] = s
        Lam[i, i] += damping
    if nc > 0 and not cholesky(Lam, LL):
        return SINGULAR_CONTACT
    return OK


@njit(callee=True, **_JIT)
def kkt_at(m, cints, cfloats, q, v, damping, work):
    """The KKT system's factors at (q, v) into ``work`` (:func:`contact_workspace`): M, its
    factor LM, J, Y = M^-1 J^T, Lambda's factor LL, gamma and the forward kinematics; returns
    a status (:func:`kkt_factor`)."""
    work.M[:, :] = 0.0  # crba_point writes the entries of related DoFs only
    crba_point(m, q, work.M)
    contact_jacobian_drift(m, cints, cfloats, q, v, work.J, work.gamma, work.S0, work.oR,
                           work.op)
    return kkt_factor(work.M, work.J, damping, work.LM, work.Y, work.Lam, work.LL)


@njit(callee=True, **_JIT)
def constrained_dynamics_point(m, cints, cfloats, q, v, tau, damping, a, lam, work):
    """a (nv,) and lam (nc,) of the KKT system at one knot; returns a status.  ``work``: the
    arrays of :func:`contact_workspace` (left holding M's and Lambda's factors, J, M^-1 J^T)."""
    nv = v.shape[0]
    LM, J, Y, LL, gamma, b = work.LM, work.J, work.Y, work.LL, work.gamma, work.b
    nc = J.shape[0]
    status = kkt_at(m, cints, cfloats, q, v, damping, work)
    if status != OK:
        return status
    own = np.zeros((2, nv))
    zero, af = borrowed((own[0], own[1]))  # (module docstring, Memory)
    rnea_point(m, q, v, zero, b)
    for r in range(nv):
        af[r] = tau[r] - b[r]
    cholesky_solve_vector(LM, af, af)  # the free acceleration
    for i in range(nc):
        s = gamma[i]
        for r in range(nv):
            s += J[i, r] * af[r]
        lam[i] = -s
    cholesky_solve_vector(LL, lam, lam)
    for r in range(nv):
        s = af[r]
        for i in range(nc):
            s += Y[r, i] * lam[i]
        a[r] = s
    keep_alive(own)
    return OK


@njit(callee=True, **_JIT)
def contact_workspace(nj, nv, nc):
    """The :data:`ContactWork` arrays of one knot (a block of one, :func:`workspace_block`)."""
    return block_member(workspace_block(1, nj, nv, nc), 0)


@njit(callee=True, **_JIT)
def kinematics_workspace(nj, nv, nc, S0, oR, op):
    """:func:`contact_workspace` whose forward kinematics are the given arrays."""
    w = contact_workspace(nj, nv, nc)
    return ContactWork(w.M, w.LM, w.J, w.Y, w.Lam, w.LL, w.gamma, w.b, S0, oR, op, w.IC, w.BC,
                       w.FC, w.Psid, w.Psidd, w.Sd, w.dof_forces)


@njit(callee=True, **_JIT)
def workspace_block(G, nj, nv, nc):
    """The :func:`contact_workspace` of G knots as one :data:`ContactWork` whose arrays have a
    leading knot axis (one knot's: :func:`block_member`)."""
    return ContactWork(np.empty((G, nv, nv)), np.zeros((G, nv, nv)), np.empty((G, nc, nv)),
                       np.empty((G, nv, nc)), np.empty((G, nc, nc)), np.zeros((G, nc, nc)),
                       np.empty((G, nc)), np.empty((G, nv)), np.empty((G, nv, 6)),
                       np.empty((G, nj, 3, 3)), np.empty((G, nj, 3)), np.empty((G, nj, 6, 6)),
                       np.empty((G, nj, 6, 6)), np.empty((G, nj, 6)), np.empty((G, nv, 6)),
                       np.empty((G, nv, 6)), np.empty((G, nv, 6)), np.empty((G, nv, 4, 6)))


@njit(callee=True, **_JIT)
def block_member(block, g):
    """Knot g's :data:`ContactWork` in a :func:`workspace_block` (views)."""
    w = block
    return ContactWork(w.M[g], w.LM[g], w.J[g], w.Y[g], w.Lam[g], w.LL[g], w.gamma[g], w.b[g],
                       w.S0[g], w.oR[g], w.op[g], w.IC[g], w.BC[g], w.FC[g], w.Psid[g],
                       w.Psidd[g], w.Sd[g], w.dof_forces[g])


@njit(callee=True, **_JIT)
def idsva_at_knot(m, v, a, tau, dtau_dq, dtau_dv, work):
    """IDSVA at (q, v, a) after :func:`kkt_at` at q (on its forward kinematics): tau,
    dtau_dq, dtau_dv and M (into work.M).  Its forward pass with the composites of the
    subtrees, and the forces of every DoF, stay in ``work`` for the contracted IDSVA-SO at the
    same point (:func:`idsva_so_at_knot`)."""
    w = work
    ground_inertias(m, w.oR, w.op, w.IC)
    w.BC[:, :, :] = 0.0
    idsva_forward_into(m, w.S0, w.IC, v, a, 1.0, w.BC, w.FC, w.Psid, w.Psidd, w.Sd)
    idsva_backward_sweep(m, w.S0, w.IC, w.BC, w.FC, w.Psid, w.Psidd, w.Sd, tau, dtau_dq, dtau_dv,
                         w.M, w.dof_forces)
    add_armature(m, a, tau, w.M)


@njit(callee=True, **_JIT)
def second_order_state(m, cints, cfloats, q, v, a, damping, impact, work):
    """What the second order at a knot reads of ``work`` (:func:`so_contracted_terms`,
    :func:`impulse_so_terms`), formed again at (q, v) and the knot's acceleration a (v+ at an
    impact, with ``m`` the model without gravity) when the first derivatives did not keep it:
    the KKT factors and what IDSVA at the knot keeps.  Returns the KKT status."""
    status = kkt_at(m, cints, cfloats, q, v, damping, work)
    if status != OK:
        return status
    nv = v.shape[0]
    tau, dtau_dq, dtau_dv = np.empty(nv), np.empty((nv, nv)), np.empty((nv, nv))  # unused
    if impact:  # ID at rest, acceleration v+ - v (impulse_derivatives_point)
        idsva_at_knot(m, np.zeros(nv), a - v, tau, dtau_dq, dtau_dv, work)
    else:
        idsva_at_knot(m, v, a, tau, dtau_dq, dtau_dv, work)
    return OK


@njit(callee=True, **_JIT)
def idsva_so_at_knot(m, mu, Hq, Hv, Hqv, G, work):
    """The contracted IDSVA-SO (:func:`~.second_order.idsva_so_contracted`) at the point of
    the last :func:`idsva_at_knot` into ``work``."""
    w = work
    idsva_so_contracted_sweep(m, w.S0, w.IC, w.BC, w.FC, w.Psid, w.Psidd, w.Sd, w.dof_forces, mu,
                              Hq, Hv, Hqv, G)


@njit(callee=True, fastmath=_FMA, **_JIT)
def kkt_derivatives(LM, LL, J, Y, Rq, Rv, dy_dq, dy_dv, dlam_dq, dlam_dv):
    """d(y, lam)/d(q, v) = -K^-1 [Rq Rv] for the KKT matrix K = [[M, -J^T], [J, 0]] (+ the
    damping on Lambda), from the factors of :func:`kkt_factor`; Rq, Rv (nv + nc, nv): dr/dq,
    dr/dv of the residual r.  With R1, R2 the first nv and the last nc rows:
    X_lam = Lambda^-1 (J M^-1 R1 - R2), X_y = M^-1 (J^T X_lam - R1)."""
    nv = Rq.shape[1]
    nc = J.shape[0]
    # rhs, Xl: the rows of the products (the inner loops run along them)
    shapes = ((2, nv, 2 * nv), (2, nc, 2 * nv), (2 * nv,))
    own = np.empty(extent(shapes))
    R1s, rows, row = carve(own, shapes)  # (module docstring, Memory)
    R1, MR1, rhs, Xl = R1s[0], R1s[1], rows[0], rows[1]
    for r in range(nv):
        for col in range(nv):
            R1[r, col] = Rq[r, col]
            R1[r, nv + col] = Rv[r, col]
    solve_spd(LM, R1, MR1)
    for i in range(nc):
        ri = rhs[i]
        for col in range(nv):
            ri[col] = -Rq[nv + i, col]
            ri[nv + col] = -Rv[nv + i, col]
        for r in range(nv):
            x = J[i, r]
            mr = MR1[r]
            for col in range(2 * nv):
                ri[col] += x * mr[col]
    solve_spd(LL, rhs, Xl)
    for r in range(nv):
        mr = MR1[r]
        for col in range(2 * nv):
            row[col] = -mr[col]
        for i in range(nc):
            y = Y[r, i]
            xl = Xl[i]
            for col in range(2 * nv):
                row[col] += y * xl[col]
        for col in range(nv):
            dy_dq[r, col] = row[col]
            dy_dv[r, col] = row[nv + col]
    for i in range(nc):
        for col in range(nv):
            dlam_dq[i, col] = Xl[i, col]
            dlam_dv[i, col] = Xl[i, nv + col]
    keep_alive(own)


@njit(callee=True, **_JIT)
def kkt_costate(LM, LL, Y, mu_a, mu_l, rho_a, rho_l):
    """rho = K^-T mu for the KKT matrix K of :func:`kkt_factor`'s factors: rho_l =
    Lambda^-1 (mu_l + Y^T mu_a) and rho_a = M^-1 mu_a - Y rho_l (into rho_a (nv,), rho_l (nc,))."""
    nv, nc = Y.shape
    for i in range(nc):
        s = mu_l[i]
        for r in range(nv):
            s += Y[r, i] * mu_a[r]
        rho_l[i] = s
    cholesky_solve_vector(LL, rho_l, rho_l)
    cholesky_solve_vector(LM, mu_a, rho_a)
    for r in range(nv):
        s = rho_a[r]
        for i in range(nc):
            s -= Y[r, i] * rho_l[i]
        rho_a[r] = s
