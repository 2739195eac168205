"""Solve, compare and the backends study: one solve of an example problem, a side-by-side
comparison of methods and derivative backends on one problem (tasks of :mod:`problems.tasks`),
and the same comparison on every problem as tasks of ``soddp study`` whose table and figures are
computed from the records alone.  Tables and figures go to ``results/``
(:mod:`problems.output`).
"""

from __future__ import annotations

import csv
import os
import time

import numpy as np
import pinocchio as pin

import ddp

from .examples import BACKENDS, PROBLEMS, backends_of, default_start, get, initial_guess
from .output import duration, pyplot, results_dir, save_figure, tight_layout, write_table
from .reference import crocoddyl_solvers
from .tasks import SOLVERS, provenance, reportable, run_task, settings_note, task

#: problems on which ``soddp study --quick`` also runs the CasADi and finite-difference backends
QUICK_BACKEND_PROBLEMS = ("pendulum", "double_pendulum", "ur3")

#: the comparison of ``soddp compare``: (label, method, backend)
COMPARED = (("DDP, analytical", "ddp", "analytical"), ("iLQR, analytical", "ilqr", "analytical"),
            ("DDP, CasADi AD", "ddp", "casadi"), ("DDP, finite differences", "ddp", "finite-diff"))


def _describe(name, P, method, backend, settings=None):
    """The line that introduces a solve: the problem, its task, the method and the backend."""
    extra = "".join(f", {k} {v}" for k, v in (settings or {}).items())
    return f"{name}: {P.info['task']}; {P!r}; {method.upper()} with the {backend} backend{extra}"


def run_one(name, method="ddp", backend="analytical", max_iter=200, verbose=True, log=print,
            settings=None, start=None, **options):
    """Solve one example problem; returns (problem, Solution, wall time of the solve in s: the
    kernels are loaded, or on a first run compiled, before, untimed; that time is logged when
    it is more than a second).  ``settings``: more solver settings by name (a ``shooting`` of
    None or left out: the problem's, :func:`~problems.examples.default_start`); ``start``: one
    of :data:`~problems.examples.STARTS` (None: the problem's); ``options``: options of the
    problem."""
    P = get(name, backend=backend, **options)
    settings = {k: v for k, v in (settings or {}).items() if v is not None}
    own_start, own_shooting = default_start(name)
    start = own_start if start is None else start
    settings.setdefault("shooting", own_shooting)
    if verbose:
        log(_describe(name, P, method, backend, dict(settings, start=start)))
    t0 = time.perf_counter()
    P.prepare()
    t1 = time.perf_counter()
    if verbose and t1 - t0 > 1.0:
        log(f"kernels loaded or compiled in {t1 - t0:.1f} s (not part of the solve's time)")
    xs, us = initial_guess(P, start)  # as Crocoddyl's quasiStatic: not part of the solve
    t1 = time.perf_counter()
    sol = ddp.solve(P, xs, us, method=method, max_iter=max_iter, verbose=verbose, **settings)
    return P, sol, time.perf_counter() - t1


def solve_command(name, method, backend, max_iter, plot, log=print, settings=None,
                  animate=False, start=None):
    """``soddp solve``: the iteration table, the status, a convergence plot and the trajectory.
    ``settings``: more solver settings by name (e.g. globalization, shooting); ``start`` as for
    :func:`run_one`; ``animate``: also the motion as an HTML animation (:func:`ddp.animate`)."""
    P, sol, wall = run_one(name, method, backend, max_iter, True, log, settings=settings,
                           start=start)
    stem = f"solve_{name}_{method}_{backend}"
    csv_path = results_dir() / f"{stem}_trajectory.csv"
    _write_trajectory(P, sol, csv_path)
    curves = {f"{method.upper()}, {backend}": (sol.costs, sol.grad_norms)}
    written = [_plot_convergence(curves, f"{stem}.png", f"{name}: {P.info['task']}"), csv_path]
    if plot:
        written.append(_plot_trajectory(P, sol, f"{stem}_trajectory.png", name))
    if animate:
        written.append(ddp.animate(P, sol, results_dir() / f"{stem}_animation.html"))
    log(f"{sol.status}: cost {sol.cost:.9g}, {sol.iterations} iterations, {wall:.2f} s")
    log("wrote " + ", ".join(str(p) for p in written))
    return sol


