"""Chunked parallel doors.

A batched kernel runs one chunk of consecutive knots per thread: the model is unpacked and the
work arrays are allocated once per chunk, not once per knot (on small robots the per-knot
allocations and views cost as much as the arithmetic).  The caller passes the number of chunks
(a compiled function that asked numba for its thread count could not be cached).  With one
chunk the Python caller runs it on the calling thread (a single point costs no parallel launch:
about 2 us, and when another process holds a core the launch can stall for milliseconds at
numba's OpenMP barrier).  For more, it calls the kernel's door, a compiled function that runs
the chunks in parallel through :func:`in_parallel`, which calls each chunk by its address
(:func:`run_in_chunks`): no door compiles its chunk's tree again, and none is a parallel
function of its own.
"""

import numpy as np
from llvmlite import ir
from numba import get_num_threads, prange, typeof
from numba.core import cgutils, types
from numba.core.typing.typeof import Purpose
from numba.extending import intrinsic

from .calls import call_address as _call_address
from .calls import machine_code as _machine_code
from .calls import types_key as _types_key
from .dispatch import njit
from .threads import available
from .views import keep_alive


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



_CHUNKS = {}  # chunk kernel -> (address, key, library) for the argument types last used



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


_THREADS = []  # numba's threading layer launched (once per process)


def call_door(door, kernel, args, chunk_args, nchunks):
    """``door(*args, chunks)``, ``chunks`` the address of ``kernel`` for the types of
    ``chunk_args`` (:func:`chunk_address`), looked up again once when the door returns
    :data:`CHUNK_STALE`; :class:`StaleChunk` when it stays stale.  Returns the door's value: its
    status, or a tuple whose last item is its status.

    numba's threading layer is launched first (``get_num_threads`` does): a door loaded from the
    cache links :func:`parallel_chunks`, and its first call in a process before any parallel
    call crashed (a 1-knot problem's ``rollout_cost``, one chunk, segmentation fault)."""
    if not _THREADS:
        _THREADS.append(get_num_threads())
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
