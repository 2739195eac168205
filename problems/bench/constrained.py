"""Constrained problems beside mim-solvers' CSQP (``soddp bench constrained``).

For each constrained example that Crocoddyl can express (``ur5-box``: mim-solvers' own
``examples/ur5.py``), in one run:

* our solver with exact curvature (DDP: the cost and constraint Hessians and the dynamics'
  second-order terms), iLQR with the exact cost and constraint Hessians, and iLQR with
  Gauss-Newton curvature, from the example's start (x0 at every knot, zero controls, multiple
  shooting), and CSQP as its example runs it (termination tolerance 1e-4): iterations, final
  cost, largest violation, the final gradient (ours) or KKT norm (CSQP's), time to solution
  (best of ``repeats`` after an untimed solve) and ms per iteration;
  CSQP is timed before and after ours, and keeps its better run (a noisy 2-core host);
* 20 instances with the target moved by up to 0.1 m on each axis (seeded): how many each
  solver solves (converged, violation at most 1e-6) and its median iterations.

CSQP runs in its own environment: ``SODDP_MIM_SOLVERS_PYTHON`` names the command that runs its
Python (``../shared/tools/mim-solvers-reference/setup.sh`` prints it); without it its rows say
so.  Writes ``results/constrained.{csv,md}``.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import numpy as np

import ddp

from .. import examples
from ..output import write_table
from .solver import cpu_name

SCRIPT = Path(__file__).resolve().parents[1] / "reference" / "mim_solvers_examples.py"
#: our variants: (label, solve settings)
OURS = (("DDP, exact curvature", dict(method="ddp")),
        ("iLQR, exact cost and constraint Hessians", dict(method="ilqr")),
        ("iLQR, Gauss-Newton", dict(method="ilqr", hessians="gauss-newton")))
FEASIBLE = 1e-6


def _csqp(args, log):
    """CSQP's JSON lines for ``args``, or None without its environment."""
    cmd = os.environ.get("SODDP_MIM_SOLVERS_PYTHON")
    if not cmd:
        return None
    out = subprocess.run(cmd.split() + [str(SCRIPT), "ur5", *args], capture_output=True,
                         text=True)
    if out.returncode != 0:
        log(f"CSQP failed: {out.stderr.strip()[-500:]}")
        return None
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _solve(P, settings):
    start, shooting = examples.default_start("ur5-box")
    xs, us = examples.initial_guess(P, start)
    return ddp.solve(P, xs=xs, us=us, shooting=shooting, max_iter=200, **settings)


def _targets(n, seed=0):
    rng = np.random.default_rng(seed)
    return [examples.UR5_BOX_TARGET + rng.uniform(-0.1, 0.1, 3) for _ in range(n)]


def run_constrained(repeats=5, instances=20, log=print):
    P = examples.get("ur5-box")
    rows = []
    csqp_runs = [_csqp(["--repeats", str(repeats)], log)]  # before ours and after: its best
    for label, settings in OURS:
        _solve(P, settings)  # untimed: loads the kernels
        best, sol = np.inf, None
        for _ in range(repeats):
            t0 = time.perf_counter()
            s = _solve(P, settings)
            wall = time.perf_counter() - t0
            if wall < best:
                best, sol = wall, s
        solved, its = 0, []
        for target in _targets(instances):
            Pi = examples.get("ur5-box", target=target)
            si = _solve(Pi, settings)
            if si.status == "converged" and si.violation <= FEASIBLE:
                solved += 1
                its.append(si.iterations)
        rows.append(dict(solver=f"ours: {label}", iterations=sol.iterations, cost=f"{sol.cost:.10g}",
                         violation=f"{sol.violation:.1e}",
                         stationarity=f"{sol.history[-1].grad_norm:.1e}",
                         time_ms=round(1e3 * best, 2),
                         ms_per_iteration=round(1e3 * best / max(sol.iterations, 1), 3),
                         solved=f"{solved}/{instances}",
                         median_iterations=float(np.median(its)) if its else ""))
        log(rows[-1])
    csqp_runs.append(_csqp(["--repeats", str(repeats)], log))
    if all(csqp_runs):
        c = min((r[0] for r in csqp_runs), key=lambda r: r["wall_s"])
        many = _csqp(["--targets", json.dumps([t.tolist() for t in _targets(instances)])], log)
        ok = [r for r in many if r["converged"] and r["violation"] <= FEASIBLE]
        rows.append(dict(solver=f"CSQP (mim-solvers, Crocoddyl {c['crocoddyl']})",
                         iterations=c["iterations"], cost=f"{c['cost']:.10g}",
                         violation=f"{c['violation']:.1e}", stationarity=f"{c['kkt']:.1e} (KKT)",
                         time_ms=round(1e3 * c["wall_s"], 2),
                         ms_per_iteration=round(1e3 * c["wall_s"] / max(c["iterations"], 1), 3),
                         solved=f"{len(ok)}/{instances}",
                         median_iterations=float(np.median([r["iterations"] for r in ok]))
                         if ok else ""))
    else:
        rows.append(dict(solver="CSQP: not run (SODDP_MIM_SOLVERS_PYTHON is not set)"))
    columns = [("solver", "ur5-box (T = 40): solver"), ("iterations", "iterations"),
               ("cost", "cost"), ("violation", "max violation (m)"),
               ("stationarity", "final gradient"), ("time_ms", "time to solution (ms)"),
               ("ms_per_iteration", "ms / iteration"),
               ("solved", f"solved ({instances} targets)"),
               ("median_iterations", "median iterations")]
    notes = [f"CPU: {cpu_name()}; times are the best of {repeats} solves after an untimed one, "
             "ours and CSQP's in the same run (CSQP's: the better of two such runs, before and "
             "after ours).",
             "Ours: the augmented Lagrangian (ddp.constraints) on DDP or iLQR, converged when the "
             "gradient norm is below 1e-6 and no constraint is violated by more than 1e-6; CSQP "
             "as mim-solvers' examples/ur5.py runs it (termination tolerance 1e-4).",
             "Solved: converged with a violation of at most 1e-6 m, over the target moved by up "
             "to 0.1 m on each axis (seed 0); the start is the example's (x0 at every knot, zero "
             "controls)."]
    write_table(rows, "constrained", "Constrained problems beside mim-solvers' CSQP", columns,
                notes, log)
    return rows
