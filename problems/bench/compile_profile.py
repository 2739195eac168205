"""Where a first run's compile time goes (``soddp bench compile``): one soddp command (default the
README's main command, ``soddp compare ur3``) on an empty numba cache, in one fresh process
(the compile aside off, so that every kernel compiles here), with numba's compile events timed
per function -> ``results/compile_profile.{csv,md}``.

For each compiled function (a ``@njit`` dispatcher, or a parallel function numba makes of a
``prange`` loop, counted in the function that holds the loop):

* ``own``: its compile time minus the compiles it started of the functions it calls;
* ``llvm``: the part of ``own`` spent holding numba's LLVM lock, which is LLVM optimizing the
  function's module and emitting its machine code.  numba links the already optimized code of
  every callee into that module and optimizes it again, so a function's LLVM time grows with
  everything below it;
* ``front end``: ``own - llvm``, numba's typing and lowering; a callee marked
  ``inline="always"`` is typed again inside each caller, at each call site;
* ``inclusive``: its compile time with its callees'.

It tells which kernels a change should target and checks that a change did what it meant to;
it takes as long as the command's cold run (minutes).
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from numba.core import event

from ..output import write_table

COLUMNS = [("function", "function"), ("module", "module"), ("own_s", "own [s]"),
           ("llvm_s", "LLVM [s]"), ("front_end_s", "front end [s]"),
           ("inclusive_s", "inclusive [s]"), ("compiles", "compiles")]


class CompileTimes:
    """numba compile-event listeners: own, LLVM and inclusive seconds per function (inside
    ``with times.listening():``)."""

    def __init__(self):
        self.own, self.llvm, self.inclusive, self.count = Counter(), Counter(), Counter(), Counter()
        self.llvm_total = 0.0
        self._stack = []  # [name, start, seconds of the compiles it started]
        self._llvm_start = 0.0

    @contextmanager
    def listening(self):
        """Record the compiles inside this block (numba's ``install_listener``, both kinds)."""
        times = self

        class Compiles(event.Listener):
            def on_start(self, ev):
                f = ev.data["dispatcher"].py_func
                times._stack.append([f"{f.__module__}:{f.__qualname__}", time.perf_counter(),
                                     0.0])

            def on_end(self, ev):
                name, t0, inner = times._stack.pop()
                dt = time.perf_counter() - t0
                times.inclusive[name] += dt
                times.own[name] += dt - inner
                times.count[name] += 1
                if times._stack:
                    times._stack[-1][2] += dt

        class Llvm(event.Listener):
            def on_start(self, ev):
                times._llvm_start = time.perf_counter()

            def on_end(self, ev):
                dt = time.perf_counter() - times._llvm_start
                times.llvm_total += dt
                if times._stack:
                    times.llvm[times._stack[-1][0]] += dt

        with event.install_listener("numba:compile", Compiles()), \
                event.install_listener("numba:llvm_lock", Llvm()):
            yield

    def record(self, wall):
        return dict(wall_s=wall, llvm_s=self.llvm_total,
                    functions=[dict(name=n, own_s=self.own[n], llvm_s=self.llvm[n],
                                    inclusive_s=self.inclusive[n], compiles=self.count[n])
                               for n in self.own])


def _child(out, args):
    """``python -m problems.bench.compile_profile OUT ARGS...``: run ``soddp ARGS`` here with
    the listeners installed and write their times to the JSON file OUT."""
    times = CompileTimes()
    t0 = time.perf_counter()
    sys.argv = ["soddp", *args]
    with times.listening():
        try:
            runpy.run_module("problems.cli", run_name="__main__", alter_sys=True)
        finally:
            Path(out).write_text(json.dumps(times.record(time.perf_counter() - t0)))


def run_compile_profile(args=("compare", "ur3"), top=40, log=print):
    """Profile ``soddp <args>`` cold (module docstring); the ``top`` functions by own time."""
    args = list(args)
    with tempfile.TemporaryDirectory() as tmp:
        cache, work, out = Path(tmp) / "cache", Path(tmp) / "work", Path(tmp) / "times.json"
        cache.mkdir()
        work.mkdir()
        env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), SODDP_COMPILE_ASIDE="0")
        log(f"compile profile: soddp {' '.join(args)} on an empty numba cache, one process "
            f"(minutes) ...")
        r = subprocess.run([sys.executable, "-m", "problems.bench.compile_profile", str(out),
                            *args], cwd=work, env=env, capture_output=True, text=True)
        if r.returncode != 0 or not out.exists():
            raise RuntimeError(f"soddp {' '.join(args)} failed (exit code {r.returncode}):\n"
                               f"{r.stderr[-2000:]}")
        rec = json.loads(out.read_text())
    funcs = sorted(rec["functions"], key=lambda f: -f["own_s"])
    own = sum(f["own_s"] for f in funcs)
    rows = []
    for f in funcs[:top]:
        module, name = f["name"].split(":", 1)
        rows.append(dict(function=name, module=module, own_s=f["own_s"], llvm_s=f["llvm_s"],
                         front_end_s=f["own_s"] - f["llvm_s"], inclusive_s=f["inclusive_s"],
                         compiles=f["compiles"]))
    notes = [f"soddp {' '.join(args)}, empty NUMBA_CACHE_DIR, SODDP_COMPILE_ASIDE=0 (one "
             f"process compiles everything), {os.cpu_count()} cores",
             f"wall time {rec['wall_s']:.1f} s; compiling {own:.1f} s in {len(funcs)} functions, "
             f"of which LLVM {rec['llvm_s']:.1f} s and numba's front end "
             f"{own - rec['llvm_s']:.1f} s; the {len(rows)} functions with the most own time "
             f"are listed",
             "own: a function's compile minus the compiles it started; LLVM: the part under "
             "numba's LLVM lock (its module optimized with every callee linked in, and its "
             "machine code); front end: own - LLVM (typing, lowering, inline='always' callees "
             "typed again at each call site); inclusive: with its callees"]
    write_table(rows, "compile_profile", f"Where a cold compile goes: soddp {' '.join(args)}",
                COLUMNS, notes, log)
    return rows


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2:])
