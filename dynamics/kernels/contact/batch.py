"""The batched contact kernels: chunks of knots run in parallel through their doors
(:mod:`dynamics.jit`), for the constrained dynamics, their first derivatives, their
contracted second order and full tensors, the impact map, and the contacts' Jacobians.
"""

import numpy as np

from ...jit import borrowed, chunk_range, in_parallel, keep_alive, njit
from ..packed_model import unpack
from .derivatives import constrained_derivatives_point, so_contracted_terms, unit_costate
from .impulse import impulse_derivatives_point, impulse_dynamics_point, impulse_so_terms
from .kkt import (OK, constrained_dynamics_point, contact_jacobian_drift, contact_workspace,
                  block_member, workspace_block)

_JIT = dict(cache=True, error_model="numpy")


#: the knots whose first derivatives a batched second order forms before their second-order
#: terms (module docstring, Memory)
KNOT_BLOCK = 8


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


@njit(**_JIT)
def constrained_so_chunk(ints, floats, cints, cfloats, Q, V, TAU, damping, MU, A, LAM, DAQ, DAV,
                         DAT, DLQ, DLV, DLT, LQ, LV, LQV, LT, status, chunk, nchunks):
    """The first derivatives of :func:`constrained_derivatives_chunk` and, with co-states
    MU (T, nv + nc), the contracted second derivatives LQ, LV, LQV, LT (T, 1, nv, nv); with MU of
    0 knots, the full second-derivative tensors of (a, lam) (T, nv + nc, nv, nv) in LQ ... LT.
    The knots go in blocks of :data:`KNOT_BLOCK`: first derivatives, then second-order terms."""
    m = unpack(ints, floats)
    nj, nv = ints[0], ints[1]
    nc = LAM.shape[1]
    tensors = MU.shape[0] == 0  # the full tensors of (a, lam): a unit co-state per output row
    mu_a = np.empty(nv)
    mu_l = np.empty(nc)
    t0, t1 = chunk_range(Q.shape[0], chunk, nchunks)
    G = max(1, min(KNOT_BLOCK, t1 - t0))
    own = workspace_block(G, nj, nv, nc)
    # the work arrays and the arguments (the caller holds them) borrowed: the knots' views
    # then take no reference counts (module docstring, Memory)
    block = borrowed(own)
    cints, cfloats, Q, V, TAU, MU, A, LAM = borrowed((cints, cfloats, Q, V, TAU, MU, A, LAM))
    DAQ, DAV, DAT, DLQ, DLV, DLT = borrowed((DAQ, DAV, DAT, DLQ, DLV, DLT))
    LQ, LV, LQV, LT = borrowed((LQ, LV, LQV, LT))
    for g0 in range(t0, t1, G):
        g1 = min(g0 + G, t1)
        for t in range(g0, g1):
            status[t] = constrained_derivatives_point(m, cints, cfloats, Q[t], V[t], TAU[t],
                                                      damping, A[t], LAM[t], DAQ[t], DAV[t],
                                                      DAT[t], DLQ[t], DLV[t], DLT[t],
                                                      block_member(block, t - g0))
        for t in range(g0, g1):
            if status[t] != OK:
                continue
            work = block_member(block, t - g0)
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
