"""Receding-horizon ticks beside Crocoddyl, and the closed-loop study (``soddp bench mpc``).

The UR3 reaching problem (T = 100, ``problems.examples.ur3``), solved to convergence, then
rounds of ``ticks`` ticks of a nominal loop (the measured state is the last solution's second state: no
plant, so that both solvers do the same work): ours through :class:`ddp.MPC` (DDP and iLQR),
Crocoddyl's FDDP as its users write the loop (x0 set, the solution shifted by one knot,
``solve(xs, us, maxiter, is_feasible=False)``), at 1 and 2 iterations per tick, in one run.
The whole tick is timed (setting x0, the shift, the solve); median and best over the ticks.
Writes ``results/mpc_tick.{csv,md}``.

The closed-loop study (:func:`run_closed_loop`): ``ur5-reach-mpc`` (:mod:`problems.mpc_scenarios`,
MuJoCo as the plant) with DDP (exact curvature), iLQR (Gauss-Newton) and Crocoddyl's FDDP (in
its environment, on the same plant), at 1, 2 and 4 iterations per tick, with pushes of 100 and
300 N: tracking error, the largest error after the push, time per tick.  Writes
``results/mpc.{csv,md}``.

The Solo-12 study (:func:`run_solo12_study`): ``solo12-trot-mpc`` with DDP (exact curvature;
its "shift" globalization, and the default "safeguarded", whose first iteration of every solve
is Gauss-Newton), iLQR and Crocoddyl's FDDP (on the same plant), at 1 and 2 iterations per
tick and (ours) within a 10 ms budget, under lateral pushes of 0, 4 and 8 N: falls, distance
trotted, time per tick.  Writes
``results/mpc_solo12.{csv,md}``.
"""

from __future__ import annotations

import time

import numpy as np

import ddp

from .. import examples, mpc_scenarios
from ..output import write_table
from ..reference import crocoddyl_solvers
from .solver import cpu_name

ITERATIONS = (1, 2)


def tick_allocations(P, method, iterations, warm, ticks=10):
    """(compiled allocations per tick, Python's transient KiB per tick) of ``ticks`` ticks of
    the nominal loop after three: numba's NRT allocation count (statistics switched on here)
    and the peak of tracemalloc's traced memory above its level before each tick."""
    import tracemalloc

    from numba.core.runtime import _nrt_python, rtsys

    _nrt_python.memsys_enable_stats()
    x0 = P.x0.copy()
    mpc = _started(P, method, iterations, warm)
    for _ in range(3):
        mpc.step(mpc.solution.xs[1].copy())
    a0 = rtsys.get_allocation_stats().alloc
    for _ in range(ticks):
        mpc.step(mpc.solution.xs[1].copy())
    compiled = (rtsys.get_allocation_stats().alloc - a0) / ticks
    tracemalloc.start()
    peaks = []
    for _ in range(ticks):
        x = mpc.solution.xs[1].copy()
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        mpc.step(x)
        peaks.append(tracemalloc.get_traced_memory()[1] - start)
    tracemalloc.stop()
    P.x0 = x0
    return compiled, float(np.median(peaks)) / 1024


def _started(P, method, iterations, warm):
    """ddp.MPC on P after its first tick, from the converged solution ``warm`` (the nominal
    loop's start; P.x0 is the caller's to restore)."""
    mpc = ddp.MPC(P, iterations=iterations, method=method, xs=warm.xs, us=warm.us)
    mpc.step(warm.xs[0])
    return mpc


def _our_ticks(P, method, iterations, ticks, warm):
    x0 = P.x0.copy()
    mpc = _started(P, method, iterations, warm)
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
        # rounds alternate between Crocoddyl and ours, a second apart (measured: right after
        # Crocoddyl's run our median tick was 1.45 ms, 1.16 ms alone or after a pause); each
        # solver keeps its round with the lowest median (this host drifts by up to 1.5x)
        theirs, ours = None, {}
        for _ in range(rounds):
            s = crocoddyl_solvers.spec(P, us=warm.us, xs=warm.xs)
            time.sleep(1.0)  # either's threads settle before the other runs
            if s is not None:
                s["mpc"] = dict(ticks=ticks, iterations=iterations)
                run = crocoddyl_solvers.run(s, log).get("Crocoddyl FDDP")
                if run and (theirs is None
                            or np.median(run["tick_s"]) < np.median(theirs["tick_s"])):
                    theirs = run
            time.sleep(1.0)
            for m in ("ddp", "ilqr"):
                t = _our_ticks(P, m, iterations, ticks, warm)
                if m not in ours or np.median(t) < np.median(ours[m]):
                    ours[m] = t
        ref = None if not theirs else float(np.median(theirs["tick_s"]))
        for m, label in (("ddp", "ours: DDP"), ("ilqr", "ours: iLQR")):
            t = ours[m]
            compiled, python_kib = tick_allocations(P, m, iterations, warm)
            rows.append(dict(iterations=iterations, solver=label,
                             median_ms=round(1e3 * float(np.median(t)), 3),
                             best_ms=round(1e3 * float(t.min()), 3),
                             ratio="" if ref is None else round(float(np.median(t)) / ref, 2),
                             nrt_allocations=round(compiled),
                             python_kib=round(python_kib, 1)))
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
               ("ratio", "median / Crocoddyl's"),
               ("nrt_allocations", "compiled allocations / tick"),
               ("python_kib", "Python's transient KiB / tick")]
    notes = [f"CPU: {cpu_name()}; UR3 reaching, T = 100, {ticks} ticks of a nominal loop after a "
             f"converged solve; ours (ddp.MPC) and Crocoddyl's in the same run, {rounds} rounds "
             "alternating between them, each keeping its round with the lowest median.",
             "A tick: x0 set to the last solution's second state, the solution shifted by one "
             "knot, then the iterations (multiple shooting; ours does not evaluate the final "
             "trajectory's gradient, as Crocoddyl does not).",
             "Allocations per tick, ours (after the timed rounds, 10 ticks): numba's NRT "
             "allocation count (the kernels' work arrays: one buffer per sweep and knot, and "
             "per call; not yet zero), and the peak of Python's traced memory above its level "
             "before the tick (tracemalloc)."]
    write_table(rows, "mpc_tick", "Receding-horizon ticks beside Crocoddyl", columns, notes, log)
    return rows


