"""The built-in costs, compiled: value, gradient and exact or Gauss-Newton Hessian of a sum of
weighted squared residuals ``1/2 sum_i w_i r_i^2`` at one knot, in tangent coordinates
``dx = (dq, dv)`` (q perturbed as ``q (+) dq``) and u.

A sum of terms is one *program*: two flat arrays (see :class:`ddp.costs.CostProgram`)

    ints   = [K, then per term: kind, joint, nr, weight offset, parameter offset, activation,
              bounds offset]   (:func:`term_ints` writes them, :func:`_term` reads them)
    floats = [weights of every term, then their parameters]

with the parameters of each kind:

==============  ===========================================================================
kind            parameters
==============  ===========================================================================
STATE           x_ref (nq + nv): residual (q (-) q_ref, v - v_ref), joint by joint
CONTROL         u_ref (nu): residual u - u_ref
PLACEMENT       jMf (R 9, p 3), target (R 9, p 3): residual log6(target^-1 oMf)
TRANSLATION     jMf (12), target position (3): residual oMf.p - target
ROTATION        jMf (12), target rotation (9): residual log3(target^T oMf.R)
VELOCITY        jMf (12), v_ref (6), world-aligned (1: 1.0 or 0.0): residual v_f - v_ref, the
                frame's spatial velocity in its own axes (LOCAL) or in the world's axes at its
                origin (LOCAL_WORLD_ALIGNED)
COM             c_ref (3): residual c(q) - c_ref, the centre of mass
FORCE           nf (1), A (nr x nf), b (nr): residual A lam_c - b of the force lam_c (nf: 3
                for a point contact, 6 for a flat one) of the contact whose force starts at
                row ``joint`` of the knot's forces
DISTANCE        jMf (12, the sphere's centre as the frame's origin), obstacle (1: SPHERE,
                HALF_SPACE, COLUMN or CAPSULE), c (3: the obstacle's centre, a point of its
                plane or of its axis, or its segment's start), n (3: the plane's unit normal,
                outwards, or the segment's start-to-end vector), clearance (1: the sum of the
                radii): residual |p - c| - clearance, n . (p - c) - clearance,
                |P (p - c)| - clearance with P = diag(1, 1, 0), or the distance to the segment
                minus the clearance (1), the signed distance
                between the robot's sphere and the obstacle
GRAVITY         none: residual u - g(q) (nv; nu = nv), the controls minus the torques that
                hold the robot against gravity (IDSVA at v = a = 0 for g and dg/dq; the exact
                Hessian's sum_a (w r)_a d2g_a/dq2 by the contracted IDSVA-SO)
==============  ===========================================================================

Each term has an activation (ints: kind, joint, nr, weight offset, parameter offset,
activation, bounds offset): QUADRATIC, 1/2 sum_a w_a r_a^2, or BARRIER, the same on
r_a - clip(r_a, lb_a, ub_a) (Crocoddyl's ``ActivationModelQuadraticBarrier``) with the bounds
(lb (nr), ub (nr)) at the bounds offset; not on VELOCITY terms.

Placement, translation and rotation terms are written as a residual of ``xi`` (the local motion
of the frame, see :mod:`dynamics.kernels.frames`) with its Jacobian and Hessian in xi; the chain
rule through the frame Jacobian and its bracket terms gives the exact Hessian in dq, including
the second-order terms of forward kinematics and of log6 / log3
(:mod:`dynamics.kernels.lie_group`).  The velocity term depends on v too: see
:func:`_velocity_term`.
"""

import os
from collections import namedtuple

import numpy as np
from numba.core import types

from dynamics.jit import (argument_types, borrowed, carve, chunk_range, copy_into, extent,
                          in_parallel, keep_alive, njit)
from dynamics.jit import link as _link
from dynamics.jit.linking import array_types
from dynamics.kernels.contact import chain_dofs, column_derivative, point_columns
from dynamics.kernels.dense import gemm_tn
from dynamics.kernels.inverse import idsva_point, rnea_point
from dynamics.kernels.second_order import idsva_so_contracted
from dynamics.kernels.frames import (add_bracket_hessian, frame_jacobian, frame_placement,
                                     support_joints)
from dynamics.kernels.kinematics import FF, PLA, RUB, SPH, forward_kinematics, quat_to_rot
from dynamics.kernels.lie_group import (rotation_log, se2_log, se2_log_expansion, se3_log,
                                        se3_log_expansion, se3_log_hessian_contracted,
                                        se3_log_jacobian, so3_log_expansion,
                                        so3_log_hessian_contracted)
from dynamics.kernels.packed_model import unpack
from dynamics.kernels.spatial import dot6, motion_cross, motion_cross_add

from .passes import call_knot_kernel
from .records import LINKED_COSTS, CostDerivatives, Forces, PackedModel, Program, empty_forces

STATE, CONTROL, PLACEMENT, TRANSLATION, ROTATION, VELOCITY, COM, FORCE, GRAVITY, DISTANCE = \
    range(10)
#: the obstacles of a DISTANCE term (a column: a vertical cylinder, infinite along z)
SPHERE, HALF_SPACE, COLUMN, CAPSULE = 0, 1, 2, 3
#: activations: 1/2 sum w_a r_a^2, or its quadratic barrier (r_a outside [lb_a, ub_a] only), or
#: 1/2 w_0 dist(r + s, K_mu)^2 to the second-order cone K_mu = {|(r_0, r_1)| <= mu r_2} (a
#: contact force's residual in its surface's axes; the shift s in the bounds' first 3 floats,
#: mu in the next: :func:`_cone_activation`)
QUADRATIC, BARRIER, CONE = 0, 1, 2
#: a term's ints in a program, in this order (written by :func:`term_ints`, read by
#: :func:`_term`): its kind, its joint (a force term: the row of its contact's force), its
#: residual's size nr, and the offsets of its weights, its parameters and its bounds in the
#: program's floats (relative to the knot's program start), with its activation between them
KIND, JOINT, SIZE, WEIGHTS, PARAMETERS, ACTIVATION, BOUNDS = range(7)
TERM_INTS = 7

#: one term of a knot's program, read by :func:`_term`: kind, joint, nr, its weights (nr,), its
#: parameters (from their start to the program's end), its activation and its bounds (lower,
#: upper: nr each; empty for the quadratic; the cone's shift and mu, :func:`_force_term`)
Term = namedtuple("Term", "kind joint nr weights parameters activation lower upper")
#: the outputs of one knot, added into: l (1,), gx (2 nv), gu (nu), Hxx, Hxu, Huu
KnotCost = namedtuple("KnotCost", "l gx gu Hxx Hxu Huu")
#: a knot's forward kinematics: oR (nj, 3, 3), op (nj, 3), S0 (nv, 6)
FrameKinematics = namedtuple("FrameKinematics", "oR op S0")
#: the work arrays of :func:`cost_knots`, one record per kind of term (:func:`_cost_work`): carved
#: from one buffer and borrowed, once per call for all its knots
LogWork = namedtuple("LogWork", "RE dp pE J3 H3")
StateWork = namedtuple("StateWork", "r3 r6 J6 H6 R Rr weights log")
FrameWork = namedtuple("FrameWork", "chain Jf Rf pf r Jx Hx wr M6 gxi JM weights distance log")
VelocityWork = namedtuple("VelocityWork", "chain cols J Rf pf r wr Uc Jr P v6")
ComWork = namedtuple("ComWork", "dofs levels small Jc P W Hc")
GravityWork = namedtuple("GravityWork", "vectors matrices")
ForceWork = namedtuple("ForceWork", "vectors Ha Jz HJ")
CostWork = namedtuple("CostWork", "kinematics state frame velocity com gravity force weights")


