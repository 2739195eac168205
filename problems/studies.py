"""Solve, compare and study: one solve of an example problem, a side-by-side comparison of
methods and derivative backends on one problem, and the study over every problem.  Tables and
figures go to ``results/`` (:mod:`problems.output`).
"""

from __future__ import annotations

import csv
import os
import time

import numpy as np

import ddp

from .examples import PROBLEMS, get
from .output import Progress, pyplot, results_dir, save_figure, write_table
from .reference import crocoddyl_solvers

#: problems on which ``soddp study --quick`` also runs the CasADi and finite-difference backends
QUICK_BACKEND_PROBLEMS = ("pendulum", "double_pendulum", "ur3")

#: the comparison of ``soddp compare``: (label, method, backend)
COMPARED = (("DDP, analytical", "ddp", "analytical"), ("iLQR, analytical", "ilqr", "analytical"),
            ("DDP, CasADi AD", "ddp", "casadi"), ("DDP, finite differences", "ddp", "finite-diff"))


def run_one(name, method="ddp", backend="analytical", max_iter=200, verbose=True, log=print,
            warm_up=False, settings=None, **options):
    """Solve one example problem; returns (problem, Solution, wall time in s).  ``warm_up``:
    first run one iteration untimed (loads compiled kernels, builds CasADi functions), so that
    the timed solve measures iterations only.  ``settings``: more solver settings by name;
    ``options``: options of the problem."""
    P = get(name, backend=backend, **options)
    settings = dict(settings or {})
    if verbose:
        extra = "".join(f", {k} {v}" for k, v in settings.items())
        log(f"{name}: {P.info['task']}; {P!r}; {method.upper()} with the {backend} backend"
            f"{extra}")
    if warm_up:
        ddp.solve(P, method, max_iter=1, **settings)
    t0 = time.perf_counter()
    sol = ddp.solve(P, method, max_iter=max_iter, verbose=verbose, **settings)
    return P, sol, time.perf_counter() - t0


def solve_command(name, method, backend, max_iter, plot, log=print, settings=None):
    """``soddp solve``: the iteration table, the status, a convergence plot and the trajectory.
    ``settings``: more solver settings by name (e.g. globalization, shooting)."""
    P, sol, wall = run_one(name, method, backend, max_iter, True, log, settings=settings)
    stem = f"solve_{name}_{method}_{backend}"
    csv_path = results_dir() / f"{stem}_trajectory.csv"
    _write_trajectory(P, sol, csv_path)
    written = [_plot_convergence({f"{method.upper()}, {backend}": sol}, f"{stem}.png",
                                 f"{name}: {P.info['task']}"), csv_path]
    if plot:
        written.append(_plot_trajectory(P, sol, f"{stem}_trajectory.png", name))
    log(f"{sol.status}: cost {sol.cost:.9g}, {sol.iterations} iterations, {wall:.2f} s")
    log("wrote " + ", ".join(str(p) for p in written))
    return sol


def _write_trajectory(P, sol, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t"] + [f"q{i}" for i in range(P.nq)] + [f"v{i}" for i in range(P.nv)]
                   + [f"u{i}" for i in range(P.nu)])
        for t in range(P.T + 1):
            u = sol.us[t] if t < P.T else np.full(P.nu, np.nan)
            w.writerow([f"{t * P.dt:.6g}", *(f"{x:.10g}" for x in sol.xs[t]),
                        *("" if np.isnan(x) else f"{x:.10g}" for x in u)])


def _plot_convergence(solutions: dict, name, title):
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    best = min((s.cost for s in solutions.values() if np.isfinite(s.cost)), default=0.0)
    for (label, sol), style in zip(solutions.items(), ("-o", "--s", ":^", "-.v")):
        it = [h.iteration for h in sol.history]
        sub = np.maximum(np.array([h.cost for h in sol.history]) - best, 1e-14)
        a1.semilogy(it, sub, style, ms=3, label=label)
        a2.semilogy(it, [h.grad_norm for h in sol.history], style, ms=3, label=label)
    a1.set_ylabel("cost - best final cost")
    a2.set_ylabel("gradient norm |dJ/du|")
    for a in (a1, a2):
        a.set_xlabel("iteration")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, name)


