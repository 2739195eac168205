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

Scratch arrays.  Each array a compiled function allocates costs a ``malloc``, a ``free`` and the
runtime's bookkeeping; the contact kernels' chain functions allocated a dozen small ones per
contact and knot.  :func:`carve` takes arrays of any shapes from one buffer of
:func:`extent` elements, as borrowed views, so that a function's scratch is one allocation.

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
helpers of ``geometric.py`` and ``higher_order.py`` (not measured), and the backward pass's steps
(``ddp/kernels/passes.py``, nine sites in one function): on LLVM's, each step was a library of
its own, which numba optimizes and emits once alone and again inside the pass.  The rest
(spatial algebra, IDSVA sweeps, frames, contacts, cost terms) use LLVM's: a cold
``soddp compare ur3`` in one process compiles in 347 s instead of 418 s (back to back), and runs
as fast (``docs/design.md``).  The larger drivers that call them are not
inlined: inlining those gained 4-7% more and cost compile time.

ints   = [nj, nv, parent, jtype, iq, nqj, iv, nvj (nj each), dof_parent (nv)]
floats = [axis (nj*3), place_R (nj*9), place_p (nj*3), mass (nj), com (nj*3), Icom (nj*9),
          S_local (nv*6), gravity (6), pitch (nj)]
