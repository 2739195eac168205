"""The higher-order dynamics (Ali et al. 2026) timed beside the paper's numbers and against CasADi
AD in time (``soddp bench higher-order``).

* ``results/higher_order_speed.{csv,md}``: the aerial manipulator (N = 7), r = 0..5: H-GRNE and
  H-GABI per single call and per sample of a batch (parallel over samples, 2 cores), beside the
  paper's single-call times (i7-12700H, their implementation).
* ``results/higher_order_scaling_n.{csv,md,png}``: time against the number of bodies N = 1 + 5 n
  (five branches of n links, ``robots.multi_arm_aerial``), N up to 996, r in {0, 1, 3, 5}.
* ``results/higher_order_scaling_r.{csv,md,png}``: time against r for N = 101, ours for r = 0..10,
  and CasADi: the closed-form configuration curve q(t) (polynomials in t with parameter
  coefficients, the base orientation a product of three single-axis rotations), its velocity and
  the symbolic RNEA, differentiated r times in t by forward-mode AD, built once per r (outside the
  timing) and evaluated by CasADi's SX virtual machine (no code generation, as in the paper).
"""

from __future__ import annotations

import time

import casadi as cs
import numpy as np

from dynamics import higher_order as ho
from dynamics import robots
from dynamics import time_curves as tc

from ..output import log_n_axis, pyplot, save_figure, write_table
from .timing import ratio, time_us

#: the paper's Fig. 3 caption: mean us per call for N = 7, r = 0..5 (i7-12700H)
PAPER_GRNE_US = (2.326, 3.078, 2.867, 4.355, 5.960, 8.171)
PAPER_GABI_US = (4.106, 4.802, 6.486, 6.461, 8.589, 11.085)


def _inputs(model, r, T=None, seed=0):
    rng = np.random.default_rng(seed)
    shape = (r + 2, model.nv) if T is None else (T, r + 2, model.nv)
    if T is None:
        q = model.random_configuration(rng)
    else:
        q = np.array([model.random_configuration(rng) for _ in range(T)])
    vd = rng.normal(size=shape) * 0.5 ** np.arange(r + 2)[:, None]
    return q, vd


def run_speed(T=1000, min_time=0.2, log=print):
    m = robots.load("aerial_manipulator")
    rows = []
    for r in range(6):
        q, vd = _inputs(m, r)
        tau = ho.rnea(m, q, vd)
        Q, VD = _inputs(m, r, T)
        TAU = ho.rnea(m, Q, VD)
        row = dict(
            r=r, grne_single=time_us(lambda: ho.rnea(m, q, vd), min_time),
            grne_batch=time_us(lambda: ho.rnea(m, Q, VD), min_time) / T,
            grne_paper=PAPER_GRNE_US[r],
            gabi_single=time_us(lambda: ho.aba(m, q, vd[0], tau), min_time),
            gabi_batch=time_us(lambda: ho.aba(m, Q, VD[:, 0], TAU), min_time) / T,
            gabi_paper=PAPER_GABI_US[r])
        row["grne_ratio"] = ratio(row["grne_batch"], row["grne_paper"])
        row["gabi_ratio"] = ratio(row["gabi_batch"], row["gabi_paper"])
        row["grne_single_ratio"] = ratio(row["grne_single"], row["grne_paper"])
        row["gabi_single_ratio"] = ratio(row["gabi_single"], row["gabi_paper"])
        log(f"  r = {r}: H-GRNE {row['grne_single']:.2f} us single, {row['grne_batch']:.2f} "
            f"us/sample; H-GABI {row['gabi_single']:.2f}, {row['gabi_batch']:.2f}")
        rows.append(row)
    write_table(rows, "higher_order_speed",
                "Higher-order dynamics on the aerial manipulator (N = 7) beside the paper",
                [("r", "r"), ("grne_single", "H-GRNE single [us]"),
                 ("grne_batch", "H-GRNE batch [us/sample]"), ("grne_paper", "paper H-GRNE [us]"),
                 ("grne_ratio", "batch / paper"), ("grne_single_ratio", "single / paper"),
                 ("gabi_single", "H-GABI single [us]"), ("gabi_batch", "H-GABI batch [us/sample]"),
                 ("gabi_paper", "paper H-GABI [us]"), ("gabi_ratio", "batch / paper"),
                 ("gabi_single_ratio", "single / paper")],
                notes=[f"batch: {T} samples per call, parallel over samples on this machine's 2 "
                       "cores; single: one sample per call through the Python API (input checks "
                       "included)",
                       "paper: Fig. 3 caption, mean time per call on an Intel i7-12700H, their "
                       "implementation; different machines, so the ratio is indicative"],
                log=log)
    return rows


