"""Receding-horizon control on a :class:`~ddp.problem.ShootingProblem`: :class:`MPC`.

Each tick sets the problem's x0 to the measured state, warm-starts from the last solution
shifted by one knot (states, controls and the constraints' multipliers; the last knot's
repeated; a cyclic problem's phase schedule moved on by one time step, the knots that wrap
around warm-started from the last solution a cycle earlier), runs a fixed number of
iterations (or until a time budget is spent) with multiple shooting, and returns the first
control; the feedback gains K of the last backward pass, about the solution, serve a faster
inner loop between ticks (:attr:`MPC.policy`).  A tick evaluates the derivatives once per
iteration: the gradient of its final trajectory is the next tick's first row
(``gradient_at_end=False``), as Crocoddyl's solvers report it.
"""

from __future__ import annotations

import time

import numpy as np

from .backward import Policy
from .settings import DEFAULT_SETTINGS, SolverSettings
from .solution import Solution
from .solver import solve


class MPC:
    """``mpc = MPC(problem, iterations=1, budget_ms=None, **settings)``; ``u = mpc.step(x)``.

    ``iterations``: iterations per tick (at most, with ``budget_ms``: a tick stops after the
    first iteration that ends past the budget); ``settings``: a
    :class:`~ddp.settings.SolverSettings` and/or any of its fields by name (shooting is
    multiple: a shifted warm start has gaps).  ``xs``, ``us``: the first tick's start (default:
    x at every knot and the problem's initial controls).  ``cyclic``: each tick after the first
    moves the problem's phases on by one time step (:meth:`~ddp.problem.ShootingProblem.cycle`:
    a problem over one cycle of a gait follows the gait); an impact knot takes no time, so a
    tick that would start at one moves past it too (the plant's own contacts make the impact;
    the control returned is always a time step's).  ``wrap``: called, before the tick's solve,
    with the running cost of each knot that wrapped around to the end (where a travelling gait
    moves its references on by a stride)."""

    def __init__(self, problem, iterations: int = 1, budget_ms: float | None = None,
                 settings: SolverSettings | None = None, xs=None, us=None, cyclic=False,
                 wrap=None, **overrides):
        if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) \
                or iterations < 1:
            raise ValueError(f"iterations: expected a positive integer; got {iterations!r}")
        if budget_ms is not None and not (np.isfinite(budget_ms) and budget_ms > 0):
            raise ValueError(f"budget_ms: expected a positive number of milliseconds or None; "
                             f"got {budget_ms!r}")
        if cyclic and problem.constraints:
            raise ValueError("cyclic: a problem with constraints cannot move its schedule on; "
                             "expected cyclic=False")
        if wrap is not None and not (cyclic and callable(wrap)):
            raise ValueError(f"wrap: expected a function of a knot's cost, with cyclic=True; "
                             f"got {wrap!r}")
        self.problem = problem
        self.cyclic = bool(cyclic)
        self.wrap = wrap
        self.budget_ms = budget_ms
        self.settings = (settings or DEFAULT_SETTINGS).updated(
            **{"shooting": "multiple", **overrides, "max_iter": int(iterations),
               "gradient_at_end": False})
        self._xs = None if xs is None else problem.check_states(xs).copy()
        self._us = None if us is None else problem.check_controls(us).copy()
        #: the last tick's :class:`~ddp.solution.Solution` (None before the first tick)
        self.solution: Solution | None = None
        self.ticks = 0
        self._policy = self._policy_of = None  # the policy about the last solution

    @property
    def policy(self):
        """The last tick's feedback policy about its solution, for a faster inner loop
        (:class:`~ddp.backward.Policy` with the solution's xs, us, the backward pass's K and
        k = 0: u = us_t + K_t (x (-) xs_t), as Crocoddyl's users apply it); None before the
        first tick or when its backward pass failed.  The tick's step, full or partial, is in
        us: the backward pass's own policy adds its whole feedforward k, which after a partial
        step overshoots (measured on solo12-trot-mpc: falls after 8 N pushes at one iteration
        per tick, and after 4 N at two, that this policy survives)."""
        s = self.solution
        if s is None or s.policy is None:
            return None
        if self._policy_of is not s:
            p = s.policy
            self._policy = Policy(s.xs, s.us, np.zeros_like(p.k), p.K, 0.0, 0.0)
            self._policy_of = s
        return self._policy

    def step(self, x) -> np.ndarray:
        """The control (nu,) to apply at the measured state ``x`` (nq + nv,)."""
        P = self.problem
        P.x0 = P._check_x(x, "x")
        if self.solution is None:
            xs = np.tile(P.x0, (P.T + 1, 1)) if self._xs is None else self._xs
            us = P.initial_controls() if self._us is None else self._us
            lam = None
            gaps = None
        else:
            s = self.solution
            if self.cyclic:  # the knots that wrap: the last solution a cycle earlier
                k = self._move_on()
                tail_x, tail_u = self._a_cycle_on(s.xs, s.xs[1:k + 1]), s.us[:k]
            else:  # the last knot repeated
                k, tail_x, tail_u = 1, s.xs[-1:], s.us[-1:]
            xs = np.concatenate([s.xs[k:], tail_x])
            us = np.concatenate([s.us[k:], tail_u])
            lam = None if s.multipliers is None else P.constraints.shifted(s.multipliers)
            gaps = _shifted_gaps(P, s, xs, us, k)
        if self.budget_ms is None:
            self.solution = solve(P, xs, us, self.settings, multipliers=lam, gaps=gaps)
        else:
            self.solution = solve(P, xs, us, self.settings, _Budget(self.budget_ms),
                                  multipliers=lam, gaps=gaps, max_iter=10 ** 6)
        self.ticks += 1
        return self.solution.us[0].copy()

    def _a_cycle_on(self, xs, states):
        """``states`` of the horizon ``xs`` one cycle on: a floating base moved by what the
        base moved over the horizon (a travelling gait), other states as they are."""
        model = self.problem.dynamics.model
        if model is None or not model.has_free_flyer:
            return states
        out = np.array(states)
        out[:, :3] += xs[-1, :3] - xs[0, :3]
        return out

    def _move_on(self) -> int:
        """Cycle the problem one knot on, and past the impacts that would start it; the
        knots moved (``wrap`` called with each wrapped knot's cost)."""
        P = self.problem
        k = 0
        while k == 0 or (P.impacts[0] and k < P.T):
            P.cycle(1)
            k += 1
            if self.wrap is not None:
                self.wrap(P.knot_costs.costs[-1])
        return k


def _shifted_gaps(P, solution, xs, us, k=1):
    """The defects of the solution shifted by k knots (xs, us) when the solution's own were
    closed (its last iteration started without gaps, or closed them with a full step): zero
    but at the first knot (the new x0) and the last k (the states and controls appended):
    differences and k steps instead of a step of every knot.  None when they must be
    computed."""
    last = solution.history[-1] if solution.history else None
    if last is None or not (last.gap == 0.0 or last.alpha == 1.0):
        return None
    f = np.zeros((P.T + 1, P.ndx))
    f[0] = P.integrator.difference(xs[0], P.x0)
    T = P.T  # the steps of the last k knots
    steps = P.evaluation.steps(xs[T - k:T], us[T - k:T], T - k)
    f[T - k + 1:] = P.integrator.difference(xs[T - k + 1:], steps)
    return f


class _Budget:
    """A callback that stops a solve once ``ms`` milliseconds have passed since it was made."""

    def __init__(self, ms):
        self.deadline = time.perf_counter() + 1e-3 * ms

    def __call__(self, rec):
        return time.perf_counter() >= self.deadline
