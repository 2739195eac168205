"""The example problems: functions returning a :class:`ddp.ShootingProblem`.

=================  ====  ==================================================================
name               nv    task
=================  ====  ==================================================================
pendulum           1     swing-up of a single pendulum from hanging to upright
double_pendulum    2     swing-up of the (fully actuated) double pendulum
pendubot           2     swing-up of the double pendulum actuated at the shoulder only
                         (Crocoddyl's ``double_pendulum_fwddyn`` example, custom residual)
ur3                6     end-effector reaching, written as Crocoddyl writes it
ur5-box            6     UR5 reaching with tool0 kept in a box: a hard constraint
                         (mim-solvers' ``examples/ur5.py``, solved there by CSQP)
panda-obstacle     7     Panda (fingers locked) reaching around a sphere: distances, joint
                         position and velocity limits as hard constraints, torque limits
quadrotor-columns  6     the Hector quadrotor flying between two columns above the floor,
                         rotor thrusts bounded (aligator's ``quadrotor_obstacles.py``)
hyq                18    mid-air leg tuck of the free-floating quadruped (base unactuated)
atlas              36    mid-air posture change of the free-floating humanoid (base unactuated)
hyq-walk           18    HyQ walking on flat ground: contacts, friction cones, impacts
                         (Crocoddyl's ``quadrupedal_gaits`` walking, :mod:`problems.gaits`)
hyq-walk-constrained 18  the same walk with hard constraints: its friction cones (second-order
                         cones, exactly projected) and joint limits
hyq-trot           18    HyQ trotting, the same formulation
hyq-pace           18    HyQ pacing (the feet of one side together), the same formulation
hyq-bound          18    HyQ bounding (front feet, then hind feet), the same formulation
hyq-jump           18    HyQ jumping 0.3 m sideways: flight phases and a landing impact
talos-walk         18    Talos's legs walking two steps: flat feet (6D contacts), wrench
                         cones, impacts (Crocoddyl's ``bipedal_gaits`` walking)
=================  ====  ==================================================================

Every function takes ``backend`` ("analytical", "casadi" or "finite-diff"), the horizon ``T`` and
the time step ``dt`` with problem-specific defaults, and returns a ShootingProblem whose
``info`` dict says what it is.
"""

from __future__ import annotations

import inspect

import casadi as cs
import numpy as np

import ddp
import dynamics as dyn
from dynamics import robots

from .gaits import hyq_gait, talos_walk as _talos_walk

BACKENDS = ("analytical", "casadi", "finite-diff")


def backend_maker(backend: str):
    """The function of a model that gives the Dynamics backend called ``backend``."""
    makers = {"analytical": dyn.AnalyticalDynamics, "casadi": dyn.CasadiDynamics,
              "finite-diff": lambda m: dyn.FiniteDifferenceDynamics(m, "finite-diff-2")}
    if backend not in makers:
        raise ValueError(f"backend: expected one of {', '.join(BACKENDS)}; got {backend!r}")
    return makers[backend]


def make_backend(model, backend: str):
    """The Dynamics backend called ``backend`` for ``model``."""
    return backend_maker(backend)(model)


def _without_gravity(model):
    import pinocchio as pin

    pm = pin.Model(model.pin_model)
    pm.gravity.setZero()
    return dyn.RobotModel(pm, model.name, model.urdf_path, model.floating_base)


def _swing_up(model, q_down, q_up, backend, T, dt, w_u, x0=None):
    D = make_backend(model, backend)
    n = model.nv
    x0 = np.concatenate([q_down, np.zeros(n)]) if x0 is None else np.asarray(x0, dtype=float)
    x_up = np.concatenate([q_up, np.zeros(n)])
    run = ddp.Sum([ddp.StateRegularization(model, x_up, 1e-2), ddp.ControlRegularization(n, w_u)])
    term = ddp.StateRegularization(model, x_up, 1e3)
    return ddp.ShootingProblem(D, x0, T, dt, run, term)


def pendulum(backend="analytical", T=100, dt=0.02, x0=None):
    """Swing a 1 kg, 1 m pendulum from hanging (q = 0; or from ``x0``) to upright (q = pi) in
    T dt seconds (default 2 s): running cost 1e-2 |x (-) x_up|^2 + 1e-2 |u|^2, terminal 1e3 |x (-) x_up|^2."""
    m = robots.load("pendulum")
    P = _swing_up(m, np.zeros(1), np.array([np.pi]), backend, T, dt, 1e-2, x0)
    P.info = dict(robot="pendulum", task="swing-up")
    return P


