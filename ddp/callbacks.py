"""Callbacks of the solver: called after every iteration with its :class:`Iteration` record; one
returning True stops the solve (status "stopped-by-callback").  The iteration table printed with
``verbose=True`` is one of them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Iteration:
    """One row of the iteration table."""

    iteration: int
    cost: float
    grad_norm: float
    expected: float = float("nan")      # expected decrease of the accepted step
    actual: float = float("nan")        # actual decrease
    reg: float = float("nan")
    alpha: float = float("nan")
    t_derivatives: float = 0.0          # seconds: batched derivatives (costs and dynamics)
    t_backward: float = 0.0             # seconds: backward pass (incl. second-order terms)
    t_forward: float = 0.0              # seconds: line search rollouts and costs
    gap: float = 0.0                    # multiple shooting: largest gap (max abs) before the step
    exact: bool = False                 # the exact model: cost Hessians as set, DDP's dynamics
    #                                     terms (False: a safeguarded Gauss-Newton iteration)
    gauss_newton_knots: int = 0         # "safeguarded": knots where the exact terms were dropped
    fell_back: bool = False             # the exact model's backward pass failed: Gauss-Newton
    backward_passes: int = 0            # backward passes run (1 + retries at a larger reg)
    violation: float = float("nan")     # hard constraints: the largest violation (max abs)
    penalty: float = float("nan")       # hard constraints: the augmented Lagrangian's mu


class IterationTable:
    """Prints the iteration table: a header on :meth:`start`, a row per iteration, the status on
    :meth:`end`.  DDP's rows end with the model of the iteration's step: ``exact`` (with its
    second-order dynamics terms), ``GN`` (a Gauss-Newton iteration of the safeguarded
    globalization, as iLQR's), ``mixed`` (exact, with the terms dropped at some knots) or
    ``exact>GN`` (the exact model's backward pass failed and Gauss-Newton's gave the step); the
    exact model's derivatives and backward pass take longer."""

    HEAD = (f"{'iter':>4} {'cost':>13} {'|grad|':>9} {'expected':>9} {'actual':>9} {'reg':>7} "
            f"{'step':>6} {'deriv ms':>8} {'back ms':>8} {'fwd ms':>7}")

    def __init__(self, gaps: bool = False, constraints: bool = False):
        self.gaps, self.constraints = gaps, constraints
        self.model = False

    def start(self, method):
        self.model = method == "ddp"
        print(f"{method.upper()}:")
        print(self.HEAD + (f" {'gap':>8}" if self.gaps else "")
              + (f" {'violation':>9} {'penalty':>7}" if self.constraints else "")
              + (f" {'model':>8}" if self.model else ""))

    def __call__(self, r: Iteration):
        f = lambda x, w=9: f"{x:{w}.2e}" if np.isfinite(x) else f"{'-':>{w}}"
        gap = f" {r.gap:8.1e}" if self.gaps else ""
        if self.constraints:
            gap += f" {f(r.violation)} {r.penalty:7.0e}"
        model = ""
        if self.model:
            model = ("exact>GN" if r.fell_back else "GN" if not r.exact
                     else "mixed" if r.gauss_newton_knots else "exact")
            model = f" {model:>8}"
        print(f"{r.iteration:4d} {r.cost:13.6e} {f(r.grad_norm)} {f(r.expected)} "
              f"{f(r.actual)} {f(r.reg, 7) if np.isfinite(r.reg) else '-':>7} "
              f"{r.alpha if np.isfinite(r.alpha) else float('nan'):6.3f} "
              f"{1e3 * r.t_derivatives:8.2f} {1e3 * r.t_backward:8.2f} "
              f"{1e3 * r.t_forward:7.2f}{gap}{model}", flush=True)
        return False

    def end(self, sol):
        print(f"status: {sol.status} ({sol.message}); cost {sol.cost:.9g} after "
              f"{sol.iterations} iterations")
