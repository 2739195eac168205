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
3. forward pass (:func:`ddp.forward.line_search`): closed-loop rollouts and their costs (one
   compiled call per trial on the analytical backend) with backtracking (with
   multiple shooting, FDDP's feasibility-driven rollouts that shrink the gaps);
4. callbacks (:mod:`ddp.callbacks`), then the stopping test on the adjoint gradient.

Failures are statuses, not exceptions (:data:`STATUSES`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import threadpoolctl

from .backward import Policy, backward, gradient_norm
from .callbacks import Iteration, IterationTable
from .evaluation import KnotDerivatives
from .forward import line_search
from .globalization import STRATEGIES
from .settings import DEFAULT_SETTINGS, SolverSettings

#: what ended a solve
STATUSES = {
    "converged": "the gradient norm (or the expected decrease) fell below its tolerance",
    "max-iterations": "max_iter iterations without converging",
    "line-search-failed": "no step length decreased the cost, up to reg_max",
    "regularization-exhausted": "Q_uu was not positive definite even with reg_max",
    "diverged": "a non-finite cost or derivatives (initial guess or during the solve)",
    "infeasible": "the control bounds are empty (u_min > u_max)",
    "stopped-by-callback": "a callback returned True",
}


@dataclass
class Solution:
    """The result of :func:`solve`: trajectory, cost, status and the history of iterations.
    ``policy`` holds the feedback gains (k, K) of the last backward pass about (xs, us) of that
    iteration (None if no backward pass succeeded)."""

    xs: np.ndarray
    us: np.ndarray
    cost: float
    iterations: int
    converged: bool
    status: str
    message: str = ""
    history: list = field(default_factory=list)
    method: str = "ddp"
    policy: Policy | None = None

    @property
    def grad_norms(self):
        return np.array([h.grad_norm for h in self.history])

    @property
    def costs(self):
        return np.array([h.cost for h in self.history])


def _initial_guess(P, xs, us):
    """The checked initial controls (default: quasi-static, the controls holding x0; zeros
    without rnea), or a (status, message) when they are not finite."""
    if us is None:
        try:  # cold start: hold x0 (Crocoddyl's quasiStatic), or zeros without rnea
            us = P.quasi_static()
        except NotImplementedError:
            us = np.zeros((P.T, P.nu))
    us = P.check_controls(us).copy()
    if xs is not None:
        if np.shape(xs) != (P.T + 1, P.nx):
            raise ValueError(f"xs: expected shape ({P.T + 1}, {P.nx}); got {np.shape(xs)}")
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
          **overrides) -> Solution:
    """Solve ``problem`` by full second-order DDP or iLQR (``settings.method``).

    ``us``: initial controls (T, nu) (default: ``problem.quasi_static()``, the controls that hold
    the robot at x0).  ``xs``: initial states (T + 1, nx); with ``shooting="multiple"`` they are
    the start of the state trajectory, gaps included (default: x0 at every knot, Crocoddyl's
    cold start); with single shooting they are only checked (the states are the rollout of
    ``us``).
    ``settings``: a :class:`SolverSettings`; ``overrides``: any of its fields by name, e.g.
    ``solve(problem, method="ilqr", max_iter=50)``.  ``callbacks``: callables ``cb(Iteration)``
    called after every iteration (one callable alone is also accepted); one returning True
    stops the solve.
    """
    if isinstance(xs, str):  # solve(problem, "ilqr"): the method given by position
        overrides.setdefault("method", xs)
        xs = None
    s = settings or DEFAULT_SETTINGS
    if overrides:
        s = s.updated(**overrides)
    callbacks = _checked_callbacks(callbacks)
    with _one_blas_thread():
        return _solve(problem, xs, us, s, callbacks)


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


def _solve(P, xs, us, s: SolverSettings, callbacks) -> Solution:
    so_mode = P.integrator.second_order_mode(s.second_order) if s.method == "ddp" else 0
    table = IterationTable(gaps=s.shooting == "multiple") if s.verbose else None
    if table:
        table.start(s.method)
    callbacks = ([table] if table else []) + list(callbacks)

    def finish(xs_, us_, cost_, it_, status_, message_, history_, policy_=None):
        sol = Solution(xs_, us_, cost_, it_, status_ == "converged", status_, message_,
                       history_, s.method, policy_)
        if table:
            table.end(sol)
        return sol

    us, bad = _initial_guess(P, xs, us)
    if np.any(P.u_min > P.u_max):
        i = int(np.argmax(P.u_min > P.u_max))
        return finish(np.full((P.T + 1, P.nx), np.nan), us, float("nan"), 0, "infeasible",
                      f"u_min > u_max for control {i} ({P.u_min[i]} > {P.u_max[i]})", [])
    if bad:
        return finish(np.full((P.T + 1, P.nx), np.nan), us, float("nan"), 0, *bad, [])
    us = np.clip(us, P.u_min, P.u_max)
    gaps = None
    if s.shooting == "single":
        xs, us, cost = P.rollout_cost(us)
    else:  # multiple shooting: the states are given (default: x0 at every knot)
        xs = np.tile(P.x0, (P.T + 1, 1)) if xs is None else P.check_states(xs).copy()
        gaps = _open_gaps(P, xs, us, s.gap_tol)
        if gaps is not None and not np.all(np.isfinite(gaps)):
            return finish(xs, us, float("nan"), 0, "diverged",
                          "xs, us: a step from the initial guess is not finite", [])
        cost = P.cost(xs, us)
    if not np.isfinite(cost):
        what = "the rollout of the initial controls" if gaps is None else "the initial guess"
        return finish(xs, us, cost, 0, "diverged", f"us: {what} has a non-finite cost", [])
    history, policy = [], None
    glob = STRATEGIES[s.globalization](s)
    it = 0
    while True:
        # the exact model this iteration (DDP's dynamics terms, exact cost Hessians), or
        # Gauss-Newton throughout (a safeguarded iteration that does not trust it)
        exact = glob.exact_terms(gaps is None)
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            d = P.calc_diff(xs, us, s.hessians if exact else "gauss-newton",
                            so_mode if exact else 0)
        t_der = time.perf_counter() - t0
        if not d.all_finite():
            return finish(xs, us, cost, it, "diverged", "non-finite derivatives", history, policy)
        grad = gradient_norm(P, us, d)
        gap = 0.0 if gaps is None else float(np.max(np.abs(gaps)))
        rec = Iteration(it, cost, grad, t_derivatives=t_der, gap=gap, exact=exact)
        if grad < s.tol and gaps is None:
            history.append(rec)
            _call(callbacks, rec)
            return finish(xs, us, cost, it, "converged",
                          f"gradient norm {grad:.2e} < tol = {s.tol:g}", history, policy)
        if it >= s.max_iter:
            history.append(rec)
            _call(callbacks, rec)
            return finish(xs, us, cost, it, "max-iterations",
                          f"stopped after max_iter = {s.max_iter} iterations", history, policy)
        t0 = time.perf_counter()
        while True:
            rec.backward_passes += 1
            reg_u, reg_x, reg_v, safeguard = glob.backward_arguments()
            with np.errstate(all="ignore"):
                new_policy, knot = backward(P, xs, us, d, s.method if exact else "ilqr", reg_u,
                                            reg_x, reg_v, safeguard, gaps,
                                            box_qp_iter=s.box_qp_iter)
            if new_policy is not None:
                break
            if exact and glob.exact_failed():
                exact = rec.exact = False  # the step derivatives stay; DDP's terms are dropped
                if s.hessians != "gauss-newton":
                    with np.errstate(all="ignore"):
                        d = KnotDerivatives(*P.cost_derivatives(xs, us, "gauss-newton"), d.step)
                continue
            if not glob.backward_failed():
                break
        rec.t_backward = time.perf_counter() - t0
        if new_policy is None:
            history.append(rec)
            _call(callbacks, rec)
            return finish(xs, us, cost, it, "regularization-exhausted",
                          f"Q_uu not positive definite at knot {knot} up to reg {s.reg_max:g}",
                          history, policy)
        policy = new_policy
        t0 = time.perf_counter()
        step = line_search(P, policy, cost, glob.alphas, s.c1, s.max_increase_ratio)
        rec.t_forward = time.perf_counter() - t0
        rec.reg = glob.value
        rec.gauss_newton_knots = policy.gauss_newton_knots
        if step is None:
            history.append(rec)
            stop = _call(callbacks, rec)
            if not glob.no_step():
                return finish(xs, us, cost, it, "line-search-failed",
                              f"no step length gave a decrease; regularization above "
                              f"{s.reg_max:g}", history, policy)
            it += 1
            if stop:
                return finish(xs, us, cost, it, "stopped-by-callback", "a callback returned True",
                              history, policy)
            continue
        rec.expected, rec.actual, rec.alpha = step.expected, step.actual, step.alpha
        history.append(rec)
        stop = _call(callbacks, rec)
        reduction = step.actual / max(abs(cost), _TINY)
        xs, us, cost = step.xs, step.us, step.cost
        glob.accepted(step.alpha, step.ratio, reduction)
        was_feasible = gaps is None
        if gaps is not None:  # a full step closes the gaps exactly; a partial one shrinks them
            gaps = None if step.alpha == 1.0 else _open_gaps(P, xs, us, s.gap_tol)
        it += 1
        if stop:
            return finish(xs, us, cost, it, "stopped-by-callback", "a callback returned True",
                          history, policy)
        if was_feasible and step.expected < s.decrease_tol * (1 + abs(cost)):
            d = P.calc_diff(xs, us, "gauss-newton", 0)  # for the gradient norm only
            history.append(Iteration(it, cost, gradient_norm(P, us, d)))
            _call(callbacks, history[-1])
            return finish(xs, us, cost, it, "converged",
                          f"expected decrease {step.expected:.1e} below rounding", history, policy)


def _open_gaps(P, xs, us, gap_tol):
    """The gaps of a multiple-shooting trajectory, or None when they are all below gap_tol."""
    with np.errstate(all="ignore"):
        f = P.gaps(xs, us)
    return f if not np.all(np.abs(f) <= gap_tol) else None


def _call(callbacks, rec) -> bool:
    stop = False
    for cb in callbacks:
        stop = bool(cb(rec)) or stop
    return stop
