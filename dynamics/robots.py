"""Robot models: the named robots of the studies, random kinematic trees for tests, and the
synthetic chains and binary trees of the first-order paper (Sec. VI) for scaling studies.

``load(name)`` knows:

==================  ====  ====  ==========================================================
name                nq    nv    source
==================  ====  ====  ==========================================================
pendulum            1     1     built here: one revolute-y link, 1 kg, 1 m, point-like mass
double_pendulum     2     2     example-robot-data ``double_pendulum.urdf``
ur3                 6     6     example-robot-data ``ur_description/urdf/ur3_robot.urdf``
ur5                 6     6     example-robot-data ``ur_description/urdf/ur5_robot.urdf``
hyq                 19    18    example-robot-data ``hyq_no_sensors.urdf``, free-flyer root
atlas               37    36    ``dynamics/data/atlas.urdf`` (from shared/models), free-flyer
talos               51    50    example-robot-data ``talos_full_v2.urdf``, free-flyer root
talos_legs          19    18    Talos's legs as example-robot-data's ``talos_legs`` builds them:
                                the root and the first 12 joints of ``talos_reduced.urdf`` with
                                their bodies and frames (the upper body dropped)
aerial_manipulator  13    12    ``dynamics/data/aerial_manipulator.urdf``, free-flyer root: the
                                higher-order paper's TiltHex base with two 3-revolute arms
==================  ====  ====  ==========================================================

(example-robot-data's own ``load("ur3")`` returned the UR5 in releases 5.0.0 to 6.0.0; we always
parse the UR3 URDF directly.)  Any other name is the stem of one of example-robot-data's URDFs
(``load("solo12")``, ``load("go1")``) and a path ending in ``.urdf`` is that file; both take
``floating_base=True`` for a free-flyer root (a URDF does not say; by default a robot whose
SRDF poses its ``root_joint``, as Solo's, Go1's and ANYmal's do, gets one).

A robot is what example-robot-data loads: its URDF plus its SRDF (``<package>/srdf/``, the
URDF's stem or the longest SRDF stem that begins it: ``talos_reduced`` -> ``talos.srdf``,
``solo12`` -> ``solo.srdf``).  The SRDF gives the reference configurations
(``model.reference_configurations``: ``"half_sitting"``, ``"standing"``) and, for the robots whose
loader reads them (Talos), the rotor parameters: each actuated joint's armature is
rotor inertia x gear ratio^2 (0.1 on Talos's joints), which Pinocchio adds to the mass matrix.
``model.with_armature(values)`` sets other rotor inertias.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import numpy as np

from .model import RobotModel

_DATA = Path(__file__).resolve().parent / "data"

_URDFS = {
    "double_pendulum": ("double_pendulum_description/urdf/double_pendulum.urdf", False),
    "ur3": ("ur_description/urdf/ur3_robot.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "talos": ("talos_data/robots/talos_full_v2.urdf", True),
}

#: example-robot-data's packages whose loaders read the SRDF's rotor parameters
#: (``has_rotor_parameters``); the others' armature stays 0, as there
ROTOR_PARAMETER_PACKAGES = ("talos_data",)

NAMES = ("pendulum", "double_pendulum", "ur3", "ur5", "hyq", "atlas", "talos", "talos_legs",
         "aerial_manipulator")

#: Talos's legs: the joints kept of ``talos_reduced.urdf`` (universe, root, 12 leg joints), and
#: its ``half_sitting`` configuration (example-robot-data's ``talos.srdf``)
TALOS_LEGS_JOINTS = 14
TALOS_LEGS_HALF_SITTING = np.array([0.0, 0.0, 1.01927, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -0.411354,
                                    0.859395, -0.448041, -0.001708, 0.0, 0.0, -0.411354,
                                    0.859395, -0.448041, -0.001708])

_cache: dict[str, RobotModel] = {}


def example_robot_data_dir() -> Path:
    """Directory holding example-robot-data's ``robots/`` tree (installed by its wheel)."""
    candidates = []
    for key in ("purelib", "platlib", "data"):
        base = sysconfig.get_paths().get(key)
        if base:
            candidates.append(Path(base) / "cmeel.prefix" / "share" / "example-robot-data" / "robots")
    env = os.environ.get("EXAMPLE_ROBOT_DATA_MODEL_DIR")
    if env:
        candidates.insert(0, Path(env))
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data); "
                            "looked in " + ", ".join(map(str, candidates)))


