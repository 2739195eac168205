"""`ShootingProblem`: an optimal-control problem over a horizon of T knots.

    minimize   sum_{t<T} dt * l(x_t, u_t) + l_T(x_T)
    subject to x_{t+1} = F(x_t, u_t),  x_0 = x0,  u_min <= u_t <= u_max,
               lower <= c(x_t, u_t) <= upper  (hard constraints, :mod:`ddp.constraints`)

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

import dynamics as _dyn
from dynamics.contact_dynamics import STATUS, contact_jacobian

from . import costs as _costs
from .constraints import AugmentedLagrangian, knot_constraints
from .compiled import CompiledEvaluation
from .compiled_problem import CompiledProblem
from .evaluation import KnotDerivatives, ProtocolEvaluation
from .integrators import SemiImplicitEuler
from .kernels.records import IMPACT, ClosedLoop, Gaps
from .local_model import GAUSS_NEWTON, LocalModel
from .phases import KnotCosts, Phase, check_phases, knot_contacts
from .warm_up import warm_up


class ShootingProblem:
    """``dynamics``: any :class:`~dynamics.protocol.Dynamics`; ``x0`` (nq + nv,); ``horizon`` T;
    ``dt`` time step; ``running_cost`` / ``terminal_cost``: :class:`~ddp.costs.Cost`;
    ``actuation``: (nv, nu) matrix (None: fully actuated); ``u_min``, ``u_max``: control bounds
    (scalars or (nu,); None: unbounded).

    ``phases``: a sequence of :class:`~ddp.phases.Phase` (contacts, impacts and running costs
    per knot; ``horizon`` may then be None: the phases' knots).  Without phases the problem is
    one free-flight phase, or, for a backend that holds contacts (``dynamics.contacts``: a
    :class:`~dynamics.contact_dynamics.ContactDynamics`, or the CasADi or finite-difference
    backend built with ``contacts=``), one phase on them.  Contacts need the analytical kernels
    (the backend's ``model`` and ``compiled``), or a backend that steps them through the
    protocol (``with_contacts`` and ``impulse_derivatives``, and ``contact_derivatives`` for
    costs on the contact forces: the CasADi and finite-difference backends).

    ``constraints``: hard constraints (:class:`~ddp.constraints.Constraint`) of the running
    knots: one list for every knot, or T lists (one per knot); ``terminal_constraints``: a list
    for the terminal knot.  The solver enforces them by an augmented Lagrangian
    (:mod:`ddp.constraints`); ``problem.constraints`` holds them.

    ``x0`` may be assigned between solves (a receding horizon's measured state), and
    :meth:`cycle` moves the phase schedule on by some knots; nothing else is rebuilt."""

    def __init__(self, dynamics, x0, horizon: int | None, dt: float, running_cost,
                 terminal_cost, actuation=None, u_min=None, u_max=None, phases=None, *,
                 constraints=None, terminal_constraints=None):
        self.dynamics = _dyn.protocol.check_dynamics(dynamics)
        #: what the backend can do beyond the Dynamics methods (resolved once)
        self.capabilities = caps = _dyn.capabilities(dynamics)
        model = dynamics.model
        given_phases = phases is not None
        if phases is None:
            if horizon is None or isinstance(horizon, bool) or int(horizon) != horizon \
                    or horizon < 1:
                raise ValueError(f"horizon: expected a positive integer; got {horizon!r}")
            held = caps.contacts  # a ContactDynamics: one phase on them
            phases = [Phase(int(horizon), tuple(held.contacts) if held is not None else (),
                            damping=caps.damping)]
        self._phases, self.T = check_phases(phases, horizon)
        #: the phases as given, and the one of each knot (:meth:`cycle` reorders the knots)
        self.schedule = tuple(self.phases)
        self.knot_phase = np.repeat(np.arange(len(self.phases)), [p.knots for p in self.phases])
        if any(p.contacts for p in self.phases) and not (model is not None
                                                         and caps.contact_model):
            raise ValueError(f"phases: contacts need a backend with a contact model "
                             f"(dynamics.ContactDynamics or dynamics.AnalyticalDynamics, or the "
                             f"CasADi or finite-difference backend); {type(dynamics).__name__} "
                             f"has none")
        self.knot_contacts, self.contact_sets = knot_contacts(model, self.phases, dt)
        self.integrator = SemiImplicitEuler(dynamics, dt, actuation)
        #: the records and doors of the compiled passes
        self.compiled_problem = CompiledProblem(self.integrator, self.knot_contacts)
        self.dt = self.integrator.dt
        self.nq, self.nv, self.nu = self.integrator.nq, self.integrator.nv, self.integrator.nu
        self.nx, self.ndx = self.integrator.nx, self.integrator.ndx
        self.x0 = self._check_x(x0, "x0")
        bound = {}

        def bind(cost, contacts=None, where="running_cost"):
            if cost is None:
                raise ValueError(f"{where}: no running cost (give the problem a running_cost or "
                                 f"the phase a cost)")
            key = (id(cost), id(contacts))
            forces = _costs.force_costs(cost)
            if forces and not (caps.compiled or caps.contact_forces):
                raise ValueError(f"{where}: {type(forces[0]).__name__} on {forces[0].frame!r} "
                                 f"needs the contact forces and their derivatives "
                                 f"(contact_derivatives), which {type(dynamics).__name__} "
                                 f"does not give")
            if key not in bound:
                try:
                    bound[key] = _costs.bind(cost, self.nq, self.nv, self.nu, model, contacts)
                except (ValueError, TypeError) as e:
                    raise type(e)(f"{where}: {e}") from None
            return bound[key]

        knot_costs, t = [], 0
        for i, p in enumerate(self.phases):
            cs = self.contact_sets[t]
            where = f"phases[{i}].cost" if given_phases else "running_cost"
            knot_costs += [bind(c, cs, where) for c in p.knot_costs(running_cost)]
            t += p.knots
        #: the running cost of the first knot (of every knot without phases)
        self.running_cost = knot_costs[0]
        self.terminal_cost = bind(terminal_cost, None, "terminal_cost")
        #: the hard constraints, as augmented-Lagrangian terms of the knots' costs
        #: (:mod:`ddp.constraints`; empty: none)
        running = knot_constraints(constraints, self.T)
        t = 0
        for i, p in enumerate(self.phases):  # each phase's own, after the problem's
            for k, cs in enumerate(knot_constraints(p.constraints, p.knots,
                                                    f"phases[{i}].constraints")):
                running[t + k] = running[t + k] + cs
            t += p.knots
        self.constraints = AugmentedLagrangian(
            running, knot_constraints(terminal_constraints, 1, "terminal_constraints")[0],
            self.knot_contacts.cost_scale)
        if self.constraints:  # the residuals bound as the costs are (once per contact set)
            def bind_at(t, where):
                contacts = self.contact_sets[t] if t < self.T else None
                return lambda residual: bind(residual, contacts, where)

            knot_costs = [self.constraints.augmented(t, c, bind_at(t, "constraints"))
                          for t, c in enumerate(knot_costs)]
            self.terminal_cost = self.constraints.augmented(
                self.T, self.terminal_cost, bind_at(self.T, "terminal_constraints"))
        self.knot_costs = KnotCosts(knot_costs)
        self.u_min = self._bound(u_min, -np.inf, "u_min")
        self.u_max = self._bound(u_max, np.inf, "u_max")
        if np.any(self.u_min > self.u_max):
            i = int(np.argmax(self.u_min > self.u_max))
            raise ValueError(f"u_min, u_max: expected u_min <= u_max; control {i} has "
                             f"{self.u_min[i]:g} > {self.u_max[i]:g}")
        self._closed = None
        self.evaluation = (CompiledEvaluation if dynamics.compiled else ProtocolEvaluation)(self)
        if self.constraints:
            self.constraints.attach(self.evaluation.knot_programs, self.evaluation.knot_forces)
            self.constraints.write(np.zeros(self.constraints.size), 0.0)

    @property
    def cost_weights(self) -> np.ndarray:
        """The weight of each knot's running cost (T,): dt, or 1 at an impact."""
        return self.knot_contacts.cost_scale

    @property
    def impacts(self) -> np.ndarray:
        """Whether each knot is an impact (T,)."""
        return self.knot_contacts.kind == IMPACT

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
        x = _float_array(name, x, (self.nx,), f"(q: {self.nq}, v: {self.nv})")
        if not np.all(np.isfinite(x)):
            i = int(np.argmax(~np.isfinite(x)))
            raise ValueError(f"{name}: expected finite values; got {x[i]} at index {i}")
        self.dynamics.check_configuration(x[:self.nq], name)
        return x.copy()

    def check_states(self, xs, name="xs"):
        """xs as a float array (T + 1, nx), checked: shape, finite values and (on a robot) valid
        configurations (unit quaternions)."""
        xs = _float_array(name, xs, (self.T + 1, self.nx), "(horizon + 1, nq + nv)")
        if not np.all(np.isfinite(xs)):
            raise ValueError(f"{name}: expected finite states")
        self.dynamics.check_configuration(xs[:, :self.nq], name)
        return xs

    def trajectory_arrays(self, xs, us):
        """(xs, us) as float arrays of shapes (T + 1, nx) and (T, nu), or ValueError naming the
        one of another shape (non-finite values pass: a diverged trajectory has a NaN cost)."""
        return (_float_array("xs", xs, (self.T + 1, self.nx), "(horizon + 1, nq + nv)"),
                self.check_controls(us))

    def cycle(self, knots: int = 1) -> None:
        """Move the schedule on by ``knots`` knots, cyclically: knot t takes what knot
        t + ``knots`` had (its contacts, impact, running cost and weight) and the first
        ``knots`` knots wrap around to the end, so that a problem over one cycle of a gait
        stays that gait one tick later (aligator's ``cycleProblem``; Crocoddyl's MPC appends
        its first models circularly).  Nothing is rebuilt: the knots' packed contacts and cost
        programs are reordered in place, and the compiled kernels stay linked.  ``phases``
        then lists the reordered runs of knots; the terminal knot and its cost are kept."""
        if isinstance(knots, bool) or not isinstance(knots, (int, np.integer)) or knots < 0:
            raise ValueError(f"knots: expected a non-negative number of knots; got {knots!r}")
        if self.constraints:
            raise ValueError("cycle: a problem with constraints cannot move its schedule on "
                             "(their multipliers are laid out by knot); build the problem at "
                             "the new phase instead")
        s = int(knots) % self.T
        if s == 0:
            return
        order = np.roll(np.arange(self.T), -s)  # knot t <- the former knot order[t]
        kc = self.knot_contacts
        for a in (kc.kind, kc.int_offsets, kc.float_offsets, kc.size, kc.cost_scale,
                  kc.damping, kc.restitution):
            a[...] = a[order]
        self.contact_sets = [self.contact_sets[i] for i in order]
        self.knot_costs.cycle(order)
        self.knot_phase = self.knot_phase[order]
        self._phases = None  # derived again when read (a compiled tick never reads them)
        self.running_cost = self.knot_costs.costs[0]
        self.evaluation.cycle(order)

    @property
    def phases(self) -> list:
        """The knots as :class:`~ddp.phases.Phase` runs: as given, or after :meth:`cycle` each
        run of consecutive knots of one phase of the schedule, with their costs."""
        if self._phases is None:
            self._phases = self._runs()
        return self._phases

    def _runs(self) -> list:
        """The knots as phases: each run of consecutive knots of one phase of the schedule,
        with their costs."""
        runs, start = [], 0
        for t in range(1, self.T + 1):
            if t == self.T or self.knot_phase[t] != self.knot_phase[start]:
                p = self.schedule[self.knot_phase[start]]
                runs.append(Phase(t - start, p.contacts, self.knot_costs.costs[start:t],
                                  p.impact, p.damping, p.restitution, p.name))
                start = t
        return runs

    def check_controls(self, us, name="us"):
        return _float_array(name, us, (self.T, self.nu), "(horizon, nu)")

    def prepare(self) -> None:
        """Load every compiled kernel a solve of this problem runs (on a machine's first run,
        compile them), untimed; :func:`~ddp.solver.solve` calls it (:mod:`ddp.warm_up`)."""
        warm_up(self)

    def second_order_mode(self, setting: str):
        """The :class:`~ddp.kernels.records.SecondOrderMode` of DDP for a ``second_order``
        setting ("auto", "tensor", "contracted") on this problem; ValueError naming the backend
        when it cannot give that mode."""
        try:
            return self.compiled_problem.second_order_mode(setting)
        except ValueError as e:
            raise ValueError(str(e).replace("this backend",
                                            type(self.dynamics).__name__)) from None

    def step_hessians(self, t: int, lam, derivatives, second_order):
        """(Fxx, Fxu, Fuu) of ``lam . h`` at knot t (``lam`` (2 nv,) tangent at x+; h the step's
        displacement), from the records ``derivatives`` (a
        :data:`~ddp.kernels.records.StepDerivatives`) and ``second_order`` of :meth:`calc_diff`,
        by the same compiled function as the backward pass."""
        return self.compiled_problem.step_hessians(t, lam, derivatives, second_order)

    def initial_controls(self):
        """The controls a solve starts from when given none: :meth:`quasi_static` (Crocoddyl's
        cold start), or zeros for a system without ``rnea``."""
        try:
            return self.quasi_static()
        except NotImplementedError:
            return np.zeros((self.T, self.nu))

    def quasi_static(self, xs=None):
        """Controls (T, nu) that hold each state ``xs[t]`` (default: x0 at every knot) at rest,
        like Crocoddyl's ``quasiStatic``: ``u = B^+ g(q)`` in free flight (least squares when
        underactuated), with contacts the first nu entries of ``[B, J^T]^+ g(q)`` (the contact
        forces take the rest), zero at an impact.  Needs ``dynamics.rnea`` or a robot."""
        xs = np.tile(self.x0, (self.T, 1)) if xs is None else np.asarray(xs, dtype=float)[:self.T]
        Q, zero = xs[:, :self.nq], np.zeros((self.T, self.nv))
        model = self.dynamics.model
        g = np.asarray(self.dynamics.rnea(Q, zero, zero) if model is None
                       else _dyn.rnea(model, Q, zero, zero))
        us = g @ np.linalg.pinv(self.integrator.B).T
        B = self.integrator.B
        for t, cs in enumerate(self.contact_sets):
            if cs is None:
                continue
            if self.knot_contacts.kind[t] == IMPACT:
                us[t] = 0.0
                continue
            J = contact_jacobian(model, cs, Q[t])[0]
            us[t] = (np.linalg.pinv(np.hstack([B, J.T])) @ g[t])[:self.nu]
        return us

    def contact_forces(self, xs, us) -> dict:
        """The contact forces along a trajectory: {frame: (T, 3)} in the world's axes ((T, 6),
        the wrench, for a frame that a Contact6D holds somewhere), NaN at the knots where the
        frame is not in contact (at an impact: its impulse)."""
        xs, us = np.asarray(xs, dtype=float), self.check_controls(us)
        width = {}
        for p in self.phases:
            for c in p.contacts:
                width[c.frame] = max(width.get(c.frame, 3), c.size)
        lam = self.evaluation.knot_forces(xs, us)
        out, t = {}, 0
        for p in self.phases:
            k = slice(t, t + p.knots)
            cs = self.contact_sets[t]
            t += p.knots
            if cs is None:
                continue
            row = 0
            for c in cs.contacts:
                f = out.setdefault(c.frame, np.full((self.T, width[c.frame]), np.nan))
                f[k, :c.size] = lam[k, row:row + c.size]
                row += c.size
        return out

    def failure(self, xs, us, status=None) -> str:
        """Why the dynamics failed along (xs, us): a message naming the first knot whose mass
        matrix is singular, or else whose KKT system is singular (from the derivatives'
        ``status`` (T,), or found at the knot before the first non-finite state); '' when none
        is."""
        singular = self._singular_mass(xs)
        if singular:
            return singular
        if status is None:
            bad = ~np.all(np.isfinite(xs), axis=1)
            if not bad.any() or int(np.argmax(bad)) == 0:
                return ""
            t = int(np.argmax(bad)) - 1
            cs = self.contact_sets[t]
            if cs is None:
                return ""
            code = self.evaluation.step_status(xs, us, t)
        else:
            failed = np.flatnonzero(status)
            if failed.size == 0:
                return ""
            t, code = int(failed[0]), int(status[failed[0]])
            cs = self.contact_sets[t]
        if code == 0 or code not in STATUS or cs is None:  # solved (or a step not finite)
            return ""
        kind = "impact" if self.knot_contacts.kind[t] == IMPACT else "contacts"
        return (f"knot {t} ({kind}: {', '.join(c.frame for c in cs.contacts)}): "
                f"{STATUS[code]}")

    def _singular_mass(self, xs) -> str:
        """'knot t: the mass matrix is singular ...' for the first knot (with finite states)
        where M(q) is not positive definite, on a robot; '' otherwise."""
        model = self.dynamics.model
        xs = np.asarray(xs, dtype=float)
        ok = np.all(np.isfinite(xs), axis=1)
        if model is None or not ok.any():
            return ""
        M = np.atleast_3d(_dyn.mass_matrix(model, xs[ok, :self.nq]))
        low = np.linalg.eigvalsh(M)[:, 0]
        scale = np.maximum(np.abs(M).max(axis=(1, 2)), 1e-300)
        singular = np.flatnonzero(low <= 1e-12 * scale)
        if singular.size == 0:
            return ""
        t = int(np.flatnonzero(ok)[singular[0]])
        return (f"knot {t}: the mass matrix is singular (smallest eigenvalue "
                f"{low[singular[0]]:.1e}); a body with no inertia about its joint's axis?")

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

    def closed_loop_cost(self, xs_ref, us, k, K, alpha=1.0, gaps=None, out=None):
        """(xs, us, cost): :meth:`closed_loop` from x0 and the :meth:`cost` of its trajectory
        (NaN if a state is not finite), with the analytical backend in one compiled call.
        ``out``: a record of ``evaluation.trial_record`` to write into (the line search's work
        arrays; the arrays returned are then its, overwritten by a later trial); None: new
        arrays."""
        loop = self._closed_loop(xs_ref, self.check_controls(us), k, K, alpha)
        return self.evaluation.rollout_cost(self.x0, loop, gaps, out)

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
        f[1:] = integrator.difference(xs[1:], self.evaluation.steps(xs[:-1], us))
        return f

    def cost(self, xs, us) -> float:
        """Total cost: the running costs weighted by dt (1 at an impact) + terminal cost (NaN if
        a state is not finite)."""
        xs, us = self.trajectory_arrays(xs, us)
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(us))):
            return float("nan")
        with np.errstate(all="ignore"):
            return self.evaluation.cost(xs, us)

    def cost_derivatives(self, xs, us, hessians="exact", forces=None):
        """(running, terminal) :class:`~ddp.costs.CostDerivatives` of every knot (running costs
        weighted by dt, or 1 at an impact, whose u-derivatives are zero).  ``forces``: the
        :data:`~ddp.kernels.records.Forces` of the derivatives at (xs, us), for the costs on
        contact forces."""
        return self.evaluation.cost_derivatives(*self.trajectory_arrays(xs, us), hessians,
                                                forces)

    def calc_diff(self, xs, us, local: LocalModel = GAUSS_NEWTON,
                  copy: bool = True) -> KnotDerivatives:
        """Batched derivatives of every knot (:class:`~ddp.evaluation.KnotDerivatives`) for the
        local model ``local`` (:class:`~ddp.local_model.LocalModel`: cost Hessians, and the
        mode of DDP's second-order dynamics terms).  ``copy=False``: the records are the
        problem's work arrays (made once per local model, as Crocoddyl's datas), overwritten by
        its next ``calc_diff`` of the same local model; the solver's way."""
        if not isinstance(local, LocalModel):
            raise TypeError(f"local: expected a ddp.LocalModel; got {local!r}")
        _costs.check_hessians(local.hessians)
        xs = np.asarray(xs, dtype=float)
        if xs.shape != (self.T + 1, self.nx):
            raise ValueError(f"xs: expected shape ({self.T + 1}, {self.nx}); got {xs.shape}")
        d = self.evaluation.derivatives(xs, self.check_controls(us), local)
        return d.copy() if copy else d

    def costs_again(self, xs, us, local: LocalModel, derivatives) -> KnotDerivatives:
        """``derivatives`` (of :meth:`calc_diff` at (xs, us)) with the costs evaluated again and
        the dynamics' kept: after a change of the costs alone (the constraints' multipliers or
        penalty, a reference).  The costs' gradients in the forces go into the record's own
        ``dl_dlam``."""
        d = derivatives
        forces = d.step.forces if self.evaluation.needs_forces else None
        run, term = self.evaluation.cost_derivatives(xs, us, local.hessians, forces,
                                                     into_forces=True)
        return KnotDerivatives(run, term, d.step, d.second_order)


def _float_array(name, x, shape, what):
    """``x`` as a C-contiguous float array of ``shape``, or ValueError naming ``name``, the
    expected shape (``what`` says what its axes are) and what it got."""
    if np.iscomplexobj(x):
        raise ValueError(f"{name}: expected real values; got complex values")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a float array of shape {shape} {what}; got "
                         f"{type(x).__name__}") from None
    if arr.shape != shape:
        raise ValueError(f"{name}: expected shape {shape} {what}; got {arr.shape}")
    return np.ascontiguousarray(arr)
