"""Derivative benchmarks: our kernels side by side with Pinocchio (Python binding and C++).

``soddp bench fo|so|fdso`` writes ``results/derivatives_{fo,so,fd_so}.csv`` and ``.md``.  Every
number is measured in the same run on this machine:

* ours, single call: one point through the public API (validation included);
* ours, batch: a batch of ``T`` knots through the public API, time per knot (both cores);
* Pinocchio Python: the same quantity through ``pinocchio``'s Python binding, one point;
* Pinocchio C++: ``shared/tools/pinocchio-cpp-reference`` (single thread, no Python), if built.

Timing: the minimum over 15 rounds of the mean time per call (robust to VM noise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pinocchio as pin

import dynamics as dyn
from dynamics import accuracy, robots

from ..output import write_table
from .timing import cpp_timings, random_states, ratio, time_us

ROBOTS = ("ur3", "hyq", "atlas", "talos")


# ---------------------------------------------------------------------------------- first order
def bench_first_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"first order: {name} (nv={model.nv})")
        pm = model.pin_model
        pd = pm.createData()
        Q, V, A, TAU = random_states(model, T)
        q, v, a, tau = Q[0], V[0], A[0], TAU[0]
        cpp = cpp_timings(model, log) or {}
        cases = [
            ("rnea", lambda: dyn.rnea(model, q, v, a), lambda: dyn.rnea(model, Q, V, A),
             lambda: pin.rnea(pm, pd, q, v, a), cpp.get("rnea_us")),
            ("aba", lambda: dyn.aba(model, q, v, tau), lambda: dyn.aba(model, Q, V, TAU),
             lambda: pin.aba(pm, pd, q, v, tau), cpp.get("aba_us")),
            ("id_derivatives (IDSVA)", lambda: dyn.id_derivatives(model, q, v, a),
             lambda: dyn.id_derivatives(model, Q, V, A),
             lambda: pin.computeRNEADerivatives(pm, pd, q, v, a), cpp.get("rnea_derivs_us")),
            ("fd_derivatives (FDSVA)", lambda: dyn.fd_derivatives(model, q, v, tau),
             lambda: dyn.fd_derivatives(model, Q, V, TAU),
             lambda: pin.computeABADerivatives(pm, pd, q, v, tau), cpp.get("aba_derivs_us")),
        ]
        for label, single, batch, pinpy, cpp_us in cases:
            s = time_us(single, min_time)
            b = time_us(batch, min_time) / T
            p = time_us(pinpy, min_time)
            rows.append(dict(robot=name, nv=model.nv, quantity=label, ours_single_us=s,
                             ours_batch_us=b, pin_python_us=p, pin_cpp_us=cpp_us,
                             single_vs_cpp=ratio(s, cpp_us), batch_vs_cpp=ratio(b, cpp_us)))
    return rows


FO_COLUMNS = [("robot", "robot"), ("nv", "nv"), ("quantity", "quantity"),
              ("ours_single_us", "ours single [us]"),
              ("ours_batch_us", "ours batch [us/knot]"),
              ("pin_python_us", "Pinocchio Python [us]"), ("pin_cpp_us", "Pinocchio C++ [us]"),
              ("single_vs_cpp", "single / C++"), ("batch_vs_cpp", "batch / C++")]


# ---------------------------------------------------------------------------------- compile time
_COMPILE_SCRIPT = """
import time
t0 = time.perf_counter()
import numpy as np
import dynamics as dyn
from dynamics import accuracy, robots
m = robots.load("ur3")
q = m.neutral(); z = np.zeros(m.nv)
t1 = time.perf_counter()
dyn.rnea(m, q, z, z); dyn.aba(m, q, z, z); dyn.mass_matrix(m, q); dyn.inverse_mass_matrix(m, q)
dyn.id_derivatives(m, q, z, z); dyn.fd_derivatives(m, q, z, z); m.integrate(q, z); m.difference(q, q)
{extra}
t2 = time.perf_counter()
print(f"{{t1 - t0:.3f}} {{t2 - t1:.3f}}")
"""


def compile_times(extra: str = "", log=print):
    """Import time and time of the first call of every kernel, in a fresh process with an empty
    numba cache (cold: compiles) and again in a second process with the same cache (warm)."""
    root = Path(__file__).resolve().parents[2]
    out = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=str(root))
        for label in ("cold (empty cache)", "warm (cache reused)"):
            r = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT.format(extra=extra)],
                               env=env, capture_output=True, text=True, cwd=root)
            if r.returncode != 0:
                raise RuntimeError(r.stderr)
            imp, first = map(float, r.stdout.split()[-2:])
            out.append(dict(process=label, import_s=imp, first_calls_s=first))
            log(f"  {label}: import {imp:.2f} s, first call of every kernel {first:.2f} s")
    return out


def run_first_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    rows = bench_first_order(robot_names, T, min_time, log)
    log("compile times (fresh processes, private NUMBA_CACHE_DIR):")
    ct = compile_times(log=log)
    notes = [f"batch: T = {T} knots, time per knot, parallel over knots on {os.cpu_count()} cores",
             "single: one point through the public API (input validation included)",
             "Pinocchio C++: shared/tools/pinocchio-cpp-reference, single thread"] + [
        f"compile, {c['process']}: import {c['import_s']:.2f} s, first call of all first-order "
        f"kernels {c['first_calls_s']:.2f} s" for c in ct]
    write_table(rows, "derivatives_fo", "First-order dynamics and derivatives: time per call",
                FO_COLUMNS, notes, log)
    return rows


# ---------------------------------------------------------------------------------- second order
SO_COLUMNS = [("robot", "robot"), ("nv", "nv"), ("method", "method"),
              ("single_us", "single [us]"), ("batch_us", "batch [us/knot]"),
              ("batch_out_us", "batch, out= reused [us/knot]"),
              ("single_vs_cpp", "single / C++"), ("batch_out_vs_cpp", "batch out= / C++")]


def bench_second_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print, extra_methods=()):
    """IDSVA-SO (ours) beside Pinocchio's C++ ComputeRNEASecondOrderDerivatives and the paper's
    Finite-Diff-2 (central differences of our IDSVA), per robot.  ``extra_methods`` are
    (label, fn(model, q, v, a)) pairs timed on single points (e.g. the CasADi baseline)."""
    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"second order: {name} (nv={model.nv})")
        Q, V, A, _ = random_states(model, T)
        q, v, a = Q[0], V[0], A[0]
        cpp = (cpp_timings(model, log) or {}).get("rnea_so_derivs_us")
        outT = dyn.id_second_derivatives(model, Q, V, A)
        s = time_us(lambda: dyn.id_second_derivatives(model, q, v, a), min_time)
        b = time_us(lambda: dyn.id_second_derivatives(model, Q, V, A), 3 * min_time, rounds=5) / T
        bo = time_us(lambda: dyn.id_second_derivatives(model, Q, V, A, out=outT), 3 * min_time,
                     rounds=5) / T
        rows.append(dict(robot=name, nv=model.nv, method="IDSVA-SO (ours)", single_us=s,
                         batch_us=b, batch_out_us=bo, single_vs_cpp=ratio(s, cpp),
                         batch_out_vs_cpp=ratio(bo, cpp)))
        rows.append(dict(robot=name, nv=model.nv, method="Pinocchio C++ (reference)",
                         single_us=cpp))
        f2 = time_us(lambda: accuracy.finite_diff_2(model, q, v, a), min_time)
        rows.append(dict(robot=name, nv=model.nv, method="Finite-Diff-2 (IDSVA + central diff.)",
                         single_us=f2, single_vs_cpp=ratio(f2, cpp)))
        for label, fn in extra_methods:
            t = time_us(lambda: fn(model, q, v, a), min_time)
            rows.append(dict(robot=name, nv=model.nv, method=label, single_us=t,
                             single_vs_cpp=ratio(t, cpp)))
    return rows


def _casadi_id_so(model, q, v, a, _cache={}):
    """The CasADi AD baseline's ID-SO (SX virtual machine; the compiled C is timed by
    ``soddp bench casadi``), built once per model."""
    if model.name not in _cache:
        _cache[model.name] = dyn.CasadiDynamics(model)
    return _cache[model.name].id_derivatives(q, v, a, order=2)


def run_second_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print,
                     extra_methods=(("CasADi AD (SX, no codegen)", _casadi_id_so),)):
    rows = bench_second_order(robot_names, T, min_time, log, extra_methods)
    notes = [f"batch: T = {T} knots through the public API, time per knot, parallel over knots on "
             f"{os.cpu_count()} cores; 'out= reused' writes into the arrays of an earlier call, as "
             "the C++ reference does (fresh batches must also fault in 1.5 MB of new pages per "
             "ATLAS knot)",
             "Pinocchio C++: ComputeRNEASecondOrderDerivatives, single thread, including the zeroing "
             "of its four nv^3 tensors (as ours includes it)",
             "Finite-Diff-2: step 1e-5, 4n perturbed IDSVA evaluations in one batched call",
             "CasADi AD: dynamics.CasadiDynamics, SX virtual machine through the Dynamics API; "
             "compiled C (where feasible) in results/casadi_baseline.md"]
    write_table(rows, "derivatives_so", "Second-order inverse-dynamics derivatives: time per call",
                SO_COLUMNS, notes, log)
    return rows


# ---------------------------------------------------------------------------------- FD second order
FD_SO_COLUMNS = [("robot", "robot"), ("nv", "nv"), ("method", "method"),
                 ("single_us", "single [us]"), ("batch_us", "batch, out= reused [us/knot]"),
                 ("vs_id_so", "single / our ID-SO")]


def bench_forward_second_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    """FDSVA-SO, full tensors and lam-contracted, beside our IDSVA-SO and the C++ ID-SO."""
    rows = []
    for name in robot_names:
        model = robots.load(name)
        log(f"FD second order: {name} (nv={model.nv})")
        Q, V, A, TAU = random_states(model, T)
        LAM = np.random.default_rng(1).normal(size=(T, model.nv))
        q, v, a, tau, lam = Q[0], V[0], A[0], TAU[0], LAM[0]
        o_id = dyn.id_second_derivatives(model, q, v, a)
        t_id = time_us(lambda: dyn.id_second_derivatives(model, q, v, a, out=o_id), min_time)
        cpp = (cpp_timings(model, log) or {}).get("rnea_so_derivs_us")
        rows.append(dict(robot=name, nv=model.nv, method="ID-SO: IDSVA-SO (ours)", single_us=t_id,
                         vs_id_so=1.0))
        rows.append(dict(robot=name, nv=model.nv, method="ID-SO: Pinocchio C++", single_us=cpp,
                         vs_id_so=ratio(cpp, t_id)))
        o1 = dyn.fd_second_derivatives(model, q, v, tau)
        oT = dyn.fd_second_derivatives(model, Q[:10], V[:10], TAU[:10])
        s = time_us(lambda: dyn.fd_second_derivatives(model, q, v, tau, out=o1), min_time, 5)
        b = time_us(lambda: dyn.fd_second_derivatives(model, Q[:10], V[:10], TAU[:10], out=oT),
                    min_time, 5) / 10
        rows.append(dict(robot=name, nv=model.nv, method="FD-SO full tensors (FDSVA-SO, auto)",
                         single_us=s, batch_us=b, vs_id_so=ratio(s, t_id)))
        l1 = dyn.fd_second_derivatives(model, q, v, tau, lam=lam)
        lT = dyn.fd_second_derivatives(model, Q, V, TAU, lam=LAM)
        s = time_us(lambda: dyn.fd_second_derivatives(model, q, v, tau, lam=lam, out=l1), min_time)
        b = time_us(lambda: dyn.fd_second_derivatives(model, Q, V, TAU, lam=LAM, out=lT),
                    min_time, 5) / T
        rows.append(dict(robot=name, nv=model.nv, method="FD-SO contracted with lam",
                         single_us=s, batch_us=b, vs_id_so=ratio(s, t_id)))
    return rows


def run_forward_second_order(robot_names=ROBOTS, T=100, min_time=0.2, log=print):
    rows = bench_forward_second_order(robot_names, T, min_time, log)
    notes = ["full tensors: batch of 10 knots (a 100-knot batch of ATLAS FD-SO tensors is 150 MB); "
             f"contracted: batch of {T} knots; both with out= reused, parallel on {os.cpu_count()} "
             "cores",
             "contracted: sum_i lam_i T[i] of all four second-order fields as (n, n) matrices, "
             "via mu-weighted IDSVA-SO (no n^3 tensor formed): what the DDP backward pass uses",
             "the paper reports about 2.1 ms for the full FD-SO tensors of ATLAS (200 us ID-SO)"]
    write_table(rows, "derivatives_fd_so", "Second-order forward-dynamics derivatives: time per call",
                FD_SO_COLUMNS, notes, log)
    return rows
