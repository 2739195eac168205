"""The ``soddp`` command.

    soddp solve PROBLEM [--method ddp|ilqr] [--backend analytical|casadi|finite-diff]
                [--max-iter N] [--globalization G] [--shooting single|multiple]
                [--start quasi-static|crocoddyl|cold] [--plot]
        solve one example problem: iteration table, status, plot and trajectory -> results/
    soddp compare PROBLEM [--max-iter N]
        DDP / iLQR / DDP with CasADi / DDP with finite differences side by side -> results/
    soddp study [--quick] [--parts backends globalization robustness] [--problems ...]
                [--instances N] [--methods ddp ilqr] [--set NAME=VALUE ...]
                [--workers N | --scheduler ADDRESS] [--resume] [--store FILE]
        compare on every problem, every globalization and shooting, random instances, as
        tasks on Dask with a progress bar; each record in the store at once
        -> results/study_store.csv, study.*, globalization.*, robustness.*
    soddp report [--parts ...] [--store FILE]
        the study's tables and figures from the store alone

    soddp bench [fo|so|fdso|scaling|crossover|accuracy|casadi|contact|solver|first-run|compile|dask|linearize|higher-order|all] [--robots ...] [--batch T]
                [--build-cpp] [--cflags FLAGS] [--codegen-timeout S] [--no-codegen]
        derivative and solver benchmarks -> results/
    soddp linearize
        the geometric linearization: the paper's validation and LQR -> results/
    soddp higher-order [--horizon S] [--dt S] [--order R]
        higher-order time derivatives on the aerial manipulator, round trips -> results/

Every subcommand has ``--help`` and ``--out DIR``: tables and figures go to ``results/`` in the
current directory (at the repository's root: ``output/``, which git ignores; ``--out results``
regenerates the committed tables), or to DIR.  Wrong names give a one-line error and exit code 2.  The
environment variables it reads are listed under ``--help`` (:data:`ENVIRONMENT`).
"""

from __future__ import annotations

import argparse
import ast
import gc
import math
import sys
from pathlib import Path

from ddp.globalization import GLOBALIZATIONS
import numba

from dynamics import robots, set_threads

from . import engine, higher_order, linearization, mpc_scenarios, output, parts, studies
from .bench import BENCHMARKS, ROBOTS, BenchOptions
from .bench import run as run_benchmark
from .examples import BACKENDS, PROBLEMS, STARTS
from .reference import pinocchio_cpp
from .store import ResultsStore
from .tasks import SOLVERS


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
                                          not args.no_codegen, args.load))
    return 0


def _mpc(args):
    if args.seconds > 600:  # (positive: its argparse type)
        print("soddp mpc: error: --seconds: expected 0 < S <= 600", file=sys.stderr)
        return 2
    mpc_scenarios.run(args.scenario, args.method, args.iterations, args.seconds, args.animate)
    return 0


def _linearize(args):
    linearization.run()
    return 0


def _higher_order(args):
    if args.horizon <= 0 or args.dt <= 0 or args.dt > args.horizon:
        print("soddp higher-order: error: expected 0 < dt <= horizon", file=sys.stderr)
        return 2
    if not 0 <= args.order <= 10:
        print("soddp higher-order: error: --order: expected 0..10", file=sys.stderr)
        return 2
    higher_order.run(args.horizon, args.dt, args.order)
    return 0


def _solve(args):
    studies.solve_command(args.problem, args.method, args.backend, args.max_iter, args.plot,
                          settings=dict(globalization=args.globalization, shooting=args.shooting),
                          animate=args.animate, start=args.start)
    return 0


def _compare(args):
    studies.compare_command(args.problem, args.max_iter)
    return 0


def _number(kind, low, strict):
    """An argparse type: ``kind`` (int or float) above ``low`` (or at it unless ``strict``)."""
    what = ("a positive " if strict else "a non-negative ") + (
        "integer" if kind is int else "number")

    def parse(text):
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}") from None
        if not math.isfinite(x) or x < low or (strict and x == low):
            raise argparse.ArgumentTypeError(f"expected {what}; got {text!r}")
        return x

    return parse


_COUNT, _POSITIVE_COUNT = _number(int, 0, False), _number(int, 0, True)
_SECONDS = _number(float, 0.0, True)


def _threads(text):
    """--threads: 'auto' or a number of threads (1 .. NUMBA_NUM_THREADS)."""
    if text == "auto":
        return text
    most = numba.config.NUMBA_NUM_THREADS
    try:
        n = int(text)
    except ValueError:
        n = 0
    if not 1 <= n <= most:
        raise argparse.ArgumentTypeError(f"expected auto or a number of threads from 1 to "
                                         f"{most}; got {text!r}")
    return n