def term_ints(kind, joint, nr, weights, parameters, activation, bounds):
    """A term's ints in a program's layout (:data:`TERM_INTS` of them, in the order of
    :data:`KIND` ... :data:`BOUNDS`)."""
    out = [0] * TERM_INTS
    for field, value in ((KIND, kind), (JOINT, joint), (SIZE, nr), (WEIGHTS, weights),
                         (PARAMETERS, parameters), (ACTIVATION, activation), (BOUNDS, bounds)):
        out[field] = int(value)
    return out

_JIT = dict(cache=True, error_model="numpy")


@njit(callee=True, forceinline=True, **_JIT)
def _accumulate_block(r, Jr, Hr, w, order, exact_hessians, first, off, l, g, H):
    """Add 1/2 sum_a w_a r_a^2 of a residual r (nr,) with Jacobian Jr (nr, nd) and Hessian
    Hr (nr, nd, nd) w.r.t. the variables ``off + first + [0, nd)`` of (g, H)."""
    nr = r.shape[0]
    nd = Jr.shape[1]
    for a in range(nr):
        l[0] += 0.5 * w[a] * r[a] * r[a]
    if order == 0:
        return
    for j in range(nd):
        s = 0.0
        for a in range(nr):
            s += Jr[a, j] * w[a] * r[a]
        g[off + first + j] += s
    for j in range(nd):
        for k in range(nd):
            s = 0.0
            for a in range(nr):
                s += Jr[a, j] * w[a] * Jr[a, k]
                if exact_hessians:
                    s += w[a] * r[a] * Hr[a, j, k]
            H[off + first + j, off + first + k] += s


@njit(callee=True, forceinline=True, **_JIT)
def _activate(r, w, act, lb, ub, weff):
    """Apply the term's activation to its residual r (in place) and weights: for the barrier,
    r_a becomes r_a - clip(r_a, lb_a, ub_a) and its weight is kept where r_a is outside the
    bounds, else 0 (Crocoddyl's ``ActivationModelQuadraticBarrier``, weighted); for the
    quadratic, weff = w."""
    for a in range(r.shape[0]):
        weff[a] = w[a]
        if act == BARRIER:
            if r[a] > ub[a]:
                r[a] -= ub[a]
            elif r[a] < lb[a]:
                r[a] -= lb[a]
            else:
                r[a] = 0.0
                weff[a] = 0.0


@njit(callee=True, forceinline=True, **_JIT)
def _state_term(m, term, q, v, order, exact_hessians, out, work):
    """The residual (q (-) q_ref, v - v_ref) joint by joint (the reference x_ref: the term's
    parameters), with the term's activation, into the knot's ``out``; ``work``: a
    :data:`StateWork`."""
    xr, w, act, lb, ub = term.parameters, term.weights, term.activation, term.lower, term.upper
    l, g, Hxx = out.l, out.gx, out.Hxx
    r3, r6, J6, H6, R, Rr, weff = work.r3, work.r6, work.J6, work.H6, work.R, work.Rr, work.weights
    RE, dp, pE, J3, H3 = work.log
    nv = m.S_local.shape[0]
    nq = q.shape[0]
    hessian = order > 0 and exact_hessians
    w1 = weff[:1]
    ra1 = r6[:1]
    for i in range(1, m.parent.shape[0]):
        t, iq, iv = m.jtype[i], m.iq[i], m.iv[i]
        if t == SPH or t == FF:
            o = iq if t == SPH else iq + 3
            quat_to_rot(q[o], q[o + 1], q[o + 2], q[o + 3], R)
            quat_to_rot(xr[o], xr[o + 1], xr[o + 2], xr[o + 3], Rr)
            gemm_tn(Rr, R, RE, 1.0, 0.0)
            if t == SPH:
                if order == 0:
                    rotation_log(RE, r3)
                else:
                    so3_log_expansion(RE, r3, J3, H3, hessian)
                _activate(r3, w[iv:iv + 3], act, lb[iv:iv + 3], ub[iv:iv + 3], weff[:3])
                _accumulate_block(r3, J3, H3, weff[:3], order, exact_hessians, iv, 0, l, g, Hxx)
            else:
                for a in range(3):
                    dp[a, 0] = q[iq + a] - xr[iq + a]
                gemm_tn(Rr, dp, pE, 1.0, 0.0)
                if order == 0:
                    se3_log(RE, pE.reshape(3), r6)
                else:
                    se3_log_expansion(RE, pE.reshape(3), r6, J6, H6, hessian)
                _activate(r6, w[iv:iv + 6], act, lb[iv:iv + 6], ub[iv:iv + 6], weff[:6])
                _accumulate_block(r6, J6, H6, weff[:6], order, exact_hessians, iv, 0, l, g, Hxx)
        elif t == PLA:
            cr, sr = xr[iq + 2], xr[iq + 3]
            nr_ = np.sqrt(cr * cr + sr * sr)
            cr, sr = cr / nr_, sr / nr_
            c, s = q[iq + 2], q[iq + 3]
            n_ = np.sqrt(c * c + s * s)
            c, s = c / n_, s / n_
            dx, dy = q[iq] - xr[iq], q[iq + 1] - xr[iq + 1]
            args = (cr * c + sr * s, cr * s - sr * c, cr * dx + sr * dy, -sr * dx + cr * dy)
            if order == 0:
                se2_log(args[0], args[1], args[2], args[3], r3)
            else:
                se2_log_expansion(args[0], args[1], args[2], args[3], r3, J3, H3)
            _activate(r3, w[iv:iv + 3], act, lb[iv:iv + 3], ub[iv:iv + 3], weff[:3])
            _accumulate_block(r3, J3, H3, weff[:3], order, exact_hessians, iv, 0, l, g, Hxx)
        else:  # a scalar residual whose Jacobian is the unit vector e_iv (Hessian zero)
            if t == RUB:
                c0, s0, c1, s1 = xr[iq], xr[iq + 1], q[iq], q[iq + 1]
                ra = np.arctan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)
            else:
                ra = q[iq] - xr[iq]
            wa = w[iv]
            if act == BARRIER:
                ra1[0] = ra
                _activate(ra1, w[iv:iv + 1], act, lb[iv:iv + 1], ub[iv:iv + 1], w1)
                ra, wa = ra1[0], w1[0]
            l[0] += 0.5 * wa * ra * ra
            if order > 0:
                g[iv] += wa * ra
                Hxx[iv, iv] += wa
    for k in range(nv):  # (written out: a helper taking the output arrays measured slower)
        ra = v[k] - xr[nq + k]
        wa = w[nv + k]
        if act == BARRIER:
            ra1[0] = ra
            _activate(ra1, w[nv + k:nv + k + 1], act, lb[nv + k:nv + k + 1],
                      ub[nv + k:nv + k + 1], w1)
            ra, wa = ra1[0], w1[0]
        l[0] += 0.5 * wa * ra * ra
        if order > 0:
            g[nv + k] += wa * ra
            Hxx[nv + k, nv + k] += wa