def srdf_of(urdf) -> Path | None:
    """The SRDF example-robot-data pairs with ``urdf`` (module docstring), or None."""
    folder = Path(urdf).resolve().parent.parent / "srdf"
    if not folder.is_dir():
        return None
    stem = Path(urdf).stem
    found = sorted((p for p in folder.glob("*.srdf") if stem.startswith(p.stem)),
                   key=lambda p: len(p.stem))
    return found[-1] if found else None


def srdf_floating_base(urdf) -> bool:
    """Whether the SRDF of ``urdf`` poses a free-flyer root: a reference configuration gives
    ``root_joint`` 7 values (x, y, z and a quaternion), as on example-robot-data's legged
    robots (Solo, Go1, ANYmal, HyQ, Talos); example-robot-data loads those with one."""
    import xml.etree.ElementTree as ET

    srdf = srdf_of(urdf)
    if srdf is None:
        return False
    try:
        root = ET.parse(srdf).getroot()
    except ET.ParseError:
        return False
    return any(j.get("name") == "root_joint" and len((j.get("value") or "").split()) == 7
               for state in root.iter("group_state") for j in state.iter("joint"))


def read_srdf(pin_model, urdf) -> None:
    """Give ``pin_model`` the reference configurations and (:data:`ROTOR_PARAMETER_PACKAGES`)
    the armature of the SRDF of ``urdf``, as example-robot-data's loaders do."""
    import pinocchio as pin

    srdf = srdf_of(urdf)
    if srdf is None:
        return
    if srdf.parent.parent.name in ROTOR_PARAMETER_PACKAGES:
        pin.loadRotorParameters(pin_model, str(srdf), False)
        pin_model.armature = np.multiply(np.asarray(pin_model.rotorInertia),
                                         np.square(np.asarray(pin_model.rotorGearRatio)))
    pin.loadReferenceConfigurations(pin_model, str(srdf), False)


def first_joints(urdf, n, name) -> RobotModel:
    """The model of the joints before index ``n`` of ``urdf`` (free-flyer root) with their
    bodies, limits and frames: a robot cut above a joint, as example-robot-data cuts
    ``talos_legs``.  Its ``first_joints`` attribute records n, for the Crocoddyl reference to cut
    the same."""
    import pinocchio as pin

    full = pin.buildModelFromUrdf(str(urdf), pin.JointModelFreeFlyer())
    pm = pin.Model()
    pm.name = name
    for j in range(1, n):
        jid = pm.addJoint(full.parents[j], full.joints[j], full.jointPlacements[j],
                          full.names[j])
        pm.appendBodyToJoint(jid, full.inertias[j], pin.SE3.Identity())
    # the joints kept come first in the tree's order, so their coordinates do too
    for lim, size in (("lowerPositionLimit", pm.nq), ("upperPositionLimit", pm.nq),
                      ("velocityLimit", pm.nv), ("effortLimit", pm.nv)):
        setattr(pm, lim, getattr(full, lim)[:size].copy())
    for f in full.frames:
        if f.parentJoint < n and not pm.existFrame(f.name):
            pm.addFrame(f)
    read_srdf(pm, urdf)
    model = RobotModel(pm, name, urdf_path=Path(urdf), floating_base=True)
    model.first_joints = n
    return model


def example_robot_data_urdfs() -> dict:
    """{stem: path} of every URDF that example-robot-data ships (the first of a repeated stem)."""
    found = {}
    for path in sorted(example_robot_data_dir().rglob("*.urdf")):
        found.setdefault(path.stem, path)
    return found