def _setting(text):
    """NAME=VALUE of --set: the value as a Python literal (1e-8, 50, True) or a string."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE; got {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def _store(args):
    return ResultsStore(args.store) if args.store else parts.default_store()


def _study(args):
    try:  # every task is built and checked before any work starts
        by_part = parts.tasks(args.parts, args.problems, args.quick, args.instances,
                              args.methods, dict(args.set))
        client = engine.connect(args.workers, args.scheduler)
    except (ValueError, engine.SchedulerUnreachable) as e:
        print(f"soddp study: error: {e}", file=sys.stderr)
        return 2
    store = _store(args)
    try:
        parts.study(by_part, client, store, args.resume)
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished tasks are in {store.path}; "
              "run the same command with --resume to continue", file=sys.stderr)
        return 130
    finally:
        engine.close(client)
    return 0


def _report(args):
    store = _store(args)
    if not store.path.is_file():
        print(f"soddp report: error: no store at {store.path} (run soddp study first)",
              file=sys.stderr)
        return 2
    try:
        parts.report(args.parts, store, study=args.study)
    except ValueError as e:
        print(f"soddp report: error: {e}", file=sys.stderr)
        return 2
    return 0


def _method_argument(parser):
    parser.add_argument("--method", choices=["ddp", "ilqr"], default="ddp",
                        help="full second-order DDP (default) or iLQR")


def _add_solver_commands(sub):
    names = ", ".join(PROBLEMS)
    s = sub.add_parser("solve", help="solve one example problem",
                       description="Solve an example problem, print the iteration table and the "
                       "final status, and write a convergence plot and the trajectory (csv) to "
                       "results/.")
    s.add_argument("problem", choices=list(PROBLEMS), metavar="PROBLEM", help=f"one of: {names}")
    _method_argument(s)
    s.add_argument("--backend", choices=list(BACKENDS), default="analytical",
                   help="dynamics derivatives: analytical (default), casadi (AD) or finite-diff")
    s.add_argument("--max-iter", type=_COUNT, default=200, metavar="N", help="default 200")
    s.add_argument("--globalization", choices=list(GLOBALIZATIONS), default="safeguarded",
                   help="how steps are regularized (default safeguarded; shift: pure DDP)")
    s.add_argument("--shooting", choices=["single", "multiple"], default=None,
                   help="single or multiple shooting (FDDP's gaps); default: the problem's "
                        "(multiple on the gaits, single on the others)")
    s.add_argument("--start", choices=list(STARTS), default=None,
                   help="the initial guess: quasi-static (the controls holding x0 and their "
                        "rollout), crocoddyl (x0 at every knot, the controls holding it: "
                        "Crocoddyl's examples' start) or cold (x0, zero controls); default: the "
                        "problem's (crocoddyl on the gaits, quasi-static on the others)")
    s.add_argument("--plot", action="store_true",
                   help="also plot the trajectory (q, v, u against time)")
    s.add_argument("--animate", action="store_true",
                   help="also write the motion as a self-contained HTML animation (meshcat; "
                        "open it in a browser)")
    s.set_defaults(func=_solve)
    c = sub.add_parser("compare", help="DDP vs iLQR vs CasADi vs finite differences on a problem",
                       description="Solve a problem with DDP (analytical), iLQR, DDP with CasADi "
                       "AD derivatives and DDP with finite-difference second derivatives; write "
                       "one table and one convergence plot to results/compare_PROBLEM.*")
    c.add_argument("problem", choices=list(PROBLEMS), metavar="PROBLEM", help=f"one of: {names}")
    c.add_argument("--max-iter", type=_COUNT, default=200, metavar="N", help="default 200")
    c.set_defaults(func=_compare)
    st = sub.add_parser("study", help="the DDP-versus-iLQR study on every problem, on Dask",
                        description="Run compare on every example problem, every globalization "
                        "with single and multiple shooting, and DDP / iLQR on random instances. "
                        "Each solve is a task on Dask (a local cluster by default); each finished "
                        "task is appended at once to the results store, and the tables and "
                        "figures (results/study.*, compare_*.png, globalization.*, robustness.*) "
                        "are computed from the store.")
    st.add_argument("--quick", action="store_true",
                    help="at most 150 iterations per run (full study: 500 in the backends part, "
                    "300 in the others) and 5 random instances per family instead of 20")
    st.add_argument("--problems", nargs="+", choices=list(PROBLEMS), metavar="PROBLEM",
                    help=f"a subset of: {names}")
    st.add_argument("--parts", nargs="+", choices=parts.PARTS, default=list(parts.PARTS),
                    metavar="PART", help="backends (DDP/iLQR and derivative backends, "
                    "results/study.*), globalization (every globalization, single and multiple "
                    "shooting, Crocoddyl beside: results/globalization.*), robustness (random "
                    "instances: results/robustness.*); default: all three")
    st.add_argument("--instances", type=_POSITIVE_COUNT, default=None, metavar="N",
                    help="random instances per family (default 20, --quick 5)")
    st.add_argument("--methods", nargs="+", choices=SOLVERS["soddp"],
                    default=list(SOLVERS["soddp"]), metavar="METHOD",
                    help="our methods to run: ddp, ilqr (default both)")
    st.add_argument("--set", nargs="+", type=_setting, default=[], metavar="NAME=VALUE",
                    help="more solver settings for every task (ddp.SolverSettings fields, "
                    "e.g. --set tol=1e-8 reg_factor=4)")
    where = st.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_POSITIVE_COUNT, default=None, metavar="N",
                       help="start a local Dask cluster of N worker processes, one thread each "
                       "(default: the number of cores); 1: run in this process (debugging)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="use a running Dask cluster, e.g. tcp://head-node:8786")
    st.add_argument("--resume", action="store_true",
                    help="skip the tasks already in the store (continue an interrupted study); "
                    "without it, the study's tasks are run again and their records replaced")
    st.add_argument("--store", type=Path, metavar="FILE",
                    help=f"the results store (default results/{parts.STORE_NAME})")
    st.set_defaults(func=_study)
    rp = sub.add_parser("report", help="the study's tables and figures from its store",
                        description="Write results/study.*, globalization.* and robustness.* "
                        "from the records in the results store alone, without solving.")
    rp.add_argument("--parts", nargs="+", choices=parts.PARTS, default=list(parts.PARTS),
                    metavar="PART", help="default: all three")
    rp.add_argument("--store", type=Path, metavar="FILE",
                    help=f"the results store (default results/{parts.STORE_NAME})")
    rp.add_argument("--study", metavar="NAME",
                    help="which study of the store to report, by the options that made it: "
                    "'full', 'quick', 'quick --set tol=1e-08', ... (needed when the store holds "
                    "several)")
    rp.set_defaults(func=_report)


class _Parser(argparse.ArgumentParser):
    """Errors as one line (``soddp solve: error: ...``) and exit code 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message}\n")


