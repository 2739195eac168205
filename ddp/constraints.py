"""Hard constraints of a shooting problem, solved by an augmented Lagrangian on the same DDP.

A :class:`Constraint` is a residual with bounds, ``lower <= r(x, u) <= upper`` (an equality when
lower == upper), the residual of any built-in cost (its weight is not used).  The problem keeps
its constraints as :class:`AugmentedLagrangian` terms of its knots' costs: each constraint of a
knot becomes a term of that knot's compiled cost program with the quadratic-barrier activation

    (mu / 2) dist(r + lam / mu, [lower, upper])^2

(the shifted bounds ``lower - lam / mu``, ``upper - lam / mu`` and the weight ``mu`` written into
the program's floats; the weight divided by the knot's cost weight dt, which the problem
multiplies back), or, for a second-order cone K on a contact force, ``(mu / 2) dist(r + lam /
mu, K)^2`` with the exact projection onto K (its shift ``lam / mu`` written where the bounds
are).  Its gradient is ``J_r^T lam+`` with the updated multipliers
``lam+ = mu (r + lam/mu - P(r + lam/mu))`` (P: the projection onto the set, a clip for bounds),
and its exact Hessian is ``mu J_r^T (I - dP) J_r + sum_a lam+_a Hess r_a``: with
``hessians="exact"`` the Hessian of the Lagrangian is exact (costs, DDP's second-order dynamics
terms, and the constraints' curvature), with "gauss-newton" the last sum is dropped as the
residual Hessians of the costs are.  No new compiled pass: the constraints run inside the cost
programs of the derivatives and of the line search's rollouts.

The solver (:func:`ddp.solve`) minimizes this augmented Lagrangian for fixed (lam, mu) and
updates them when the subproblem is solved to its tolerance (the method of multipliers:
``ddp.solver._Run.next_subproblem``).  Outside a solve the weights are 0: ``problem.cost`` is the
cost alone.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import casadi
import numpy as np

from . import costs as _costs
from .kernels import costs as _k
from .kernels.records import CostDerivatives

#: the residual kinds that a constraint can use (the velocity term has no barrier)
_KINDS = {_k.STATE, _k.CONTROL, _k.PLACEMENT, _k.TRANSLATION, _k.ROTATION, _k.COM,
          _k.GRAVITY, _k.FORCE, _k.DISTANCE}


class Constraint:
    """``lower <= r(x, u) <= upper`` for the residual r of ``residual``, a built-in cost
    (:class:`~ddp.costs.FrameTranslation`, :class:`~ddp.costs.FramePlacement`,
    :class:`~ddp.costs.FrameRotation`, :class:`~ddp.costs.StateRegularization`,
    :class:`~ddp.costs.ControlRegularization`, :class:`~ddp.costs.CoMPosition`,
    :class:`~ddp.costs.ControlGravity`, :class:`~ddp.costs.Distance`, a cost on a contact force
    such as :class:`~ddp.costs.FrictionCone`; or a :class:`~ddp.costs.ResidualCost` written in
    CasADi, whose term its own CasADi calls evaluate, exact Hessian included; its weight is not
    used).  ``lower``, ``upper``:
    scalars or one bound per residual entry, None or +-inf for none; lower == upper is an
    equality; both None for a cost with a :class:`~ddp.costs.QuadraticBarrier` (a linearized
    friction cone): its bounds.  ``cone``: instead of bounds, the second-order cone
    ``|(r_0, r_1)| <= mu r_2`` (a friction coefficient mu, or a
    :class:`~ddp.costs.SecondOrderCone`) on a contact force's residual of 3 entries in its
    surface's axes (tangential, tangential, normal), with the exact projection
    (:meth:`friction_cone` builds it).  ``penalty_scale``: its share of the solver's penalty mu
    (default 1; :attr:`FORCE_PENALTY_SCALE` on a contact force).  For example, the end effector kept in a
    box::

        ddp.Constraint(ddp.FrameTranslation(model, "tool0", np.zeros(3), 1.0),
                       lower=[-1, -1, -1], upper=[1, 0.4, 0.4])
    """

    #: the default share of the solver's penalty mu on a residual of a contact force: forces
    #: are in newtons, hundreds of times a reach's metres.  Measured on HyQ walking with its
    #: friction cones as hard constraints: 15 iterations at an effective penalty of 1, 212 at
    #: 100 (HyQ standing with a bound on a foot's normal force: 27 against 103)
    FORCE_PENALTY_SCALE = 1e-2

    def __init__(self, residual, lower=None, upper=None, name: str = "",
                 penalty_scale: float | None = None, cone=None):
        if not isinstance(residual, _costs.ResidualCost):
            raise ValueError(f"residual: expected a built-in cost (ddp.FrameTranslation, "
                             f"ddp.StateRegularization, ...) or a ddp.ResidualCost; got "
                             f"{type(residual).__name__}")
        kind = _kind(residual)
        if kind is not None and kind not in _KINDS:
            raise ValueError(f"residual: {type(residual).__name__} cannot be constrained yet "
                             f"(a constraint takes a state, control, frame placement, "
                             f"translation or rotation, or centre-of-mass residual)")
        if residual.cone is not None and cone is None and lower is None and upper is None:
            cone = residual.cone
        if cone is not None:
            if lower is not None or upper is not None:
                raise ValueError("lower, upper: a cone constraint has no bounds; give cone= or "
                                 "bounds, not both")
            if not isinstance(residual, _costs.ForceCost) or residual.nr != 3:
                raise ValueError(f"cone: a second-order cone constrains a contact force's "
                                 f"residual of 3 entries (ddp.ContactForce, or "
                                 f"Constraint.friction_cone); got {type(residual).__name__} of "
                                 f"{residual.nr}")
            cone = cone if isinstance(cone, _costs.SecondOrderCone) else \
                _costs.SecondOrderCone(cone)
            residual = residual.copy_with(bounds=None, cone=None)
            lower, upper = -np.inf, np.inf
        elif residual.bounds is not None:
            if lower is not None or upper is not None:
                raise ValueError(f"lower, upper: {type(residual).__name__} has a "
                                 f"QuadraticBarrier, whose bounds the constraint takes; give "
                                 f"neither, or a cost without an activation")
            lower, upper = residual.bounds
            residual = residual.copy_with(bounds=None)
        nr = residual.nr
        lo, up = (_bound(b, nr, name_, fill)
                  for b, name_, fill in ((lower, "lower", -np.inf), (upper, "upper", np.inf)))
        bad = np.flatnonzero(lo > up)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"lower, upper: expected lower <= upper; entry {i} has "
                             f"{lo[i]:g} > {up[i]:g}")
        if cone is None and np.all(np.isinf(lo)) and np.all(np.isinf(up)):
            raise ValueError("lower, upper: expected at least one finite bound; got none")
        self.residual, self.lower, self.upper = residual, lo, up
        #: None, or the :class:`~ddp.costs.SecondOrderCone` that r lies in (then no bounds)
        self.cone = cone
        self.nr = nr
        if penalty_scale is None:
            penalty_scale = (self.FORCE_PENALTY_SCALE if isinstance(residual, _costs.ForceCost)
                             else 1.0)
        if not (np.isfinite(penalty_scale) and penalty_scale > 0):
            raise ValueError(f"penalty_scale: expected a positive finite number; got "
                             f"{penalty_scale!r}")
        #: this constraint's share of the solver's penalty mu (the residual's units)
        self.penalty_scale = float(penalty_scale)
        self.name = name or type(residual).__name__

    @property
    def equality(self) -> bool:
        return self.cone is None and bool(np.all(self.lower == self.upper))

    def __repr__(self):
        if self.cone is not None:
            return f"Constraint({self.name}, cone={self.cone.mu:g})"
        return (f"Constraint({self.name}, lower={self.lower.tolist()}, "
                f"upper={self.upper.tolist()})")

    @classmethod
    def friction_cone(cls, model, frame, mu, normal=(0.0, 0.0, 1.0), name="",
                      penalty_scale=None):
        """The friction cone of the contact on ``frame`` as a second-order cone:
        ``|f_t| <= mu f_n`` for its force f in the axes of a surface of normal ``normal`` (the
        world's z by default), with the exact projection (Crocoddyl's FrictionCone linearizes
        it in facets)."""
        n = _costs._finite("normal", normal, (3,), "a finite non-zero vector (3,)")
        if not np.linalg.norm(n) > 0:
            raise ValueError(f"normal: expected a finite non-zero vector (3,); got {normal!r}")
        R = _costs._surface_rotation(n)
        residual = _costs.ForceCost(model, frame, R.T, np.zeros(3), 1.0, 0, "FrictionCone")
        return cls(residual, name=name or f"friction cone on {frame}",
                   penalty_scale=penalty_scale, cone=mu)

    @classmethod
    def state_bounds(cls, model, position=True, velocity=True, nu=0):
        """The joint position limits (``q`` within the URDF's limits, joint by joint, on the
        joints with one configuration coordinate per velocity) and velocity limits (``|v|`` below
        the URDF's velocity limits) of a robot as one constraint on its state; a free flyer is
        not bounded."""
        model = _costs._model_of(model)
        pm = model.pin_model
        lo_q, up_q = np.asarray(pm.lowerPositionLimit), np.asarray(pm.upperPositionLimit)
        vmax = np.asarray(pm.velocityLimit)
        lower, upper = np.full(2 * model.nv, -np.inf), np.full(2 * model.nv, np.inf)
        a = model.arrays
        q_ref = np.asarray(model.neutral(), dtype=float)
        for i in range(1, model.njoints):
            iq, iv, nqj, nvj = (int(a.iq[i]), int(a.iv[i]), int(a.nqj[i]), int(a.nvj[i]))
            if position and nqj == nvj:
                for j in range(nvj):
                    lo, up = lo_q[iq + j], up_q[iq + j]
                    if abs(lo) < 1e10:
                        lower[iv + j] = lo - q_ref[iq + j]
                    if abs(up) < 1e10:
                        upper[iv + j] = up - q_ref[iq + j]
            if velocity and int(a.jtype[i]) != _FREE_FLYER:
                for j in range(nvj):
                    if 0 < vmax[iv + j] < 1e10:
                        lower[model.nv + iv + j], upper[model.nv + iv + j] = (-vmax[iv + j],
                                                                              vmax[iv + j])
        x_ref = np.concatenate([q_ref, np.zeros(model.nv)])
        return cls(_costs.StateRegularization(model, x_ref, 1.0, nu=nu), lower, upper,
                   name="state bounds")


_FREE_FLYER = _costs.FF


def _kind(residual):
    """The compiled term's kind (a force cost is only a term once bound to its contacts; None:
    a residual written in CasADi, which its own calls evaluate)."""
    if isinstance(residual, _costs.ForceCost):
        return _k.FORCE
    if not isinstance(residual, _costs.BuiltinCost):
        return None
    return residual.term()[0]


def _bound(b, nr, name, fill):
    if b is None:
        return np.full(nr, fill)
    try:
        out = np.broadcast_to(np.asarray(b, dtype=float), (nr,)).copy()
    except (ValueError, TypeError):
        raise ValueError(f"{name}: expected a scalar or {nr} bounds (one per residual entry); "
                         f"got {b!r}") from None
    if np.any(np.isnan(out)):
        raise ValueError(f"{name}: expected bounds (+-inf for none); got NaN")
    return out


def knot_constraints(constraints, T, where="constraints") -> list:
    """``constraints`` (None, a list of :class:`Constraint` for every knot, or T such lists) as
    T lists; ValueError naming what is wrong."""
    if constraints is None:
        return [[] for _ in range(T)]
    if isinstance(constraints, Constraint):
        constraints = [constraints]
    constraints = list(constraints)
    if constraints and all(isinstance(c, Constraint) for c in constraints):
        return [list(constraints) for _ in range(T)]
    if len(constraints) != T:
        raise ValueError(f"{where}: expected a list of ddp.Constraint for every knot, or {T} "
                         f"such lists (one per knot); got {len(constraints)} entries")
    out = []
    for t, cs in enumerate(constraints):
        cs = [cs] if isinstance(cs, Constraint) else list(cs or [])
        for c in cs:
            if not isinstance(c, Constraint):
                raise ValueError(f"{where}[{t}]: expected ddp.Constraint; got "
                                 f"{type(c).__name__}")
        out.append(cs)
    return out


@dataclass
class Violation:
    """The largest violation of a trajectory's constraints: its size (max abs, in the
    residual's units), the knot (T: the terminal knot) and the constraint's name."""

    value: float
    knot: int = -1
    name: str = ""

    def __str__(self):
        return f"{self.name} at knot {self.knot} violated by {self.value:.2e}"


class AugmentedLagrangian:
    """The constraints of a problem's T + 1 knots (``running`` T lists, ``terminal`` one list)
    as terms of its knots' costs (module docstring).  ``scales`` (T,): the weight of each
    knot's running cost (dt, or 1 at an impact).

    The multipliers of every constrained entry are one flat vector (``size`` entries, knot by
    knot, constraint by constraint, the terminal knot's last); :meth:`split` gives them per
    knot."""

    def __init__(self, running, terminal, scales):
        self.running, self.terminal = running, list(terminal)
        self.T = len(running)
        knots = [(t, c) for t, cs in enumerate(running) for c in cs]
        knots += [(self.T, c) for c in self.terminal]
        self.entries = knots
        sizes = [c.nr for _, c in knots]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.size = int(self.offsets[-1])
        self.lower = np.concatenate([c.lower for _, c in knots]) if knots else np.zeros(0)
        self.upper = np.concatenate([c.upper for _, c in knots]) if knots else np.zeros(0)
        scale = np.append(np.asarray(scales, dtype=float), 1.0)
        self.scale = np.repeat([scale[t] for t, _ in knots], sizes) if knots else np.zeros(0)
        #: each entry's share of the penalty mu (its constraint's penalty_scale)
        self.penalty_scale = (np.repeat([c.penalty_scale for _, c in knots], sizes) if knots
                              else np.zeros(0))
        #: the second-order cones: the first entry of each cone's 3 and its mu, by mu
        cones = {}
        for i, (_, c) in enumerate(knots):
            if c.cone is not None:
                cones.setdefault(c.cone.mu, (c.cone, []))[1].append(self.offsets[i])
        self._cones = [(cone, np.array(first)[:, None] + np.arange(3))
                       for cone, first in cones.values()]
        #: what write() puts in a cone's bounds slot beside its shift: mu, 0, 0
        self._cone_floats = np.zeros(self.size)
        for cone, rows in self._cones:
            self._cone_floats[rows[:, 0]] = cone.mu
        self._knot_residual = {}  # (knot, id(constraint)) -> its bound residual
        self._casadi_terms = {}  # (knot, id(constraint)) -> its _ResidualBarrier (CasADi)
        self._knot_forces = None  # the evaluation's knot_forces(xs, us), for force residuals
        self._groups = None  # (bound residual, knots, positions (K, nr)) per constraint
        #: per program that evaluates constrained knots: (its floats, the positions of its
        #: entries in the flat multipliers, and where their weights, lower and upper bounds are)
        self._targets = []
        #: per CasADi term: (its parameters (3, nr), the positions of its entries)
        self._parameters = []

    def __bool__(self):
        return self.size > 0

    def at(self, t) -> list:
        """The constraints of knot t (t = T: the terminal knot's)."""
        return self.running[t] if t < self.T else self.terminal

    # ---------------------------------------------------------------- building the costs
    def augmented(self, t, cost, bind):
        """Knot t's cost with its constraints' terms appended (a new :class:`~ddp.costs.Sum`
        of its own; the cost itself if the knot has none).  ``bind(residual)``: the residual
        bound to the problem at this knot (the same object for the knots of one contact set)."""
        cs = self.at(t)
        if not cs:
            return cost
        terms = list(cost.costs) if isinstance(cost, _costs.Sum) else [cost]
        for c in cs:
            bound = self._knot_residual[(t, id(c))] = bind(c.residual)
            if not isinstance(bound, _costs.BuiltinCost):  # written in CasADi
                term = self._casadi_terms[(t, id(c))] = _ResidualBarrier(bound)
                terms.append(term)
                continue
            # its own weight and bounds (written by write()); the residual's references
            activation = (dict(bounds=None, cone=c.cone) if c.cone is not None else
                          dict(bounds=(c.lower.copy(), c.upper.copy()), cone=None))
            terms.append(bound.copy_with(weight=np.zeros(c.nr), _parameters_only=True,
                                         **activation))
        return _costs.Sum(terms)

    def attach(self, programs, knot_forces=None):
        """Find the constraint terms in the compiled programs: ``programs(t)`` gives the
        :data:`~ddp.kernels.records.Program` records that evaluate knot t's cost (T: the
        terminal cost) with the row of ``starts`` of that knot in each.  The constraints of a
        knot are the last terms of its program.  ``knot_forces(xs, us)``: the contact forces of
        the knots (T, nc), which the residuals on forces read."""
        self._knot_forces = knot_forces
        targets = {}
        entry_knots = np.array([t for t, _ in self.entries])
        for t in range(self.T + 1):
            cs = self.at(t)
            if not cs:
                continue
            first = int(np.searchsorted(entry_knots, t))
            compiled = [(j, c) for j, c in enumerate(cs) if (t, id(c)) not in self._casadi_terms]
            for record, row in programs(t):
                ints, starts = record.ints, record.starts
                io, fo = starts[row if starts.shape[0] > 1 else 0]
                K = int(ints[io])
                pos, w_idx, lo_idx, up_idx = targets.setdefault(
                    id(record.floats), (record.floats, [], [], [], []))[1:]
                for i, (j, c) in enumerate(compiled):
                    base = io + 1 + _k.TERM_INTS * (K - len(compiled) + i)
                    nr, wo, bo = (int(ints[base + _k.SIZE]), int(ints[base + _k.WEIGHTS]),
                                  int(ints[base + _k.BOUNDS]))
                    assert nr == c.nr and ints[base + _k.ACTIVATION] == (
                        _k.BARRIER if c.cone is None else _k.CONE)
                    w_idx.append(fo + wo + np.arange(nr))
                    lo_idx.append(fo + bo + np.arange(nr))
                    up_idx.append(fo + bo + nr + np.arange(nr))
                    pos.append(np.arange(self.offsets[first + j], self.offsets[first + j + 1]))
        self._targets = [(f, *(np.concatenate(a) for a in rest))
                         for f, *rest in targets.values() if rest[0]]
        # the CasADi terms' parameters and the entries they hold
        self._parameters = [(self._casadi_terms[(t, id(c))].parameters,
                             np.arange(self.offsets[i], self.offsets[i + 1]))
                            for i, (t, c) in enumerate(self.entries)
                            if (t, id(c)) in self._casadi_terms]
        groups = {}
        for i, (t, c) in enumerate(self.entries):
            res = self._knot_residual[(t, id(c))]
            g = groups.setdefault(id(res), (res, [], []))
            g[1].append(t)
            g[2].append(np.arange(self.offsets[i], self.offsets[i + 1]))
        self._groups = [(res, np.array(ks), np.array(pos)) for res, ks, pos in groups.values()]
        self._forces = any(isinstance(res, _costs.ForceCost) for res, _, _ in self._groups)

    # ---------------------------------------------------------------- multipliers and penalty
    def write(self, lam, mu):
        """Write the terms' weights and shifted bounds for the multipliers ``lam`` (size,) and
        the penalty ``mu`` (mu = 0: the terms vanish, the problem's cost is the cost alone)."""
        mu_e = float(mu) * self.penalty_scale
        w = mu_e / self.scale
        shift = lam / mu_e if mu > 0 else np.zeros_like(lam)
        lo, up = self.lower - shift, self.upper - shift
        for _, rows in self._cones:  # dist(r + shift, K): the shift, then mu, 0, 0
            lo[rows], up[rows] = shift[rows], self._cone_floats[rows]
        for floats, pos, wi, li, ui in self._targets:
            floats[wi] = w[pos]
            floats[li] = lo[pos]
            floats[ui] = up[pos]
        for parameters, pos in self._parameters:
            parameters[0], parameters[1], parameters[2] = w[pos], lo[pos], up[pos]

    def residuals(self, xs, us, forces=None) -> np.ndarray:
        """The constraints' residuals (size,) along a trajectory xs (T + 1, nx), us (T, nu):
        one CasADi call per constraint over the knots it holds; a residual on a contact force
        ``A lam - b`` from the knots' forces ``forces`` (T, nc) (None: computed here)."""
        r = np.empty(self.size)
        us_T = np.vstack([us, np.zeros((1, us.shape[1]))])
        if self._forces and forces is None:
            forces = self._knot_forces(xs, us)
        for res, knots, pos in self._groups:
            if isinstance(res, _costs.ForceCost):
                lam = forces[knots, res.row:res.row + res.A.shape[1]]
                r[pos] = lam @ res.A.T - res.b
            else:
                r[pos] = res.residual_values(xs[knots], us_T[knots])
        return r

    def project(self, z) -> np.ndarray:
        """z (size,) projected onto the constraints' sets: clip(z, lower, upper), each cone's
        entries onto the cone."""
        p = np.clip(z, self.lower, self.upper)
        for cone, rows in self._cones:
            p[rows] = cone.project(z[rows])
        return p

    def violation(self, r) -> Violation:
        """The largest violation of the residuals r: max |r - P(r)| (P: :meth:`project`)."""
        if self.size == 0:
            return Violation(0.0)
        v = np.abs(r - self.project(r))
        i = int(np.argmax(v))
        e = int(np.searchsorted(self.offsets, i, side="right")) - 1
        t, c = self.entries[e]
        return Violation(float(v[i]), t, c.name)

    def updated(self, lam, mu, r) -> np.ndarray:
        """The first-order update of the multipliers at the residuals r:
        ``mu (r + lam/mu - P(r + lam/mu))`` (the gradient of the term; P: :meth:`project`),
        with each entry's mu its share of the penalty."""
        mu_e = mu * self.penalty_scale
        s = r + lam / mu_e
        return mu_e * (s - self.project(s))

    def complementarity(self, lam, updated, mu) -> float:
        """max |lam+ - lam| / mu (each entry's mu): how far r is from clip(r + lam/mu), in the
        residuals' units, zero when lam is a multiplier of a feasible r."""
        if self.size == 0:
            return 0.0
        return float(np.max(np.abs(updated - lam) / (mu * self.penalty_scale)))

    def shift(self, lam, mu) -> float:
        """sum lam^2 / (2 mu): the augmented Lagrangian's terms minus this are 0 at a point
        that satisfies the constraints with complementary multipliers (the merit reported as
        the cost)."""
        return float(np.sum(lam * lam / self.penalty_scale)) / (2 * mu) if mu > 0 else 0.0

    def split(self, lam) -> tuple[list, list]:
        """Multipliers (size,) per knot: (running: T lists of one array per constraint,
        terminal: one array per constraint)."""
        running = [[] for _ in range(self.T)]
        terminal = []
        for i, (t, _) in enumerate(self.entries):
            part = lam[self.offsets[i]:self.offsets[i + 1]]
            (terminal if t == self.T else running[t]).append(part)
        return running, terminal

    def shifted(self, lam) -> np.ndarray:
        """The multipliers one knot on (a receding horizon's warm start): knot t takes knot
        t + 1's where their constraints have the same sizes (else zeros), the last running knot
        keeps its own, the terminal knot its own."""
        running, terminal = self.split(lam)
        out = []
        for t in range(self.T):
            src = running[t + 1] if t + 1 < self.T else running[t]
            sizes = [c.nr for c in self.running[t]]
            out += (list(src) if [a.size for a in src] == sizes
                    else [np.zeros(n) for n in sizes])
        out += terminal
        return np.concatenate(out) if out else np.zeros(0)


#: the CasADi functions of each residual's augmented-Lagrangian term, built once per residual
_BARRIER_FUNCTIONS = weakref.WeakKeyDictionary()


class _ResidualBarrier(_costs.Cost):
    """The augmented-Lagrangian term of a constraint on a residual written in CasADi (a bound
    :class:`~ddp.costs.ResidualCost`) at one knot: ``1/2 sum_a w_a (r_a - clip(r_a, lower_a,
    upper_a))^2`` with the weights and shifted bounds ``parameters`` (3, nr) that
    :meth:`AugmentedLagrangian.write` sets.  Its CasADi functions take them as inputs, built
    once per residual and shared by its knots; each knot's term is its own call (the costs
    outside the compiled programs are).  The exact Hessian holds the residual's second
    derivatives (CasADi's AD), "gauss-newton" J^T W J on the entries outside their bounds."""

    def __init__(self, residual):
        self.residual = residual
        self.nq, self.nv, self.nu, self.nr = residual.nq, residual.nv, residual.nu, residual.nr
        self.parameters = np.zeros((3, self.nr))  # weights, lower and upper bounds

    def bind(self, nq, nv, nu, model=None, contacts=None):
        return self

    def _functions(self):
        fns = _BARRIER_FUNCTIONS.get(self.residual)
        if fns is None:
            q, dq = casadi.SX.sym("q", self.nq), casadi.SX.sym("dq", self.nv)
            v, u = casadi.SX.sym("v", self.nv), casadi.SX.sym("u", self.nu)
            w, lo, up = (casadi.SX.sym(n, self.nr) for n in ("w", "lower", "upper"))
            r = self.residual.residual(q, dq, v, u)
            rb = casadi.fmax(r - up, 0) + casadi.fmin(r - lo, 0)
            l = 0.5 * casadi.dot(w * rb, rb)
            z = casadi.vertcat(dq, v, u)
            H, g = casadi.hessian(l, z)
            J = casadi.jacobian(rb, z)
            GN = casadi.mtimes(J.T, casadi.mtimes(casadi.diag(w), J))
            outs = [casadi.densify(o) for o in
                    casadi.substitute([l, g, H, GN], [dq], [casadi.SX.zeros(self.nv)])]
            args = [q, v, u, w, lo, up]
            fns = _BARRIER_FUNCTIONS[self.residual] = (
                casadi.Function("constraint_term", args, outs),
                casadi.Function("constraint_term_value", args, outs[:1]))
        return fns

    def _calls(self, xs, us, which):
        xs, us = np.atleast_2d(xs), np.atleast_2d(us)
        w, lo, up = self.parameters
        return [which(x[:self.nq], x[self.nq:], u, w, lo, up) for x, u in zip(xs, us)]

    def calc(self, xs, us, forces=None):
        return np.array([float(o) for o in self._calls(xs, us, self._functions()[1])])

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        _costs.check_hessians(hessians)
        outs = self._calls(xs, us, self._functions()[0])
        nz = 2 * self.nv
        l = np.array([float(o[0]) for o in outs])
        g = np.array([np.asarray(o[1]).ravel() for o in outs])
        H = np.array([np.asarray(o[2] if hessians == "exact" else o[3]) for o in outs])
        return CostDerivatives(l, g[:, :nz], g[:, nz:], H[:, :nz, :nz], H[:, :nz, nz:],
                               H[:, nz:, nz:])
