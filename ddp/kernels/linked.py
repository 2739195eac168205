"""Kernels of the solver's compiled calls that only some solves reach, besides the contact knots'
(:mod:`.contact_knots`): the derivative chunk and the backward pass call them through the table
of linked kernels (:func:`dynamics.jit.call_linked`, in the slots of
:mod:`.records`), and :func:`link` fills a slot when a solve needs it.  Called by name, numba
would compile each one's whole call tree into every caller, for every solve, and optimize it
again there.  Linked, a solve compiles what it uses, once:

* :func:`knot_tensors` (DDP's TENSORS mode, small robots): the full FD-SO tensors of a free
  knot, with its first-order derivatives, in the derivative chunk;
* :func:`knot_second_order` (CONTRACTED): the lam-contracted FD-SO terms of a free knot, in
  the backward pass;
* :func:`knot_lie_expansion` (robots with Lie-group joints): the expansion of (+) of a knot's
  step, in the derivative chunk.

So a cold first run of ``soddp compare ur3`` (contracted mode, no Lie-group joint) compiles
neither the full tensors' tree nor the expansion's (``docs/design.md``).  Each kernel takes the
model record and one knot's arrays, not the records of the call: passing their 40-odd arrays
made UR3's backward pass 11% slower and HyQ's derivatives 5%, one knot's arrays 1% and 3%
(unpacking the model takes most of that; passing it unpacked, 16 arrays, cost more).  Each
returns an int64 status (0).
"""

import numpy as np
from numba.core import types

from dynamics.jit import argument_types, compile_notice, njit
from dynamics.jit import link as _link
from dynamics.jit.linking import array_types
from dynamics.kernels.dense import gemm_tn
from dynamics.kernels.forward_so import fdsva_so_lam_terms, fdsva_so_point
from dynamics.kernels.lie_group import integrate_expansion_point
from dynamics.kernels.packed_model import unpack

from .records import LINKED_FREE_SECOND_ORDER, LINKED_LIE_EXPANSION, LINKED_TENSORS

_JIT = dict(cache=True, error_model="numpy")


@njit(**_JIT)
def knot_tensors(model, q, v, tau, inner, outer, a, da_dq, da_dv, da_dtau, d2q, d2v, d2qv, d2t):
    """FDSVA-SO at a free knot (q, v, tau), by its ``inner`` / ``outer`` methods
    (:func:`~dynamics.kernels.forward_so.fdsva_so_point`): the acceleration into a, da_dq,
    da_dv, da_dtau (= M^-1) and the four tensors."""
    fdsva_so_point(unpack(model.ints, model.floats), q, v, tau, inner, outer, a, da_dq, da_dv,
                   da_dtau, d2q, d2v, d2qv, d2t)
    return np.int64(0)


@njit(**_JIT)
def knot_second_order(model, q, v, a, da_dq, da_dv, da_dtau, da_du, mu, Lq, Lv, Lqv, LtB):
    """The FD-SO terms of a free knot contracted with mu: Lq, Lv, Lqv added, LtB = Lt^T B
    written, from the knot's q, v, acceleration a, da_dtau = M^-1 and its first-order da_dq,
    da_dv, da_du = M^-1 B.  Lt = -M^-1 G, so Lt^T B = -G^T (M^-1 B)."""
    n = mu.shape[0]
    G = np.empty((n, n))
    fdsva_so_lam_terms(unpack(model.ints, model.floats), q, v, a, da_dq, da_dv, da_dtau, mu, Lq,
                       Lv, Lqv, G)
    gemm_tn(G, da_du, LtB, -1.0, 0.0)
    return np.int64(0)


@njit(**_JIT)
def knot_lie_expansion(model, w, Jq, Jw, H, hessian):
    """The expansion of (+) of a knot's step displacement w: Jq, Jw and, with ``hessian``, the
    Hessians of its Lie-group blocks into H
    (:func:`~dynamics.kernels.lie_group.integrate_expansion_point`)."""
    integrate_expansion_point(unpack(model.ints, model.floats), w, Jq, Jw, H, hessian)
    return np.int64(0)


def link(which, model):
    """Link the kernel ``which`` (LINKED_TENSORS, LINKED_FREE_SECOND_ORDER or
    LINKED_LIE_EXPANSION of :mod:`.records`) for a problem's ``model`` record: compiled on a
    machine's first run, else loaded from the cache.  Its other arguments are one knot's
    arrays, C-contiguous (views of the records' rows)."""
    i64 = types.int64
    if which == LINKED_TENSORS:
        kernel = knot_tensors
        argtypes = (*argument_types(model), *array_types(1, 1, 1), i64, i64,
                    *array_types(1, 2, 2, 2, 3, 3, 3, 3))
    elif which == LINKED_FREE_SECOND_ORDER:
        kernel = knot_second_order
        argtypes = (*argument_types(model), *array_types(1, 1, 1, 2, 2, 2, 2, 1, 2, 2, 2, 2))
    elif which == LINKED_LIE_EXPANSION:
        kernel = knot_lie_expansion
        argtypes = (*argument_types(model), *array_types(1, 2, 2, 4), types.boolean)
    else:
        raise ValueError(f"which: expected LINKED_TENSORS, LINKED_FREE_SECOND_ORDER or "
                         f"LINKED_LIE_EXPANSION; got {which!r}")
    # the solver's one line (once per process: its warm-up printed it when that compiles these)
    compile_notice(kernel, "the solver's kernels", 60)
    _link(which, kernel, argtypes)
