"""The ``soddp`` command.

    soddp solve PROBLEM [--method ddp|ilqr] [--backend analytical|casadi|finite-diff]
                [--max-iter N] [--globalization G] [--shooting single|multiple] [--plot]
        solve one example problem: iteration table, status, plot and trajectory -> results/
    soddp compare PROBLEM [--max-iter N]
        DDP / iLQR / DDP with CasADi / DDP with finite differences side by side -> results/
    soddp study [--quick] [--parts backends globalization robustness] [--instances N]
        compare on every problem, every globalization and shooting, random instances, with
        progress bars -> results/study.*, globalization.*, robustness.*

    soddp bench [fo|so|fdso|scaling|crossover|accuracy|casadi|solver|all] [--robots ...] [--batch T]
                [--build-cpp] [--cflags FLAGS] [--codegen-timeout S] [--no-codegen]
        derivative and solver benchmarks -> results/

Every subcommand has ``--help``.  Wrong names give a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys

from ddp.globalization import GLOBALIZATIONS
from dynamics import robots

from . import robustness, studies
from .bench import BENCHMARKS, ROBOTS, BenchOptions
from .bench import run as run_benchmark
from .examples import BACKENDS, PROBLEMS
from .reference import pinocchio_cpp


def _bench(args):
    for r in args.robots:
        if r not in robots.NAMES:
            print(f"soddp bench: error: unknown robot {r!r} (choose from {', '.join(robots.NAMES)})",
                  file=sys.stderr)
            return 2
    if args.build_cpp and not pinocchio_cpp.is_built():
        pinocchio_cpp.build()
    run_benchmark(args.what, BenchOptions(tuple(args.robots), args.batch, args.min_time,
                                          tuple(args.cflags.split()), args.codegen_timeout,
                                          not args.no_codegen))
    return 0


def _solve(args):
    studies.solve_command(args.problem, args.method, args.backend, args.max_iter, args.plot,
                          settings=dict(globalization=args.globalization, shooting=args.shooting))
    return 0


def _compare(args):
    studies.compare_command(args.problem, args.max_iter)
    return 0


STUDY_PARTS = ("backends", "globalization", "robustness")


def _study(args):
    if "backends" in args.parts:
        studies.study(quick=args.quick, problems=args.problems)
    if "globalization" in args.parts:
        robustness.globalization_study(args.problems, max_iter=150 if args.quick else 300)
    if "robustness" in args.parts:
        n = args.instances if args.instances is not None else (5 if args.quick else 20)
        families = [f for f in (args.problems or robustness.FAMILIES) if f in robustness.FAMILIES]
        robustness.robustness_study(n, families)
    return 0


def _add_solver_commands(sub):
    names = ", ".join(PROBLEMS)
    s = sub.add_parser("solve", help="solve one example problem",
                       description="Solve an example problem, print the iteration table and the "
                       "final status, and write a convergence plot and the trajectory (csv) to "
                       "results/.")
    s.add_argument("problem", choices=list(PROBLEMS), metavar="PROBLEM", help=f"one of: {names}")
    s.add_argument("--method", choices=["ddp", "ilqr"], default="ddp",
                   help="full second-order DDP (default) or iLQR")
    s.add_argument("--backend", choices=list(BACKENDS), default="analytical",
                   help="dynamics derivatives: analytical (default), casadi (AD) or finite-diff")
    s.add_argument("--max-iter", type=int, default=200, metavar="N", help="default 200")
    s.add_argument("--globalization", choices=list(GLOBALIZATIONS), default="safeguarded",
                   help="how steps are regularized (default safeguarded; shift: pure DDP)")
    s.add_argument("--shooting", choices=["single", "multiple"], default="single",
                   help="single (default) or multiple shooting (FDDP's gaps)")
    s.add_argument("--plot", action="store_true",
                   help="also plot the trajectory (q, v, u against time)")
    s.set_defaults(func=_solve)
    c = sub.add_parser("compare", help="DDP vs iLQR vs CasADi vs finite differences on a problem",
                       description="Solve a problem with DDP (analytical), iLQR, DDP with CasADi "
                       "AD derivatives and DDP with finite-difference second derivatives; write "
                       "one table and one convergence plot to results/compare_PROBLEM.*")
    c.add_argument("problem", choices=list(PROBLEMS), metavar="PROBLEM", help=f"one of: {names}")
    c.add_argument("--max-iter", type=int, default=200, metavar="N", help="default 200")
    c.set_defaults(func=_compare)
    st = sub.add_parser("study", help="the DDP-versus-iLQR study on every problem",
                        description="Run compare on every example problem, every globalization "
                        "with single and multiple shooting, and DDP / iLQR on random instances, "
                        "with progress bars; write results/study.*, compare_*.png, "
                        "globalization.* and robustness.*.")
    st.add_argument("--quick", action="store_true",
                    help="at most 150 iterations per run (full study: 500 in the backends part, "
                    "300 in the others) and 5 random instances per family instead of 20")
    st.add_argument("--problems", nargs="+", choices=list(PROBLEMS), metavar="PROBLEM",
                    help=f"a subset of: {names}")
    st.add_argument("--parts", nargs="+", choices=STUDY_PARTS, default=list(STUDY_PARTS),
                    metavar="PART", help="backends (DDP/iLQR and derivative backends, "
                    "results/study.*), globalization (every globalization, single and multiple "
                    "shooting, Crocoddyl beside: results/globalization.*), robustness (random "
                    "instances: results/robustness.*); default: all three")
    st.add_argument("--instances", type=int, default=None, metavar="N",
                    help="random instances per family (default 20, --quick 5)")
    st.set_defaults(func=_study)


class _Parser(argparse.ArgumentParser):
    """Errors as one line (``soddp solve: error: ...``) and exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="soddp", description="Full second-order DDP for rigid-body "
                                "robots: exact dynamics derivatives, solvers, studies.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    b = sub.add_parser("bench", help="derivative benchmarks (tables in results/)",
                       description="Time our kernels beside Pinocchio (Python binding and the C++ "
                       "reference) and write results/derivatives_*.csv and .md.")
    b.add_argument("what", nargs="?", default="fo", choices=[*BENCHMARKS, "all"],
                   help="; ".join(f"{k}: {d}" for k, (d, _) in BENCHMARKS.items())
                   + "; all: every one (default: fo)")
    b.add_argument("--robots", nargs="+", default=list(ROBOTS), metavar="ROBOT",
                   help=f"robots to time (default: {' '.join(ROBOTS)})")
    b.add_argument("--batch", type=int, default=100, metavar="T", help="knots per batched call")
    b.add_argument("--min-time", type=float, default=0.2, metavar="S",
                   help="seconds per timing round (default 0.2)")
    b.add_argument("--build-cpp", action="store_true",
                   help="build the C++ Pinocchio reference first if it is not built (minutes)")
    b.add_argument("--cflags", default="-O3", metavar="FLAGS",
                   help="casadi: C compiler flags of the code-generated baseline (default -O3)")
    b.add_argument("--codegen-timeout", type=float, default=900.0, metavar="S",
                   help="casadi: stop compiling a generated function after S seconds (default 900)")
    b.add_argument("--no-codegen", action="store_true",
                   help="casadi: time only the SX virtual machine, no C code generation")
    b.set_defaults(func=_bench)
    _add_solver_commands(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
