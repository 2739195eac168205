"""A MuJoCo plant for closed-loop runs: the robot of a :class:`~dynamics.model.RobotModel` built
as an MJCF model (never our own dynamics), stepped by MuJoCo.

The MJCF model is written from the same URDF as the controller's model (through Pinocchio's
parse of it): one body per joint at its placement, with the link's mass, centre of mass and
inertia, and the joint's rotor inertia (armature); a hinge per revolute joint, a slide per
prismatic one, a free joint for a floating base (each body named after its joint); a motor on
every actuated joint (gear 1, unbounded); primitive geometry (a capsule from each body to its
children, for viewing: the URDF's meshes are not needed); with ``feet``, a sphere on each foot
frame and a floor, which alone collide (MuJoCo decides the contacts).  The state is read and
written in the controller's convention: Pinocchio's q (a free flyer's quaternion x, y, z, w;
MuJoCo's is w, x, y, z) and v (a free flyer's linear velocity in its local frame; MuJoCo's is
in the world's).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from dynamics.kernels.kinematics import FF, PRI, REV

#: MuJoCo's time step (s) of the plant
TIMESTEP = 1e-3


def _vec(a):
    return " ".join(f"{float(x):.17g}" for x in np.ravel(a))


def _quat(R):
    q = pin.Quaternion(np.asarray(R))  # MuJoCo: w x y z
    return _vec([q.w, q.x, q.y, q.z])


#: the feet's spheres: radius (m), and the friction of the feet and the floor (MuJoCo's sliding,
#: torsional and rolling coefficients; the friction cone is elliptic: |f_t| <= mu f_n, not
#: MuJoCo's default pyramid |f_1| + |f_2| <= mu f_n, which the controllers' square facets
#: |f_1|, |f_2| <= mu f_n overreach)
FOOT_RADIUS = 0.005
FRICTION = (1.0, 0.005, 0.0001)
#: the contacts' MuJoCo solref (time constant, damping ratio): stiffer than MuJoCo's default
#: 0.02 s, towards the controller's rigid contacts
SOLREF = (0.004, 1.0)


def mjcf(model, actuated=None, floor=False, timestep=TIMESTEP, feet=()) -> str:
    """The MJCF of ``model`` (module docstring); ``actuated``: the velocity indices that get a
    motor (None: every DoF but a free flyer's); ``feet``: frames that get a sphere of
    :data:`FOOT_RADIUS` that collides with a floor (added with them)."""
    pm = model.pin_model
    a = model.arrays
    children = {i: [] for i in range(model.njoints)}
    for i in range(1, model.njoints):
        children[int(a.parent[i])].append(i)
    motors = []
    spheres = {}  # joint -> the placements of its feet's spheres
    for f in feet:
        joint, _, p = model.frame(f, "feet")
        spheres.setdefault(int(joint), []).append((f, np.asarray(p)))
    floor = floor or bool(feet)
    friction = _vec(FRICTION)

    def body(i, indent):
        pad = " " * indent
        M = pm.jointPlacements[i]
        inertia = pm.inertias[i]
        jt = int(a.jtype[i])
        lines = [f'{pad}<body name="{pm.names[i]}" pos="{_vec(M.translation)}" '
                 f'quat="{_quat(M.rotation)}">']
        iv = int(a.iv[i])
        arm = float(model.armature[iv]) if model.armature is not None else 0.0
        if jt == FF:
            lines.append(f'{pad}  <freejoint name="{pm.names[i]}"/>')
        elif jt in (REV, PRI):
            axis = np.asarray(a.axis[i])
            kind = "hinge" if jt == REV else "slide"
            lines.append(f'{pad}  <joint name="{pm.names[i]}" type="{kind}" axis="{_vec(axis)}" '
                         f'armature="{arm:.17g}" limited="false" damping="0"/>')
            if actuated is None or iv in actuated:
                motors.append(pm.names[i])
        else:
            raise ValueError(f"model: the MuJoCo plant supports revolute, prismatic and free-flyer "
                             f"joints; joint {pm.names[i]} is of another type")
        if inertia.mass > 0:
            I = inertia.inertia
            lines.append(f'{pad}  <inertial pos="{_vec(inertia.lever)}" mass="{inertia.mass:.17g}" '
                         f'fullinertia="{_vec([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>')
        ends = [pm.jointPlacements[c].translation for c in children[i]] or [inertia.lever * 2]
        for e in ends:
            if np.linalg.norm(e) > 1e-6:
                lines.append(f'{pad}  <geom type="capsule" size="0.03" fromto="0 0 0 {_vec(e)}" '
                             f'mass="0" contype="0" conaffinity="0" rgba="0.6 0.6 0.7 1"/>')
        for name, p in spheres.get(i, []):
            lines.append(f'{pad}  <geom name="{name}" type="sphere" size="{FOOT_RADIUS}" '
                         f'pos="{_vec(p)}" mass="0" friction="{friction}" '
                         f'solref="{_vec(SOLREF)}" rgba="0.2 0.2 0.2 1"/>')
        for c in children[i]:
            lines += body(c, indent + 2)
        lines.append(f"{pad}</body>")
        return lines

    world = []
    if floor:
        world.append(f'    <geom name="floor" type="plane" size="20 20 0.1" '
                     f'friction="{friction}" rgba="0.8 0.8 0.8 1"/>')
    for c in children[0]:
        world += body(c, 4)
    acts = [f'    <motor name="{n}" joint="{n}" gear="1"/>' for n in motors]
    return "\n".join([
        f'<mujoco model="{model.name}">',
        f'  <option timestep="{timestep:.17g}" gravity="{_vec(_gravity(model))}" '
        f'cone="elliptic"/>',
        "  <worldbody>", *world, "  </worldbody>",
        "  <actuator>", *acts, "  </actuator>",
        "</mujoco>"])


def _gravity(model):
    """The gravity vector (3,) of the model (its linear part)."""
    return np.asarray(model.pin_model.gravity.linear)


class Plant:
    """MuJoCo stepping ``model``'s robot from the state ``x0``: :meth:`state` (q, v) in the
    controller's convention, :meth:`step` with the actuated DoFs' torques, :meth:`push` a
    wrench on a body.  ``feet``: the frames that touch the floor (:func:`mjcf`)."""

    def __init__(self, model, x0, timestep=TIMESTEP, feet=()):
        import mujoco

        #: whether the root is a free flyer (its q and v are converted)
        self.free = bool(model.has_free_flyer)
        if self.free and int(model.arrays.jtype[1]) != FF:
            raise ValueError(f"model: the plant takes a free flyer only as the root joint; "
                             f"{model.name} has it elsewhere")
        self.mujoco = mujoco
        self.model = model
        self.mj = mujoco.MjModel.from_xml_string(mjcf(model, timestep=timestep, feet=feet))
        self.data = mujoco.MjData(self.mj)
        if self.mj.nq != model.nq or self.mj.nv != model.nv:
            raise ValueError(f"model: MuJoCo built nq={self.mj.nq}, nv={self.mj.nv}; the model "
                             f"has nq={model.nq}, nv={model.nv}")
        self.set_state(x0)
        self.dt = self.mj.opt.timestep

    def set_state(self, x) -> None:
        """Set MuJoCo's qpos, qvel from x = (q, v) in the controller's convention."""
        nq = self.model.nq
        q, v = np.array(x[:nq], dtype=float), np.array(x[nq:], dtype=float)
        if self.free:
            R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
            q[3:7] = [q[6], *q[3:6]]
            v[:3] = R @ v[:3]
        self.data.qpos[:], self.data.qvel[:] = q, v
        self.mujoco.mj_forward(self.mj, self.data)

    @property
    def time(self) -> float:
        return float(self.data.time)

    def state(self) -> np.ndarray:
        """x = (q, v) in the controller's (Pinocchio's) convention."""
        q, v = np.array(self.data.qpos), np.array(self.data.qvel)
        if self.free:
            w = q[3]
            q[3:7] = [*q[4:7], w]
            R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
            v[:3] = R.T @ v[:3]
        return np.concatenate([q, v])

    def step(self, tau) -> None:
        """One MuJoCo step with the motors' torques ``tau`` (nu,)."""
        self.data.ctrl[:] = tau
        self.mujoco.mj_step(self.mj, self.data)

    def hold(self, x, tau, seconds=1.0, kp=5.0, kd=0.2) -> np.ndarray:
        """Hold the actuated joints (the last nu coordinates of q and v: a floating base's
        robot, or a fully actuated one) at x's with a PD (gains ``kp``, ``kd``) around the
        torques ``tau`` for ``seconds``, as a robot stands up before a run, so that its contacts
        carry it when the controller starts; the state reached."""
        nq, na = self.model.nq, self.mj.nu
        q_ref = np.asarray(x, dtype=float)[nq - na:nq]
        for _ in range(int(round(seconds / self.dt))):
            x_now = self.state()
            self.step(tau + kp * (q_ref - x_now[nq - na:nq]) - kd * x_now[-na:])
        return self.state()

    def unstable(self) -> bool:
        """Whether MuJoCo found the simulation unstable (non-finite or huge accelerations;
        it then resets the state to its model's default)."""
        return bool(self.data.warning[self.mujoco.mjtWarning.mjWARN_BADQACC].number > 0)

    def push(self, body: str, wrench) -> None:
        """Apply the world-frame wrench (force, torque) (6,) on ``body`` until changed (zeros:
        none)."""
        bid = self.mujoco.mj_name2id(self.mj, self.mujoco.mjtObj.mjOBJ_BODY, body)
        if bid < 0:
            raise ValueError(f"body: expected a body of the plant; got {body!r}")
        self.data.xfrc_applied[bid] = np.asarray(wrench, dtype=float)
