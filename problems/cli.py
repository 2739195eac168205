"""The ``soddp`` command.

    soddp bench [fo|so|fdso|scaling|crossover|accuracy|casadi|all] [--robots ...] [--batch T]
                [--build-cpp] [--cflags FLAGS] [--codegen-timeout S] [--no-codegen]
        derivative benchmarks -> results/

Every subcommand has ``--help``.  Wrong names give a one-line error and exit code 2.
"""

from __future__ import annotations

import argparse
import sys


def _bench(args):
    from . import bench, cpp_reference

    if args.build_cpp and not cpp_reference.is_built():
        cpp_reference.build()
    from dynamics import robots

    for r in args.robots:
        if r not in robots.NAMES:
            print(f"soddp bench: error: unknown robot {r!r} (choose from {', '.join(robots.NAMES)})",
                  file=sys.stderr)
            return 2
    bench.run(args.what, args.robots, args.batch, args.min_time,
              casadi_options=dict(cflags=tuple(args.cflags.split()),
                                  max_compile_s=args.codegen_timeout, codegen=not args.no_codegen))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="soddp", description="Full second-order DDP for rigid-body "
                                "robots: exact dynamics derivatives, solvers, studies.")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    b = sub.add_parser("bench", help="derivative benchmarks (tables in results/)",
                       description="Time our kernels beside Pinocchio (Python binding and the C++ "
                       "reference) and write results/derivatives_*.csv and .md.")
    from .bench import BENCHMARKS

    b.add_argument("what", nargs="?", default="fo", choices=[*BENCHMARKS, "all"],
                   help="; ".join(f"{k}: {v}" for k, v in BENCHMARKS.items())
                   + "; all: every one (default: fo)")
    b.add_argument("--robots", nargs="+", default=["ur3", "hyq", "atlas", "talos"],
                   metavar="ROBOT", help="robots to time (default: ur3 hyq atlas talos)")
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
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
