"""numba's ``njit`` for every kernel, with a compile lock that processes share, and kernels
that only other kernels call.

Processes that start on a cold cache at the same time (the two pytest workers of the test
command, the workers of a Dask study, a solve and its process aside in :mod:`dynamics.jit.aside`)
would each compile the same kernel and save the same machine code in numba's cache.  A kernel
made by :func:`njit` with ``cache=True`` takes a lock file beside its cache index when numba
does not find it in the cache.  The first process to take it compiles and saves the machine
code while it holds it; another one waits for the lock, then loads what the first saved.
Waiting never costs more than compiling: the process that holds the lock is doing the same
work, with a core more for itself.  Two cold ``soddp compare ur3`` started at once, each with
its process aside, took 188 s each without the lock and 92 s with it (one alone: 75-90 s).

No two processes wait for each other.  A process takes a kernel's lock inside the compile of
its caller, so it holds the locks of one path of the call graph, and waits for the next one on
that path; two processes that each hold what the other waits for would need a call cycle, and
the kernels call no one recursively.  A compile that fails releases its lock; a process that
waited :data:`WAIT` seconds compiles anyway; a process that ends releases its locks
(``flock``); without ``fcntl`` (Windows) there is no lock.

A kernel made with ``njit(callee=True, ...)`` is called by other kernels only
(:class:`CalleeDispatcher`): numba builds no Python entry for it (its CPython and C wrappers,
which it otherwise builds, optimizes and emits for every function it compiles), and a call from
Python raises TypeError.  Most kernels are such helpers: building the wrappers took 11 s of a
cold one-process ``soddp compare ur3`` (143 s, sampled), and the command with its process aside
took 57.4 and 58.8 s without them, 60.4 and 59.4 s with them (taking turns, one hour).
``tests/test_compile_speed.py`` checks that no Python code calls a callee and that every kernel
no Python code names is one.
"""

import os
import time

import numba
from numba.core import event
from numba.core.registry import CPUDispatcher

from . import inliner  # noqa: F401 - numba's inliner, repaired on import
from .numba_support import PATCHES

try:
    import fcntl
except ImportError:  # pragma: no cover - not on POSIX: every process compiles for itself
    fcntl = None

#: the longest a process waits for another one's compile of a kernel before compiling it itself
WAIT = 900.0
_POLL = 0.05


def _lock(path: str):
    """An open descriptor of ``path`` holding its exclusive lock, or None (no lock possible, or
    still held by another process after :data:`WAIT` seconds)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError:  # read-only cache folder: numba will not save there either
        return None
    deadline = time.monotonic() + WAIT
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                return None
            time.sleep(_POLL)
        except OSError:  # a file system without locks
            os.close(fd)
            return None


class LockedCache:
    """numba's cache of one kernel (``cache``), locked from a miss to the save of what was then
    compiled; everything else is numba's."""

    def __init__(self, cache):
        self._cache = cache
        self._held = None

    def __getattr__(self, name):
        return getattr(self._cache, name)

    def load_overload(self, sig, target_context):
        cres = self._cache.load_overload(sig, target_context)
        if cres is not None or self._held is not None or fcntl is None:
            return cres
        try:
            index = self._cache._cache_file._index_path
        except AttributeError:  # another numba: compile without a lock
            return cres
        self._held = _lock(index + ".lock")
        cres = self._cache.load_overload(sig, target_context)  # saved while this one waited
        if cres is not None:
            self.release()
        return cres

    def save_overload(self, sig, cres):
        try:
            self._cache.save_overload(sig, cres)
        finally:
            self.release()

    def release(self):
        held, self._held = self._held, None
        if held is not None:
            os.close(held)  # closing the descriptor releases its lock


class _ReleaseFailedCompiles(event.Listener):
    """A compile that raised saves nothing: release its lock at once."""

    def on_start(self, ev):
        pass

    def on_end(self, ev):
        dispatcher = ev.data.get("dispatcher")
        cache = getattr(dispatcher, "_cache", None)
        if isinstance(cache, LockedCache) and tuple(ev.data["args"]) not in dispatcher.overloads:
            cache.release()


event.register("numba:compile", _ReleaseFailedCompiles())


class CalleeDispatcher(CPUDispatcher):
    """numba's dispatcher of a kernel compiled for other kernels only, without the CPython and
    C wrappers (``no_cpython_wrapper``, ``no_cfunc_wrapper``).  Its compiled versions serve the
    typing and linking of its callers (``overloads``) but are not entered in the table of
    Python calls, so that a call from Python reaches :meth:`_compile_for_args`, which raises
    TypeError: without a wrapper there is no machine code to call."""

    def add_overload(self, cres):
        self.overloads[tuple(cres.signature.args)] = cres

    def _compile_for_args(self, *args, **kws):
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        raise TypeError(f"{name} is called by compiled kernels only (njit(callee=True)); from "
                        f"Python, call {name}.py_func or a kernel that calls it")


def njit(*args, callee=False, **options):
    """``numba.njit(*args, **options)``; with ``cache=True``, the kernel's cache is a
    :class:`LockedCache`; with ``callee=True``, a :class:`CalleeDispatcher`.  Used bare
    (``@njit``) or with options (``@njit(cache=True)``)."""
    if len(args) == 1 and callable(args[0]) and not options and not callee:
        return numba.njit(args[0])
    if not PATCHES:  # plain numba (numba_support)
        if callee and args:
            raise ValueError(f"njit(callee=True): expected no signatures; got {args}")
        return numba.njit(*args, **options)

    def make(func):
        if callee:
            if args:
                raise ValueError(f"njit(callee=True): expected no signatures; got {args}")
            targetoptions = dict(options, nopython=True, boundscheck=None,
                                 no_cpython_wrapper=True, no_cfunc_wrapper=True)
            cache = targetoptions.pop("cache", False)
            dispatcher = CalleeDispatcher(py_func=func, locals={}, targetoptions=targetoptions)
            if cache:
                dispatcher.enable_caching()
        else:
            dispatcher = numba.njit(*args, **options)(func)
        if options.get("cache"):
            dispatcher._cache = LockedCache(dispatcher._cache)
        return dispatcher
    return make
