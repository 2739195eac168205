"""A whole trajectory evaluated in one compiled call each (the analytical backend), over the
records of :mod:`.records`:

* :func:`knot_derivatives`: what one iteration differentiates at every knot, in one parallel
  call: FDSVA (or the full FDSVA-SO tensors; at a knot with contacts the KKT contact dynamics,
  at an impact the impact map, with their forces), the expansion of (+), the step derivatives
  Fx, Fu and the built-in running costs (scaled by the knot's weight, on the dynamics' forward
  kinematics), then the terminal cost;
* :func:`rollout_cost`: a (closed-loop) rollout and then its total cost, the costs of the knots
  in parallel, on the forward kinematics that the rollout's ABA kept.

Fusing them saves a Python dispatch, a parallel launch and the output allocations per phase: on a
small robot these cost as much as the arithmetic (UR3, T = 100: about 0.3 ms of an iteration's
2 ms).
"""

import numpy as np

from dynamics.jit import (CHUNK_RAN, borrowed, call_chunk, chunk_range, copy_into, in_parallel,
                          keep_alive, njit)
from dynamics.kernels.contact import OK
from dynamics.kernels.forward import IPR_LTDL, fdsva_core, fdsva_workspace
from dynamics.kernels.kinematics import forward_kinematics
from dynamics.kernels.packed_model import unpack
from dynamics.kernels.step import assemble_impact, assemble_knot, step_displacement

from .costs import forces_of, has_frame_terms, kinematics_buffers, no_forces
from .passes import call_knot_kernel, rollout
from .records import (IMPACT, LINKED_COSTS, LINKED_DERIVATIVES, LINKED_LIE_EXPANSION,
                      LINKED_TENSORS, CostDerivatives, SecondOrderMode)

_JIT = dict(cache=True, error_model="numpy")


@njit(callee=True, **_JIT)
def _zero_rows(out, t0, t1):
    out.l[t0:t1] = 0.0
    out.lx[t0:t1] = 0.0
    out.lu[t0:t1] = 0.0
    out.lxx[t0:t1] = 0.0
    out.lxu[t0:t1] = 0.0
    out.luu[t0:t1] = 0.0


