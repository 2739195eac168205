"""DDP and iLQR on a :class:`~ddp.problem.ShootingProblem`: the loop over iterations.

Both share everything (costs, integrator, regularization, line search, stopping test) except the
backward-pass terms ``V'_x . F_xx``, ``V'_x . F_xu``, ``V'_x . F_uu`` that full DDP adds (the exact
second-order dynamics) and iLQR drops.  One iteration, phase by phase:

1. derivatives (:meth:`ShootingProblem.calc_diff`): costs and step derivatives of all knots, on
   the analytical backend in one parallel call (:mod:`ddp.evaluation`; DDP with
   ``second_order="tensor"``: also the full FD-SO tensors);
2. backward pass (:func:`ddp.backward.backward`, compiled), regularized as the globalization
   strategy says (:mod:`ddp.globalization`: where the shift goes, how it adapts, and whether this
   iteration uses the exact second-order model or Gauss-Newton), until Q_uu is positive definite
   at every knot;
3. forward pass (:func:`ddp.line_search.line_search`): closed-loop rollouts and their costs (one
   compiled call per trial on the analytical backend) with backtracking (with
   multiple shooting, FDDP's feasibility-driven rollouts that shrink the gaps);
4. callbacks (:mod:`ddp.callbacks`), then the stopping test on the adjoint gradient.

Failures are statuses, not exceptions (:data:`STATUSES`).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import threadpoolctl

from .backward import backward, gradient_norm
from .callbacks import Iteration, IterationTable
from .evaluation import KnotDerivatives
from .globalization import STRATEGIES
from .kernels.records import SecondOrderMode
from .line_search import line_search
from .local_model import GAUSS_NEWTON, exact_model
from .settings import DEFAULT_SETTINGS, SolverSettings
from .solution import Solution

#: what ended a solve
STATUSES = {
    "converged": "the gradient norm (or the expected decrease) fell below its tolerance, and "
                 "with hard constraints no constraint is violated by more than constraint_tol",
    "converged-saddle": "DDP: a stationary point where the exact Q_uu is not positive definite "
                        "(a saddle or a maximum, not a minimum)",
    "max-iterations": "max_iter iterations without converging",
    "line-search-failed": "no step length decreased the cost, up to reg_max",
    "regularization-exhausted": "Q_uu was not positive definite even with reg_max",
    "diverged": "a non-finite cost or derivatives (initial guess or during the solve)",
    "infeasible": "the control bounds are empty (u_min > u_max), or a hard constraint stayed "
                  "violated with the penalty at penalty_max (the message names it and its knot)",
    "stopped-by-callback": "a callback returned True",
}


def _initial_guess(problem, xs, us):
    """The checked initial controls (default: quasi-static, the controls holding x0; zeros
    without rnea), or a (status, message) when they are not finite."""
    if us is None:
        us = problem.initial_controls()
    us = problem.check_controls(us).copy()
    if xs is not None:
        xs = problem.trajectory_arrays(xs, us)[0]  # shape and dtype named
        if not np.all(np.isfinite(xs)):
            return us, ("diverged", "xs: the initial states are not finite")
    if not np.all(np.isfinite(us)):
        return us, ("diverged", "us: the initial controls are not finite")
    return us, None


_TINY = np.finfo(float).tiny

_BLAS: threadpoolctl.ThreadpoolController | None = None


def _one_blas_thread():
    """A context in which BLAS runs on one thread.  The backward pass calls BLAS for its large
    products between parallel numba kernels; OpenBLAS's own threads keep spinning after a call and
    then compete with numba's for the cores (measured on ATLAS: iLQR 32 -> 21 ms per iteration
    with one BLAS thread).  The controller is built once (about 6 ms), entering it costs ~50 us."""
    global _BLAS
    if _BLAS is None:
        import scipy.linalg.cython_blas  # noqa: F401  the BLAS numba's np.dot calls, loaded first

        _BLAS = threadpoolctl.ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def solve(problem, xs=None, us=None, settings: SolverSettings | None = None, callbacks=(),
          multipliers=None, gaps=None, **overrides) -> Solution:
    """Solve ``problem`` by full second-order DDP or iLQR (``settings.method``).

    ``us``: initial controls (T, nu) (default: ``problem.quasi_static()``, the controls that hold
    the robot at x0).  ``xs``: initial states (T + 1, nx); with ``shooting="multiple"`` they are
    the start of the state trajectory, gaps included (default: x0 at every knot, Crocoddyl's
    cold start); with single shooting they are only checked (the states are the rollout of
    ``us``).
    ``settings``: a :class:`SolverSettings`; ``overrides``: any of its fields by name, e.g.
    ``solve(problem, method="ilqr", max_iter=50)``.  ``callbacks``: callables ``cb(Iteration)``
    called after every iteration (one callable alone is also accepted); one returning True
    stops the solve.  ``multipliers``: with hard constraints, the multipliers to start from (a
    previous :attr:`Solution.multipliers`; default zeros).  ``gaps``: with multiple shooting,
    the defects (T + 1, ndx) of (xs, us) when the caller knows them (:class:`ddp.MPC`: a
    shifted solution's are zero but at its first and last knots); default: computed.
    """
    if isinstance(xs, str):
        raise TypeError(f"xs: expected initial states ({problem.T + 1}, {problem.nx}) or None; "
                        f"got {xs!r} (the method is a setting: solve(problem, method={xs!r}))")
    s = settings or DEFAULT_SETTINGS
    if overrides:
        s = s.updated(**overrides)
    callbacks = _checked_callbacks(callbacks)
    multipliers = _checked_multipliers(problem, multipliers)
    if gaps is not None:
        gaps = _float_gaps(problem, gaps)
    with _one_blas_thread():
        problem.prepare()
        return _solve(problem, xs, us, s, callbacks, multipliers, gaps)


def _float_gaps(problem, gaps):
    f = np.asarray(gaps, dtype=float)
    if f.shape != (problem.T + 1, problem.ndx):
        raise ValueError(f"gaps: expected shape ({problem.T + 1}, {problem.ndx}); got {f.shape}")
    return f


def _checked_multipliers(problem, multipliers):
    size = problem.constraints.size
    if multipliers is None:
        return np.zeros(size)
    lam = np.asarray(multipliers, dtype=float)
    if lam.shape != (size,) or not np.all(np.isfinite(lam)):
        raise ValueError(f"multipliers: expected {size} finite values (a Solution.multipliers of "
                         f"this problem); got shape {lam.shape}")
    return lam.copy()


def _checked_callbacks(callbacks) -> list:
    """``callbacks`` (a callable or an iterable of them) as a list; ValueError naming what is
    not callable."""
    if callable(callbacks):
        return [callbacks]
    try:
        out = list(callbacks)
    except TypeError:
        raise ValueError(f"callbacks: expected callables cb(Iteration); got {callbacks!r}") \
            from None
    for i, cb in enumerate(out):
        if not callable(cb):
            raise ValueError(f"callbacks: expected callables cb(Iteration); got {cb!r} at "
                             f"position {i}")
    return out


class _Stop(Exception):
    """How a phase ends the solve: a status of :data:`STATUSES` and its message (caught by
    :func:`_solve`, which returns the :class:`Solution`; never seen by the caller)."""

    def __init__(self, status, message):
        super().__init__(status, message)
        self.status, self.message = status, message


def _solve(problem, xs, us, s: SolverSettings, callbacks, multipliers, gaps) -> Solution:
    """The loop, phase by phase (module docstring)."""
    run = _Run(problem, s, callbacks, multipliers)
    try:
        run.start(xs, us, gaps)
        glob = STRATEGIES[s.globalization](s, run.exact)
        while True:
            if run.it >= s.max_iter and run.it > 0 and not s.gradient_at_end:
                raise _Stop("max-iterations", f"stopped after max_iter = {s.max_iter} "
                                              f"iterations (the last trajectory's gradient not "
                                              f"evaluated: gradient_at_end=False)")
            local = glob.local_model(run.gaps is None)
            d, rec = run.differentiate(local)
            while run.stop_test(rec, d, local):  # the multipliers or the penalty changed
                d, rec = run.differentiate(local, costs_of=d)
            policy = run.backward(d, local, glob, rec)
            run.step(policy, glob, rec)
    except _Stop as stop:
        return run.finish(stop.status, stop.message)


class _Run:
    """The state of one solve: the trajectory (xs, us, its cost and gaps), the iteration count,
    the history and the last policy, and its phases."""

    def __init__(self, problem, settings, callbacks, multipliers):
        self.problem, self.s = problem, settings
        #: hard constraints: the augmented Lagrangian (None without), its multipliers, penalty,
        #: the last subproblem's violation eta and the gradient norm omega that ends a
        #: subproblem (:meth:`next_subproblem`)
        self.al = problem.constraints if problem.constraints else None
        self.lam, self.mu = multipliers, settings.penalty
        self.eta, self.omega = np.inf, 1.0
        self.residuals, self.violation, self.solved = None, None, False
        self.updated, self.kkt = None, np.inf  # the multipliers' update, and the KKT residual
        mode = (problem.second_order_mode(settings.second_order)
                if settings.method == "ddp" else SecondOrderMode.NONE)
        self.exact = exact_model(settings.method, settings.hessians, mode)
        self.table = IterationTable(gaps=settings.shooting == "multiple",
                                    constraints=self.al is not None) \
            if settings.verbose else None
        if self.table:
            self.table.start(settings.method)
        self.callbacks = ([self.table] if self.table else []) + list(callbacks)
        self.xs = self.us = None
        self.cost, self.gaps = float("nan"), None
        self.cost_pending = False
        self.it, self.history, self.policy = 0, [], None

    def finish(self, status, message) -> Solution:
        # the trajectory and the policy may be the problem's work arrays: the solution's own
        policy = self.policy and dataclasses.replace(
            self.policy, xs=np.array(self.policy.xs), us=np.array(self.policy.us),
            k=self.policy.k.copy(), K=self.policy.K.copy(),
            Vx=None if self.policy.Vx is None else self.policy.Vx.copy(),
            fVxx=None if self.policy.fVxx is None else self.policy.fVxx.copy())
        cost, constrained = self.cost, {}
        if self.al is not None:  # the cost alone, and the multipliers
            self.al.write(self.lam, 0.0)
            if np.all(np.isfinite(self.xs)):
                cost = self.problem.cost(self.xs, self.us)
            constrained = dict(multipliers=self.lam.copy(), penalty=self.mu, violation=(
                np.nan if self.violation is None else self.violation.value))
        sol = Solution(np.array(self.xs), np.array(self.us), cost, self.it,
                       status == "converged", status, message, self.history, self.s.method,
                       policy, self.s, _description(self.problem), **constrained)
        if self.table:
            self.table.end(sol)
        return sol

    def record(self, rec) -> bool:
        """Add an iteration to the history and call the callbacks: True when one asks to
        stop."""
        self.history.append(rec)
        stop = False
        for cb in self.callbacks:
            stop = bool(cb(rec)) or stop
        return stop

    def start(self, xs, us, gaps=None):
        """The initial trajectory, its gaps (``gaps``: known, else computed) and its cost (the
        statuses of a bad start)."""
        problem, s = self.problem, self.s
        if self.al is not None:
            self.al.write(self.lam, self.mu)
        self.us, bad = _initial_guess(problem, xs, us)
        nan_states = np.full((problem.T + 1, problem.nx), np.nan)
        if np.any(problem.u_min > problem.u_max):
            i = int(np.argmax(problem.u_min > problem.u_max))
            self.xs = nan_states
            raise _Stop("infeasible", f"u_min > u_max for control {i} ({problem.u_min[i]} > "
                                      f"{problem.u_max[i]})")
        if bad:
            self.xs = nan_states
            raise _Stop(*bad)
        us = np.clip(self.us, problem.u_min, problem.u_max)
        if s.shooting == "single":
            self.xs, self.us, self.cost = problem.rollout_cost(us)
        else:  # multiple shooting: the states are given (default: x0 at every knot)
            self.us = us
            self.xs = (np.tile(problem.x0, (problem.T + 1, 1)) if xs is None
                       else problem.check_states(xs).copy())
            self.gaps = (_open_gaps(problem, self.xs, us, s.gap_tol) if gaps is None
                         else None if np.all(np.abs(gaps) <= s.gap_tol) else gaps)
            if self.gaps is not None and not np.all(np.isfinite(self.gaps)):
                raise _Stop("diverged", "xs, us: a step from the initial guess is not finite")
            self.cost_pending = True  # the first derivatives' costs: one evaluation fewer
            return
        self.check_cost()

    def check_cost(self):
        """The status of a start whose cost is not finite."""
        if not np.isfinite(self.cost):
            problem = self.problem
            us = self.us
            what = "the rollout of the initial controls" if self.gaps is None \
                else "the initial guess"
            why = problem.failure(self.xs, us)
            raise _Stop("diverged", f"us: {what} has a non-finite cost"
                        + (f" ({why})" if why else ""))

    def differentiate(self, local, costs_of=None):
        """The derivatives of every knot for the local model, and the iteration's record.
        ``costs_of``: derivatives at the same trajectory whose dynamics are kept, the costs
        alone evaluated again (after the constraints' multipliers or penalty changed)."""
        problem = self.problem
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            d = (problem.calc_diff(self.xs, self.us, local, copy=False) if costs_of is None
                 else problem.costs_again(self.xs, self.us, local, costs_of))
        t_der = time.perf_counter() - t0
        if self.cost_pending:  # the start's cost: that of its derivatives
            self.cost_pending = False
            self.cost = float(np.sum(d.running.l) + d.terminal.l[0])
            self.check_cost()
        if not d.all_finite():
            why = problem.failure(self.xs, self.us, d.step.forces.status)
            raise _Stop("diverged", "non-finite derivatives" + (f" ({why})" if why else ""))
        grad = gradient_norm(problem, self.us, d)
        gap = 0.0 if self.gaps is None else float(np.max(np.abs(self.gaps)))
        rec = Iteration(self.it, self.cost, grad, t_derivatives=t_der, gap=gap, exact=local.exact)
        if self.al is not None:
            if costs_of is None:  # the same trajectory keeps its residuals
                lam = d.step.forces.lam  # the knots' forces, for residuals on forces
                self.residuals = self.al.residuals(self.xs, self.us,
                                                   lam if lam.shape[1] else None)
                self.violation = self.al.violation(self.residuals)
            self.updated = self.al.updated(self.lam, self.mu, self.residuals)
            # feasibility and complementarity: how far r is from clip(r + lam/mu), which is
            # zero exactly when r is feasible and lam is a multiplier of it
            self.kkt = max(self.violation.value,
                           self.al.complementarity(self.lam, self.updated, self.mu))
            rec.violation, rec.penalty = self.violation.value, self.mu
            rec.cost = self.cost - self.al.shift(self.lam, self.mu)
        return d, rec

    def stop_test(self, rec, d, local) -> bool:
        """Converged (the gradient norm below tol on a feasible trajectory; for DDP, a minimum:
        :meth:`saddle`) or out of iterations.  With hard constraints, True when the subproblem
        was solved and the multipliers or the penalty changed (:meth:`next_subproblem`)."""
        s = self.s
        if self.al is not None and self.gaps is None and (rec.grad_norm < max(self.omega, s.tol)
                                                          or self.solved):
            if not (self.kkt <= s.constraint_tol
                    and (rec.grad_norm < s.tol or self.solved)):
                if self.it < s.max_iter:
                    self.next_subproblem(rec)
                    return True
            else:
                self.lam = self.updated
                self.record(rec)
                reason = (f"gradient norm {rec.grad_norm:.2e} < tol = {s.tol:g}"
                          if rec.grad_norm < s.tol else "expected decrease below rounding")
                raise _Stop("converged", f"{reason}, constraints violated by at most "
                                         f"{self.violation.value:.1e}")
        if rec.grad_norm < s.tol and self.gaps is None and self.al is None:
            self.record(rec)
            reason = f"gradient norm {rec.grad_norm:.2e} < tol = {s.tol:g}"
            knot = self.saddle(d, local)
            if knot is not None:
                raise _Stop("converged-saddle", f"{reason}, but Q_uu is not positive definite "
                                                f"at knot {knot} under the exact model: a saddle "
                                                "or a maximum")
            raise _Stop("converged", reason)
        if self.it >= s.max_iter:
            self.record(rec)
            raise _Stop("max-iterations", f"stopped after max_iter = {s.max_iter} iterations"
                        + (f"; {self.violation}" if self.al is not None else ""))
        return False

    def next_subproblem(self, rec):
        """The augmented Lagrangian's next subproblem, the method of multipliers (Bertsekas
        1982, Sec. 2.2; Nocedal & Wright 17.3): the first-order update of the multipliers, and a
        larger penalty when the KKT residual of the constraints (max |r - clip(r + lam/mu,
        lower, upper)|: the violation, and complementarity) did not fall below a quarter of the
        last subproblem's
        (at penalty_max: status "infeasible"); each subproblem is solved to a tenth of the last
        one's gradient norm (the first to 1, none below tol).  Then the trajectory's cost under
        the new terms.  Measured on ``ur5-box`` (UR5, T = 40): 16 iterations with these
        settings; with LANCELOT's rules (Nocedal & Wright, Algorithm 17.4, penalty 10) 30, with
        the multipliers updated after every iteration 76 to 200."""
        s, v = self.s, self.kkt
        self.solved = False
        self.lam = self.updated
        if v > 0.25 * self.eta:  # the violation fell too little: a larger penalty
            if self.mu >= s.penalty_max:
                self.record(rec)
                raise _Stop("infeasible", f"{self.violation} with the penalty at penalty_max = "
                                          f"{s.penalty_max:g}")
            self.mu = min(self.mu * s.penalty_factor, s.penalty_max)
        self.eta = v
        self.omega = max(self.omega / 10, s.tol)
        self.al.write(self.lam, self.mu)
        self.cost = self.problem.cost(self.xs, self.us)
    def saddle(self, d=None, local=None):
        """DDP at a stationary point: the knot where the exact Q_uu is not positive definite
        (None: a minimum as far as Q_uu tells).  The last backward pass is the certificate when
        it was exact everywhere and unregularized; otherwise one exact pass without
        regularization decides (at the start, or after Gauss-Newton iterations).  iLQR's
        Gauss-Newton Q_uu is positive semi-definite by construction and cannot tell."""
        if self.s.method != "ddp":
            return None
        last = next((h for h in reversed(self.history[:-1]) if h.backward_passes), None)
        if (last is not None and last.exact and not last.gauss_newton_knots
                and not last.reg > self.s.reg_min):
            return None
        problem = self.problem
        with np.errstate(all="ignore"):
            if d is None or local != self.exact:
                d = problem.calc_diff(self.xs, self.us, self.exact, copy=False)
            policy, knot = backward(problem, self.xs, self.us, d, self.exact,
                                    box_qp_iter=self.s.box_qp_iter)
        return None if policy is not None else knot

    def backward(self, d, local, glob, rec):
        """Backward passes until one gives a policy, regularized as the globalization says
        (and falling back to Gauss-Newton where it asks to)."""
        problem, s = self.problem, self.s
        t0 = time.perf_counter()
        while True:
            rec.backward_passes += 1
            with np.errstate(all="ignore"):
                policy, knot = backward(problem, self.xs, self.us, d, local, glob.regularization(),
                                        self.gaps, box_qp_iter=s.box_qp_iter, reuse=True,
                                        keep=self.policy and self.policy.k)
            if policy is not None:
                break
            if local.exact and glob.exact_failed():
                local = GAUSS_NEWTON  # the step derivatives stay; DDP's terms are dropped
                rec.exact, rec.fell_back = False, True
                if s.hessians != "gauss-newton":
                    with np.errstate(all="ignore"):
                        costs = problem.cost_derivatives(self.xs, self.us, "gauss-newton",
                                                         d.step.forces)
                        d = KnotDerivatives(*costs, d.step, d.second_order)
                continue
            if not glob.backward_failed():
                break
        rec.t_backward = time.perf_counter() - t0
        if policy is None:
            self.record(rec)
            raise _Stop("regularization-exhausted",
                        f"Q_uu not positive definite at knot {knot} up to reg {s.reg_max:g}")
        self.policy = policy
        return policy

    def step(self, policy, glob, rec):
        """The line search along the policy; the accepted step becomes the trajectory."""
        problem, s = self.problem, self.s
        t0 = time.perf_counter()
        step = line_search(problem, policy, self.cost, glob.alphas, s.c1, s.max_increase_ratio,
                           out=problem.evaluation.trial_record(self.xs))
        rec.t_forward = time.perf_counter() - t0
        rec.reg = glob.value
        rec.gauss_newton_knots = policy.gauss_newton_knots
        if step is None:
            stop = self.record(rec)
            full = policy.expected_decrease(1.0, None) if self.gaps is None else np.inf
            if full < s.decrease_tol * (1 + abs(self.cost)):  # none could beat rounding
                self.it += 1
                self.converged_below_rounding(full, with_gradient=False)
                return  # with hard constraints: the subproblem is solved
            if not glob.no_step():
                raise _Stop("line-search-failed", f"no step length gave a decrease; "
                                                  f"regularization above {s.reg_max:g}")
            self.it += 1
            if stop:
                raise _Stop("stopped-by-callback", "a callback returned True")
            return
        rec.expected, rec.actual, rec.alpha = step.expected, step.actual, step.alpha
        stop = self.record(rec)
        reduction = step.actual / max(abs(self.cost), _TINY)
        self.xs, self.us, self.cost = step.xs, step.us, step.cost
        glob.accepted(step.alpha, step.ratio, reduction)
        was_feasible = self.gaps is None
        if self.gaps is not None:  # a full step closes the gaps exactly; a partial one shrinks
            self.gaps = (None if step.alpha == 1.0
                         else _open_gaps(problem, self.xs, self.us, s.gap_tol))
        self.it += 1
        if stop:
            raise _Stop("stopped-by-callback", "a callback returned True")
        if was_feasible and step.expected < s.decrease_tol * (1 + abs(self.cost)):
            self.converged_below_rounding(step.expected, with_gradient=True)

    def converged_below_rounding(self, expected, with_gradient):
        """Stop: the expected decrease of a full step is below rounding (after an accepted step
        whose trajectory's gradient is then recorded, or when no step length was accepted: the
        trajectory and its record stay).  A saddle under the exact model is named as such.
        With hard constraints the subproblem is solved: the next iteration's test decides."""
        if self.al is not None:
            self.solved = True
            return
        if with_gradient:
            d = self.problem.calc_diff(self.xs, self.us, GAUSS_NEWTON, copy=False)  # gradient
            self.record(Iteration(self.it, self.cost, gradient_norm(self.problem, self.us, d)))
        reason = f"expected decrease {expected:.1e} below rounding"
        knot = self.saddle()
        if knot is not None:
            raise _Stop("converged-saddle", f"{reason}, but Q_uu is not positive definite "
                                            f"at knot {knot} under the exact model")
        raise _Stop("converged", reason)


def _open_gaps(problem, xs, us, gap_tol):
    """The gaps of a multiple-shooting trajectory, or None when they are all below gap_tol."""
    with np.errstate(all="ignore"):
        f = problem.gaps(xs, us)
    return f if not np.all(np.abs(f) <= gap_tol) else None


def _description(problem) -> dict:
    """What a saved solution says about its problem."""
    return dict(kind=type(problem).__name__, dynamics=repr(problem.dynamics), T=problem.T,
                dt=problem.dt, nq=problem.nq, nv=problem.nv, nu=problem.nu,
                x0=np.asarray(problem.x0).tolist(), info=dict(getattr(problem, "info", {}) or {}))
