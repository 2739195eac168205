"""Problems made of phases: which contacts hold at each knot, whether it is an impact, and its
running cost.

A :class:`Phase` is a run of knots with the same contacts (:mod:`dynamics.contacts`): none (free
flight), some feet in contact (the KKT contact dynamics), or an impact (``impact=True``: a knot
that maps the velocity v to v+ on its contacts, without time or control, as Crocoddyl's impulse
models).  ``ShootingProblem(..., phases=[...])`` gives each knot its phase's contacts and cost,
which is how a gait is written (Crocoddyl: one action model per knot).  A problem without phases
is one free-flight phase of T knots with the problem's running cost: the same mechanism.

Each knot's running cost is its phase's ``cost``: one cost for all its knots, or a sequence of
one cost per knot (time-varying references and weights, e.g. a swing foot's target), or None
(the problem's ``running_cost``).  It is weighted by dt at a time step and by 1 at an impact (as
Crocoddyl's integrated and impulse action models do), and a cost on u at an impact is not
counted in the derivatives (an impact has no control).

:class:`KnotCosts` evaluates the running costs of all knots, cost by cost over the knots that
share it; :func:`knot_contacts` packs the knots' contacts for the compiled passes
(:data:`~ddp.kernels.records.KnotContacts`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynamics.contact_dynamics import without_gravity
from dynamics.contacts import Contact3D, ContactSet

from .costs import force_costs
from .kernels.records import IMPACT, STEP, CostDerivatives, Forces, KnotContacts, PackedModel


@dataclass(frozen=True)
class Phase:
    """``knots`` knots with the contacts ``contacts`` (:class:`~dynamics.contacts.Contact3D`,
    :class:`~dynamics.contacts.Contact6D`, or frame names for point contacts without Baumgarte
    terms) and the running cost ``cost`` (a :class:`~ddp.costs.Cost`, a sequence of ``knots``
    costs, or None: the problem's ``running_cost``); ``impact``: the knots are impacts on the
    contacts (restitution ``restitution``); ``damping``: added to J M^-1 J^T (Crocoddyl's
    ``JMinvJt_damping``); ``constraints``: hard constraints (:class:`~ddp.constraints.Constraint`)
    of its knots, one list for every knot or one list per knot (added to the problem's)."""

    knots: int
    contacts: tuple = ()
    cost: object = None
    impact: bool = False
    damping: float = 0.0
    restitution: float = 0.0
    name: str = field(default="", compare=False)
    constraints: object = field(default=None, compare=False)

    def __post_init__(self):
        k = self.knots
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"knots: expected a positive number of knots; got {k!r}")
        contacts = tuple(Contact3D(c) if isinstance(c, str) else c for c in self.contacts)
        object.__setattr__(self, "contacts", contacts)
        if self.impact and not contacts:
            raise ValueError("contacts: an impact needs the contacts it acts on; got none")
        d, r = float(self.damping), float(self.restitution)
        if not (np.isfinite(d) and d >= 0):
            raise ValueError(f"damping: expected a finite non-negative number; got "
                             f"{self.damping!r}")
        if not (np.isfinite(r) and 0 <= r <= 1):
            raise ValueError(f"restitution: expected a number in [0, 1]; got "
                             f"{self.restitution!r}")
        if isinstance(self.cost, (list, tuple)) and len(self.cost) != k:
            raise ValueError(f"cost: expected one cost or {k} costs (one per knot) for a phase "
                             f"of {k} knots; got {len(self.cost)}")

    def knot_costs(self, default):
        """The running cost of each of its knots."""
        if isinstance(self.cost, (list, tuple)):
            return list(self.cost)
        return [default if self.cost is None else self.cost] * self.knots


def check_phases(phases, horizon):
    """``phases`` as a list of :class:`Phase` whose knots add up to ``horizon`` (None: their
    sum); ValueError naming what is wrong."""
    phases = list(phases)
    if not phases:
        raise ValueError("phases: expected at least one Phase; got none")
    for i, p in enumerate(phases):
        if not isinstance(p, Phase):
            raise ValueError(f"phases[{i}]: expected a ddp.Phase; got {p!r}")
    total = sum(p.knots for p in phases)
    if horizon is not None and int(horizon) != total:
        raise ValueError(f"phases: their knots add up to {total}; the horizon is {horizon} "
                         f"(leave horizon=None to take it from the phases)")
    return phases, total


def knot_contacts(model, phases, dt) -> tuple[KnotContacts, list]:
    """The :data:`~ddp.kernels.records.KnotContacts` of the phases' knots (each knot's contact
    set packed once per phase) and the :class:`~dynamics.contacts.ContactSet` of each knot (None
    for free flight).  ``model``: the RobotModel (None: a system without one, free flight
    only)."""
    T = sum(p.knots for p in phases)
    kind = np.full(T, STEP, dtype=np.int64)
    size = np.zeros(T, dtype=np.int64)
    int_offsets = np.zeros(T, dtype=np.int64)
    float_offsets = np.zeros(T, dtype=np.int64)
    scale = np.full(T, float(dt))
    damping = np.zeros(T)
    restitution = np.zeros(T)
    ints, floats = [np.zeros(1, dtype=np.int64)], []  # offset 0: the empty set
    no, nf = 1, 0
    sets, t = [], 0
    for i, p in enumerate(phases):
        cs = None
        if p.contacts:
            if model is None:
                raise ValueError(f"phases[{i}].contacts: contacts need a robot (a RobotModel)")
            try:
                cs = ContactSet(model, p.contacts)
            except ValueError as e:
                raise ValueError(f"phases[{i}].{e}") from None
            ints.append(cs.ints)
            floats.append(cs.impulse_floats if p.impact else cs.floats)
        sl = slice(t, t + p.knots)
        if cs is not None:
            int_offsets[sl], float_offsets[sl], size[sl] = no, nf, cs.size
            no, nf = no + cs.ints.size, nf + cs.floats.size
        if p.impact:
            kind[sl], scale[sl] = IMPACT, 1.0
        damping[sl], restitution[sl] = p.damping, p.restitution
        sets += [cs] * p.knots
        t += p.knots
    if model is None:
        impact_model = PackedModel(np.zeros(2, dtype=np.int64), np.zeros(0))
    else:  # only impacts read it (a problem without any uses the model as it is)
        impact_model = PackedModel(*(without_gravity(model) if (kind == IMPACT).any()
                               else model.kernel_args))
    record = KnotContacts(kind, np.concatenate(ints),
                          np.concatenate(floats) if floats else np.zeros(0), int_offsets,
                          float_offsets, size, scale, damping, restitution, impact_model)
    return record, sets


class KnotCosts:
    """The running costs of T knots (:class:`~ddp.costs.Cost` per knot, the knots sharing a cost
    evaluated together): ``calc`` (T,) and ``calc_diff`` (:class:`~ddp.costs.CostDerivatives`
    of T knots), unweighted (the problem weights them by dt, or 1 at an impact)."""

    def __init__(self, costs):
        self.costs = list(costs)
        self.distinct = {}  # id(cost) -> (cost, knots)
        for t, c in enumerate(self.costs):
            self.distinct.setdefault(id(c), (c, []))[1].append(t)
        self.distinct = [(c, np.array(k)) for c, k in self.distinct.values()]

    def cycle(self, order) -> None:
        """Reorder the knots: knot t takes the former knot ``order[t]``'s cost."""
        self.costs = [self.costs[i] for i in order]
        new_knot = np.argsort(order)
        self.distinct = [(c, np.sort(new_knot[k])) for c, k in self.distinct]

    @property
    def single(self):
        """The cost of every knot if they all share one, else None."""
        return self.distinct[0][0] if len(self.distinct) == 1 else None

    def calc(self, xs, us, forces=None):
        """``forces``: the knots' :data:`~ddp.kernels.records.Forces`, for the costs on contact
        forces (their problem's; None when it has none)."""
        out = np.empty(len(self.costs))
        for c, k, f in self._by_cost(forces):
            out[k] = c.calc(xs[k], us[k], **f)
        return out

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        """``forces`` as for :meth:`calc`; the gradients in the forces are added to their
        ``dl_dlam``."""
        T, ndx, nu = len(self.costs), 2 * (xs.shape[1] - self._nq()), us.shape[1]
        if self.single is not None and forces is None:
            return self.single.calc_diff(xs, us, hessians)
        out = CostDerivatives(np.empty(T), np.empty((T, ndx)), np.empty((T, nu)),
                              np.empty((T, ndx, ndx)), np.empty((T, ndx, nu)),
                              np.empty((T, nu, nu)))
        for c, k, f in self._by_cost(forces):
            d = c.calc_diff(xs[k], us[k], hessians, **f)
            for a, b in zip(out, d):
                a[k] = b
            if f:
                forces.dl_dlam[k] = f["forces"].dl_dlam
        return out

    def _by_cost(self, forces):
        """(cost, knots, keywords) per group: ``forces`` on those knots for the costs on
        contact forces, none for the others."""
        for c, k in self.distinct:
            yield c, k, ({"forces": Forces(*(np.ascontiguousarray(x[k]) for x in forces))}
                         if forces is not None and force_costs(c) else {})

    def _nq(self):
        return self.costs[0].nq