@njit(callee=True, **_JIT)
def _distance_residual(par, Rf, pf, order, r, Jx, Hx, scratch):
    """The signed distance r = phi(p) of the frame's origin p(xi) = pf + Rf (xi_v + 1/2 xi_w x
    xi_v) to the obstacle (DISTANCE's parameters), with Jx = grad phi^T Jp and
    Hx = Jp^T Hess phi Jp + sum_c grad phi_c Hp_c in xi (Jx, Hx zeroed by the caller):
    a sphere's phi = |p - c| - clearance, grad n = (p - c) / |p - c|, Hess (I - n n^T) / |p - c|;
    a half-space's phi = n . (p - c) - clearance, linear; a capsule's (the segment from c to
    c + a, a in the plane's slot) |p - c - s a| - clearance with s = (p - c) . a / |a|^2
    clipped to [0, 1]: between its ends a cylinder's, Hess (I - e e^T - n n^T) / d (e = a /
    |a|), at an end a sphere's.  ``scratch``: (3, 3), work."""
    obstacle, c, nplane, clearance = par[12], par[13:16], par[16:19], par[19]
    g, Jv, u = scratch[0], scratch[1], scratch[2]
    d = 0.0
    between = False  # a capsule's closest point strictly between its ends
    if obstacle == CAPSULE:
        axis2, s = 0.0, 0.0
        for a in range(3):
            axis2 += nplane[a] * nplane[a]
            s += (pf[a] - c[a]) * nplane[a]
        s /= axis2
        between = 0.0 < s < 1.0
        s = min(max(s, 0.0), 1.0)
        for a in range(3):
            g[a] = pf[a] - c[a] - s * nplane[a]
            d += g[a] * g[a]
        d = np.sqrt(d)
        r[0] = d - clearance
        for a in range(3):
            g[a] /= d
    elif obstacle == SPHERE or obstacle == COLUMN:  # |P (p - c)|, P = I or diag(1, 1, 0)
        for a in range(3):
            g[a] = pf[a] - c[a] if (obstacle == SPHERE or a < 2) else 0.0
            d += g[a] * g[a]
        d = np.sqrt(d)
        r[0] = d - clearance
        for a in range(3):
            g[a] /= d
    else:
        s = 0.0
        for a in range(3):
            g[a] = nplane[a]
            s += nplane[a] * (pf[a] - c[a])
        r[0] = s - clearance
    if order == 0:
        return
    # Jv = grad phi^T Rf: the gradient in xi_v (xi_w's first order is zero)
    for k in range(3):
        t = 0.0
        for a in range(3):
            t += g[a] * Rf[a, k]
        Jv[k] = t
        Jx[0, k] = t
    if obstacle == SPHERE or (obstacle == CAPSULE and not between):
        # Rf^T (I - n n^T) Rf / d on the xi_v block = (I - Jv Jv^T) / d
        for j in range(3):
            for k in range(3):
                Hx[0, j, k] = ((1.0 if j == k else 0.0) - Jv[j] * Jv[k]) / d
    elif obstacle == CAPSULE:  # Rf^T (I - e e^T - n n^T) Rf / d, Rf^T e = u
        norm = np.sqrt(axis2)
        for k in range(3):
            u[k] = (nplane[0] * Rf[0, k] + nplane[1] * Rf[1, k] + nplane[2] * Rf[2, k]) / norm
        for j in range(3):
            for k in range(3):
                Hx[0, j, k] = ((1.0 if j == k else 0.0) - u[j] * u[k] - Jv[j] * Jv[k]) / d
    elif obstacle == COLUMN:  # Rf^T (P - n n^T) Rf / d
        for j in range(3):
            for k in range(3):
                Hx[0, j, k] = (Rf[0, j] * Rf[0, k] + Rf[1, j] * Rf[1, k] - Jv[j] * Jv[k]) / d
    for va in range(3):  # sum_c g_c Hp_c: 1/2 g . Rf (e_b x e_a) on the (xi_v, xi_w) blocks
        for wb in range(3):
            if va != wb:
                third = 3 - va - wb
                sign = 1.0 if va == (wb + 1) % 3 else -1.0
                x = 0.5 * sign * Jv[third]
                Hx[0, va, 3 + wb] += x
                Hx[0, 3 + wb, va] += x


@njit(callee=True, **_JIT)
def _frame_residual(kind, par, Rf, pf, order, r, Jx, Hx, work):
    """Residual of a frame term as a function of the frame's local motion xi: r (nr,) and, with
    ``order`` > 0, Jx (nr, 6) and, for a translation, Hx (nr, 6, 6) (the Hessians of the
    logarithms are formed contracted, by :func:`_frame_term`).  ``work``: a
    :data:`FrameWork`."""
    RE, dp, pE, J3, H3 = work.log
    if order > 0:
        Jx[:, :] = 0.0
        if kind == TRANSLATION or kind == DISTANCE:
            Hx[:, :, :] = 0.0
    if kind == PLACEMENT:
        Rt = par[12:21].reshape((3, 3))
        for a in range(3):
            dp[a, 0] = pf[a] - par[21 + a]
        gemm_tn(Rt, Rf, RE, 1.0, 0.0)
        gemm_tn(Rt, dp, pE, 1.0, 0.0)
        if order == 0:
            se3_log(RE, pE.reshape(3), r)
        else:
            se3_log_jacobian(RE, pE.reshape(3), r, Jx)
    elif kind == TRANSLATION:
        # p(xi) = pf + Rf (xi_v + 1/2 xi_w x xi_v)
        for a in range(3):
            r[a] = pf[a] - par[12 + a]
            for k in range(3):
                Jx[a, k] = Rf[a, k]
        for va in range(3):
            for wb in range(3):
                # d2 p_c / d xi_v_a d xi_w_b = 1/2 (Rf (e_b x e_a))_c, e_b x e_a = +-e_third
                if va != wb:
                    third = 3 - va - wb
                    sign = 1.0 if va == (wb + 1) % 3 else -1.0
                    for c in range(3):
                        x = 0.5 * sign * Rf[c, third]
                        Hx[c, va, 3 + wb] = x
                        Hx[c, 3 + wb, va] = x
    elif kind == DISTANCE:
        _distance_residual(par, Rf, pf, order, r, Jx, Hx, work.distance)
    else:  # ROTATION
        Rt = par[12:21].reshape((3, 3))
        gemm_tn(Rt, Rf, RE, 1.0, 0.0)
        if order == 0:
            rotation_log(RE, r)
            return
        so3_log_expansion(RE, r, J3, H3, np.bool_(False))
        for a in range(3):
            for j in range(3):
                Jx[a, 3 + j] = J3[a, j]


