"""The geometric linearization (Bos et al. 2022) beside FDSVA and Pinocchio's C++
``computeABADerivatives`` (the same quantity: a, da/dq, da/dv, M^-1), in one run.

``soddp bench linearize`` writes ``results/linearization_speed.csv`` and ``.md``:

* geometric, single: ``dynamics.linearize`` at one point (validation and the assembly of A, B
  included); kernel: the compiled geometric forward-dynamics derivatives alone, one point called
  from Python; kernel loop: the same kernel over T points in one compiled call on one thread, time
  per point, measured as the C++ reference measures Pinocchio (a loop over distinct random points
  in compiled code, outputs allocated once per call, no interpreter between calls);
* geometric, batch: ``linearize`` on T knots, time per knot (parallel over knots, 2 cores), and
  the kernel alone on the same batch;
* FDSVA: ``dynamics.fd_derivatives``, single and batch, for comparison;
* Pinocchio's ``computeABADerivatives`` through its Python binding (the peer of our kernel
  called from Python) and in C++ (the peer of the kernel loop).

Ours and C++ take turns (10 per robot) and each keeps its best turn, so that a slow spell of the
machine (this one alternates between full and about 60% speed for seconds at a time) does not
fall on one side only and bias the ratio.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import dynamics as dyn
from dynamics import robots
from dynamics.kernels import geometric as _geo

from ..output import write_table
from .timing import cpp_timings, random_states, ratio, time_us

ROBOTS = ("hyq", "atlas", "talos")

COLUMNS = [("robot", "robot"), ("nv", "nv"),
           ("geo_single_us", "geometric single [us]"), ("geo_kernel_us", "geometric kernel [us]"),
           ("geo_kernel_loop_us", "geometric kernel, serial loop [us/point]"),
           ("geo_batch_us", "geometric batch [us/knot]"),
           ("geo_kernel_batch_us", "geometric kernel batch [us/knot]"),
           ("fdsva_single_us", "FDSVA single [us]"), ("fdsva_batch_us", "FDSVA batch [us/knot]"),
           ("pin_py_us", "Pinocchio Python ABA derivatives [us]"),
           ("pin_cpp_us", "Pinocchio C++ ABA derivatives [us]"),
           ("single_vs_cpp", "geometric single / C++"), ("kernel_vs_cpp", "kernel / C++"),
           ("kernel_vs_py", "kernel / Pinocchio Python"), ("loop_vs_cpp", "kernel loop / C++"),
           ("batch_vs_cpp", "geometric batch / C++"),
           ("kernel_batch_vs_cpp", "kernel batch / C++")]


def _quiet(*_):
    pass


def _best_of_turns(model, T, min_time, turns, log):
    """Our times (with Pinocchio's Python binding among them) and C++'s, each the best of
    ``turns`` turns taken alternately (on this noisy machine a slow spell then falls on both, as
    in ``bench solver``).  A turn of C++ is the mean of 200 calls; a turn of ours is the minimum
    over 3 rounds of :func:`time_us`."""
    Q, V, _, TAU = random_states(model, T)
    q, v, tau = Q[0], V[0], TAU[0]
    args = model.kernel_args
    support = dyn.linearization.column_support(model, 2 * model.nv)  # as linearize: once
    q1, v1, tau1 = Q[:1], V[:1], TAU[:1]
    n, ncol = model.nv, 2 * model.nv
    out = (np.empty((T, n)), np.empty((T, n, n)), np.empty((T, n, ncol)))  # a, Minv, dacc
    out1 = tuple(x[:1] for x in out)
    pm = model.pin_model
    pd = pm.createData()
    timed = dict(
        pin_py_us=lambda: pin.computeABADerivatives(pm, pd, q, v, tau),
        geo_single_us=lambda: dyn.linearize(model, q, v, tau),
        geo_kernel_us=lambda: _geo.geometric_fd_chunk(*args, q1, v1, tau1, support, *out1, 0, 1),
        geo_kernel_loop_us=lambda: _geo.geometric_fd_chunk(*args, Q, V, TAU, support, *out, 0, 1),
        geo_batch_us=lambda: dyn.linearize(model, Q, V, TAU),
        geo_kernel_batch_us=lambda: dyn.linearization.geometric_fd(model, Q, V, TAU, ncol),
        fdsva_single_us=lambda: dyn.fd_derivatives(model, q, v, tau),
        fdsva_batch_us=lambda: dyn.fd_derivatives(model, Q, V, TAU))
    per_call = dict(geo_kernel_loop_us=T, geo_batch_us=T, geo_kernel_batch_us=T, fdsva_batch_us=T)
    best = dict.fromkeys(timed, float("inf"))
    cpp = None
    for turn in range(turns):  # (a missing C++ reference is reported once)
        t = (cpp_timings(model, log if turn == 0 else _quiet, n=200) or {}).get("aba_derivs_us")
        if t is not None:
            cpp = t if cpp is None else min(cpp, t)
        for key, fn in timed.items():
            best[key] = min(best[key], time_us(fn, min_time, rounds=3) / per_call.get(key, 1))
    return best, cpp


def run_linearization(robot_names=ROBOTS, T=100, min_time=0.2, turns=10, log=print):
    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"linearization: {name} (nv={model.nv})")
        t, cpp = _best_of_turns(model, T, min_time, turns, log)
        rows.append(dict(robot=name, nv=model.nv, **t, pin_cpp_us=cpp,
                         single_vs_cpp=ratio(t["geo_single_us"], cpp),
                         kernel_vs_cpp=ratio(t["geo_kernel_us"], cpp),
                         kernel_vs_py=ratio(t["geo_kernel_us"], t["pin_py_us"]),
                         loop_vs_cpp=ratio(t["geo_kernel_loop_us"], cpp),
                         batch_vs_cpp=ratio(t["geo_batch_us"], cpp),
                         kernel_batch_vs_cpp=ratio(t["geo_kernel_batch_us"], cpp)))
    write_table(rows, "linearization_speed",
                "Geometric linearization (Bos et al. 2022) beside FDSVA and Pinocchio C++",
                COLUMNS, notes=[
                    f"batch: T = {T} knots, time per knot, parallel over knots on 2 cores",
                    "single: `dynamics.linearize` at one point (validation and the assembly of "
                    "the continuous-time A, B included); kernel: the compiled geometric "
                    "forward-dynamics derivatives alone, one point called from Python (the "
                    "interpreter's call and the allocation of the outputs included)",
                    f"kernel loop: the same kernel over the {T} points in one compiled call on one "
                    "thread, time per point: measured as the C++ reference measures Pinocchio (a "
                    "loop over distinct random points in compiled code, no interpreter between "
                    "calls); the like-for-like single-point ratio",
                    "kernel: the same quantity as Pinocchio's (a, da/dq, da/dv, M^-1); "
                    "`linearize` computes the continuous-time A (2nv x 2nv) and B in one "
                    "compiled call that writes those derivatives into their blocks",
                    "Pinocchio C++: `computeABADerivatives` (a, da/dq, da/dv, M^-1), "
                    "shared/tools/pinocchio-cpp-reference, single thread; Pinocchio Python: the "
                    "same function called through its Python binding at one point (the "
                    "like-for-like peer of our kernel called from Python)",
                    f"timing: ours and C++ take {turns} turns per robot and each keeps its "
                    "best (ours: the minimum over 3 rounds of the mean time per call; C++: the "
                    "mean of 200 calls in a run); same run"],
                log=log)
    return rows