@njit(**_JIT)
def derivatives_chunk(model, step, knots, programs, exact_hessians, derivatives, second_order,
                      costs, chunk, nchunks):
    """The knots of chunk ``chunk`` of ``nchunks`` of :func:`knot_derivatives` (same
    arguments), and the terminal cost in the last chunk.  With one chunk, the whole call on the
    calling thread: the solver calls it directly then (a parallel launch costs milliseconds when
    another process holds a core), and the parallel door holds nothing but its prange loop,
    which halves the machine code that numba emits for it on a first run."""
    program, running = programs.running, costs.running
    m = unpack(model.ints, model.floats)
    contacts = step.contacts
    nj, n = model.ints[0], model.ints[1]
    dt = step.dt
    T = knots.q.shape[0]
    nu = step.B.shape[1]
    mode = second_order.mode
    tensors = mode == SecondOrderMode.TENSORS
    keep = mode == SecondOrderMode.CONTRACTED  # each knot's a and M^-1 for the contracted sweep
    hessian = mode != SecondOrderMode.NONE  # the Hessians of (+)
    forces = derivatives.forces
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    B, lie_offsets, lie_sizes = borrowed((step.B, step.lie_offsets, step.lie_sizes))
    Q, V, TAU = borrowed((knots.q, knots.v, knots.tau))
    Fx, Fu, da_dq, da_dv, da_du, Jq, Jw = borrowed((derivatives.Fx, derivatives.Fu,
                                                    derivatives.da_dq, derivatives.da_dv,
                                                    derivatives.da_du, derivatives.Jq,
                                                    derivatives.Jw))
    d2q, d2v, d2qv, d2t = borrowed(second_order.tensors)
    ACC, DA_DTAU, H = borrowed((second_order.a, second_order.da_dtau, second_order.lie_H))
    work = (np.empty(n), np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty((n, nu)))
    fdsva_work = fdsva_workspace(nj, n)
    frames = has_frame_terms(program)
    nk = T if frames else 0  # the knots' forward kinematics, kept for the costs' frame terms
    kin_own = kinematics_buffers(nk, nj, n)
    a, w, da_dtau, tmp, tu = borrowed(work)
    M, dtq, dtv, S0, IA, U6, Dinv, oR, op = borrowed(fdsva_work)
    kin = borrowed(kin_own)
    KR, Kp, KS = kin
    t0, t1 = chunk_range(T, chunk, nchunks)
    for t in range(t0, t1):
        S0t, oRt, opt = S0, oR, op
        if frames:  # the dynamics' forward kinematics, kept in kin
            S0t, oRt, opt = KS[t], KR[t], Kp[t]
        impact = contacts.kind[t] == IMPACT
        if impact or contacts.size[t] > 0:
            status = call_knot_kernel(LINKED_DERIVATIVES, (model, step, knots, derivatives,
                                                           second_order, t, a, da_dtau, S0t,
                                                           oRt, opt))
            forces.status[t] = status
            if status != OK:  # NaN derivatives: the solver reports the knot
                Fx[t, :, :] = np.nan
                Fu[t, :, :] = np.nan
                continue
            if keep:
                copy_into(ACC[t], a)
                copy_into(DA_DTAU[t], da_dtau)
            if impact:
                assemble_impact(da_dq[t], da_dv[t], Fx[t], Fu[t], da_du[t], Jq[t], Jw[t])
                continue
        elif tensors:  # the full FD-SO tensors (linked.knot_tensors)
            call_knot_kernel(LINKED_TENSORS, (model, Q[t], V[t], TAU[t], second_order.inner,
                                              second_order.outer, a, da_dq[t], da_dv[t],
                                              da_dtau, d2q[t], d2v[t], d2qv[t], d2t[t]))
            if frames:
                forward_kinematics(m, Q[t], KR[t], Kp[t], KS[t])
        else:
            M[:, :] = 0.0
            dtq[:, :] = 0.0
            dtv[:, :] = 0.0
            fdsva_core(m, Q[t], V[t], TAU[t], np.int64(IPR_LTDL), a, da_dq[t], da_dv[t], da_dtau,
                       M, dtq, dtv, S0t, IA, U6, Dinv, oRt, opt)
            if keep:
                copy_into(ACC[t], a)
                copy_into(DA_DTAU[t], da_dtau)
        if lie_offsets.shape[0] == 0:  # no Lie-group joint: (+) is an addition (UR3: 0.25 us)
            for r in range(n):
                for c in range(n):
                    Jq[t, r, c] = 1.0 if r == c else 0.0
                    Jw[t, r, c] = 1.0 if r == c else 0.0
        else:  # linked.knot_lie_expansion
            step_displacement(V[t], a, dt, w)
            call_knot_kernel(LINKED_LIE_EXPANSION, (model, w, Jq[t], Jw[t], H[t], hessian))
        assemble_knot(B, dt, da_dq[t], da_dv[t], da_dtau, Jq[t], Jw[t], lie_offsets, lie_sizes,
                      Fx[t], Fu[t], da_du[t], tmp, tu)
    _zero_rows(running, t0, t1)
    forces.dl_dlam[t0:t1] = 0.0
    call_knot_kernel(LINKED_COSTS, (model, program, Q, V, knots.u, t0, t1, np.int64(2),
                                    exact_hessians, running, kin, forces))
    keep_alive((work, fdsva_work, kin_own))
    l, lx, lu, lxx, lxu, luu = borrowed(running)
    dl_dlam = borrowed(forces.dl_dlam)
    scale = borrowed(contacts.cost_scale)
    for t in range(t0, t1):  # running costs times dt (1 at an impact, which has no controls)
        s_t = scale[t]
        impact = contacts.kind[t] == IMPACT
        l[t] *= s_t
        for i in range(lx.shape[1]):
            lx[t, i] *= s_t
            for j in range(lx.shape[1]):
                lxx[t, i, j] *= s_t
            for j in range(lu.shape[1]):
                lxu[t, i, j] = 0.0 if impact else lxu[t, i, j] * s_t
        for i in range(lu.shape[1]):
            lu[t, i] = 0.0 if impact else lu[t, i] * s_t
            for j in range(lu.shape[1]):
                luu[t, i, j] = 0.0 if impact else luu[t, i, j] * s_t
        for i in range(dl_dlam.shape[1]):
            dl_dlam[t, i] *= s_t
    if chunk == nchunks - 1:  # the terminal cost at (q_T, v_T), zero controls
        zero, one = np.int64(0), np.int64(1)
        _zero_rows(costs.terminal, zero, one)
        call_knot_kernel(LINKED_COSTS, (model, programs.terminal, knots.q_T, knots.v_T,
                                        np.zeros((1, nu)), zero, one, np.int64(2), exact_hessians,
                                        costs.terminal, kinematics_buffers(0, 0, 0),
                                        no_forces(1)))


