"""`ShootingProblem`: an optimal-control problem over a horizon of T knots.

    minimize   sum_{t<T} dt * l(x_t, u_t) + l_T(x_T)
    subject to x_{t+1} = F(x_t, u_t),  x_0 = x0

with x = (q, v) on the robot's state manifold (tangent size 2 nv), u in R^nu, F the discrete step
of :mod:`ddp.integrators` and the costs of :mod:`ddp.costs` (running costs multiplied by dt, the
terminal cost not, as in Crocoddyl).
"""

from __future__ import annotations

import numpy as np

from dynamics.inputs import prepare

from . import costs as _costs
from .integrators import SemiImplicitEuler

INTEGRATORS = {"euler": SemiImplicitEuler}


class ShootingProblem:
    """``dynamics``: any :class:`~dynamics.protocol.Dynamics`; ``x0`` (nq + nv,); ``horizon`` T;
    ``dt`` time step; ``running_cost`` / ``terminal_cost``: :class:`~ddp.costs.Cost`;
    ``actuation``: (nv, nu) matrix (None: fully actuated); ``integrator``: "euler"
    (semi-implicit); ``second_order``: how DDP gets its second-order dynamics terms ("auto",
    "tensor": full tensors of all knots in the batched call, "contracted": per knot in the
    backward pass; see :class:`~ddp.integrators.SemiImplicitEuler`)."""

    def __init__(self, dynamics, x0, horizon: int, dt: float, running_cost, terminal_cost,
                 actuation=None, integrator: str = "euler", second_order: str = "auto"):
        if integrator not in INTEGRATORS:
            raise ValueError(f"integrator: expected one of {sorted(INTEGRATORS)}; got {integrator!r}")
        self.dynamics = dynamics
        self.integrator = INTEGRATORS[integrator](dynamics, dt, actuation, second_order)
        self.dt = self.integrator.dt
        self.nq, self.nv, self.nu = self.integrator.nq, self.integrator.nv, self.integrator.nu
        self.nx, self.ndx = self.integrator.nx, self.integrator.ndx
        if int(horizon) != horizon or horizon < 1:
            raise ValueError(f"horizon: expected a positive integer; got {horizon!r}")
        self.T = int(horizon)
        self.x0 = self._check_x(x0, "x0")
        self.running_cost = _costs.bind(running_cost, self.nq, self.nv, self.nu)
        self.terminal_cost = _costs.bind(terminal_cost, self.nq, self.nv, self.nu)

    def __repr__(self):
        return (f"ShootingProblem({self.dynamics!r}, T={self.T}, dt={self.dt:g}, nx={self.nx}, "
                f"nu={self.nu})")

    def _check_x(self, x, name):
        x = np.asarray(x, dtype=float)
        if x.shape != (self.nx,) or not np.all(np.isfinite(x)):
            raise ValueError(f"{name}: expected {self.nx} finite values (q: {self.nq}, v: "
                             f"{self.nv}); got shape {x.shape}")
        model = getattr(self.dynamics, "model", None)
        if model is not None:
            prepare(model, q=x[:self.nq])
        return x.copy()

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

    def rollout(self, us, x0=None):
        """States (T + 1, nx) from x0 under the controls us (T, nu)."""
        us = self.check_controls(us)
        xs = np.empty((self.T + 1, self.nx))
        xs[0] = self.x0 if x0 is None else x0
        for t in range(self.T):
            xs[t + 1] = self.integrator.step(xs[t], us[t])
        return xs

    def cost(self, xs, us) -> float:
        """Total cost: dt * sum of running costs + terminal cost."""
        with np.errstate(all="ignore"):
            run = self.running_cost.calc(xs[:-1], us)
            term = self.terminal_cost.calc(xs[-1:], np.zeros((1, self.nu)))
            return float(self.dt * np.sum(run) + term[0])

    def calc_diff(self, xs, us, hessians="exact", order: int = 1):
        """Batched derivatives of every knot: (running CostDerivatives scaled by dt (T knots),
        terminal CostDerivatives (1 knot), StepDerivatives (T knots))."""
        run = self.running_cost.calc_diff(xs[:-1], us, hessians).scaled(self.dt)
        term = self.terminal_cost.calc_diff(xs[-1:], np.zeros((1, self.nu)), hessians)
        return run, term, self.integrator.derivatives(xs[:-1], us, order)
