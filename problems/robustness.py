"""The globalization study and the robustness study of ``soddp study``.

* :func:`globalization_study`: every example problem solved by DDP and iLQR under each
  globalization (:mod:`ddp.globalization`), single and multiple shooting, beside Crocoddyl's FDDP
  and DDP; plus the cold start (xs = x0 at every knot, us = 0) where multiple shooting matters.
* :func:`robustness_study`: seeded random instances of five problem families (random initial
  states or targets), DDP and iLQR with the default and the pure ("shift") globalization.

One solve is one *task*: a dict (problem or family, seed, method, globalization, shooting,
start) and :func:`run_task` is a pure function of it (the same task gives the same numbers on any
machine), so that the tasks can be farmed out.
"""

from __future__ import annotations

import os
import time

import numpy as np

import ddp
from ddp.globalization import GLOBALIZATIONS

from .examples import PROBLEMS, UR3_TARGET_POSITION, get
from .output import Progress, pyplot, save_figure, write_table
from .reference import crocoddyl_solvers

#: random instances: family -> (what is random, problem of a seed)
FAMILIES = {
    "pendulum": "initial angle hanging +- 1 rad, velocity +- 1 rad/s",
    "double_pendulum": "initial angles hanging +- 0.5 rad, velocities +- 0.5 rad/s",
    "ur3": "target position +- 10 cm in each axis",
    "hyq": "final trunk yaw in +- 0.5 rad",
    "atlas": "final pelvis yaw in +- 0.3 rad",
}


def instance(family: str, seed: int):
    """The random instance ``seed`` of a problem family (seed 0 of every family is random too;
    the example problem itself is :func:`problems.get`)."""
    rng = np.random.default_rng([seed, 7919])
    if family in ("pendulum", "double_pendulum"):
        x0 = get(family).x0.copy()
        n = x0.size // 2
        spread = 1.0 if n == 1 else 0.5
        x0[:n] += rng.uniform(-spread, spread, n)
        x0[n:] = rng.uniform(-spread, spread, n)
        return get(family, x0=x0)
    if family == "ur3":
        return get("ur3", target=UR3_TARGET_POSITION + rng.uniform(-0.1, 0.1, 3))
    if family == "hyq":
        return get("hyq", angle=float(rng.uniform(-0.5, 0.5)))
    if family == "atlas":
        return get("atlas", angle=float(rng.uniform(-0.3, 0.3)))
    raise ValueError(f"family: expected one of {', '.join(FAMILIES)}; got {family!r}")


def tail_ratio(grad_norms) -> float:
    """The last ratio of successive gradient norms (small: a quadratic tail; about constant over
    the last iterations: linear)."""
    g = np.asarray(grad_norms, dtype=float)
    return float(g[-1] / g[-2]) if g.size >= 2 and g[-2] > 0 else float("nan")


def run_task(task: dict) -> dict:
    """Solve one task; returns the task with status, iterations, cost, wall time, tail ratio
    and the gradient norms.  Keys: ``problem`` (an example) or ``family`` and ``seed``;
    ``method``; ``globalization``; ``shooting``; ``start`` ("quasi-static" or "cold":
    xs = x0 at every knot, us = 0); ``max_iter``; ``warm_up`` (default True: an untimed
    one-iteration solve first)."""
    P = instance(task["family"], task["seed"]) if "family" in task else get(task["problem"])
    xs = us = None
    if task.get("start", "quasi-static") == "cold":
        xs, us = np.tile(P.x0, (P.T + 1, 1)), np.zeros((P.T, P.nu))
    settings = dict(method=task["method"], globalization=task["globalization"],
                    shooting=task.get("shooting", "single"), max_iter=task.get("max_iter", 300))
    if task.get("warm_up", True):  # untimed: loads compiled kernels, builds CasADi functions
        ddp.solve(P, xs, us, max_iter=1, **{k: v for k, v in settings.items() if k != "max_iter"})
    t0 = time.perf_counter()
    sol = ddp.solve(P, xs, us, **settings)
    wall = time.perf_counter() - t0
    return dict(task, nv=P.nv, status=sol.status, converged=sol.converged,
                iterations=sol.iterations, cost=sol.cost, time_s=wall,
                tail=tail_ratio(sol.grad_norms), grad_norms=sol.grad_norms.tolist(),
                costs=sol.costs.tolist(),
                exact_iterations=sum(h.exact for h in sol.history))


GLOB_COLUMNS = [("problem", "problem"), ("nv", "nv"), ("shooting", "shooting"),
                ("start", "start"), ("method", "method"), ("globalization", "globalization"),
                ("status", "status"), ("iterations", "iterations"), ("cost", "final cost"),
                ("same_optimum", "|cost - best| / best"), ("time_s", "time [s]"),
                ("tail", "last g_k+1 / g_k")]