def _columns(P):
    """The trajectory's column names: q_<coordinate>, v_<coordinate>, u_<actuated coordinate>
    (a control driving one velocity coordinate is named after it), or q0.., v0.., u0.. for a
    system without a robot model."""
    model = P.dynamics.model
    if model is None:
        return ([f"q{i}" for i in range(P.nq)] + [f"v{i}" for i in range(P.nv)]
                + [f"u{i}" for i in range(P.nu)])
    qn, vn = model.coordinate_names
    B = np.asarray(P.integrator.B)
    un = [f"u_{vn[int(np.argmax(np.abs(b)))]}" if np.count_nonzero(b) == 1 else f"u{k}"
          for k, b in enumerate(B.T)]
    return [f"q_{n}" for n in qn] + [f"v_{n}" for n in vn] + un


def _write_trajectory(P, sol, path):
    """t, the states, the controls and, on a problem with contacts, each contact frame's force
    in the world's axes (``f_<frame>_x, _y, _z``, and ``_tx, _ty, _tz`` for a flat foot's
    torque; at an impact its impulse; empty where the frame is not in contact)."""
    forces = (P.contact_forces(sol.xs, sol.us)
              if any(cs is not None for cs in P.contact_sets) else {})
    axes = ("x", "y", "z", "tx", "ty", "tz")
    force_columns = [f"f_{frame}_{axes[k]}" for frame, f in forces.items()
                     for k in range(f.shape[1])]
    cell = lambda x: "" if np.isnan(x) else f"{x:.10g}"  # noqa: E731
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t"] + _columns(P) + force_columns)
        for t in range(P.T + 1):
            u = sol.us[t] if t < P.T else np.full(P.nu, np.nan)
            lam = [cell(x) for g in forces.values() for x in
                   (g[t] if t < P.T else np.full(g.shape[1], np.nan))]
            w.writerow([f"{t * P.dt:.6g}", *(f"{x:.10g}" for x in sol.xs[t]),
                        *(cell(x) for x in u), *lam])


def _plot_convergence(curves: dict, name, title):
    """Cost above the best and gradient norm per iteration; ``curves``: label -> (costs,
    gradient norms), one entry per iteration."""
    plt = pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    finals = [c[-1] for c, _ in curves.values() if len(c) and np.isfinite(c[-1])]
    best = min(finals, default=0.0)
    for (label, (costs, grads)), style in zip(curves.items(), ("-o", "--s", ":^", "-.v")):
        sub = np.maximum(np.asarray(costs, dtype=float) - best, 1e-14)
        a1.semilogy(np.arange(len(sub)), sub, style, ms=3, label=label)
        a2.semilogy(np.arange(len(grads)), grads, style, ms=3, label=label)
    a1.set_ylabel("cost - best final cost")
    a2.set_ylabel("gradient norm |dJ/du|")
    for a in (a1, a2):
        a.set_xlabel("iteration")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(title)
    tight_layout(fig)
    return save_figure(fig, name)


