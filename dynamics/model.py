"""`RobotModel`: a kinematic tree as the flat arrays the compiled kernels read.

A `RobotModel` is built once from a Pinocchio model (or a URDF through Pinocchio's parser) and keeps
that model as ``pin_model`` for reference use.  Everything the kernels need is derived here, once:

=================  ==================  ==========================================================
field              shape               meaning
=================  ==================  ==========================================================
``parent``         (njoints,)          parent joint index, -1 for the universe (joint 0)
``jtype``          (njoints,)          joint type code (see :mod:`dynamics.kernels.kinematics`)
``axis``           (njoints, 3)        unit axis of revolute / prismatic / helical joints
``pitch``          (njoints,)          pitch h of helical joints (translation h q along the axis
                                       for a rotation q), 0 for the others
``iq``, ``nqj``    (njoints,)          first index and size of the joint in q
``iv``, ``nvj``    (njoints,)          first index and size of the joint in v
``place_R/p``      (njoints, 3, 3/3)   joint placement in the parent joint frame
``mass``, ``com``  (njoints,), (.., 3) body mass and centre of mass (joint frame)
``Icom``           (njoints, 3, 3)     rotational inertia about the centre of mass
``S_local``        (nv, 6)             motion subspace column of each DoF, joint frame, [lin, ang]
``dof_parent``     (nv,)               DoF-level parent (previous DoF of the joint or last DoF
                                       of the parent joint), -1 at a root
``gravity``        (6,)                gravity as a spatial motion [lin, ang]
``armature``       (nv,)               rotor inertia reflected on each DoF (Pinocchio's
                                       ``model.armature``): added to the mass matrix's diagonal,
                                       so tau gains armature * qdd
=================  ==================  ==========================================================
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np

from dynamics.kernels.packed_model import KernelModel, pack

from .inputs import prepare
from .jit import num_chunks, run_in_chunks
from .kernels import kinematics as _kin

#: the joint type codes of ``jtype`` (revolute, unbounded revolute, prismatic, helical,
#: spherical, free-flyer, planar)
REV, RUB, PRI, HEL, SPH, FF, PLA = (_kin.REV, _kin.RUB, _kin.PRI, _kin.HEL, _kin.SPH, _kin.FF,
                                    _kin.PLA)

#: Pinocchio joint model short names we support, mapped to (type code, fixed axis or None).
_SUPPORTED = {
    "JointModelRX": (_kin.REV, (1.0, 0.0, 0.0)),
    "JointModelRY": (_kin.REV, (0.0, 1.0, 0.0)),
    "JointModelRZ": (_kin.REV, (0.0, 0.0, 1.0)),
    "JointModelRevoluteUnaligned": (_kin.REV, None),
    "JointModelRUBX": (_kin.RUB, (1.0, 0.0, 0.0)),
    "JointModelRUBY": (_kin.RUB, (0.0, 1.0, 0.0)),
    "JointModelRUBZ": (_kin.RUB, (0.0, 0.0, 1.0)),
    "JointModelRevoluteUnboundedUnaligned": (_kin.RUB, None),
    "JointModelPX": (_kin.PRI, (1.0, 0.0, 0.0)),
    "JointModelPY": (_kin.PRI, (0.0, 1.0, 0.0)),
    "JointModelPZ": (_kin.PRI, (0.0, 0.0, 1.0)),
    "JointModelPrismaticUnaligned": (_kin.PRI, None),
    "JointModelSpherical": (_kin.SPH, None),
    "JointModelFreeFlyer": (_kin.FF, None),
    "JointModelPlanar": (_kin.PLA, None),
    "JointModelHX": (_kin.HEL, (1.0, 0.0, 0.0)),
    "JointModelHY": (_kin.HEL, (0.0, 1.0, 0.0)),
    "JointModelHZ": (_kin.HEL, (0.0, 0.0, 1.0)),
    "JointModelHelicalUnaligned": (_kin.HEL, None),
}

_TYPE_NAMES = {_kin.REV: "revolute", _kin.RUB: "revolute-unbounded", _kin.PRI: "prismatic",
               _kin.SPH: "spherical", _kin.FF: "free-flyer", _kin.PLA: "planar",
               _kin.HEL: "helical"}

#: joint types whose configuration holds unit-norm blocks: code -> list of (offset, size)
UNIT_BLOCKS = {_kin.RUB: [(0, 2)], _kin.SPH: [(0, 4)], _kin.FF: [(3, 4)], _kin.PLA: [(2, 2)]}


def _joint_motion_subspace(jm) -> np.ndarray:
    """Motion subspace (6 x nv, [lin, ang]) of a Pinocchio joint model, in the joint frame."""
    import pinocchio as pin

    jd = jm.createData()
    qn = pin.neutral(_single_joint_model(jm))
    jm.calc(jd, qn)
    return np.array(jd.S, dtype=float).reshape(6, -1)


def _single_joint_model(jm):
    import pinocchio as pin

    mm = pin.Model()
    mm.addJoint(0, jm, pin.SE3.Identity(), "j")
    return mm


class RobotModel:
    """A kinematic tree for the compiled kernels.

    Build it with :meth:`from_pinocchio` or :meth:`from_urdf`.  ``pin_model`` is the Pinocchio
    model it was built from (used as a reference in tests and for frames).
    """

    def __init__(self, pin_model, name: str | None = None, urdf_path=None, floating_base=None):
        self.pin_model = pin_model
        #: the URDF this model was parsed from (None if built in code) and its root joint choice
        self.urdf_path = urdf_path
        self.floating_base = floating_base
        #: for a robot cut above a joint (robots.first_joints): the number of joints kept
        self.first_joints = None
        self.name = name or pin_model.name or "robot"
        self.nq = int(pin_model.nq)
        self.nv = int(pin_model.nv)
        self.njoints = int(pin_model.njoints)
        self.joint_names = list(pin_model.names)
        self.arrays = self._derive_arrays(pin_model)
        #: the arrays packed into (ints, floats), the first two arguments of every compiled kernel
        self.kernel_args = pack(self.arrays)
        self.unit_blocks, self.unit_block_joint = self._unit_blocks()

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_pinocchio(cls, pin_model, name: str | None = None) -> "RobotModel":
        """Wrap a ``pinocchio.Model`` (the model is kept, not copied)."""
        return cls(pin_model, name)

    @classmethod
    def from_urdf(cls, path, floating_base: bool = False, name: str | None = None) -> "RobotModel":
        """Parse a URDF with Pinocchio, with a free-flyer root joint if ``floating_base``.

        Mimic joints are not supported: Pinocchio's parser ignores ``<mimic>`` tags by default, so
        mimicking joints become independent joints.
        """
        import pinocchio as pin

        path = Path(path)
        if not path.is_file():
            raise ValueError(f"urdf path: no such file: {str(path)!r}")
        if floating_base:
            pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        else:
            pm = pin.buildModelFromUrdf(str(path))
        return cls(pm, name or path.stem, urdf_path=path, floating_base=floating_base)

    @staticmethod
    def _derive_arrays(pm) -> KernelModel:
        _check_massless_subtrees(pm)
        nj, nv = int(pm.njoints), int(pm.nv)
        parent = np.full(nj, -1, dtype=np.int64)
        jtype = np.full(nj, -1, dtype=np.int64)
        axis = np.zeros((nj, 3))
        iq = np.zeros(nj, dtype=np.int64)
        nqj = np.zeros(nj, dtype=np.int64)
        iv = np.zeros(nj, dtype=np.int64)
        nvj = np.zeros(nj, dtype=np.int64)
        place_R = np.tile(np.eye(3), (nj, 1, 1))
        place_p = np.zeros((nj, 3))
        mass = np.zeros(nj)
        com = np.zeros((nj, 3))
        Icom = np.zeros((nj, 3, 3))
        S_local = np.zeros((nv, 6))
        pitch = np.zeros(nj)
        dof_parent = np.full(nv, -1, dtype=np.int64)
        for i in range(1, nj):
            jm = pm.joints[i]
            short = jm.shortname()
            if short not in _SUPPORTED:
                raise ValueError(
                    f"joint {pm.names[i]!r} (index {i}) has Pinocchio type {short}, which is not "
                    f"supported; supported joint types: revolute (any axis, bounded or unbounded), "
                    f"prismatic (any axis), helical (any axis, any pitch), spherical (quaternion), "
                    f"free-flyer, planar"
                )
            code, fixed_axis = _SUPPORTED[short]
            S = _joint_motion_subspace(jm)
            jtype[i] = code
            parent[i] = pm.parents[i]
            iq[i], nqj[i], iv[i], nvj[i] = jm.idx_q, jm.nq, jm.idx_v, jm.nv
            if code in (_kin.REV, _kin.RUB, _kin.HEL):
                axis[i] = S[3:, 0] if fixed_axis is None else fixed_axis
                pitch[i] = float(S[:3, 0] @ axis[i]) if code == _kin.HEL else 0.0
            elif code == _kin.PRI:
                axis[i] = S[:3, 0] if fixed_axis is None else fixed_axis
            if code in (_kin.REV, _kin.RUB, _kin.HEL, _kin.PRI) and not (
                    np.all(np.isfinite(axis[i])) and np.linalg.norm(axis[i]) > 1e-12):
                raise ValueError(f"joint {pm.names[i]!r} (index {i}): expected a non-zero axis; "
                                 f"got {axis[i].tolist()}")
            S_local[jm.idx_v:jm.idx_v + jm.nv] = S.T
            M = pm.jointPlacements[i]
            place_R[i] = M.rotation
            place_p[i] = M.translation
            I = pm.inertias[i]
            _check_inertia(pm, i, I)
            mass[i] = I.mass
            com[i] = I.lever
            Icom[i] = I.inertia
            for k in range(jm.nv):
                d = jm.idx_v + k
                if k > 0:
                    dof_parent[d] = d - 1
                elif parent[i] > 0:
                    pj = pm.joints[int(parent[i])]
                    dof_parent[d] = pj.idx_v + pj.nv - 1
        if np.any(parent[1:] >= np.arange(1, nj)):
            raise ValueError("pin_model: joints must be ordered with parents before children")
        gravity = np.array(pm.gravity.vector, dtype=float)
        armature = np.array(pm.armature, dtype=float).reshape(-1)
        if armature.shape != (nv,) or not np.all(np.isfinite(armature)) or np.any(armature < 0):
            raise ValueError(f"pin_model.armature: expected {nv} finite non-negative rotor "
                             f"inertias; got {armature.tolist()}")
        return KernelModel(parent, jtype, axis, iq, nqj, iv, nvj, place_R, place_p, mass, com,
                           Icom, S_local, dof_parent, gravity, pitch, armature)

    def _unit_blocks(self):
        """q-indices of the unit-norm blocks (quaternions, cos/sin pairs), padded to 4 with -1,
        and the joint each belongs to; used to validate configurations."""
        rows, joints = [], []
        a = self.arrays
        for i in range(1, self.njoints):
            for off, size in UNIT_BLOCKS.get(int(a.jtype[i]), ()):
                o = int(a.iq[i]) + off
                rows.append(list(range(o, o + size)) + [-1] * (4 - size))
                joints.append(i)
        return np.array(rows, dtype=np.int64).reshape(-1, 4), np.array(joints, dtype=np.int64)

    # ------------------------------------------------------------------ description
    def joint_types(self) -> list[str]:
        """Human-readable joint type of every joint (index 0, the universe, excluded)."""
        return [_TYPE_NAMES[int(t)] for t in self.arrays.jtype[1:]]

    @property
    def has_free_flyer(self) -> bool:
        return bool(self.njoints > 1 and self.arrays.jtype[1] == _kin.FF)

    def __repr__(self) -> str:
        return f"RobotModel({self.name!r}, nq={self.nq}, nv={self.nv}, njoints={self.njoints - 1})"

    # ------------------------------------------------------------------ configuration space
    def neutral(self) -> np.ndarray:
        """The neutral configuration (Pinocchio's ``neutral``)."""
        import pinocchio as pin

        return np.array(pin.neutral(self.pin_model))

    @property
    def reference_configurations(self) -> dict[str, np.ndarray]:
        """{name: q} of the SRDF's named configurations (``"half_sitting"``, ``"standing"``,
        as :func:`dynamics.robots.load` reads them; Pinocchio's ``referenceConfigurations``)."""
        return {e.key(): np.array(e.data()) for e in self.pin_model.referenceConfigurations}

    @property
    def armature(self) -> np.ndarray:
        """The rotor inertia of every DoF (nv,): Pinocchio's ``model.armature``, added to the mass
        matrix's diagonal (tau gains armature * qdd)."""
        return self.arrays.armature.copy()

    def with_armature(self, armature) -> "RobotModel":
        """This robot with the rotor inertias ``armature`` (a number for every DoF, or (nv,)):
        a new model (this one, compiled data included, is unchanged)."""
        arm = np.broadcast_to(np.asarray(armature, dtype=float), (self.nv,)) if np.ndim(
            armature) == 0 else np.asarray(armature, dtype=float)
        if arm.shape != (self.nv,) or not np.all(np.isfinite(arm)) or np.any(arm < 0):
            raise ValueError(f"armature: expected a number or {self.nv} finite non-negative "
                             f"rotor inertias; got {np.asarray(armature).tolist()}")
        pm = self.pin_model.copy()
        pm.armature = np.array(arm)
        model = RobotModel(pm, self.name, urdf_path=self.urdf_path,
                           floating_base=self.floating_base)
        model.first_joints = self.first_joints
        return model

    @property
    def frame_names(self) -> list[str]:
        """The names of the model's frames (Pinocchio's, in its order)."""
        return [f.name for f in self.pin_model.frames]

    @property
    def coordinate_names(self) -> tuple[list[str], list[str]]:
        """(q names (nq), v names (nv)): a 1-DoF joint's coordinate is its name; a free-flyer's
        are ``<name>_x, _y, _z, _qx, _qy, _qz, _qw`` and ``_vx, _vy, _vz, _wx, _wy, _wz`` (local
        velocities), a spherical joint's ``_qx .. _qw`` and ``_wx, _wy, _wz``, a planar joint's
        ``_x, _y, _cos, _sin`` and ``_vx, _vy, _w``, an unbounded revolute's ``_cos, _sin``."""
        pm, qn, vn = self.pin_model, [], []
        named = {"JointModelFreeFlyer": (("x", "y", "z", "qx", "qy", "qz", "qw"),
                                         ("vx", "vy", "vz", "wx", "wy", "wz")),
                 "JointModelSpherical": (("qx", "qy", "qz", "qw"), ("wx", "wy", "wz")),
                 "JointModelPlanar": (("x", "y", "cos", "sin"), ("vx", "vy", "w"))}
        for j in range(1, pm.njoints):
            joint, name = pm.joints[j], pm.names[j]
            kind = joint.shortname()
            if kind in named:
                qs, vs = named[kind]
            elif joint.nq == 2 and joint.nv == 1:
                qs, vs = ("cos", "sin"), None
            elif joint.nq == joint.nv == 1:
                qs = vs = None
            else:
                qs, vs = range(joint.nq), range(joint.nv)
            qn += [name] if qs is None else [f"{name}_{s}" for s in qs]
            vn += [name] if vs is None else [f"{name}_{s}" for s in vs]
        return qn, vn

    def frame(self, name: str, argument: str = "frame"):
        """(joint, R, p) of the frame ``name``: the joint it is attached to and its placement in
        that joint's frame.  ValueError naming ``argument``, the closest names and every name
        when there is no such frame."""
        pm = self.pin_model
        if not isinstance(name, str) or not pm.existFrame(name):
            names = self.frame_names
            close = difflib.get_close_matches(str(name), names, n=3)
            hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
            raise ValueError(f"{argument}: no frame {name!r} in {self.name}{hint}; its frames: "
                             + ", ".join(names))
        f = pm.frames[pm.getFrameId(name)]
        return (int(f.parentJoint), np.array(f.placement.rotation),
                np.array(f.placement.translation))

    def check_configuration(self, q, name: str = "q") -> np.ndarray:
        """q (nq,) or (T, nq) as a float array, checked: the shape, finite values, unit
        quaternions and unit complex numbers; else ValueError naming ``name``."""
        try:
            b = prepare(self, q=q)
        except ValueError as e:
            if name == "q":
                raise
            raise ValueError(f"{name}{str(e)[1:]}") from None
        return b.unbatch(b["q"])

    def integrate(self, q, dq) -> np.ndarray:
        """q (+) dq, as ``pinocchio.integrate``.  Shapes (nq,), (nv,) or batched (T, nq), (T, nv)."""
        b = prepare(self, q=q, dq=dq)
        out = np.empty((b.T, self.nq))
        run_in_chunks(_kin.integrate_batch, _kin.integrate_chunk,
                      (*self.kernel_args, b["q"], b["dq"], out), num_chunks(b.T))
        return b.unbatch(out)

    def difference(self, q0, q1) -> np.ndarray:
        """q1 (-) q0 (tangent vector at q0), as ``pinocchio.difference``."""
        b = prepare(self, q0=q0, q1=q1)
        out = np.empty((b.T, self.nv))
        run_in_chunks(_kin.difference_batch, _kin.difference_chunk,
                      (*self.kernel_args, b["q0"], b["q1"], out), num_chunks(b.T))
        return b.unbatch(out)

    def random_configuration(self, rng=None) -> np.ndarray:
        """A random configuration: joint limits where finite, else angles in [-pi, pi] and
        translations in [-1, 1]; uniformly random unit quaternions."""
        rng = np.random.default_rng(rng)
        pm = self.pin_model
        lo, hi = np.asarray(pm.lowerPositionLimit), np.asarray(pm.upperPositionLimit)
        q = np.zeros(self.nq)
        a = self.arrays
        for i in range(1, self.njoints):
            t, o = int(a.jtype[i]), int(a.iq[i])
            if t in (_kin.REV, _kin.PRI, _kin.HEL):
                l, h = lo[o], hi[o]
                bound = 1.0 if t == _kin.PRI else np.pi
                if not (np.isfinite(l) and np.isfinite(h) and abs(l) < 1e10 and abs(h) < 1e10):
                    l, h = -bound, bound
                q[o] = rng.uniform(l, h)
            elif t == _kin.RUB:
                th = rng.uniform(-np.pi, np.pi)
                q[o:o + 2] = np.cos(th), np.sin(th)
            elif t == _kin.SPH:
                q[o:o + 4] = _random_quaternion(rng)
            elif t == _kin.FF:
                q[o:o + 3] = rng.uniform(-1.0, 1.0, 3)
                q[o + 3:o + 7] = _random_quaternion(rng)
            else:  # planar
                th = rng.uniform(-np.pi, np.pi)
                q[o:o + 4] = rng.uniform(-1, 1), rng.uniform(-1, 1), np.cos(th), np.sin(th)
        return q


def _random_quaternion(rng) -> np.ndarray:
    x = rng.normal(size=4)
    return x / np.linalg.norm(x)


def _check_inertia(pm, i, I):
    """A body's mass and rotational inertia must be physical: ValueError naming it."""
    where = f"body of joint {pm.names[i]!r} (index {i})"
    if not np.isfinite(I.mass) or I.mass < 0:
        raise ValueError(f"{where}: expected a non-negative mass; got {I.mass}")
    Ic = np.asarray(I.inertia)
    eig = np.linalg.eigvalsh(0.5 * (Ic + Ic.T)) if np.all(np.isfinite(Ic)) else [np.nan]
    if not np.all(np.isfinite(eig)) or min(eig) < -1e-9 * max(1.0, max(abs(e) for e in eig)):
        raise ValueError(f"{where}: expected a positive semi-definite rotational inertia; its "
                         f"eigenvalues are {np.round(eig, 12).tolist()}")


def _check_massless_subtrees(pm):
    """A joint whose whole subtree carries no mass and no inertia makes the mass matrix
    singular (forward dynamics NaN): ValueError naming the joint."""
    heavy = np.zeros(pm.njoints, dtype=bool)
    for i in range(pm.njoints - 1, 0, -1):
        I = pm.inertias[i]
        heavy[i] = heavy[i] or I.mass > 0 or np.any(np.asarray(I.inertia) != 0)
        heavy[pm.parents[i]] |= heavy[i]
    light = [pm.names[i] for i in range(1, pm.njoints) if not heavy[i]]
    if light:
        raise ValueError(f"joint {light[0]!r}: its subtree has no mass and no inertia, so the "
                         f"mass matrix is singular ({len(light)} such joints: "
                         f"{', '.join(light[:8])}{', ...' if len(light) > 8 else ''})")