@njit(callee=True, **_JIT)
def has_frame_terms(program):
    """Whether a knot's program has a frame term (the knots then need forward kinematics)."""
    return program_extent(program)[0]


@njit(callee=True, **_JIT)
def forces_of(lam):
    """The :data:`~.records.Forces` of knots with contact forces ``lam`` (T, nc) and no
    derivatives (what the values of the costs read)."""
    T = lam.shape[0]
    e3 = np.empty((T, 0, 0))
    return Forces(lam, e3, e3, e3, e3, np.empty((T, 0)), np.zeros(T, dtype=np.int64))


@njit(callee=True, **_JIT)
def no_forces(T):
    """The :data:`~.records.Forces` of T knots without contacts."""
    return forces_of(np.zeros((T, 0)))


@njit(callee=True, forceinline=True, **_JIT)
def _term(cints, cfloats, base, fo):
    """The :data:`Term` whose ints start at ``base`` of a knot's program, whose floats start at
    ``fo``."""
    nr, act = cints[base + SIZE], cints[base + ACTIVATION]
    wo, po = fo + cints[base + WEIGHTS], fo + cints[base + PARAMETERS]
    bo = fo + cints[base + BOUNDS]
    bounds = cfloats[bo:bo + 2 * nr] if act != QUADRATIC else cfloats[:0]
    return Term(cints[base + KIND], cints[base + JOINT], nr, cfloats[wo:wo + nr], cfloats[po:],
                act, bounds[:nr], bounds[nr:])


@njit(callee=True, **_JIT)
def program_extent(program):
    """What a program needs, from one pass over its terms: whether it has a frame term (its
    knots then need forward kinematics), whether it has a GRAVITY, a COM and a VELOCITY term,
    and its force terms' largest residual (0: none) (the last four size its work arrays)."""
    cints, starts = program.ints, program.starts
    frames, gravity, com, velocity, nr = False, False, False, False, 0
    for s in range(starts.shape[0]):
        if s > 0 and starts[s, 0] == starts[s - 1, 0]:
            continue
        io = starts[s, 0]
        for k in range(cints[io]):
            base = io + 1 + TERM_INTS * k
            kind = cints[base + KIND]
            frames |= (kind == PLACEMENT or kind == TRANSLATION or kind == ROTATION
                       or kind == VELOCITY or kind == COM or kind == DISTANCE)
            gravity |= kind == GRAVITY
            com |= kind == COM
            velocity |= kind == VELOCITY
            if kind == FORCE:
                nr = max(nr, cints[base + SIZE])
    return frames, gravity, com, velocity, nr


@njit(callee=True, forceinline=True, **_JIT)
def _work_shapes(nj, nv, nz, extent_):
    """The shapes of :func:`_cost_work`'s float arrays, in its order (``nz``: 2 nv + nu)."""
    _, gravity, com, velocity, nr = extent_
    ng, nm, nw = nv if gravity else 0, nv if com else 0, nv if velocity else 0
    jw = nj if velocity else 0
    return ((nj, 3, 3), (nj, 3), (nv, 6),  # the kinematics
            (3,), (6,), (6, 6), (6, 6, 6), (3, 3), (3, 3), (6,),  # state
            (3, 3), (3, 1), (3, 1), (3, 3), (3, 3, 3),  # its logarithms
            (6, nv), (3, 3), (3,), (6,), (6, 6), (6, 6, 6), (6,), (6, 6), (6,), (6, nv),
            (12,), (3, 3),  # frame
            (3, 3), (3, 1), (3, 1), (3, 3), (3, 3, 3),  # its logarithms
            (6, nw), (3, 3), (3,), (6,), (6,), (jw, 6), (6, 2 * nw), (2 * nw, 6),
            (6, 6),  # velocity
            (6, 3), (3, nm), (3, nm), (3, nm), (nm, nm),  # CoM
            (5, ng), (7, ng, ng),  # gravity
            (3, nr), (nr * nr,), (nr, nz), (nr, nz),  # force
            (6,))  # a scalar term's weights


@njit(callee=True, forceinline=True, **_JIT)
def _cost_work(floats, ints, nj, nv):
    """The :data:`CostWork` of borrowed views ``floats`` (carved by :func:`_work_shapes`) and
    ``ints`` (4 nj + 4 nv, borrowed)."""
    (oR, op, S0, r3, r6, J6, H6, R, Rr, sw, RE, dp, pE, J3, H3, Jf, Rf, pf, r, Jx, Hx, wr, M6,
     gxi, JM, aw, dist, RE2, dp2, pE2, J32, H32, J, vRf, vpf, vr, vwr, Uc, Jr, P, v6, small, Jc,
     Pc, Wc, Hc, gv, gm, fv, Ha, Jz, HJ, weights) = floats
    chain, vchain = ints[:nj], ints[nj:2 * nj]
    cols, dofs, levels = ints[2 * nj:2 * nj + 2 * nv], ints[2 * nj + 2 * nv:2 * nj + 3 * nv], \
        ints[2 * nj + 3 * nv:2 * nj + 4 * nv]
    return CostWork(FrameKinematics(oR, op, S0),
                    StateWork(r3, r6, J6, H6, R, Rr, sw, LogWork(RE, dp, pE, J3, H3)),
                    FrameWork(chain, Jf, Rf, pf, r, Jx, Hx, wr, M6, gxi, JM, aw, dist,
                              LogWork(RE2, dp2, pE2, J32, H32)),
                    VelocityWork(vchain, cols, J, vRf, vpf, vr, vwr, Uc, Jr, P, v6),
                    ComWork(dofs, levels, small, Jc, Pc, Wc, Hc), GravityWork(gv, gm),
                    ForceWork(fv, Ha, Jz, HJ), weights)


