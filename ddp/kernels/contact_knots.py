"""The knots with contacts or an impact, in the solver's compiled calls: kernels that the
rollouts, the knots' derivatives and the backward pass call through the table of linked kernels
(:func:`dynamics.jit.call_linked`, in the slots of :mod:`.records`), which
:func:`link` fills when a problem has such knots.  So a problem without contacts never compiles
them, nor the contact kernels of :mod:`dynamics.kernels.contact` they call: on a cold first run
of ``soddp compare ur3`` that is about a quarter of the compile time (``docs/design.md``).

* :func:`contact_step`: the knot's step (the KKT contact dynamics then the Euler step, or the
  impact map), returning whether it stepped or why not (:data:`STEPPED`);
* :func:`contact_knot_derivatives`: its dynamics derivatives, forces and forward kinematics,
  and its KKT factors for the contracted sweep (:func:`kept_workspace`);
* :func:`contact_second_order`: DDP's second-order dynamics terms at the knot.

Each takes the records of the call it serves (their types are those Python gives them, so that
:func:`link` can name the types it compiles for) and returns an int64 status.
"""

import numpy as np
from numba.core import types

from dynamics.jit import argument_types, compile_notice, copy_into, is_cached, njit
from dynamics.jit import link as _link
from dynamics.jit.linking import array_types
from dynamics.kernels.contact import (OK, ContactWork, constrained_derivatives_point,
                                      constrained_dynamics_point, contact_workspace,
                                      impulse_derivatives_point, impulse_dynamics_point,
                                      impulse_so_terms, kinematics_workspace, second_order_state,
                                      so_contracted_terms)
from dynamics.kernels.dense import gemm_tn
from dynamics.kernels.packed_model import unpack
from dynamics.kernels.step import euler_step

from .records import IMPACT, LINKED_DERIVATIVES, LINKED_SECOND_ORDER, LINKED_STEP

_JIT = dict(cache=True, error_model="numpy")

#: what :func:`contact_step` (and :func:`~.passes.knot_steps` per knot) returns: the knot stepped
#: (the KKT status OK); its KKT system was solved, but the step is not finite; otherwise the
#: status of the singular KKT system (:mod:`dynamics.kernels.contact`)
STEPPED, STEP_NOT_FINITE = OK, 3


@njit(callee=True, **_JIT)
def knot_contact_set(contacts, t):
    """The packed contact set (ints, floats) of knot t of a :data:`~.records.KnotContacts`."""
    return contacts.ints[contacts.int_offsets[t]:], contacts.floats[contacts.float_offsets[t]:]


@njit(**_JIT)
def contact_step(model, step, t, q, v, tau, acc, lam, S0, oR, op, q_next, v_next, w):
    """The step of knot t with contacts (the KKT dynamics, then the Euler step) or an impact
    ((q, v+)) into q_next, v_next, its forces into lam (at least the knot's nc components: a row
    of the caller's (T, nc)) and its forward kinematics into S0, oR, op.  Returns
    :data:`STEPPED`, :data:`STEP_NOT_FINITE` or the status of a KKT system that is singular."""
    m = unpack(model.ints, model.floats)
    contacts = step.contacts
    n = v.shape[0]
    nc = contacts.size[t]
    ci, cf = knot_contact_set(contacts, t)
    work = kinematics_workspace(m.parent.shape[0], n, nc, S0, oR, op)
    force = lam[:nc]
    if contacts.kind[t] == IMPACT:
        m0 = unpack(contacts.impact_model.ints, contacts.impact_model.floats)
        status = impulse_dynamics_point(m0, ci, cf, q, v, contacts.restitution[t],
                                        contacts.damping[t], acc, force, work)
        if status != OK:
            return np.int64(status)
        for r in range(q.shape[0]):
            q_next[r] = q[r]
        ok = True
        for r in range(n):
            v_next[r] = acc[r]
            ok = ok and np.isfinite(acc[r])
        return np.int64(STEPPED if ok else STEP_NOT_FINITE)
    status = constrained_dynamics_point(m, ci, cf, q, v, tau, contacts.damping[t], acc, force,
                                        work)
    if status != OK:
        return np.int64(status)
    return np.int64(STEPPED if euler_step(m, q, v, acc, step.dt, q_next, v_next, w)
                    else STEP_NOT_FINITE)