def load(name, floating_base: bool | None = None) -> RobotModel:
    """The named robot (see module docstring), any example-robot-data URDF by its stem, or a
    URDF file by its path; ``floating_base``: a free-flyer root for the latter two (default:
    when the URDF's SRDF poses one, :func:`srdf_floating_base`; the built-in names fix their
    own).  Models are built once per process and cached."""
    key = str(name).lower()
    if key not in NAMES:
        return _load_urdf(name, floating_base)
    if floating_base is not None and key != "pendulum":
        fixed = key in ("double_pendulum", "ur3", "ur5")
        if bool(floating_base) == fixed:
            raise ValueError(f"floating_base: the built-in {key} has "
                             f"{'a fixed' if fixed else 'a free-flyer'} root; got "
                             f"floating_base={floating_base!r}")
    if key not in _cache:
        if key == "pendulum":
            model = pendulum()
        elif key == "talos_legs":
            model = first_joints(example_robot_data_dir() / "talos_data/robots/talos_reduced.urdf",
                                 TALOS_LEGS_JOINTS, key)
        elif key in ("atlas", "aerial_manipulator"):
            model = RobotModel.from_urdf(_DATA / f"{key}.urdf", floating_base=True, name=key)
        else:
            rel, floating = _URDFS[key]
            model = from_urdf_and_srdf(example_robot_data_dir() / rel, floating, key)
        _cache[key] = model
    return _cache[key]


def _load_urdf(name, floating_base):
    path = Path(str(name))
    if path.suffix.lower() != ".urdf":
        urdfs = example_robot_data_urdfs()
        if str(name) not in urdfs:
            import difflib

            close = difflib.get_close_matches(str(name), list(NAMES) + list(urdfs), 5)
            raise ValueError(f"robot name: expected one of {', '.join(NAMES)}, an "
                             f"example-robot-data URDF name or a path to a .urdf file; got "
                             f"{name!r}" + (f" (did you mean {', '.join(close)}?)" if close
                                            else ""))
        path = urdfs[str(name)]
    if floating_base is None:
        floating_base = srdf_floating_base(path)
    key = (str(path.resolve()), bool(floating_base))
    if key not in _cache:
        _cache[key] = from_urdf_and_srdf(path, floating_base)
    return _cache[key]


def from_urdf_and_srdf(urdf, floating_base: bool, name: str | None = None) -> RobotModel:
    """:meth:`RobotModel.from_urdf` with what the URDF's SRDF adds (:func:`read_srdf`)."""
    import pinocchio as pin

    urdf = Path(urdf)
    if not urdf.is_file():
        raise ValueError(f"urdf path: no such file: {str(urdf)!r}")
    root = (pin.JointModelFreeFlyer(),) if floating_base else ()
    pm = pin.buildModelFromUrdf(str(urdf), *root)
    read_srdf(pm, urdf)
    return RobotModel(pm, name or urdf.stem, urdf_path=urdf, floating_base=floating_base)


def pendulum(length: float = 1.0, mass: float = 1.0) -> RobotModel:
    """A single pendulum: revolute about y, a point-like mass at distance ``length`` below the
    joint (small rotational inertia keeps the spatial inertia positive definite)."""
    import pinocchio as pin

    pm = pin.Model()
    pm.name = "pendulum"
    j = pm.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "joint")
    I = pin.Inertia(mass, np.array([0.0, 0.0, -length]), np.eye(3) * 1e-3 * mass)
    pm.appendBodyToJoint(j, I, pin.SE3.Identity())
    pm.addFrame(pin.Frame("tip", j, 0, pin.SE3(np.eye(3), np.array([0.0, 0.0, -length])),
                          pin.FrameType.OP_FRAME))
    return RobotModel.from_pinocchio(pm, "pendulum")


# ---------------------------------------------------------------------------- random trees
JOINT_TYPES = ("revolute", "revolute_unaligned", "revolute_unbounded", "prismatic",
               "prismatic_unaligned", "helical", "helical_unaligned", "spherical", "planar",
               "free_flyer")


def _joint_model(kind: str, rng):
    import pinocchio as pin

    ax = int(rng.integers(3))
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    if kind == "revolute":
        return (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)[ax]()
    if kind == "revolute_unaligned":
        return pin.JointModelRevoluteUnaligned(u)
    if kind == "revolute_unbounded":
        return (pin.JointModelRUBX, pin.JointModelRUBY, pin.JointModelRUBZ)[ax]()
    if kind == "prismatic":
        return (pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ)[ax]()
    if kind == "prismatic_unaligned":
        return pin.JointModelPrismaticUnaligned(u)
    if kind == "helical":
        return (pin.JointModelHX, pin.JointModelHY, pin.JointModelHZ)[ax](rng.uniform(-0.5, 0.5))
    if kind == "helical_unaligned":
        return pin.JointModelHelicalUnaligned(u, rng.uniform(-0.5, 0.5))
    if kind == "spherical":
        return pin.JointModelSpherical()
    if kind == "planar":
        return pin.JointModelPlanar()
    if kind == "free_flyer":
        return pin.JointModelFreeFlyer()
    raise ValueError(f"joint_types: expected names from {JOINT_TYPES}; got {kind!r}")


