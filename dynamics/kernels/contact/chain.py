"""A contact's chain: the DoFs from the root to its frame, the columns of its point's Jacobian and
their derivatives by the rules of a right perturbation (the package docstring), the contact's
placement, gains and reference, its Jacobian and drift, and the drift's first derivative.
The packing of a contact set (:class:`~dynamics.contacts.ContactSet`): :data:`C_INTS` ints and
:data:`C_FLOATS` floats per contact, its kind (:data:`POINT` or :data:`SURFACE`) first.
"""

import numpy as np

from ...jit import borrowed, keep_alive, njit
from ..spatial import add_t, col3, cross3_add, cross3_into, cross_t, dot_t, row3, scale_t, sub_t

_JIT = dict(cache=True, error_model="numpy")


#: ints and floats per contact (dynamics.contacts.ContactSet), and the contact kinds
C_INTS, C_FLOATS = 3, 26


POINT, SURFACE = 3, 6


@njit(callee=True, **_JIT)
def chain_dofs(m, joint, dofs, lev):
    """The DoFs of the joints from the root to ``joint``, root first, into dofs; the position of
    each one's joint along that chain into lev.  Returns their number."""
    depth = 0
    i = joint
    while i > 0:
        depth += 1
        i = m.parent[i]
    n = 0
    for r in range(m.S_local.shape[0]):  # DoFs in tree order: the chain's come root first
        i = joint
        d = depth
        while i > 0:
            d -= 1
            if m.iv[i] <= r < m.iv[i] + m.nvj[i]:
                dofs[n] = r
                lev[n] = d
                n += 1
                break
            i = m.parent[i]
    return n


@njit(callee=True, **_JIT)
def point_columns(S0, dofs, nd, p, P, W):
    """W[:, i] = w_j and P[:, i] = s_j + w_j x p for the chain DoFs j = dofs[i]."""
    for i in range(nd):
        j = dofs[i]
        for r in range(3):
            W[r, i] = S0[j, 3 + r]
        P[0, i] = S0[j, 0] + W[1, i] * p[2] - W[2, i] * p[1]
        P[1, i] = S0[j, 1] + W[2, i] * p[0] - W[0, i] * p[2]
        P[2, i] = S0[j, 2] + W[0, i] * p[1] - W[1, i] * p[0]


@njit(callee=True, forceinline=True, **_JIT)
def column_derivative(P, W, lev, j, k, out):
    """dP_j/dq_k (module docstring) into out (3,); j, k chain indices."""
    d = column_derivative_t(P, W, lev, j, k)
    out[0], out[1], out[2] = d


@njit(callee=True, forceinline=True, **_JIT)
def column_derivative_t(P, W, lev, j, k):
    """dP_j/dq_k as a tuple."""
    if lev[k] <= lev[j]:
        return cross_t(col3(W, k), col3(P, j))
    return cross_t(col3(W, j), col3(P, k))


@njit(callee=True, **_JIT)
def contact_placement(oR, op, cfloats, c, joint, Rf, pf):
    """oMf (Rf, pf) of contact c's frame."""
    o = c * C_FLOATS
    for r in range(3):
        s = op[joint, r]
        for k in range(3):
            s += oR[joint, r, k] * cfloats[o + 9 + k]
        pf[r] = s
        for col in range(3):
            t = 0.0
            for k in range(3):
                t += oR[joint, r, k] * cfloats[o + 3 * k + col]
            Rf[r, col] = t


@njit(callee=True, **_JIT)
def contact_gains(cints, cfloats, c):
    """(surface, Kp on p - ref, Kp on log6, Kd) of contact c: a point's position gain acts on
    its origin's position, a flat foot's on the log6 of its placement (module docstring)."""
    o = c * C_FLOATS
    surface = cints[1 + C_INTS * c] == SURFACE
    kp = cfloats[o + 15]
    return surface, 0.0 if surface else kp, kp if surface else 0.0, cfloats[o + 16]


@njit(callee=True, **_JIT)
def contact_reference(cfloats, c, Rr, pr):
    """Contact c's reference placement (Rr, pr)."""
    o = c * C_FLOATS
    for r in range(3):
        pr[r] = cfloats[o + 12 + r]
        for col in range(3):
            Rr[r, col] = cfloats[o + 17 + 3 * r + col]


@njit(callee=True, **_JIT)
def point_drift(P, W, lev, nd, vc, CWle, PGE, t, out):
    """The drift sum_jk v_j v_k dP(j, k) = sum_j v_j (Omega_j x P_j + w_j x Psi_j) into out (3,),
    from the level sums of :func:`level_sums` (Omega_j = CWle[lev_j], Psi_j = PGE[lev_j + 1])."""
    for r in range(3):
        out[r] = 0.0
    for j in range(nd):
        cross3_into(CWle[lev[j]], P[:, j], t)
        cross3_add(W[:, j], PGE[lev[j] + 1], t)
        for r in range(3):
            out[r] += vc[j] * t[r]