def run_scaling_n(per_branch=(1, 2, 5, 10, 20, 50, 100, 199), orders=(0, 1, 3, 5),
                  min_time=0.1, log=print):
    rows = []
    for n in per_branch:
        m = robots.multi_arm_aerial(5, n)
        row = dict(N=1 + 5 * n, nv=m.nv)
        for r in orders:
            q, vd = _inputs(m, r)
            tau = ho.rnea(m, q, vd)
            row[f"grne_r{r}"] = time_us(lambda: ho.rnea(m, q, vd), min_time, rounds=5)
            row[f"gabi_r{r}"] = time_us(lambda: ho.aba(m, q, vd[0], tau), min_time, rounds=5)
        log(f"  N = {row['N']}: " + ", ".join(f"{k} {v:.1f}" for k, v in row.items()
                                               if k.startswith(("grne", "gabi"))))
        rows.append(row)
    cols = [("N", "N"), ("nv", "nv")] + [(f"{a}_r{r}", f"{b} r={r} [us]") for a, b in
                                         (("grne", "H-GRNE"), ("gabi", "H-GABI")) for r in orders]
    slope = {k: np.polyfit(np.log([x["N"] for x in rows[-4:]]),
                           np.log([x[k] for x in rows[-4:]]), 1)[0] for k, _ in cols[2:]}
    write_table(rows, "higher_order_scaling_n",
                "Higher-order dynamics against the number of bodies (5 branches, single calls)",
                cols, notes=["log-log slope over the four largest N: " + ", ".join(
                    f"{k} {v:.2f}" for k, v in slope.items()) + " (1 = linear in N)"], log=log)
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, algo, title in ((axes[0], "grne", "H-GRNE (inverse)"),
                            (axes[1], "gabi", "H-GABI (forward)")):
        for r in orders:
            ax.loglog([x["N"] for x in rows], [x[f"{algo}_r{r}"] for x in rows], "o-",
                      label=f"r = {r}")
        N = np.array([rows[0]["N"], rows[-1]["N"]], float)
        ax.loglog(N, rows[-1][f"{algo}_r0"] * N / N[-1], "k:", label="slope 1")
        log_n_axis(ax, [x["N"] for x in rows[::2]], "number of bodies N")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("time per call [us]")
    fig.suptitle("Higher-order dynamics: linear in N (free-flyer base, 5 branches)")
    fig.tight_layout()
    save_figure(fig, "higher_order_scaling_n")
    return rows


def _polynomial_curve(model, degree):
    """q(t) with parameter coefficients: joint angles and base position polynomials of the given
    degree, the base orientation Rz(a(t)) Ry(b(t)) Rx(c(t)) with polynomial angles."""
    n_scalar = model.nv  # base position (3), orientation angles (3), joint angles
    n_params = n_scalar * (degree + 1)

    def q_of_t(t, p):
        coeff = cs.reshape(p, degree + 1, n_scalar)
        powers = cs.vertcat(*[t ** k / float(np.prod(np.arange(1, k + 1))) for k in range(degree + 1)])
        s = cs.mtimes(coeff.T, powers)
        quat = cs.DM([0, 0, 0, 1])
        for j, axis in enumerate(np.eye(3)[[2, 1, 0]]):
            quat = tc.quat_mul(quat, tc.axis_quat(axis, s[3 + j]))
        return cs.vertcat(s[0:3], quat, s[6:])

    return q_of_t, n_params