@njit(**_JIT)
def cost_knots(model, program, Q, V, U, t0, t1, order, exact_hessians, out, kin, forces):
    """Accumulate the cost of ``program`` (:data:`~.records.Program`) at the knots t0 <= t < t1
    into ``out`` (:data:`~.records.CostDerivatives`): l (T,) and, with ``order`` 2, its gradient
    (lx (T, 2 nv), lu (T, nu)) and Hessian (lxx, lxu, luu; exact or Gauss-Newton by
    ``exact_hessians``).
    The outputs must be zeroed by the caller.  (``order`` 0: the value only.)  The
    work arrays (a :data:`CostWork`) are two allocations for the range of knots.  ``kin``: the
    forward kinematics of the knots, (oR (T, nj, 3, 3), op (T, nj, 3), S0 (T, nv, 6)), when
    already computed (by the rollout's ABA, by FDSVA), or empty arrays
    (:func:`kinematics_buffers` of 0 knots): each knot's are then computed here when the
    program has frame terms.  Returns 0.

    Its callers reach it through its address (``call_knot_kernel(LINKED_COSTS, args)``, linked
    by :func:`link_costs`): called by name, numba linked its whole tree into each of them and
    optimized it and emitted its machine code again there (about 4 s each on a cold compile,
    2 cores)."""
    m = unpack(model.ints, model.floats)
    cints, cfloats, starts = program
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    extent_ = program_extent(program)
    has_frames = extent_[0]
    per_knot = starts.shape[0] > 1
    io, fo = starts[0, 0], starts[0, 1]
    # work arrays and arguments as borrowed views (dynamics.jit): in this per-knot
    # loop numba's reference counting took most of the time (UR3's costs per knot, value only:
    # 1.66 -> 0.67 us; with the Gauss-Newton derivatives 2.4 -> 1.2 us)
    shapes = _work_shapes(nj, nv, 2 * nv + U.shape[1], extent_)
    own = (np.empty(extent(shapes)), np.empty(4 * (nj + nv), dtype=np.int64))
    work = _cost_work(carve(own[0], shapes), borrowed(own[1]), nj, nv)
    aw = work.weights
    cints, cfloats, Q, V, U = borrowed((cints, cfloats, Q, V, U))
    l, gx, gu, Hxx, Hxu, Huu = borrowed(out)
    KR, Kp, KS = borrowed(kin)
    given = KR.shape[0] > 0
    for t in range(t0, t1):
        if per_knot:
            io, fo = starts[t, 0], starts[t, 1]
        q, v = Q[t], V[t]
        knot = KnotCost(l[t:t + 1], gx[t], gu[t], Hxx[t], Hxu[t], Huu[t])
        kt = work.kinematics
        if given:
            kt = FrameKinematics(KR[t], Kp[t], KS[t])
        elif has_frames:
            forward_kinematics(m, q, kt.oR, kt.op, kt.S0)
        for k in range(cints[io]):
            term = _term(cints, cfloats, io + 1 + TERM_INTS * k, fo)
            kind = term.kind
            if kind == STATE:
                _state_term(m, term, q, v, order, exact_hessians, knot, work.state)
            elif kind == CONTROL:
                w, par = term.weights, term.parameters
                for a in range(term.nr):
                    ra, wa = U[t, a] - par[a], w[a]
                    if term.activation == BARRIER:
                        aw[1] = ra
                        _activate(aw[1:2], w[a:a + 1], BARRIER, term.lower[a:a + 1],
                                  term.upper[a:a + 1], aw[:1])
                        ra, wa = aw[1], aw[0]
                    l[t] += 0.5 * wa * ra * ra
                    if order > 0:
                        gu[t, a] += wa * ra
                        Huu[t, a, a] += wa
            elif kind == VELOCITY:
                _velocity_term(m, term, v, order, exact_hessians, kt, knot, work.velocity)
            elif kind == COM:
                _com_term(m, term, order, exact_hessians, kt, knot, work.com)
            elif kind == GRAVITY:
                _gravity_term(m, term, q, U[t], order, exact_hessians, knot, work.gravity)
            elif kind == FORCE:
                _force_term(t, term, order, forces, knot, work.force)
            else:
                _frame_term(m, term, order, exact_hessians, kt, knot, work.frame)
    keep_alive(own)
    return np.int64(0)


def link_costs():
    """Link :func:`cost_knots` (compiled on a machine's first run, else loaded from the cache)
    for the types its callers pass, which are the same for every problem: the records
    :data:`~.records.PackedModel`, :data:`~.records.Program`, :data:`~.records.CostDerivatives` and
    :data:`~.records.Forces` and the knots' states, controls and forward kinematics, all of C
    arrays, and int64 and boolean scalars.  Once per process: then a few microseconds."""
    global _COSTS_LINKED
    if _COSTS_LINKED == os.getpid():
        return
    i64 = types.int64
    model = PackedModel(np.empty(0, np.int64), np.empty(0))
    program = Program(np.empty(0, np.int64), np.empty(0), np.empty((0, 0), np.int64))
    argtypes = (*argument_types(model, program), *array_types(2, 2, 2), i64, i64, i64,
                types.boolean, *argument_types(CostDerivatives.empty(0, 0, 0),
                                               kinematics_buffers.py_func(0, 0, 0),
                                               empty_forces(0, 0, 0, 0)))
    _link(LINKED_COSTS, cost_knots, argtypes)
    _COSTS_LINKED = os.getpid()


_COSTS_LINKED = None  # the process that linked the cost program


@njit(callee=True, **_JIT)
def _gravity_term(m, term, q, u, order, exact_hessians, out, work):
    """The controls minus gravity's torques, r = u - g(q) (Crocoddyl's
    ``ResidualModelControlGrav``): dr/dq = -dg/dq, dr/du = I; the exact Hessian adds
    -sum_a (w r)_a d2g_a/dq2, symmetrized (the Hessian of g(q (+) dq) in dq), into the knot's
    ``out``; ``work``: a :data:`GravityWork`."""
    l, gx, gu, Hxx, Hxu, Huu = out
    nv = m.S_local.shape[0]
    zero, g, r, w, wr = (work.vectors[0], work.vectors[1], work.vectors[2], work.vectors[3],
                         work.vectors[4])
    dg, dv, M, Hq, Hv, Hqv, G = (work.matrices[0], work.matrices[1], work.matrices[2],
                                 work.matrices[3], work.matrices[4], work.matrices[5],
                                 work.matrices[6])
    zero[:] = 0.0
    if order == 0:  # the value alone (a line search's rollout): RNEA at v = a = 0
        rnea_point(m, q, zero, zero, g)
    else:
        dg[:, :] = 0.0
        dv[:, :] = 0.0
        M[:, :] = 0.0
        idsva_point(m, q, zero, zero, g, dg, dv, M)
    for a in range(nv):
        r[a] = u[a] - g[a]
    _activate(r, term.weights, term.activation, term.lower, term.upper, w)
    for a in range(nv):
        wr[a] = w[a] * r[a]
        l[0] += 0.5 * wr[a] * r[a]
    if order == 0:
        return
    for j in range(nv):
        s = 0.0
        for a in range(nv):
            s -= dg[a, j] * wr[a]
        gx[j] += s
        gu[j] += wr[j]
        Huu[j, j] += w[j]
        for a in range(nv):
            Hxu[j, a] -= dg[a, j] * w[a]
        for k in range(nv):
            s = 0.0
            for a in range(nv):
                s += dg[a, j] * w[a] * dg[a, k]
            Hxx[j, k] += s
    if exact_hessians:
        Hq[:, :] = 0.0
        Hv[:, :] = 0.0
        Hqv[:, :] = 0.0
        G[:, :] = 0.0
        idsva_so_contracted(m, q, zero, zero, wr, Hq, Hv, Hqv, G)
        for j in range(nv):
            for k in range(nv):
                Hxx[j, k] -= 0.5 * (Hq[j, k] + Hq[k, j])


