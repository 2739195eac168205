"""Solver speed (``soddp bench solver``): milliseconds per iteration of our iLQR and DDP, split by
phase, beside Crocoddyl's FDDP and DDP on the same problems in the same run ->
``results/solver_speed.{csv,md,png}``.

Every solver runs from both starts (:data:`STARTS`): the quasi-static controls holding x0 and
their rollout (ours with single shooting), and Crocoddyl's examples' start, x0 at every knot with
those controls (ours with multiple shooting); on the gaits Crocoddyl also runs its own example
code (:data:`OWN_EXAMPLES`).  The ratios to Crocoddyl's FDDP are taken at FDDP's best run
(:func:`~problems.reference.crocoddyl_solvers.better_run`), and the CPU is named with the
table.  Each solve is timed after an untimed warm-up solve, and the best of ``repeats`` solves
is kept (the machine is shared and noisy; the minimum is the least disturbed); Crocoddyl's times
are taken the same way by its script.  The two take turns ``rounds`` times per problem and each
keeps its best round, so that a slow spell of the machine (up to 2x here) does not fall on one
solver only and bias the ratio.  Crocoddyl runs when ``SODDP_CROCODDYL_PYTHON`` names a Python with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager

import numba
import numpy as np

import ddp
from ddp.local_model import TENSOR_MAX_NV

from ..examples import get, initial_guess
from ..gaits import BIPED_WALKING, GAITS
from ..output import pyplot, save_figure, write_table
from ..reference import crocoddyl_solvers

PROBLEMS = ("ur3", "hyq", "atlas", "hyq-walk", "hyq-trot", "hyq-pace", "hyq-bound", "hyq-jump",
            "talos-walk")

#: Crocoddyl's stopping threshold here: its default (its quadruped examples keep it)
CROCODDYL_TH_STOP = 1e-9

#: the example problems that are Crocoddyl's own gait examples (its builders on the same robot
#: with the same parameters: the same optimum): (robot, gait, parameters) for
#: ``reference/crocoddyl_examples.py``, which runs Crocoddyl's example code from its start: a
#: check that our problem rebuilt in Crocoddyl runs as Crocoddyl's own (their derivatives agree
#: to 1e-9, ``tests/test_crocoddyl_examples.py``; before the rebuild wrote barriers as the
#: examples do, FDDP took 64 iterations on the rebuilt HyQ walk and 10 on the example)
OWN_EXAMPLES = {
    "hyq-walk": ("hyq", "walking", GAITS["walking"]),
    "hyq-trot": ("hyq", "trotting", GAITS["trotting"]),
    "hyq-pace": ("hyq", "pacing", GAITS["pacing"]),
    "hyq-bound": ("hyq", "bounding", GAITS["bounding"]),
    "hyq-jump": ("hyq", "jumping", dict(jump_height=0.15, jump_length=(0.0, 0.3, 0.0), dt=1e-2,
                                        ground_knots=10, flying_knots=20)),
    "talos-walk": ("talos_legs", "walking", BIPED_WALKING),
}

#: the starts (problems.examples.initial_guess) and the shooting ours uses from each
STARTS = (("quasi-static", "single"), ("crocoddyl", "multiple"))

COLUMNS = [("problem", "problem"), ("nv", "nv"), ("T", "T"), ("start", "start"),
           ("solver", "solver"),
           ("iterations", "iterations"), ("cost", "final cost"), ("ms_per_iter", "ms / iteration"),
           ("derivatives_ms", "derivatives [ms/it]"), ("backward_ms", "backward [ms/it]"),
           ("forward_ms", "forward [ms/it]"), ("other_ms", "other [ms/it]"),
           ("second_order_share", "second-order share"),
           ("total_ms", "time to solution [ms]"), ("vs_fddp_iter", "ms/it / FDDP's"),
           ("vs_fddp_total", "total / FDDP's")]
#: the table under load: the median time beside the best (stalls show in the median)
COLUMNS_LOAD = [c for c in COLUMNS if c[0] not in ("derivatives_ms", "backward_ms", "forward_ms",
                                                   "other_ms", "second_order_share")]
COLUMNS_LOAD[COLUMNS_LOAD.index(("ms_per_iter", "ms / iteration")) + 1:1] = [
    ("median_ms_per_iter", "median ms / iteration")]
COLUMNS_LOAD.insert(COLUMNS_LOAD.index(("vs_fddp_total", "total / FDDP's")),
                    ("vs_fddp_median", "median ms/it / FDDP's"))


def _time_solve(P, method, repeats, max_iter, xs, us, shooting):
    """(solution, best wall time, median wall time) of ``repeats`` timed solves from (xs, us)
    (computed before, for ours as for Crocoddyl's script)."""
    ddp.solve(P, xs, us, method=method, max_iter=max_iter, shooting=shooting)  # warm-up
    best, walls = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        sol = ddp.solve(P, xs, us, method=method, max_iter=max_iter, shooting=shooting)
        wall = time.perf_counter() - t0
        walls.append(wall)
        if best is None or wall < best[1]:
            best = (sol, wall)
    return best[0], best[1], float(np.median(walls))


def _best_rounds(P, repeats, rounds, max_iter, log, start, shooting, shared_machine=False):
    """From ``start``: Crocoddyl's results ({label: {...}}) and ours ({method: (solution, wall,
    median)}), each the best of ``rounds`` turns taken alternately."""
    croc, ours = {}, {}
    xs, us = initial_guess(P, start)
    for _ in range(rounds):
        for label, x in crocoddyl_solvers.solve(P, us=us, xs=xs, max_iter=max_iter,
                                                repeats=repeats, log=log,
                                                shared_machine=shared_machine,
                                                th_stop=CROCODDYL_TH_STOP).items():
            if label not in croc or x["total_s"] < croc[label]["total_s"]:
                croc[label] = x
        for method in ("ilqr", "ddp"):
            res = _time_solve(P, method, repeats, max_iter, xs, us, shooting)
            if method not in ours or res[1] < ours[method][1]:
                ours[method] = res
    return croc, ours


def _own_example(name, repeats, log):
    """Crocoddyl's FDDP on its own example code for the problem ``name`` (:data:`OWN_EXAMPLES`),
    from its start, as a result of :func:`crocoddyl_solvers.solve`; None when there is none or
    Crocoddyl is not configured."""
    import json

    if name not in OWN_EXAMPLES or crocoddyl_solvers.python() is None:
        return None
    robot, gait, params = OWN_EXAMPLES[name]
    script = os.path.join(os.path.dirname(crocoddyl_solvers.__file__), "crocoddyl_examples.py")
    run = subprocess.run([crocoddyl_solvers.python(), script, robot, gait, json.dumps(params),
                          repr(CROCODDYL_TH_STOP), str(repeats)], capture_output=True,
                         text=True, timeout=1800)
    if run.returncode != 0:
        log(f"  Crocoddyl's own example failed: {run.stderr.strip()[-300:]}")
        return None
    x = json.loads(run.stdout.strip().splitlines()[-1])
    return dict(iterations=x["iterations"], cost=x["cost"], converged=x["converged"],
                total_s=x["wall_s"], version=x["version"])


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``, else the platform's processor string)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


@contextmanager
def busy_processes(n):
    """``n`` processes beside the benchmark, each keeping a core busy (a pure Python loop)."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        if procs:
            time.sleep(0.5)  # running, and seen by the kernels' choice of threads
        yield
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


def run_solver_speed(problems=PROBLEMS, repeats=5, rounds=3, max_iter=300, log=print, load=0):
    """The table (``results/solver_speed``; with ``load`` N busy processes beside the solvers,
    ``results/solver_speed_load{N}`` with median times too)."""
    with busy_processes(load):
        return _solver_speed(problems, repeats, rounds, max_iter, log, load)


def _solver_speed(problems, repeats, rounds, max_iter, log, load):
    rows, rows_croc = [], []
    for name in problems:
        P = get(name)
        log(f"solver speed: {name} (nv={P.nv}, T={P.T})" + (f", {load} busy processes beside"
                                                            if load else ""))
        runs = {}
        for start, shooting in STARTS:
            runs[start] = _best_rounds(P, repeats, rounds, max_iter, log, start, shooting,
                                       shared_machine=load > 0)
            rows_croc += list(runs[start][0].values())
        own = None
        for _ in range(rounds):
            x = _own_example(name, repeats, log)
            if x is not None and (own is None or x["total_s"] < own["total_s"]):
                own = x
        if own is not None:
            label = "Crocoddyl FDDP, its example"
            runs["crocoddyl"][0][label] = own
            rows_croc.append(own)
        fddp = None
        for start, _ in STARTS:
            for label in ("Crocoddyl FDDP", "Crocoddyl FDDP, its example"):
                x = runs[start][0].get(label)
                fddp = crocoddyl_solvers.better_run(
                    fddp, None if x is None else dict(x, start=start, label=label))
        fddp_it = 1e3 * fddp["total_s"] / max(fddp["iterations"], 1) if fddp else None
        fddp_total = 1e3 * fddp["total_s"] if fddp else None
        fddp_med = 1e3 * fddp.get("median_s", fddp["total_s"]) / max(fddp["iterations"], 1) \
            if fddp else None
        for start, shooting in STARTS:
            croc, ours = runs[start]
            for method in ("ilqr", "ddp"):
                sol, wall, median = ours[method]
                it = max(sol.iterations, 1)
                h = sol.history
                der, back, fwd = (1e3 * sum(getattr(x, k) for x in h) / it
                                  for k in ("t_derivatives", "t_backward", "t_forward"))
                ms = 1e3 * wall / it
                rows.append(dict(problem=name, nv=P.nv, T=P.T, start=start,
                                 solver=f"ours, {method.upper()}", iterations=sol.iterations,
                                 cost=sol.cost, ms_per_iter=ms, derivatives_ms=der,
                                 backward_ms=back, forward_ms=fwd, other_ms=ms - der - back - fwd,
                                 total_ms=1e3 * wall, median_ms_per_iter=1e3 * median / it,
                                 vs_fddp_iter=ms / fddp_it if fddp_it else None,
                                 vs_fddp_median=1e3 * median / it / fddp_med if fddp_med else None,
                                 vs_fddp_total=1e3 * wall / fddp_total if fddp_total else None))
                if method == "ddp":  # what DDP's derivatives and backward pass add to iLQR's
                    ilqr = rows[-2]
                    extra = der + back - ilqr["derivatives_ms"] - ilqr["backward_ms"]
                    rows[-1]["second_order_share"] = max(extra, 0.0) / ms
                log(f"  {start}, ours {method:4s}: {sol.iterations:3d} it, cost {sol.cost:.9g}, "
                    f"{ms:.2f} ms/it (derivatives {der:.2f}, backward {back:.2f}, forward "
                    f"{fwd:.2f})")
            for label, x in croc.items():
                ms = 1e3 * x["total_s"] / max(x["iterations"], 1)
                med = 1e3 * x.get("median_s", x["total_s"]) / max(x["iterations"], 1)
                rows.append(dict(problem=name, nv=P.nv, T=P.T, start=start,
                                 solver=f"{label} {x['version']}", iterations=x["iterations"],
                                 cost=x["cost"], ms_per_iter=ms, median_ms_per_iter=med,
                                 total_ms=1e3 * x["total_s"], vs_fddp_iter=ms / fddp_it,
                                 vs_fddp_median=med / fddp_med,
                                 vs_fddp_total=1e3 * x["total_s"] / fddp_total))
                log(f"  {start}, {label}: {x['iterations']:3d} it, cost {x['cost']:.9g}, "
                    f"{ms:.2f} ms/it")
        if fddp:
            log(f"  Crocoddyl FDDP's better run: {fddp['label']} from {fddp['start']}")
    notes = [f"CPU: {cpu_name()}, {os.cpu_count()} cores (the ratios depend on the CPU)",
             "starts: quasi-static = the controls holding x0 and their rollout (ours with single "
             "shooting), crocoddyl = Crocoddyl's examples' start, x0 at every knot with those "
             "controls (ours with multiple shooting); every solver from both, and on the gaits "
             "Crocoddyl's own example code from its start ('its example': Crocoddyl's builder "
             "of the same gait, the same optimum); the ratios are to Crocoddyl FDDP's best run "
             "(the lower cost; at the same optimum the shorter time to solution)",
             f"best of {repeats} solves after a warm-up (and their median); ours and Crocoddyl "
             f"take turns {rounds} times per problem and start and each keeps its best turn"]
    if load:
        notes.append(f"under load: {load} other processes each keep a core busy (a Python loop) "
                     "during the whole run; ours with its default threads (auto: the cores the "
                     "others leave); Crocoddyl with OMP_WAIT_POLICY=PASSIVE (its default spin-"
                     "waiting starves under load)")
    notes += [
             "ours: derivatives = costs and step derivatives of all knots in one parallel call "
             f"(DDP with full FD-SO tensors when nv <= {TENSOR_MAX_NV}), backward = compiled "
             f"Riccati pass (DDP with nv > {TENSOR_MAX_NV}: the lam-contracted FDSVA-SO at each "
             "knot inside it), forward = line search (one compiled call per trial: the "
             "closed-loop rollout, then the costs of its knots in parallel on the rollout's "
             "kinematics), other = Python between phases; the quasi-static controls are "
             "computed before the timed solves, for ours as for Crocoddyl",
             "second-order share (DDP): the time per iteration that DDP's derivatives and "
             "backward pass take beyond iLQR's (the second-order dynamics terms: the FD-SO "
             "tensors, the lam-contracted terms, the expansion of (+)), over DDP's time per "
             "iteration",
             f"Crocoddyl: FDDP (multiple shooting) and DDP, both with Gauss-Newton Hessians, "
             f"th_stop {CROCODDYL_TH_STOP:g} (its default); ours: tol "
             f"{ddp.SolverSettings().tol:g} on the gradient (our default); "
             + (f"run in the same session; threads: ours {_threads()}, Crocoddyl "
                f"{_crocoddyl_threads(rows_croc)} (its ShootingProblem's nthreads)"
                if crocoddyl_solvers.python() else
                "not run: set SODDP_CROCODDYL_PYTHON (shared/tools/crocoddyl-reference/setup.sh)")]
    stem = f"solver_speed_load{load}" if load else "solver_speed"
    title = "Solver speed: ours beside Crocoddyl, same problems, same run" + (
        f", {load} busy processes beside" if load else "")
    write_table(rows, stem, title, COLUMNS_LOAD if load else COLUMNS, notes, log)
    if not load:
        _plot(rows, problems)
    return rows


def _threads():
    return numba.get_num_threads()


def _crocoddyl_threads(results):
    counts = sorted({x.get("nthreads") for x in results if x.get("nthreads")})
    return "/".join(map(str, counts)) or "?"


def _plot(rows, problems):
    plt = pyplot()
    cols = min(3, len(problems))
    lines = -(-len(problems) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(4.4 * cols, 3.6 * lines + 0.5),
                             squeeze=False)
    axes = axes.ravel()
    for ax in axes[len(problems):]:
        ax.axis("off")
    for ax, name in zip(axes, problems):
        sel = [r for r in rows if r["problem"] == name]
        labels = [r["solver"].replace(" 3.2.1", "").replace("Crocoddyl", "Croc.")
                  + (" (rollout)" if r["start"] == "quasi-static" else " (x0)") for r in sel]
        x = np.arange(len(sel))
        bottom = np.zeros(len(sel))
        for key, label in (("derivatives_ms", "derivatives"), ("backward_ms", "backward"),
                           ("forward_ms", "forward"), ("other_ms", "other")):
            vals = np.array([r.get(key) or 0.0 for r in sel])
            ax.bar(x, vals, bottom=bottom, label=label)
            bottom += vals
        whole = np.array([r["ms_per_iter"] if r.get("derivatives_ms") is None else 0.0
                          for r in sel])
        ax.bar(x, whole, bottom=bottom, color="0.5", label="Crocoddyl (whole iteration)")
        ax.set_ylim(0, 1.08 * max(bottom + whole))
        ax.set_xticks(x)
        ax.set_xticklabels(labels, rotation=35, ha="right", fontsize=7)
        ax.set_title(f"{name} (nv={sel[0]['nv']}, T={sel[0]['T']})")
        ax.set_ylabel("ms per iteration")
        ax.grid(True, axis="y", alpha=0.3)
    # one legend below the panels, where it hides no bar
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8)
    fig.suptitle("Solver iteration time by phase, beside Crocoddyl (same run)")
    fig.tight_layout(rect=(0, 0.4 / (3.6 * lines + 0.5), 1, 1))
    save_figure(fig, "solver_speed.png")
