"""DDP and iLQR on a :class:`~ddp.problem.ShootingProblem`.

Both share everything (costs, integrator, regularization, line search, stopping test) except the
backward pass terms ``V'_x . F_xx``, ``V'_x . F_xu``, ``V'_x . F_uu`` that full DDP adds (the exact
second-order dynamics, from the ``lam``-contracted FD-SO of the backend) and iLQR drops.

One iteration:

1. derivatives: costs and first-order step derivatives of all knots in one batched call each
   (the dynamics part is parallel over knots);
2. backward pass (DDP: plus the contracted second-order terms, knot by knot since they need
   ``V'_x``), with Levenberg-Marquardt regularization ``Q_uu + reg I`` increased until ``Q_uu`` is
   positive definite; with control bounds, the box-constrained QP of Tassa et al. (2014) per knot;
3. forward pass: closed-loop rollout ``u = u_t + alpha k_t + K_t (x (-) x_t)`` with backtracking
   on alpha until the actual decrease is at least ``c1`` times the expected one.

Stopping: the norm of the gradient of the total cost w.r.t. the controls (projected onto the box;
the same for both methods, computed by an adjoint sweep) below ``tol``, or an expected decrease
below ``1e-12 (1 + |cost|)``.  Failures are statuses, not exceptions: ``"max-iterations"``,
``"line-search-failed"`` (regularization exceeded ``reg_max``), ``"diverged"`` (non-finite cost or
derivatives), ``"infeasible"`` (empty control box).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

STATUSES = ("converged", "max-iterations", "line-search-failed", "diverged", "infeasible")


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
    t_derivatives: float = 0.0          # seconds: batched first-order derivatives
    t_backward: float = 0.0             # seconds: backward pass (incl. second-order terms)
    t_second_order: float = 0.0         # seconds of t_backward spent in V'_x . F_xx terms
    t_forward: float = 0.0              # seconds: line search rollouts


@dataclass
class Solution:
    xs: np.ndarray
    us: np.ndarray
    cost: float
    iterations: int
    converged: bool
    status: str
    message: str = ""
    history: list = field(default_factory=list)
    method: str = "ddp"

    @property
    def grad_norms(self):
        return np.array([h.grad_norm for h in self.history])

    @property
    def costs(self):
        return np.array([h.cost for h in self.history])


def box_qp(H, g, lower, upper, x0, max_iter=50):
    """Minimize 1/2 x^T H x + g^T x subject to lower <= x <= upper by projected Newton (Tassa,
    Mansard, Todorov 2014).  Returns (x, free mask, Cholesky factor of H on the free set) or None
    if H is not positive definite on the free set."""
    x = np.clip(x0, lower, upper)
    val = lambda y: 0.5 * y @ H @ y + g @ y
    free = np.ones(len(g), dtype=bool)
    L = None
    for _ in range(max_iter):
        grad = g + H @ x
        clamped = ((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0))
        free = ~clamped
        if not free.any():
            return x, free, None
        try:
            L = np.linalg.cholesky(H[np.ix_(free, free)])
        except np.linalg.LinAlgError:
            return None
        dx = np.zeros_like(x)
        dx[free] = -_chol_solve(L, grad[free])
        if np.max(np.abs(dx)) < 1e-12:
            break
        step, f0 = 1.0, val(x)
        while step > 1e-10:
            xn = np.clip(x + step * dx, lower, upper)
            if val(xn) - f0 <= 0.1 * grad @ (xn - x):
                break
            step *= 0.5
        if np.max(np.abs(xn - x)) < 1e-12:
            x = xn
            break
        x = xn
    return x, free, L


def _chol_solve(L, b):
    return np.linalg.solve(L.T, np.linalg.solve(L, b))


def solve(problem, method="ddp", xs=None, us=None, max_iter=100, tol=1e-6,
          hessians="exact", callbacks=(), verbose=False, u_min=None, u_max=None,
          reg_init=0.0, reg_min=1e-9, reg_max=1e9, c1=1e-4, alphas=None) -> Solution:
    """Solve ``problem`` by full second-order DDP (``method="ddp"``) or iLQR (``"ilqr"``).

    ``us``: initial controls (T, nu) (default: ``problem.quasi_static()``, the controls that hold
    the robot at x0, which is what a cold start from x0 means for single shooting; zeros if the
    dynamics has no ``rnea``); ``xs``: accepted for API symmetry with
    Crocoddyl and checked, but the solver is single shooting: the states are the rollout of ``us``.
    ``hessians``: cost Hessians "exact" or "gauss-newton".  ``callbacks``: callables
    ``cb(iteration: Iteration)`` called after every iteration; one returning True stops the solve.
    ``u_min``, ``u_max``: control bounds (scalars or (nu,)), enabling the box-QP backward pass.
    Regularization ``reg`` (added to Q_uu) starts at ``reg_init`` and follows the schedule of
    Tassa, Erez, Todorov (2012): increased when Q_uu is not positive definite or no step is
    accepted, decreased (to 0 below ``reg_min``) after every accepted step, by factors that grow
    while the same direction repeats.
    """
    if method not in ("ddp", "ilqr"):
        raise ValueError(f"method: expected 'ddp' or 'ilqr'; got {method!r}")
    if hessians not in ("exact", "gauss-newton"):
        raise ValueError(f"hessians: expected 'exact' or 'gauss-newton'; got {hessians!r}")
    if int(max_iter) != max_iter or max_iter < 0:
        raise ValueError(f"max_iter: expected a non-negative integer; got {max_iter!r}")
    P = problem
    if us is None:
        try:  # cold start: hold x0 (Crocoddyl's quasiStatic), or zeros without rnea
            us = P.quasi_static()
        except NotImplementedError:
            us = np.zeros((P.T, P.nu))
    us = P.check_controls(us).copy()
    if xs is not None and np.shape(xs) != (P.T + 1, P.nx):
        raise ValueError(f"xs: expected shape ({P.T + 1}, {P.nx}); got {np.shape(xs)}")
    lo = np.full(P.nu, -np.inf) if u_min is None else np.broadcast_to(u_min, (P.nu,)).astype(float)
    hi = np.full(P.nu, np.inf) if u_max is None else np.broadcast_to(u_max, (P.nu,)).astype(float)
    bounded = bool(np.any(np.isfinite(lo)) or np.any(np.isfinite(hi)))
    alphas = alphas or [0.5 ** i for i in range(11)]
    table = _Table(verbose, method)
    if np.any(lo > hi):
        bad = int(np.argmax(lo > hi))
        return Solution(np.full((P.T + 1, P.nx), np.nan), us, float("nan"), 0, False, "infeasible",
                        f"u_min > u_max for control {bad} ({lo[bad]} > {hi[bad]})", [], method)
    us = np.clip(us, lo, hi)
    with np.errstate(all="ignore"):
        xs = P.rollout(us)
    cost = P.cost(xs, us)
    history = []
    reg = _Regularization(reg_init, reg_min)
    status, message = "max-iterations", f"stopped after max_iter = {max_iter} iterations"
    if not np.isfinite(cost):
        return Solution(xs, us, cost, 0, False, "diverged",
                        "the initial rollout has a non-finite cost", history, method)
    it = 0
    while True:
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):
            run, term, D = P.calc_diff(xs, us, hessians, 2 if method == "ddp" else 1)
        t_der = time.perf_counter() - t0
        if not all(np.all(np.isfinite(a)) for a in (run.lxx, run.luu, term.lxx, D.Fx, D.Fu)):
            status, message = "diverged", "non-finite derivatives"
            break
        grad = _gradient_norm(run, term, D, us, lo, hi)
        rec = Iteration(it, cost, grad)
        if grad < tol:
            history.append(rec)
            table.row(rec)
            status, message = "converged", f"gradient norm {grad:.2e} < tol = {tol:g}"
            break
        if it >= max_iter:
            history.append(rec)
            table.row(rec)
            break
        # backward pass, increasing the regularization until it succeeds
        t0 = time.perf_counter()
        while True:
            out = _backward(P, method, xs, us, run, term, D, reg.value, lo, hi, bounded)
            if out is not None or reg.increase() > reg_max:
                break
        rec.t_backward = time.perf_counter() - t0
        rec.t_derivatives = t_der
        if out is None:
            history.append(rec)
            table.row(rec)
            status, message = "line-search-failed", f"Q_uu not positive definite up to reg {reg_max:g}"
            break
        k, K, dV1, dV2, rec.t_second_order = out
        # forward pass
        t0 = time.perf_counter()
        accepted = False
        for alpha in alphas:
            with np.errstate(all="ignore"):
                xn, un = _forward(P, xs, us, k, K, alpha, lo, hi)
                cn = P.cost(xn, un)
            expected = -(alpha * dV1 + alpha ** 2 * dV2)
            if np.isfinite(cn) and (cost - cn) >= c1 * expected and cost - cn > -1e-14 * abs(cost):
                accepted = True
                break
        rec.t_forward = time.perf_counter() - t0
        rec.reg = reg.value
        if not accepted:
            history.append(rec)
            table.row(rec)
            if reg.increase() > reg_max:
                status, message = "line-search-failed", (f"no step length gave a decrease; "
                                                         f"regularization above {reg_max:g}")
                break
            it += 1
            continue
        rec.expected, rec.actual, rec.alpha = expected, cost - cn, alpha
        history.append(rec)
        table.row(rec)
        if any(cb(rec) for cb in callbacks):
            xs, us, cost = xn, un, cn
            status, message = "max-iterations", "stopped by a callback"
            it += 1
            break
        xs, us, cost = xn, un, cn
        reg.decrease()
        it += 1
        if expected < 1e-12 * (1 + abs(cost)):
            g2 = _gradient_norm(*P.calc_diff(xs, us, hessians), us, lo, hi)
            history.append(Iteration(it, cost, g2))
            table.row(history[-1])
            status, message = "converged", f"expected decrease {expected:.1e} below rounding"
            break
    sol = Solution(xs, us, cost, it, status == "converged", status, message, history, method)
    table.end(sol)
    return sol


class _Regularization:
    """Tassa et al.'s schedule: factor delta grows (x1.6) on repeated increases / decreases."""

    FACTOR = 1.6

    def __init__(self, value, minimum):
        self.value, self.minimum, self.delta = float(value), float(minimum), 1.0

    def increase(self):
        self.delta = max(self.FACTOR, self.delta * self.FACTOR)
        self.value = max(self.minimum, self.value * self.delta)
        return self.value

    def decrease(self):
        self.delta = min(1 / self.FACTOR, self.delta / self.FACTOR)
        self.value = self.value * self.delta if self.value * self.delta > self.minimum else 0.0
        return self.value


