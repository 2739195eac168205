"""Rigid-contact dynamics and impacts with their first and second derivatives, compiled (the
model: :mod:`dynamics.contacts`).

Per knot, with the contact set packed by :class:`~dynamics.contacts.ContactSet` (``cints``,
``cfloats``): the constrained forward dynamics (a, lam) of the KKT system

    M a - J^T lam = tau - b,     J a + gamma = 0,

and the derivatives of (a, lam) in (q, v, tau) along the project's conventions (Lie derivatives
along right perturbations of q).

Kinematics of a point contact (ground frame, ``[lin, ang]`` motion vectors).  For the chain of
DoFs from the root to the contact's joint, with S_j = (s_j, w_j) their ground-frame motion
subspace columns and p the contact point, the columns of its world-aligned Jacobian are the
velocities of p, ``P_j = s_j + w_j x p``.  A right perturbation of DoF k moves rigidly the
subtree of its joint, which holds p and the columns of its own and every later joint of the
chain; with lev(j) the position of j's joint along the chain::

    dp/dq_k   = P_k
    dw_j/dq_k = w_k x w_j                      if lev(k) <= lev(j), else 0
    dP_j/dq_k = w_k x P_j                      if lev(k) <= lev(j)   (the subtree turns)
              = w_j x P_k                      otherwise              (only p moves)

(``dP(j, k)`` below; within one multi-DoF joint both cases give the first, whence the non-
symmetric q-q blocks of the convention).  Then, with the contact force lam_c and the gains::

    J a + Jdot v   = sum_j P_j a_j + sum_jk v_j v_k dP(j, k)      (the classical acceleration)
    gamma          = sum_jk v_j v_k dP(j, k) + Kp (p - ref) + Kd sum_j P_j v_j
    (J^T lam)_j    = P_j . lam

and the derivatives below follow by the same rules, the second derivatives of P by
differentiating dP(j, k) once more (ddP(j, k, l), which :func:`_weighted_hessian` sums
with weights over j).

A flat foot (kind SURFACE, Crocoddyl's ``ContactModel6D`` with ``LOCAL_WORLD_ALIGNED``) holds
the whole frame: its rows are its origin's point rows, with the spatial instead of the classical
acceleration, and three angular rows.  With om = sum_j v_j w_j and pd = sum_j v_j P_j (the
frame's angular velocity and its origin's velocity), U_j = sum_{lev_i < lev_j} v_i w_i and the
angular columns' rule ``dW(j, k) = dw_j/dq_k = [lev_k <= lev_j] w_k x w_j``::

    linear rows    J a + gamma = (the point rows at Kp = 0) - om x pd
    angular rows   J a + gamma = sum_j w_j a_j + sum_j v_j U_j x w_j + Kd om
    (J^T lam)_j    += w_j . tau_c                  (tau_c: the torque rows of the wrench)

(the drift sum_jk v_j v_k dW(j, k) keeps only lev_k < lev_j: the pairs in one joint cancel).
Their second derivatives take ``ddW(j, k, l) = L_l dW(j, k) = [lev_k <= lev_j] (dW(k, l) x w_j
+ w_k x dW(j, l))``; every (q, q) term is a weight dotted with ddW or ddP, so level suffix sums
give them without a third-order tensor (:func:`_surface_second_order`).

A flat foot's position gain (Crocoddyl's ``Kp log6``, :func:`surface_position_gain`) adds
Kp g to its rows, g = R l with l = log6(ref^-1 oMf) = (l_v, l_w) and R the frame's rotation
acting on each part.  A chain DoF k moves the frame by the local twist
xi_k = (R^T P_k, R^T w_k), so with Jlog6 the log's Jacobian in a right perturbation
(:func:`~dynamics.kernels.lie_group.se3_log_jacobian`)::

    L_k l = Jlog6 xi_k,      L_k g_b = w_k x g_b + R (Jlog6 xi_k)_b      (b: the part v or w)

For the second derivative of rho . g: Jlog6 changes along DoF l by H(xi_l, .) + 1/2 Jlog6
ad(xi_l) (H: the log's Hessian; the bracket from Exp(xi_l) Exp(x) = Exp(xi_l + x + 1/2
ad(xi_l) x + ...)), and L_l xi_k = -ad(xi_l) xi_k when lev_l > lev_k (the frame moves against
column k), else 0 (both move with the subtree).  With sigma = R^T rho by parts, G = sigma . H
(:func:`~dynamics.kernels.lie_group.se3_log_hessian_contracted`), kappa = Jlog6^T sigma and
c = sum_b g_b x rho_b::

    L_l L_k (rho . g) = [lev_l <= lev_k] (w_l x w_k) . c + w_k . sum_b L_l g_b x rho_b
                        + w_l . sum_b R (Jlog6 xi_k)_b x rho_b + xi_l^T G xi_k
                        + (1/2 - [lev_l > lev_k]) kappa . ad(xi_l) xi_k

O(nd^2) on the chain; g does not depend on v.

Derivatives of the KKT solution (the implicit function theorem).  With
r(q, v, tau, a, lam) = [ID(q, v, a) - J^T lam - tau ; J a + gamma] and
K = dr/d(a, lam) = [[M, -J^T], [J, 0]], the derivatives are d(a, lam)/dx = -K^-1 dr/dx.  Here
dID/dq, dID/dv come from IDSVA at the constrained acceleration, and K^-1 is applied through the
Cholesky factors of M and of the contact-space inverse inertia Lambda = J M^-1 J^T (+ damping I,
Crocoddyl's ``JMinvJt_damping``; with none, a rank-deficient J makes Lambda singular: status
SINGULAR).

Second derivatives, contracted with a co-state mu over (a, lam).  Differentiating r = 0 twice,
with Z = [I ; d(a, lam)/dx] (the total derivative of (x, a, lam) in x) and rho = K^-T mu,

    mu . d2(a, lam)/dx2 = -Z^T (d2 (rho . r)) Z,

so no tensor is formed: rho_a . ID's second derivatives come from the contracted IDSVA-SO at
the constrained acceleration (its (q, q), (v, v), (q, v) blocks and its (q, a) block, which is
rho_a . dM/dq; it reads the forward pass, the composites and the per-DoF forces that IDSVA
left at the same point for the first derivatives, :data:`ContactWork`), and the contact rows'
from :func:`_point_second_order`, a closed form on each contact's chain in the rules above.
The (v, a), (a, a), (lam, .) blocks of d2 (rho . r) are 0 (r is linear in a and lam, and M
does not depend on v), and tau enters r linearly.  The full
tensors are the contractions with unit co-states, one per output row.

Impacts (:func:`impulse_dynamics_point`).  The residual r = [M(q) (v+ - v) - J^T imp ;
J (v+ + r_c v)] has the same K in y = (v+, imp); dr/dq is ID's at rest without gravity and
acceleration v+ - v (that is d(M dv)/dq) with the contacts' terms at velocity 0 and
acceleration v+ + r_c v, and dr/dv = [-M ; r_c J].  Its second derivatives follow as above:
(q, q) and (q, v+) from the contracted IDSVA-SO at rest, (q, v) = -rho_a . dM/dq plus r_c times
the contacts' (q, v+) block, and none in (v, v).

Memory.  The chain functions run once per contact and knot on arrays of a few dozen numbers,
and numba's allocations and reference counts took about a quarter of a batched second order's
time (HyQ, four feet, first derivatives included).  A function's scratch arrays, of any
shapes, are therefore one allocation, carved into borrowed views (:func:`dynamics.jit.carve`:
views without a reference count).  A HyQ knot on four feet then allocates 43 times for its first
derivatives and 65 for its second order, against 88 and 184 with an allocation per array.  A
batched second order (:func:`constrained_so_chunk`) forms the first derivatives of a group of
:data:`GROUP` knots, each into its own work arrays (:func:`workspace_group`), before their
second-order terms, so that each phase's code stays in the core's caches over the group.
"""

from collections import namedtuple

import numpy as np

from ..jit import borrowed, carve, chunk_range, copy_into, extent, in_parallel, keep_alive, njit
from .dense import back_substitution, cholesky, cholesky_solve_vector, forward_substitution
from .inverse import (crba_point, ground_inertias, idsva_backward_sweep, idsva_forward_into,
                      rnea_point)
from .kinematics import forward_kinematics
from .lie_group import se3_log_hessian_contracted, se3_log_jacobian
from .packed_model import unpack
from .second_order import idsva_so_contracted_sweep
from .spatial import dot6, matTvec6, matvec6