def _random_inertia(rng):
    import pinocchio as pin

    m = rng.uniform(0.5, 3.0)
    A = rng.normal(size=(3, 3))
    Ic = A @ A.T + 0.1 * np.eye(3)
    return pin.Inertia(m, rng.uniform(-0.3, 0.3, 3), Ic)


def random_tree(n_bodies: int, joint_types=JOINT_TYPES[:-1], branching: float = 0.3,
                floating_base: bool = False, seed: int = 0, armature: float = 0.0) -> RobotModel:
    """A random kinematic tree of ``n_bodies`` bodies (plus a free-flyer root if
    ``floating_base``), with joint types drawn from ``joint_types`` (names in ``JOINT_TYPES``),
    random placements and random positive-definite inertias.  With probability ``branching`` a
    body attaches to a random earlier body instead of the previous one.  ``armature`` > 0 gives
    every DoF but a free-flyer root's a rotor inertia drawn uniformly in [0, armature]
    (Pinocchio's ``armature``)."""
    import pinocchio as pin

    if n_bodies < 1:
        raise ValueError(f"n_bodies: expected at least 1; got {n_bodies}")
    for k in joint_types:
        if k not in JOINT_TYPES:
            raise ValueError(f"joint_types: expected names from {JOINT_TYPES}; got {k!r}")
    rng = np.random.default_rng(seed)
    # draw the tree shape first (parent of body b among -1 = root, 0..b-1), then add the joints in
    # depth-first order: Pinocchio's algorithms (crba, ...) require every subtree's DoFs to be
    # contiguous in v.
    parents = []
    for b in range(n_bodies):
        if b > 0 and rng.uniform() < branching:
            parents.append(int(rng.integers(-1 if not floating_base else 0, b)))
        else:
            parents.append(b - 1)
    specs = []
    for b in range(n_bodies):
        kind = joint_types[int(rng.integers(len(joint_types)))]
        placement = pin.SE3(pin.exp3(rng.normal(size=3)), rng.uniform(-0.5, 0.5, 3))
        specs.append((kind, _joint_model(kind, rng), placement, _random_inertia(rng)))
    pm = pin.Model()
    pm.name = f"random_tree_{n_bodies}_{seed}"
    root = 0
    if floating_base:
        root = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root")
        pm.appendBodyToJoint(root, _random_inertia(rng), pin.SE3.Identity())
    children = {b: [c for c in range(n_bodies) if parents[c] == b] for b in range(-1, n_bodies)}
    stack = [(c, root) for c in reversed(children[-1])]
    while stack:
        b, pid = stack.pop()
        kind, jm, placement, inertia = specs[b]
        j = pm.addJoint(pid, jm, placement, f"j{b}_{kind}")
        pm.appendBodyToJoint(j, inertia, pin.SE3.Identity())
        stack.extend((c, j) for c in reversed(children[b]))
    if not (np.isfinite(armature) and armature >= 0):
        raise ValueError(f"armature: expected a finite number >= 0; got {armature!r}")
    if armature > 0:  # not on a free-flyer root: a rotor drives a joint, not the base
        arm = rng.uniform(0.0, armature, pm.nv)
        arm[:6 if floating_base else 0] = 0.0
        pm.armature = arm
    return RobotModel.from_pinocchio(pm, pm.name)


