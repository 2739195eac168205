"""Kernels of the solver's compiled calls that only some solves reach, besides the contact knots'
(:mod:`.contact_knots`): the derivative chunk and the backward pass call them through the table
of linked kernels (:func:`~dynamics.kernels.layout.call_linked`, in the slots of
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
records of the call it serves and returns an int64 status (0).
"""

import numpy as np
from numba import njit
from numba.core import types

from dynamics.kernels import compile_notice
from dynamics.kernels.dense import gemm_tn
from dynamics.kernels.forward_so import fdsva_so_lam_terms, fdsva_so_point
from dynamics.kernels.layout import argument_types, array_types, unpack
from dynamics.kernels.layout import link as _link
from dynamics.kernels.lie_group import integrate_expansion_point

from .records import LINKED_FREE_SECOND_ORDER, LINKED_LIE_EXPANSION, LINKED_TENSORS

_JIT = dict(cache=True, error_model="numpy")


@njit(**_JIT)
def knot_tensors(model, knots, derivatives, second_order, t, a, da_dtau):
    """FDSVA-SO at free knot t (the records of :func:`~.evaluation.knot_derivatives`): the
    acceleration into a, da_dq[t], da_dv[t], da_dtau (= M^-1) and the four tensors of
    ``second_order.tensors`` at t, by its ``inner`` / ``outer`` methods."""
    m = unpack(model.ints, model.floats)
    d2q, d2v, d2qv, d2t = second_order.tensors
    fdsva_so_point(m, knots.q[t], knots.v[t], knots.tau[t], second_order.inner,
                   second_order.outer, a, derivatives.da_dq[t], derivatives.da_dv[t], da_dtau,
                   d2q[t], d2v[t], d2qv[t], d2t[t])
    return np.int64(0)


@njit(**_JIT)
def knot_second_order(model, d, so, t, mu, Lq, Lv, Lqv, LtB):
    """The FD-SO terms of free knot t contracted with mu (the records of
    :func:`~.passes._add_second_order_terms`): Lq, Lv, Lqv added, LtB = Lt^T B written, from
    the knot's q, v, acceleration and da_dtau = M^-1 (``so``) and the first-order da_dq, da_dv
    of the derivative phase.  Lt = -M^-1 G, so Lt^T B = -G^T (M^-1 B)."""
    m = unpack(model.ints, model.floats)
    n = mu.shape[0]
    G = np.empty((n, n))
    fdsva_so_lam_terms(m, so.q[t], so.v[t], so.a[t], d.da_dq[t], d.da_dv[t], so.da_dtau[t], mu,
                       Lq, Lv, Lqv, G)
    gemm_tn(G, d.da_du[t], LtB, -1.0, 0.0)
    return np.int64(0)


@njit(**_JIT)
def knot_lie_expansion(model, derivatives, second_order, t, w, hessian):
    """The expansion of (+) of knot t's step displacement w: Jq[t], Jw[t] and, with
    ``hessian``, the Hessians of its Lie-group blocks into ``second_order.lie_H[t]``
    (:func:`~dynamics.kernels.lie_group.integrate_expansion_point`)."""
    m = unpack(model.ints, model.floats)
    integrate_expansion_point(m, w, derivatives.Jq[t], derivatives.Jw[t], second_order.lie_H[t],
                              hessian)
    return np.int64(0)


def link(which, model, knots=None, derivatives=None, second_order=None):
    """Link the kernel ``which`` (LINKED_TENSORS, LINKED_FREE_SECOND_ORDER or
    LINKED_LIE_EXPANSION of :mod:`.records`) for the records of a problem: its ``model``, and
    the ``knots`` (for LINKED_TENSORS), ``derivatives`` and ``second_order`` records of its
    derivative call; compiled on a machine's first run, else loaded from the cache."""
    i64 = types.int64
    if which == LINKED_TENSORS:
        kernel = knot_tensors
        argtypes = (*argument_types(model, knots, derivatives, second_order), i64,
                    *array_types(1, 2))
    elif which == LINKED_FREE_SECOND_ORDER:
        kernel = knot_second_order
        argtypes = (*argument_types(model, derivatives, second_order), i64,
                    *array_types(1, 2, 2, 2, 2))
    elif which == LINKED_LIE_EXPANSION:
        kernel = knot_lie_expansion
        argtypes = (*argument_types(model, derivatives, second_order), i64, *array_types(1),
                    types.boolean)
    else:
        raise ValueError(f"which: expected LINKED_TENSORS, LINKED_FREE_SECOND_ORDER or "
                         f"LINKED_LIE_EXPANSION; got {which!r}")
    # the solver's one line (once per process: its warm-up printed it when that compiles these)
    compile_notice(kernel, "the solver's kernels", 1)
    _link(which, kernel, argtypes)
