"""The impact map (the package docstring, Impacts): v+ and the impulses, their first
derivatives and their second derivatives contracted with a co-state, through the KKT system
and the residual derivatives of the constrained dynamics.
"""

import numpy as np

from ...jit import carve, extent, keep_alive, njit
from ..dense import cholesky_solve_vector
from .derivatives import contact_hessian_blocks, contact_residual_derivatives, contract_blocks
from .kkt import OK, idsva_at_knot, idsva_so_at_knot, kkt_at, kkt_costate, kkt_derivatives

_JIT = dict(cache=True, error_model="numpy")


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
    idsva_at_knot(m0, zero, dv, tau_a, Rq[:nv], Rv[:nv], work)  # d(M dv)/dq: ID at rest, no g
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
    kkt_costate(work.LM, work.LL, work.Y, mu_v, mu_l, rho_a, rho_l)
    for r in range(nv):
        dv[r] = v_plus[r] - v[r]
        w[r] = v_plus[r] + restitution * v[r]
    idsva_so_at_knot(m0, rho_a, Aqq, unused, unused2, G, work)
    unused[:, :] = 0.0
    unused2[:, :] = 0.0
    contact_hessian_blocks(m0, cints, cfloats, work.S0, work.oR, work.op, zero, w, rho_a, rho_l,
                           imp, Aqq, unused, unused2, Bc, Bql)
    for r in range(nv):
        for col in range(nv):
            Bqa[r, col] = G[col, r] + Bc[r, col]
            Aqv[r, col] = -G[col, r] + restitution * Bc[r, col]
    unused[:, :] = 0.0
    contract_blocks(Aqq, unused, Aqv, Bqa, Bql, dv_dq, dv_dv, none, dimp_dq, dimp_dv, none, Lq,
                    unused2, Lqv, none)
    keep_alive(own)
