"""Timing helpers shared by every benchmark: the timer, seeded inputs, the paper's trees and the
C++ Pinocchio reference timings of a robot."""

from __future__ import annotations

import time

import numpy as np

from dynamics import robots

from ..reference import pinocchio_cpp


def time_us(fn, min_time=0.2, rounds=15) -> float:
    """Microseconds per call of ``fn()``: the minimum over ``rounds`` rounds (each about
    ``min_time / rounds`` seconds) of the mean time per call.  The minimum is robust to the noise
    of a shared virtual machine."""
    return time_us_alternating((fn,), min_time, rounds)[0]


def time_us_alternating(fns, min_time=0.2, rounds=15) -> list:
    """:func:`time_us` of each of ``fns`` (``min_time`` each) with their rounds taking turns (a
    round of each, then the next), so that the minima of a ratio of two of them meet the same
    phases of a noisy machine."""
    one = []
    for fn in fns:
        fn()
        t0 = time.perf_counter()
        fn()
        one.append(max(time.perf_counter() - t0, 1e-7))
    ns = [max(1, int(min_time / rounds / t)) for t in one]
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, (fn, n) in enumerate(zip(fns, ns)):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[i] = min(best[i], (time.perf_counter() - t0) / n)
    return [b * 1e6 for b in best]


def ratio(a, b):
    """a / b, or None when either is missing."""
    return a / b if a and b else None


def random_states(model, T, seed=0):
    """(Q, V, A, TAU) of T knots: random configurations and normal vectors, seeded."""
    rng = np.random.default_rng(seed)
    Q = np.array([model.random_configuration(rng) for _ in range(T)])
    V, A, TAU = rng.normal(size=(3, T, model.nv))
    return Q, V, A, TAU


def paper_trees(sizes):
    """(kind, N, model, q, x1, x2) for the paper's serial chains and binary trees of each size,
    with a seeded random configuration and two random n-vectors."""
    for kind, make in (("serial chain", robots.serial_chain), ("binary tree", robots.binary_tree)):
        for N in sizes:
            m = make(N)
            rng = np.random.default_rng(0)
            q = m.random_configuration(rng)
            x1, x2 = rng.normal(size=(2, N))
            yield kind, N, m, q, x1, x2


def cpp_timings(model, log=print, n=1000):
    """The C++ Pinocchio timings of ``model`` (a dict, see :mod:`problems.reference.pinocchio_cpp`:
    the mean of ``n`` calls of each algorithm) or None when the reference is not built or the
    model has no URDF."""
    if model.urdf_path is None:
        return None
    t = pinocchio_cpp.timings(model.urdf_path, bool(model.floating_base), model.name, n)
    if t is None:
        log(f"  (C++ reference not available for {model.name}: build it with "
            f"`soddp bench --build-cpp` or {pinocchio_cpp.tool_dir()}/build.sh)")
    return t