@njit(callee=True, **_JIT)
def level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE):
    """Sums over the chain's joints (levels L): CWle[L] = sum_{lev_k <= L} v_k w_k, CWlt[L] =
    sum_{lev_k < L} v_k w_k (CWlt[nlev]: all of them) and PGE[L] = sum_{lev_k >= L} v_k P_k
    (PGE[nlev] = 0), the
    velocity-weighted sums with which the drift and its derivatives take O(nd^2) instead of
    O(nd^3); returns the number of levels."""
    nlev = chain_levels(lev, nd)
    for L in range(nlev + 1):
        for r in range(3):
            CWle[L, r] = 0.0
            PGE[L, r] = 0.0
    for i in range(nd):
        for r in range(3):
            CWle[lev[i], r] += vc[i] * W[r, i]  # per level first
            PGE[lev[i], r] += vc[i] * P[r, i]
    for r in range(3):
        run = 0.0
        for L in range(nlev):
            CWlt[L, r] = run
            run += CWle[L, r]
            CWle[L, r] = run
        CWlt[nlev, r] = run
        for L in range(nlev - 1, -1, -1):
            PGE[L, r] += PGE[L + 1, r]
    return nlev


@njit(callee=True, **_JIT)
def drift_derivative(P, W, lev, nd, vc, CWle, CWlt, PGE, Dq):
    """Dq[:, l] = d/dq_l of the drift sum_jk v_j v_k dP(j, k) = sum_j v_j g_j, g_j = Omega_j x P_j
    + w_j x Psi_j, Omega_j = CWle[lev_j], Psi_j = PGE[lev_j + 1] (:func:`level_sums`).  By the
    rules of the module docstring, with L = lev_l and c = CWlt[L]: for L <= lev_j,
    d Omega_j = w_l x (Omega_j - c), dP_j = w_l x P_j, dw_j = w_l x w_j, dPsi_j = w_l x Psi_j;
    for L > lev_j, dP_j = w_j x P_l and dPsi_j = w_l x PGE[L] + (c - Omega_j) x P_l (the others
    0).  By the triple products, with pg = PGE[L],

        L_l g_j = (P_j x Omega_j + Psi_j x w_j) x w_l - (w_l . P_j) c + (c . P_j) w_l   (L <= lev_j)
                = (Omega_j x w_j) x P_l + w_j x (c x P_l + w_l x pg)                  (L > lev_j)

    and summed over j with the level sums Z1(L) = sum_{lev_j >= L} v_j (P_j x Omega_j + Psi_j x
    w_j) and Z2(L) = sum_{lev_j < L} v_j Omega_j x w_j (c and pg are those of v_j w_j and
    v_j P_j)::

        Dq[:, l] = Z1(L) x w_l - (w_l . pg) c + (c . pg) w_l + Z2(L) x P_l
                   + c x (c x P_l + w_l x pg)

    O(nd) instead of a sum over the chain for each l (HyQ's four feet, the contact rows'
    derivatives, :func:`contact_residual_derivatives`: 5.2 -> 3.5 us a knot)."""
    nlev = chain_levels(lev, nd)
    own = np.zeros((2, nlev + 1, 3))
    Z = borrowed(own)  # (module docstring, Memory)
    Z1, Z2 = Z[0], Z[1]
    for j in range(nd):
        lj, vj = lev[j], vc[j]
        om, ps, wj, pj = row3(CWle, lj), row3(PGE, lj + 1), col3(W, j), col3(P, j)
        z1 = add_t(cross_t(pj, om), cross_t(ps, wj))
        z2 = cross_t(om, wj)
        for r in range(3):
            Z1[lj, r] += vj * z1[r]
            Z2[lj + 1, r] += vj * z2[r]
    from_level_up(Z1, nlev)
    below_level(Z2, nlev)
    for l in range(nd):
        L = lev[l]
        wl, pl, c, pg = col3(W, l), col3(P, l), row3(CWlt, L), row3(PGE, L)
        d = add_t(cross_t(row3(Z1, L), wl),
                   sub_t(scale_t(wl, dot_t(c, pg)), scale_t(c, dot_t(wl, pg))))
        d = add_t(d, add_t(cross_t(row3(Z2, L), pl),
                             cross_t(c, add_t(cross_t(c, pl), cross_t(wl, pg)))))
        Dq[0, l], Dq[1, l], Dq[2, l] = d
    keep_alive(own)


@njit(callee=True, **_JIT, forceinline=True)
def from_level_up(A, nlev):
    """In place, for A (nlev + 1, 3) holding one term per level: A[L] = sum of A[L'], L' >= L
    (the levels at or after L), for L < nlev."""
    for L in range(nlev - 1, -1, -1):
        for r in range(3):
            A[L, r] += A[L + 1, r]


@njit(callee=True, **_JIT, forceinline=True)
def below_level(A, nlev):
    """In place, for A (nlev + 1, 3) holding one term per level, the term of level L in
    A[L + 1]: A[L] = sum of A[L'], L' <= L, for L = 1 .. nlev (the levels before L once
    shifted)."""
    for L in range(1, nlev + 1):
        for r in range(3):
            A[L, r] += A[L - 1, r]


@njit(callee=True, **_JIT)
def chain_levels(lev, nd):
    """The number of levels of a chain."""
    nlev = 0
    for i in range(nd):
        nlev = max(nlev, lev[i] + 1)
    return nlev
