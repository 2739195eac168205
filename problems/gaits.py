"""Quadruped and biped gaits as problems made of phases: footstep plans turned into
:class:`ddp.Phase` sequences, in the formulation of Crocoddyl's
``SimpleQuadrupedalGaitProblem`` (``crocoddyl/utils/quadruped.py``, the ``quadrupedal_gaits``
examples), so that the same gait solved by both has the same optimum.

A gait is a sequence of *footsteps*: some feet swing while the others support, then the swing
feet land (an impact on them).  Between footsteps, all feet support for ``support_knots``.

===================  ======================================================================
knot                 dynamics and running cost (weights as Crocoddyl's)
===================  ======================================================================
support / swing      the support feet in contact (point contacts, Baumgarte gains (0, 50));
                     friction cones (mu = 0.7, 4 facets, weight 10) on the support feet; each
                     swing foot tracks its step (translation, 1e6); the centre of mass tracks
                     its share of the step (1e6; swing knots only); state regularization
                     toward the standing state (10 w^2, w = [0]*3 + [500]*3 + [0.01]*nj +
                     [10]*6 + [1]*nj); controls (0.1); joint position and velocity limits as a
                     quadratic barrier on the state (1e3)
impact (landing)     the landing feet; their targets (1e7) and the state regularization
                     (10 w^2, w = [1]*6 + [10]*nj + [10]*nv)
terminal             the support knot's state costs
===================  ======================================================================

The swing foot's target rises linearly to ``step_height`` at mid-step and comes down again
while it moves ``step_length`` forward (half of it on the first steps of a gait), as in
Crocoddyl.  The problems start, as Crocoddyl's examples do, from the standing state at every
knot with quasi-static controls (``ddp.solve(..., shooting="multiple")``).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

import ddp
import dynamics as dyn
from dynamics import robots

#: HyQ's feet and its standing configuration (example-robot-data's ``hyq.srdf``)
HYQ_FEET = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")
HYQ_STANDING = np.array([0.0, 0.0, 0.5775, 0.0, 0.0, 0.0, 1.0, -0.2, 0.75, -1.5, -0.2, -0.75,
                         1.5, -0.2, 0.75, -1.5, -0.2, -0.75, 1.5])

#: Crocoddyl's gait parameters of its ``quadrupedal_gaits`` example: step length, step height,
#: time step, knots per step and per support phase
GAITS = {"walking": dict(step_length=0.25, step_height=0.25, dt=1e-2, step_knots=25,
                         support_knots=2),
         "trotting": dict(step_length=0.15, step_height=0.1, dt=1e-2, step_knots=25,
                          support_knots=2),
         "pacing": dict(step_length=0.15, step_height=0.1, dt=1e-2, step_knots=25,
                        support_knots=5),
         "bounding": dict(step_length=0.15, step_height=0.1, dt=1e-2, step_knots=25,
                          support_knots=5)}

#: the footsteps of a gait cycle: which feet swing together (lf, rf, lh, rh = 0, 1, 2, 3) and
#: whether it is one of the first footsteps, which go half as far (None: a support phase)
_CYCLES = {"walking": (([3], True), ([1], True), None, ([2], False), ([0], False)),
           "trotting": (([1, 2], True), None, ([0, 3], False)),
           "pacing": (([1, 3], True), None, ([0, 2], False)),
           "bounding": (([0, 1], False), None, ([2, 3], False))}


class QuadrupedGaits:
    """Gait problems of a quadruped ``model`` (a RobotModel with a free-flyer base) whose feet
    are the frames ``feet`` (left-front, right-front, left-hind, right-hind), standing at the
    configuration ``standing``; ``mu``: the friction coefficient of the ground (flat, z up);
    ``dynamics``: the Dynamics backend of ``model`` the problems run on (None: the analytical
    one; the CasADi and finite-difference backends step the phases through the protocol).
    ``hard_cones``: the friction cones as hard constraints instead of quadratic-barrier costs:
    "facets" (or True; :class:`ddp.Constraint` on the same rows: Crocoddyl's 4 facets) or
    "second-order" (the cone itself, :meth:`ddp.Constraint.friction_cone`).
    ``hard_limits``: the joint position and velocity limits (the barrier's bounds) as a hard
    constraint on every knot but the impacts' (:data:`LIMITS_PENALTY_SCALE`), instead of the
    barrier cost."""

    #: the joint limits' share of the solver's penalty: measured on HyQ's walk with hard
    #: second-order cones, 220 iterations at 1, 60 at 10, 33 at 30, 45 at 100 (one optimum)
    LIMITS_PENALTY_SCALE = 30.0

    def __init__(self, model, feet=HYQ_FEET, standing=HYQ_STANDING, mu=0.7, dynamics=None,
                 hard_cones=False, hard_limits=False):
        if not model.has_free_flyer:
            raise ValueError(f"model: a quadruped gait needs a floating base (free flyer); "
                             f"{model.name} has a fixed one (load it with "
                             f"robots.load(..., floating_base=True))")
        self.model = model
        self.dynamics = dyn.AnalyticalDynamics(model) if dynamics is None else dynamics
        self.feet = tuple(feet)
        if len(self.feet) != 4:
            raise ValueError(f"feet: expected the 4 feet (lf, rf, lh, rh); got {feet!r}")
        for f in self.feet:
            model.frame(f, "feet")
        self.mu = ddp.FrictionCone(model, self.feet[0], mu, 1.0).mu  # checks mu
        self.standing = np.concatenate([np.asarray(standing, dtype=float), np.zeros(model.nv)])
        model.check_configuration(self.standing[:model.nq], "standing")
        n, nj = model.nv, model.nv - 6
        self.nu = nj
        self.state_weights = 10 * np.r_[[0.0] * 3, [500.0] * 3, [0.01] * nj, [10.0] * 6,
                                        [1.0] * nj] ** 2
        self.impact_weights = 10 * np.r_[[1.0] * 6, [10.0] * nj, [10.0] * n] ** 2
        pm = model.pin_model
        lower = np.r_[[-np.inf] * 6, pm.lowerPositionLimit[7:], -pm.velocityLimit[:6] * np.inf,
                      -pm.velocityLimit[6:]]
        upper = np.r_[[np.inf] * 6, pm.upperPositionLimit[7:], pm.velocityLimit[:6] * np.inf,
                      pm.velocityLimit[6:]]
        zero = np.concatenate([model.neutral(), np.zeros(n)])
        #: the joint limits: a barrier cost, or with ``hard_limits`` a hard constraint
        self.state_bounds = self.limits = None
        if hard_limits:
            self.limits = ddp.Constraint(ddp.StateRegularization(model, zero, 1.0), lower, upper,
                                         name="joint limits",
                                         penalty_scale=self.LIMITS_PENALTY_SCALE)
        else:
            self.state_bounds = ddp.StateRegularization(
                model, zero, 1e3, activation=ddp.QuadraticBarrier(lower, upper))
        #: each foot's friction cone as a hard constraint, when ``hard_cones``
        if hard_cones not in (False, True, "facets", "second-order"):
            raise ValueError(f"hard_cones: expected False, 'facets' (or True) or "
                             f"'second-order'; got {hard_cones!r}")
        self.cones = None
        if hard_cones == "second-order":
            self.cones = [ddp.Constraint.friction_cone(model, f, self.mu) for f in self.feet]
        elif hard_cones:
            self.cones = [ddp.Constraint(ddp.FrictionCone(model, f, self.mu, 1.0),
                                         name=f"{f} friction cone") for f in self.feet]

    # ------------------------------------------------------------------ knots
    def _support_cost(self, support, com=None, swing=()):
        m = self.model
        costs = ([] if self.cones else
                 [ddp.FrictionCone(m, self.feet[i], self.mu, 10.0) for i in support])
        if com is not None:
            costs.append(ddp.CoMPosition(m, com, 1e6))
        costs += [ddp.FrameTranslation(m, self.feet[i], target, 1e6) for i, target in swing]
        costs += [ddp.StateRegularization(m, self.standing, self.state_weights),
                  ddp.ControlRegularization(self.nu, 0.1)]
        return ddp.Sum(costs + self._bounds())

    def _bounds(self):
        """The barrier cost on the joint limits (none when they are hard constraints)."""
        return [] if self.state_bounds is None else [self.state_bounds]

    def _contacts(self, feet):
        return [dyn.Contact3D(self.feet[i], gains=(0.0, 50.0)) for i in feet]

    def _constraints(self, support):
        """The hard constraints of a knot with the feet ``support`` on the ground: their
        friction cones, the joint limits (None without any)."""
        out = ([self.cones[i] for i in support] if self.cones else []) + \
            ([self.limits] if self.limits else [])
        return out or None

    def _support(self, knots):
        return ddp.Phase(knots, self._contacts(range(4)), self._support_cost(range(4)),
                         name="support", constraints=self._constraints(range(4)))

    def _footstep(self, com, feet_positions, swing, step_length, step_height, knots,
                  ground_landing=False):
        """The phases of one footstep: ``knots`` swing knots, then the landing impact.  ``com``
        and ``feet_positions`` (updated in place) are where the centre of mass and the feet
        start.  The landing's targets are the last swing knot's (Crocoddyl's: above the ground
        unless that knot's rise is zero), or the feet's new places on the ground with
        ``ground_landing``."""
        support = [i for i in range(4) if i not in swing]
        share = len(swing) / 4
        half = knots / 2
        costs = []
        for k in range(knots):
            rise = (step_height * k / half if k < half else step_height if k == half
                    else step_height * (1 - (k - half) / half))
            dp = np.array([step_length * (k + 1) / knots, 0.0, rise])
            targets = [(i, feet_positions[i] + dp) for i in swing]
            com_k = com + np.array([step_length * (k + 1) / knots, 0.0, 0.0]) * share
            costs.append(self._support_cost(support, com_k, targets))
        m = self.model
        if ground_landing:
            targets = [(i, feet_positions[i] + np.array([step_length, 0.0, 0.0])) for i in swing]
        landing = ddp.Sum([ddp.FrameTranslation(m, self.feet[i], t, 1e7) for i, t in targets]
                          + [ddp.StateRegularization(m, self.standing, self.impact_weights)])
        com += np.array([step_length * share, 0.0, 0.0])
        for i in swing:
            feet_positions[i] += np.array([step_length, 0.0, 0.0])
        names = ", ".join(self.feet[i] for i in swing)
        return [ddp.Phase(knots, self._contacts(support), costs, name=f"swing {names}",
                          constraints=self._constraints(support)),
                ddp.Phase(1, self._contacts(swing), landing, impact=True, damping=1e-12,
                          name=f"land {names}")]

    def _start(self, x0):
        return _start(self.model, self.feet, self.standing, x0)

    # ------------------------------------------------------------------ gaits
    def problem(self, gait, x0=None, step_length=None, step_height=None, dt=None,
                step_knots=None, support_knots=None, first_step=True, ground_landing=False):
        """The ShootingProblem of one cycle of ``gait`` ("walking", "trotting", "pacing" or
        "bounding"), Crocoddyl's parameters (:data:`GAITS`) unless given; ``first_step``: the
        first footsteps of the cycle go half as far (Crocoddyl's ``firstStep``);
        ``ground_landing``: each landing aims the feet at the ground (Crocoddyl's aims them at
        the last swing knot's height, which its contacts, holding velocities only, then keep:
        a plant's feet land later)."""
        if gait not in GAITS:
            raise ValueError(f"gait: expected one of {', '.join(GAITS)}; got {gait!r}")
        p = dict(GAITS[gait])
        given = dict(step_length=step_length, step_height=step_height, dt=dt,
                     step_knots=step_knots, support_knots=support_knots)
        p.update({k: v for k, v in given.items() if v is not None})
        _check_knots(step_knots=p["step_knots"], support_knots=p["support_knots"])
        x0, feet_positions, com = self._start(x0)
        m = self.model
        phases = [self._support(p["support_knots"])]
        for footstep in _CYCLES[gait]:
            if footstep is None:  # a support phase between the two halves of the cycle
                phases.append(self._support(p["support_knots"]))
                continue
            swing, first = footstep
            length = p["step_length"] * (0.5 if first and first_step else 1.0)
            phases += self._footstep(com, feet_positions, swing, length, p["step_height"],
                                     p["step_knots"], ground_landing)
        terminal = ddp.Sum([ddp.StateRegularization(m, self.standing, self.state_weights)]
                           + self._bounds())
        P = ddp.ShootingProblem(self.dynamics, x0, None, p["dt"], None, terminal,
                                actuation=np.eye(m.nv)[:, 6:], phases=phases,
                                terminal_constraints=self._constraints(()))
        P.info = dict(robot=m.name, task=f"{gait}: one gait cycle on flat ground (Crocoddyl's "
                                         f"quadrupedal_gaits formulation)", gait=gait, **p)
        return P


    def jumping(self, x0=None, jump_height=0.15, jump_length=(0.0, 0.3, 0.0), dt=1e-2,
                ground_knots=10, flying_knots=20):
        """One jump, Crocoddyl's ``createJumpingProblem`` (its example's parameters): all feet
        on the ground for ``ground_knots``, ``flying_knots`` in the air with the centre of mass
        rising to ``jump_height`` above half of ``jump_length`` (the displacement (x, y, z) of
        the jump), ``flying_knots`` falling free, the landing impact with the feet at their
        start displaced by ``jump_length`` (on the ground), then ``ground_knots`` on the ground
        with the centre of mass displaced as much and lowered by the right-front foot's starting
        height, as Crocoddyl's (the last knot is the terminal one)."""
        _check_knots(ground_knots=ground_knots, flying_knots=flying_knots)
        length = np.asarray(jump_length, dtype=float)
        if length.shape != (3,) or not np.all(np.isfinite(length)):
            raise ValueError(f"jump_length: expected a finite (x, y, z) displacement; got "
                             f"{jump_length!r}")
        x0, feet, com = self._start(x0)
        # the landed centre of mass goes down by the right-front foot's height at the start,
        # and the feet's targets are on the ground (Crocoddyl's jump zeroes their height)
        landed_com = com + np.array([length[0], length[1], length[2] - feet[1][2]])
        for p in feet:
            p[2] = 0.0
        m = self.model
        rise = np.array([length[0] / 2, length[1] / 2, length[2] / 2 + jump_height])
        all_feet = range(4)
        phases = [
            ddp.Phase(ground_knots, self._contacts(all_feet), self._support_cost(all_feet),
                      name="take-off", constraints=self._constraints(all_feet)),
            ddp.Phase(flying_knots, (), [self._support_cost((), com + rise * (k + 1) /
                                                            flying_knots)
                                         for k in range(flying_knots)], name="flying up",
                      constraints=self._constraints(())),
            ddp.Phase(flying_knots, (), self._support_cost(()), name="flying down",
                      constraints=self._constraints(())),
            ddp.Phase(1, self._contacts(all_feet), ddp.Sum(
                [ddp.FrameTranslation(m, self.feet[i], feet[i] + length, 1e7) for i in all_feet]
                + [ddp.StateRegularization(m, self.standing, self.impact_weights)]),
                impact=True, damping=1e-12, name="landing")
        ] + ([ddp.Phase(ground_knots - 1, self._contacts(all_feet),
                        self._support_cost(all_feet, landed_com), name="landed",
                        constraints=self._constraints(all_feet))]
             if ground_knots > 1 else [])
        terminal = ddp.Sum([ddp.CoMPosition(m, landed_com, 1e6),
                            ddp.StateRegularization(m, self.standing, self.state_weights)]
                           + self._bounds())
        P = ddp.ShootingProblem(self.dynamics, x0, None, float(dt), None, terminal,
                                actuation=np.eye(m.nv)[:, 6:], phases=phases,
                                terminal_constraints=self._constraints(()))
        P.info = dict(robot=m.name, task="jumping: one jump on flat ground (Crocoddyl's "
                                         "quadrupedal_gaits formulation)", gait="jumping",
                      jump_height=float(jump_height), jump_length=length.tolist(), dt=float(dt),
                      ground_knots=int(ground_knots), flying_knots=int(flying_knots))
        return P


#: Crocoddyl's biped walking parameters (``bipedal_gaits_fwddyn``, its first walking phase)
BIPED_WALKING = dict(step_length=0.6, step_height=0.1, dt=0.03, step_knots=15, support_knots=4)

#: Crocoddyl's biped jumping parameters (``bipedal_gaits_fwddyn``, its jumping phase)
BIPED_JUMPING = dict(jump_height=0.1, jump_length=(0.0, 0.3, 0.0), dt=0.03, ground_knots=9,
                     flying_knots=6)


class BipedGaits:
    """Walking problems of a biped ``model`` (a RobotModel with a free-flyer base) with flat
    feet ``feet`` (right, left), standing at ``standing``, in the formulation of Crocoddyl's
    ``SimpleBipedGaitProblem`` (``crocoddyl/utils/biped.py``): the support feet are flat
    contacts (:class:`dynamics.Contact6D`, gains (0, 30)) with a wrench cone each (mu, the
    foot's ``foot_size``, weight 10); a swing foot tracks its placement (1e6) and the centre of
    mass half of the step (1e6); state regularization (10 w^2, w = [0]*3 + [500]*3 + [0.01]*nj
    + [10]*nv) and controls (0.1); a landing is an impact on the landing foot with its placement
    (1e8) and the state regularization (10 w^2, w = [1]*6 + [0.1]*nj + [10]*nv); the last
    landing's costs are the terminal cost.  ``dynamics`` as for :class:`QuadrupedGaits`."""

    def __init__(self, model, feet=("right_sole_link", "left_sole_link"),
                 standing=robots.TALOS_LEGS_HALF_SITTING, mu=0.7, foot_size=(0.1, 0.05),
                 dynamics=None):
        if not model.has_free_flyer:
            raise ValueError(f"model: a biped gait needs a floating base (free flyer); "
                             f"{model.name} has a fixed one (load it with "
                             f"robots.load(..., floating_base=True))")
        self.model, self.feet = model, tuple(feet)
        self.dynamics = dyn.AnalyticalDynamics(model) if dynamics is None else dynamics
        if len(self.feet) != 2:
            raise ValueError(f"feet: expected the 2 feet (right, left); got {feet!r}")
        for f in self.feet:
            model.frame(f, "feet")
        # the cone checks mu and the foot's size (ValueError naming them)
        self.mu = ddp.WrenchCone(model, self.feet[0], mu, foot_size, 1.0).mu
        self.foot_size = tuple(float(x) for x in foot_size)
        self.standing = np.concatenate([np.asarray(standing, dtype=float), np.zeros(model.nv)])
        model.check_configuration(self.standing[:model.nq], "standing")
        n, nj = model.nv, model.nv - 6
        self.nu = nj
        self.state_weights = 10 * np.r_[[0.0] * 3, [500.0] * 3, [0.01] * nj, [10.0] * n] ** 2
        self.impact_weights = 10 * np.r_[[1.0] * 6, [0.1] * nj, [10.0] * n] ** 2

    def _contacts(self, feet):
        return [dyn.Contact6D(self.feet[i], gains=(0.0, 30.0)) for i in feet]

    def _support_cost(self, support, com=None, swing=()):
        m = self.model
        costs = [ddp.CoMPosition(m, com, 1e6)] if com is not None else []
        costs += [ddp.WrenchCone(m, self.feet[i], self.mu, self.foot_size, 10.0)
                  for i in support]
        costs += [ddp.FramePlacement(m, self.feet[i], _at(p), 1e6) for i, p in swing]
        costs += [ddp.StateRegularization(m, self.standing, self.state_weights),
                  ddp.ControlRegularization(self.nu, 0.1)]
        return ddp.Sum(costs)

    def _landing_cost(self, targets):
        m = self.model
        return ddp.Sum([ddp.FramePlacement(m, self.feet[i], _at(p), 1e8) for i, p in targets]
                       + [ddp.StateRegularization(m, self.standing, self.impact_weights)])

    def _footstep(self, com, feet_positions, swing, step_length, step_height, knots):
        """(the swing phase, the landing's targets) of one step of the foot ``swing``;
        ``com`` and ``feet_positions`` (updated in place) are where they start."""
        support = 1 - swing
        half = knots / 2
        costs = []
        for k in range(knots):
            rise = (step_height * k / half if k < half else step_height if k == half
                    else step_height * (1 - (k - half) / half))
            targets = [(swing, feet_positions[swing]
                        + np.array([step_length * (k + 1) / knots, 0.0, rise]))]
            com_k = com + np.array([step_length * (k + 1) / knots, 0.0, 0.0]) * 0.5
            costs.append(self._support_cost([support], com_k, targets))
        com += np.array([step_length * 0.5, 0.0, 0.0])
        feet_positions[swing] += np.array([step_length, 0.0, 0.0])
        phase = ddp.Phase(knots, self._contacts([support]), costs,
                          name=f"swing {self.feet[swing]}")
        return phase, targets

    def walking(self, x0=None, step_length=None, step_height=None, dt=None, step_knots=None,
                support_knots=None):
        """Two steps, Crocoddyl's ``createWalkingProblem`` (its example's parameters,
        :data:`BIPED_WALKING`, unless given): both feet down for ``support_knots``, the right
        foot steps half of ``step_length``, both down again, the left foot steps the whole."""
        p = dict(BIPED_WALKING)
        given = dict(step_length=step_length, step_height=step_height, dt=dt,
                     step_knots=step_knots, support_knots=support_knots)
        p.update({k: v for k, v in given.items() if v is not None})
        _check_knots(step_knots=p["step_knots"], support_knots=p["support_knots"])
        x0, feet, com = _start(self.model, self.feet, self.standing, x0)
        com[:2] = np.mean(feet, axis=0)[:2]
        both = ddp.Phase(p["support_knots"], self._contacts([0, 1]), self._support_cost([0, 1]),
                         name="double support")
        right, targets = self._footstep(com, feet, 0, 0.5 * p["step_length"], p["step_height"],
                                        p["step_knots"])
        land = ddp.Phase(1, self._contacts([0]), self._landing_cost(targets), impact=True,
                         damping=1e-12, name=f"land {self.feet[0]}")
        left, targets = self._footstep(com, feet, 1, p["step_length"], p["step_height"],
                                       p["step_knots"])
        m = self.model
        P = ddp.ShootingProblem(self.dynamics, x0, None, p["dt"], None,
                                self._landing_cost(targets), actuation=np.eye(m.nv)[:, 6:],
                                phases=[both, right, land, both, left])
        P.info = dict(robot=m.name, task="walking: two steps on flat ground (Crocoddyl's "
                                         "bipedal_gaits formulation)", gait="walking", **p)
        return P


    def jumping(self, x0=None, jump_height=None, jump_length=None, dt=None, ground_knots=None,
                flying_knots=None):
        """One jump, Crocoddyl's biped ``createJumpingProblem`` (its example's parameters,
        :data:`BIPED_JUMPING`, unless given): both feet down for ``ground_knots``,
        ``flying_knots`` in the air with the centre of mass rising to ``jump_height`` above half
        of ``jump_length``, ``flying_knots`` falling free, the landing impact with each foot's
        placement at its start (on the ground) displaced by ``jump_length``, then half of
        ``ground_knots`` (rounded down) on the ground with the centre of mass displaced as much
        and lowered by the right foot's starting height (the last knot is the terminal one)."""
        p = dict(BIPED_JUMPING)
        given = dict(jump_height=jump_height, jump_length=jump_length, dt=dt,
                     ground_knots=ground_knots, flying_knots=flying_knots)
        p.update({k: v for k, v in given.items() if v is not None})
        _check_knots(ground_knots=p["ground_knots"], flying_knots=p["flying_knots"])
        length = np.asarray(p["jump_length"], dtype=float)
        if length.shape != (3,) or not np.all(np.isfinite(length)):
            raise ValueError(f"jump_length: expected a finite (x, y, z) displacement; got "
                             f"{p['jump_length']!r}")
        x0, feet, com = _start(self.model, self.feet, self.standing, x0)
        landed_com = com + np.array([length[0], length[1], length[2] - feet[0][2]])
        for f in feet:  # the landing targets are on the ground (Crocoddyl zeroes their height)
            f[2] = 0.0
        com[:2] = np.mean(feet, axis=0)[:2]
        rise = np.array([length[0] / 2, length[1] / 2, length[2] / 2 + p["jump_height"]])
        fk, gk = p["flying_knots"], p["ground_knots"]
        both = (0, 1)
        phases = [
            ddp.Phase(gk, self._contacts(both), self._support_cost(both), name="take-off"),
            ddp.Phase(fk, (), [self._support_cost((), com + rise * (k + 1) / fk)
                               for k in range(fk)], name="flying up"),
            ddp.Phase(fk, (), self._support_cost(()), name="flying down"),
            ddp.Phase(1, self._contacts(both),
                      self._landing_cost([(i, feet[i] + length) for i in both]), impact=True,
                      damping=1e-12, name="landing"),
        ] + ([ddp.Phase(gk // 2 - 1, self._contacts(both),
                        self._support_cost(both, landed_com), name="landed")]
             if gk // 2 > 1 else [])
        m = self.model
        terminal = ddp.Sum([ddp.CoMPosition(m, landed_com, 1e6),
                            ddp.StateRegularization(m, self.standing, self.state_weights)])
        P = ddp.ShootingProblem(self.dynamics, x0, None, p["dt"], None, terminal,
                                actuation=np.eye(m.nv)[:, 6:], phases=phases)
        P.info = dict(robot=m.name, task="jumping: one jump of both feet on flat ground "
                                         "(Crocoddyl's bipedal_gaits formulation)",
                      gait="jumping", **dict(p, jump_length=length.tolist()))
        return P


def _at(position):
    """The placement at ``position`` with the world's orientation (Crocoddyl's swing targets)."""
    return pin.SE3(np.eye(3), np.asarray(position, dtype=float))


def _start(model, feet, standing, x0):
    """(x0, the feet's positions, the centre of mass over them): the start (default:
    ``standing``), where it puts the feet, and their mean with the height of the centre of
    mass."""
    x0 = standing if x0 is None else np.asarray(x0, dtype=float)
    pm = model.pin_model
    data = pm.createData()
    q0 = x0[:model.nq]
    pin.framesForwardKinematics(pm, data, q0)
    positions = [data.oMf[pm.getFrameId(f)].translation.copy() for f in feet]
    com = np.mean(positions, axis=0)
    com[2] = pin.centerOfMass(pm, data, q0)[2]
    return x0, positions, com


def _check_knots(**counts):
    """ValueError naming the first of ``counts`` (name=value) that is not a positive integer."""
    for k, v in counts.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{k}: expected a positive number of knots; got {v!r}")


def talos_walk(dynamics=None, **options):
    """Talos's legs walking two steps (:meth:`BipedGaits.walking`); ``dynamics``: a function of
    the model giving the backend (None: the analytical one)."""
    m = robots.load("talos_legs")
    return BipedGaits(m, dynamics=None if dynamics is None else dynamics(m)).walking(**options)


def hyq_gait(gait="walking", dynamics=None, hard_cones=False, hard_limits=False, **options):
    """HyQ's ``gait`` problem (:meth:`QuadrupedGaits.problem`, or :meth:`QuadrupedGaits.jumping`
    for "jumping"); ``dynamics`` as for :func:`talos_walk`; ``hard_cones`` and ``hard_limits``
    as for :class:`QuadrupedGaits`."""
    m = robots.load("hyq")
    gaits = QuadrupedGaits(m, dynamics=None if dynamics is None else dynamics(m),
                           hard_cones=hard_cones, hard_limits=hard_limits)
    return gaits.jumping(**options) if gait == "jumping" else gaits.problem(gait, **options)


#: Crocoddyl's own gait examples, as its ``examples/quadrupedal_gaits_fwddyn.py`` (ANYmal, from
#: its SRDF's "standing") and ``examples/bipedal_gaits_fwddyn.py`` (Talos's legs from
#: "half_sitting": its first walk and its jump) build them: name -> (robot, gait, parameters)
CROCODDYL_EXAMPLES = {
    "anymal-walking": ("anymal", "walking", dict(step_length=0.25, step_height=0.15, dt=1e-2,
                                                  step_knots=25, support_knots=2)),
    "anymal-trotting": ("anymal", "trotting", dict(step_length=0.15, step_height=0.1, dt=1e-2,
                                                    step_knots=25, support_knots=2)),
    "anymal-pacing": ("anymal", "pacing", dict(step_length=0.15, step_height=0.1, dt=1e-2,
                                                step_knots=25, support_knots=5)),
    "anymal-bounding": ("anymal", "bounding", dict(step_length=0.15, step_height=0.1, dt=1e-2,
                                                    step_knots=25, support_knots=5)),
    "anymal-jumping": ("anymal", "jumping", dict(jump_height=0.15, jump_length=(0.0, 0.3, 0.0),
                                                  dt=1e-2, ground_knots=10, flying_knots=20)),
    "talos-walking": ("talos_legs", "walking", dict(BIPED_WALKING)),
    "talos-jumping": ("talos_legs", "jumping", dict(BIPED_JUMPING)),
}

#: the feet of the robots of :data:`CROCODDYL_EXAMPLES`, in Crocoddyl's order
EXAMPLE_FEET = {"anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
                "talos_legs": ("right_sole_link", "left_sole_link")}


def crocoddyl_example(name, dynamics=None):
    """Our problem of Crocoddyl's example ``name`` (:data:`CROCODDYL_EXAMPLES`): the same robot
    as example-robot-data loads it, its reference configuration, feet and parameters.  Solved
    from Crocoddyl's start (x0 at every knot, quasi-static controls, multiple shooting) it
    reaches the optimum of Crocoddyl's example.  ``dynamics`` as for :func:`talos_walk`."""
    if name not in CROCODDYL_EXAMPLES:
        raise ValueError(f"example: expected one of {', '.join(CROCODDYL_EXAMPLES)}; got "
                         f"{name!r}")
    robot, gait, params = CROCODDYL_EXAMPLES[name]
    m = robots.load(robot)  # ANYmal with the free flyer its SRDF poses
    backend = None if dynamics is None else dynamics(m)
    if robot == "talos_legs":
        biped = BipedGaits(m, EXAMPLE_FEET[robot], m.reference_configurations["half_sitting"],
                           dynamics=backend)
        return biped.jumping(**params) if gait == "jumping" else biped.walking(**params)
    gaits = QuadrupedGaits(m, EXAMPLE_FEET[robot], m.reference_configurations["standing"],
                           dynamics=backend)
    return gaits.jumping(**params) if gait == "jumping" else gaits.problem(gait, **params)