def _labelled_curves(ax, t, Y, labels, ylabel, step=False):
    """Curves of Y (len(t), k) labelled by coordinate (a legend of several columns when many)."""
    for y, label in zip(np.asarray(Y).T, labels):
        (ax.step(t, y, where="post", label=label, lw=1) if step else
         ax.plot(t, y, label=label, lw=1))
    ax.set_ylabel(ylabel)
    if labels:
        ax.legend(fontsize=5 if len(labels) > 8 else 7, ncol=max(1, -(-len(labels) // 10)),
                  loc="best")


def _plot_trajectory(P, sol, file_name, name):
    """The trajectory by groups: a floating base's position, orientation (roll, pitch, yaw) and
    velocities apart from the joints, each curve labelled with its coordinate's name, and the
    contact forces' normal components of a problem with contacts."""
    plt = pyplot()
    t, tu = np.arange(P.T + 1) * P.dt, np.arange(P.T) * P.dt
    cols = _columns(P)
    qn, vn, un = cols[:P.nq], cols[P.nq:P.nq + P.nv], cols[P.nq + P.nv:]
    Q, V = sol.xs[:, :P.nq], sol.xs[:, P.nq:]
    model = P.dynamics.model
    base = model is not None and model.has_free_flyer
    contacts = any(cs is not None for cs in P.contact_sets)
    if not base:
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.8))
        _labelled_curves(axes[0], t, Q, qn, "configuration q [rad, m]")
        _labelled_curves(axes[1], t, V, vn, "velocity v [rad/s, m/s]")
        _labelled_curves(axes[2], tu, sol.us, un, "control u [N m, N]", step=True)
    else:
        fig, grid = plt.subplots(2, 4 if contacts else 3, figsize=(17 if contacts else 13, 7))
        rpy = np.array([pin.rpy.matrixToRpy(pin.Quaternion(q[3:7]).toRotationMatrix())
                        for q in Q])
        plot = _labelled_curves
        plot(grid[0, 0], t, Q[:, :3], ["x", "y", "z"], "base position [m]")
        plot(grid[0, 1], t, np.unwrap(rpy, axis=0), ["roll", "pitch", "yaw"],
             "base orientation [rad]")
        plot(grid[0, 2], t, Q[:, 7:], [n[2:] for n in qn[7:]], "joint positions [rad]")
        plot(grid[1, 0], t, V[:, :6], ["vx", "vy", "vz", "wx", "wy", "wz"],
             "base velocity (local) [m/s, rad/s]")
        plot(grid[1, 1], t, V[:, 6:], [n[2:] for n in vn[6:]], "joint velocities [rad/s]")
        plot(grid[1, 2], tu, sol.us, [n[2:] for n in un], "joint torques u [N m]", step=True)
        if contacts:
            forces = P.contact_forces(sol.xs, sol.us)
            normal = np.column_stack([f[:, 2] for f in forces.values()])
            impacts = np.concatenate([np.full(p.knots, p.impact) for p in P.phases])
            normal[impacts] = np.nan  # an impulse [N s], not a force
            _labelled_curves(grid[1, 3], tu, normal, list(forces),
                             "contact force, normal [N] (impacts left out)")
            grid[0, 3].axis("off")
        axes = grid.ravel()
    for a in axes:
        if a.axison:
            a.set_xlabel("time [s]")
            a.grid(True, alpha=0.3)
    fig.suptitle(f"{name}: {P.info['task']} ({sol.method.upper()}, {sol.status})")
    tight_layout(fig)
    return save_figure(fig, file_name)


COMPARE_COLUMNS = [("problem", "problem"), ("nv", "nv"), ("run", "method, backend"),
                   ("status", "status"), ("iterations", "iterations"), ("cost", "final cost"),
                   ("same_optimum", "|cost - DDP cost| / cost"), ("ms_per_iter", "ms / iteration"),
                   ("total_s", "total [s]"), ("derivatives_pct", "derivatives [%]"),
                   ("backward_pct", "backward pass [%]")]


def backends_tasks(names=None, max_iter=500, runs_of=None, methods=SOLVERS["soddp"],
                   settings=None, crocoddyl=None):
    """The comparison of :data:`COMPARED` on every problem of ``names`` (default: all) as tasks;
    ``runs_of``: problem -> the runs to make (default: all of COMPARED); Crocoddyl's FDDP and DDP
    beside when ``crocoddyl`` (None: when ``SODDP_CROCODDYL_PYTHON`` is set)."""
    names = list(names or PROBLEMS)
    tasks = []
    for n in names:
        tasks += [task(part="backends", problem=n, method=m, backend=b, max_iter=max_iter,
                       settings=settings or {})
                  for _, m, b in (runs_of or {}).get(n, COMPARED)
                  if m in methods and b in backends_of(n)]
        if crocoddyl if crocoddyl is not None else crocoddyl_solvers.python():
            tasks += crocoddyl_tasks(n, 200)
    return tasks


#: the starts Crocoddyl's rows run from; the table keeps each solver's better run
CROCODDYL_STARTS = ("quasi-static", "crocoddyl")


def crocoddyl_tasks(name, max_iter):
    """Crocoddyl's FDDP and DDP on the problem ``name`` from each of :data:`CROCODDYL_STARTS`
    (the quasi-static rollout and Crocoddyl's examples' start)."""
    return [task(part="backends", problem=name, solver="crocoddyl", method=m, start=start,
                 max_iter=max_iter) for start in CROCODDYL_STARTS for m in SOLVERS["crocoddyl"]]


def _run_label(record):
    if record["solver"] == "crocoddyl":
        version = record["versions"].get("crocoddyl", "")
        start = "x0" if record["start"] == "crocoddyl" else record["start"]
        return f"Crocoddyl {record['method'].upper()} {version}".strip() + f" (from {start})"
    label = {(m, b): lab for lab, m, b in COMPARED}.get((record["method"], record["backend"]))
    return label or f"{record['method'].upper()}, {record['backend']}"