@njit(callee=True, **_JIT)
def _com_term(m, term, order, exact_hessians, kin, out, work):
    """The centre of mass c = sum_i m_i (oR_i c_i + op_i) / sum_i m_i minus the reference par[:3]
    (Crocoddyl's ``ResidualModelCoMPosition``), after forward kinematics.  Each body's centre is
    a point of its joint's subtree: its Jacobian columns are P_k = s_k + w_k x p on the joint's
    chain, and its Hessian in (q_k, q_l) the derivative dP(k, l) of those columns
    (:mod:`dynamics.kernels.contact`), whose symmetric part the cost takes.  ``kin``: the
    knot's :data:`FrameKinematics`; ``out``: its :data:`KnotCost`; ``work``: a
    :data:`ComWork`."""
    par, oR, op, S0 = term.parameters, kin.oR, kin.op, kin.S0
    l, gx, Hxx = out.l, out.gx, out.Hxx
    nj = m.parent.shape[0]
    nv = m.S_local.shape[0]
    total = 0.0
    for i in range(1, nj):
        total += m.mass[i]
    small = work.small
    c, e, w, wr, p, t = small[0], small[1], small[2], small[3], small[4], small[5]
    c[:] = 0.0
    for i in range(1, nj):
        for a in range(3):
            s = op[i, a]
            for b in range(3):
                s += oR[i, a, b] * m.com[i, b]
            c[a] += m.mass[i] / total * s
    for a in range(3):
        e[a] = c[a] - par[a]
    _activate(e, term.weights, term.activation, term.lower, term.upper, w)
    for a in range(3):
        wr[a] = w[a] * e[a]
        l[0] += 0.5 * wr[a] * e[a]
    if order == 0:
        return
    Jc, dofs, lev, P, W, Hc = work.Jc, work.dofs, work.levels, work.P, work.W, work.Hc
    Jc[:, :] = 0.0
    Hc[:, :] = 0.0
    for i in range(1, nj):
        if m.mass[i] == 0.0:
            continue
        f = m.mass[i] / total
        for a in range(3):
            s = op[i, a]
            for b in range(3):
                s += oR[i, a, b] * m.com[i, b]
            p[a] = s
        nd = chain_dofs(m, i, dofs, lev)
        point_columns(S0, dofs, nd, p, P, W)
        for k in range(nd):
            for a in range(3):
                Jc[a, dofs[k]] += f * P[a, k]
        if not exact_hessians:
            continue
        for j in range(nd):
            for k in range(nd):
                column_derivative(P, W, lev, j, k, t)
                h = 0.5 * f * (wr[0] * t[0] + wr[1] * t[1] + wr[2] * t[2])
                Hc[dofs[j], dofs[k]] += h
                Hc[dofs[k], dofs[j]] += h
    for k in range(nv):
        gx[k] += Jc[0, k] * wr[0] + Jc[1, k] * wr[1] + Jc[2, k] * wr[2]
        for kk in range(nv):
            Hxx[k, kk] += (Jc[0, k] * w[0] * Jc[0, kk] + Jc[1, k] * w[1] * Jc[1, kk]
                           + Jc[2, k] * w[2] * Jc[2, kk]) + Hc[k, kk]


@njit(callee=True, **_JIT)
def _cone_activation(e, w, shift, mu, grad, hess):
    """1/2 w dist(z, K)^2 at z = e + shift, for the second-order cone K = {(t, n): |t| <= mu n}
    (t = z[:2], n = z[2]); its gradient w (z - P(z)) into grad (3,) and its Hessian
    w (I - dP(z)) into hess (3, 3), P the projection onto K (exact: zero inside K, w I in the
    polar cone, between them the Hessian of the squared distance to the cone's boundary
    line in the plane of z and the axis)."""
    t0, t1, n = e[0] + shift[0], e[1] + shift[1], e[2] + shift[2]
    s = np.sqrt(t0 * t0 + t1 * t1)
    for a in range(3):
        grad[a] = 0.0
        for b in range(3):
            hess[a, b] = 0.0
    if s <= mu * n:  # inside the cone
        return 0.0
    if mu * s <= -n:  # in the polar cone: P(z) = 0
        grad[0], grad[1], grad[2] = w * t0, w * t1, w * n
        for a in range(3):
            hess[a, a] = w
        return 0.5 * w * (s * s + n * n)
    c = w / (1.0 + mu * mu)
    d = s - mu * n  # sqrt(1 + mu^2) times the distance
    u0, u1 = t0 / s, t1 / s
    grad[0], grad[1], grad[2] = c * d * u0, c * d * u1, -c * mu * d
    f = d / s
    hess[0, 0] = c * (u0 * u0 + f * (1.0 - u0 * u0))
    hess[1, 1] = c * (u1 * u1 + f * (1.0 - u1 * u1))
    hess[0, 1] = hess[1, 0] = c * (1.0 - f) * u0 * u1
    hess[0, 2] = hess[2, 0] = -c * mu * u0
    hess[1, 2] = hess[2, 1] = -c * mu * u1
    hess[2, 2] = c * mu * mu
    return 0.5 * c * d * d


@njit(callee=True, **_JIT)
def _force_term(t, term, order, forces, out, work):
    """A residual linear in the force lam_c (nf,) of the contact whose force starts at ``row`` of
    knot t's forces: r = A lam_c - b (nf, A (nr, nf) then b (nr,) in par), as Crocoddyl's
    ``ResidualModelContactForce`` (A = I), ``ResidualModelContactFrictionCone`` (the cone's
    facets, with the barrier) and ``ResidualModelContactWrenchCone`` (nf = 6), or with the
    second-order cone's activation (CONE: :func:`_cone_activation`, the shift in lb, mu in
    ub[0]).  Its gradient and Gauss-Newton Hessian go through the forces' derivatives
    (``forces``); its gradient in lam_c, A^T g (g the activation's gradient in r), into
    ``forces.dl_dlam`` for DDP's terms (the forces' own curvature,
    :mod:`ddp.kernels.passes`).  The term's joint: ``row``; ``out``: the knot's
    :data:`KnotCost`; ``work``: a :data:`ForceWork`."""
    l, gx, gu, Hxx, Hxu, Huu = out
    row, nr, w0, par, act, lb, ub = (term.joint, term.nr, term.weights, term.parameters,
                                     term.activation, term.lower, term.upper)
    nv = gx.shape[0] // 2
    nu = gu.shape[0]
    nz = 2 * nv + nu  # (q, v, u)
    nf = int(par[0])
    A = par[1:1 + nf * nr].reshape((nr, nf))
    # the activated residual, its weights, the activation's gradient and Hessian in r
    e, w, g = work.vectors[0, :nr], work.vectors[1, :nr], work.vectors[2, :nr]
    Ha = work.Ha[:nr * nr].reshape((nr, nr))
    Ha[:, :] = 0.0
    lam = forces.lam[t]
    for a in range(nr):
        s = -par[1 + nf * nr + a]
        for c in range(nf):
            s += A[a, c] * lam[row + c]
        e[a] = s
    if act == CONE:
        l[0] += _cone_activation(e, w0[0], lb, ub[0], g, Ha)
    else:
        _activate(e, w0, act, lb, ub, w)
        for a in range(nr):
            l[0] += 0.5 * w[a] * e[a] * e[a]
            g[a] = w[a] * e[a]
            Ha[a, a] = w[a]
    if order == 0:
        return
    Jz = work.Jz[:nr]  # the residual's Jacobian in (q, v, u)
    Jz[:, :] = 0.0
    for a in range(nr):
        for c in range(nf):
            if A[a, c] == 0.0:
                continue
            for k in range(nv):
                Jz[a, k] += A[a, c] * forces.dlam_dq[t, row + c, k]
                Jz[a, nv + k] += A[a, c] * forces.dlam_dv[t, row + c, k]
            for k in range(nu):
                Jz[a, 2 * nv + k] += A[a, c] * forces.dlam_du[t, row + c, k]
    for c in range(nf):
        s = 0.0
        for a in range(nr):
            s += A[a, c] * g[a]
        forces.dl_dlam[t, row + c] += s
    for i in range(nz):
        s = 0.0
        for a in range(nr):
            s += Jz[a, i] * g[a]
        if i < 2 * nv:
            gx[i] += s
        else:
            gu[i - 2 * nv] += s
    HJ = work.HJ[:nr]  # Ha Jz
    HJ[:, :] = 0.0
    for a in range(nr):
        for b in range(nr):
            if Ha[a, b] != 0.0:
                for j in range(nz):
                    HJ[a, j] += Ha[a, b] * Jz[b, j]
    for i in range(nz):
        for j in range(nz):
            s = 0.0
            for a in range(nr):
                s += Jz[a, i] * HJ[a, j]
            if i < 2 * nv and j < 2 * nv:
                Hxx[i, j] += s
            elif i < 2 * nv:
                Hxu[i, j - 2 * nv] += s
            elif j >= 2 * nv:
                Huu[i - 2 * nv, j - 2 * nv] += s


