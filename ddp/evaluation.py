"""Evaluating a trajectory: everything one iteration differentiates (:class:`KnotDerivatives`)
and, on the analytical backend, the compiled evaluation that fuses the phases
(:class:`CompiledEvaluation`, kernels in :mod:`ddp.kernels.evaluation`).

On the analytical backend a :class:`~ddp.problem.ShootingProblem` computes

* the derivatives of every knot in one parallel call: FDSVA (or the full FDSVA-SO tensors), the
  expansion of (+), Fx, Fu, and the built-in running and terminal costs;
* a closed-loop rollout and its total cost in one call: the rollout, then the costs of the knots
  in parallel, on the forward kinematics that the rollout's ABA kept.

Built-in cost programs on the dynamics' model run inside these calls; any other cost (a CasADi
residual, or built-in costs on another model) is added by its own ``calc`` / ``calc_diff``.
Other backends take the same quantities phase by phase through the
:class:`~dynamics.protocol.Dynamics` protocol (:meth:`ddp.integrators.SemiImplicitEuler.derivatives`
and :meth:`ddp.costs.Cost.calc_diff`); both give the same numbers to rounding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamics import IntegrateExpansion
from dynamics.algorithms import INNER_CROSSOVER_NV
from dynamics.kernels.checks import all_finite as _all_finite
from dynamics.kernels.forward_so import INNER_DTM, INNER_IDFOZA, OUTER_DTM
from dynamics.kernels.layout import num_chunks

from . import costs as _costs
from .integrators import StepDerivatives
from .kernels import costs as _kcosts
from .kernels import evaluation as _kev


@dataclass
class KnotDerivatives:
    """Everything one iteration differentiates: running costs (scaled by dt, T knots), terminal
    cost (1 knot), and the step derivatives (T knots)."""

    running: _costs.CostDerivatives
    terminal: _costs.CostDerivatives
    step: StepDerivatives

    def all_finite(self) -> bool:
        """Whether what the backward pass reads beyond the gradient (the cost Hessians, Fx, Fu)
        is finite: the solver's test for diverged derivatives."""
        return all(_all_finite(np.ascontiguousarray(a)) for a in (
            self.running.lxx, self.running.luu, self.terminal.lxx, self.step.Fx, self.step.Fu))


def _same_model(a, b) -> bool:
    return a is b or all(np.array_equal(x, y) for x, y in zip(a.kernel_args, b.kernel_args))


class CompiledEvaluation:
    """The fused evaluation of a :class:`~ddp.problem.ShootingProblem` on the analytical backend
    (module docstring)."""

    def __init__(self, problem):
        P = self.problem = problem
        self.model = P.dynamics.model
        self.run = self._part(P.running_cost)
        self.term = self._part(P.terminal_cost)
        e = P.dynamics.integrate_second_order(P.x0[None, :P.nq], np.zeros((1, P.nv)),
                                              hessian=False)
        self.lie_iv, self.lie_nv = e.offsets, e.sizes
        self.inner = INNER_DTM if P.nv <= INNER_CROSSOVER_NV else INNER_IDFOZA

    def _part(self, cost):
        """(ints, floats, others): the program run inside the compiled calls (an empty one if
        the cost has none on the dynamics' model) and the costs added on their own."""
        program, others = _costs.split(cost)
        if program is not None and not _same_model(program.model, self.model):
            program, others = None, [cost]
        if program is None:
            return np.zeros(1, dtype=np.int64), np.zeros(0), others
        return program.ints, program.floats, others

    def derivatives(self, xs, us, hessians, so_mode) -> KnotDerivatives:
        """:meth:`ddp.problem.ShootingProblem.calc_diff` in one compiled call."""
        P = self.problem
        T, n, nu, nq, ndx = P.T, P.nv, P.nu, P.nq, P.ndx
        Q = np.ascontiguousarray(xs[:-1, :nq])
        V = np.ascontiguousarray(xs[:-1, nq:])
        U = np.ascontiguousarray(us, dtype=float)
        TAU = np.ascontiguousarray(U @ P.integrator.B.T)
        tensors = so_mode == 1
        step_buf = np.empty(_kev.step_size(T, n, nu))
        tensor_buf = np.empty(4 * T * n ** 3 if tensors else 0)
        point_buf = np.empty(_kev.point_size(T, n) if so_mode == 2 else 0)
        H = np.zeros((T, self.lie_iv.shape[0], 6, 12, 12))
        run_buf = np.empty(_kcosts.cost_size(T, ndx, nu))
        term_buf = np.empty(_kcosts.cost_size(1, ndx, nu))
        _kev.knot_derivatives(*self.model.kernel_args, P.integrator.B, P.dt, Q, V, TAU, U,
                              tensors, self.inner, OUTER_DTM, so_mode > 0, self.lie_iv,
                              self.lie_nv, self.run[0], self.run[1], self.term[0], self.term[1],
                              np.ascontiguousarray(xs[-1:, :nq]),
                              np.ascontiguousarray(xs[-1:, nq:]), hessians == "exact",
                              step_buf, tensor_buf, point_buf, H, run_buf, term_buf,
                              num_chunks(T))
        Fx, Fu, da_dq, da_dv, MinvB, Jq, Jw = _kev.step_views(step_buf, T, n, nu)
        e = IntegrateExpansion(Jq, Jw, self.lie_iv, self.lie_nv, H)
        T4 = tuple(_kev.tensor_views(tensor_buf, T, n)) if tensors else ()
        point = _kev.point_views(point_buf, T, n) if so_mode == 2 else (None, None)
        step = StepDerivatives(Fx, Fu, da_dq, da_dv, MinvB, e, so_mode, T4, Q, V, *point)
        run = _costs.CostDerivatives(*_kcosts.cost_views(run_buf, T, ndx, nu))
        term = _costs.CostDerivatives(*_kcosts.cost_views(term_buf, 1, ndx, nu))
        for c in self.run[2]:
            run = run + c.calc_diff(xs[:-1], us, hessians).scaled(P.dt)
        for c in self.term[2]:
            term = term + c.calc_diff(xs[-1:], np.zeros((1, nu)), hessians)
        return KnotDerivatives(run, term, step)

    def rollout_cost(self, x0, us, k, K, alpha, xs_ref, feedback, gaps):
        """(xs, us, cost) of :meth:`ddp.problem.ShootingProblem.closed_loop` (or an open-loop
        rollout without ``feedback``) and the total cost, in one compiled call."""
        P = self.problem
        F = P.integrator
        xs = np.empty((P.T + 1, P.nx))
        un = np.empty_like(us)
        infeasible = gaps is not None
        g = np.ascontiguousarray(gaps) if infeasible else np.zeros((P.T + 1, P.ndx))
        with np.errstate(all="ignore"):
            cost = _kev.rollout_cost(*self.model.kernel_args, F.B, F.dt, x0,
                                     np.ascontiguousarray(us), np.ascontiguousarray(k),
                                     np.ascontiguousarray(K), float(alpha), P.u_min, P.u_max,
                                     np.ascontiguousarray(xs_ref), feedback, g, infeasible, xs,
                                     un, self.run[0], self.run[1], self.term[0], self.term[1],
                                     np.empty(P.T + 1), num_chunks(P.T))
            if np.isfinite(cost) and (self.run[2] or self.term[2]):
                cost += sum(P.dt * np.sum(c.calc(xs[:-1], un)) for c in self.run[2])
                cost += sum(float(c.calc(xs[-1:], np.zeros((1, P.nu)))[0])
                            for c in self.term[2])
        return xs, un, float(cost)