def compare_rows(records):
    """The comparison table's rows from task records: per run, status, iterations, cost, time
    per iteration and the shares of derivatives and backward pass; ``same_optimum`` compares
    each with the analytical DDP run of its problem.  Of Crocoddyl's runs of a solver from
    several starts the better one is kept (:func:`_better_crocoddyl_runs`)."""
    rows = []
    for r in _better_crocoddyl_runs(records):
        if r.get("iterations") is None:
            rows.append(dict(problem=r["problem"], nv=r.get("nv"), run=_run_label(r),
                             status=r["status"]))
            continue
        wall, its = r["time_s"], max(r["iterations"], 1)
        row = dict(problem=r["problem"], nv=r["nv"], run=_run_label(r), status=r["status"],
                   iterations=r["iterations"], cost=r["cost"], ms_per_iter=1e3 * wall / its,
                   total_s=wall, converged=r["converged"], costs=r["costs"],
                   grad_norms=r["grad_norms"])
        if r["solver"] == "soddp":
            row.update(derivatives_pct=100 * r["t_derivatives"] / wall,
                       backward_pct=100 * r["t_backward"] / wall)
        rows.append(row)
    for n in {r["problem"] for r in rows}:
        ref = [r for r in rows if r["problem"] == n and r["run"] == COMPARED[0][0]
               and r.get("cost") is not None]
        if ref:
            _mark_same_optimum([r for r in rows if r["problem"] == n and r.get("cost") is not None],
                               ref[0]["cost"])
    return rows


def compare(name, max_iter=200, runs=COMPARED, log=print, show_first=False, crocoddyl=False):
    """The runs of ``runs`` on one problem, in this process (and Crocoddyl's FDDP and DDP if
    ``crocoddyl`` and configured); returns the table rows.  ``show_first``: print the iteration
    table of the first run."""
    tasks = [task(part="backends", problem=name, method=m, backend=b, max_iter=max_iter)
             for _, m, b in runs if b in backends_of(name)]
    if crocoddyl and crocoddyl_solvers.python():
        tasks += crocoddyl_tasks(name, max_iter)
    protocol = any(b != "analytical" for _, _, b in runs if b in backends_of(name))
    problem = get(name) if show_first or protocol else None  # built once (HyQ walking: 1 s)
    if show_first:
        log(_describe(name, problem, tasks[0]["method"], tasks[0]["backend"]))
    if protocol:
        # on a first run the process aside compiles the solver's passes (and DDP's contracted
        # terms) and the protocol path's kernels, while this one compiles the knots'
        # derivatives and the closed-loop rollout with its cost
        if ddp.warm_up.ASIDE.start(ddp.warm_up.groups_of(problem, protocol=True)):
            # matplotlib now (0.5-0.8 s), for the plot of the rows: this process finishes its
            # own compile 2-4 s before the process aside, and then waits for it anyway
            pyplot()
    records = []
    for k, t in enumerate(tasks):
        record = run_task(t, verbose=show_first and k == 0)
        if not reportable([record]):  # Crocoddyl cannot write this problem
            continue
        records.append(record)
        r = compare_rows([record])[0]
        log(f"  {r['run']:26s} {r['status']:18s} {r.get('iterations', 0):4d} it  cost "
            f"{r.get('cost', np.nan):.9g}  {r.get('total_s', np.nan):7.2f} s")
    return compare_rows(records)


def _better_crocoddyl_runs(records):
    """``records`` with, for each problem and Crocoddyl solver, only its better run over the
    starts (:func:`~problems.reference.crocoddyl_solvers.better_run`)."""
    best = {}
    for r in records:
        if r["solver"] == "crocoddyl" and r.get("iterations") is not None:
            key = (r["problem"], r["method"])
            best[key] = crocoddyl_solvers.better_run(best.get(key), r, "time_s")
    kept = []
    for r in records:
        key = (r["problem"], r["method"])
        if r["solver"] != "crocoddyl":
            kept.append(r)
        elif r.get("iterations") is None:  # no numbers: shown when no run of it has any
            if key not in best:
                kept.append(r)
        elif best[key] is r:
            kept.append(r)
    return kept


def _mark_same_optimum(rows, reference_cost):
    """Each row's relative cost difference to the reference (the analytical DDP run)."""
    for r in rows:
        r["same_optimum"] = abs(r["cost"] - reference_cost) / max(abs(reference_cost), 1e-300)


def _curves(rows):
    return {r["run"]: (r["costs"], r["grad_norms"]) for r in rows
            if r.get("grad_norms") and not r["run"].startswith("Crocoddyl")}


