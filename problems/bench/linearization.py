"""The geometric linearization (Bos et al. 2022) beside FDSVA and Pinocchio's C++
``computeABADerivatives`` (the same quantity: a, da/dq, da/dv, M^-1), in one run.

``soddp bench linearize`` writes ``results/linearization_speed.csv`` and ``.md``:

* geometric, single: ``dynamics.linearize`` at one point (validation and the assembly of A, B
  included); kernel: the compiled geometric forward-dynamics derivatives alone, one point;
* geometric, batch: ``linearize`` on T knots, time per knot (parallel over knots, 2 cores), and
  the kernel alone on the same batch;
* FDSVA: ``dynamics.fd_derivatives``, single and batch, for comparison.
"""

from __future__ import annotations

import dynamics as dyn
from dynamics import robots
from dynamics.kernels import geometric as _geo
from dynamics.kernels.layout import num_chunks

from ..output import write_table
from .timing import cpp_timings, random_states, ratio, time_us

ROBOTS = ("hyq", "atlas", "talos")

COLUMNS = [("robot", "robot"), ("nv", "nv"),
           ("geo_single_us", "geometric single [us]"), ("geo_kernel_us", "geometric kernel [us]"),
           ("geo_batch_us", "geometric batch [us/knot]"),
           ("geo_kernel_batch_us", "geometric kernel batch [us/knot]"),
           ("fdsva_single_us", "FDSVA single [us]"), ("fdsva_batch_us", "FDSVA batch [us/knot]"),
           ("pin_cpp_us", "Pinocchio C++ ABA derivatives [us]"),
           ("single_vs_cpp", "geometric single / C++"), ("kernel_vs_cpp", "kernel / C++"),
           ("batch_vs_cpp", "geometric batch / C++"),
           ("kernel_batch_vs_cpp", "kernel batch / C++")]


def run_linearization(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"linearization: {name} (nv={model.nv})")
        Q, V, _, TAU = random_states(model, T)
        q, v, tau = Q[0], V[0], TAU[0]
        args = model.kernel_args
        ncol = 2 * model.nv
        cpp = (cpp_timings(model, log) or {}).get("aba_derivs_us")
        s = time_us(lambda: dyn.linearize(model, q, v, tau), min_time)
        q1, v1, tau1 = Q[:1], V[:1], TAU[:1]
        support = dyn.linearization.column_support(model, ncol)  # as linearize: once per model
        k = time_us(lambda: _geo.geometric_fd_batch(*args, q1, v1, tau1, *support, 1), min_time)
        b = time_us(lambda: dyn.linearize(model, Q, V, TAU), min_time) / T
        kb = time_us(lambda: _geo.geometric_fd_batch(*args, Q, V, TAU, *support, num_chunks(T)),
                     min_time) / T
        fs = time_us(lambda: dyn.fd_derivatives(model, q, v, tau), min_time)
        fb = time_us(lambda: dyn.fd_derivatives(model, Q, V, TAU), min_time) / T
        rows.append(dict(robot=name, nv=model.nv, geo_single_us=s, geo_kernel_us=k,
                         geo_batch_us=b, geo_kernel_batch_us=kb, fdsva_single_us=fs,
                         fdsva_batch_us=fb, pin_cpp_us=cpp,
                         single_vs_cpp=ratio(s, cpp), kernel_vs_cpp=ratio(k, cpp),
                         batch_vs_cpp=ratio(b, cpp), kernel_batch_vs_cpp=ratio(kb, cpp)))
    write_table(rows, "linearization_speed",
                "Geometric linearization (Bos et al. 2022) beside FDSVA and Pinocchio C++",
                COLUMNS, notes=[
                    f"batch: T = {T} knots, time per knot, parallel over knots on 2 cores",
                    "single: `dynamics.linearize` at one point (validation and the assembly of "
                    "the continuous-time A, B included); kernel: the compiled geometric "
                    "forward-dynamics derivatives alone",
                    "kernel: the same quantity as Pinocchio's (a, da/dq, da/dv, M^-1); "
                    "`linearize` computes the continuous-time A (2nv x 2nv) and B in one "
                    "compiled call that writes those derivatives into their blocks",
                    "Pinocchio C++: `computeABADerivatives` (a, da/dq, da/dv, M^-1), "
                    "shared/tools/pinocchio-cpp-reference, single thread",
                    "timing: minimum over rounds of the mean time per call; same run"],
                log=log)
    return rows