def _gradient_norm(run, term, D, us, lo, hi):
    """|| dJ/du || (projected onto the box) by the adjoint sweep lam_t = l_x + Fx^T lam_{t+1}."""
    lam = term.lx[0]
    g = np.empty_like(us)
    for t in range(us.shape[0] - 1, -1, -1):
        g[t] = run.lu[t] + D.Fu[t].T @ lam
        lam = run.lx[t] + D.Fx[t].T @ lam
    g[(us <= lo) & (g > 0)] = 0.0
    g[(us >= hi) & (g < 0)] = 0.0
    return float(np.sqrt(np.sum(g * g)))


def _backward(P, method, xs, us, run, term, D, reg, lo, hi, bounded):
    T, nu = P.T, P.nu
    k = np.zeros((T, nu))
    K = np.zeros((T, nu, P.ndx))
    Vx, Vxx = term.lx[0].copy(), term.lxx[0].copy()
    dV1 = dV2 = 0.0
    t_so = 0.0
    for t in range(T - 1, -1, -1):
        Fx, Fu = D.Fx[t], D.Fu[t]
        Qx = run.lx[t] + Fx.T @ Vx
        Qu = run.lu[t] + Fu.T @ Vx
        VF = Vxx @ Fx
        Qxx = run.lxx[t] + Fx.T @ VF
        Qux = run.lxu[t].T + Fu.T @ VF
        Quu = run.luu[t] + Fu.T @ Vxx @ Fu
        if method == "ddp":
            t0 = time.perf_counter()
            Fxx, Fxu, Fuu = P.integrator.hessians(xs[t], us[t], Vx, D, t)
            t_so += time.perf_counter() - t0
            Qxx = Qxx + Fxx
            Qux = Qux + Fxu.T
            Quu = Quu + Fuu
        Quu_r = Quu + reg * np.eye(nu)
        if bounded:
            res = box_qp(Quu_r, Qu, lo - us[t], hi - us[t],
                         k[t + 1] if t + 1 < T else np.zeros(nu))
            if res is None:
                return None
            kt, free, L = res
            Kt = np.zeros((nu, P.ndx))
            if L is not None:
                Kt[free] = -_chol_solve(L, Qux[free])
        else:
            try:
                L = np.linalg.cholesky(Quu_r)
            except np.linalg.LinAlgError:
                return None
            kt = -_chol_solve(L, Qu)
            Kt = -_chol_solve(L, Qux)
        k[t], K[t] = kt, Kt
        dV1 += kt @ Qu
        dV2 += 0.5 * kt @ Quu @ kt
        Vx = Qx + Kt.T @ Quu @ kt + Kt.T @ Qu + Qux.T @ kt
        Vxx = Qxx + Kt.T @ Quu @ Kt + Kt.T @ Qux + Qux.T @ Kt
        Vxx = 0.5 * (Vxx + Vxx.T)
    return k, K, dV1, dV2, t_so