def compare_command(name, max_iter, log=print):
    rows = compare(name, max_iter, log=log, show_first=True, crocoddyl=True)
    P = get(name)
    path = _plot_convergence(_curves(rows), f"compare_{name}.png", f"{name}: {P.info['task']}")
    notes, title = _compare_notes(), f"{name}: DDP and iLQR, three derivative backends"
    if backends_of(name) != BACKENDS:
        title = f"{name}: DDP and iLQR on the analytical derivatives"
        notes.append(f"the CasADi AD and finite-difference rows are left out on the problems "
                     f"with contacts (the AD baseline takes minutes per gait); `soddp solve "
                     f"{name} --backend casadi` (or finite-diff) solves it on one of them")
    write_table(rows, f"compare_{name}", title, COMPARE_COLUMNS, notes, log)
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
            "untimed one-iteration warm-up as configured and one with the exact model from the "
            "first iteration (compiled kernels loaded, CasADi functions built)",
            "start: ours the problem's (problems.examples.default_start): on the gaits "
            "Crocoddyl's examples' start (x0 at every knot, the controls holding it) with "
            "multiple shooting, on the others the controls holding x0 and their rollout with "
            "single shooting; Crocoddyl rows (when SODDP_CROCODDYL_PYTHON names a Python with "
            "crocoddyl) solve the same problem, rebuilt in Crocoddyl, from both starts, and each "
            "solver's better run is shown, its start named (FDDP is multiple shooting; its DDP "
            "uses Gauss-Newton Hessians); Crocoddyl's time is the best of 3 solves"]


def backends_report(records, log=print):
    """The study table (``results/study.{csv,md}``), one convergence figure per problem
    (``compare_PROBLEM.png``) and the summary figure from the records of backends tasks;
    returns the rows."""
    records = reportable(r for r in records if r["part"] == "backends")
    names = [n for n in PROBLEMS if any(r["problem"] == n for r in records)]
    all_rows, figures = [], []
    for n in names:
        rows = compare_rows([r for r in records if r["problem"] == n])
        order = {label: k for k, (label, _, _) in enumerate(COMPARED)}
        rows.sort(key=lambda r: order.get(r["run"], len(COMPARED)))
        all_rows += rows
        P = get(n)
        figures.append(_plot_convergence(_curves(rows), f"compare_{n}.png",
                                         f"{n}: {P.info['task']}"))
    max_iter = max((r["max_iter"] for r in records if r["solver"] == "soddp"), default=0)
    notes = _compare_notes() + [f"max_iter = {max_iter}", settings_note(records),
                                provenance(records)]
    partial = [n for n in names if len({r["run"] for r in all_rows if r["problem"] == n})
               < len(COMPARED)]
    if partial:
        notes.append("not every backend ran on " + ", ".join(partial) + " (soddp study --quick "
                     "runs the CasADi and finite-difference backends only on "
                     f"{', '.join(QUICK_BACKEND_PROBLEMS)}: on ATLAS, DDP on CasADi SX tensors "
                     "alone takes minutes)")
    for n in names:
        r = {x["run"]: x for x in all_rows if x["problem"] == n}
        d, i = r.get("DDP, analytical"), r.get("iLQR, analytical")
        if not (d and i and d.get("cost") is not None and i.get("cost") is not None):
            continue
        verdict = ("same optimum" if i["same_optimum"] < 1e-6 else
                   f"different optima (relative difference {i['same_optimum']:.1e})")
        faster = "DDP" if d["total_s"] < i["total_s"] else "iLQR"
        notes.append(f"{n}: DDP {d['iterations']} iterations / {duration(d['total_s'])}, iLQR "
                     f"{i['iterations']} / {duration(i['total_s'])}: {faster} is faster here; "
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
        a1.bar(x + (k - 1.5) * width, [r.get("iterations", np.nan) for r in sel], width,
               label=label)
        a2.bar(x + (k - 1.5) * width, [r.get("total_s", np.nan) for r in sel], width,
               label=label)
    a1.set_ylabel("iterations to convergence")
    a2.set_ylabel("wall time [s]")
    a2.set_yscale("log")
    for a in (a1, a2):
        a.set_xticks(x)
        a.set_xticklabels([n.replace("_", " ") for n in names], rotation=30, ha="right",
                          fontsize=8)
        a.grid(True, axis="y", alpha=0.3)
    a1.legend(fontsize=8)
    fig.suptitle("DDP versus iLQR (and DDP with CasADi / finite-difference derivatives)")
    tight_layout(fig)
    return save_figure(fig, "study.png")
