"""`ShootingProblem`: an optimal-control problem over a horizon of T knots.

    minimize   sum_{t<T} dt * l(x_t, u_t) + l_T(x_T)
    subject to x_{t+1} = F(x_t, u_t),  x_0 = x0,  u_min <= u_t <= u_max

with x = (q, v) on the robot's state manifold (tangent size 2 nv), u in R^nu, F the semi-implicit
Euler step of :mod:`ddp.integrators` and the costs of :mod:`ddp.costs` (running costs multiplied
by dt, the terminal cost not, as in Crocoddyl).

The problem evaluates trajectories through one :class:`~ddp.evaluation.Evaluation`, chosen here
from what the backend declares: with ``dynamics.compiled`` (the analytical backend) the rollouts,
the rollouts with their cost, and the derivatives of all knots each run in one compiled call
(:class:`~ddp.compiled.CompiledEvaluation`); any other backend steps knot by knot through its
``aba`` and differentiates phase by phase through the Dynamics protocol
(:class:`~ddp.evaluation.ProtocolEvaluation`).
"""

from __future__ import annotations

import numpy as np

from . import costs as _costs
from .compiled import CompiledEvaluation
from .evaluation import KnotDerivatives, ProtocolEvaluation
from .integrators import SemiImplicitEuler
from .kernels.records import ClosedLoop, Gaps
from .local_model import GAUSS_NEWTON, LocalModel


class ShootingProblem:
    """``dynamics``: any :class:`~dynamics.protocol.Dynamics`; ``x0`` (nq + nv,); ``horizon`` T;
    ``dt`` time step; ``running_cost`` / ``terminal_cost``: :class:`~ddp.costs.Cost`;
    ``actuation``: (nv, nu) matrix (None: fully actuated); ``u_min``, ``u_max``: control bounds
    (scalars or (nu,); None: unbounded)."""

    def __init__(self, dynamics, x0, horizon: int, dt: float, running_cost, terminal_cost,
                 actuation=None, u_min=None, u_max=None):
        self.dynamics = dynamics
        self.integrator = SemiImplicitEuler(dynamics, dt, actuation)
        self.dt = self.integrator.dt
        self.nq, self.nv, self.nu = self.integrator.nq, self.integrator.nv, self.integrator.nu
        self.nx, self.ndx = self.integrator.nx, self.integrator.ndx
        if int(horizon) != horizon or horizon < 1:
            raise ValueError(f"horizon: expected a positive integer; got {horizon!r}")
        self.T = int(horizon)
        self.x0 = self._check_x(x0, "x0")
        model = dynamics.model
        self.running_cost = _costs.bind(running_cost, self.nq, self.nv, self.nu, model)
        self.terminal_cost = _costs.bind(terminal_cost, self.nq, self.nv, self.nu, model)
        self.u_min = self._bound(u_min, -np.inf, "u_min")
        self.u_max = self._bound(u_max, np.inf, "u_max")
        self._closed = None
        self.evaluation = (CompiledEvaluation if dynamics.compiled else ProtocolEvaluation)(self)

    def gaps_record(self, gaps=None) -> Gaps:
        """The :data:`~ddp.kernels.records.Gaps` of the compiled passes for the defects ``gaps``
        (T + 1, ndx) of a multiple-shooting trajectory (None: closed; that record is made once
        per problem)."""
        if gaps is not None:
            return Gaps(np.ascontiguousarray(gaps, dtype=float), True)
        if self._closed is None or self._closed.f.shape != (self.T + 1, self.ndx):
            self._closed = Gaps(np.zeros((self.T + 1, self.ndx)), False)
        return self._closed

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
        self.dynamics.check_configuration(x[:self.nq], name)
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
        self.dynamics.check_configuration(xs[:, :self.nq], name)
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
        x0 = self.x0 if x0 is None else np.asarray(x0, dtype=float)
        return self.evaluation.rollout(x0, self._open_loop(us), None)[0]

    def closed_loop(self, xs_ref, us, k, K, alpha=1.0, x0=None, gaps=None):
        """States (T + 1, nx) and controls (T, nu) under DDP's closed loop
        ``u_t = clip(us_t + alpha k_t + K_t (x_t (-) xs_ref_t))`` about the trajectory
        (xs_ref, us) with gains k (T, nu), K (T, nu, ndx).  ``gaps`` (T + 1, ndx): the defects of
        a multiple-shooting trajectory (:meth:`gaps`), of which each state keeps the fraction
        1 - alpha (the feasibility-driven rollout of FDDP, Mastalli et al. 2020)."""
        x0 = self.x0 if x0 is None else np.asarray(x0, dtype=float)
        loop = self._closed_loop(xs_ref, self.check_controls(us), k, K, alpha)
        return self.evaluation.rollout(x0, loop, gaps)

    def rollout_cost(self, us):
        """(xs, us, cost): :meth:`rollout` of ``us`` (clipped to the bounds) and the :meth:`cost`
        of its trajectory, with the analytical backend in one compiled call."""
        us = self.check_controls(us)
        return self.evaluation.rollout_cost(self.x0, self._open_loop(us), None)

    def closed_loop_cost(self, xs_ref, us, k, K, alpha=1.0, gaps=None):
        """(xs, us, cost): :meth:`closed_loop` from x0 and the :meth:`cost` of its trajectory
        (NaN if a state is not finite), with the analytical backend in one compiled call."""
        loop = self._closed_loop(xs_ref, self.check_controls(us), k, K, alpha)
        return self.evaluation.rollout_cost(self.x0, loop, gaps)

    def _open_loop(self, us):
        return ClosedLoop(np.ascontiguousarray(us), np.ascontiguousarray(us),
                          np.zeros((self.T, self.nu, 0)), 0.0,
                          np.zeros((self.T + 1, self.nx)), False)

    @staticmethod
    def _closed_loop(xs_ref, us, k, K, alpha):
        return ClosedLoop(np.ascontiguousarray(us, dtype=float),
                          np.ascontiguousarray(k, dtype=float),
                          np.ascontiguousarray(K, dtype=float), float(alpha),
                          np.ascontiguousarray(xs_ref, dtype=float), True)

    def gaps(self, xs, us):
        """The defects (T + 1, ndx) of a multiple-shooting trajectory: f_0 = x0 (-) xs_0 and
        f_{t+1} = F(xs_t, us_t) (-) xs_{t+1}, each tangent at the state it belongs to (zero for a
        rollout)."""
        integrator = self.integrator
        f = np.empty((self.T + 1, self.ndx))
        f[0] = integrator.difference(xs[0], self.x0)
        f[1:] = integrator.difference(xs[1:], integrator.step(xs[:-1], us))
        return f

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

    def calc_diff(self, xs, us, local: LocalModel = GAUSS_NEWTON) -> KnotDerivatives:
        """Batched derivatives of every knot (:class:`~ddp.evaluation.KnotDerivatives`) for the
        local model ``local`` (:class:`~ddp.local_model.LocalModel`: cost Hessians, and the
        mode of DDP's second-order dynamics terms)."""
        if not isinstance(local, LocalModel):
            raise TypeError(f"local: expected a ddp.LocalModel; got {local!r}")
        _costs.check_hessians(local.hessians)
        xs = np.asarray(xs, dtype=float)
        if xs.shape != (self.T + 1, self.nx):
            raise ValueError(f"xs: expected shape ({self.T + 1}, {self.nx}); got {xs.shape}")
        return self.evaluation.derivatives(xs, self.check_controls(us), local)
