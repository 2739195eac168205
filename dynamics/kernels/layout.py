"""The model as two flat buffers, so that a compiled kernel call unboxes two arrays instead of a
tuple of fifteen (about 3 us per call saved).  :func:`pack` (Python) and :func:`unpack` (numba) are
inverses; ``unpack`` returns the :class:`KernelModel` namedtuple of views used by every kernel.

Borrowed arrays.  Numba counts references to every array: each view it creates, each array bound
to a variable of an inlined function or passed to a call takes an atomic increment and, later, an
atomic decrement of the array's shared counter (``lock incq`` / ``lock decq``).  Its pruning pass
removes only the pairs it can match, and in the kernels' branchy per-knot loops most survive: on
UR3's costs they took 73% of the time (measured with ``perf``), the model's 16 views among them.
:func:`borrowed` gives a view of an array without a counter (a null meminfo): numba then skips it
(the runtime tests the pointer and returns).  It is safe wherever the owner outlives the view:

* an argument, inside the function it was passed to (the caller holds it for the whole call);
* the model of :func:`unpack`: its buffers are arguments of the kernel, held by the Python caller;
* a work array, while the variable that owns it is still used (``keep_alive`` at the end).

A borrowed array must never be returned to Python (boxed, it would not keep its owner alive):
``unpack`` is called only inside compiled code.

Inside compiled code the same holds per call: a call to a compiled function passes every array
argument as a struct of seven words and takes a reference to each, and the model alone is 16
arrays.  The sweeps called once per knot (kinematics, ABA and IDSVA sweeps, the cost terms) and
the small helpers they call are therefore inlined (UR3 per knot, against calls: FDSVA
5.8 -> 5.3 us, ABA 2.4 -> 2.0 us, costs with Gauss-Newton derivatives 3.1 -> 2.8 us; bit-identical
results).  numba has two inliners:

* ``inline="always"``: numba's own, on its IR; the caller is typed again with each body, at a
  compile cost that grows with the square of the sites in one function;
* ``forceinline=True``: the callee compiled once, and inlined by LLVM (``alwaysinline``).

The kinematics (``kinematics.py``), the ABA sweeps (``forward.py``), the dense and step helpers
(``dense.py``, ``step.py``) and four second-order and Lie-group helpers keep numba's: with LLVM's
the gaits' forward pass took 10-25% longer and ATLAS's DDP derivatives 30% longer.  So do the
helpers of ``geometric.py`` and ``higher_order.py`` (not measured).  The rest
(spatial algebra, IDSVA sweeps, frames, contacts, cost terms, the backward pass's steps) use
LLVM's: a cold ``soddp compare ur3`` in one process compiles in 347 s instead of 418 s (back to
back), and runs as fast (``docs/design.md``).  The larger drivers that call them are not
inlined: inlining those gained 4-7% more and cost compile time.

ints   = [nj, nv, parent, jtype, iq, nqj, iv, nvj (nj each), dof_parent (nv)]
floats = [axis (nj*3), place_R (nj*9), place_p (nj*3), mass (nj), com (nj*3), Icom (nj*9),
          S_local (nv*6), gravity (6), pitch (nj)]
"""

from collections import namedtuple

import numpy as np
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from .threads import available

KernelModel = namedtuple(
    "KernelModel",
    "parent jtype axis iq nqj iv nvj place_R place_p mass com Icom S_local dof_parent gravity "
    "pitch",
)


def pack(m: KernelModel):
    nj, nv = m.parent.shape[0], m.S_local.shape[0]
    ints = np.concatenate([[nj, nv], m.parent, m.jtype, m.iq, m.nqj, m.iv, m.nvj,
                           m.dof_parent]).astype(np.int64)
    floats = np.concatenate([np.ravel(x) for x in (m.axis, m.place_R, m.place_p, m.mass, m.com,
                                                   m.Icom, m.S_local, m.gravity, m.pitch)]).astype(float)
    return np.ascontiguousarray(ints), np.ascontiguousarray(floats)


def _borrow(context, builder, aryty, value):
    src = context.make_array(aryty)(context, builder, value)
    view = context.make_array(aryty)(context, builder)
    context.populate_array(view, data=src.data, shape=src.shape, strides=src.strides,
                           itemsize=src.itemsize, meminfo=None)
    return view._getvalue()


@intrinsic
def borrowed(typingctx, arrays):
    """``arrays`` (an array, or a tuple of arrays) as borrowed views: the same data, shape and
    strides without a reference count (module docstring: valid while the owners live; never
    return them to Python).  Typical use, work arrays and arguments of a per-chunk function::

        work = (np.empty((nj, 3, 3)), np.empty(6))  # the owners
        oR, r = borrowed(work)
        Q, out = borrowed((Q, out))                 # arguments: the caller holds them
        ...                                         # the knot loop
        keep_alive(work)
    """
    if isinstance(arrays, types.Array):
        def codegen(context, builder, signature, args):
            return _borrow(context, builder, signature.args[0], args[0])

        return arrays(arrays), codegen
    if isinstance(arrays, types.BaseTuple) and all(isinstance(a, types.Array) for a in arrays):
        def codegen_tuple(context, builder, signature, args):
            tupty = signature.args[0]
            views = [_borrow(context, builder, aryty, builder.extract_value(args[0], i))
                     for i, aryty in enumerate(tupty)]
            return context.make_tuple(builder, signature.return_type, views)

        return arrays(arrays), codegen_tuple
    return None