def globalization_study(names=None, max_iter=300, log=print):
    """Every example problem, both methods, every globalization, both shootings (quasi-static
    start), Crocoddyl beside; the cold start on UR3 and the pendubot.  Writes
    ``results/globalization.{csv,md}`` and the cost-per-iteration figure."""
    names = list(names or PROBLEMS)
    tasks = [dict(problem=n, method=m, globalization=g, shooting=sh, start="quasi-static",
                  max_iter=max_iter)
             for n in names for sh in ("single", "multiple") for m in ("ddp", "ilqr")
             for g in GLOBALIZATIONS]
    cold = [n for n in ("ur3", "pendubot") if n in names]
    tasks += [dict(problem=n, method=m, globalization=g, shooting="multiple", start="cold",
                   max_iter=max_iter)
              for n in cold for m in ("ddp", "ilqr") for g in ("safeguarded", "crocoddyl")]
    bar = Progress(len(tasks) + len(names) + len(cold), "globalizations")
    rows = []
    for t in tasks:
        rows.append(run_task(t))
        bar.step(f"{t['problem']} {t['method']} {t['globalization']}")
    for n in names:
        rows += _crocoddyl_rows(n, "quasi-static")
        bar.step(f"{n} Crocoddyl")
    for n in cold:
        rows += _crocoddyl_rows(n, "cold")
        bar.step(f"{n} Crocoddyl cold")
    for n in names:
        best = min(r["cost"] for r in rows if r["problem"] == n and np.isfinite(r["cost"]))
        for r in rows:
            if r["problem"] == n:
                r["same_optimum"] = abs(r["cost"] - best) / max(abs(best), 1e-300)
    notes = _glob_notes(rows, names, cold, max_iter)
    write_table(rows, "globalization", "Globalization strategies and multiple shooting",
                GLOB_COLUMNS, notes, log)
    path = _plot_costs(rows, names)
    log(f"wrote {path}")
    return rows


def _crocoddyl_rows(name, start):
    P = get(name)
    xs = us = None
    if start == "cold":
        xs, us = np.tile(P.x0, (P.T + 1, 1)), np.zeros((P.T, P.nu))
    out = []
    for label, x in crocoddyl_solvers.solve(P, us, log=lambda *a: None, xs=xs).items():
        out.append(dict(problem=name, nv=P.nv, method=label.replace("Crocoddyl ", "").lower(),
                        globalization=f"Crocoddyl {x['version']}",
                        shooting="multiple", start=start,
                        status="converged" if x["converged"] else "not converged",
                        iterations=x["iterations"], cost=x["cost"], time_s=x["total_s"],
                        tail=float("nan"), costs=x["costs"]))
    return out