@njit(cache=True, error_model="numpy")
def knot_derivatives(model, step, knots, programs, exact_hessians, derivatives, second_order, costs,
                     chunks):
    """The derivatives of every knot of a trajectory (``knots``: q, v (T, nq / nv), u (T, nu),
    tau = u B^T, and the terminal state q_T, v_T (1, nq / nv)), in parallel chunks of knots, each
    by :func:`derivatives_chunk` through ``chunks`` = (its address, key, nchunks >= 2)
    (:func:`dynamics.jit.run_in_chunks` calls this door and reads the status it
    returns), written into the records:

    * ``derivatives`` (:data:`~.records.StepDerivatives`): the step derivatives (FDSVA, or the
      contact dynamics or impact map of the knot's :data:`~.records.KnotContacts` with its
      forces; the Jacobians of (+) and their assembly by :mod:`dynamics.kernels.step`);
    * ``second_order``: by its mode, the full FDSVA-SO tensors (TENSORS, by the ``inner`` /
      ``outer`` methods of :func:`~dynamics.kernels.forward_so.fdsva_so_point`; free knots
      only), or each knot's acceleration (v+ at an impact) and da_dtau (CONTRACTED); with
      either, the Hessians of (+) into lie_H (T, nblocks, 6, 12, 12) (zeroed by the caller);
      at the knots with contacts, their KKT factors and kinematics into ``kkt`` if it has
      knots (:data:`~.records.KKTFactors`, for the contracted sweep);
    * ``costs.running`` (T knots): the running cost program times the knot's cost weight (dt;
      1 at an impact, whose control derivatives are zero), its gradient in the forces into
      ``derivatives.forces.dl_dlam``, and ``costs.terminal`` (one knot): the terminal program
      at (q_T, v_T), zero controls; exact or Gauss-Newton Hessians by ``exact_hessians``.

    The cost programs run on the dynamics' model."""
    return in_parallel((model, step, knots, programs, exact_hessians, derivatives, second_order,
                        costs), chunks)


@njit(**_JIT)
def cost_values_chunk(model, program, Q, V, U, l, kin, lam, chunk, nchunks):
    """The costs ``program`` of the knots of chunk ``chunk`` of ``nchunks`` (Q, V (T, nq / nv),
    U (T, nu)) into l[t0:t1], on the forward kinematics ``kin`` and the forces ``lam``."""
    T = U.shape[0]
    t0, t1 = chunk_range(T, chunk, nchunks)
    l[t0:t1] = 0.0
    e2 = np.empty((T, 0))
    e3 = np.empty((T, 0, 0))
    call_knot_kernel(LINKED_COSTS, (model, program, Q, V, U, t0, t1, np.int64(0),
                                    np.bool_(False), CostDerivatives(l, e2, e2, e3, e3, e3), kin,
                                    forces_of(lam)))


@njit(cache=True, error_model="numpy")
def rollout_cost(model, step, x0, loop, box, gaps, programs, out, chunks):
    """:func:`~ddp.kernels.passes.rollout` (same arguments, into ``out.xs``, ``out.us``,
    ``out.lam``), then the total cost ``sum_t w_t l(x_t, u_t) + l_T(x_T)`` (w_t: the knot's
    cost weight, dt or 1 at an impact) of the built-in running and terminal programs, the
    running costs of the knots (into out.l (T + 1,), the terminal one last) in ``chunks[2]``
    parallel chunks, on the forward kinematics that the rollout's dynamics kept.  Returns the
    cost (NaN when a state or control is not finite) and the largest status of
    :func:`dynamics.jit.call_chunk`.

    ``chunks`` = (address, key, nchunks) of :func:`cost_values_chunk` for the types of
    (``model``, ``programs.running``, Q, V, U (2-D C arrays), out.l, ``kin`` (the three arrays of
    :func:`~.costs.kinematics_buffers`), ``out.lam``): every cost, the terminal one too, is
    called through it, so that this door's machine code holds none of the costs' (compiled by
    name, their tree was optimized and emitted again in the door and in its prange body)."""
    xs, us_out, l, lam = out
    T = us_out.shape[0]
    n = model.ints[1]
    nj = model.ints[0]
    nq = x0.shape[0] - n
    nk = T if has_frame_terms(programs.running) else 0  # ABA's kinematics, for frame terms
    kin = kinematics_buffers(nk, nj, n)
    rollout(model, step, x0, loop, box, gaps, xs, us_out, kin, lam)
    for t in range(T + 1):
        for r in range(xs.shape[1]):
            if not np.isfinite(xs[t, r]):
                return np.nan, CHUNK_RAN
        if t < T:
            for r in range(us_out.shape[1]):
                if not np.isfinite(us_out[t, r]):
                    return np.nan, CHUNK_RAN
    Q = np.ascontiguousarray(xs[:, :nq])
    V = np.ascontiguousarray(xs[:, nq:])
    if chunks[2] == 1:
        ran = call_chunk(chunks, (model, programs.running, Q, V, us_out, l, kin, lam,
                                  np.int64(0), np.int64(1)))
    else:
        ran = in_parallel((model, programs.running, Q, V, us_out, l, kin, lam), chunks)
    lT = l[T:]
    last = call_chunk(chunks, (model, programs.terminal, np.ascontiguousarray(Q[T:]),
                               np.ascontiguousarray(V[T:]), np.zeros((1, us_out.shape[1])), lT,
                               kinematics_buffers(0, 0, 0), np.zeros((1, 0)),
                               np.int64(0), np.int64(1)))
    status = max(ran, last)
    scale = step.contacts.cost_scale
    total = 0.0
    for t in range(T):  # a plain loop: np.sum here would become a parallel reduction, whose
        total += scale[t] * l[t]  # rounding depends on the number of threads
    return total + lT[0], status
