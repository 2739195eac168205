"""`ShootingProblem`: an optimal-control problem over a horizon of T knots.

    minimize   sum_{t<T} dt * l(x_t, u_t) + l_T(x_T)
    subject to x_{t+1} = F(x_t, u_t),  x_0 = x0,  u_min <= u_t <= u_max

with x = (q, v) on the robot's state manifold (tangent size 2 nv), u in R^nu, F the discrete step
of :mod:`ddp.integrators` and the costs of :mod:`ddp.costs` (running costs multiplied by dt, the
terminal cost not, as in Crocoddyl).

With the analytical backend the rollouts, the rollouts with their cost, and the derivatives of
all knots each run in one compiled call (:mod:`ddp.evaluation`); any other backend steps knot by
knot through its ``aba`` and differentiates phase by phase through the Dynamics protocol.
"""

from __future__ import annotations

import numpy as np

from dynamics.inputs import prepare

from . import costs as _costs
from .evaluation import CompiledEvaluation, KnotDerivatives
from .integrators import SemiImplicitEuler
from .kernels import costs as _kcosts
from .kernels import passes as _passes

INTEGRATORS = {"euler": SemiImplicitEuler}
#: the empty ``kin`` of a rollout that keeps no kinematics (numpy's run of the kernel's function)
_NO_KINEMATICS = _kcosts.kinematics_buffers.py_func(0, 0, 0)