_JIT = dict(cache=True, error_model="numpy")
#: the floating-point freedoms of the dense solves and products: fused multiply-adds and
#: reassociation (ATLAS, first derivatives: 74 -> 67 us a knot), but no assumption that values
#: are finite, so that a NaN still reaches the statuses
_FMA = {"contract", "reassoc"}

#: the work arrays of one knot (:func:`contact_workspace`): the KKT system's M, M's factor LM,
#: J, Y = M^-1 J^T, Lambda and its factor LL, gamma, b (nv,), the forward kinematics S0, oR, op;
#: and IDSVA's forward pass at the knot's acceleration, with the composite inertias, body-Coriolis
#: matrices and forces IC, BC, FC (njoints, ...), Psid, Psidd, Sd (nv, 6) and the forces of every
#: DoF (nv, 4, 6), which the second order reads (:func:`_id_second_order`)
ContactWork = namedtuple("ContactWork",
                         "M LM J Y Lam LL gamma b S0 oR op IC BC FC Psid Psidd Sd dof_forces")

#: statuses of the contact kernels
OK, SINGULAR_MASS, SINGULAR_CONTACT = 0, 1, 2
#: the knots whose first derivatives a batched second order forms before their second-order
#: terms (module docstring, Memory)
GROUP = 8
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