def double_pendulum(backend="analytical", T=100, dt=0.02, x0=None):
    """Swing the double pendulum of example-robot-data from hanging (q = [pi, 0]) to upright
    (q = 0), both joints actuated (or from ``x0``), in T dt seconds (default 2 s); costs as :func:`pendulum` with
    control weight 1e-3."""
    m = robots.load("double_pendulum")
    P = _swing_up(m, np.array([np.pi, 0.0]), np.zeros(2), backend, T, dt, 1e-3, x0)
    P.info = dict(robot="double_pendulum", task="swing-up")
    return P


class DoublePendulumUpright(ddp.ResidualCost):
    """The residual ``[sin q1, sin q2, 1 - cos q1, 1 - cos q2, v1, v2]`` of Crocoddyl's
    ``CostModelDoublePendulum`` (zero upright, q = 0), written in CasADi through the public
    :class:`ddp.ResidualCost` API, as a user writes a residual of their own."""

    def __init__(self, weight):
        super().__init__(nq=2, nv=2, nu=0, weight=weight, nr=6, name="DoublePendulumUpright")

    def residual(self, q, dq, v, u):
        th = q + dq
        return cs.vertcat(cs.sin(th[0]), cs.sin(th[1]), 1 - cs.cos(th[0]), 1 - cs.cos(th[1]),
                          v[0], v[1])

    def crocoddyl_item(self):
        """How :mod:`problems.reference.crocoddyl_problem` writes this cost in Crocoddyl."""
        return dict(kind="double_pendulum", weights=self.weight.tolist())


def pendubot(backend="analytical", T=100, dt=0.01):
    """Crocoddyl's ``double_pendulum_fwddyn`` example: the double pendulum of example-robot-data
    with only the shoulder actuated (B = [1, 0]^T), from hanging (x0 = [3.14, 0, 0, 0]) to upright.
    Costs as Crocoddyl writes them (running costs multiplied by dt): running
    1e-4/dt * 1/2 |u|^2 + 1e-5/dt * 1/2 sum a_i r_i^2 and terminal 100 * 1/2 sum a_i r_i^2, with
    r the :class:`DoublePendulumUpright` residual and a = [1, 1, 1, 1, 0.1, 0.1]."""
    m = robots.load("double_pendulum")
    D = make_backend(m, backend)
    a = np.array([1.0, 1.0, 1.0, 1.0, 0.1, 0.1])
    run = ddp.Sum([ddp.ControlRegularization(1, 1e-4 / dt), DoublePendulumUpright(1e-5 / dt * a)])
    term = DoublePendulumUpright(100.0 * a)
    P = ddp.ShootingProblem(D, np.array([3.14, 0.0, 0.0, 0.0]), T, dt, run, term,
                            actuation=np.array([[1.0], [0.0]]))
    P.info = dict(robot="double_pendulum", task="swing-up, shoulder actuated (pendubot)")
    return P


UR3_Q0 = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
UR3_TARGET_POSITION = np.array([0.2, 0.25, 0.25])


def ur3(backend="analytical", T=100, dt=0.01, target=None):
    """UR3 end-effector reaching, as in Crocoddyl's arm examples: from rest at
    q0 = [0, -pi/2, pi/2, -pi/2, -pi/2, 0], bring frame ``tool0`` to ``target`` (a pinocchio.SE3,
    or a position (3,) with the start orientation of tool0; default: the position
    UR3_TARGET_POSITION = (0.2, 0.25, 0.25) m, about 17 cm from the start).
    Running cost: tool0 placement (weight 1) + state regularization towards x0 (1e-1) + control
    regularization (1e-3); terminal: placement (1e3) + state regularization (1e-1).  dt = 0.01,
    T = 100 knots."""
    import pinocchio as pin

    m = robots.load("ur3")
    D = make_backend(m, backend)
    x0 = np.concatenate([UR3_Q0, np.zeros(6)])
    if target is None or not isinstance(target, pin.SE3):
        position = UR3_TARGET_POSITION if target is None else np.asarray(target, dtype=float)
        if position.shape != (3,):
            raise ValueError(f"target: expected a pinocchio.SE3 or a position (3,); got "
                             f"{target!r}")
        data = m.pin_model.createData()
        pin.framesForwardKinematics(m.pin_model, data, UR3_Q0)
        target = pin.SE3(data.oMf[m.pin_model.getFrameId("tool0")].rotation, position)
    run = ddp.Sum([ddp.FramePlacement(m, "tool0", target, 1.0),
                   ddp.StateRegularization(m, x0, 1e-1), ddp.ControlRegularization(6, 1e-3)])
    term = ddp.Sum([ddp.FramePlacement(m, "tool0", target, 1e3),
                    ddp.StateRegularization(m, x0, 1e-1)])
    P = ddp.ShootingProblem(D, x0, T, dt, run, term)
    P.info = dict(robot="ur3", task="reach tool0 placement", target=target)
    return P