def run_closed_loop(seconds=5.0, log=print):
    rows = []
    for push in (100.0, 300.0):
        for iterations in (1, 2, 4):
            for method in ("ddp", "ilqr"):
                row = mpc_scenarios.run_ur5_reach(method, iterations, seconds, log=log,
                                                  write=False, push=push)
                row["push_N"] = push
                rows.append(row)
                log({k: row[k] for k in ("method", "iterations", "push_N", "mean_error_mm",
                                         "max_error_after_push_mm", "median_tick_ms")})
            time.sleep(1.0)
            row = mpc_scenarios.run_crocoddyl_ur5_reach(iterations, seconds, push, log)
            time.sleep(1.0)
            if row is not None:
                row["push_N"] = push
                rows.append(row)
    columns = [("push_N", "push (N)"), ("iterations", "iterations per tick"),
               ("method", "method"), ("mean_error_mm", "mean error (mm)"),
               ("max_error_after_push_mm", "largest error after the push (mm)"),
               ("median_tick_ms", "median ms / tick"), ("max_tick_ms", "largest ms / tick"),
               ("ticks_over_budget", "ticks over 20 ms")]
    notes = [f"CPU: {cpu_name()}; ur5-reach-mpc (problems/mpc_scenarios.py): MuJoCo plant at "
             f"1 kHz, ddp.MPC at 50 Hz with its policy between ticks, {seconds:g} s, the push "
             "along y on the wrist for 0.1 s midway; ours with the 'shift' globalization "
             "(the default 'safeguarded' starts each solve with Gauss-Newton).",
             "Errors after the first second.  Crocoddyl's FDDP drives the same plant from its own "
             "environment (problems/reference/crocoddyl_problem.py, closed_loop: the same MJCF, "
             "targets, ticks, push and feedback policy) when SODDP_CROCODDYL_PYTHON is set."]
    write_table(rows, "mpc", "Closed loop in MuJoCo: exact (DDP) and Gauss-Newton (iLQR) "
                "curvature, and Crocoddyl's FDDP", columns, notes, log)
    return rows


#: the Solo-12 study's controllers: (method, globalization)
SOLO12_CONTROLLERS = (("ddp", "shift"), ("ddp", "safeguarded"), ("ilqr", "safeguarded"))


def run_solo12_study(seconds=5.0, pushes=(0.0, 4.0, 8.0), log=print):
    """The Solo-12 study (module docstring): every controller of :data:`SOLO12_CONTROLLERS`
    at 1 and 2 iterations per tick and at up to 10 iterations within 10 ms, under each push."""
    rows = []
    budgets = ((1, None), (2, None), (10, 10.0))
    for push in pushes:
        for iterations, budget in budgets:
            for method, globalization in SOLO12_CONTROLLERS:
                row = mpc_scenarios.run_solo12_trot(method, iterations, seconds, log=log,
                                                    write=False, push=push,
                                                    globalization=globalization,
                                                    budget_ms=budget)
                rows.append(row)
                log({k: row[k] for k in ("method", "globalization", "iterations", "budget_ms",
                                         "push_N", "fell_at_s", "distance_m",
                                         "median_tick_ms")})
            if budget is None:  # Crocoddyl's solve takes iterations, not a time budget
                time.sleep(1.0)
                row = mpc_scenarios.run_crocoddyl_solo12_trot(iterations, seconds, push, log)
                time.sleep(1.0)
                if row is not None:
                    rows.append(row)
    columns = [("push_N", "push (N)"), ("iterations", "iterations per tick (at most)"),
               ("budget_ms", "budget (ms)"), ("method", "method"),
               ("globalization", "globalization"), ("fell_at_s", "fell at (s)"),
               ("distance_m", "distance (m)"), ("commanded_m", "commanded (m)"),
               ("max_lateral_m", "largest lateral drift (m)"),
               ("median_tick_ms", "median ms / tick"), ("max_tick_ms", "largest ms / tick"),
               ("ticks_over_budget", "ticks over 20 ms")]
    notes = [f"CPU: {cpu_name()}; solo12-trot-mpc (problems/mpc_scenarios.py): MuJoCo plant at "
             f"1 kHz deciding the contacts, ddp.MPC at 50 Hz (cyclic, T = one trot cycle) with "
             f"its policy between ticks, {seconds:g} s, the push along y on the base for 0.1 s "
             "midway; a fall: the base below 10 cm or tilted past 60 degrees.",
             "The 'safeguarded' globalization starts every solve with a Gauss-Newton iteration: "
             "at one iteration per tick its DDP is iLQR; 'shift' keeps DDP's exact curvature "
             "from the first iteration.",
             "Crocoddyl's FDDP drives the same plant from its own environment "
             "(problems/reference/crocoddyl_problem.py, gait_closed_loop: the same MJCF, trot, "
             "stand, ticks, cycling, strides, push and feedback policy) when "
             "SODDP_CROCODDYL_PYTHON is set; its solve takes iterations, not a time budget."]
    write_table(rows, "mpc_solo12", "Solo-12 trotting in MuJoCo: exact (DDP) and Gauss-Newton "
                "(iLQR) curvature", columns, notes, log)
    return rows