@njit(callee=True, **_JIT)
def force_cost_weight(step, t):
    """The weight of knot t's running-cost gradient in its forces (dl/dlam) in DDP's
    second-order terms, beside the co-state of its step: 1 / dt (the cost is weighted by dt,
    the step's terms are dt times the co-state's), 1 at an impact (neither is)."""
    return 1.0 if step.contacts.kind[t] == IMPACT else 1.0 / step.dt


@njit(callee=True, **_JIT)
def kept_workspace(kkt, t, nj, n, nc, S0, oR, op):
    """The :data:`~dynamics.kernels.contact.ContactWork` of knot t whose KKT factors and
    IDSVA arrays are views of those the :data:`~.records.KKTFactors` ``kkt`` keeps at t, with
    the forward kinematics S0, oR, op: the derivative call writes into them and DDP's
    contracted sweep reads them, without a copy (M, J, Lambda, gamma, b are its own)."""
    return ContactWork(np.empty((n, n)), kkt.LM[t], np.empty((nc, n)),
                       kkt.Y[t, :n * nc].reshape((n, nc)), np.empty((nc, nc)),
                       kkt.LL[t, :nc * nc].reshape((nc, nc)), np.empty(nc), np.empty(n), S0, oR,
                       op, kkt.IC[t], kkt.BC[t], kkt.FC[t], kkt.Psid[t], kkt.Psidd[t], kkt.Sd[t],
                       kkt.dof_forces[t])


@njit(callee=True, **_JIT)
def _keep_kinematics(kkt, t, work):
    """Keep knot t's forward kinematics (the caller's arrays in ``work``) in ``kkt``."""
    copy_into(kkt.S0[t], work.S0)
    copy_into(kkt.oR[t], work.oR)
    copy_into(kkt.op[t], work.op)


@njit(**_JIT)
def contact_knot_derivatives(model, step, knots, derivatives, second_order, t, a, da_dtau, S0,
                             oR, op):
    """The dynamics derivatives of knot t with contacts or an impact (the records of
    :func:`~.evaluation.knot_derivatives`): a, da_dq[t], da_dv[t], da_dtau and the forces at t
    (for an impact v+ in a, dv+/dq, dv+/dv in da_dq[t], da_dv[t]), the forward kinematics into
    S0, oR, op, and the KKT factors with them into ``second_order.kkt`` at t if it keeps any
    (:func:`kept_workspace`); returns the status of the KKT solve."""
    m = unpack(model.ints, model.floats)
    contacts = step.contacts
    B = step.B
    forces = derivatives.forces
    kkt = second_order.kkt
    q, v, tau = knots.q[t], knots.v[t], knots.tau[t]
    da_dq, da_dv = derivatives.da_dq[t], derivatives.da_dv[t]
    nc = contacts.size[t]
    n = v.shape[0]
    ci, cf = knot_contact_set(contacts, t)
    kept = kkt.LM.shape[0] > 0
    if kept:  # the KKT factors and IDSVA's arrays straight into the kept ones
        work = kept_workspace(kkt, t, m.parent.shape[0], n, nc, S0, oR, op)
    else:
        work = kinematics_workspace(m.parent.shape[0], n, nc, S0, oR, op)
    lam, dlq, dlv = forces.lam[t, :nc], forces.dlam_dq[t, :nc], forces.dlam_dv[t, :nc]
    dlt, dlu = forces.dlam_dtau[t, :nc], forces.dlam_du[t, :nc]
    if contacts.kind[t] == IMPACT:
        m0 = unpack(contacts.impact_model.ints, contacts.impact_model.floats)
        status = impulse_derivatives_point(m0, ci, cf, q, v, contacts.restitution[t],
                                           contacts.damping[t], a, lam, da_dq, da_dv, dlq, dlv,
                                           work)
        dlt[:, :] = 0.0
        dlu[:, :] = 0.0
        if status == OK and kept:
            _keep_kinematics(kkt, t, work)
        return np.int64(status)
    status = constrained_derivatives_point(m, ci, cf, q, v, tau, contacts.damping[t], a, lam,
                                           da_dq, da_dv, da_dtau, dlq, dlv, dlt, work)
    if status == OK:
        for i in range(nc):
            for c in range(B.shape[1]):
                s = 0.0
                for r in range(n):
                    s += dlt[i, r] * B[r, c]
                dlu[i, c] = s
        if kept:
            _keep_kinematics(kkt, t, work)
    return np.int64(status)