UR5_BOX_TARGET = np.array([0.4, 0.4, 0.4])
UR5_BOX = (np.array([-1.0, -1.0, -1.0]), np.array([1.0, 0.4, 0.4]))


def ur5_box(backend="analytical", T=40, dt=0.05, target=None, box=None):
    """mim-solvers' ``examples/ur5.py``: the UR5 from rest at q = 0 brings ``tool0`` to
    ``target`` (default UR5_BOX_TARGET = (0.4, 0.4, 0.4) m) while tool0 stays in the box
    ``box`` = (lower, upper) (default UR5_BOX: [-1, -1, -1]..[1, 0.4, 0.4]) at knots 1..T, the
    terminal knot included: a hard constraint (:class:`ddp.Constraint`).  Costs as in that file:
    state regularization towards x0 (0.1), controls minus gravity (``ControlGravity``, 1e-4),
    the translation (4 on the running knots, 40 at the terminal one); T = 40, dt = 0.05."""
    m = robots.load("ur5")
    D = make_backend(m, backend)
    x0 = np.zeros(2 * m.nv)
    target = UR5_BOX_TARGET if target is None else np.asarray(target, dtype=float)
    lower, upper = UR5_BOX if box is None else box
    x_reg, u_grav = ddp.StateRegularization(m, x0, 1e-1), ddp.ControlGravity(m, 1e-4)
    run = ddp.Sum([x_reg, u_grav, ddp.FrameTranslation(m, "tool0", target, 4.0)])
    term = ddp.Sum([x_reg, u_grav, ddp.FrameTranslation(m, "tool0", target, 40.0)])
    inside = ddp.Constraint(ddp.FrameTranslation(m, "tool0", np.zeros(3), 1.0), lower, upper,
                            name="tool0 in the box")
    P = ddp.ShootingProblem(D, x0, T, dt, run, term, constraints=[[]] + [[inside]] * (T - 1),
                            terminal_constraints=[inside])
    P.info = dict(robot="ur5", task="reach with tool0 in a box (hard constraint)",
                  target=target, box=(np.asarray(lower), np.asarray(upper)))
    return P


#: the Panda's bodies kept out of the obstacle: (frame, radius of the sphere around it)
PANDA_SPHERES = (("panda_hand_tcp", 0.04), ("panda_link7", 0.08), ("panda_link5", 0.08))


def panda_arm():
    """example-robot-data's Panda with its fingers locked at its SRDF's "default" configuration
    (Pinocchio's ``buildReducedModel``): 7 DoFs."""
    import pinocchio as pin

    full = robots.load("panda")
    q = full.reference_configurations["default"]
    fingers = [full.pin_model.getJointId(n) for n in ("panda_finger_joint1",
                                                      "panda_finger_joint2")]
    pm = pin.buildReducedModel(full.pin_model, fingers, q)
    pm.referenceConfigurations["default"] = q[:7].copy()
    return dyn.RobotModel(pm, "panda_arm", urdf_path=full.urdf_path, floating_base=False)


