"""The compile layer: how the project's numba kernels are built, called in parallel, linked,
cached and warmed up.  It knows nothing of robots or solvers; :mod:`dynamics.kernels` and
:mod:`ddp.kernels` build on it, and nothing above them names it
(``tests/test_layout.py``).  Why each piece exists, with its measurements: ``docs/compiling.md``.

The contract, for whoever writes a kernel:

* **Build** every kernel with :func:`njit` (numba's, plus a compile lock shared by processes on
  a cold cache): ``@njit(cache=True, error_model="numpy")``.  A kernel that only other kernels
  call is ``njit(callee=True, ...)``: no Python entry is built, and a call from Python raises
  TypeError (``tests/test_compile_speed.py`` checks both directions).  Per-knot sweeps and small
  helpers are inlined (``inline="always"``: numba's inliner; ``forceinline=True``: LLVM's).
* **One signature per kernel.**  Call sites pass ``np.int64(...)`` and ``np.bool_(...)``, never
  a literal, and C-contiguous arrays, never an ``'A'``-layout view
  (``tests/test_cache_guard.py``).
* **No reference counts in hot loops.**  :func:`borrowed` views of arguments and work arrays;
  :func:`carve` takes a function's scratch arrays of any shapes from one buffer of
  :func:`extent` elements; :func:`keep_alive` holds an owner up to a point; :func:`copy_into`
  replaces slice assignment.  A borrowed view never returns to Python.
* **Batches in chunks.**  A batched kernel ``chunk(*args, c, nchunks)`` works on the knots
  :func:`chunk_range` gives it; its door is ``@njit door(*args, chunks): return
  in_parallel(args, chunks)``, and Python calls :func:`run_in_chunks` (or :func:`call_door`
  for a door that returns a value) with :func:`num_chunks` (one chunk runs on the calling
  thread; the thread count follows the machine's load, :mod:`.threads`).
* **Linked kernels.**  A kernel that only some problems reach is called through a slot of a
  table of addresses (:func:`call_linked`), filled from Python by :func:`link` with the
  argument types of the values the caller passes (:func:`argument_types`): numba then does not
  compile its tree into every caller.
* **Cache.**  Each compiled package calls :func:`guard_cache` on import (stale machine code is
  dropped when any source it compiles in changed); :func:`is_cached` and
  :func:`compile_notice` tell a user before a first run compiles.
* **Two cores on a first run.**  A :class:`CompileAside` compiles named groups of kernels in a
  second process while this one compiles the others.
* **numba's internals.**  Patched only under the tested numba versions
  (:mod:`.numba_support`; ``SODDP_NUMBA_PATCHES=0`` turns the patches off).
"""

from .aside import CompileAside
from .cache import compile_notice, guard_cache, is_cached
from .dispatch import CalleeDispatcher, njit
from .doors import (
                    CHUNK_RAISED,
                    CHUNK_RAN,
                    CHUNK_STALE,
                    StaleChunk,
                    call_chunk,
                    call_door,
                    chunk_range,
                    in_parallel,
                    num_chunks,
                    run_in_chunks,
)
from .linking import LINKED_RAISED, LINKED_SLOTS, NOT_LINKED, argument_types, call_linked, link
from .threads import available, every_thread, set_threads
from .views import borrowed, carve, copy_into, extent, keep_alive

__all__ = ["CompileAside", "compile_notice", "guard_cache", "is_cached", "CalleeDispatcher",
           "njit", "CHUNK_RAISED", "CHUNK_RAN", "CHUNK_STALE", "StaleChunk", "call_chunk",
           "call_door", "chunk_range", "in_parallel", "num_chunks", "run_in_chunks",
           "LINKED_RAISED", "LINKED_SLOTS", "NOT_LINKED", "argument_types", "call_linked",
           "link", "available", "every_thread", "set_threads", "borrowed", "carve",
           "copy_into", "extent", "keep_alive"]

guard_cache(__path__[0])
