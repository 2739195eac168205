"""Benchmarks of the CasADi AD baseline and the finite-difference methods against our kernels.

* ``accuracy`` (the paper's Fig. 11): MAE, RMSAE, MRE, RMSRE of IDSVA-SO, Finite-Diff-1 and
  Finite-Diff-2 against CasADi AD (exact to rounding) on serial chains and binary trees, against N
  -> ``results/accuracy_so.{csv,md,png}``.
* ``casadi`` (the paper's Sec. VII-B): build time, expression size, C and library size and time per
  call of the CasADi baseline (SX virtual machine, and C code generation) beside the analytical
  kernels, for ID-SO, full FD-SO and lam-contracted FD-SO -> ``results/casadi_baseline.{csv,md}``.
"""

from __future__ import annotations

import time

import numpy as np
import dynamics as dyn
from dynamics import accuracy, robots

from ..output import log_n_axis, pyplot, save_figure, write_table
from .timing import paper_trees, random_states, ratio, time_us

ACCURACY_SIZES = (2, 4, 8, 12, 16, 20, 30, 40, 50, 60)
METRICS = ("MAE", "RMSAE", "MRE", "RMSRE")


def run_accuracy(sizes=ACCURACY_SIZES, log=print):
    """Errors of the second-order ID derivatives (the n x 3n x 3n tensor of the paper) against
    CasADi AD, for IDSVA-SO (ours), Finite-Diff-1 and Finite-Diff-2."""
    rows = []
    for kind, N, m, q, v, a in paper_trees(sizes):
        t0 = time.perf_counter()
        ref = accuracy.id_hessian(dyn.CasadiDynamics(m).id_derivatives(q, v, a, order=2))
        for method, fn in (("IDSVA-SO (ours)", dyn.id_second_derivatives),
                           ("Finite-Diff-1", accuracy.finite_diff_1),
                           ("Finite-Diff-2", accuracy.finite_diff_2)):
            e = accuracy.metrics(accuracy.id_hessian(fn(m, q, v, a)), ref)
            rows.append(dict(kind=kind, N=N, method=method, **e))
        log(f"  {kind:12s} N={N:3d}: " + "  ".join(
            f"{r['method'].split(' ')[0]} MRE {r['MRE']:.1e}" for r in rows[-3:])
            + f"  ({time.perf_counter() - t0:.1f} s)")
    cols = [("kind", "tree"), ("N", "N"), ("method", "method")] + [(k, k) for k in METRICS]
    notes = ["reference: CasADi automatic differentiation of our SX RNEA (dynamics.CasadiDynamics), "
             "exact to rounding; the paper used bi-complex steps",
             "metrics over the n x 3n x 3n tensor of second derivatives of tau(q, v, a) "
             "(dynamics.accuracy.id_hessian); relative errors w.r.t. max(|ref|, 1)",
             "Finite-Diff-1: second-order central differences of RNEA, step 3e-4; Finite-Diff-2: "
             "central differences of IDSVA, step 1e-5 (the paper's best steps)"]
    write_table(rows, "accuracy_so", "Accuracy of second-order ID derivatives against CasADi AD",
                cols, notes, log)
    _plot_accuracy(rows)
    return rows


def _plot_accuracy(rows):
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
    styles = {"IDSVA-SO (ours)": "C0", "Finite-Diff-1": "C3", "Finite-Diff-2": "C2"}
    for ax, metric in zip(axes.flat, METRICS):
        for method, color in styles.items():
            for kind, ls, mk in (("serial chain", "-", "o"), ("binary tree", "--", "s")):
                sel = [r for r in rows if r["method"] == method and r["kind"] == kind]
                y = np.maximum([r[metric] for r in sel], 1e-18)  # exact zeros drawn at 1e-18
                ax.loglog([r["N"] for r in sel], y, ls, marker=mk, ms=4, color=color,
                          label=f"{method}, {kind}")
        ax.set_title(metric)
        ax.set_ylabel("absolute error" if metric in ("MAE", "RMSAE") else "relative error")
        ax.grid(True, which="both", alpha=0.3)
        log_n_axis(ax, [2, 5, 10, 20, 50])
    for ax in axes[0]:
        ax.set_xlabel("")  # shared N axis: labelled on the bottom row
    axes[0, 0].legend(fontsize=7, ncol=1)
    fig.suptitle("Second-order ID derivatives: error against CasADi AD")
    fig.tight_layout()
    save_figure(fig, "accuracy_so.png")


# ---------------------------------------------------------------------------------- CasADi
#: smallest expression first (a larger one is skipped once a smaller one hits a codegen limit)
CASADI_KINDS = (("rnea_so", "ID-SO, full"), ("aba_so_lam", "FD-SO, lam-contracted"),
                ("aba_so", "FD-SO, full"))