@njit(**_JIT)
def contact_second_order(model, step, d, so, t, mu, Lq, Lv, Lqv, LtB):
    """DDP's second-order dynamics terms at knot t with contacts or an impact, contracted with
    mu over the acceleration (v+ at an impact) and with the running cost's gradient in the
    forces over them: Lq, Lv, Lqv and LtB as in :func:`~.passes._add_second_order_terms` (Lv and
    LtB zero at an impact).  The knot's KKT factors, forward kinematics and IDSVA's forward
    pass are those the derivative call kept in ``so.kkt`` (:func:`kept_workspace`), or formed again
    if it kept none.  Returns the status of the knot's KKT solve (the terms are zero if it
    failed)."""
    contacts = step.contacts
    impact = contacts.kind[t] == IMPACT
    m = unpack(model.ints, model.floats)
    if impact:  # the model without gravity
        m = unpack(contacts.impact_model.ints, contacts.impact_model.floats)
    n = mu.shape[0]
    nc = contacts.size[t]
    ci, cf = knot_contact_set(contacts, t)
    F = d.forces
    kkt = so.kkt
    if kkt.LM.shape[0] > 0:  # kept by the derivative call
        if F.status[t] != OK:
            return np.int64(F.status[t])
        work = kept_workspace(kkt, t, m.parent.shape[0], n, nc, kkt.S0[t], kkt.oR[t], kkt.op[t])
    else:
        work = contact_workspace(m.parent.shape[0], n, nc)
        status = second_order_state(m, ci, cf, so.q[t], so.v[t], so.a[t], contacts.damping[t],
                                    impact, work)
        if status != OK:
            return np.int64(status)
    mu_l = F.dl_dlam[t, :nc] * force_cost_weight(step, t)
    if impact:
        impulse_so_terms(m, ci, cf, so.q[t], so.v[t], contacts.restitution[t], mu, mu_l, so.a[t],
                         F.lam[t, :nc], d.da_dq[t], d.da_dv[t], F.dlam_dq[t, :nc],
                         F.dlam_dv[t, :nc], Lq, Lqv, work)
        return np.int64(OK)
    Lt = np.zeros((n, n))
    so_contracted_terms(m, ci, cf, so.q[t], so.v[t], mu, mu_l, so.a[t], F.lam[t, :nc],
                        d.da_dq[t], d.da_dv[t], so.da_dtau[t], F.dlam_dq[t, :nc],
                        F.dlam_dv[t, :nc], F.dlam_dtau[t, :nc], Lq, Lv, Lqv, Lt, work)
    gemm_tn(Lt, step.B, LtB, 1.0, 0.0)
    return np.int64(OK)


# ------------------------------------------------------------------------------------ linking
def link(which, model, step, derivatives=None, second_order=None, knots=None):
    """Link the contact kernels ``which`` (slots of :mod:`.records`: LINKED_STEP,
    LINKED_DERIVATIVES, LINKED_SECOND_ORDER) for the records of a problem (``model``, ``step``
    and, for the last two, the ``derivatives`` and ``second_order`` records of its derivative
    call, and its ``knots`` for LINKED_DERIVATIVES): compiled on a machine's first run, else
    loaded from the cache."""
    i64 = types.int64
    if which == LINKED_STEP:
        kernel = contact_step
        argtypes = (*argument_types(model, step), i64,
                    *array_types(1, 1, 1, 1, 1, 2, 3, 2, 1, 1, 1))
    elif which == LINKED_DERIVATIVES:
        kernel = contact_knot_derivatives
        argtypes = (*argument_types(model, step, knots, derivatives, second_order), i64,
                    *array_types(1, 2, 2, 3, 2))
    elif which == LINKED_SECOND_ORDER:
        kernel = contact_second_order
        argtypes = (*argument_types(model, step, derivatives, second_order), i64,
                    *array_types(1, 2, 2, 2, 2))
    else:
        raise ValueError(f"which: expected LINKED_STEP, LINKED_DERIVATIVES or "
                         f"LINKED_SECOND_ORDER; got {which!r}")
    if not is_cached(kernel):  # measured: about 1.5 min for the three (cold, 2 cores)
        compile_notice(kernel, "the kernels of the knots with contacts", 90)
    _link(which, kernel, argtypes)
