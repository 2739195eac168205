"""Evaluating a trajectory: the one interface through which a
:class:`~ddp.problem.ShootingProblem` rolls out controls, prices trajectories and differentiates
them, and its implementation through the :class:`~dynamics.protocol.Dynamics` protocol.

An :class:`Evaluation` is chosen once, when the problem is built, from what its backend declares
(``dynamics.compiled``): :class:`~ddp.compiled.CompiledEvaluation` runs each phase over all
knots in one compiled call on the analytical kernels; :class:`ProtocolEvaluation` steps knot by
knot through the backend's ``aba`` (at an impact its ``impulse_derivatives``) and differentiates
phase by phase through its batched ``fd_derivatives`` and the costs' own calls, each phase on the
backend with the phase's contacts (``with_contacts``).  Both give the same numbers to rounding
(``tests/test_evaluation.py``).

The phases, each for the whole trajectory:

* :meth:`Evaluation.rollout`: the states under an open or closed loop
  (:data:`~ddp.kernels.records.ClosedLoop`), with FDDP's gaps when the trajectory has them;
* :meth:`Evaluation.rollout_cost`: the same and its total cost;
* :meth:`Evaluation.derivatives`: everything one iteration differentiates (:class:`KnotDerivatives`)
  for a :class:`~ddp.local_model.LocalModel`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynamics.contact_dynamics import constrained_dynamics, impulse_dynamics

from . import costs as _costs
from .costs import force_costs
from .kernels import all_finite as _all_finite
from .kernels.contact_knots import STEP_NOT_FINITE, STEPPED
from .kernels.records import (IMPACT, CostDerivatives, SecondOrder, StepDerivatives,
                              empty_forces)
from .local_model import LocalModel


@dataclass(frozen=True)
class PhaseSpan:
    """The knots ``knots`` (a slice) of one phase and the backend that steps them: the
    problem's on the phase's contacts (``held``: it has some); ``impact``: they are impacts
    (``restitution``)."""

    knots: slice
    dynamics: object
    held: bool = False
    impact: bool = False
    restitution: float = 0.0


@dataclass
class KnotDerivatives:
    """Everything one iteration differentiates: running costs (scaled by dt, T knots), terminal
    cost (1 knot), the step derivatives (T knots) and the data of DDP's second-order terms (its
    mode as the local model asked)."""

    running: CostDerivatives
    terminal: CostDerivatives
    step: StepDerivatives
    second_order: SecondOrder

    def copy(self) -> "KnotDerivatives":
        """The same derivatives in arrays of their own (the records' tree copied)."""
        return KnotDerivatives(*(_copied(r) for r in (self.running, self.terminal, self.step,
                                                       self.second_order)))

    def all_finite(self) -> bool:
        """Whether what the backward pass reads beyond the gradient (the cost Hessians, Fx, Fu)
        is finite: the solver's test for diverged derivatives."""
        return all(_all_finite(np.ascontiguousarray(a)) for a in (
            self.running.lxx, self.running.luu, self.terminal.lxx, self.step.Fx, self.step.Fu))


class Evaluation:
    """How a problem evaluates trajectories (module docstring).  ``loop``: a
    :data:`~ddp.kernels.records.ClosedLoop`; ``gaps``: the defects (T + 1, ndx) of a
    multiple-shooting trajectory or None."""

    def __init__(self, problem):
        self.problem = problem

    def rollout(self, x0, loop, gaps):
        """(xs, us): the states (T + 1, nx) and the clipped controls (T, nu)."""
        raise NotImplementedError

    def rollout_cost(self, x0, loop, gaps, out=None):
        """(xs, us, cost): :meth:`rollout` and the total cost (NaN when not finite).  ``out``: a
        :data:`~ddp.kernels.records.Rollout` of :meth:`trial_record` to write into (None: new
        arrays); an evaluation that cannot write into it returns new arrays."""
        raise NotImplementedError

    def trial_record(self, current_xs):
        """A :data:`~ddp.kernels.records.Rollout` of this problem's work arrays to roll a trial
        out into that does not hold the trajectory ``current_xs`` (the line search's; made once,
        reused by every iteration and solve), or None where rollouts make their own arrays."""
        return None

    def derivatives(self, xs, us, local: LocalModel) -> KnotDerivatives:
        raise NotImplementedError

    def knot_programs(self, t) -> list:
        """The compiled cost programs that evaluate knot t's cost (t = T: the terminal cost), as
        (:data:`~ddp.kernels.records.Program`, its row of ``starts`` for the knot) pairs: the
        cost's own program (what its ``calc`` runs), and any this evaluation packed."""
        P = self.problem
        cost = P.terminal_cost if t == P.T else P.knot_costs.costs[t]
        program = _costs.split(cost)[0]
        return [] if program is None else [(program.record, 0)]

    def cycle(self, order) -> None:
        """Follow the problem's knots reordered by :meth:`~ddp.problem.ShootingProblem.cycle`
        (knot t is the former knot ``order[t]``): what this evaluation keeps per knot."""

    def steps(self, xs, us, first=0):
        """F(xs_t, us_t) (len(us), nx) of the knots first, first + 1, ... (all T by default),
        each from its own state (row t of xs and us: knot first + t)."""
        raise NotImplementedError

    def cost(self, xs, us) -> float:
        """The total cost of finite (xs, us)."""
        raise NotImplementedError

    def knot_forces(self, xs, us):
        """The contact forces (T, nc) of every knot from its own state (at an impact its
        impulses; nc: the most components at a knot), in the order of the knot's contacts."""
        raise NotImplementedError

    def step_status(self, xs, us, t) -> int:
        """Whether knot t steps from its own state: :data:`STEPPED`, :data:`STEP_NOT_FINITE`,
        or the status of its singular KKT system (:data:`dynamics.contact_dynamics.STATUS`)."""
        raise NotImplementedError

    #: whether :meth:`cost_derivatives` needs the forces of the knots' derivatives
    needs_forces = False

    def cost_derivatives(self, xs, us, hessians, forces=None, into_forces=False):
        """(running, terminal) cost derivatives (running weighted, as in
        :meth:`~ddp.problem.ShootingProblem.cost_derivatives`); ``forces``: the knots'
        :data:`~ddp.kernels.records.Forces` of their derivatives at (xs, us), which a problem
        that :attr:`needs_forces` must be given (its ``dl_dlam`` is left as it is, unless
        ``into_forces``: the costs' gradients in the forces are written into it)."""
        if forces is None and self.needs_forces:
            raise ValueError("forces: the cost derivatives of this problem need the forces of its "
                             "derivatives (KnotDerivatives.step.forces)")
        if forces is not None and not into_forces:  # the caller's record keeps its dl_dlam
            forces = forces._replace(dl_dlam=np.empty_like(forces.dl_dlam))
        return self._cost_derivatives(xs, us, hessians, forces)

    def _cost_derivatives(self, xs, us, hessians, forces):
        """:meth:`cost_derivatives`; the costs' gradients in the forces (weighted as the costs)
        into ``forces.dl_dlam``, which this zeroes first (forces None: none is needed)."""
        raise NotImplementedError


class ProtocolEvaluation(Evaluation):
    """Through the Dynamics protocol: knot by knot for the rollouts, batched by phase for the
    derivatives (the step's through ``fd_derivatives``, an impact's through
    ``impulse_derivatives``, the costs' through their own calls).  ``spans``: a
    :class:`PhaseSpan` per phase, whose backend is the problem's on the phase's contacts
    (``with_contacts``, made once per contact set); ``knot_span`` (T,): each knot's span."""

    def __init__(self, problem):
        super().__init__(problem)
        P = problem
        self._on_contacts = {}  # (contacts, damping) -> the backend on them, made once
        self.spans, self.knot_span = self._spans()
        self.nc = int(P.knot_contacts.size.max(initial=0))  # force components at a knot, at most
        #: the force components per knot that the derivatives carry: ``nc`` when a running cost
        #: acts on the contact forces (the backends' ``contact_derivatives`` give them to the
        #: costs and DDP's terms), else 0
        self.force_rows = (self.nc if any(force_costs(c) for c, _ in P.knot_costs.distinct)
                           else 0)
        self.needs_forces = self.force_rows > 0

    def _spans(self):
        """(spans, knot_span) of the problem's phases."""
        P = self.problem
        spans, t = [], 0
        for p in P.phases:
            backend = P.dynamics
            if P.capabilities.phases:
                key = (p.contacts, p.damping)
                if key not in self._on_contacts:
                    self._on_contacts[key] = backend.with_contacts(p.contacts, p.damping)
                backend = self._on_contacts[key]
            spans.append(PhaseSpan(slice(t, t + p.knots), backend, bool(p.contacts), p.impact,
                                   p.restitution))
            t += p.knots
        return spans, np.repeat(np.arange(len(spans)), [p.knots for p in P.phases])

    def cycle(self, order):
        self.spans, self.knot_span = self._spans()

    def _step(self, span, x, u):
        integrator = self.problem.integrator
        if span.impact:
            return integrator.impact_step(x, span.dynamics, span.restitution)
        return integrator.step(x, u, span.dynamics)

    def rollout(self, x0, loop, gaps):
        P = self.problem
        if P.capabilities.rollout:
            return self._rollout_function(x0, loop, gaps)
        integrator = P.integrator
        xs = np.empty((P.T + 1, P.nx))
        un = np.empty_like(loop.us)
        feedback = loop.feedback
        alpha = loop.alpha
        xs[0] = x0 if gaps is None else integrator.integrate(x0, (alpha - 1) * gaps[0])
        for t in range(P.T):
            u = loop.us[t] + (alpha * loop.k[t]
                              + loop.K[t] @ integrator.difference(loop.xs_ref[t], xs[t])
                              if feedback else 0)
            un[t] = np.clip(u, P.u_min, P.u_max)
            xs[t + 1] = self._step(self.spans[self.knot_span[t]], xs[t], un[t])
            if gaps is not None:
                xs[t + 1] = integrator.integrate(xs[t + 1], (alpha - 1) * gaps[t + 1])
            if not np.all(np.isfinite(xs[t + 1])):
                xs[t + 1:] = np.nan
                un[t + 1:] = np.nan
                break
        return xs, un

    def _rollout_function(self, x0, loop, gaps):
        """The rollout as one call of the dynamics' compiled recurrence (a vector space:
        (+) is +); NaN from the first state that is not finite, as the loop above."""
        P = self.problem
        T, nu, nx = P.T, P.nu, P.nx
        fn = P.dynamics.rollout_function(T, P.integrator.dt, P.integrator.B, P.u_min, P.u_max)
        alpha = float(loop.alpha)
        g = np.zeros((T + 1, nx)) if gaps is None else np.asarray(gaps, dtype=float)
        k = loop.k if loop.feedback else np.zeros((T, nu))
        K = (loop.K if loop.feedback else np.zeros((T, nu, nx))).transpose(0, 2, 1)
        per_knot = np.hstack([loop.us, k, K.reshape(T, nu * nx), loop.xs_ref[:T], g[1:]]).T
        start = np.asarray(x0, dtype=float) + (alpha - 1) * g[0]
        X, U = fn(start, per_knot, [alpha, float(loop.feedback)])
        xs = np.vstack([start, np.asarray(X.full()).T])
        un = np.asarray(U.full()).T
        bad = np.flatnonzero(~np.all(np.isfinite(xs), axis=1))
        if bad.size:
            xs[bad[0]:] = np.nan
            un[max(bad[0], 1):] = np.nan
        return xs, un

    def rollout_cost(self, x0, loop, gaps, out=None):
        xs, un = self.rollout(x0, loop, gaps)
        return xs, un, self.problem.cost(xs, un)

    def derivatives(self, xs, us, local):
        P = self.problem
        integrator, mode = P.integrator, local.second_order
        parts = []
        for s in self.spans:
            k = s.knots
            parts.append(integrator.impact_derivatives(xs[k], s.dynamics, s.restitution, mode,
                                                       self.force_rows)
                         if s.impact else
                         integrator.derivatives(xs[k], us[k], mode, s.dynamics,
                                                self.force_rows, s.held))
        step, second_order = parts[0] if len(parts) == 1 else _joined(parts)
        costs = self._cost_derivatives(xs, us, local.hessians,
                                       step.forces if self.force_rows else None)
        return KnotDerivatives(*costs, step, second_order)

    def steps(self, xs, us, first=0):
        out = np.empty((len(us), xs.shape[1]))
        end = first + len(us)
        for s in self.spans:
            a, b = max(s.knots.start, first), min(s.knots.stop, end)
            if a < b:
                rows = slice(a - first, b - first)
                out[rows] = self._step(s, xs[rows], us[rows])
        return out

    def cost(self, xs, us):
        P = self.problem
        forces = self._forces(xs, us, self.force_rows) if self.force_rows else None
        run = P.knot_costs.calc(xs[:-1], us, forces)
        term = P.terminal_cost.calc(xs[-1:], np.zeros((1, P.nu)))
        return float(np.sum(P.cost_weights * run) + term[0])

    def knot_forces(self, xs, us):
        return self._forces(xs, us, self.nc).lam

    def step_status(self, xs, us, t):
        P = self.problem
        x, u = xs[t], us[t]
        if not np.all(np.isfinite(x)):
            return STEP_NOT_FINITE
        cs = P.contact_sets[t]
        if cs is not None:  # the KKT system on the analytical kernels (the protocol has none);
            q, v, damping = x[:P.nq], x[P.nq:], P.knot_contacts.damping[t]  # it depends on q only
            status = int(impulse_dynamics(P.dynamics.model, cs, q, v,
                                          P.knot_contacts.restitution[t], damping)[2]
                         if P.knot_contacts.kind[t] == IMPACT else
                         constrained_dynamics(P.dynamics.model, cs, q, v, np.zeros(P.nv),
                                              damping)[2])
            if status != STEPPED:
                return status
        if not np.all(np.isfinite(u)):
            return STEP_NOT_FINITE
        with np.errstate(all="ignore"):
            stepped = np.all(np.isfinite(self._step(self.spans[self.knot_span[t]], x, u)))
        return STEPPED if stepped else STEP_NOT_FINITE

    def _forces(self, xs, us, nc):
        """The :data:`~ddp.kernels.records.Forces` of the knots (nc components each), values
        only: each phase's contact forces (at an impact its impulses) from its backend, zero in
        free flight."""
        P = self.problem
        out = empty_forces(P.T, nc, P.nv, P.nu)
        for s in self.spans:
            if not s.held:
                continue
            k = s.knots
            q, v = xs[k, :P.nq], xs[k, P.nq:]
            with np.errstate(all="ignore"):
                lam = (s.dynamics.impulse_derivatives(q, v, s.restitution, 0).impulse
                       if s.impact else
                       s.dynamics.contact_derivatives(q, v, us[k] @ P.integrator.B.T, 0).lam)
            lam = np.reshape(lam, (len(q), -1))
            out.lam[k, :lam.shape[1]] = lam
        return out

    def _cost_derivatives(self, xs, us, hessians, forces):
        P = self.problem
        if forces is not None:
            forces.dl_dlam[...] = 0.0
        run = weighted(P.knot_costs.calc_diff(xs[:-1], us, hessians, forces), P.cost_weights,
                       P.impacts)
        if forces is not None:
            forces.dl_dlam[...] *= P.cost_weights[:, None]
        term = P.terminal_cost.calc_diff(xs[-1:], np.zeros((1, P.nu)), hessians)
        return run, term


def _copied(record):
    """A record of arrays (named tuples nested) with every array copied."""
    if isinstance(record, np.ndarray):
        return record.copy()
    if isinstance(record, tuple):
        fields = [_copied(f) for f in record]
        return type(record)(*fields) if hasattr(record, "_fields") else tuple(fields)
    return record


def _joined(records):
    """The records of consecutive runs of knots (tuples of (StepDerivatives, SecondOrder)) as
    one: their arrays concatenated along the knot axis, their numbers (the mode) the first's."""
    first = records[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(records)
    if isinstance(first, tuple):
        fields = [_joined(list(f)) for f in zip(*records)]
        return type(first)(*fields) if hasattr(first, "_fields") else tuple(fields)
    return first


def add_costs(derivatives: CostDerivatives, costs, xs, us, hessians, scale=1.0):
    """``derivatives`` plus the derivatives of the other ``costs`` (evaluated by their own
    calls) at (xs, us), each times ``scale``."""
    for c in costs:
        d = c.calc_diff(xs, us, hessians)
        derivatives = derivatives + (d.scaled(scale) if scale != 1.0 else d)
    return derivatives


def weighted(d, weights, impacts):
    """Running cost derivatives of T knots times each knot's weight, with those in u zero at
    the impacts."""
    w = np.asarray(weights, dtype=float)
    if np.all(w == w[0]) and not impacts.any():
        return d.scaled(w[0])
    keep = np.where(impacts, 0.0, w)
    return type(d)(d.l * w, d.lx * w[:, None], d.lu * keep[:, None], d.lxx * w[:, None, None],
                   d.lxu * keep[:, None, None], d.luu * keep[:, None, None])