class ShootingProblem:
    """``dynamics``: any :class:`~dynamics.protocol.Dynamics`; ``x0`` (nq + nv,); ``horizon`` T;
    ``dt`` time step; ``running_cost`` / ``terminal_cost``: :class:`~ddp.costs.Cost`;
    ``actuation``: (nv, nu) matrix (None: fully actuated); ``integrator``: "euler"
    (semi-implicit); ``u_min``, ``u_max``: control bounds (scalars or (nu,); None: unbounded)."""

    def __init__(self, dynamics, x0, horizon: int, dt: float, running_cost, terminal_cost,
                 actuation=None, integrator: str = "euler", u_min=None, u_max=None):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator: expected one of {sorted(INTEGRATORS)}; got {integrator!r}")
        self.dynamics = dynamics
        self.integrator = INTEGRATORS[integrator](dynamics, dt, actuation)
        self.dt = self.integrator.dt
        self.nq, self.nv, self.nu = self.integrator.nq, self.integrator.nv, self.integrator.nu
        self.nx, self.ndx = self.integrator.nx, self.integrator.ndx
        if int(horizon) != horizon or horizon < 1:
            raise ValueError(f"horizon: expected a positive integer; got {horizon!r}")
        self.T = int(horizon)
        self.x0 = self._check_x(x0, "x0")
        model = getattr(dynamics, "model", None)
        self.running_cost = _costs.bind(running_cost, self.nq, self.nv, self.nu, model)
        self.terminal_cost = _costs.bind(terminal_cost, self.nq, self.nv, self.nu, model)
        self.u_min = self._bound(u_min, -np.inf, "u_min")
        self.u_max = self._bound(u_max, np.inf, "u_max")
        self._fused = CompiledEvaluation(self) if self.integrator.compiled else None

    def __repr__(self):
        return (f"ShootingProblem({self.dynamics!r}, T={self.T}, dt={self.dt:g}, nx={self.nx}, "
                f"nu={self.nu})")

    @property
    def bounded(self) -> bool:
        return bool(np.isfinite(self.u_min).any() or np.isfinite(self.u_max).any())

    def _bound(self, b, default, name):
        if b is None:
            return np.full(self.nu, default)
        try:
            out = np.broadcast_to(np.asarray(b, dtype=float), (self.nu,)).copy()
        except ValueError:
            raise ValueError(f"{name}: expected a scalar or {self.nu} values; got shape "
                             f"{np.shape(b)}") from None
        if np.any(np.isnan(out)):
            raise ValueError(f"{name}: expected numbers (+-inf for no bound); got NaN")
        return out

    def _check_x(self, x, name):
        x = np.asarray(x, dtype=float)
        if x.shape != (self.nx,) or not np.all(np.isfinite(x)):
            raise ValueError(f"{name}: expected {self.nx} finite values (q: {self.nq}, v: "
                             f"{self.nv}); got shape {x.shape}")
        model = getattr(self.dynamics, "model", None)
        if model is not None:
            prepare(model, q=x[:self.nq])
        return x.copy()

    def check_states(self, xs, name="xs"):
        """xs as a float array (T + 1, nx), checked: shape, finite values and (on a robot) valid
        configurations (unit quaternions)."""
        xs = np.asarray(xs, dtype=float)
        if xs.shape != (self.T + 1, self.nx):
            raise ValueError(f"{name}: expected shape ({self.T + 1}, {self.nx}) (horizon + 1, "
                             f"nq + nv); got {xs.shape}")
        if not np.all(np.isfinite(xs)):
            raise ValueError(f"{name}: expected finite states")
        model = getattr(self.dynamics, "model", None)
        if model is not None:
            prepare(model, q=xs[:, :self.nq])
        return xs

    def check_controls(self, us, name="us"):
        us = np.asarray(us, dtype=float)
        if us.shape != (self.T, self.nu):
            raise ValueError(f"{name}: expected shape ({self.T}, {self.nu}) (horizon, nu); got "
                             f"{us.shape}")
        return us

    def quasi_static(self, xs=None):
        """Controls (T, nu) that hold each state ``xs[t]`` (default: x0 at every knot) at rest:
        ``u = B^+ rnea(q, 0, 0)`` (least squares when underactuated), like Crocoddyl's
        ``quasiStatic``.  Needs ``dynamics.rnea``."""
        xs = np.tile(self.x0, (self.T, 1)) if xs is None else np.asarray(xs, dtype=float)[:self.T]
        tau = self.dynamics.rnea(xs[:, :self.nq], np.zeros((self.T, self.nv)),
                                 np.zeros((self.T, self.nv)))
        return np.asarray(tau) @ np.linalg.pinv(self.integrator.B).T

    # ------------------------------------------------------------------ rollouts
    def rollout(self, us, x0=None):
        """States (T + 1, nx) from x0 under the controls ``us`` (T, nu) (clipped to the bounds).
        A diverging step gives NaN states from there on (no exception)."""
        us = self.check_controls(us)
        return self._simulate(us, x0, None)[0]

    def closed_loop(self, xs_ref, us, k, K, alpha=1.0, x0=None, gaps=None):
        """States (T + 1, nx) and controls (T, nu) under DDP's closed loop
        ``u_t = clip(us_t + alpha k_t + K_t (x_t (-) xs_ref_t))`` about the trajectory
        (xs_ref, us) with gains k (T, nu), K (T, nu, ndx).  ``gaps`` (T + 1, ndx): the defects of
        a multiple-shooting trajectory (:meth:`gaps`), of which each state keeps the fraction
        1 - alpha (the feasibility-driven rollout of FDDP, Mastalli et al. 2020)."""
        return self._simulate(self.check_controls(us), x0, (xs_ref, k, K, alpha), gaps)

    def rollout_cost(self, us):
        """(xs, us, cost): :meth:`rollout` of ``us`` (clipped to the bounds) and the :meth:`cost`
        of its trajectory, with the analytical backend in one compiled call."""
        us = self.check_controls(us)
        if self._fused is None:
            xs, un = self._simulate(us, None, None)
            return xs, un, self.cost(xs, un)
        return self._fused.rollout_cost(self.x0, us, us, np.zeros((self.T, self.nu, 0)), 0.0,
                                        np.zeros((self.T + 1, self.nx)), False, None)

    def closed_loop_cost(self, xs_ref, us, k, K, alpha=1.0, gaps=None):
        """(xs, us, cost): :meth:`closed_loop` from x0 and the :meth:`cost` of its trajectory
        (NaN if a state is not finite), with the analytical backend in one compiled call."""
        if self._fused is None:
            xs, un = self.closed_loop(xs_ref, us, k, K, alpha, gaps=gaps)
            return xs, un, self.cost(xs, un)
        return self._fused.rollout_cost(self.x0, self.check_controls(us), k, K, alpha, xs_ref,
                                        True, gaps)

    def gaps(self, xs, us):
        """The defects (T + 1, ndx) of a multiple-shooting trajectory: f_0 = x0 (-) xs_0 and
        f_{t+1} = F(xs_t, us_t) (-) xs_{t+1}, each tangent at the state it belongs to (zero for a
        rollout)."""
        F = self.integrator
        f = np.empty((self.T + 1, self.ndx))
        f[0] = F.difference(xs[0], self.x0)
        f[1:] = F.difference(xs[1:], F.step(xs[:-1], us))
        return f

    def _simulate(self, us, x0, policy, gaps=None):
        x0 = self.x0 if x0 is None else np.asarray(x0, dtype=float)
        xs = np.empty((self.T + 1, self.nx))
        un = np.empty_like(us)
        if policy is None:
            xs_ref, k, K, alpha, feedback = xs, us, np.zeros((self.T, self.nu, 0)), 0.0, False
        else:
            xs_ref, k, K, alpha = policy
            feedback = True
        infeasible = gaps is not None
        F = self.integrator
        if F.compiled:
            g = np.ascontiguousarray(gaps) if infeasible else np.zeros((self.T + 1, self.ndx))
            with np.errstate(all="ignore"):
                _passes.rollout(*F.kernel_args(), F.B, F.dt, x0, np.ascontiguousarray(us),
                                np.ascontiguousarray(k), np.ascontiguousarray(K), float(alpha),
                                self.u_min, self.u_max, np.ascontiguousarray(xs_ref), feedback,
                                g, infeasible, xs, un, _NO_KINEMATICS)
            return xs, un
        xs[0] = x0 if not infeasible else F.integrate(x0, (alpha - 1) * gaps[0])
        for t in range(self.T):
            u = us[t] + (alpha * k[t] + K[t] @ F.difference(xs_ref[t], xs[t]) if feedback else 0)
            un[t] = np.clip(u, self.u_min, self.u_max)
            xs[t + 1] = F.step(xs[t], un[t])
            if infeasible:
                xs[t + 1] = F.integrate(xs[t + 1], (alpha - 1) * gaps[t + 1])
            if not np.all(np.isfinite(xs[t + 1])):
                xs[t + 1:] = np.nan
                un[t + 1:] = np.nan
                break
        return xs, un

    def cost(self, xs, us) -> float:
        """Total cost: dt * sum of running costs + terminal cost (NaN if a state is not finite)."""
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(us))):
            return float("nan")
        with np.errstate(all="ignore"):
            run = self.running_cost.calc(xs[:-1], us)
            term = self.terminal_cost.calc(xs[-1:], np.zeros((1, self.nu)))
            return float(self.dt * np.sum(run) + term[0])

    def cost_derivatives(self, xs, us, hessians="exact"):
        """(running, terminal) :class:`~ddp.costs.CostDerivatives` of every knot (running costs
        scaled by dt)."""
        run = self.running_cost.calc_diff(xs[:-1], us, hessians).scaled(self.dt)
        term = self.terminal_cost.calc_diff(xs[-1:], np.zeros((1, self.nu)), hessians)
        return run, term

    def calc_diff(self, xs, us, hessians="exact", so_mode: int = 0) -> KnotDerivatives:
        """Batched derivatives of every knot (:class:`KnotDerivatives`); ``so_mode`` as in
        :meth:`~ddp.integrators.SemiImplicitEuler.derivatives`."""
        if self._fused is not None:  # shapes checked here: the compiled call does not
            _costs.check_hessians(hessians)
            xs = np.asarray(xs, dtype=float)
            if xs.shape != (self.T + 1, self.nx):
                raise ValueError(f"xs: expected shape ({self.T + 1}, {self.nx}); got {xs.shape}")
            return self._fused.derivatives(xs, self.check_controls(us), hessians, so_mode)
        return KnotDerivatives(*self.cost_derivatives(xs, us, hessians),
                               self.integrator.derivatives(xs[:-1], us, so_mode))
