"""The globalization study and the robustness study of ``soddp study``: their tasks, and their
tables and figures computed from the task records alone (:mod:`problems.store`).

* globalization: every example problem solved by DDP and iLQR under each globalization
  (:mod:`ddp.globalization`), single and multiple shooting, beside Crocoddyl's FDDP and DDP; plus
  the cold start (xs = x0 at every knot, us = 0) where multiple shooting matters.
* robustness: seeded random instances of five problem families (random initial states or
  targets, :data:`problems.tasks.FAMILIES`), DDP and iLQR with the default and the pure
  ("shift") globalization.
"""

from __future__ import annotations

import os

import numpy as np

from ddp.globalization import GLOBALIZATIONS

from .examples import PROBLEMS
from .output import pyplot, save_figure, tight_layout, write_table
from .reference import crocoddyl_solvers
from .tasks import FAMILIES, SOLVERS, provenance, reportable, settings_note, task

#: the cold start is studied on these problems (multiple shooting's gaps matter there)
COLD_PROBLEMS = ("ur3", "pendubot")
#: the robustness study's (method, globalization) pairs
COMBOS = (("ddp", "safeguarded"), ("ilqr", "safeguarded"), ("ddp", "shift"), ("ilqr", "shift"))
#: Crocoddyl's row of the robustness study: its FDDP (the globalization field keeps its default)
CROCODDYL_COMBO = ("fddp", "safeguarded")


def globalization_tasks(names=None, max_iter=300, methods=SOLVERS["soddp"], settings=None,
                        crocoddyl=None):
    """Every problem of ``names`` (default: all), ``methods``, every globalization, single and
    multiple shooting from the problem's start (:func:`problems.examples.default_start`: the
    same controls either way); the safeguarded and Crocoddyl-like
    globalizations from the cold start on :data:`COLD_PROBLEMS`; Crocoddyl's FDDP and DDP from
    the problem's start and the cold one when ``crocoddyl`` (None: when
    ``SODDP_CROCODDYL_PYTHON`` is set)."""
    names = list(names or PROBLEMS)
    common = dict(part="globalization", max_iter=max_iter, settings=settings or {})
    tasks = [task(problem=n, method=m, globalization=g, shooting=sh, **common)
             for n in names for sh in ("single", "multiple") for m in methods
             for g in GLOBALIZATIONS]
    cold = [n for n in COLD_PROBLEMS if n in names]
    tasks += [task(problem=n, method=m, globalization=g, shooting="multiple", start="cold",
                   **common)
              for n in cold for m in methods for g in ("safeguarded", "crocoddyl")]
    if crocoddyl if crocoddyl is not None else crocoddyl_solvers.python():
        tasks += [task(part="globalization", problem=n, solver="crocoddyl", method=m,
                       shooting="multiple", start=start, max_iter=max_iter)
                  for start, ns in ((None, names), ("cold", cold)) for n in ns
                  for m in SOLVERS["crocoddyl"]]
    return tasks


def _display(record):
    """A record as a table row: Crocoddyl's globalization column names Crocoddyl; no cost (an
    error, a dead worker) is NaN."""
    row = dict(record, cost=np.nan if record["cost"] is None else record["cost"])
    if record["solver"] == "crocoddyl":
        row["globalization"] = f"Crocoddyl {record['versions'].get('crocoddyl', '')}".strip()
    return row


GLOB_COLUMNS = [("problem", "problem"), ("nv", "nv"), ("shooting", "shooting"),
                ("start", "start"), ("method", "method"), ("globalization", "globalization"),
                ("status", "status"), ("iterations", "iterations"), ("cost", "final cost"),
                ("same_optimum", "|cost - best| / best"), ("time_s", "time [s]"),
                ("tail", "last g_k+1 / g_k")]


def _order(row):
    """Table order: problem, ours before Crocoddyl, start, shooting, method, globalization."""
    methods = SOLVERS["soddp"] + SOLVERS["crocoddyl"]
    return (list(PROBLEMS).index(row["problem"]), row["solver"] == "crocoddyl",
            row["start"] != "quasi-static", row["shooting"] != "single",
            methods.index(row["method"]),
            GLOBALIZATIONS.index(row["globalization"]) if row["solver"] == "soddp" else 0)


