"""Receding-horizon ticks beside Crocoddyl (``soddp bench mpc``).

The UR3 reaching problem (T = 100, ``problems.examples.ur3``), solved to convergence, then
rounds of ``ticks`` ticks of a nominal loop (the measured state is the last solution's second state: no
plant, so that both solvers do the same work): ours through :class:`ddp.MPC` (DDP and iLQR),
Crocoddyl's FDDP as its users write the loop (x0 set, the solution shifted by one knot,
``solve(xs, us, maxiter, is_feasible=False)``), at 1 and 2 iterations per tick, in one run.
The whole tick is timed (setting x0, the shift, the solve); median and best over the ticks.
Writes ``results/mpc_tick.{csv,md}``.
"""

from __future__ import annotations

import time

import numpy as np

import ddp

from .. import examples
from ..output import write_table
from ..reference import crocoddyl_solvers
from .solver import cpu_name

ITERATIONS = (1, 2)


def _our_ticks(P, method, iterations, ticks, warm):
    mpc = ddp.MPC(P, iterations=iterations, method=method, xs=warm.xs, us=warm.us)
    x0 = P.x0.copy()
    mpc.step(warm.xs[0])
    times = []
    for _ in range(ticks):
        x = mpc.solution.xs[1].copy()
        t0 = time.perf_counter()
        mpc.step(x)
        times.append(time.perf_counter() - t0)
    P.x0 = x0
    return np.array(times)


def run_mpc_ticks(ticks=100, rounds=3, log=print):
    P = examples.get("ur3")
    warm = ddp.solve(P, shooting="multiple", tol=1e-10)
    rows = []
    for iterations in ITERATIONS:
        # rounds alternate between Crocoddyl and ours; each solver keeps its round with the
        # lowest median (this host's speed drifts by up to 1.5x within a minute)
        theirs, ours = None, {}
        for _ in range(rounds):
            s = crocoddyl_solvers.spec(P, us=warm.us, xs=warm.xs)
            if s is not None:
                s["mpc"] = dict(ticks=ticks, iterations=iterations)
                run = crocoddyl_solvers.run(s, log).get("Crocoddyl FDDP")
                if run and (theirs is None
                            or np.median(run["tick_s"]) < np.median(theirs["tick_s"])):
                    theirs = run
            for m in ("ddp", "ilqr"):
                t = _our_ticks(P, m, iterations, ticks, warm)
                if m not in ours or np.median(t) < np.median(ours[m]):
                    ours[m] = t
        ref = None if not theirs else float(np.median(theirs["tick_s"]))
        for m, label in (("ddp", "ours: DDP"), ("ilqr", "ours: iLQR")):
            t = ours[m]
            rows.append(dict(iterations=iterations, solver=label,
                             median_ms=round(1e3 * float(np.median(t)), 3),
                             best_ms=round(1e3 * float(t.min()), 3),
                             ratio="" if ref is None else round(float(np.median(t)) / ref, 2)))
        if theirs:
            t = np.array(theirs["tick_s"])
            rows.append(dict(iterations=iterations,
                             solver=f"Crocoddyl {theirs['version']} FDDP",
                             median_ms=round(1e3 * float(np.median(t)), 3),
                             best_ms=round(1e3 * float(t.min()), 3), ratio=1.0))
        else:
            rows.append(dict(iterations=iterations,
                             solver="Crocoddyl: not run (SODDP_CROCODDYL_PYTHON is not set)"))
        log(rows[-3:])
    columns = [("iterations", "iterations per tick"), ("solver", "solver"),
               ("median_ms", "median ms / tick"), ("best_ms", "best ms / tick"),
               ("ratio", "median / Crocoddyl's")]
    notes = [f"CPU: {cpu_name()}; UR3 reaching, T = 100, {ticks} ticks of a nominal loop after a "
             f"converged solve; ours (ddp.MPC) and Crocoddyl's in the same run, {rounds} rounds "
             "alternating between them, each keeping its round with the lowest median.",
             "A tick: x0 set to the last solution's second state, the solution shifted by one "
             "knot, then the iterations (multiple shooting; ours does not evaluate the final "
             "trajectory's gradient, as Crocoddyl does not)."]
    write_table(rows, "mpc_tick", "Receding-horizon ticks beside Crocoddyl", columns, notes, log)
    return rows