"""

import ctypes
import hashlib
from collections import namedtuple

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir
from numba import prange, typeof
from numba.core import cgutils, types
from numba.core.typing.typeof import Purpose
from numba.extending import intrinsic

from .compile_lock import njit
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


def _call_address(context, builder, address, restype, argtypes, packed):
    """Call the machine code at ``address`` (an LLVM i64) with numba's calling convention on the
    values of the LLVM tuple ``packed`` (of numba types ``argtypes``), their arrays borrowed:
    (the call's status, its value)."""
    values = [_borrow_all(context, builder, t, builder.extract_value(packed, i))
              for i, t in enumerate(argtypes)]
    fnty = context.call_conv.get_function_type(restype, argtypes)
    fn = builder.inttoptr(address, fnty.as_pointer())
    return context.call_conv.call_function(builder, fn, restype, argtypes, values)


def _borrow_all(context, builder, ty, value):
    """``value`` with every array in it (at any depth of tuples) borrowed (module docstring)."""
    if isinstance(ty, types.Array):
        return _borrow(context, builder, ty, value)
    if isinstance(ty, types.BaseTuple):
        items = [_borrow_all(context, builder, t, builder.extract_value(value, i))
                 for i, t in enumerate(ty)]
        return context.make_tuple(builder, ty, items)
    return value


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


@njit(callee=True, cache=True, error_model="numpy")
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
# work arrays are allocated once per chunk, not once per knot (on small robots the per-knot
# allocations and views cost as much as the arithmetic).  The caller passes the number of chunks
# (a compiled function that asked numba for its thread count could not be cached).  With one
# chunk the Python caller runs it on the calling thread (a single point costs no parallel launch:
# about 2 us, and when another process holds a core the launch can stall for milliseconds at
# numba's OpenMP barrier).  For more, it calls the kernel's door, a compiled function that runs
# the chunks in parallel through :func:`in_parallel`, which calls each chunk by its address
# (:func:`run_in_chunks`): no door compiles its chunk's tree again, and none is a parallel
# function of its own.

def prange_only() -> dict:
    """numba's ``parallel=`` option of :func:`parallel_chunks`: only its explicit ``prange``
    loop over chunks runs in parallel.  With ``parallel=True`` numba also turns array expressions
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


class StaleChunk(Exception):
    """A door was given the address of its chunk compiled for other argument types than its
    own (:func:`run_in_chunks` then looks the chunk up again once)."""


#: what :func:`call_chunk` returns: the chunk ran; the address was for other argument types (not
#: called); the chunk raised (numba's parallel region cannot carry the exception out)
CHUNK_RAN, CHUNK_STALE, CHUNK_RAISED = 0, 1, 2


def _types_key(argtypes):
    """A key of numba types, the same in every process (the door that checks it is cached)."""
    digest = hashlib.blake2b(str(tuple(argtypes)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


_CHUNKS = {}  # chunk kernel -> (address, key, library) for the argument types last used


def _machine_code(kernel, argtypes):
    """(address, library) of ``kernel``'s machine code for the numba types ``argtypes``, compiled
    or loaded from the cache (the library holds the code: keep it)."""
    kernel.compile(argtypes)
    cres = kernel.overloads[argtypes]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name), cres.library


def _chunk_entry(kernel, args):
    """The machine code of ``kernel(*args, chunk, nchunks)`` for the types of ``args`` (then two
    int64), compiled or loaded from the cache: (address, key of the types, its library, which
    holds the code)."""
    argtypes = tuple(typeof(a, Purpose.argument) for a in args) + (types.int64, types.int64)
    address, library = _machine_code(kernel, argtypes)
    return address, _types_key(argtypes), library


@intrinsic
def call_chunk(typingctx, chunks, args):
    """``chunk_kernel(*args)`` through ``chunks`` = (address, key, nchunks) of
    :func:`run_in_chunks`, on this thread (a door's one chunk), returning :data:`CHUNK_RAN`,
    :data:`CHUNK_STALE` or :data:`CHUNK_RAISED`.  The call goes to the chunk's machine code with
    numba's calling convention, its arrays borrowed (the door holds them for the call; with two
    threads, the atomic reference counts of the same arrays cost UR3's derivatives about 25 us a
    call).  The address is called only if the key is that of the types of ``args`` (a hash of
    their names, which numba derives from everything that sets their machine layout)."""
    if not (isinstance(chunks, types.UniTuple) and chunks.count == 3
            and isinstance(chunks.dtype, types.Integer) and isinstance(args, types.BaseTuple)):
        return None
    argtypes = tuple(args)
    key = _types_key(argtypes)

    def codegen(context, builder, signature, llargs):
        status = cgutils.alloca_once_value(
            builder, context.get_constant(types.int64, CHUNK_STALE))
        given = builder.extract_value(llargs[0], 1)
        fresh = builder.icmp_signed("==", given, context.get_constant(types.int64, key))
        with builder.if_then(fresh, likely=True):
            called, _ = _call_address(context, builder, builder.extract_value(llargs[0], 0),
                                      types.none, argtypes, llargs[1])
            builder.store(builder.select(called.is_error,
                                         context.get_constant(types.int64, CHUNK_RAISED),
                                         context.get_constant(types.int64, CHUNK_RAN)), status)
        return builder.load(status)

    return types.int64(chunks, args), codegen


def chunk_address(kernel, args, nchunks, fresh=False):
    """``chunks`` = (address, key, nchunks) of ``kernel(*args, chunk, nchunks)`` for the types
    of ``args``, the argument of a door that calls it with :func:`call_chunk`; looked up once
    per kernel, and again with ``fresh`` (after the door returned :data:`CHUNK_STALE`)."""
    entry = None if fresh else _CHUNKS.get(kernel)
    if entry is None:
        entry = _CHUNKS[kernel] = _chunk_entry(kernel, args)
    return entry[0], entry[1], nchunks


def call_door(door, kernel, args, chunk_args, nchunks):
    """``door(*args, chunks)``, ``chunks`` the address of ``kernel`` for the types of
    ``chunk_args`` (:func:`chunk_address`), looked up again once when the door returns
    :data:`CHUNK_STALE`; :class:`StaleChunk` when it stays stale.  Returns the door's value: its
    status, or a tuple whose last item is its status."""
    for fresh in (False, True):
        result = door(*args, chunk_address(kernel, chunk_args, nchunks, fresh=fresh))
        if (result[-1] if isinstance(result, tuple) else result) != CHUNK_STALE:
            return result
    raise StaleChunk(f"{door.__name__} passes {kernel.__name__} other argument types than it "
                     "was called with")


def run_in_chunks(door, kernel, args, nchunks):
    """``kernel(*args, c, nchunks)`` for every chunk c of ``nchunks``: on the calling thread for
    one chunk, else in parallel through ``door(*args, chunks)``, ``chunks`` = (address, key,
    nchunks) of the kernel's machine code.  A door takes the chunk's arguments (arrays, scalars,
    records) and passes them on to :func:`in_parallel` (one door per kernel: numba's cache keeps
    one signature per function, see ``tests/test_cache_guard.py``)::

        @njit(cache=True, error_model="numpy")
        def rnea_batch(ints, floats, Q, V, A, out, chunks):
            return in_parallel((ints, floats, Q, V, A, out), chunks)

    Why an address: numba links a callee's whole call tree into the module of each caller and
    optimizes it and emits its machine code again there.  A door that called its chunk by name
    in a ``prange`` loop compiled the chunk twice more (in the door and in its loop); the solver's
    derivative door alone took 50 s of LLVM on a cold compile (``soddp bench compile``);
    through an address, 7 s.  The address travels as integers (a tuple numba's dispatcher types
    in C), not as an object of a type of its own: that made every call of the solver's
    derivative door about 22 us slower.

    The address is looked up once per kernel (typing the records costs about 0.8 ms), and again
    when the door finds it was made for other argument types (:data:`CHUNK_STALE`).  When a
    chunk raised, the chunks run again on this thread, so that the exception and its message
    reach the caller (the kernels write their outputs, so running a chunk twice is harmless).
    The kernel returns None."""
    if nchunks == 1:
        return kernel(*args, np.int64(0), np.int64(1))
    if call_door(door, kernel, args, args, nchunks) == CHUNK_RAISED:
        for c in range(nchunks):
            kernel(*args, np.int64(c), np.int64(nchunks))
        raise RuntimeError(f"{kernel.__name__} raised in a parallel chunk, not again on this "
                           "thread")


_I64 = ir.IntType(64)
_THUNK_TYPE = ir.FunctionType(_I64, [_I64] * 4)  # (arguments, chunk address, c, nchunks)


def _thunk(context, module, argtypes, name):
    """The LLVM function ``name(block, address, c, nchunks)`` of ``module``: the chunk at
    ``address`` called on the arguments that :func:`packed_arguments` stored at ``block`` (of
    numba types ``argtypes``), then c and nchunks; :data:`CHUNK_RAISED` or :data:`CHUNK_RAN`."""
    fn = ir.Function(module, _THUNK_TYPE, name)
    fn.linkage = "internal"
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    block, address, c, nchunks = fn.args
    stored = builder.load(builder.inttoptr(
        block, context.get_value_type(types.Tuple(argtypes)).as_pointer()))
    calltypes = tuple(argtypes) + (types.int64, types.int64)
    values = [builder.extract_value(stored, i) for i in range(len(argtypes))] + [c, nchunks]
    called, _ = _call_address(context, builder, address, types.none, calltypes,
                              context.make_tuple(builder, types.Tuple(calltypes), values))
    builder.ret(builder.select(called.is_error, _I64(CHUNK_RAISED), _I64(CHUNK_RAN)))
    return fn


@intrinsic
def packed_arguments(typingctx, args):
    """(thunk, block, key) of the chunk arguments ``args`` (a tuple): ``block`` the address of a
    copy of ``args`` in this function's stack frame, ``thunk`` the address of a function of this
    module that calls a chunk on them (:func:`_thunk`), ``key`` that of the chunk's argument
    types (``args``, then c and nchunks: :func:`chunk_address`'s)."""
    if not isinstance(args, types.BaseTuple):
        return None
    argtypes = tuple(args)
    key = _types_key(argtypes + (types.int64, types.int64))

    def codegen(context, builder, signature, llargs):
        slot = cgutils.alloca_once(builder, llargs[0].type)
        builder.store(llargs[0], slot)
        name = f"soddp_chunk_thunk_{key & 0xFFFFFFFFFFFFFFFF:x}"
        try:
            thunk = builder.module.get_global(name)
        except KeyError:
            thunk = _thunk(context, builder.module, argtypes, name)
        return context.make_tuple(builder, signature.return_type, [
            builder.ptrtoint(thunk, _I64), builder.ptrtoint(slot, _I64), _I64(key)])

    return types.UniTuple(types.int64, 3)(args), codegen


@intrinsic
def call_thunk(typingctx, thunk, block, address, chunk, nchunks):
    """``thunk(block, address, chunk, nchunks)`` (:func:`packed_arguments`)."""
    def codegen(context, builder, signature, llargs):
        fn = builder.inttoptr(llargs[0], _THUNK_TYPE.as_pointer())
        return builder.call(fn, list(llargs[1:]))

    return types.int64(types.int64, types.int64, types.int64, types.int64, types.int64), codegen


@njit(callee=True, cache=True, error_model="numpy", parallel=prange_only())
def parallel_chunks(thunk, block, address, nchunks):
    """``call_thunk(thunk, block, address, c, nchunks)`` for every chunk c, in parallel; the
    largest status.  The one parallel function of the kernels: one signature (four int64),
    compiled once for every door."""
    ran = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        ran[c] = call_thunk(thunk, block, address, c, nchunks)
    return ran.max()


@njit(cache=True, error_model="numpy", inline="always")
def in_parallel(args, chunks):
    """The parallel loop of a door of :func:`run_in_chunks` (numba inlines it into each door):
    the chunk of ``chunks`` on ``args`` (the chunk's arguments but c and nchunks) for every
    chunk, in parallel by :func:`parallel_chunks`; the largest status (:data:`CHUNK_STALE`, the
    chunk not called, when ``chunks`` is for other argument types).

    The door stores ``args`` in its stack frame and passes their address, with that of a small
    function of its own module that calls the chunk on them, to :func:`parallel_chunks`.  So no
    door is a parallel function: numba's parallel region passes each of its arrays through its
    own calling convention, and compiling that took 1.7 s for a door of 10 arrays and 6.6 s for
    one of 70 (the solver's derivative door: about 20 s of a cold first run), against 0.3 and
    1.1 s for a door that stores them."""
    thunk, block, key = packed_arguments(args)
    if chunks[1] != key:
        return CHUNK_STALE
    status = parallel_chunks(thunk, block, chunks[0], chunks[2])
    keep_alive(args)  # the arrays the block holds, borrowed, live until the chunks return
    return status


@njit(callee=True, cache=True)
def chunk_range(T, chunk, nchunks):
    """The knots [t0, t1) of chunk ``chunk`` of ``nchunks`` over T knots (sizes differ by <= 1)."""
    return (chunk * T) // nchunks, ((chunk + 1) * T) // nchunks


# --------------------------------------------------------------------------------- linked kernels
# A kernel that only some problems reach (the knots with contacts: their KKT dynamics, their
# derivatives, their second-order terms; a free knot's second-order terms, in the one mode a
# solve uses) is called through a table of addresses that Python fills when a problem needs it
# (:func:`link`), not by name.  Called by name, numba would compile its whole call tree into
# every caller, for every problem: on a cold first run of a problem without contacts, a quarter
# of the compile time (``docs/design.md``).  The table is one array of this process, which the
# compiled code finds by its symbol name (LLVM resolves it when it loads the code, compiled now
# or from the cache), so that an address never leaves the process that made it (a record
# holding one could be pickled to another process).

#: the slots of the table (one per linked kernel; :mod:`ddp.kernels.records` names the solver's)
LINKED_SLOTS = 8
#: what :func:`call_linked` returns instead of the kernel's value: nothing was linked in the slot
#: for these argument types; the kernel raised
NOT_LINKED, LINKED_RAISED = -1001, -1002
_TABLE_SYMBOL = "soddp_linked_kernels"
_TABLE = (ctypes.c_int64 * (2 * LINKED_SLOTS))()  # (address, key of the types) per slot
llvm.add_symbol(_TABLE_SYMBOL, ctypes.addressof(_TABLE))
_LINKED = {}  # slot -> (kernel, key, library) linked in this process


def argument_types(*values):
    """The numba types of ``values`` as a compiled kernel receives them (records, arrays)."""
    return tuple(typeof(v, Purpose.argument) for v in values)


def array_types(*ndims):
    """The numba types of C-contiguous float arrays of these numbers of dimensions."""
    return tuple(typeof(np.empty((0,) * k), Purpose.argument) for k in ndims)


def link(slot, kernel, argtypes):
    """Put the machine code of ``kernel`` for the numba types ``argtypes`` (compiled now, or
    loaded from the cache) in slot ``slot`` of the table that :func:`call_linked` calls through.
    Once per slot, kernel and types in a process."""
    key = _types_key(argtypes)
    held = _LINKED.get(slot)
    if held is not None and held[0] is kernel and held[1] == key:
        return
    address, library = _machine_code(kernel, tuple(argtypes))
    _LINKED[slot] = (kernel, key, library)
    _TABLE[2 * slot] = address
    _TABLE[2 * slot + 1] = key


@intrinsic
def call_linked(typingctx, slot, args):
    """The int64 that the kernel linked in slot ``slot`` (:func:`link`) returns for ``args`` (a
    tuple), its arrays borrowed as :func:`call_chunk`'s; :data:`NOT_LINKED` if the slot holds no
    kernel for the types of ``args`` (it is not called then), :data:`LINKED_RAISED` if it
    raised.  The caller must hold the arrays of ``args`` for the call."""
    if not (isinstance(slot, types.Integer) and isinstance(args, types.BaseTuple)):
        return None
    argtypes = tuple(args)
    key = _types_key(argtypes)

    def codegen(context, builder, signature, llargs):
        module = builder.module
        try:
            table = module.get_global(_TABLE_SYMBOL)
        except KeyError:
            table = ir.GlobalVariable(module, ir.ArrayType(ir.IntType(64), 2 * LINKED_SLOTS),
                                      _TABLE_SYMBOL)
            table.linkage = "external"
        i64 = ir.IntType(64)
        at = builder.mul(builder.sext(llargs[0], i64) if llargs[0].type != i64 else llargs[0],
                         i64(2))
        address = builder.load(builder.gep(table, [i64(0), at]))
        given = builder.load(builder.gep(table, [i64(0), builder.add(at, i64(1))]))
        result = cgutils.alloca_once_value(builder, i64(NOT_LINKED))
        fresh = builder.icmp_signed("==", given, i64(key))
        with builder.if_then(fresh, likely=True):
            called, value = _call_address(context, builder, address, types.int64, argtypes,
                                          llargs[1])
            builder.store(builder.select(called.is_error, i64(LINKED_RAISED), value), result)
        return builder.load(result)

    return types.int64(slot, args), codegen