def panda_obstacle(backend="analytical", T=50, dt=0.02, target_offset=None, obstacle=None):
    """The Panda (fingers locked) from its "default" configuration brings ``panda_hand_tcp``
    45 cm sideways and 10 cm down (``target_offset`` from its start) around a sphere of 10 cm
    radius half-way (``obstacle``: a :class:`ddp.Sphere`).  Hard constraints at every knot:
    spheres around the hand (4 cm), link 7 and link 5 (8 cm each) stay out of the obstacle
    (:class:`ddp.Distance` >= 0), and the URDF's joint position and velocity limits
    (:meth:`ddp.Constraint.state_bounds`); the torques within the URDF's effort limits (the
    control box).  Costs: the translation (10 running, 1e3 terminal), the state (1e-2 on q,
    1e-1 on v), the controls minus gravity (1e-3).  Without the obstacle the hand passes
    11 cm inside it."""
    import pinocchio as pin

    m = panda_arm()
    pm = m.pin_model
    D = make_backend(m, backend)
    q0 = m.reference_configurations["default"]
    x0 = np.concatenate([q0, np.zeros(7)])
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, q0)
    start = data.oMf[pm.getFrameId("panda_hand_tcp")].translation.copy()
    offset = np.array([0.0, 0.45, -0.1]) if target_offset is None else np.asarray(
        target_offset, dtype=float)
    target = start + offset
    if obstacle is None:
        obstacle = ddp.Sphere(start + 0.5 * offset, 0.1)
    reg = ddp.StateRegularization(m, x0, np.r_[np.full(7, 1e-2), np.full(7, 1e-1)])
    run = ddp.Sum([reg, ddp.ControlGravity(m, 1e-3),
                   ddp.FrameTranslation(m, "panda_hand_tcp", target, 10.0)])
    term = ddp.Sum([reg, ddp.FrameTranslation(m, "panda_hand_tcp", target, 1e3)])
    constraints = [ddp.Constraint(ddp.Distance(m, f, r, obstacle), lower=0.0,
                                  name=f"{f} clear of the obstacle") for f, r in PANDA_SPHERES]
    constraints.append(ddp.Constraint.state_bounds(m))
    P = ddp.ShootingProblem(D, x0, T, dt, run, term, u_min=-pm.effortLimit,
                            u_max=pm.effortLimit, constraints=constraints,
                            terminal_constraints=constraints)
    P.info = dict(robot="panda", task="reach around a sphere (hard constraints)",
                  target=target, obstacle=obstacle)
    return P


#: the Hector quadrotor's rotor thrusts to its base's wrench (aligator's and Crocoddyl's
#: quadrotor examples: arm length 0.1525, thrust and moment coefficients 6.6e-5, 1e-6)
QUADROTOR_ARM, QUADROTOR_CF, QUADROTOR_CM = 0.1525, 6.6e-5, 1e-6
#: the radius of the sphere around the quadrotor (its collision mesh's bounding radius, from
#: coal's computeLocalAABB in aligator's example)
QUADROTOR_RADIUS = 0.40822360896563425


def quadrotor_actuation():
    d, k = QUADROTOR_ARM, QUADROTOR_CM / QUADROTOR_CF
    return np.array([[0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0],
                     [0.0, d, 0.0, -d], [-d, 0.0, d, 0.0], [-k, k, -k, k]])


def quadrotor_columns(backend="analytical", T=180, dt=0.01, target=None):
    """aligator's ``examples/quadrotor_obstacles.py`` with ``--obstacles --bounds``: the Hector
    quadrotor of example-robot-data (free flyer, four rotors: :func:`quadrotor_actuation`) from
    rest 18 cm above the floor to ``target`` (default (-0.1, 3.2, 1.0), level) past two columns
    of radius 0.22 m; hard constraints: the base above the floor, its sphere
    (:data:`QUADROTOR_RADIUS`) clear of the columns; rotor thrusts in [0, 5].  Costs as there:
    the state towards the target (0.1 on position, 1e-2 on orientation, 1e-3 on velocity; 12
    times that at the end), the thrusts towards hovering (0.1); T = 180, dt = 0.01."""
    m = robots.load("quadrotor_base", floating_base=True)
    D = make_backend(m, backend)
    x0 = np.concatenate([m.neutral(), np.zeros(m.nv)])
    x0[2] = 0.18
    goal = np.concatenate([m.neutral(), np.zeros(m.nv)])
    goal[:3] = (-0.1, 3.2, 1.0) if target is None else np.asarray(target, dtype=float)
    B = quadrotor_actuation()
    hover = np.linalg.lstsq(B, dyn.rnea(m, m.neutral(), np.zeros(6), np.zeros(6)),
                            rcond=None)[0]
    w = np.r_[np.full(3, 0.1), np.full(3, 1e-2), np.full(6, 1e-3)]
    run = ddp.Sum([ddp.StateRegularization(m, goal, w),
                   ddp.ControlRegularization(4, 0.1, u_ref=hover)])
    floor = ddp.Constraint(ddp.Distance(m, "base_link", 0.0, ddp.HalfSpace([0, 0, 1], [0, 0, 0])),
                           lower=0.0, name="above the floor")
    columns = [ddp.Constraint(ddp.Distance(m, "base_link", QUADROTOR_RADIUS,
                                           ddp.Column(c, 0.22)), lower=0.0, name=f"column {i}")
               for i, c in enumerate(([-0.45, 1.2, 0.0], [0.4, 2.4, 0.0]), 1)]
    P = ddp.ShootingProblem(D, x0, T, dt, run, ddp.StateRegularization(m, goal, 12 * w),
                            actuation=B, u_min=0.0, u_max=5.0, constraints=[floor, *columns])
    P.info = dict(robot="hector quadrotor", task="fly past two columns (hard constraints)",
                  target=goal[:3])
    return P