@intrinsic
def keep_alive(typingctx, owners):
    """A use of ``owners`` (an array or a tuple of arrays) that does nothing: numba frees an array
    after the last use of its variable, so this keeps the owners of borrowed work arrays alive up
    to this point."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(owners), codegen


@njit(cache=True, error_model="numpy")
def unpack(ints, floats):
    """The :class:`KernelModel` of the buffers of :func:`pack`, as borrowed views (module
    docstring): a kernel's model costs no reference counting.  Compiled code only."""
    ints = borrowed(ints)
    floats = borrowed(floats)
    nj, nv = ints[0], ints[1]
    o = 2
    parent = ints[o:o + nj]
    jtype = ints[o + nj:o + 2 * nj]
    iq = ints[o + 2 * nj:o + 3 * nj]
    nqj = ints[o + 3 * nj:o + 4 * nj]
    iv = ints[o + 4 * nj:o + 5 * nj]
    nvj = ints[o + 5 * nj:o + 6 * nj]
    dof_parent = ints[o + 6 * nj:o + 6 * nj + nv]
    f = 0
    axis = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    place_R = floats[f:f + 9 * nj].reshape((nj, 3, 3))
    f += 9 * nj
    place_p = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    mass = floats[f:f + nj]
    f += nj
    com = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    Icom = floats[f:f + 9 * nj].reshape((nj, 3, 3))
    f += 9 * nj
    S_local = floats[f:f + 6 * nv].reshape((nv, 6))
    f += 6 * nv
    gravity = floats[f:f + 6]
    f += 6
    pitch = floats[f:f + nj]
    return KernelModel(parent, jtype, axis, iq, nqj, iv, nvj, place_R, place_p, mass, com, Icom,
                       S_local, dof_parent, gravity, pitch)


# ---------------------------------------------------------------------------------- knot chunks
# A batched kernel runs one chunk of consecutive knots per thread: the model is unpacked and the
# work arrays are allocated once per chunk, not once per knot (on small robots the per-knot
# allocations and views cost as much as the arithmetic).  The caller passes the number of chunks
# (a compiled function that asked numba for its thread count could not be cached).  With one
# chunk a batched kernel runs it on the calling thread, outside its ``prange`` loop:
#
#     if nchunks == 1:
#         _chunk(..., np.int64(0), nchunks)
#     else:
#         for c in prange(nchunks):
#             _chunk(..., np.int64(c), nchunks)
#
# so that a single point costs no parallel launch (about 2 us; and when another process holds a
# core, the launch can stall for milliseconds at numba's OpenMP barrier).  Both calls pass the
# same types: numba compiles a jitted callee once per distinct argument types, and a literal
# (``0, 1``) is a type of its own, as is prange's unsigned index, so that ``_chunk(..., 0, 1)``
# beside ``_chunk(..., c, nchunks)`` compiled every chunk three times (with its whole call tree,
# which numba optimizes again in each caller).

def prange_only() -> dict:
    """numba's ``parallel=`` option of the batched kernels: only their explicit ``prange`` loop
    over chunks runs in parallel.  With ``parallel=True`` numba also turns array expressions
    (``np.zeros``, ``np.ascontiguousarray`` of a slice, ...) into parallel loops of their own:
    each a parallel launch on every call (taken even on the one-chunk path, and stalling for
    milliseconds when another process holds a core) and each compiled as a parallel function
    of its own.  (A new dict each time: numba empties the one it is given.)"""
    return dict(comprehension=False, reduction=False, inplace_binop=False, setitem=False,
                numpy=False, stencil=False, fusion=False, prange=True)


#: batches of up to this many knots run as one chunk, on the calling thread
SERIAL_MAX_T = 1


def num_chunks(T):
    """The number of chunks of a batch of T knots: one per thread the kernels may use now
    (:func:`~dynamics.kernels.threads.available`: fewer when other processes hold cores; at most
    T), and one for batches of up to ``SERIAL_MAX_T`` knots, which then run on the calling
    thread."""
    if T <= SERIAL_MAX_T:
        return 1
    return max(1, min(int(T), available()))


@njit(cache=True)
def chunk_range(T, chunk, nchunks):
    """The knots [t0, t1) of chunk ``chunk`` of ``nchunks`` over T knots (sizes differ by <= 1)."""
    return (chunk * T) // nchunks, ((chunk + 1) * T) // nchunks