# ---------------------------------------------------------------------------- geometric linearization
def bos_validation_tree() -> RobotModel:
    """A system like the one Bos et al. (2022, Fig. 4) validate on: a moving base (free-flyer)
    carrying a branched tree of revolute, prismatic and helical joints (the paper gives no
    dimensions; these are ours: 0.3 m links, 1 kg bodies, helix pitch 0.1 m/rad)::

        base -> R(z) -> P(x) -> H(z)        R(z) -> P(y)        base -> H(x) -> R(y)
    """
    import pinocchio as pin

    def body(pm, j, length):
        I = pin.Inertia(1.0, np.array([length / 2, 0.0, 0.0]),
                        np.diag([0.01, 0.02, 0.02]))
        pm.appendBodyToJoint(j, I, pin.SE3.Identity())

    pm = pin.Model()
    pm.name = "bos_validation_tree"
    base = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    pm.appendBodyToJoint(base, pin.Inertia(4.0, np.zeros(3), np.diag([0.1, 0.12, 0.15])),
                         pin.SE3.Identity())
    at = lambda x, y, z: pin.SE3(np.eye(3), np.array([x, y, z]))
    j1 = pm.addJoint(base, pin.JointModelRZ(), at(0.2, 0.0, 0.1), "revolute_1")
    body(pm, j1, 0.3)
    j2 = pm.addJoint(j1, pin.JointModelPX(), at(0.3, 0.0, 0.0), "prismatic_2")
    body(pm, j2, 0.3)
    j3 = pm.addJoint(j2, pin.JointModelHZ(0.1), at(0.3, 0.0, 0.0), "helical_3")
    body(pm, j3, 0.3)
    j4 = pm.addJoint(j1, pin.JointModelPY(), at(0.15, 0.1, 0.0), "prismatic_4")
    body(pm, j4, 0.3)
    j5 = pm.addJoint(base, pin.JointModelHX(0.1), at(-0.2, 0.0, 0.1), "helical_5")
    body(pm, j5, 0.3)
    j6 = pm.addJoint(j5, pin.JointModelRY(), at(0.0, 0.0, 0.3), "revolute_6")
    body(pm, j6, 0.3)
    return RobotModel.from_pinocchio(pm, pm.name)


def bos_validation_configuration(model) -> np.ndarray:
    """The paper's perturbed configuration: every joint position 0.3 (m or rad), the base at the
    origin with identity orientation."""
    q = model.neutral()
    q[7:] = 0.3
    return q


def space_manipulator() -> RobotModel:
    """A free-floating space manipulator in zero gravity: a 20 kg base (0.5 m cube, free-flyer)
    carrying a 3-DoF arm (revolute z, y, y; 0.4 m links of 2 kg).  nv = 9."""
    import pinocchio as pin

    pm = pin.Model()
    pm.name = "space_manipulator"
    pm.gravity = pin.Motion.Zero()
    base = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "base")
    pm.appendBodyToJoint(base, pin.Inertia(20.0, np.zeros(3), np.eye(3) * 20.0 * 0.5 ** 2 / 6),
                         pin.SE3.Identity())
    parent = base
    for k, (joint, offset) in enumerate(((pin.JointModelRZ(), (0.0, 0.0, 0.25)),
                                         (pin.JointModelRY(), (0.0, 0.0, 0.1)),
                                         (pin.JointModelRY(), (0.4, 0.0, 0.0)))):
        parent = pm.addJoint(parent, joint, pin.SE3(np.eye(3), np.array(offset)), f"arm_{k + 1}")
        pm.appendBodyToJoint(parent, pin.Inertia(2.0, np.array([0.2, 0.0, 0.0]),
                                                 np.diag([0.002, 0.03, 0.03])),
                             pin.SE3.Identity())
    return RobotModel.from_pinocchio(pm, pm.name)


