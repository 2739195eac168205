"""The benchmarks of ``soddp bench``, registered in one place.

:data:`BENCHMARKS` maps a name to ``(description, run)``; ``run(options)`` takes a
:class:`BenchOptions` and writes its tables (and figures) to ``results/``.  One module per family:

* :mod:`.timing`: the timer, seeded inputs, the paper's trees, the C++ reference timings;
* :mod:`.derivatives`: first- and second-order derivatives beside Pinocchio (fo, so, fdso);
* :mod:`.scaling`: IDSVA-SO against N and the FDSVA-SO crossover (scaling, crossover);
* :mod:`.backends`: the CasADi AD baseline and the accuracy study (casadi, accuracy);
* :mod:`.contact`: the contact dynamics' derivatives beside Pinocchio (contact);
* :mod:`.solver`: ms per iteration of our DDP and iLQR by phase, beside Crocoddyl (solver);
* :mod:`.constrained`: the constrained examples beside mim-solvers' CSQP (constrained);
* :mod:`.mpc`: receding-horizon ticks of ddp.MPC beside Crocoddyl's loop (mpc);
* :mod:`.first_run`, :mod:`.compile_profile`: a first run's wait, and where its compile time
  goes (first-run, compile);
* :mod:`.dask_scaling`: the study engine on 1 and 2 Dask workers (dask);
* :mod:`.linearization`: the geometric linearization beside FDSVA and C++ Pinocchio (linearize);
* :mod:`.higher_order`: higher-order time derivatives beside the paper and CasADi (higher-order).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from . import (backends, compile_profile, constrained, contact, dask_scaling, derivatives,
               first_run, higher_order, linearization, mpc, scaling, solver)

ROBOTS = derivatives.ROBOTS


@dataclass
class BenchOptions:
    """What every benchmark may read: robots to time, knots per batched call, seconds per timing
    round, the CasADi code-generation settings, busy processes beside (solver) and where to
    log."""

    robots: tuple = ROBOTS
    batch: int = 100
    min_time: float = 0.2
    cflags: tuple = ("-O3",)
    codegen_timeout: float = 900.0
    codegen: bool = True
    load: int = 0
    log: Callable = field(default=print)


BENCHMARKS: dict[str, tuple[str, Callable[[BenchOptions], object]]] = {
    "fo": ("first-order dynamics derivatives (results/derivatives_fo)",
           lambda o: derivatives.run_first_order(o.robots, o.batch, o.min_time, o.log)),
    "so": ("IDSVA-SO beside the C++ reference and Finite-Diff-2 (results/derivatives_so)",
           lambda o: derivatives.run_second_order(o.robots, o.batch, o.min_time, o.log)),
    "fdso": ("FDSVA-SO, full and lam-contracted (results/derivatives_fd_so)",
             lambda o: derivatives.run_forward_second_order(o.robots, o.batch, o.min_time, o.log)),
    "scaling": ("IDSVA-SO against N on chains and binary trees (results/scaling_so)",
                lambda o: scaling.run_scaling(min_time=min(o.min_time, 0.1), log=o.log)),
    "crossover": ("FDSVA-SO Inner/Outer-Term crossover (results/fd_so_crossover)",
                  lambda o: scaling.run_crossover(min_time=min(o.min_time, 0.1), log=o.log)),
    "accuracy": ("errors of IDSVA-SO and finite differences against CasADi AD "
                 "(results/accuracy_so)", lambda o: backends.run_accuracy(log=o.log)),
    "casadi": ("CasADi AD baseline, SX and compiled C, beside ours (results/casadi_baseline)",
               lambda o: backends.run_casadi(o.robots, min(o.batch, 20), o.min_time, o.cflags,
                                             o.codegen_timeout, o.codegen, o.log)),
    "solver": ("ms per iteration of our DDP and iLQR by phase, beside Crocoddyl "
               "(results/solver_speed; with --load N, N busy processes beside: "
               "results/solver_speed_loadN)",
               lambda o: solver.run_solver_speed(log=o.log, load=o.load)),
    "constrained": ("hard constraints: ours (exact and Gauss-Newton curvature) beside "
                    "mim-solvers' CSQP on its UR5 example, and over 20 targets "
                    "(results/constrained)",
                    lambda o: constrained.run_constrained(log=o.log)),
    "mpc": ("receding-horizon ticks (ddp.MPC, UR3, T = 100, 1 and 2 iterations) beside "
            "Crocoddyl's FDDP loop (results/mpc_tick), and the closed loops in MuJoCo, DDP "
            "against iLQR: the UR5's (results/mpc) and Solo-12's trot (results/mpc_solo12)",
            lambda o: (mpc.run_mpc_ticks(log=o.log), mpc.run_closed_loop(log=o.log),
                       mpc.run_solo12_study(log=o.log))),
    "contact": ("contact dynamics derivatives, first and contracted second order, beside "
                "Pinocchio, with their accuracy (results/contact_derivatives)",
                lambda o: contact.run_contact(o.batch, o.min_time, o.log)),
    "first-run": ("what a new user waits for: the README's main command on an empty numba cache "
                  "and warm, soddp solve hyq cold (results/first_run; minutes)",
                  lambda o: first_run.run_first_run(o.log)),
    "compile": ("where a cold compile goes: the README's main command on an empty numba cache "
                "in one process, own / LLVM / front-end seconds per kernel "
                "(results/compile_profile; minutes)",
                lambda o: compile_profile.run_compile_profile(log=o.log)),
    "dask": ("the study engine on 1 and 2 Dask workers: speed-up, scheduling overhead, scale "
             "estimate (results/dask_scaling)", lambda o: dask_scaling.run_dask_scaling(o.log)),
    "linearize": ("the geometric linearization (Bos et al. 2022) beside FDSVA and C++ Pinocchio "
                  "(results/linearization_speed)",
                  lambda o: linearization.run_linearization(
                      tuple(r for r in o.robots if r in linearization.ROBOTS)
                      or linearization.ROBOTS, o.batch, o.min_time, log=o.log)),
    "higher-order": ("higher-order time derivatives (Ali et al. 2026) beside the paper's times, "
                     "against N and r, and CasADi AD in time (results/higher_order_speed, "
                     "higher_order_scaling_n, higher_order_scaling_r)",
                     lambda o: higher_order.run_higher_order(o.min_time, o.log)),
}


def run(what: str, options: BenchOptions | None = None):
    """Run the benchmark ``what`` (a key of :data:`BENCHMARKS`, or "all" for every one)."""
    if what != "all" and what not in BENCHMARKS:
        raise ValueError(f"what: expected one of {', '.join(BENCHMARKS)} or all; got {what!r}")
    options = options or BenchOptions()
    for name in (BENCHMARKS if what == "all" else [what]):
        BENCHMARKS[name][1](options)