def _find(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def _glob_notes(rows, names, cold, max_iter):
    notes = ["each solve after an untimed one-iteration warm-up; quasi-static start: the controls "
             "holding x0 and their rollout (multiple shooting from the same xs: no gaps); cold "
             "start: xs = x0 at every knot, us = 0 (gaps); Crocoddyl rows: FDDP and DDP 3.2.1 "
             "(Gauss-Newton) from the same start, time the best of 3",
             "tail: g_{k+1} / g_k at the last iteration (quadratic convergence makes it tiny)",
             f"max_iter = {max_iter}; Crocoddyl's cost curve starts after its first iteration",
             f"machine: {os.cpu_count()} cores"]
    for n in names:
        it = {(m, g): _find(rows, problem=n, method=m, globalization=g, shooting="single")
              for m in ("ddp", "ilqr") for g in ("safeguarded", "shift")}
        d, i, p = it["ddp", "safeguarded"], it["ilqr", "safeguarded"], it["ddp", "shift"]
        if d and i and p:
            its = lambda r: f"{r['iterations']}" + ("" if r["converged"] else f" ({r['status']})")
            notes.append(f"{n}: default (safeguarded) DDP {its(d[0])} iterations, "
                         f"iLQR {its(i[0])}; pure DDP (shift) {its(p[0])}")
    for n in cold:
        ours = _find(rows, problem=n, start="cold", globalization="safeguarded")
        croc = [r for r in _find(rows, problem=n, start="cold") if "Crocoddyl" in
                r["globalization"]]
        text = ", ".join(f"{r['method'].upper()} {r['iterations']} it (cost {r['cost']:.6g})"
                         for r in ours + croc)
        notes.append(f"{n} from the cold start, multiple shooting: {text}")
    return notes


def _plot_costs(rows, names):
    plt = pyplot()
    fig, axes = plt.subplots(1, len(names), figsize=(3.2 * len(names), 3.2))
    for a, n in zip(np.atleast_1d(axes), names):
        best = min(r["cost"] for r in rows if r["problem"] == n)
        for label, sel in (("DDP (safeguarded)", dict(method="ddp", globalization="safeguarded")),
                           ("iLQR", dict(method="ilqr", globalization="safeguarded")),
                           ("pure DDP (shift)", dict(method="ddp", globalization="shift"))):
            r = _find(rows, problem=n, shooting="single", start="quasi-static", **sel)
            if r:
                c = np.asarray(r[0]["costs"]) - best
                a.semilogy(np.maximum(c, 1e-16), label=label)
        croc = [r for r in _find(rows, problem=n, start="quasi-static", method="fddp")]
        if croc:
            a.semilogy(np.maximum(np.asarray(croc[0]["costs"]) - best, 1e-16), "k--",
                       label="Crocoddyl FDDP")
        a.set_title(n)
        a.set_xlabel("iteration")
        a.grid(True, alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("cost - best cost")
    labels = {}
    for a in np.atleast_1d(axes):
        for h, lab in zip(*a.get_legend_handles_labels()):
            labels.setdefault(lab, h)
    fig.legend(labels.values(), labels.keys(), loc="upper center", ncol=len(labels), fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return save_figure(fig, "globalization.png")


ROBUST_COLUMNS = [("family", "family"), ("method", "method"), ("globalization", "globalization"),
                  ("instances", "instances"), ("success", "converged [%]"),
                  ("it_median", "iterations: median"), ("it_iqr", "iterations: IQR"),
                  ("time_median", "time [s]: median"), ("time_iqr", "time [s]: IQR"),
                  ("differ", "DDP and iLQR optima differ [%]"),
                  ("lower", "lower optimum (DDP / iLQR / -)")]


def robustness_study(instances=20, families=None, max_iter=300, log=print):
    """Random instances of every family, DDP and iLQR, default and pure globalization.
    Writes ``results/robustness.{csv,md,png}``; returns (summary rows, task records)."""
    families = list(families or FAMILIES)
    combos = (("ddp", "safeguarded"), ("ilqr", "safeguarded"), ("ddp", "shift"),
              ("ilqr", "shift"))
    tasks = [dict(family=f, seed=s, method=m, globalization=g, max_iter=max_iter,
                  warm_up=s == 0)
             for f in families for s in range(instances) for m, g in combos]
    bar = Progress(len(tasks), "robustness")
    records = []
    for t in tasks:
        records.append(run_task(t))
        bar.step(f"{t['family']} #{t['seed']} {t['method']} {t['globalization']}")
    rows = []
    for f in families:
        for m, g in combos:
            rs = _find(records, family=f, method=m, globalization=g)
            it = np.array([r["iterations"] for r in rs if r["converged"]], dtype=float)
            tm = np.array([r["time_s"] for r in rs if r["converged"]], dtype=float)
            q = lambda x, p: float(np.percentile(x, p)) if x.size else float("nan")
            row = dict(family=f, method=m, globalization=g, instances=len(rs),
                       success=100.0 * np.mean([r["converged"] for r in rs]),
                       it_median=q(it, 50), it_iqr=q(it, 75) - q(it, 25), time_median=q(tm, 50),
                       time_iqr=q(tm, 75) - q(tm, 25), differ="", lower="")
            if m == "ddp":
                pairs = [(r, _find(records, family=f, seed=r["seed"], method="ilqr",
                                   globalization=g)[0]) for r in rs]
                diff = [(d, i) for d, i in pairs
                        if abs(d["cost"] - i["cost"]) > 1e-6 * max(abs(i["cost"]), 1e-12)]
                row["differ"] = 100.0 * len(diff) / len(pairs)
                row["lower"] = (f"{sum(d['cost'] < i['cost'] for d, i in diff)} / "
                                f"{sum(i['cost'] < d['cost'] for d, i in diff)} / "
                                f"{len(pairs) - len(diff)}")
            rows.append(row)
    notes = [f"{instances} seeded instances per family (seed s: numpy default_rng([s, 7919])); "
             "random: " + "; ".join(f"{f}: {FAMILIES[f]}" for f in families),
             "single shooting from the quasi-static controls; converged: gradient norm below "
             f"1e-6 within {max_iter} iterations; medians and IQR over the converged instances",
             "optima differ: final costs differ by more than 1e-6 relative; 'lower' counts the "
             "instances where DDP's / iLQR's optimum is lower, and where they are the same"]
    write_table(rows, "robustness", "DDP versus iLQR over random instances", ROBUST_COLUMNS,
                notes, log)
    path = _plot_robustness(records, families, combos)
    log(f"wrote {path}")
    return rows, records


def _plot_robustness(records, families, combos):
    plt = pyplot()
    fig, a = plt.subplots(figsize=(10, 4))
    labels = {("ddp", "safeguarded"): "DDP", ("ilqr", "safeguarded"): "iLQR",
              ("ddp", "shift"): "pure DDP (shift)", ("ilqr", "shift"): "iLQR (shift)"}
    width = 0.8 / len(combos)
    for k, (m, g) in enumerate(combos):
        data = [[r["iterations"] for r in _find(records, family=f, method=m, globalization=g)]
                for f in families]
        pos = np.arange(len(families)) + (k - (len(combos) - 1) / 2) * width
        bp = a.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True,
                       manage_ticks=False)
        for b in bp["boxes"]:
            b.set_facecolor(f"C{k}")
        a.plot([], [], "s", color=f"C{k}", label=labels[m, g])
    a.set_xticks(np.arange(len(families)))
    a.set_xticklabels([f.replace("_", " ") for f in families])
    a.set_yscale("log")
    a.set_ylabel("iterations (random instances)")
    a.grid(True, axis="y", alpha=0.3)
    a.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, "robustness.png")