def _floating_task(model, q_start, joints_goal, angle, axis, gravity, backend, T, dt,
                   terminal_scale=1.0):
    """Free-floating task: base unactuated, joints actuated; end at rest with the joints at
    ``joints_goal`` and the base turned by ``angle`` about ``axis`` (world frame).  Terminal
    weights: base attitude 1e3, joints 1e2, velocities 10, all times ``terminal_scale``."""
    import pinocchio as pin

    if not gravity:
        model = _without_gravity(model)
    D = make_backend(model, backend)
    n, nj = model.nv, model.nv - 6
    x0 = np.concatenate([q_start, np.zeros(n)])
    R = pin.exp3(angle * np.asarray(axis, dtype=float)) @ pin.Quaternion(q_start[3:7]).matrix()
    q_goal = q_start.copy()
    q_goal[3:7] = pin.Quaternion(R).coeffs()
    q_goal[7:] = joints_goal
    x_goal = np.concatenate([q_goal, np.zeros(n)])
    # tangent weights: base translation free (it drifts or falls), base rotation, joints, velocities
    w_term = terminal_scale * np.concatenate([[0, 0, 0], [1e3] * 3, [1e2] * nj, [0, 0, 0],
                                              [10] * 3, [10] * nj])
    w_run = np.concatenate([[0] * 6, [1e-1] * nj, [0] * 6, [1e-2] * nj])
    B = np.eye(n)[:, 6:]
    run = ddp.Sum([ddp.StateRegularization(model, x_goal, w_run),
                   ddp.ControlRegularization(nj, 1e-3)])
    term = ddp.StateRegularization(model, x_goal, w_term)
    return ddp.ShootingProblem(D, x0, T, dt, run, term, actuation=B)


HYQ_POSTURE = np.array([-0.2, 0.75, -1.5] * 2 + [-0.2, -0.75, 1.5] * 2)
HYQ_TUCKED = np.array([-0.2, 1.3, -2.4] * 2 + [-0.2, -1.3, 2.4] * 2)


def hyq(backend="analytical", T=50, dt=0.02, gravity=False, angle=0.0):
    """HyQ changing posture in mid-air: the 6 base coordinates are unactuated, the 12 leg joints
    actuated.  From rest in a standing posture, tuck the legs (hips and knees folded, HYQ_TUCKED)
    in T dt seconds (default 1 s) and end at rest with the trunk's attitude unchanged (or turned
    by ``angle`` rad about the vertical).  Moving the legs makes the trunk counter-rotate
    (angular momentum is conserved and zero), so keeping the attitude needs coordinated leg motion:
    the configuration-dependent coupling that second-order dynamics derivatives capture.  With
    ``gravity`` the robot falls meanwhile (base translation is left free), which does not change
    the attitude dynamics; without (default) it floats, as in orbit."""
    m = robots.load("hyq")
    q = np.array(m.neutral())
    q[7:] = HYQ_POSTURE
    P = _floating_task(m, q, HYQ_TUCKED, angle, [0, 0, 1], gravity, backend, T, dt)
    P.info = dict(robot="hyq", task="mid-air leg tuck keeping the trunk attitude",
                  gravity=gravity)
    return P


#: ATLAS's goal posture: arms swung sideways by 1.2 rad (shoulders), knees bent by 1 rad
ATLAS_GOAL = {"l_arm_shx": -1.2, "r_arm_shx": 1.2, "l_leg_kny": 1.0, "r_leg_kny": 1.0,
              "l_leg_hpy": -0.5, "r_leg_hpy": -0.5}


