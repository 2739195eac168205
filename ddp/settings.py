"""Every setting of the solver in one place, with its default and what it does."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from .globalization import GLOBALIZATIONS
from .local_model import SECOND_ORDER

METHODS = ("ddp", "ilqr")
HESSIANS = ("exact", "gauss-newton")
SHOOTING = ("single", "multiple")


@dataclass(frozen=True)
class SolverSettings:
    """Settings of :func:`ddp.solve` (any field can also be passed to ``solve`` by name).

    Method and model:
        method: "ddp" (full second-order DDP: the exact V'_x . F_xx terms) or "ilqr" (without).
        hessians: cost Hessians, "exact" (second-order terms of the residuals included) or
            "gauss-newton" (J_r^T W J_r).
        second_order: where DDP's second-order dynamics terms come from: "tensor" (full FD-SO
            tensors of all knots in the batched derivative call, contracted in the backward
            pass), "contracted" (the analytical backend's lam-contracted FDSVA-SO at each knot,
            inside the compiled backward pass: O(n^3) per knot instead of O(n^4)) or "auto"
            (tensor up to nv = 4, ``ddp.local_model.TENSOR_MAX_NV``, contracted above or when
            some knot has contacts; tensor for every other backend).  With contacts the
            analytical backend gives only "contracted" (and "auto"); the CasADi and
            finite-difference backends give "tensor" at every knot, impacts included.

    Shooting and globalization:
        shooting: "single" (the states are the rollout of the controls) or "multiple" (the
            states are decision variables too, with gaps between knots closed by the
            feasibility-driven rollout and expected-decrease model of FDDP, Mastalli et al.
            2020; with DDP the backward pass keeps the exact second-order dynamics terms).
        globalization: how steps are regularized (:mod:`ddp.globalization`): "shift",
            "state-shift", "crocoddyl", "trust-region" or "safeguarded".  "shift" with method
            "ddp" is the pure DDP of the papers.
        gauss_newton_reduction: "safeguarded": while a Gauss-Newton iteration lowers the cost
            by at least this fraction of itself, the next one is Gauss-Newton too (it is
            converging fast; the exact terms, built on the current costates, would not beat
            it); 0 gives every iteration the chance to use the exact terms.  Fletcher & Xu
            (1987, "Hybrid methods for nonlinear least squares") switch on 0.2.
        gap_tol: multiple shooting: the gaps count as closed below this norm (max abs).
        max_increase_ratio: multiple shooting: while gaps remain, a step whose model predicts a
            cost increase (closing gaps can cost) is accepted when the actual increase is at
            most this multiple of the predicted one (Crocoddyl's th_acceptnegstep).

    Stopping:
        max_iter: iterations at most.
        gradient_at_end: after max_iter iterations, evaluate the derivatives of the final
            trajectory once more to record its gradient norm (False: stop without them, as a
            receding-horizon tick does: :class:`ddp.MPC`; its next tick's first row reports it).
        tol: converged when the norm of the gradient of the total cost w.r.t. the controls
            (projected onto the control box) is below tol.
        decrease_tol: also converged when the expected decrease of a full step is below
            decrease_tol * (1 + |cost|) (nothing left to gain above rounding), whether a step
            was accepted or none could be.

    Regularization ``reg`` (where it is added and how it adapts: the globalization): starts at
    reg_init; with "shift", "state-shift" and "safeguarded" it is increased when Q_uu is not
    positive definite or no step is accepted and decreased after every accepted step, by factors
    starting at reg_factor that grow while the same direction repeats (Tassa, Erez, Todorov
    2012); below reg_min it drops to 0; above reg_max the solve stops (status
    "regularization-exhausted" or "line-search-failed").

    Line search (backtracking on the step length alpha of the closed-loop rollout):
        alphas: the step lengths tried, largest first.
        c1: accept when the actual decrease is at least c1 times the expected one (0.1,
            Crocoddyl's th_acceptstep: a step that keeps less of its promise is refused for a
            shorter one, which on HyQ walking saves 6 of 16 iterations).

    Control bounds (the box-QP of Tassa, Mansard, Todorov 2014 when the problem has bounds):
        box_qp_iter: projected-Newton iterations per knot at most.

    Hard constraints (the augmented Lagrangian of :mod:`ddp.constraints`, when the problem has
    constraints):
        constraint_tol: converged only when no constraint is violated by more than this (max
            abs, in the residuals' units) and the multipliers are complementary to it (max
            |lam+ - lam| / mu, the same units), besides the gradient test.
        penalty: the penalty mu of the first subproblem.
        penalty_factor: mu grows by this factor when a subproblem's solution did not lower the
            violation below a quarter of the last one's.
        penalty_max: above it the solve stops with status "infeasible", naming the constraint
            and the knot of the largest violation.

    verbose: print the iteration table (the :class:`ddp.callbacks.IterationTable` callback).
    """

    method: str = "ddp"
    hessians: str = "exact"
    second_order: str = "auto"
    shooting: str = "single"
    globalization: str = "safeguarded"
    gauss_newton_reduction: float = 0.2
    gap_tol: float = 1e-9
    max_increase_ratio: float = 2.0
    max_iter: int = 100
    gradient_at_end: bool = True
    tol: float = 1e-6
    decrease_tol: float = 1e-12
    reg_init: float = 0.0
    reg_min: float = 1e-9
    reg_max: float = 1e9
    reg_factor: float = 1.6
    alphas: tuple = tuple(0.5 ** i for i in range(11))
    c1: float = 0.1
    box_qp_iter: int = 50
    constraint_tol: float = 1e-6
    penalty: float = 100.0
    penalty_factor: float = 10.0
    penalty_max: float = 1e9
    verbose: bool = False

    def __post_init__(self):
        _choice("method", self.method, METHODS)
        _choice("hessians", self.hessians, HESSIANS)
        _choice("second_order", self.second_order, SECOND_ORDER)
        _choice("shooting", self.shooting, SHOOTING)
        _choice("globalization", self.globalization, GLOBALIZATIONS)
        # plain Python checks: settings are made at every solve (numpy's cost 10x as much)
        for name in ("max_iter", "box_qp_iter"):
            x = getattr(self, name)
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or x < 0:
                raise ValueError(f"{name}: expected a non-negative integer; got {x!r}")
        for name in ("tol", "decrease_tol", "reg_init", "reg_min", "reg_max", "c1", "gap_tol",
                     "max_increase_ratio", "gauss_newton_reduction", "constraint_tol"):
            x = getattr(self, name)
            if not isinstance(x, (int, float, np.floating)) or not 0 <= x < math.inf:
                raise ValueError(f"{name}: expected a non-negative finite number; got {x!r}")
        for name in ("reg_factor", "penalty_factor"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float, np.floating)) and 1 < x < math.inf):
                raise ValueError(f"{name}: expected a number above 1; got {x!r}")
        for name in ("penalty", "penalty_max"):
            x = getattr(self, name)
            if not (isinstance(x, (int, float, np.floating)) and 0 < x < math.inf):
                raise ValueError(f"{name}: expected a positive finite number; got {x!r}")
        if not isinstance(self.alphas, tuple) or not all(type(a) is float for a in self.alphas):
            object.__setattr__(self, "alphas",
                               tuple(float(a) for a in np.atleast_1d(self.alphas)))
        if not self.alphas or not all(0 < a <= 1 for a in self.alphas):
            raise ValueError(f"alphas: expected step lengths in (0, 1]; got {self.alphas!r}")

    def updated(self, **overrides) -> "SolverSettings":
        """A copy with some fields changed; an unknown name is a ValueError naming it."""
        for k in overrides:
            if k not in _FIELDS:
                raise ValueError(f"{k}: not a solver setting (settings: "
                                 f"{', '.join(sorted(_FIELDS))})")
        return replace(self, **overrides)


def _choice(name, value, allowed):
    if value not in allowed:
        options = (" or ".join(map(repr, allowed)) if len(allowed) == 2
                   else "one of " + ", ".join(map(repr, allowed)))
        raise ValueError(f"{name}: expected {options}; got {value!r}")


_FIELDS = frozenset(f.name for f in fields(SolverSettings))
#: the defaults (settings are frozen, so one instance serves every solve)
DEFAULT_SETTINGS = SolverSettings()