@njit(callee=True, forceinline=True, **_JIT)
def _cross(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(callee=True, forceinline=True, **_JIT)
def _cross_add(a, b, out):
    out[0] += a[1] * b[2] - a[2] * b[1]
    out[1] += a[2] * b[0] - a[0] * b[2]
    out[2] += a[0] * b[1] - a[1] * b[0]


# 3-vectors as tuples, for the loops over pairs of chain DoFs: values in a tuple live in
# registers, where a slice such as W[:, k] is an array view built (and counted) at every use
# (the weighted Hessian of HyQ's foot: 2.0 -> 1.0 us)
@njit(callee=True, forceinline=True, **_JIT)
def _tup3(x):
    """The three entries of x."""
    return (x[0], x[1], x[2])


@njit(callee=True, forceinline=True, **_JIT)
def _col3(A, i):
    """Column i of a (3, n) array."""
    return (A[0, i], A[1, i], A[2, i])


@njit(callee=True, forceinline=True, **_JIT)
def _row3(A, i):
    """Row i of an (n, 3) array."""
    return (A[i, 0], A[i, 1], A[i, 2])


@njit(callee=True, forceinline=True, **_JIT)
def _row3_at(A, i, j):
    """A[i, j] of an (n, m, 3) array."""
    return (A[i, j, 0], A[i, j, 1], A[i, j, 2])


@njit(callee=True, forceinline=True, **_JIT)
def _cross_t(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(callee=True, forceinline=True, **_JIT)
def _dot_t(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(callee=True, forceinline=True, **_JIT)
def _add_t(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(callee=True, forceinline=True, **_JIT)
def _sub_t(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(callee=True, forceinline=True, **_JIT)
def _scale_t(a, x):
    return (a[0] * x, a[1] * x, a[2] * x)


@njit(callee=True, forceinline=True, **_JIT)
def _matTvec_at(A, i, x):
    """A[i]^T @ x for an (n, 3, 3) array A."""
    return (A[i, 0, 0] * x[0] + A[i, 1, 0] * x[1] + A[i, 2, 0] * x[2],
            A[i, 0, 1] * x[0] + A[i, 1, 1] * x[1] + A[i, 2, 1] * x[2],
            A[i, 0, 2] * x[0] + A[i, 1, 2] * x[1] + A[i, 2, 2] * x[2])


@njit(callee=True, forceinline=True, **_JIT)
def _matvec_at(A, i, x):
    """A[i] @ x for an (n, 3, 3) array A."""
    return (A[i, 0, 0] * x[0] + A[i, 0, 1] * x[1] + A[i, 0, 2] * x[2],
            A[i, 1, 0] * x[0] + A[i, 1, 1] * x[1] + A[i, 1, 2] * x[2],
            A[i, 2, 0] * x[0] + A[i, 2, 1] * x[1] + A[i, 2, 2] * x[2])


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
    d = _column_derivative_t(P, W, lev, j, k)
    out[0], out[1], out[2] = d


@njit(callee=True, forceinline=True, **_JIT)
def _column_derivative_t(P, W, lev, j, k):
    """dP_j/dq_k as a tuple."""
    if lev[k] <= lev[j]:
        return _cross_t(_col3(W, k), _col3(P, j))
    return _cross_t(_col3(W, j), _col3(P, k))


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
def _point_drift(P, W, lev, nd, vc, CWle, PGE, t, out):
    """The drift sum_jk v_j v_k dP(j, k) = sum_j v_j (Omega_j x P_j + w_j x Psi_j) into out (3,),
    from the level sums of :func:`_level_sums` (Omega_j = CWle[lev_j], Psi_j = PGE[lev_j + 1])."""
    for r in range(3):
        out[r] = 0.0
    for j in range(nd):
        _cross(CWle[lev[j]], P[:, j], t)
        _cross_add(W[:, j], PGE[lev[j] + 1], t)
        for r in range(3):
            out[r] += vc[j] * t[r]


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
        _level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
        _point_drift(P, W, lev, nd, vc, CWle, PGE, t, drift)
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
            _surface_gamma(P, W, lev, nd, vc, CWlt, kd, gamma[row:row + 6])
            if kps != 0.0:
                contact_reference(cfloats, c, Rr, pr)
                surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, g6, np.int64(0), g6, D0,
                                      D0)
                for r in range(6):
                    gamma[row + r] += kps * g6[r]
    keep_alive(own)


@njit(callee=True, fastmath=_FMA, **_JIT)
def _solve_spd(L, B, X):
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
    _solve_spd(LM, JT, Y)
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
    """The :data:`ContactWork` arrays of one knot (a group of one, :func:`workspace_group`)."""
    return group_member(workspace_group(1, nj, nv, nc), 0)


@njit(callee=True, **_JIT)
def kinematics_workspace(nj, nv, nc, S0, oR, op):
    """:func:`contact_workspace` whose forward kinematics are the given arrays."""
    w = contact_workspace(nj, nv, nc)
    return ContactWork(w.M, w.LM, w.J, w.Y, w.Lam, w.LL, w.gamma, w.b, S0, oR, op, w.IC, w.BC,
                       w.FC, w.Psid, w.Psidd, w.Sd, w.dof_forces)


@njit(callee=True, **_JIT)
def workspace_group(G, nj, nv, nc):
    """The :func:`contact_workspace` of G knots as one :data:`ContactWork` whose arrays have a
    leading knot axis (one knot's: :func:`group_member`)."""
    return ContactWork(np.empty((G, nv, nv)), np.zeros((G, nv, nv)), np.empty((G, nc, nv)),
                       np.empty((G, nv, nc)), np.empty((G, nc, nc)), np.zeros((G, nc, nc)),
                       np.empty((G, nc)), np.empty((G, nv)), np.empty((G, nv, 6)),
                       np.empty((G, nj, 3, 3)), np.empty((G, nj, 3)), np.empty((G, nj, 6, 6)),
                       np.empty((G, nj, 6, 6)), np.empty((G, nj, 6)), np.empty((G, nv, 6)),
                       np.empty((G, nv, 6)), np.empty((G, nv, 6)), np.empty((G, nv, 4, 6)))


@njit(callee=True, **_JIT)
def group_member(group, g):
    """Knot g's :data:`ContactWork` in a :func:`workspace_group` (views)."""
    w = group
    return ContactWork(w.M[g], w.LM[g], w.J[g], w.Y[g], w.Lam[g], w.LL[g], w.gamma[g], w.b[g],
                       w.S0[g], w.oR[g], w.op[g], w.IC[g], w.BC[g], w.FC[g], w.Psid[g],
                       w.Psidd[g], w.Sd[g], w.dof_forces[g])


@njit(callee=True, **_JIT)
def _id_derivatives(m, v, a, tau, dtau_dq, dtau_dv, work):
    """IDSVA at (q, v, a) after :func:`kkt_at` at q (on its forward kinematics): tau,
    dtau_dq, dtau_dv and M (into work.M).  Its forward pass with the composites of the
    subtrees, and the forces of every DoF, stay in ``work`` for the contracted IDSVA-SO at the
    same point (:func:`_id_second_order`)."""
    w = work
    ground_inertias(m, w.oR, w.op, w.IC)
    w.BC[:, :, :] = 0.0
    idsva_forward_into(m, w.S0, w.IC, v, a, 1.0, w.BC, w.FC, w.Psid, w.Psidd, w.Sd)
    idsva_backward_sweep(m, w.S0, w.IC, w.BC, w.FC, w.Psid, w.Psidd, w.Sd, tau, dtau_dq, dtau_dv,
                         w.M, w.dof_forces)


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
        _id_derivatives(m, np.zeros(nv), a - v, tau, dtau_dq, dtau_dv, work)
    else:
        _id_derivatives(m, v, a, tau, dtau_dq, dtau_dv, work)
    return OK


@njit(callee=True, **_JIT)
def _id_second_order(m, mu, Hq, Hv, Hqv, G, work):
    """The contracted IDSVA-SO (:func:`~.second_order.idsva_so_contracted`) at the point of
    the last :func:`_id_derivatives` into ``work``."""
    w = work
    idsva_so_contracted_sweep(m, w.S0, w.IC, w.BC, w.FC, w.Psid, w.Psidd, w.Sd, w.dof_forces, mu,
                              Hq, Hv, Hqv, G)


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
                dpjk = _column_derivative_t(P, W, lev, j, k)
                Rq[dofs[j], dofs[k]] -= _dot_t(lam_c, dpjk)  # -(d(J^T lam)/dq)[j, k]
                dja = _add_t(dja, _scale_t(dpjk, ac[j]))
            for r in range(3):
                Rq[rr + r, dofs[k]] += dja[r]  # d(J a)/dq_k
        _level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
        for k in range(nd):  # d(J v)/dq_k = sum_j v_j dP(j, k) = w_k x PGE + CWlt x P_k
            _cross(W[:, k], PGE[lev[k]], t)
            _cross(CWlt[lev[k]], P[:, k], t1)
            for r in range(3):
                dvp[r, k] = t[r] + t1[r]
        _drift_derivative(P, W, lev, nd, vc, CWle, CWlt, PGE, Dq)
        for l in range(nd):
            for r in range(3):
                Rq[rr + r, dofs[l]] += Dq[r, l] + kpp * P[r, l] + kd * dvp[r, l]
        for m_ in range(nd):  # d(drift)/dv_m = g_m + sum_j v_j dP(j, m)
            _cross(CWle[lev[m_]], P[:, m_], t)  # g_m = Omega_m x P_m + w_m x Psi_m
            _cross(W[:, m_], PGE[lev[m_] + 1], t1)
            for r in range(3):
                Rv[rr + r, dofs[m_]] = t[r] + t1[r] + dvp[r, m_] + kd * P[r, m_]
        if surface:
            _surface_residual(P, W, lev, nd, vc, ac, lam[row + 3:row + 6], kd, dofs, rr, dvp, Rq,
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
def _level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE):
    """Sums over the chain's joints (levels L): CWle[L] = sum_{lev_k <= L} v_k w_k, CWlt[L] =
    sum_{lev_k < L} v_k w_k (CWlt[nlev]: all of them) and PGE[L] = sum_{lev_k >= L} v_k P_k
    (PGE[nlev] = 0), the
    velocity-weighted sums with which the drift and its derivatives take O(nd^2) instead of
    O(nd^3); returns the number of levels."""
    nlev = _chain_levels(lev, nd)
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
def _drift_derivative(P, W, lev, nd, vc, CWle, CWlt, PGE, Dq):
    """Dq[:, l] = d/dq_l of the drift sum_jk v_j v_k dP(j, k) = sum_j v_j g_j, g_j = Omega_j x P_j
    + w_j x Psi_j, Omega_j = CWle[lev_j], Psi_j = PGE[lev_j + 1] (:func:`_level_sums`).  By the
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
    nlev = _chain_levels(lev, nd)
    own = np.zeros((2, nlev + 1, 3))
    Z = borrowed(own)  # (module docstring, Memory)
    Z1, Z2 = Z[0], Z[1]
    for j in range(nd):
        lj, vj = lev[j], vc[j]
        om, ps, wj, pj = _row3(CWle, lj), _row3(PGE, lj + 1), _col3(W, j), _col3(P, j)
        z1 = _add_t(_cross_t(pj, om), _cross_t(ps, wj))
        z2 = _cross_t(om, wj)
        for r in range(3):
            Z1[lj, r] += vj * z1[r]
            Z2[lj + 1, r] += vj * z2[r]
    for r in range(3):
        for L in range(nlev - 1, -1, -1):
            Z1[L, r] += Z1[L + 1, r]
        for L in range(1, nlev + 1):
            Z2[L, r] += Z2[L - 1, r]
    for l in range(nd):
        L = lev[l]
        wl, pl, c, pg = _col3(W, l), _col3(P, l), _row3(CWlt, L), _row3(PGE, L)
        d = _add_t(_cross_t(_row3(Z1, L), wl),
                   _sub_t(_scale_t(wl, _dot_t(c, pg)), _scale_t(c, _dot_t(wl, pg))))
        d = _add_t(d, _add_t(_cross_t(_row3(Z2, L), pl),
                             _cross_t(c, _add_t(_cross_t(c, pl), _cross_t(wl, pg)))))
        Dq[0, l], Dq[1, l], Dq[2, l] = d
    keep_alive(own)


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
    _solve_spd(LM, R1, MR1)
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
    _solve_spd(LL, rhs, Xl)
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
    _id_derivatives(m, v, a, tau_a, Rq[:nv], Rv[:nv], work)
    contact_residual_derivatives(m, cints, cfloats, q, v, a, lam, work.S0, work.oR, work.op, Rq,
                                 Rv)
    kkt_derivatives(LM, LL, J, Y, Rq, Rv, da_dq, da_dv, dlam_dq, dlam_dv)
    # tau: X_lam = -Lambda^-1 Y^T, X_a = M^-1 - Y Lambda^-1 Y^T
    copy_into(YT, Y.T)
    for r in range(nv):
        eye[r, r] = 1.0
    _solve_spd(LL, YT, LY)
    _solve_spd(LM, eye, da_dtau)
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


# ---------------------------------------------------------------------------------- surfaces
@njit(callee=True, **_JIT)
def _angular_derivatives(W, lev, nd, dW):
    """dW[j, k] = dw_j/dq_k = [lev_k <= lev_j] w_k x w_j (module docstring)."""
    for j in range(nd):
        wj = _col3(W, j)
        for k in range(nd):
            if lev[k] <= lev[j]:
                dW[j, k, 0], dW[j, k, 1], dW[j, k, 2] = _cross_t(_col3(W, k), wj)
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
def _chain_levels(lev, nd):
    """The number of levels of a chain."""
    nlev = 0
    for i in range(nd):
        nlev = max(nlev, lev[i] + 1)
    return nlev


@njit(callee=True, **_JIT)
def _surface_gamma(P, W, lev, nd, vc, CWlt, kd, g):
    """A surface contact's drift rows beyond its origin's point rows (module docstring): the
    linear rows are the spatial acceleration, g[:3] -= om x pd, and the angular rows
    g[3:] = sum_j v_j U_j x w_j + Kd om (U_j = CWlt[lev_j], :func:`_level_sums`)."""
    own = np.empty((3, 3))
    v3 = borrowed(own)  # (module docstring, Memory)
    om, pd, t = v3[0], v3[1], v3[2]
    _twist(P, W, nd, vc, om, pd)
    _cross(om, pd, t)
    for r in range(3):
        g[r] -= t[r]
        g[3 + r] = kd * om[r]
    for j in range(nd):
        _cross(CWlt[lev[j]], W[:, j], t)
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
            _cross(W[:, k], g[3 * b:3 * b + 3], t)
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
        _cross_add(g[3 * b:3 * b + 3], rho[3 * b:3 * b + 3], cw)
    matTvec6(Jl, sig, y)
    for b in range(2):
        for r in range(3):
            kap[3 * b + r] = (Rf[r, 0] * y[3 * b] + Rf[r, 1] * y[3 * b + 1]
                              + Rf[r, 2] * y[3 * b + 2])
    se3_log_hessian_contracted(RE, pE, ell, Jl, sig, G)
    for k in range(nd):
        for b in range(2):
            _cross_add(D[3 * b:3 * b + 3, k], rho[3 * b:3 * b + 3], E[k])
            _cross_add(X[3 * b:3 * b + 3, k], rho[3 * b:3 * b + 3], Y[k])
        matvec6(G, xi[k], Gx[k])
    for k in range(nd):
        for l in range(nd):
            x = (W[0, k] * E[l, 0] + W[1, k] * E[l, 1] + W[2, k] * E[l, 2]
                 + W[0, l] * Y[k, 0] + W[1, l] * Y[k, 1] + W[2, l] * Y[k, 2]
                 + dot6(xi[l], Gx[k]))
            _cross(W[:, l], W[:, k], t)  # ad(xi_l) xi_k in the world's axes: (w_l x P_k
            _cross(W[:, l], P[:, k], u)  # + P_l x w_k, w_l x w_k)
            _cross_add(P[:, l], W[:, k], u)
            ad = (kap[0] * u[0] + kap[1] * u[1] + kap[2] * u[2]
                  + kap[3] * t[0] + kap[4] * t[1] + kap[5] * t[2])
            if lev[l] <= lev[k]:
                x += cw[0] * t[0] + cw[1] * t[1] + cw[2] * t[2] + 0.5 * ad
            else:
                x -= 0.5 * ad
            H[k, l] += x
    keep_alive(own)


@njit(callee=True, **_JIT)
def _surface_residual(P, W, lev, nd, vc, ac, lam_w, kd, dofs, rr, dvp, Rq, Rv):
    """A surface contact's terms of dr/dq, dr/dv beyond its origin's point terms: the torque's
    -d(W^T lam_w)/dq on the first rows, -om x pd's derivatives on the linear rows rr.., and the
    angular rows rr + 3.. (W a + sum_j v_j U_j x w_j + Kd om) written; ``dvp`` (3, nd): the
    derivatives of pd = sum_j v_j P_j along the chain (:func:`contact_residual_derivatives`)."""
    nv = Rq.shape[1]
    nlev = _chain_levels(lev, nd)
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
    omt, pdt = _tup3(om), _tup3(pd)
    for l in range(nd):
        dom = _row3_at(DWlt, nlev, l)
        lin = _add_t(_cross_t(dom, pdt), _cross_t(omt, _col3(dvp, l)))  # L_l (om x pd)
        ang = _scale_t(dom, kd)
        for j in range(nd):  # W a and sum_j v_j (L_l U_j x w_j + U_j x dW(j, l))
            dwj = _row3_at(dW, j, l)
            u = _add_t(_cross_t(_row3_at(DWlt, lev[j], l), _col3(W, j)),
                       _cross_t(_row3(CWlt, lev[j]), dwj))
            ang = _add_t(ang, _add_t(_scale_t(dwj, ac[j]), _scale_t(u, vc[j])))
        for r in range(3):
            Rq[rr + r, dofs[l]] -= lin[r]
            Rq[rr + 3 + r, dofs[l]] = ang[r]
    for k in range(nd):
        for j in range(nd):
            Rq[dofs[j], dofs[k]] -= (lam_w[0] * dW[j, k, 0] + lam_w[1] * dW[j, k, 1]
                                     + lam_w[2] * dW[j, k, 2])
    for m_ in range(nd):
        _cross(W[:, m_], pd, t)
        _cross_add(om, P[:, m_], t)
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
def _surface_second_order(P, W, lev, nd, vc, ac, rac, lam_w, rho_l, rho_w, kd, Aqq, Avv, Aqv,
                          Bqa, Bqw, cq):
    """A surface contact's terms of the Hessian of rho_a . r1 + rho . r2 beyond its origin's
    point terms (:func:`_point_second_order`, same blocks and chain indices): those of the
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
    nlev = _chain_levels(lev, nd)
    n1 = nlev + 1
    rl, rw, lw = _tup3(rho_l), _tup3(rho_w), _tup3(lam_w)
    # level sums: CW[L] = sum_{lev_j < L} v_j w_j (om = CW[nlev]) and PG[L] = sum_{lev_j >= L}
    # v_j P_j (:func:`_level_sums`); RW[L] = sum_{lev_j >= L} rho_a,j w_j; per level
    # Vw = sum v_j w_j, Vr = sum v_j w_j . rw
    shapes = ((3, n1, 3), (3, n1, 3), (2, n1), (13, nd, 3), (n1, 3, 3), (3, n1 + 1, 3),
              (n1 + 1,), (nd,), (nd, nd))
    own = np.zeros(extent(shapes))
    lsums, zsums, zsums1, per_dof, MG, xsums, X4, S1, S = carve(own, shapes)  # (module docstring)
    CWle, CW, PG = lsums[0], lsums[1], lsums[2]
    _level_sums(P, W, lev, nd, vc, CWle, CW, PG)
    RW, Vw, Vr = zsums[0], zsums[1], zsums1[0]
    for j in range(nd):
        L = lev[j]
        wj, vj = _col3(W, j), vc[j]
        for r in range(3):
            Vw[L, r] += vj * wj[r]
            RW[L, r] += rac[j] * wj[r]
        Vr[L] += vj * _dot_t(wj, rw)
    for r in range(3):
        for L in range(nlev - 1, -1, -1):
            RW[L, r] += RW[L + 1, r]
    om, pd = _row3(CW, nlev), _row3(PG, 0)
    ro = _cross_t(rl, om)
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
        wj, pj, c, c1 = _col3(W, j), _col3(P, j), _row3(CW, J), _row3(CW, J + 1)
        e = _cross_t(wj, _sub_t(om, c))
        dpd = _add_t(_cross_t(wj, _row3(PG, J)), _cross_t(c, pj))
        wr = _cross_t(wj, rw)
        oc = _sub_t(om, c)
        al = _sub_t(_scale_t(wr, kd), _add_t(_cross_t(wj, _cross_t(pd, rl)), _cross_t(pj, ro)))
        al = _add_t(al, _add_t(_cross_t(c1, wr), _cross_t(wj, _cross_t(rw, c1))))
        al = _add_t(al, _add_t(_cross_t(wj, _cross_t(oc, rw)), _cross_t(oc, _cross_t(rw, wj))))
        pl, wl, f = _cross_t(pj, rl), _cross_t(wj, rl), _cross_t(wj, c)
        for r in range(3):
            E[j, r], DPD[j, r], PL[j, r], WR[j, r] = e[r], dpd[r], pl[r], wr[r]
            WL[j, r], F[j, r], AL[j, r] = wl[r], f[r], al[r]
    # (q, a), (q, lam_w), (v, v)
    for k in range(nd):
        K = lev[k]
        wk = _col3(W, k)
        t = _cross_t(wk, _row3(RW, K))
        for r in range(3):
            Bqw[k, r] -= t[r]
        for j in range(nd):  # rho_w . dW(j, k) = [K <= lev_j] w_k . (w_j x rho_w)
            wj = _col3(W, j)
            h = -_dot_t(wk, _row3(PL, j)) - _dot_t(wj, _row3(PL, k))
            if lev[j] <= K:
                h += _dot_t(wj, _row3(WR, k))
            if K <= lev[j]:
                x = _dot_t(wk, _row3(WR, j))
                Bqa[k, j] += x
                h += x
            Avv[k, j] += h
    # (q, v)
    for l in range(nd):
        L = lev[l]
        wl, pl, el, dl, fl = _col3(W, l), _col3(P, l), _row3(E, l), _row3(DPD, l), _row3(F, l)
        for m_ in range(nd):
            h = _dot_t(dl, _row3(WL, m_)) - _dot_t(el, _row3(PL, m_))
            if L <= lev[m_]:
                h += _dot_t(wl, _row3(AL, m_)) - _dot_t(_row3(WR, m_), fl)
            else:
                wm = _col3(W, m_)
                h += _dot_t(el, _cross_t(rw, wm)) - _dot_t(pl, _cross_t(ro, wm))
            Aqv[l, m_] += h
    # (q, q).  The weights of ddW(j, k, l): G_j = (a_j + Kd v_j) rho_w - rho_a,j lam_w
    # + v_j ((om - CW[lev_j + 1]) x rho_w + rho_l x pd + rho_w x CW[lev_j])
    rp = _cross_t(rl, pd)
    A = zsums[2]  # suffix sums of w_j x G_j
    # MG: of w_j G_j^T
    sG = zsums1[1]  # of w_j . G_j
    for j in range(nd):
        J, vj, wj = lev[j], vc[j], _col3(W, j)
        t = _add_t(_add_t(_cross_t(_sub_t(om, _row3(CW, J + 1)), rw), rp),
                   _cross_t(rw, _row3(CW, J)))
        g = _sub_t(_add_t(_scale_t(rw, ac[j] + kd * vj), _scale_t(t, vj)), _scale_t(lw, rac[j]))
        a = _cross_t(wj, g)
        for r in range(3):
            A[J, r] += a[r]
            for c in range(3):
                MG[J, r, c] += wj[r] * g[c]
        sG[J] += _dot_t(wj, g)
    # S's suffix sums over the levels L' >= N: X1 = CW[L'] x Vw[L'], X2 = Vw, X3 = Vr CW[L'],
    # X4 = Vr
    X1, X2, X3 = xsums[0], xsums[1], xsums[2]
    for L in range(nlev - 1, -1, -1):
        t = _cross_t(_row3(CW, L), _row3(Vw, L))
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
        wk, ck = _col3(W, k), _row3(CW, K)
        u = _add_t(_cross_t(wk, _row3(A, K)), _sub_t(_matTvec_at(MG, K, wk), _scale_t(wk, sG[K])))
        gam = _sub_t(_matvec_at(MG, K, wk), _scale_t(wk, sG[K]))
        s1 = _dot_t(wk, _sub_t(_row3(X1, K + 1), _cross_t(ck, _row3(X2, K + 1))))
        sig = _cross_t(wk, _sub_t(_row3(X3, K + 1), _scale_t(ck, X4[K + 1])))
        sg, h3, re = _cross_t(wk, ck), _cross_t(_row3(X3, K), wk), _cross_t(rl, _row3(E, k))
        S1[k] = s1
        for r in range(3):
            U[k, r], GAM[k, r], SG[k, r], SIG[k, r], H3[k, r], RE[k, r] = \
                u[r], gam[r], sg[r], sig[r], h3[r], re[r]
    for k in range(nd):
        K = lev[k]
        wk, gk = _col3(W, k), _row3(SG, k)
        for l in range(nd):
            L = lev[l]
            wl = _col3(W, l)
            wlr = _dot_t(wl, rw)
            if L <= K:
                S[k, l] = wlr * S1[k] - _dot_t(wl, _row3(SIG, k))
            else:
                S[k, l] = (wlr * (_dot_t(wk, _row3(X1, L)) - _dot_t(_row3(X2, L), gk))
                           - _dot_t(wk, _row3(H3, l)) + X4[L] * _dot_t(wl, gk))
    for k in range(nd):
        K = lev[k]
        wk, dk, rek = _col3(W, k), _row3(DPD, k), _row3(RE, k)
        for l in range(nd):
            h = S[k, l] + S[l, k] - _dot_t(_row3(DPD, l), rek) - _dot_t(dk, _row3(RE, l))
            if lev[l] <= K:
                h += _dot_t(_col3(W, l), _row3(U, k))
            else:
                h += _dot_t(wk, _row3(GAM, l))
            Aqq[k, l] += h
    t = _cross_t(om, rl)
    for j in range(nd):
        for r in range(3):
            cq[j, r] += vc[j] * t[r]
    keep_alive(own)


# ---------------------------------------------------------------------------------- batches
@njit(**_JIT)
def constrained_dynamics_chunk(ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, status,
                               chunk, nchunks):
    """:func:`constrained_dynamics_point` at the knots of chunk ``chunk`` of ``nchunks`` into A (T,
    nv), LAM (T, nc), status (T,)."""
    m = unpack(ints, floats)
    nj, nv = ints[0], ints[1]
    work = contact_workspace(nj, nv, LAM.shape[1])
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        status[t] = constrained_dynamics_point(m, cints, cfloats, Q[t], V[t], TAU[t], damping,
                                               A[t], LAM[t], work)


@njit(cache=True, error_model="numpy")
def constrained_dynamics_batch(ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, status,
                               chunks):
    """The door of :func:`constrained_dynamics_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, status), chunks)


@njit(**_JIT)
def constrained_derivatives_chunk(ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, DAQ,
                                  DAV, DAT, DLQ, DLV, DLT, status, chunk, nchunks):
    """:func:`constrained_derivatives_point` at the knots of chunk ``chunk`` of ``nchunks``."""
    m = unpack(ints, floats)
    nj, nv = ints[0], ints[1]
    own = contact_workspace(nj, nv, LAM.shape[1])
    # the work arrays and the arguments (the caller holds them) borrowed: the knots' views
    # then take no reference counts (module docstring, Memory)
    work = borrowed(own)
    cints, cfloats, Q, V, TAU, A, LAM = borrowed((cints, cfloats, Q, V, TAU, A, LAM))
    DAQ, DAV, DAT, DLQ, DLV, DLT = borrowed((DAQ, DAV, DAT, DLQ, DLV, DLT))
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        status[t] = constrained_derivatives_point(m, cints, cfloats, Q[t], V[t], TAU[t],
                                                  damping, A[t], LAM[t], DAQ[t], DAV[t],
                                                  DAT[t], DLQ[t], DLV[t], DLT[t], work)
    keep_alive(own)


@njit(cache=True, error_model="numpy")
def constrained_derivatives_batch(ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, DAQ,
                                  DAV, DAT, DLQ, DLV, DLT, status, chunks):
    """The door of :func:`constrained_derivatives_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, cints, cfloats, Q, V, TAU, damping, A, LAM, DAQ, DAV, DAT,
                        DLQ, DLV, DLT, status), chunks)


# ---------------------------------------------------------------------------------- second order
@njit(callee=True, **_JIT)
def _weighted_hessian(P, W, lev, nd, c, nlev, H):
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
        cj, pj, wj = _row3(c, j), _col3(P, j), _col3(W, j)
        X, Y = _cross_t(pj, cj), _cross_t(cj, wj)
        for a in range(3):
            Xge[L, a] += X[a]
            Ylt[L + 1, a] += Y[a]
            for b in range(3):
                MPC[L, a, b] += pj[a] * cj[b]
                MWC[L + 1, a, b] += wj[a] * cj[b]
        sPC[L] += _dot_t(pj, cj)
        sWC[L + 1] += _dot_t(wj, cj)
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
        wj, pj = _col3(W, j), _col3(P, j)
        xj, yj, s_p, s_w = _row3(Xge, J), _row3(Ylt, J), sPC[J], sWC[J]
        z = _add_t(_add_t(_cross_t(pj, yj), _cross_t(wj, xj)),
                   _sub_t(_add_t(_matTvec_at(MPC, J, wj), _scale_t(pj, s_w)),
                          _add_t(_scale_t(wj, s_p), _matTvec_at(MWC, J, pj))))
        f = _add_t(_cross_t(yj, wj), _sub_t(_matTvec_at(MWC, J, wj), _scale_t(wj, s_w)))
        mw = _matvec_at(MWC, J, wj)
        e = _sub_t(_add_t(_matvec_at(MPC, J, wj), _scale_t(pj, s_w)),
                   _add_t(_scale_t(wj, s_p), _matvec_at(MWC, J, pj)))
        for r in range(3):
            Z[j, r], F[j, r], Mw[j, r], E[j, r] = z[r], f[r], mw[r], e[r]
    for k in range(nd):
        K = lev[k]
        wk, pk, zk, fk = _col3(W, k), _col3(P, k), _row3(Z, k), _row3(F, k)
        for l in range(nd):
            wl, pl = _col3(W, l), _col3(P, l)
            if lev[l] <= K:
                H[k, l] += _dot_t(wl, zk) - sWC[lev[l]] * _dot_t(pk, wl) + _dot_t(pk, _row3(Mw, l))
            else:
                H[k, l] += _dot_t(wk, _row3(E, l)) + _dot_t(pl, fk)
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
    rh = _tup3(rho)
    for j in range(nd):
        vj = vc[j]
        if vj == 0.0:
            continue
        lj = lev[j]
        pj, wj = _col3(P, j), _col3(W, j)
        z = _cross_t(pj, rh)
        pr, wr = _dot_t(pj, rh), _dot_t(wj, rh)
        for K in range(lj + 1):  # S_j(K) = 0 for K > lev_j
            sK = _row3_at(S, lj, K)
            qK, aK, dK = _cross_t(sK, z), _cross_t(sK, pj), _cross_t(sK, wj)
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
        wj = _col3(W, j)
        wrho[j], prho[j] = _dot_t(wj, rh), _dot_t(_col3(P, j), rh)
        tr = R[J, 0, 0] + R[J, 1, 1] + R[J, 2, 2]
        u = _add_t(_cross_t(wj, _row3(Q, J)), _sub_t(_matTvec_at(R, J, wj), _scale_t(wj, tr)))
        x = _sub_t(_matvec_at(R, J, wj), _scale_t(wj, tr))
        for r in range(3):
            U[j, r], X[j, r] = u[r], x[r]
    for k in range(nd):
        K = lev[k]
        wk = _col3(W, k)
        for L in range(nlev):
            be, ga = _cross_t(wk, _row3_at(B1, K, L)), _cross_t(wk, _row3_at(C1, K, L))
            TK[L, 0] = _dot_t(wk, _row3_at(A1, K, L))
            TK[L, 1], TK[L, 2], TK[L, 3] = be
            TK[L, 4], TK[L, 5], TK[L, 6] = ga
            TK[L, 7] = _dot_t(wk, _row3_at(D1, K, L))
        for l in range(nd):
            L = lev[l]
            T2[k, l] = (wrho[l] * TK[L, 0] - _dot_t(_col3(W, l), (TK[L, 1], TK[L, 2], TK[L, 3]))
                        + _dot_t(_col3(P, l), (TK[L, 4], TK[L, 5], TK[L, 6]))
                        - prho[l] * TK[L, 7])
    for k in range(nd):
        K = lev[k]
        wk, uk = _col3(W, k), _row3(U, k)
        for l in range(nd):
            h = T2[k, l] + T2[l, k]
            if lev[l] <= K:
                h += _dot_t(_col3(W, l), uk)
            else:
                h += _dot_t(wk, _row3(X, l))
            H[k, l] += h
    keep_alive(own)


@njit(callee=True, **_JIT)
def _qv_drift_terms(P, W, lev, nd, rho, kd, CWle, CWlt, PGE, Aqv):
    """Aqv[l, m] += rho . (sum_i v_i ddP(i, m, l) + L_l g_m + Kd dP(m, l)) for the drift's
    terms g_m = Omega_m x P_m + w_m x Psi_m (:func:`_drift_derivative`), each entry two or
    three dot products with vectors formed once per DoF (the triple products of its rules):
    with om = Omega_m, ps = Psi_m, cl = CWlt[lev_l], c_m = rho x w_m and pg = PGE[lev_m],

        lev_l <= lev_m:  w_l . (a_m + z_m) - 2 (rho . cl) (w_l . P_m) + 2 (rho . w_l) (cl . P_m)
        lev_l > lev_m:   P_l . (b_m + f_m) + w_m . (e_l + (w_l x PGE[lev_l] + cl x P_l) x rho)
        a_m = (rho . om) P_m + P_m x (rho x om) + (rho . w_m) ps + ps x c_m
              - (om . P_m + w_m . ps) rho + Kd P_m x rho
        b_m = (rho x om) x w_m - c_m x om + Kd c_m

    The first term, sum_i v_i rho . ddP(i, m, l), is the weighted Hessian
    (:func:`_weighted_hessian`) of the weights v_i rho, whose level sums are those of the
    velocity: X>=(K) = PGE[K] x rho, Y<(K) = rho x CWlt[K], MPC>=(K) = PGE[K] rho^T,
    MWC(K) = CWlt[K] rho^T; its vectors are then (cm = CWlt[lev_m])

        z_m = P_m x (rho x cm) + w_m x (pg x rho) + (pg . w_m) rho - (pg . rho) w_m
              + (cm . rho) P_m - (cm . P_m) rho
        f_m = (rho x cm) x w_m + (cm . w_m) rho - (cm . rho) w_m
        e_l = (rho . w_l) PGE[L] - (PGE[L] . rho) w_l + (cl . rho) P_l - (rho . P_l) cl

    and its pairs have the same form as the drift's, so they share their dot products (HyQ's
    four feet: 0.76 us a foot less than a weighted Hessian of its own)."""
    rh = _tup3(rho)
    shapes = ((3, nd, 3), (2, nd))
    own = np.empty(extent(shapes))
    per_dof3, per_dof = carve(own, shapes)  # (module docstring, Memory)
    A, Bm, E = per_dof3[0], per_dof3[1], per_dof3[2]  # E: e_l + (w_l x PGE[L] + cl x P_l) x rho
    rc, rw = per_dof[0], per_dof[1]  # per l: rho . cl, rho . w_l
    for j in range(nd):
        J = lev[j]
        wj, pj = _col3(W, j), _col3(P, j)
        om, ps = _row3(CWle, J), _row3(PGE, J + 1)
        cl, pg = _row3(CWlt, J), _row3(PGE, J)
        ro, cj = _cross_t(rh, om), _cross_t(rh, wj)
        a = _add_t(_scale_t(pj, _dot_t(rh, om)), _cross_t(pj, ro))
        a = _add_t(a, _add_t(_scale_t(ps, _dot_t(rh, wj)), _cross_t(ps, cj)))
        a = _sub_t(a, _scale_t(rh, _dot_t(om, pj) + _dot_t(wj, ps)))
        a = _add_t(a, _scale_t(_cross_t(pj, rh), kd))
        b = _add_t(_sub_t(_cross_t(ro, wj), _cross_t(cj, om)), _scale_t(cj, kd))
        rcl, rpg = _cross_t(rh, cl), _cross_t(pg, rh)
        cr, pr, cp = _dot_t(cl, rh), _dot_t(pg, rh), _dot_t(cl, pj)
        rw[j], rc[j] = _dot_t(rh, wj), cr
        z = _add_t(_add_t(_cross_t(pj, rcl), _cross_t(wj, rpg)),
                   _add_t(_scale_t(rh, _dot_t(pg, wj) - cp), _sub_t(_scale_t(pj, cr),
                                                                   _scale_t(wj, pr))))
        f = _add_t(_cross_t(rcl, wj), _sub_t(_scale_t(rh, _dot_t(cl, wj)), _scale_t(wj, cr)))
        e = _add_t(_sub_t(_scale_t(pg, rw[j]), _scale_t(wj, pr)),
                   _sub_t(_scale_t(pj, cr), _scale_t(cl, _dot_t(rh, pj))))
        g = _add_t(_cross_t(wj, pg), _cross_t(cl, pj))
        e = _add_t(e, _cross_t(g, rh))
        for r in range(3):
            A[j, r], Bm[j, r], E[j, r] = a[r] + z[r], b[r] + f[r], e[r]
    for l in range(nd):
        L = lev[l]
        wl, pl, cl = _col3(W, l), _col3(P, l), _row3(CWlt, L)
        c2, w2 = 2.0 * rc[l], 2.0 * rw[l]
        el = _row3(E, l)
        for m_ in range(nd):
            pm = _col3(P, m_)
            if L <= lev[m_]:
                h = _dot_t(wl, _row3(A, m_)) - c2 * _dot_t(wl, pm) + w2 * _dot_t(cl, pm)
            else:
                h = _dot_t(pl, _row3(Bm, m_)) + _dot_t(_col3(W, m_), el)
            Aqv[l, m_] += h
    keep_alive(own)


@njit(callee=True, **_JIT)
def _point_second_order(P, W, lev, nd, vc, ac, rac, lam_c, rho, kp, kd, Aqq, Avv, Aqv, Bqa,
                        Bql, cq):
    """The contact's terms of the Hessian of rho_a . r1 + rho . r2 (rho: the contact's part of
    rho_lam) over its chain (module docstring, second order), in chain indices: Aqq (nd, nd)
    [k, l] = L_l L_k, Avv, Aqv (q_l, v_m), Bqa (q_k, a_j), Bql (q_k, 3): the contact's force
    columns.  ``rac``: rho_a on the chain, ``lam_c`` the contact's force.

    The terms linear in the columns P_j with constant weights (J a, Kd J v, -lam . J rho_a, and
    the drift's U_j x ddP part) are one weighted Hessian (:func:`_weighted_hessian`, O(nd^2)):
    their weights are added to ``cq`` (nd, 3), whose Hessian the caller adds to Aqq (once for the
    point and surface terms of a contact);
    the drift's other terms (with U_j = sum_i c_ij v_i w_i, written S_j(level) summed from a
    level on) take O(nd^2 + nlev^2 nd) small products (:func:`_drift_hessian_terms`,
    :func:`_qv_drift_terms`, which also takes the weighted Hessian of the (q, v) block), each
    entry a few dot products with vectors formed once per DoF (HyQ's four feet, all their chain
    terms: 29.6 -> 22.5 us a knot by the triple products, then 24.1 -> 20.0 us in another run
    by the (q, v) block's weighted Hessian in :func:`_qv_drift_terms`)."""
    nlev = _chain_levels(lev, nd)
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
    rh = _tup3(rho)
    for j in range(nd):
        PR[j, 0], PR[j, 1], PR[j, 2] = _cross_t(_col3(P, j), rh)
    for j in range(nd):
        for k in range(nd):
            if lev[k] <= lev[j]:
                D[j, k] = _dot_t(_col3(W, k), _row3(PR, j))
            else:
                D[j, k] = _dot_t(_col3(W, j), _row3(PR, k))
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
    for r in range(3):
        for L in range(nlev - 1, -1, -1):
            RP[L, r] += RP[L + 1, r]
        for L in range(1, nlev + 1):
            RW[L, r] += RW[L - 1, r]
    for k in range(nd):
        K = lev[k]
        t = _add_t(_cross_t(_col3(W, k), _row3(RP, K)), _cross_t(_row3(RW, K), _col3(P, k)))
        for r in range(3):
            Bql[k, r] -= t[r]
    # qq: the weights c_j (into cq) of the weighted Hessian of sum_j c_j . P_j, c_j = (a_j + Kd
    #     v_j) rho - rho_a,j lam + v_j rho x U_j (the drift's U_j x ddP(j, k, l) term)
    for j in range(nd):
        t = _cross_t(rh, _row3_at(S, lev[j], 0))
        for r in range(3):
            cq[j, r] += (ac[j] + kd * vc[j]) * rh[r] - rac[j] * lam_c[r] + vc[j] * t[r]
    _drift_hessian_terms(P, W, lev, nd, vc, rho, S, nlev, Aqq)
    # qv: rho . [sum_i v_i ddP(i, m, l) + L_l g_m + Kd dP(m, l)], g_m = sum_i v_i dP(m, i)
    CWle, CWlt, PGE = vsums[0], vsums[1], vsums[2]
    _level_sums(P, W, lev, nd, vc, CWle, CWlt, PGE)
    _qv_drift_terms(P, W, lev, nd, rho, kd, CWle, CWlt, PGE, Aqv)
    keep_alive(own)


@njit(callee=True, **_JIT)
def constrained_so_contracted_point(m, cints, cfloats, q, v, tau, damping, mu_a, mu_l, a, lam,
                                    da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq, Lv,
                                    Lqv, Lt, work):
    """:func:`constrained_derivatives_point`, and the second derivatives of mu . (a, lam)
    (mu = (mu_a (nv,), mu_l (nc,))) without forming any tensor: Lq (q, q), Lv (v, v), Lqv (q
    then v) and Lt (tau then q), each (nv, nv), in the convention of the contracted FD-SO.

    With rho = K^-T mu and Z = [I; d(a, lam)/dx], mu . d2(a, lam)/dx2 = -Z^T (d2 rho.r) Z
    (module docstring): rho_a . ID's second derivatives by the contracted IDSVA-SO at the
    constrained acceleration, the contacts' by :func:`_point_second_order`; of the blocks of
    d2 rho.r only (q, q), (v, v), (q, v), (q, a) and (q, lam) are not zero."""
    status = constrained_derivatives_point(m, cints, cfloats, q, v, tau, damping, a, lam, da_dq,
                                           da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, work)
    if status != OK:
        return status
    so_contracted_terms(m, cints, cfloats, q, v, mu_a, mu_l, a, lam, da_dq, da_dv, da_dtau,
                        dlam_dq, dlam_dv, dlam_dtau, Lq, Lv, Lqv, Lt, work)
    return OK


@njit(callee=True, **_JIT)
def _costate(LM, LL, Y, mu_a, mu_l, rho_a, rho_l):
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


@njit(callee=True, **_JIT)
def _contact_hessian_blocks(m, cints, cfloats, S0, oR, op, v, a, rho_a, rho_l, lam, Aqq, Avv,
                            Aqv, Bqa, Bql):
    """Add every contact's terms of d2 (rho . r) (:func:`_point_second_order`) at the velocity
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
        _point_second_order(P, W, lev, nd, vc, ac, rac, lam_c, rho, kpp, kd, cqq, cvv, cqv, cqa,
                            cql, cq)
        if surface:
            _surface_second_order(P, W, lev, nd, vc, ac, rac, lam[row + 3:row + 6], rho,
                                  rho_l[row + 3:row + 6], kd, cqq, cvv, cqv, cqa, cqw, cq)
            if kps != 0.0:
                contact_reference(cfloats, c, Rr, pr)
                rho6 = g6[1]
                for r in range(6):
                    rho6[r] = rho_l[row + r] * kps
                surface_position_gain(P, W, lev, nd, Rf, pf, Rr, pr, rho6, np.int64(2), g6[0],
                                      D6, blocks[0])  # cqq's entries
        _weighted_hessian(P, W, lev, nd, cq, _chain_levels(lev, nd), cqq)
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
def _contract(Aqq, Avv, Aqv, Bqa, Bql, dy_dq, dy_dv, dy_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq,
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
    _costate(work.LM, work.LL, work.Y, mu_a, mu_l, rho_a, rho_l)
    Aqq, Avv, Aqv, G, Bqa = blocks[0], blocks[1], blocks[2], blocks[3], blocks[4]
    _id_second_order(m, rho_a, Aqq, Avv, Aqv, G, work)
    copy_into(Bqa, G.T)
    _contact_hessian_blocks(m, cints, cfloats, work.S0, work.oR, work.op, v, a, rho_a, rho_l,
                            lam, Aqq, Avv, Aqv, Bqa, Bql)
    _contract(Aqq, Avv, Aqv, Bqa, Bql, da_dq, da_dv, da_dtau, dlam_dq, dlam_dv, dlam_dtau, Lq,
              Lv, Lqv, Lt)
    keep_alive(own)


# ---------------------------------------------------------------------------------- impulses
@njit(callee=True, **_JIT)
def impulse_dynamics_point(m, cints, cfloats, q, v, restitution, damping, v_plus, imp, work):
    """The impact map at one knot (module docstring): v+ (nv,) and the impulses imp (nc,) of
    M (v+ - v) = J^T imp, J v+ = -restitution J v; returns a status.  ``work`` as for
    :func:`constrained_dynamics_point`."""
    nv = v.shape[0]
    J, Y, LL = work.J, work.Y, work.LL
    nc = J.shape[0]
    status = kkt_at(m, cints, cfloats, q, v, damping, work)  # (gamma unused)
    if status != OK:
        return status
    for i in range(nc):
        s = 0.0
        for r in range(nv):
            s += J[i, r] * v[r]
        imp[i] = -(1.0 + restitution) * s
    cholesky_solve_vector(LL, imp, imp)
    for r in range(nv):
        s = v[r]
        for i in range(nc):
            s += Y[r, i] * imp[i]
        v_plus[r] = s
    return OK


@njit(callee=True, **_JIT)
def impulse_derivatives_point(m0, cints, cfloats, q, v, restitution, damping, v_plus, imp,
                              dv_dq, dv_dv, dimp_dq, dimp_dv, work):
    """:func:`impulse_dynamics_point` and the derivatives of (v+, imp) in (q, v) (module
    docstring), for ``m0`` the model without gravity and contacts without gains (their rows
    are J (v+ + restitution v)); returns a status."""
    nv = v.shape[0]
    status = impulse_dynamics_point(m0, cints, cfloats, q, v, restitution, damping, v_plus, imp,
                                    work)
    if status != OK:
        return status
    M, J = work.M, work.J
    nc = J.shape[0]
    zero = np.zeros(nv)
    dv = np.empty(nv)
    w = np.empty(nv)
    for r in range(nv):
        dv[r] = v_plus[r] - v[r]
        w[r] = v_plus[r] + restitution * v[r]
    tau_a = np.empty(nv)
    Rq = np.zeros((nv + nc, nv))
    Rv = np.zeros((nv + nc, nv))
    _id_derivatives(m0, zero, dv, tau_a, Rq[:nv], Rv[:nv], work)  # d(M dv)/dq: ID at rest, no g
    contact_residual_derivatives(m0, cints, cfloats, q, zero, w, imp, work.S0, work.oR, work.op,
                                 Rq, Rv)
    for r in range(nv):
        for col in range(nv):
            Rv[r, col] = -M[r, col]
    for i in range(nc):
        for col in range(nv):
            Rv[nv + i, col] = restitution * J[i, col]
    kkt_derivatives(work.LM, work.LL, J, work.Y, Rq, Rv, dv_dq, dv_dv, dimp_dq, dimp_dv)
    return OK


@njit(callee=True, **_JIT)
def impulse_so_terms(m0, cints, cfloats, q, v, restitution, mu_v, mu_l, v_plus, imp, dv_dq,
                     dv_dv, dimp_dq, dimp_dv, Lq, Lqv, work):
    """The second derivatives of mu . (v+, imp) (mu = (mu_v (nv,), mu_l (nc,))) on (q, q) and
    (q, v) (the (v, v) block is 0: (v+, imp) are linear in v at fixed q), given the first
    derivatives and the work arrays :func:`impulse_derivatives_point` left.  The blocks of
    d2 rho.r: rho_a . d2(M dv)/dq2 and rho_a . dM/dq from the contracted IDSVA-SO at rest
    without gravity (acceleration dv = v+ - v), the contacts' at velocity 0 and acceleration
    v+ + restitution v; on (q, v) the residual gives -rho_a . dM/dq + restitution (q, v+)
    contact block."""
    nv = v.shape[0]
    nc = work.J.shape[0]
    shapes = ((4, nv), (nc,), (7, nv, nv), (nv, nc), (0, 0))
    own = np.zeros(extent(shapes))  # (module docstring, Memory)
    vectors, rho_l, blocks, Bql, none = carve(own, shapes)  # none: an impact has no tau
    rho_a, zero, dv, w = vectors[0], vectors[1], vectors[2], vectors[3]
    Aqq, unused, unused2, G = blocks[0], blocks[1], blocks[2], blocks[3]
    Bc, Bqa, Aqv = blocks[4], blocks[5], blocks[6]  # Bc: the contacts' (q, v+) block
    _costate(work.LM, work.LL, work.Y, mu_v, mu_l, rho_a, rho_l)
    for r in range(nv):
        dv[r] = v_plus[r] - v[r]
        w[r] = v_plus[r] + restitution * v[r]
    _id_second_order(m0, rho_a, Aqq, unused, unused2, G, work)
    unused[:, :] = 0.0
    unused2[:, :] = 0.0
    _contact_hessian_blocks(m0, cints, cfloats, work.S0, work.oR, work.op, zero, w, rho_a, rho_l,
                            imp, Aqq, unused, unused2, Bc, Bql)
    for r in range(nv):
        for col in range(nv):
            Bqa[r, col] = G[col, r] + Bc[r, col]
            Aqv[r, col] = -G[col, r] + restitution * Bc[r, col]
    unused[:, :] = 0.0
    _contract(Aqq, unused, Aqv, Bqa, Bql, dv_dq, dv_dv, none, dimp_dq, dimp_dv, none, Lq, unused2,
              Lqv, none)
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


@njit(**_JIT)
def constrained_so_chunk(ints, floats, cints, cfloats, Q, V, TAU, damping, MU, A, LAM, DAQ, DAV,
                         DAT, DLQ, DLV, DLT, LQ, LV, LQV, LT, status, chunk, nchunks):
    """The first derivatives of :func:`constrained_derivatives_chunk` and, with co-states
    MU (T, nv + nc), the contracted second derivatives LQ, LV, LQV, LT (T, 1, nv, nv); with MU of
    0 knots, the full second-derivative tensors of (a, lam) (T, nv + nc, nv, nv) in LQ ... LT.
    The knots go in groups of :data:`GROUP`: first derivatives, then second-order terms."""
    m = unpack(ints, floats)
    nj, nv = ints[0], ints[1]
    nc = LAM.shape[1]
    tensors = MU.shape[0] == 0  # the full tensors of (a, lam): a unit co-state per output row
    mu_a = np.empty(nv)
    mu_l = np.empty(nc)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    G = max(1, min(GROUP, t1 - t0))
    own = workspace_group(G, nj, nv, nc)
    # the work arrays and the arguments (the caller holds them) borrowed: the knots' views
    # then take no reference counts (module docstring, Memory)
    group = borrowed(own)
    cints, cfloats, Q, V, TAU, MU, A, LAM = borrowed((cints, cfloats, Q, V, TAU, MU, A, LAM))
    DAQ, DAV, DAT, DLQ, DLV, DLT = borrowed((DAQ, DAV, DAT, DLQ, DLV, DLT))
    LQ, LV, LQV, LT = borrowed((LQ, LV, LQV, LT))
    for g0 in range(t0, t1, G):
        g1 = min(g0 + G, t1)
        for t in range(g0, g1):
            status[t] = constrained_derivatives_point(m, cints, cfloats, Q[t], V[t], TAU[t],
                                                      damping, A[t], LAM[t], DAQ[t], DAV[t],
                                                      DAT[t], DLQ[t], DLV[t], DLT[t],
                                                      group_member(group, t - g0))
        for t in range(g0, g1):
            if status[t] != OK:
                continue
            work = group_member(group, t - g0)
            if not tensors:
                so_contracted_terms(m, cints, cfloats, Q[t], V[t], MU[t, :nv], MU[t, nv:], A[t],
                                    LAM[t], DAQ[t], DAV[t], DAT[t], DLQ[t], DLV[t], DLT[t],
                                    LQ[t, 0], LV[t, 0], LQV[t, 0], LT[t, 0], work)
                continue
            for i in range(nv + nc):
                unit_costate(i, mu_a, mu_l)
                so_contracted_terms(m, cints, cfloats, Q[t], V[t], mu_a, mu_l, A[t], LAM[t],
                                    DAQ[t], DAV[t], DAT[t], DLQ[t], DLV[t], DLT[t], LQ[t, i],
                                    LV[t, i], LQV[t, i], LT[t, i], work)
    keep_alive(own)


@njit(cache=True, error_model="numpy")
def constrained_so_batch(ints, floats, cints, cfloats, Q, V, TAU, damping, MU, A, LAM, DAQ, DAV,
                         DAT, DLQ, DLV, DLT, LQ, LV, LQV, LT, status, chunks):
    """The door of :func:`constrained_so_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints, floats, cints, cfloats, Q, V, TAU, damping, MU, A, LAM, DAQ, DAV, DAT,
                        DLQ, DLV, DLT, LQ, LV, LQV, LT, status), chunks)


@njit(**_JIT)
def impulse_chunk(ints0, floats0, cints, cfloats, Q, V, restitution, damping, order, MU, VP,
                  IMP, DVQ, DVV, DIQ, DIV, LQ, LQV, status, chunk, nchunks):
    """The impact map at the knots of chunk ``chunk`` of ``nchunks`` for the model without gravity
    (``ints0``, ``floats0``) and contacts without gains: ``order`` 0: v+ (T, nv), the impulses (T,
    nc); 1: and their first derivatives DVQ, DVV (T, nv, nv), DIQ, DIV (T, nc, nv); 2: and the
    second derivatives on (q, q) and (q, v), contracted with MU (T, nv + nc) into LQ, LQV (T, 1, nv,
    nv), or with MU of 0 knots the full tensors of (v+, imp) (T, nv + nc, nv, nv)."""
    m0 = unpack(ints0, floats0)
    nj, nv = ints0[0], ints0[1]
    nc = IMP.shape[1]
    work = contact_workspace(nj, nv, nc)
    tensors = MU.shape[0] == 0
    mu_v = np.empty(nv)
    mu_l = np.empty(nc)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        if order == 0:
            status[t] = impulse_dynamics_point(m0, cints, cfloats, Q[t], V[t], restitution,
                                               damping, VP[t], IMP[t], work)
            continue
        status[t] = impulse_derivatives_point(m0, cints, cfloats, Q[t], V[t], restitution,
                                              damping, VP[t], IMP[t], DVQ[t], DVV[t], DIQ[t],
                                              DIV[t], work)
        if status[t] != OK or order == 1:
            continue
        if not tensors:
            impulse_so_terms(m0, cints, cfloats, Q[t], V[t], restitution, MU[t, :nv], MU[t, nv:],
                             VP[t], IMP[t], DVQ[t], DVV[t], DIQ[t], DIV[t], LQ[t, 0], LQV[t, 0],
                             work)
            continue
        for i in range(nv + nc):
            unit_costate(i, mu_v, mu_l)
            impulse_so_terms(m0, cints, cfloats, Q[t], V[t], restitution, mu_v, mu_l, VP[t],
                             IMP[t], DVQ[t], DVV[t], DIQ[t], DIV[t], LQ[t, i], LQV[t, i], work)


@njit(cache=True, error_model="numpy")
def impulse_batch(ints0, floats0, cints, cfloats, Q, V, restitution, damping, order, MU, VP, IMP,
                  DVQ, DVV, DIQ, DIV, LQ, LQV, status, chunks):
    """The door of :func:`impulse_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((ints0, floats0, cints, cfloats, Q, V, restitution, damping, order, MU, VP,
                        IMP, DVQ, DVV, DIQ, DIV, LQ, LQV, status), chunks)


@njit(cache=True, error_model="numpy")
def zero_gravity(ints, floats):
    """Set the gravity of the packed model (``floats``, a copy) to zero, in place."""
    unpack(ints, floats).gravity[:] = 0.0


@njit(cache=True, error_model="numpy")
def jacobian_batch(ints, floats, cints, cfloats, Q, V, J, GAMMA):
    """The contact Jacobians J (T, nc, nv) and drifts GAMMA (T, nc) at T knots."""
    m = unpack(ints, floats)
    nj, nv = ints[0], ints[1]
    S0, oR, op = np.empty((nv, 6)), np.empty((nj, 3, 3)), np.empty((nj, 3))
    for t in range(Q.shape[0]):
        contact_jacobian_drift(m, cints, cfloats, Q[t], V[t], J[t], GAMMA[t], S0, oR, op)
