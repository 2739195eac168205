"""Derivative benchmarks: our kernels side by side with Pinocchio (Python binding and C++).

``python -m problems.bench fo`` (or ``soddp bench fo``) writes ``results/derivatives_fo.csv`` and
``results/derivatives_fo.md``.  Every number is measured in the same run on this machine:

* ours, single call: one point through the public API (validation included);
* ours, batch: a batch of ``T`` knots through the public API, time per knot (both cores);
* Pinocchio Python: the same quantity through ``pinocchio``'s Python binding, one point;
* Pinocchio C++: ``shared/tools/pinocchio-cpp-reference`` (single thread, no Python), if built.

Timing: the mean over enough calls to fill ``min_time`` seconds, best of ``repeats`` rounds.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RESULTS = Path(os.environ.get("SODDP_RESULTS", Path(__file__).resolve().parent.parent / "results"))
ROBOTS = ("ur3", "hyq", "atlas", "talos")


def time_us(fn, min_time=0.2, repeats=3) -> float:
    """Mean microseconds per call of ``fn()``, best of ``repeats`` rounds of about ``min_time`` s."""
    fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    n = max(1, int(min_time / one))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter() - t0) / n)
    return best * 1e6


def random_states(model, T, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.array([model.random_configuration(rng) for _ in range(T)])
    V, A, TAU = rng.normal(size=(3, T, model.nv))
    return Q, V, A, TAU


def cpp_timings(model, log=print):
    from . import cpp_reference

    if model.urdf_path is None:
        return None
    t = cpp_reference.timings(model.urdf_path, bool(model.floating_base), model.name)
    if t is None:
        log(f"  (C++ reference not available for {model.name}: build it with "
            f"`soddp bench --build-cpp` or {cpp_reference.tool_dir()}/build.sh)")
    return t


def write_table(rows, stem, title, columns, notes=(), log=print):
    """Write ``results/<stem>.csv`` and ``results/<stem>.md`` (a markdown table plus notes)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[c for c, _ in columns])
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c, _ in columns})
    fmt = lambda x: ("" if x is None or x == "" else
                     (f"{x:.3g}" if isinstance(x, float) and abs(x) < 10 else
                      (f"{x:.1f}" if isinstance(x, float) else str(x))))
    lines = [f"# {title}", "", "| " + " | ".join(h for _, h in columns) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(c)) for c, _ in columns) + " |")
    lines += [""] + [f"- {n}" for n in notes]
    (RESULTS / f"{stem}.md").write_text("\n".join(lines) + "\n")
    log("\n".join(lines))
    log(f"wrote {RESULTS / (stem + '.csv')} and {RESULTS / (stem + '.md')}")


def _ratio(a, b):
    return a / b if a and b else None


# ---------------------------------------------------------------------------------- first order
def bench_first_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    import pinocchio as pin

    import dynamics as dyn
    from dynamics import robots

    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"first order: {name} (nv={model.nv})")
        pm = model.pin_model
        pd = pm.createData()
        Q, V, A, TAU = random_states(model, T)
        q, v, a, tau = Q[0], V[0], A[0], TAU[0]
        cpp = cpp_timings(model, log) or {}
        cases = [
            ("rnea", lambda: dyn.rnea(model, q, v, a), lambda: dyn.rnea(model, Q, V, A),
             lambda: pin.rnea(pm, pd, q, v, a), cpp.get("rnea_us")),
            ("aba", lambda: dyn.aba(model, q, v, tau), lambda: dyn.aba(model, Q, V, TAU),
             lambda: pin.aba(pm, pd, q, v, tau), cpp.get("aba_us")),
            ("id_derivatives (IDSVA)", lambda: dyn.id_derivatives(model, q, v, a),
             lambda: dyn.id_derivatives(model, Q, V, A),
             lambda: pin.computeRNEADerivatives(pm, pd, q, v, a), cpp.get("rnea_derivs_us")),
            ("fd_derivatives (FDSVA)", lambda: dyn.fd_derivatives(model, q, v, tau),
             lambda: dyn.fd_derivatives(model, Q, V, TAU),
             lambda: pin.computeABADerivatives(pm, pd, q, v, tau), cpp.get("aba_derivs_us")),
        ]
        for label, single, batch, pinpy, cpp_us in cases:
            s = time_us(single, min_time)
            b = time_us(batch, min_time) / T
            p = time_us(pinpy, min_time)
            rows.append(dict(robot=name, nv=model.nv, quantity=label, ours_single_us=s,
                             ours_batch_us=b, pin_python_us=p, pin_cpp_us=cpp_us,
                             single_vs_cpp=_ratio(s, cpp_us), batch_vs_cpp=_ratio(b, cpp_us)))
    return rows