def multi_arm_aerial(branches: int = 2, links_per_branch: int = 3) -> RobotModel:
    """The higher-order paper's aerial manipulator grown for its benchmarks (Table 4): a free-flyer
    base (2.5 kg, J = diag(0.03, 0.03, 0.05)) carrying ``branches`` chains of ``links_per_branch``
    revolute links (joint axes cycling y, x, z; 0.25 kg, J = diag(0.002, 0.002, 0.001), centre of
    mass 0.06 m below the joint, next joint 0.12 m below), attached 0.10 m below the base's centre
    of mass on a circle of radius 0.09 m.  N = 1 + branches * links_per_branch bodies; (2, 3) has
    the mechanics of ``load("aerial_manipulator")``."""
    import pinocchio as pin

    if branches < 1 or links_per_branch < 1:
        raise ValueError(f"branches, links_per_branch: expected >= 1; got {branches}, "
                         f"{links_per_branch}")
    pm = pin.Model()
    pm.name = f"aerial_{branches}x{links_per_branch}"
    base = pm.addJoint(0, pin.JointModelFreeFlyer(), pin.SE3.Identity(), "root_joint")
    pm.appendBodyToJoint(base, pin.Inertia(2.5, np.zeros(3), np.diag([0.03, 0.03, 0.05])),
                         pin.SE3.Identity())
    link = pin.Inertia(0.25, np.array([0.0, 0.0, -0.06]), np.diag([0.002, 0.002, 0.001]))
    joints = (pin.JointModelRY, pin.JointModelRX, pin.JointModelRZ)
    for b in range(branches):
        angle = 2 * np.pi * b / branches
        placement = pin.SE3(np.eye(3), np.array([0.09 * np.cos(angle), 0.09 * np.sin(angle), -0.1]))
        parent = base
        for k in range(links_per_branch):
            parent = pm.addJoint(parent, joints[k % 3](), placement, f"arm{b + 1}_joint{k + 1}")
            pm.appendBodyToJoint(parent, link, pin.SE3.Identity())
            placement = pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.12]))
    return RobotModel.from_pinocchio(pm, pm.name)


# ---------------------------------------------------------------------------- paper benchmarks
def _unit_link_inertia():
    import pinocchio as pin

    # first-order paper Sec. VI: 1 kg, 1 m, centre of mass at the midpoint, Izz = 1, others 0
    return pin.Inertia(1.0, np.array([0.5, 0.0, 0.0]), np.diag([0.0, 0.0, 1.0]))


def serial_chain(n: int) -> RobotModel:
    """The paper's N-link serial chain: revolute joints about their local z axis, unit links along
    x (1 kg, 1 m, centre of mass at the midpoint, Izz = 1)."""
    import pinocchio as pin

    pm = pin.Model()
    pm.name = f"chain_{n}"
    parent = 0
    for k in range(n):
        placement = pin.SE3(np.eye(3), np.array([1.0 if k else 0.0, 0.0, 0.0]))
        parent = pm.addJoint(parent, pin.JointModelRZ(), placement, f"j{k}")
        pm.appendBodyToJoint(parent, _unit_link_inertia(), pin.SE3.Identity())
    return RobotModel.from_pinocchio(pm, pm.name)


def binary_tree(n: int) -> RobotModel:
    """The paper's N-link binary tree: body k (1-based) hangs from body k // 2, same unit links and
    revolute-z joints as :func:`serial_chain`."""
    import pinocchio as pin

    pm = pin.Model()
    pm.name = f"binary_tree_{n}"
    for k in range(1, n + 1):
        parent = k // 2
        placement = pin.SE3(np.eye(3), np.array([1.0 if parent else 0.0, 0.0, 0.0]))
        j = pm.addJoint(parent, pin.JointModelRZ(), placement, f"j{k}")
        pm.appendBodyToJoint(j, _unit_link_inertia(), pin.SE3.Identity())
    return RobotModel.from_pinocchio(pm, pm.name)


_VECTOR_SPACES: dict[int, RobotModel] = {}


def vector_space(n: int) -> RobotModel:
    """R^n as a RobotModel: a chain of n prismatic joints (``q (+) dq = q + dq``,
    ``q1 (-) q0 = q1 - q0``), so that kernels written for robots (the compiled costs and solver
    passes) also serve a user's vector-space system.  Built once per n."""
    if n not in _VECTOR_SPACES:
        import pinocchio as pin

        pm = pin.Model()
        parent = 0
        for k in range(n):
            parent = pm.addJoint(parent, pin.JointModelPX(), pin.SE3.Identity(), f"x{k}")
            # a unit point mass: only its kinematics serve, but a model's mass matrix must
            # not be singular (RobotModel checks)
            pm.appendBodyToJoint(parent, pin.Inertia(1.0, np.zeros(3), np.eye(3)),
                                 pin.SE3.Identity())
        pm.gravity.setZero()
        _VECTOR_SPACES[n] = RobotModel(pm, f"R^{n}")
    return _VECTOR_SPACES[n]