def _plot_trajectory(P, sol, file_name, name):
    plt = pyplot()
    t = np.arange(P.T + 1) * P.dt
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
    axes[0].plot(t, sol.xs[:, :P.nq])
    axes[0].set_ylabel("configuration q [rad, m, quaternion]")
    axes[1].plot(t, sol.xs[:, P.nq:])
    axes[1].set_ylabel("velocity v [rad/s, m/s]")
    axes[2].step(t[:-1], sol.us, where="post")
    axes[2].set_ylabel("control u [N m, N]")
    for a in axes:
        a.set_xlabel("time [s]")
        a.grid(True, alpha=0.3)
    fig.suptitle(f"{name}: {P.info['task']} ({sol.method.upper()}, {sol.status})")
    fig.tight_layout()
    return save_figure(fig, file_name)


COMPARE_COLUMNS = [("problem", "problem"), ("nv", "nv"), ("run", "method, backend"),
                   ("status", "status"), ("iterations", "iterations"), ("cost", "final cost"),
                   ("same_optimum", "|cost - DDP cost| / cost"), ("ms_per_iter", "ms / iteration"),
                   ("total_s", "total [s]"), ("derivatives_pct", "derivatives [%]"),
                   ("backward_pct", "backward pass [%]")]


def compare(name, max_iter=200, runs=COMPARED, log=print, progress=None, show_first=False,
            **options):
    """The runs of ``runs`` on one problem; returns the table rows and the solutions.
    ``show_first``: print the iteration table of the first run; ``progress``: called with
    "problem: run" after each run."""
    rows, sols = [], {}
    for k, (label, method, backend) in enumerate(runs):
        P, sol, wall = run_one(name, method, backend, max_iter, show_first and k == 0, log,
                               warm_up=True, **options)
        if progress:
            progress(f"{name}: {label}")
        h = sol.history
        der = sum(x.t_derivatives for x in h)
        back = sum(x.t_backward for x in h)
        rows.append(dict(problem=name, nv=P.nv, run=label, status=sol.status,
                         iterations=sol.iterations, cost=sol.cost,
                         ms_per_iter=1e3 * wall / max(sol.iterations, 1), total_s=wall,
                         derivatives_pct=100 * der / wall, backward_pct=100 * back / wall))
        sols[label] = sol
        log(f"  {label:26s} {sol.status:18s} {sol.iterations:4d} it  cost {sol.cost:.9g}  "
            f"{wall:7.2f} s")
    _mark_same_optimum(rows, rows[0]["cost"])
    return rows, sols


def _mark_same_optimum(rows, reference_cost):
    """Each row's relative cost difference to the reference (the analytical DDP run)."""
    for r in rows:
        r["same_optimum"] = abs(r["cost"] - reference_cost) / max(abs(reference_cost), 1e-300)


def compare_command(name, max_iter, log=print):
    rows, sols = compare(name, max_iter, log=log, show_first=True)
    extra = crocoddyl_solvers.rows(name, get(name), log)
    _mark_same_optimum(extra, rows[0]["cost"])
    rows += extra
    P = get(name)
    path = _plot_convergence(sols, f"compare_{name}.png", f"{name}: {P.info['task']}")
    write_table(rows, f"compare_{name}", f"{name}: DDP and iLQR, three derivative backends",
                COMPARE_COLUMNS, _compare_notes(), log)
    log(f"wrote {path}")
    return rows