FO_COLUMNS = [("robot", "robot"), ("nv", "nv"), ("quantity", "quantity"),
              ("ours_single_us", "ours single [us]"),
              ("ours_batch_us", "ours batch [us/knot]"),
              ("pin_python_us", "Pinocchio Python [us]"), ("pin_cpp_us", "Pinocchio C++ [us]"),
              ("single_vs_cpp", "single / C++"), ("batch_vs_cpp", "batch / C++")]


# ---------------------------------------------------------------------------------- compile time
_COMPILE_SCRIPT = """
import time
t0 = time.perf_counter()
import numpy as np
import dynamics as dyn
from dynamics import robots
m = robots.load("ur3")
q = m.neutral(); z = np.zeros(m.nv)
t1 = time.perf_counter()
dyn.rnea(m, q, z, z); dyn.aba(m, q, z, z); dyn.mass_matrix(m, q); dyn.inverse_mass_matrix(m, q)
dyn.id_derivatives(m, q, z, z); dyn.fd_derivatives(m, q, z, z); m.integrate(q, z); m.difference(q, q)
{extra}
t2 = time.perf_counter()
print(f"{{t1 - t0:.3f}} {{t2 - t1:.3f}}")
"""


def compile_times(extra: str = "", log=print):
    """Import time and time of the first call of every kernel, in a fresh process with an empty
    numba cache (cold: compiles) and again in a second process with the same cache (warm)."""
    root = Path(__file__).resolve().parent.parent
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(root))
        for label in ("cold (empty cache)", "warm (cache reused)"):
            r = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT.format(extra=extra)],
                               env=env, capture_output=True, text=True, cwd=root)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            imp, first = map(float, r.stdout.split()[-2:])
            out.append(dict(process=label, import_s=imp, first_calls_s=first))
            log(f"  {label}: import {imp:.2f} s, first call of every kernel {first:.2f} s")
    return out


def run_first_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    rows = bench_first_order(robot_names, T, min_time, log)
    log("compile times (fresh processes, private NUMBA_CACHE_DIR):")
    ct = compile_times(log=log)
    notes = [f"batch: T = {T} knots, time per knot, parallel over knots on {os.cpu_count()} cores",
             "single: one point through the public API (input validation included)",
             "Pinocchio C++: shared/tools/pinocchio-cpp-reference, single thread"] + [
        f"compile, {c['process']}: import {c['import_s']:.2f} s, first call of all first-order "
        f"kernels {c['first_calls_s']:.2f} s" for c in ct]
    write_table(rows, "derivatives_fo", "First-order dynamics and derivatives: time per call",
                FO_COLUMNS, notes, log)
    return rows


def main(argv=None):
    import argparse

    p = argparse.ArgumentParser(prog="python -m problems.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="?", default="fo", choices=["fo"], help="which benchmark")
    p.add_argument("--robots", nargs="+", default=list(ROBOTS))
    p.add_argument("--batch", type=int, default=100, help="knots in the batched calls")
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per timing round")
    a = p.parse_args(argv)
    run_first_order(a.robots, a.batch, a.min_time)


if __name__ == "__main__":
    main()