CASADI_COLUMNS = [("robot", "robot"), ("nv", "nv"), ("quantity", "quantity"),
                  ("backend", "backend"), ("build_s", "build [s]"),
                  ("n_instructions", "SX instructions"), ("c_mb", "C code [MB]"),
                  ("so_mb", "library [MB]"), ("single_us", "single [us]"),
                  ("batch_us", "batch [us/knot]"), ("vs_analytical", "single / analytical"),
                  ("status", "status")]


def _call(backend, kind):
    """The second-order call of ``kind`` on any Dynamics backend, as f(q, v, x, lam)."""
    if kind == "rnea_so":
        return lambda q, v, x, lam: backend.id_derivatives(q, v, x, order=2)
    if kind == "aba_so":
        return lambda q, v, x, lam: backend.fd_derivatives(q, v, x, order=2)
    return lambda q, v, x, lam: backend.fd_derivatives(q, v, x, order=2, lam=lam)


def run_casadi(robot_names=("ur3", "hyq", "atlas", "talos"), T=20, min_time=0.2, cflags=("-O3",),
               max_compile_s=900.0, codegen=True, log=print):
    """CasADi SX and code-generated C beside the analytical kernels; see module docstring."""
    rows = []
    for name in robot_names:
        model = robots.load(name)
        Q, V, X, _ = random_states(model, T)
        LAM = np.random.default_rng(1).normal(size=(T, model.nv))
        q, v, x, lam = Q[0], V[0], X[0], LAM[0]
        variants = [("CasADi SX (no codegen)", dict(codegen=False))]
        if codegen:
            variants.append((f"CasADi C ({' '.join(cflags)})",
                             dict(codegen=True, cflags=cflags,
                                  limits=dyn.CodegenLimits(max_compile_s=max_compile_s))))
        failed = None  # a smaller function whose code generation hit a limit
        for kind, label in CASADI_KINDS:
            fa = _call(dyn.AnalyticalDynamics(model), kind)
            ta = time_us(lambda: fa(q, v, x, lam), min_time)
            tab = time_us(lambda: fa(Q, V, X, LAM), min_time, rounds=5) / T
            rows.append(dict(robot=name, nv=model.nv, quantity=label, backend="analytical (ours)",
                             single_us=ta, batch_us=tab, vs_analytical=1.0, status="ok"))
            log(f"{name} {label}: analytical {ta:.1f} us")
            for bname, opts in variants:
                be = dyn.CasadiDynamics(model, **opts)
                r = dict(robot=name, nv=model.nv, quantity=label, backend=bname)
                if opts["codegen"] and failed:
                    r.update(status=f"skipped: the smaller {failed} already exceeded a limit")
                    rows.append(r)
                    log(f"  {bname}: {r['status']}")
                    continue
                t0 = time.perf_counter()
                try:
                    be.function(kind)
                except dyn.CodegenLimitError as exc:
                    r.update(build_s=time.perf_counter() - t0, status=f"failed: {exc}")
                    rows.append(r)
                    failed = label
                    log(f"  {bname}: {r['status']}")
                    continue
                rep = be.reports[kind]
                total = rep.build_s + (rep.codegen_s or 0) + (rep.compile_s or 0)
                fc = _call(be, kind)
                tc = time_us(lambda: fc(q, v, x, lam), min_time, rounds=5)
                tcb = time_us(lambda: fc(Q, V, X, LAM), min_time, rounds=3) / T
                r.update(build_s=total, n_instructions=rep.n_instructions,
                         c_mb=rep.c_bytes / 1e6 if rep.c_bytes else None,
                         so_mb=rep.so_bytes / 1e6 if rep.so_bytes else None, single_us=tc,
                         batch_us=tcb, vs_analytical=ratio(tc, ta),
                         status=("ok (build from disk cache; times of the first build)"
                                 if opts["codegen"] else
                                 "ok (built earlier in this run; times of the first build)")
                         if rep.cached else "ok")
                rows.append(r)
                log(f"  {bname}: build {total:.1f} s, {tc:.1f} us ({tc / ta:.1f}x analytical)")
    notes = [f"single: one point through the Dynamics API; batch: T = {T} knots (CasADi: "
             "Function.map over threads), time per knot",
             "build: symbolic construction + C generation + compilation (s); SX instructions: "
             "CasADi n_instructions()",
             f"CasADi C: compiled with cc {' '.join(cflags)}, compile limit {max_compile_s:.0f} s "
             "per function (dynamics.CodegenLimits); the paper reports that code generation for "
             "ATLAS takes hours and is infeasible for Talos",
             "'single / analytical' > 1 means the analytical kernels are faster"]
    write_table(rows, "casadi_baseline", "CasADi AD baseline beside the analytical derivatives",
                CASADI_COLUMNS, notes, log)
    return rows