def _compare_notes():
    return ["derivatives [%]: share of the wall time in the batched derivatives of costs and "
            "dynamics (DDP with second_order='tensor': including the full FD-SO tensors); "
            "backward pass [%]: the compiled Riccati pass (DDP with 'contracted': including the "
            "lam-contracted FD-SO at each knot)",
            "|cost - DDP cost| / cost compares each run with the analytical DDP; below 1e-6 means "
            "the same optimum, larger values a different local optimum (reported as measured)",
            f"machine: {os.cpu_count()} cores; times are wall times of one run after an "
            "untimed one-iteration warm-up (compiled kernels loaded, CasADi functions built)",
            "cold start: controls holding x0 (quasi-static), single shooting; Crocoddyl rows (when "
            "SODDP_CROCODDYL_PYTHON names a Python with crocoddyl) solve the same problem, "
            "rebuilt in Crocoddyl, from the same controls and their rollout (FDDP is multiple "
            "shooting; its DDP uses Gauss-Newton Hessians); Crocoddyl's time is the best of 3 "
            "solves"]


def study(quick=False, problems=None, log=print):
    """``soddp study``: :func:`compare` on every problem, one table and the figures."""
    names = list(problems or PROBLEMS)
    max_iter = 150 if quick else 500
    runs_of = {n: (COMPARED if not quick or n in QUICK_BACKEND_PROBLEMS else COMPARED[:2])
               for n in names}
    bar = Progress(sum(len(r) for r in runs_of.values()), "study")
    all_rows, figures = [], []
    for name in names:
        rows, sols = compare(name, max_iter, runs_of[name], log=lambda *a: None,
                             progress=bar.step)
        extra = crocoddyl_solvers.rows(name, get(name), log=lambda *a: None)
        _mark_same_optimum(extra, rows[0]["cost"])
        all_rows += rows + extra
        P = get(name)
        figures.append(_plot_convergence(sols, f"compare_{name}.png", f"{name}: {P.info['task']}"))
    notes = _compare_notes() + [f"max_iter = {max_iter}{' (--quick)' if quick else ''}"]
    if quick:
        notes.append("--quick compares the CasADi and finite-difference backends only on "
                     f"{', '.join(QUICK_BACKEND_PROBLEMS)} (on ATLAS, DDP on CasADi SX tensors "
                     "alone takes minutes); the full study runs every backend on every problem")
    for name in names:
        r = {x["run"]: x for x in all_rows if x["problem"] == name}
        d, i = r["DDP, analytical"], r["iLQR, analytical"]
        verdict = ("same optimum" if i["same_optimum"] < 1e-6 else
                   f"different optima (relative difference {i['same_optimum']:.1e})")
        faster = "DDP" if d["total_s"] < i["total_s"] else "iLQR"
        notes.append(f"{name}: DDP {d['iterations']} iterations / {d['total_s']:.1f} s, iLQR "
                     f"{i['iterations']} / {i['total_s']:.1f} s: {faster} is faster here; "
                     f"{verdict}")
    write_table(all_rows, "study", "DDP versus iLQR on the example problems",
                COMPARE_COLUMNS, notes, log)
    figures.append(_plot_study(all_rows, names))
    log("wrote " + ", ".join(str(p) for p in figures))
    return all_rows


def _plot_study(rows, names):
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(names))
    width = 0.2
    for k, (label, _, _) in enumerate(COMPARED):
        found = {r["problem"]: r for r in rows if r["run"] == label}
        sel = [found.get(n, dict(iterations=np.nan, total_s=np.nan)) for n in names]
        a1.bar(x + (k - 1.5) * width, [r["iterations"] for r in sel], width, label=label)
        a2.bar(x + (k - 1.5) * width, [r["total_s"] for r in sel], width, label=label)
    a1.set_ylabel("iterations to convergence")
    a2.set_ylabel("wall time [s]")
    a2.set_yscale("log")
    for a in (a1, a2):
        a.set_xticks(x)
        a.set_xticklabels([n.replace("_", "\n") for n in names])
        a.grid(True, axis="y", alpha=0.3)
    a1.legend(fontsize=8)
    fig.suptitle("DDP versus iLQR (and DDP with CasADi / finite-difference derivatives)")
    fig.tight_layout()
    return save_figure(fig, "study.png")
