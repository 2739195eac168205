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
    time.sleep(1.0)  # our threads settle before it runs (as in the tick benchmark)
    out = subprocess.run(cmd.split() + [str(SCRIPT), "ur5", *args], capture_output=True,
                         text=True)
    if out.returncode != 0:
        log(f"CSQP failed: {out.stderr.strip()[-500:]}")
        return None
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _solve(P, settings, name="ur5-box"):
    start, shooting = examples.default_start(name)
    xs, us = examples.initial_guess(P, start)
    return ddp.solve(P, xs=xs, us=us, shooting=shooting, max_iter=300, **settings)


def _targets(n, seed=0):
    rng = np.random.default_rng(seed)
    return [examples.UR5_BOX_TARGET + rng.uniform(-0.1, 0.1, 3) for _ in range(n)]


def run_constrained(repeats=5, instances=20, log=print):
    rows = []
    csqp_runs = [_csqp(["--repeats", str(3 * repeats)], log)]  # before ours and after: its best
    rows += _ours("ur5-box", [dict(target=t) for t in _targets(instances)], repeats, log)
    csqp_runs.append(_csqp(["--repeats", str(3 * repeats)], log))
    if all(csqp_runs):
        c = min((r[0] for r in csqp_runs), key=lambda r: r["wall_s"])
        many = _csqp(["--targets", json.dumps([t.tolist() for t in _targets(instances)])], log)
        ok = [r for r in many if r["converged"] and r["violation"] <= FEASIBLE]
        rows.append(dict(solver=f"ur5-box, CSQP (mim-solvers, Crocoddyl {c['crocoddyl']})",
                         iterations=c["iterations"], cost=f"{c['cost']:.10g}",
                         violation=f"{c['violation']:.1e}", stationarity=f"{c['kkt']:.1e} (KKT)",
                         time_ms=round(1e3 * c["wall_s"], 2),
                         ms_per_iteration=round(1e3 * c["wall_s"] / max(c["iterations"], 1), 3),
                         solved=f"{len(ok)}/{instances}",
                         median_iterations=float(np.median([r["iterations"] for r in ok]))
                         if ok else ""))
    else:
        rows.append(dict(solver="CSQP: not run (SODDP_MIM_SOLVERS_PYTHON is not set)"))
    columns = [("solver", "problem: solver (ur5-box: T = 40)"), ("iterations", "iterations"),
               ("cost", "cost"), ("violation", "max violation (m)"),
               ("stationarity", "final gradient"), ("time_ms", "time to solution (ms)"),
               ("ms_per_iteration", "ms / iteration"),
               ("solved", f"solved ({instances} targets)"),
               ("median_iterations", "median iterations")]
    notes = [f"CPU: {cpu_name()}; times are the best of {repeats} solves (CSQP: {3 * repeats}) "
             "after an untimed one, "
             "ours and CSQP's in the same run (CSQP's: the better of two such runs, before and "
             "after ours).",
             "Ours: the augmented Lagrangian (ddp.constraints) on DDP or iLQR, converged when the "
             "gradient norm is below 1e-6 and no constraint is violated by more than 1e-6; CSQP "
             "as mim-solvers' examples/ur5.py runs it (termination tolerance 1e-4).",
             "Solved: converged with a violation of at most 1e-6 m, over the target moved by up "
             "to 0.1 m on each axis (seed 0); the start is the example's (x0 at every knot, zero "
             "controls)."]
    rng = np.random.default_rng(0)
    rows += _ours("panda-obstacle",
                  [dict(target_offset=np.array([0.0, 0.45, -0.1]) + rng.uniform(-0.05, 0.05, 3))
                   for _ in range(instances)], repeats, log)
    rows += _ours("quadrotor-columns",
                  [dict(target=np.array([-0.1, 3.2, 1.0]) + rng.uniform(-0.2, 0.2, 3))
                   for _ in range(instances)], repeats, log)
    notes.append("quadrotor-columns: aligator's example (ours only: aligator is not set up "
                 "beside); its instances move the target by up to 0.2 m on each axis.")
    notes.append("panda-obstacle: ours only (Crocoddyl writes an obstacle as a collision pair "
                 "of Pinocchio's geometry model, which the reference does not build yet); its "
                 "instances move the target by up to 5 cm on each axis (seed 0).")
    write_table(rows, "constrained", "Constrained problems beside mim-solvers' CSQP", columns,
                notes, log)
    return rows


def _ours(name, instances, repeats, log):
    """Our rows of the constrained example ``name``: each variant's solve from the example's
    start (the best of ``repeats`` timed after an untimed one), and how many of the
    ``instances`` (the example's options) it solves, in how many iterations."""
    P = examples.get(name)
    rows = []
    for label, settings in OURS:
        _solve(P, settings, name)  # untimed: loads the kernels
        best, sol = np.inf, None
        for _ in range(repeats):
            t0 = time.perf_counter()
            s = _solve(P, settings, name)
            wall = time.perf_counter() - t0
            if wall < best:
                best, sol = wall, s
        its = []
        for options in instances:
            si = _solve(examples.get(name, **options), settings, name)
            if si.status == "converged" and si.violation <= FEASIBLE:
                its.append(si.iterations)
        rows.append(dict(solver=f"{name}, ours: {label}", iterations=sol.iterations,
                         cost=f"{sol.cost:.10g}", violation=f"{sol.violation:.1e}",
                         stationarity=f"{sol.history[-1].grad_norm:.1e}",
                         time_ms=round(1e3 * best, 2),
                         ms_per_iteration=round(1e3 * best / max(sol.iterations, 1), 3),
                         solved=f"{len(its)}/{len(instances)}",
                         median_iterations=float(np.median(its)) if its else ""))
        log(rows[-1])
    return rows