#: the environment variables the command reads (listed under --help)
ENVIRONMENT = (
    "environment: SODDP_CROCODDYL_PYTHON (a Python with Crocoddyl 3.2.1: its rows beside ours), "
    "SODDP_MIM_SOLVERS_PYTHON (the command running a Python with mim-solvers 0.3.0: CSQP's "
    "rows), "
    "SODDP_CACHE (CasADi code-generation cache, default ~/.cache/soddp), SODDP_PINOCCHIO_REF and "
    "SODDP_PINOCCHIO_REF_BUILD (the C++ Pinocchio reference's sources and build folder), "
    "SODDP_NO_CACHE_GUARD=1 (skip the numba cache guard), SODDP_NUMBA_PATCHES=0 (plain numba), "
    "SODDP_COMPILE_ASIDE=0 (a first run "
    "compiles on one core, without a second process), SODDP_THREADS (the default of "
    "--threads), NUMBA_NUM_THREADS (the most threads)")


class _Sub:
    """Adds a subcommand with the options every subcommand has (``--out``)."""

    def __init__(self, sub):
        self.sub = sub
        self.common = argparse.ArgumentParser(add_help=False)
        self.common.add_argument("--out", type=Path, metavar="DIR",
                                 help="write tables and figures to DIR (default: results/ in "
                                 "the current directory; at the repository's root output/, "
                                 "which git ignores: --out results regenerates the committed "
                                 "tables)")
        self.common.add_argument("--threads", type=_threads, default=None, metavar="N",
                                 help="threads of the batched kernels: a number, or auto (the "
                                 "default: all cores, fewer while other processes keep cores "
                                 "busy)")

    def add_parser(self, name, **kw):
        return self.sub.add_parser(name, parents=[self.common], epilog=ENVIRONMENT, **kw)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="soddp", description="Full second-order DDP for rigid-body "
                                "robots: exact dynamics derivatives, solvers, studies.",
                epilog=ENVIRONMENT)
    sub = _Sub(p.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    b = sub.add_parser("bench", help="derivative benchmarks (tables in results/)",
                       description="Time our kernels beside Pinocchio (Python binding and the C++ "
                       "reference) and write results/derivatives_*.csv and .md.")
    b.add_argument("what", nargs="?", default="fo", choices=[*BENCHMARKS, "all"],
                   help="; ".join(f"{k}: {d}" for k, (d, _) in BENCHMARKS.items())
                   + "; all: every one (default: fo)")
    b.add_argument("--robots", nargs="+", default=list(ROBOTS), metavar="ROBOT",
                   help=f"robots to time (default: {' '.join(ROBOTS)})")
    b.add_argument("--batch", type=_POSITIVE_COUNT, default=100, metavar="T",
                   help="knots per batched call")
    b.add_argument("--min-time", type=_SECONDS, default=0.2, metavar="S",
                   help="seconds per timing round (default 0.2)")
    b.add_argument("--build-cpp", action="store_true",
                   help="build the C++ Pinocchio reference first if it is not built (minutes)")
    b.add_argument("--cflags", default="-O3", metavar="FLAGS",
                   help="casadi: C compiler flags of the code-generated baseline (default -O3)")
    b.add_argument("--codegen-timeout", type=_SECONDS, default=900.0, metavar="S",
                   help="casadi: stop compiling a generated function after S seconds (default 900)")
    b.add_argument("--no-codegen", action="store_true",
                   help="casadi: time only the SX virtual machine, no C code generation")
    b.add_argument("--load", type=_COUNT, default=0, metavar="N",
                   help="solver: run N busy processes beside the solvers (a machine shared with "
                   "a simulator or another solve); results/solver_speed_loadN")
    b.set_defaults(func=_bench)
    mp = sub.add_parser("mpc", help="closed-loop receding horizon: ddp.MPC driving MuJoCo",
                        description="Run a closed-loop scenario: ddp.MPC on the measured state "
                        "of a MuJoCo plant (its feedback policy between ticks), with a push "
                        "midway; write its table, a plot of the tracked quantities and the "
                        "trajectory to results/mpc_SCENARIO_METHOD.*")
    mp.add_argument("scenario", choices=list(mpc_scenarios.SCENARIOS), metavar="SCENARIO",
                    help="ur5-reach-mpc: the UR5 tracking a moving target with tool0; "
                    "solo12-trot-mpc: Solo-12 trotting forward (a floating base, MuJoCo "
                    "deciding the contacts)")
    _method_argument(mp)
    mp.add_argument("--iterations", type=_POSITIVE_COUNT, default=1, metavar="N",
                    help="iterations per tick (default 1)")
    mp.add_argument("--seconds", type=_SECONDS, default=5.0, metavar="S",
                    help="simulated seconds, at most 600 (default 5)")
    mp.add_argument("--animate", action="store_true",
                    help="also write the motion as an HTML animation (meshcat)")
    mp.set_defaults(func=_mpc)
    li = sub.add_parser("linearize", help="the geometric linearization: validation and LQR",
                        description="The geometric linearization of moving-base dynamics (Bos et "
                        "al. 2022): central-difference errors against it on the paper's "
                        "validation tree, and LQR stabilizing a space manipulator; tables and "
                        "figures in results/ (linearization_fd_error, lqr_space_manipulator).")
    li.set_defaults(func=_linearize)
    ho = sub.add_parser("higher-order", help="higher-order time derivatives: the aerial manipulator",
                        description="The higher-order dynamics paper's example (Ali et al. 2026): "
                        "the 12-DoF aerial manipulator on the Table 3 motion, its base wrench and "
                        "joint torques with their time derivatives, and the ID->FD and hybrid round "
                        "trips; results/higher_order_tau.png, higher_order_round_trip.{csv,md,png}.")
    ho.add_argument("--horizon", type=float, default=30.0, metavar="S",
                    help="duration T of the motion in seconds (default 30, the paper's)")
    ho.add_argument("--dt", type=float, default=0.01, metavar="S",
                    help="sampling step in seconds (default 0.01)")
    ho.add_argument("--order", type=int, default=5, metavar="R",
                    help="highest derivative order r of the torques (default 5)")
    ho.set_defaults(func=_higher_order)
    _add_solver_commands(sub)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.out is not None:
        output.RESULTS = args.out.resolve()
    if args.threads is not None:
        set_threads(args.threads)
    return args.func(args)


def run() -> int:
    """The ``soddp`` command: :func:`main`, then the objects the run made are left out of the
    garbage collector's passes while Python shuts down (``gc.freeze``): numba's compiled kernels
    form a large object graph, and those passes took 0.35 s of a warm ``soddp compare ur3``
    (2.3 s) and 1 s of a cold one."""
    status = main()
    gc.freeze()
    return status


if __name__ == "__main__":
    sys.exit(run())