def run_scaling_r(per_branch=20, r_max=10, casadi_r_max=6, casadi_build_budget=300.0,
                  min_time=0.1, log=print):
    m = robots.multi_arm_aerial(5, per_branch)
    rows = []
    build_total = 0.0
    for r in range(r_max + 1):
        q, vd = _inputs(m, r)
        tau = ho.rnea(m, q, vd)
        row = dict(r=r, grne=time_us(lambda: ho.rnea(m, q, vd), min_time, rounds=5),
                   gabi=time_us(lambda: ho.aba(m, q, vd[0], tau), min_time, rounds=5))
        if r <= casadi_r_max and build_total < casadi_build_budget:
            curve, n_params = _polynomial_curve(m, r + 2)
            t0 = time.perf_counter()
            f = tc.tau_derivs_function(m, curve, r, n_params)
            row["casadi_build_s"] = time.perf_counter() - t0
            build_total += row["casadi_build_s"]
            p = np.random.default_rng(r).normal(size=n_params) * 0.1
            row["casadi"] = time_us(lambda: f(0.0, p), min_time, rounds=3)
            row["casadi_vs_grne"] = ratio(row["casadi"], row["grne"])
        log(f"  r = {r}: H-GRNE {row['grne']:.1f} us, H-GABI {row['gabi']:.1f} us"
            + (f", CasADi {row['casadi']:.0f} us (built in {row['casadi_build_s']:.1f} s)"
               if "casadi" in row else ""))
        rows.append(row)
    rs = np.array([x["r"] for x in rows], float)
    fit = {k: np.polyfit(rs, [x[k] for x in rows], 2) for k in ("grne", "gabi")}
    casadi_rows = [x for x in rows if "casadi" in x]
    growth = (np.exp(np.polyfit([x["r"] for x in casadi_rows],
                                np.log([x["casadi"] for x in casadi_rows]), 1)[0])
              if len(casadi_rows) > 2 else None)
    write_table(rows, "higher_order_scaling_r",
                f"Higher-order dynamics against the order r (N = {1 + 5 * per_branch}, single calls)",
                [("r", "r"), ("grne", "H-GRNE [us]"), ("gabi", "H-GABI [us]"),
                 ("casadi", "CasADi AD in t [us]"), ("casadi_vs_grne", "CasADi / H-GRNE"),
                 ("casadi_build_s", "CasADi build [s]")],
                notes=["quadratic fit of ours, time = a r^2 + b r + c [us]: " + "; ".join(
                    f"{k}: a={v[0]:.2f}, b={v[1]:.1f}, c={v[2]:.0f}" for k, v in fit.items()),
                    (f"CasADi grows by a factor {growth:.2f} per order (log-linear fit)"
                     if growth else "CasADi: too few orders built for a fit"),
                    "CasADi: AD in t of the symbolic RNEA along a polynomial curve, built once "
                    "per r outside the timing, SX virtual machine (no JIT), as in the paper; "
                    f"orders stop at r = {casadi_r_max} or when building exceeds "
                    f"{casadi_build_budget:.0f} s in total"],
                log=log)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.semilogy(rs, [x["grne"] for x in rows], "o-", label="H-GRNE (ours)")
    ax.semilogy(rs, [x["gabi"] for x in rows], "s-", label="H-GABI (ours)")
    if casadi_rows:
        ax.semilogy([x["r"] for x in casadi_rows], [x["casadi"] for x in casadi_rows], "^-",
                    label="CasADi AD of RNEA in t")
    ax.set_xlabel("derivative order r")
    ax.set_ylabel("time per call [us]")
    ax.set_title(f"Time against r, N = {1 + 5 * per_branch} (ours quadratic, AD exponential)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    save_figure(fig, "higher_order_scaling_r")
    return rows


def run_higher_order(min_time=0.2, log=print):
    log("higher-order dynamics: speed on the aerial manipulator")
    run_speed(min_time=min_time, log=log)
    log("higher-order dynamics: scaling in N")
    run_scaling_n(min_time=min(min_time, 0.1), log=log)
    log("higher-order dynamics: scaling in r and CasADi")
    run_scaling_r(min_time=min(min_time, 0.1), log=log)