def atlas(backend="analytical", T=40, dt=0.025, gravity=False, angle=0.0, terminal_scale=0.1):
    """ATLAS changing posture in mid-air (the 6 base coordinates unactuated, 30 joints actuated):
    from rest in the neutral posture, swing both arms sideways and bend hips and knees
    (ATLAS_GOAL) in T dt seconds (default 1 s), ending at rest with the pelvis attitude unchanged
    (or turned by ``angle`` rad about the vertical): an astronaut changing posture without
    touching anything.  ``gravity`` as in :func:`hyq`.  The terminal weights are a tenth of
    HyQ's (``terminal_scale``): with HyQ's, exact DDP needs a regularization of 10-100 on Q_uu
    at almost every iteration (the terms V'_x . F_xx dominate) and had not converged after 600
    iterations, while iLQR converged in 32; with a tenth both reach the same optimum."""
    m = robots.load("atlas")
    q = np.array(m.neutral())
    goal = q[7:].copy()
    for name, value in ATLAS_GOAL.items():
        goal[m.pin_model.joints[m.pin_model.getJointId(name)].idx_q - 7] = value
    P = _floating_task(m, q, goal, angle, [0, 0, 1], gravity, backend, T, dt, terminal_scale)
    P.info = dict(robot="atlas", task="mid-air posture change keeping the pelvis attitude",
                  gravity=gravity)
    return P


def _gait(gait, backend, **options):
    """The HyQ ``gait`` problem of :mod:`problems.gaits` (Talos's walk for "biped"),
    Crocoddyl's parameters for the options left None, on the ``backend``."""
    given = {k: v for k, v in options.items() if v is not None}
    given["dynamics"] = backend_maker(backend)
    return _talos_walk(**given) if gait == "biped" else hyq_gait(gait, **given)


def hyq_walk(backend="analytical", dt=None, step_length=None, step_height=None, step_knots=None,
             support_knots=None, x0=None):
    """HyQ walking one gait cycle on flat ground, Crocoddyl's ``quadrupedal_gaits`` walking
    (:mod:`problems.gaits`, its parameters in ``GAITS`` unless given): 108 knots, four
    footsteps with impacts at landing; ``x0``: the start (default: standing; the feet's
    contact points are where it puts them)."""
    return _gait("walking", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, x0=x0)


def hyq_walk_constrained(backend="analytical", dt=None, step_length=None, step_height=None,
                         step_knots=None, support_knots=None, cone="second-order",
                         hard_limits=True):
    """:func:`hyq_walk` with hard constraints in place of its barrier costs: the support feet's
    friction cones (mu 0.7; ``cone`` "second-order": the cone itself, exactly projected, or
    "facets": Crocoddyl's 4), and the joint position and velocity limits on every knot but the
    impacts (``hard_limits``; False: the barrier cost) (:class:`problems.gaits.QuadrupedGaits`'
    ``hard_cones``, ``hard_limits``)."""
    return _gait("walking", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, hard_cones=cone,
                 hard_limits=bool(hard_limits))


def hyq_trot(backend="analytical", dt=None, step_length=None, step_height=None, step_knots=None,
             support_knots=None, x0=None):
    """HyQ trotting one gait cycle (diagonal pairs of feet), Crocoddyl's parameters unless
    given; ``x0`` as :func:`hyq_walk`'s."""
    return _gait("trotting", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, x0=x0)


def hyq_pace(backend="analytical", dt=None, step_length=None, step_height=None, step_knots=None,
             support_knots=None, x0=None):
    """HyQ pacing one gait cycle (the feet of one side together), Crocoddyl's parameters unless
    given; ``x0`` as :func:`hyq_walk`'s."""
    return _gait("pacing", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, x0=x0)


def hyq_bound(backend="analytical", dt=None, step_length=None, step_height=None, step_knots=None,
              support_knots=None, x0=None):
    """HyQ bounding one gait cycle (the front feet, then the hind feet), Crocoddyl's parameters
    unless given; ``x0`` as :func:`hyq_walk`'s."""
    return _gait("bounding", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, x0=x0)


def hyq_jump(backend="analytical", dt=None, jump_height=None, jump_length=None,
             ground_knots=None, flying_knots=None, x0=None):
    """HyQ jumping 0.3 m sideways, Crocoddyl's ``quadrupedal_gaits`` jumping (its parameters,
    :meth:`problems.gaits.QuadrupedGaits.jumping`, unless given): take-off, 40 knots of flight,
    a landing impact on all feet."""
    return _gait("jumping", backend, dt=dt, jump_height=jump_height, jump_length=jump_length,
                 ground_knots=ground_knots, flying_knots=flying_knots, x0=x0)