@njit(**_JIT)
def kinematics_buffers(T, nj, nv):
    """A ``kin`` of :func:`cost_knots` (and of :func:`~ddp.kernels.passes.rollout`) for T knots,
    to be filled: oR (T, nj, 3, 3), op (T, nj, 3), S0 (T, nv, 6).  T = 0: the empty one."""
    return np.empty((T, nj, 3, 3)), np.empty((T, nj, 3)), np.empty((T, nv, 6))


@njit(callee=True, forceinline=True, **_JIT)
def _frame_term(m, term, order, exact_hessians, kin, out, work):
    """A frame term at one knot, after forward kinematics (``kin``, a :data:`FrameKinematics`),
    with the term's activation, into the knot's ``out``; ``work``: a :data:`FrameWork`."""
    kind, joint, nr, par = term.kind, term.joint, term.nr, term.parameters
    l, gx, Hxx = out.l, out.gx, out.Hxx
    chain, Jf, Rf, pf, r, Jx, Hx = work.chain, work.Jf, work.Rf, work.pf, work.r, work.Jx, work.Hx
    wr, M6, gxi, JM, aw = work.wr, work.M6, work.gxi, work.JM, work.weights
    RE, pE, J3 = work.log.RE, work.log.pE, work.log.J3
    fR = par[0:9].reshape((3, 3))
    fp = par[9:12]
    frame_placement(kin.oR, kin.op, joint, fR, fp, Rf, pf)
    rr = r[:nr]
    _frame_residual(kind, par, Rf, pf, order, rr, Jx[:nr], Hx[:nr], work)
    w, e = aw[:nr], aw[6:6 + nr]  # the active weights and the activated residual
    copy_into(e, rr)
    _activate(e, term.weights, term.activation, term.lower, term.upper, w)
    for a in range(nr):
        wr[a] = w[a] * e[a]
        l[0] += 0.5 * wr[a] * e[a]
    if order == 0:
        return
    nc = support_joints(m, joint, chain)
    frame_jacobian(m, kin.S0, chain, nc, Rf, pf, Jf)
    for j in range(6):
        s = 0.0
        for a in range(nr):
            s += Jx[a, j] * wr[a]
        gxi[j] = s
        for kk in range(6):
            s = 0.0
            for a in range(nr):
                s += Jx[a, j] * w[a] * Jx[a, kk]
            M6[j, kk] = s
    if exact_hessians:  # + sum_a (W r)_a Hx[a]; the logarithms' Hessians are formed contracted
        if kind == TRANSLATION or kind == DISTANCE:
            for j in range(6):
                for kk in range(6):
                    s = 0.0
                    for a in range(nr):
                        s += wr[a] * Hx[a, j, kk]
                    M6[j, kk] += s
        else:
            G = Hx[0]  # free: Hx holds a translation's Hessian only
            if kind == PLACEMENT:
                se3_log_hessian_contracted(RE, pE.reshape(3), rr, Jx, wr, G)
            else:
                G[:, :] = 0.0
                so3_log_hessian_contracted(rr, J3, wr, G[3:, 3:])
            for j in range(6):
                for kk in range(6):
                    M6[j, kk] += G[j, kk]
    # gradient J^T gxi, Hessian J^T M6 J (+ bracket terms), on the support only
    for n in range(nc):
        i = chain[n]
        for b in range(m.iv[i], m.iv[i] + m.nvj[i]):
            s = 0.0
            for c in range(6):
                s += Jf[c, b] * gxi[c]
                t = 0.0
                for d in range(6):
                    t += M6[c, d] * Jf[d, b]
                JM[c, b] = t
            gx[b] += s
    for n1 in range(nc):
        i1 = chain[n1]
        for a in range(m.iv[i1], m.iv[i1] + m.nvj[i1]):
            for n2 in range(nc):
                i2 = chain[n2]
                for b in range(m.iv[i2], m.iv[i2] + m.nvj[i2]):
                    s = 0.0
                    for c in range(6):
                        s += Jf[c, a] * JM[c, b]
                    Hxx[a, b] += s
    if exact_hessians:
        add_bracket_hessian(m, Jf, chain, nc, gxi, Hxx)


