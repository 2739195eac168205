"""Rigid contacts: frames of the robot held fixed in the world, as Crocoddyl and Pinocchio define
them.

* :class:`Contact3D`: a point contact (Crocoddyl's ``ContactModel3D`` with
  ``LOCAL_WORLD_ALIGNED``): the frame's origin p does not accelerate,
  ``J a + gamma = 0`` with J the 3 x nv Jacobian of its velocity in the world's axes and
  ``gamma = Jdot v + Kp (p - reference) + Kd J v`` (the classical acceleration's drift plus
  Baumgarte stabilization with the gains ``(Kp, Kd)``).  Its force lambda (3,) is in the world's
  axes, applied at p.
* :class:`Contact6D`: a flat foot (Crocoddyl's ``ContactModel6D`` with ``LOCAL_WORLD_ALIGNED``):
  the frame neither translates nor turns, ``J a + gamma = 0`` with J the 6 x nv Jacobian of its
  velocity (origin's velocity, angular velocity) in the world's axes and gamma the drift of its
  spatial acceleration, rotated to the world's axes, plus ``Kd J v``: on the linear rows
  ``p'' - omega x p'`` (not the classical ``p''``), as Crocoddyl and Pinocchio's ``CONTACT_6D``
  define it.  Its force lambda (6,) is the wrench (force, then torque about the frame's origin)
  in the world's axes.  Its position gain is Crocoddyl's: ``Kp R log6(ref^-1 oMf)`` with R the
  frame's rotation (the log's linear and angular parts each rotated to the world's axes), ref the
  reference placement; log6 is not differentiable where the frame is turned by pi from it.
  Crocoddyl's biped examples use the gains (0, 30).

The constrained forward dynamics solve the KKT system::

    [M  J^T] [ a ]   [tau - b(q, v)]
    [J  0  ] [-lam] = [  -gamma     ]

for the acceleration a and the stacked contact forces lam (Pinocchio's ``forwardDynamics(model,
data, tau, J, gamma)``, Crocoddyl's ``DifferentialActionModelContactFwdDynamics``).

An impact on the same contacts (Pinocchio's ``impulseDynamics``, Crocoddyl's
``ActionModelImpulseFwdDynamics``) maps the velocity v before it to v+ after it, with the
impulses imp (3 per point contact, 6 per flat foot, world axes)::

    M (v+ - v) = J^T imp,      J v+ = -r J v      (restitution r, 0 by default)

the same KKT matrix with the right-hand side (M v, -r J v).  A contact set
is bound to a model by :class:`ContactSet`, which packs it into flat arrays for the kernels
(:mod:`dynamics.kernels.contact`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels.contact import POINT, SURFACE  # the contact kinds (the first int of a contact)


def _finite(name, value, shape, expected):
    a = np.asarray(value, dtype=float)
    if a.shape != shape or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected {expected}; got {value!r}")
    return a


def _gains(gains):
    g = _finite("gains", gains, (2,), "(Kp, Kd), two finite non-negative numbers")
    if np.any(g < 0):
        raise ValueError(f"gains: expected (Kp, Kd), two finite non-negative numbers; got "
                         f"{gains!r}")
    return float(g[0]), float(g[1])


@dataclass(frozen=True)
class Contact3D:
    """A point contact on the frame ``frame`` (module docstring): ``reference`` (3,) is the
    world position the Baumgarte term pulls the frame to (used when Kp > 0); ``gains`` =
    (Kp, Kd)."""

    frame: str
    reference: tuple = (0.0, 0.0, 0.0)
    gains: tuple = (0.0, 0.0)

    def __post_init__(self):
        ref = _finite("reference", self.reference, (3,), "a finite world position (3,)")
        object.__setattr__(self, "reference", tuple(float(x) for x in ref))
        object.__setattr__(self, "gains", _gains(self.gains))

    @property
    def size(self) -> int:
        return 3


def _placement(name, value):
    """(R (3, 3), p (3,)) of an SE(3) given as a pinocchio.SE3, a 4 x 4 homogeneous matrix or
    None (the identity); ValueError unless R is a rotation."""
    if value is None:
        return np.eye(3), np.zeros(3)
    if hasattr(value, "rotation") and hasattr(value, "translation"):
        value = value.homogeneous
    expected = "an SE(3) placement: a pinocchio.SE3 or a 4 x 4 homogeneous matrix"
    H = _finite(name, value, (4, 4), expected)
    R, p = H[:3, :3], H[:3, 3]
    if (np.abs(R.T @ R - np.eye(3)).max() > 1e-9 or abs(np.linalg.det(R) - 1.0) > 1e-9
            or np.abs(H[3] - [0, 0, 0, 1]).max() > 0):
        raise ValueError(f"{name}: expected {expected} (a rotation block with R^T R = I, "
                         f"det R = 1, and a last row 0 0 0 1); got {value!r}")
    return R.copy(), p.copy()


@dataclass(frozen=True)
class Contact6D:
    """A flat-foot contact on the frame ``frame`` (module docstring): ``reference`` is the
    world placement it is held at (a pinocchio.SE3 or a 4 x 4 matrix, None: the identity), which
    the position gain pulls the frame to; ``gains`` = (Kp, Kd)."""

    frame: str
    reference: object = None
    gains: tuple = (0.0, 0.0)

    def __post_init__(self):
        R, p = _placement("reference", self.reference)
        H = np.eye(4)
        H[:3, :3], H[:3, 3] = R, p
        object.__setattr__(self, "reference", tuple(map(tuple, H)))
        object.__setattr__(self, "gains", _gains(self.gains))

    @property
    def size(self) -> int:
        return 6

    @property
    def placement(self) -> np.ndarray:
        """The reference placement as a 4 x 4 homogeneous matrix."""
        return np.array(self.reference)


class ContactSet:
    """Contacts bound to a :class:`~dynamics.model.RobotModel`: each frame found (ValueError
    naming the contact and the frames, with close matches), none on the universe, and packed
    for the kernels.

    ``ints``  = [K, then per contact: kind, joint, first row of its force in lam]
    ``floats`` = per contact: the frame's placement in its joint (R 9, p 3), the reference
    position (3), Kp, Kd, the reference rotation (9; the identity for a point) (26 floats)
    ``size``: the number of force components (rows of J)."""

    INTS, FLOATS = 3, 26

    def __init__(self, model, contacts):
        if isinstance(contacts, (str, Contact3D, Contact6D)):
            one = contacts if not isinstance(contacts, str) else f"Contact3D({contacts!r})"
            raise ValueError(f"contacts: expected a list of dynamics.Contact3D or "
                             f"dynamics.Contact6D; got the single {contacts!r} (a list of one: "
                             f"[{one}])")
        contacts = list(contacts)
        self.model, self.contacts = model, contacts
        ints, floats, row = [len(contacts)], [], 0
        for k, c in enumerate(contacts):
            if not isinstance(c, (Contact3D, Contact6D)):
                raise ValueError(f"contacts[{k}]: expected a dynamics.Contact3D or "
                                 f"dynamics.Contact6D; got {c!r}")
            joint, R, p = model.frame(c.frame, f"contacts[{k}].frame")
            if joint == 0:
                raise ValueError(f"contacts[{k}].frame: {c.frame!r} is attached to the universe "
                                 f"(joint 0), which does not move: nothing to constrain")
            point = isinstance(c, Contact3D)
            ints += [POINT if point else SURFACE, joint, row]
            ref = c.reference if point else c.placement[:3, 3]
            ref_rotation = np.eye(3) if point else c.placement[:3, :3]
            floats += [*R.ravel(), *p, *ref, *c.gains, *ref_rotation.ravel()]
            row += c.size
        self.size = row
        self.ints = np.array(ints, dtype=np.int64)
        self.floats = np.array(floats, dtype=float)

    @property
    def impulse_floats(self) -> np.ndarray:
        """``floats`` with the gains zeroed: an impulse's contact rows are J (v+ + r v) alone."""
        f = self.floats.copy().reshape(-1, self.FLOATS)
        f[:, 15:17] = 0.0
        return f.ravel()

    def __len__(self):
        return len(self.contacts)

    def __repr__(self):
        return f"ContactSet({', '.join(c.frame for c in self.contacts)})"
