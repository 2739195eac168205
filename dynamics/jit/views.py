"""Views and scratch arrays inside compiled code.

Borrowed arrays.  Numba counts references to every array: each view it creates, each array bound
to a variable of an inlined function or passed to a call takes an atomic increment and, later, an
atomic decrement of the array's shared counter (``lock incq`` / ``lock decq``).  Its pruning pass
removes only the pairs it can match, and in the kernels' branchy per-knot loops most survive: on
UR3's costs they took 73% of the time (measured with ``perf``), the model's 16 views among them.
:func:`borrowed` gives a view of an array without a counter (a null meminfo): numba then skips it
(the runtime tests the pointer and returns).  It is safe wherever the owner outlives the view:

* an argument, inside the function it was passed to (the caller holds it for the whole call);
* a view of a kernel's argument (the packed model of :mod:`dynamics.kernels.packed_model`);
* a work array, while the variable that owns it is still used (:func:`keep_alive` at the end).

A borrowed array must never be returned to Python (boxed, it would not keep its owner alive).

Scratch arrays.  Each array a compiled function allocates costs a ``malloc``, a ``free`` and the
runtime's bookkeeping; the contact kernels' chain functions allocated a dozen small ones per
contact and knot.  :func:`carve` takes arrays of any shapes from one buffer of
:func:`extent` elements, as borrowed views, so that a function's scratch is one allocation.

Copies.  :func:`copy_into` replaces numba's slice assignment (whose error path numba compiles
again in every process).
"""

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from .calls import borrow_all as _borrow_all
from .dispatch import njit


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
    tuple_of_arrays = (isinstance(arrays, types.BaseTuple)
                       and all(isinstance(a, types.Array) for a in arrays))
    if isinstance(arrays, types.Array) or tuple_of_arrays:
        def codegen(context, builder, signature, args):
            return _borrow_all(context, builder, signature.args[0], args[0])

        return arrays(arrays), codegen
    return None


@intrinsic
def keep_alive(typingctx, owners):
    """A use of ``owners`` (an array or a tuple of arrays) that does nothing: numba frees an array
    after the last use of its variable, so this keeps the owners of borrowed work arrays alive up
    to this point."""

    def codegen(context, builder, signature, args):
        return context.get_dummy_value()

    return types.none(owners), codegen


def _shape_tuples(shapes):
    """Whether ``shapes`` is the numba type of a tuple of shapes (tuples of integers)."""
    return isinstance(shapes, types.BaseTuple) and all(
        isinstance(s, types.BaseTuple) and len(s) > 0
        and all(isinstance(d, types.Integer) for d in s) for s in shapes)


def _sizes(builder, shapes_type, shapes):
    """The LLVM i64 dimensions of each shape of ``shapes`` and its number of elements."""
    out = []
    for i, s in enumerate(shapes_type):
        tup = builder.extract_value(shapes, i)
        dims = [builder.sext(builder.extract_value(tup, k), ir.IntType(64))
                if s[k].bitwidth < 64 else builder.extract_value(tup, k) for k in range(len(s))]
        n = ir.Constant(ir.IntType(64), 1)
        for d in dims:
            n = builder.mul(n, d)
        out.append((dims, n))
    return out


@intrinsic
def extent(typingctx, shapes):
    """The number of elements of arrays of the given shapes (a tuple of shape tuples) together:
    the size of the one buffer that :func:`carve` takes them from."""
    if not _shape_tuples(shapes):
        return None

    def codegen(context, builder, signature, args):
        total = ir.Constant(ir.IntType(64), 0)
        for _, n in _sizes(builder, signature.args[0], args[0]):
            total = builder.add(total, n)
        return total

    return types.int64(shapes), codegen


@intrinsic
def carve(typingctx, buffer, shapes):
    """Arrays of the given shapes (a tuple of shape tuples), C-contiguous, taken one after the
    other from the 1-D contiguous ``buffer`` of at least :func:`extent` (shapes) elements, and
    borrowed (module docstring).  A function's scratch arrays of any shapes are then one
    allocation::

        shapes = ((nlev, 3), (nd, nd))
        own = np.zeros(extent(shapes))   # the owner
        S, D = carve(own, shapes)
        ...
        keep_alive(own)
    """
    if not (isinstance(buffer, types.Array) and buffer.ndim == 1 and buffer.layout == "C"
            and _shape_tuples(shapes)):
        return None
    views = types.Tuple([types.Array(buffer.dtype, len(s), "C") for s in shapes])

    def codegen(context, builder, signature, args):
        buf = context.make_array(signature.args[0])(context, builder, args[0])
        itemsize = context.get_abi_sizeof(context.get_data_type(buffer.dtype))
        offset = ir.Constant(ir.IntType(64), 0)
        items = []
        for aryty, (dims, n) in zip(views, _sizes(builder, signature.args[1], args[1])):
            strides, step = [], ir.Constant(ir.IntType(64), itemsize)
            for d in reversed(dims):
                strides.insert(0, step)
                step = builder.mul(step, d)
            view = context.make_array(aryty)(context, builder)
            context.populate_array(
                view, data=builder.gep(buf.data, [offset]),
                shape=cgutils.pack_array(builder, dims),
                strides=cgutils.pack_array(builder, strides),
                itemsize=ir.Constant(ir.IntType(64), itemsize), meminfo=None)
            items.append(view._getvalue())
            offset = builder.add(offset, n)
        return context.make_tuple(builder, views, items)

    return views(buffer, shapes), codegen


#: what :func:`copy_into` raises when the two arrays differ in shape
SHAPES_DIFFER = "copy_into: the source and the destination differ in shape"


@njit(cache=True, error_model="numpy", forceinline=True)
def copy_into(dst, src):
    """``dst[...] = src`` for two arrays of the same shape (one to three dimensions, any layout).

    Every kernel copies arrays through this instead of numba's slice assignment (``a[i] = b``,
    ``a[:, :k] = b``, ``a[i] += b`` with b an array), whose error path formats both shapes into
    its message.  numba compiles that path again in each process, once per number of dimensions,
    and not into the cache: 2 s for a function of one assignment, and in all 14 of the 145 CPU
    seconds of a cold ``soddp compare ur3`` (its two processes; wall time 82 -> 75 s).  The
    message here is a constant."""
    if dst.shape != src.shape:
        raise ValueError(SHAPES_DIFFER)
    if dst.ndim == 1:
        for i in range(dst.shape[0]):
            dst[i] = src[i]
    elif dst.ndim == 2:
        for i in range(dst.shape[0]):
            for j in range(dst.shape[1]):
                dst[i, j] = src[i, j]
    else:
        for i in range(dst.shape[0]):
            for j in range(dst.shape[1]):
                for k in range(dst.shape[2]):
                    dst[i, j, k] = src[i, j, k]


# ---------------------------------------------------------------------------------- knot chunks
# A batched kernel runs one chunk of consecutive knots per thread: the model is unpacked and the