@njit(callee=True, **_JIT)
def _velocity_term(m, term, v, order, exact_hessians, kin, out, work):
    """A frame-velocity term at one knot, after forward kinematics (oR, op, S0).

    With J the frame's local Jacobian (:func:`~dynamics.kernels.frames.frame_jacobian`), the
    frame's velocity in its own axes is ``y = sum_j J_j v_j``, and the residual
    ``r = Rb y - v_ref`` with ``Rb = diag(oR_f, oR_f)`` when world-aligned, I when local.  For a
    right perturbation of the DoF k (``j < k``: the joint of j is a strict ancestor of the joint
    of k; ``x``: the motion cross product)::

        dJ_j/dq_k = [j < k] J_j x J_k,     dRb/dq_k = Rb (A_k x),  A_k = (0, ang J_k) (world-
        dy/dq_k = D_k = U_k x J_k,         U_k = sum_{j < k} J_j v_j        aligned; else 0)

    so that ``dr/dv_j = Rb J_j``, ``dr/dq_k = Rb P_k`` with ``P_k = A_k x y + D_k`` and, for
    ``mu = Rb^T lam``::

        lam . d2r/dv_j dq_k = mu . (A_k x J_j + [j < k] J_j x J_k)
        lam . d2r/dq_l dq_k = mu . (A_l x P_k + [k < l] (A_k x A_l) x y + A_k x D_l
                                    + (U_k x J_l) x J_k + [k < l] U_k x (J_k x J_l))   (k <= l)

    which is symmetric in (k, l) on different joints; within one joint (a single exponential
    in q (+) dq) the Hessian is its symmetric part.  ``kin``: the knot's
    :data:`FrameKinematics`; ``out``: its :data:`KnotCost`; ``work``: a
    :data:`VelocityWork`."""
    joint, w, par = term.joint, term.weights, term.parameters
    l, gx, Hxx = out.l, out.gx, out.Hxx
    nv = m.S_local.shape[0]
    chain, J, Rf, pf, r, wr = work.chain, work.J, work.Rf, work.pf, work.r, work.wr
    cols = work.cols  # the support's columns of dx
    Uc = work.Uc  # U per joint of the support
    Jr = work.Jr  # the residual's Jacobian
    P = work.P  # P_k (rows < nv) and D_k (rows >= nv)
    v6 = work.v6
    fR = par[0:9].reshape((3, 3))
    frame_placement(kin.oR, kin.op, joint, fR, par[9:12], Rf, pf)
    world = par[18] != 0.0
    nc = support_joints(m, joint, chain)
    frame_jacobian(m, kin.S0, chain, nc, Rf, pf, J)
    y, mu, a, b, c, d = v6[0], v6[1], v6[2], v6[3], v6[4], v6[5]
    y[:] = 0.0
    for n in range(nc):
        i = chain[n]
        copy_into(Uc[n], y)
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            for e in range(6):
                y[e] += J[e, k] * v[k]
    _rotated(y, Rf, world, False, r)
    for e in range(6):  # r = Rb y - v_ref
        r[e] -= par[12 + e]
        wr[e] = w[e] * r[e]
        l[0] += 0.5 * wr[e] * r[e]
    if order == 0:
        return
    # P_k, D_k and the Jacobian columns Rb P_k (dq_k), Rb J_j (dv_j) on the support
    for n in range(nc):
        i = chain[n]
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            motion_cross(Uc[n], J[:, k], P[nv + k])
            for e in range(6):
                P[k, e] = P[nv + k, e]
            if world:
                a[:] = 0.0
                copy_into(a[3:], J[3:, k])
                motion_cross(a, y, b)
                for e in range(6):
                    P[k, e] += b[e]
            _rotated(P[k], Rf, world, False, Jr[:, k])
            _rotated(J[:, k], Rf, world, False, Jr[:, nv + k])
    # gradient Jr^T W r and Gauss-Newton Jr^T W Jr over the support columns (q, then v)
    nz = 0
    for o in range(0, 2 * nv, nv):
        for n in range(nc):
            i = chain[n]
            for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
                cols[nz] = o + k
                nz += 1
    for ci in range(nz):
        k = cols[ci]
        s = 0.0
        for e in range(6):
            s += Jr[e, k] * wr[e]
        gx[k] += s
        for cj in range(nz):
            kk = cols[cj]
            s = 0.0
            for e in range(6):
                s += Jr[e, k] * w[e] * Jr[e, kk]
            Hxx[k, kk] += s
    if not exact_hessians:
        return
    _rotated(wr, Rf, world, True, mu)  # mu = Rb^T W r
    c[:] = 0.0  # A_k (world-aligned): the rotation of J_k
    for n1 in range(nc):
        i1 = chain[n1]
        for k in range(m.iv[i1], m.iv[i1] + m.nvj[i1]):
            Jk = J[:, k]
            copy_into(c[3:], Jk[3:])
            for n2 in range(nc):
                i2 = chain[n2]
                for j in range(m.iv[i2], m.iv[i2] + m.nvj[i2]):
                    # v_j, q_k: mu . (A_k x J_j + [j < k] J_j x J_k)
                    s = 0.0
                    if n2 < n1:
                        motion_cross(J[:, j], Jk, b)
                        s += dot6(mu, b)
                    if world:
                        motion_cross(c, J[:, j], b)
                        s += dot6(mu, b)
                    Hxx[k, nv + j] += s
                    Hxx[nv + j, k] += s
                    if n2 < n1:
                        continue
                    # q_k, q_l with l = j on the same joint or a later one
                    Jl = J[:, j]
                    motion_cross(Uc[n1], Jl, a)
                    motion_cross(a, Jk, b)  # (U_k x J_l) x J_k
                    if n2 > n1:
                        motion_cross(Jk, Jl, a)
                        motion_cross_add(Uc[n1], a, b)  # + U_k x (J_k x J_l)
                    if world:
                        a[:] = 0.0
                        copy_into(a[3:], Jl[3:])
                        motion_cross_add(a, P[k], b)  # + A_l x P_k
                        motion_cross_add(c, P[nv + j], b)  # + A_k x D_l
                        if n2 > n1:  # + (A_k x A_l) x y, both pure rotations
                            motion_cross(c, a, d)
                            motion_cross_add(d, y, b)
                    s = dot6(mu, b)
                    if n2 == n1:  # the symmetric part, from both orders within the joint
                        s *= 0.5
                    Hxx[k, j] += s
                    Hxx[j, k] += s


@njit(callee=True, forceinline=True, **_JIT)
def _rotated(x, R, world, transpose, out):
    """out = diag(R, R) x, or diag(R, R)^T x with ``transpose`` (world), or x, for 6-vectors."""
    if world:
        for h in range(0, 6, 3):
            for e in range(3):
                if transpose:
                    out[h + e] = R[0, e] * x[h] + R[1, e] * x[h + 1] + R[2, e] * x[h + 2]
                else:
                    out[h + e] = R[e, 0] * x[h] + R[e, 1] * x[h + 1] + R[e, 2] * x[h + 2]
    else:
        for e in range(6):
            out[e] = x[e]


@njit(**_JIT)
def cost_chunk(model, program, Q, V, U, order, exact_hessians, out, forces, chunk, nchunks):
    """:func:`cost_knots` at the knots of chunk ``chunk`` of ``nchunks`` (outputs zeroed by the
    caller); ``forces``: the knots' contact forces and their derivatives, for the terms on
    forces.  For all knots: ``run_in_chunks(cost_batch, cost_chunk, args, nchunks)``."""
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    call_knot_kernel(LINKED_COSTS, (model, program, Q, V, U, t0, t1, order, exact_hessians, out,
                                    kinematics_buffers(0, 0, 0), forces))


@njit(cache=True, error_model="numpy")
def cost_batch(model, program, Q, V, U, order, exact_hessians, out, forces, chunks):
    """:func:`cost_chunk` in parallel chunks of knots through ``chunks`` = (its address, key,
    nchunks >= 2) (:func:`dynamics.jit.run_in_chunks` calls this; the status it
    returns is :func:`dynamics.jit.in_parallel`'s)."""
    return in_parallel((model, program, Q, V, U, order, exact_hessians, out, forces), chunks)
