"""How many threads the batched kernels use: all cores when the machine is ours, fewer when
other processes keep cores busy.

Why.  The batched kernels split their knots into one chunk per thread and run the chunks in
parallel (numba's OpenMP layer).  When another process holds a core, the thread that shares it
finishes its chunk late and the others wait for it at the end of every parallel call: on this
2-core machine, with one busy process beside it, a UR3 iteration took 2.5 ms (median, 23 ms at
worst) instead of 0.89 ms, a HyQ one 8.9 ms instead of 1.6.  Run serially, the same iterations
take 1.19 and 2.0 ms under that load; but serial costs 29% on an idle machine, OpenMP's passive
wait policy 50% and numba's workqueue layer 110%, so no fixed choice holds in both cases.

So by default (``set_threads("auto")``) the number of threads follows the machine: every
``REFRESH_S`` seconds the CPU time that *other* processes used since the last look is read from
``/proc/stat`` (all CPU time, minus this process's own, whose spinning OpenMP threads must not
count), and the kernels use the cores left over (at least one).  Reading it costs about 20 us;
between refreshes :func:`available` costs a clock read.  Where ``/proc/stat`` does not exist,
auto uses every core.

``set_threads(n)`` fixes the count (1: always serial); the environment variable
``SODDP_THREADS`` (an integer or ``auto``) sets the default; ``NUMBA_NUM_THREADS`` caps both.
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager

import numba

#: seconds between two looks at the machine's load
REFRESH_S = 0.25
#: another process counts as holding a core from this fraction of a core on
BUSY_FRACTION = 0.5

_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_fixed: int | None = None       # set_threads(n); None: auto
_state = [0.0, None, None, 0]   # next refresh (monotonic s), last sample, its time, cores now


def _max_threads() -> int:
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


def set_threads(n="auto") -> None:
    """Use ``n`` threads in the batched kernels (a positive integer, at most
    ``NUMBA_NUM_THREADS``), or follow the machine's load (``"auto"``, the default)."""
    global _fixed
    if n == "auto" or n is None:
        _fixed = None
        numba.set_num_threads(_max_threads())
        return
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _max_threads():
        raise ValueError(f"threads: expected 'auto' or an integer from 1 to {_max_threads()} "
                         f"(NUMBA_NUM_THREADS); got {n!r}")
    _fixed = n
    numba.set_num_threads(n)


def _sample():
    """(CPU seconds used by all processes, by this one), or None without /proc/stat."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    # user nice system idle iowait irq softirq steal ...: busy is all but idle and iowait
    values = [int(x) for x in fields[1:9]]
    busy = sum(values) - values[3] - values[4]
    t = os.times()
    return busy / _CLK_TCK, t.user + t.system


def available() -> int:
    """The threads the batched kernels use now (see module docstring)."""
    if _fixed is not None:
        return _fixed
    st = _state
    now = time.monotonic()
    if now < st[0]:
        return st[3]
    st[0] = now + REFRESH_S
    sample, last, last_t = _sample(), st[1], st[2]
    st[1], st[2] = sample, now
    cores = _max_threads()
    if sample is not None and last is not None and now > last_t:
        others = ((sample[0] - last[0]) - (sample[1] - last[1])) / (now - last_t)
        cores = max(1, min(cores, (os.cpu_count() or cores) - int(others + 1 - BUSY_FRACTION)))
    if cores != st[3]:
        numba.set_num_threads(cores)
    st[3] = cores
    return cores


@contextmanager
def every_thread():
    """Within: the batched kernels split a batch over every thread, even while other processes
    hold cores, when the count follows the machine (auto; a fixed count stays).  A warm-up runs
    in it, so that it compiles the parallel doors that a solve on an idle machine calls: on a
    first run the machine is busy compiling, and a door left out compiled inside the first
    timed solve."""
    global _fixed
    auto = _fixed is None
    if auto:
        _fixed = _max_threads()
        numba.set_num_threads(_fixed)
    try:
        yield
    finally:
        if auto:
            _fixed = None
            _state[0] = 0.0  # look at the machine again at the next call
            numba.set_num_threads(_state[3] or _max_threads())


_env = os.environ.get("SODDP_THREADS", "auto").strip()
if _env != "auto":
    try:
        set_threads(int(_env))
    except ValueError:
        raise ValueError(f"SODDP_THREADS: expected 'auto' or an integer from 1 to "
                         f"{_max_threads()}; got {_env!r}") from None