def globalization_report(records, log=print):
    """The globalization table (``results/globalization.{csv,md}``) and its cost-per-iteration
    figure from the records of globalization tasks; returns the rows."""
    rows = sorted((_display(r) for r in reportable(records) if r["part"] == "globalization"),
                  key=_order)
    names = [n for n in PROBLEMS if any(r["problem"] == n for r in rows)]
    cold = [n for n in COLD_PROBLEMS if _find(rows, problem=n, start="cold")]
    for n in names:
        costs = [r["cost"] for r in rows if r["problem"] == n and np.isfinite(r["cost"])]
        best = min(costs, default=np.nan)
        for r in rows:
            if r["problem"] == n:
                r["same_optimum"] = abs(r["cost"] - best) / max(abs(best), 1e-300)
    max_iter = max((r["max_iter"] for r in rows), default=0)
    notes = _glob_notes(rows, names, cold, max_iter) + [settings_note(rows), provenance(rows)]
    write_table(rows, "globalization", "Globalization strategies and multiple shooting",
                GLOB_COLUMNS, notes, log)
    log(f"wrote {_plot_costs(rows, names)}")
    return rows


def _find(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def _glob_notes(rows, names, cold, max_iter):
    notes = ["each solve after an untimed one-iteration warm-up (once per configuration and "
             "worker); starts: quasi-static, the controls holding x0 and their rollout (multiple "
             "shooting from the same xs: no gaps); crocoddyl (the gaits' start), x0 at every "
             "knot with those controls (single shooting rolls them out: the quasi-static "
             "solve); cold, xs = x0 at every knot, us = 0 (gaps); Crocoddyl rows: FDDP and "
             "DDP 3.2.1 (Gauss-Newton) from the same start, time the best of 3",
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
    cols = min(4, len(names))
    lines = -(-len(names) // cols)
    fig, axes = plt.subplots(lines, cols, figsize=(3.4 * cols, 3.0 * lines + 0.4), squeeze=False)
    axes = axes.ravel()
    for a in axes[len(names):]:
        a.axis("off")
    for a, n in zip(axes, names):
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
    for a in axes[::cols]:
        a.set_ylabel("cost - best cost")
    labels = {}
    for a in axes:
        for h, lab in zip(*a.get_legend_handles_labels()):
            labels.setdefault(lab, h)
    fig.legend(labels.values(), labels.keys(), loc="upper center", ncol=len(labels), fontsize=8)
    tight_layout(fig, rect=(0, 0, 1, 1 - 0.35 / (3.0 * lines + 0.4)))
    return save_figure(fig, "globalization.png")


ROBUST_COLUMNS = [("family", "family"), ("method", "method"), ("globalization", "globalization"),
                  ("instances", "instances"), ("success", "converged [%]"),
                  ("it_median", "iterations: median"), ("it_iqr", "iterations: IQR"),
                  ("time_median", "time [s]: median"), ("time_iqr", "time [s]: IQR"),
                  ("differ", "DDP and iLQR optima differ [%]"),
                  ("lower", "lower optimum (DDP / iLQR / -)")]


def robustness_tasks(instances=20, families=None, max_iter=300, methods=SOLVERS["soddp"],
                     settings=None, crocoddyl=None):
    """``instances`` seeded random instances of every family of ``families`` (default: all),
    the :data:`COMBOS` whose method is in ``methods``, from each family's start and shooting
    (:func:`problems.examples.default_start`); and
    Crocoddyl's FDDP on each instance when ``crocoddyl`` (None: when ``SODDP_CROCODDYL_PYTHON``
    is set)."""
    families = FAMILIES if families is None else families
    tasks = [task(part="robustness", problem=f, seed=s, method=m, globalization=g,
                  max_iter=max_iter, settings=settings or {})
             for f in families for s in range(instances) for m, g in COMBOS if m in methods]
    if crocoddyl if crocoddyl is not None else crocoddyl_solvers.python():
        tasks += [task(part="robustness", problem=f, seed=s, solver="crocoddyl",
                       method=CROCODDYL_COMBO[0], max_iter=max_iter)
                  for f in families for s in range(instances)]
    return tasks


def robustness_report(records, log=print):
    """The robustness table (``results/robustness.{csv,md}``: per family and method, success
    rate, iterations and time, and how often DDP and iLQR reach different optima) and its
    box plot from the records of robustness tasks; returns the rows."""
    records = [dict(r, cost=np.nan) if r["cost"] is None else r  # worker died, error
               for r in reportable(records) if r["part"] == "robustness"]
    families = [f for f in FAMILIES if _find(records, problem=f)]
    combos = [c for c in COMBOS + (CROCODDYL_COMBO,)
              if _find(records, method=c[0], globalization=c[1])]
    instances = len({(r["problem"], r["seed"]) for r in records}) // max(len(families), 1)
    max_iter = max((r["max_iter"] for r in records), default=0)
    rows = []
    for f in families:
        for m, g in combos:
            rs = _find(records, problem=f, method=m, globalization=g)
            if not rs:  # e.g. Crocoddyl on a family it cannot write
                continue
            it = np.array([r["iterations"] for r in rs if r["converged"]], dtype=float)
            tm = np.array([r["time_s"] for r in rs if r["converged"]], dtype=float)
            q = lambda x, p: float(np.percentile(x, p)) if x.size else float("nan")
            croc = [r["versions"].get("crocoddyl", "") for r in rs if r["solver"] == "crocoddyl"]
            if croc:  # Crocoddyl's row names it where the globalization goes
                g = f"Crocoddyl {croc[0]}".strip()
            row = dict(family=f, method=m, globalization=g, instances=len(rs),
                       success=100.0 * np.mean([r["converged"] for r in rs]),
                       it_median=q(it, 50), it_iqr=q(it, 75) - q(it, 25), time_median=q(tm, 50),
                       time_iqr=q(tm, 75) - q(tm, 25), differ="", lower="")
            pairs = [(r, _find(records, problem=f, seed=r["seed"], method="ilqr",
                               globalization=g)) for r in rs] if m == "ddp" else []
            pairs = [(d, i[0]) for d, i in pairs if i]
            if pairs:
                diff = [(d, i) for d, i in pairs
                        if abs(d["cost"] - i["cost"]) > 1e-6 * max(abs(i["cost"]), 1e-12)]
                row["differ"] = 100.0 * len(diff) / len(pairs)
                row["lower"] = (f"{sum(d['cost'] < i['cost'] for d, i in diff)} / "
                                f"{sum(i['cost'] < d['cost'] for d, i in diff)} / "
                                f"{len(pairs) - len(diff)}")
            rows.append(row)
    notes = [f"{instances} seeded instances per family (seed s: numpy default_rng([s, 7919])); "
             "random: " + "; ".join(f"{f}: {FAMILIES[f]}" for f in families),
             "each family's start (problems.examples.default_start): the gaits from Crocoddyl's "
             "examples' start (x0 at every knot, the controls holding it) with multiple "
             "shooting, the others from the controls holding x0 and their rollout with single "
             "shooting; Crocoddyl's FDDP from the same; converged: the solver's status within "
             f"{max_iter} iterations; medians and IQR over the converged instances",
             settings_note(records),
             "optima differ: final costs differ by more than 1e-6 relative; 'lower' counts the "
             "instances where DDP's / iLQR's optimum is lower, and where they are the same",
             provenance(records)]
    write_table(rows, "robustness", "DDP versus iLQR over random instances", ROBUST_COLUMNS,
                notes, log)
    log(f"wrote {_plot_robustness(records, families, combos)}")
    return rows


def _plot_robustness(records, families, combos):
    plt = pyplot()
    fig, a = plt.subplots(figsize=(10, 4))
    labels = {("ddp", "safeguarded"): "DDP", ("ilqr", "safeguarded"): "iLQR",
              ("ddp", "shift"): "pure DDP (shift)", ("ilqr", "shift"): "iLQR (shift)",
              CROCODDYL_COMBO: "Crocoddyl FDDP"}
    from matplotlib.transforms import blended_transform_factory

    width = 0.8 / len(combos)
    below = blended_transform_factory(a.transData, a.transAxes)
    for k, (m, g) in enumerate(combos):
        runs = [_find(records, problem=f, method=m, globalization=g) for f in families]
        data = [[r["iterations"] for r in rs if r["converged"]] for rs in runs]  # as the table
        pos = np.arange(len(families)) + (k - (len(combos) - 1) / 2) * width
        bp = a.boxplot(data, positions=pos, widths=width * 0.9, patch_artist=True,
                       manage_ticks=False)
        for b in bp["boxes"]:
            b.set_facecolor(f"C{k}")
        a.plot([], [], "s", color=f"C{k}", label=labels[m, g])
        for x, rs, d in zip(pos, runs, data):  # converged / run, shown when none converged too
            if rs:
                a.text(x, 0.01, f"{len(d)}/{len(rs)}", transform=below, ha="center",
                       va="bottom", fontsize=6, color="C3" if not d else "0.3", rotation=90)
    a.set_xticks(np.arange(len(families)))
    a.set_xticklabels([f.replace("_", " ") for f in families])
    a.set_yscale("log")
    a.set_ylabel("iterations (converged random instances;\nat the bottom: converged / run)")
    a.grid(True, axis="y", alpha=0.3)
    a.legend(fontsize=8)
    tight_layout(fig)
    return save_figure(fig, "robustness.png")