def talos_walk(backend="analytical", dt=None, step_length=None, step_height=None,
               step_knots=None, support_knots=None, x0=None):
    """Talos's legs walking two steps on flat feet, Crocoddyl's ``bipedal_gaits_fwddyn``
    walking (:class:`problems.gaits.BipedGaits`, its parameters unless given): 39 knots, a
    landing impact between the steps; ``x0``: the start (default: half sitting)."""
    return _gait("biped", backend, dt=dt, step_length=step_length, step_height=step_height,
                 step_knots=step_knots, support_knots=support_knots, x0=x0)


PROBLEMS = {"pendulum": pendulum, "double_pendulum": double_pendulum, "pendubot": pendubot,
            "ur3": ur3, "ur5-box": ur5_box, "panda-obstacle": panda_obstacle,
            "quadrotor-columns": quadrotor_columns, "hyq-walk-constrained": hyq_walk_constrained, "hyq": hyq, "atlas": atlas, "hyq-walk": hyq_walk, "hyq-trot": hyq_trot,
            "hyq-pace": hyq_pace, "hyq-bound": hyq_bound, "hyq-jump": hyq_jump,
            "talos-walk": talos_walk}


#: the problems with contacts (every backend builds them: ``soddp solve hyq-walk --backend
#: casadi``)
CONTACT_PROBLEMS = ("hyq-walk", "hyq-walk-constrained", "hyq-trot", "hyq-pace", "hyq-bound",
                    "hyq-jump", "talos-walk")


#: the starts of :func:`initial_guess`
STARTS = ("quasi-static", "crocoddyl", "cold")

#: the start and shooting each example problem reaches its best known optimum from (the
#: others: "quasi-static", "single"): the gaits from Crocoddyl's examples' start, x0 at every
#: knot with the controls holding it, with multiple shooting (hyq-jump from the quasi-static
#: rollout with single shooting stops crouched at a cost 19x higher)
DEFAULT_STARTS = {n: ("crocoddyl", "multiple") for n in CONTACT_PROBLEMS}
#: mim-solvers' start of its UR5 example: x0 at every knot, zero controls
DEFAULT_STARTS["ur5-box"] = ("cold", "multiple")
DEFAULT_STARTS["panda-obstacle"] = ("crocoddyl", "multiple")
DEFAULT_STARTS["quadrotor-columns"] = ("quasi-static", "multiple")


def default_start(name: str) -> tuple:
    """(start, shooting) of the problem ``name`` (:data:`DEFAULT_STARTS`)."""
    return DEFAULT_STARTS.get(name, ("quasi-static", "single"))


def initial_guess(problem, start: str):
    """(xs, us) of a start: "quasi-static", the controls holding x0 (the problem's
    ``initial_controls``) and their rollout; "crocoddyl", x0 at every knot and the controls
    holding it (Crocoddyl's examples' start); "cold", x0 at every knot and zero controls."""
    if start not in STARTS:
        raise ValueError(f"start: expected one of {', '.join(STARTS)}; got {start!r}")
    P = problem
    if start == "quasi-static":
        us = P.initial_controls()
        return P.rollout(us), us
    xs = np.tile(P.x0, (P.T + 1, 1))
    return xs, (P.quasi_static(xs) if start == "crocoddyl" else np.zeros((P.T, P.nu)))


def backends_of(name: str) -> tuple:
    """The backends ``soddp compare`` and the study run a problem on: on the gaits the
    analytical one only, as the AD baseline takes minutes per gait (hyq-walk: 75 s building
    CasADi's functions of each contact set, then 34 s of DDP against the analytical 0.5 s)."""
    return ("analytical",) if name in CONTACT_PROBLEMS else BACKENDS


def get(name: str, **options):
    """The example problem ``name`` (one of :data:`PROBLEMS`) built with ``options``."""
    if name not in PROBLEMS:
        raise ValueError(f"problem: expected one of {', '.join(PROBLEMS)}; got {name!r}")
    known = inspect.signature(PROBLEMS[name]).parameters
    for k in options:
        if k not in known:
            raise ValueError(f"{k}: not an option of the {name} problem (options: "
                             f"{', '.join(known)})")
    return PROBLEMS[name](**options)