def _forward(P, xs, us, k, K, alpha, lo, hi):
    xn = np.empty_like(xs)
    un = np.empty_like(us)
    xn[0] = xs[0]
    for t in range(P.T):
        dx = P.integrator.difference(xs[t], xn[t])
        un[t] = np.clip(us[t] + alpha * k[t] + K[t] @ dx, lo, hi)
        xn[t + 1] = P.integrator.step(xn[t], un[t])
        if not np.all(np.isfinite(xn[t + 1])):
            xn[t + 1:] = np.nan
            un[t + 1:] = np.nan
            break
    return xn, un


class _Table:
    """The iteration table printed with ``verbose=True``."""

    HEAD = (f"{'iter':>4} {'cost':>13} {'|grad|':>9} {'expected':>9} {'actual':>9} {'reg':>7} "
            f"{'step':>6} {'deriv ms':>8} {'back ms':>8} {'(2nd)':>7} {'fwd ms':>7}")

    def __init__(self, verbose, method):
        self.verbose = verbose
        if verbose:
            print(f"{method.upper()}:")
            print(self.HEAD)

    def row(self, r: Iteration):
        if self.verbose:
            f = lambda x, w=9: f"{x:{w}.2e}" if np.isfinite(x) else f"{'-':>{w}}"
            print(f"{r.iteration:4d} {r.cost:13.6e} {f(r.grad_norm)} {f(r.expected)} "
                  f"{f(r.actual)} {f(r.reg, 7) if np.isfinite(r.reg) else '-':>7} "
                  f"{r.alpha if np.isfinite(r.alpha) else float('nan'):6.3f} "
                  f"{1e3 * r.t_derivatives:8.1f} {1e3 * r.t_backward:8.1f} "
                  f"{1e3 * r.t_second_order:7.1f} {1e3 * r.t_forward:7.1f}", flush=True)

    def end(self, sol):
        if self.verbose:
            print(f"status: {sol.status} ({sol.message}); cost {sol.cost:.9g} after "
                  f"{sol.iterations} iterations")
