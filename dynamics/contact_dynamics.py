"""Contact dynamics as functions and as a :class:`~dynamics.protocol.Dynamics` backend.

``constrained_dynamics(model, contacts, q, v, tau)`` gives the acceleration a and the contact
forces lam of the KKT system of :mod:`dynamics.contacts`; ``constrained_derivatives`` adds their
first derivatives in (q, v, tau) (:class:`ContactDerivatives`).  Both take one point or a batch
with a leading knot axis, like every kernel, and are compiled
(:mod:`dynamics.kernels.contact`).  A knot whose KKT system is singular (a singular mass matrix,
or contacts whose Jacobian has dependent rows with no ``damping``) gives NaN there, and
``status`` says which.

:class:`ContactDynamics` wraps a model and a contact set as a backend: ``aba`` is the
constrained forward dynamics, ``fd_derivatives`` its first and second derivatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .contacts import ContactSet
from .inputs import prepare
from .jit import compile_notice, num_chunks, run_in_chunks
from .kernels import contact as _k
from .protocol import RobotConfigurationSpace, robot_model
from .results import FDDerivatives

#: what a knot's status says (dynamics.kernels.contact)
STATUS = {_k.OK: "ok", _k.SINGULAR_MASS: "the mass matrix is not positive definite",
          _k.SINGULAR_CONTACT: "the contact-space inertia J M^-1 J^T is singular (dependent "
                               "contact constraints; set a damping)"}


@dataclass
class ContactDerivatives:
    """Constrained forward dynamics and its first derivatives at one knot (a batch adds a
    leading knot axis): a (nv,), lam (nc,), da_dq, da_dv, da_dtau (nv, nv), dlam_dq,
    dlam_dv, dlam_dtau (nc, nv); ``status`` (0: solved; see :data:`STATUS`)."""

    a: np.ndarray
    lam: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    da_dtau: np.ndarray
    dlam_dq: np.ndarray
    dlam_dv: np.ndarray
    dlam_dtau: np.ndarray
    status: np.ndarray


def values_only(a, lam, status) -> ContactDerivatives:
    """A :class:`ContactDerivatives` of the values a, lam and status, its derivatives None
    (``contact_derivatives(..., order=0)``)."""
    return ContactDerivatives(a, lam, None, None, None, None, None, None, status)


def check_order_0_to_2(order):
    """ValueError unless ``order`` is 0, 1 or 2 (of the contact and impact maps)."""
    if isinstance(order, bool) or order not in (0, 1, 2):
        raise ValueError(f"order: expected 0, 1 or 2; got {order!r}")


def _contact_set(model, contacts):
    return contacts if isinstance(contacts, ContactSet) else ContactSet(model, contacts)


def _damping(damping):
    d = float(damping)
    if not (np.isfinite(d) and d >= 0):
        raise ValueError(f"damping: expected a finite non-negative number; got {damping!r}")
    return d


def constrained_dynamics(model, contacts, q, v, tau, damping=0.0):
    """(a, lam, status) of the contact dynamics at one knot or a batch (module docstring)."""
    cs = _contact_set(model, contacts)
    damping = _damping(damping)
    compile_notice(_k.constrained_dynamics_chunk, "the contact dynamics", 30)
    b = prepare(model, q=q, v=v, tau=tau)
    A = np.empty((b.T, model.nv))
    LAM = np.empty((b.T, cs.size))
    status = np.empty(b.T, dtype=np.int64)
    run_in_chunks(_k.constrained_dynamics_batch, _k.constrained_dynamics_chunk,
                  (*model.kernel_args, cs.ints, cs.floats, b["q"], b["v"], b["tau"], damping, A,
                   LAM, status), num_chunks(b.T))
    bad = status != _k.OK
    A[bad], LAM[bad] = np.nan, np.nan
    return b.unbatch((A, LAM, status))


def contact_jacobian(model, contacts, q, v=None):
    """(J, gamma): the stacked contact Jacobians (nc, nv) (world-aligned, as
    ``pinocchio.getFrameJacobian(..., LOCAL_WORLD_ALIGNED)[:3]`` per point contact) and the
    drifts gamma (nc,) at one knot or a batch (v: zero if None)."""
    cs = _contact_set(model, contacts)
    b = prepare(model, q=q, v=np.zeros(np.shape(q)[:-1] + (model.nv,)) if v is None else v)
    J = np.empty((b.T, cs.size, model.nv))
    gamma = np.empty((b.T, cs.size))
    _k.jacobian_batch(*model.kernel_args, cs.ints, cs.floats, b["q"], b["v"], J, gamma)
    return b.unbatch((J, gamma))


def constrained_derivatives(model, contacts, q, v, tau, damping=0.0) -> ContactDerivatives:
    """:class:`ContactDerivatives` at one knot or a batch (module docstring)."""
    cs = _contact_set(model, contacts)
    damping = _damping(damping)
    compile_notice(_k.constrained_derivatives_chunk, "the contact dynamics derivatives", 45)
    b = prepare(model, q=q, v=v, tau=tau)
    T, n, nc = b.T, model.nv, cs.size
    out = [np.empty((T, n)), np.empty((T, nc)), np.empty((T, n, n)), np.empty((T, n, n)),
           np.empty((T, n, n)), np.empty((T, nc, n)), np.empty((T, nc, n)), np.empty((T, nc, n))]
    status = np.empty(T, dtype=np.int64)
    run_in_chunks(_k.constrained_derivatives_batch, _k.constrained_derivatives_chunk,
                  (*model.kernel_args, cs.ints, cs.floats, b["q"], b["v"], b["tau"], damping,
                   *out, status), num_chunks(T))
    bad = status != _k.OK
    for x in out:
        x[bad] = np.nan
    return ContactDerivatives(*b.unbatch((*out, status)))


@dataclass
class ContactSecondDerivatives(ContactDerivatives):
    """:class:`ContactDerivatives` and the second derivatives of the stacked output w = (a, lam)
    in the tensor convention of :class:`~dynamics.results.FDDerivatives`: d2_dq2 (``[i, j, k] =
    L_q_k L_q_j w_i``), d2_dv2, d2_dqdv (``[i, j, k] = d/dv_k (dw_i/dq_j)``) and d2_dtaudq
    (``[i, j, k] = d/dq_k (dw_i/dtau_j)``), each (nv + nc, nv, nv), rows a then lam; the other
    blocks vanish.  With a co-state ``mu`` (nv + nc,) they are contracted over the output index,
    ``sum_i mu_i T[i, :, :]``, and are (nv, nv) matrices, computed without any tensor."""

    d2_dq2: np.ndarray = None
    d2_dv2: np.ndarray = None
    d2_dqdv: np.ndarray = None
    d2_dtaudq: np.ndarray = None


def constrained_second_derivatives(model, contacts, q, v, tau, mu=None,
                                   damping=0.0) -> ContactSecondDerivatives:
    """:class:`ContactSecondDerivatives` at one knot or a batch: the first derivatives of
    :func:`constrained_derivatives` and the exact second derivatives of (a, lam), contracted with
    ``mu`` when given.  With rho = K^-T mu for the KKT matrix K and Z = [I; d(a, lam)/dx], the
    contracted second derivative is -Z^T (d2 rho.r) Z where r(x, a, lam) = 0 is the KKT residual:
    the contracted IDSVA-SO at the constrained acceleration gives rho_a's inverse-dynamics part,
    a closed form on each contact's chain its contact part (:mod:`dynamics.kernels.contact`)."""
    cs = _contact_set(model, contacts)
    damping = _damping(damping)
    compile_notice(_k.constrained_so_chunk, "the contact dynamics second derivatives", 60)
    n, nc = model.nv, cs.size
    if mu is None:
        b = prepare(model, q=q, v=v, tau=tau)
        MU, rows = np.empty((0, n + nc)), n + nc
    else:
        b = prepare(model, sizes={"mu": (n + nc, "nv + nc")}, q=q, v=v, tau=tau, mu=mu)
        MU, rows = b["mu"], 1
    T = b.T
    first = [np.empty((T, n)), np.empty((T, nc)), np.empty((T, n, n)), np.empty((T, n, n)),
             np.empty((T, n, n)), np.empty((T, nc, n)), np.empty((T, nc, n)),
             np.empty((T, nc, n))]
    second = [np.empty((T, rows, n, n)) for _ in range(4)]
    status = np.empty(T, dtype=np.int64)
    run_in_chunks(_k.constrained_so_batch, _k.constrained_so_chunk,
                  (*model.kernel_args, cs.ints, cs.floats, b["q"], b["v"], b["tau"], damping, MU,
                   *first, *second, status), num_chunks(T))
    if mu is not None:
        second = [x[:, 0] for x in second]
    bad = status != _k.OK
    for x in first + second:
        x[bad] = np.nan
    return ContactSecondDerivatives(*b.unbatch((*first, status, *second)))


@dataclass
class ImpulseDerivatives:
    """The impact map and its derivatives at one knot (a batch adds a leading knot axis):
    v_plus (nv,), impulse (nc,), dv_dq, dv_dv (nv, nv) (of v+ in q and in the velocity v
    before the impact), dimpulse_dq, dimpulse_dv (nc, nv), ``status``; with ``order=2`` the
    second derivatives of the stacked output w = (v+, impulse) on (q, q) and (q, v), d2_dq2 and
    d2_dqdv, as tensors (nv + nc, nv, nv) or contracted with ``mu`` (nv, nv) (the (v, v) block
    is zero: w is linear in v at fixed q)."""

    v_plus: np.ndarray
    impulse: np.ndarray
    dv_dq: np.ndarray = None
    dv_dv: np.ndarray = None
    dimpulse_dq: np.ndarray = None
    dimpulse_dv: np.ndarray = None
    status: np.ndarray = None
    d2_dq2: np.ndarray = None
    d2_dqdv: np.ndarray = None


def holds(backend, contacts, damping) -> bool:
    """Whether ``backend`` (with ``contacts``: a ContactSet or None, and ``damping``) holds
    exactly the contacts ``contacts`` (a sequence; empty: none) with ``damping``: a backend's
    ``with_contacts`` returns itself then."""
    held = tuple(backend.contacts.contacts) if backend.contacts is not None else ()
    return tuple(contacts) == held and float(damping) == backend.damping


def _restitution(r):
    x = float(r)
    if not (np.isfinite(x) and 0.0 <= x <= 1.0):
        raise ValueError(f"restitution: expected a number in [0, 1]; got {r!r}")
    return x


def without_gravity(model):
    """``model.kernel_args`` with the gravity zeroed (the impact map's inverse dynamics at rest
    is M dv), made once per model."""
    args = getattr(model, "_kernel_args_without_gravity", None)
    if args is None:
        ints, floats = model.kernel_args
        floats = floats.copy()
        _k.zero_gravity(ints, floats)
        args = model._kernel_args_without_gravity = (ints, floats)
    return args


def impulse_dynamics(model, contacts, q, v, restitution=0.0, damping=0.0, order=0, mu=None):
    """The impact map on ``contacts`` (:mod:`dynamics.contacts`) at one knot or a batch:
    ``order`` 0 gives (v_plus, impulse, status); 1 an :class:`ImpulseDerivatives` with the first
    derivatives (Pinocchio's ``computeImpulseDynamicsDerivatives``: its ``ddq_dv`` is our
    ``dv_dv - I``); 2 adds the second derivatives, contracted with ``mu`` (nv + nc,) when given.
    ``restitution`` r in [0, 1]; ``damping`` on J M^-1 J^T as for the contact dynamics."""
    cs = _contact_set(model, contacts)
    damping, restitution = _damping(damping), _restitution(restitution)
    check_order_0_to_2(order)
    compile_notice(_k.impulse_chunk, "the impact map and its derivatives", 60)
    n, nc = model.nv, cs.size
    if mu is not None and order != 2:
        raise ValueError("mu: a co-state contracts the second derivatives (order=2)")
    if mu is None:
        b = prepare(model, q=q, v=v)
        MU, rows = np.empty((0, n + nc)), n + nc
    else:
        b = prepare(model, sizes={"mu": (n + nc, "nv + nc")}, q=q, v=v, mu=mu)
        MU, rows = b["mu"], 1
    T = b.T
    k = (0, 0) if order == 0 else (n, nc)
    first = [np.empty((T, n)), np.empty((T, nc)), np.empty((T, k[0], n)), np.empty((T, k[0], n)),
             np.empty((T, k[1], n)), np.empty((T, k[1], n))]
    r2 = rows if order == 2 else 0
    second = [np.empty((T, r2, n, n)) for _ in range(2)]
    status = np.empty(T, dtype=np.int64)
    run_in_chunks(_k.impulse_batch, _k.impulse_chunk,
                  (*without_gravity(model), cs.ints, cs.impulse_floats, b["q"], b["v"],
                   restitution, damping, np.int64(order), MU, *first, *second, status),
                  num_chunks(T))
    bad = status != _k.OK
    for x in first + second:
        x[bad] = np.nan
    if order == 0:
        return b.unbatch((first[0], first[1], status))
    if order == 1:
        return ImpulseDerivatives(*b.unbatch((*first, status)))
    if mu is not None:
        second = [x[:, 0] for x in second]
    return ImpulseDerivatives(*b.unbatch((*first, status, *second)))


class ContactDynamics(RobotConfigurationSpace):
    """The contact dynamics of ``model`` with the contacts ``contacts`` (a list of
    :class:`~dynamics.contacts.Contact3D` or a :class:`~dynamics.contacts.ContactSet`) as a
    Dynamics backend: ``aba`` is the constrained forward dynamics, ``fd_derivatives`` its first
    and second derivatives; ``forces`` and ``derivatives`` give the contact forces too, and
    ``impulse_derivatives`` the impact map on the contacts.
    ``damping``: added to J M^-1 J^T (Crocoddyl's ``JMinvJt_damping``).  The actuation is the
    problem's (``ddp.ShootingProblem(..., actuation=B)``), as for every backend; a
    ShootingProblem runs it in its compiled passes as one phase on these contacts."""

    compiled = True  # the solver runs it in its compiled passes, as one phase on its contacts

    def __init__(self, model, contacts, damping: float = 0.0):
        self.model = robot_model(model, "ContactDynamics")
        self.nq, self.nv = model.nq, model.nv
        self.contacts = _contact_set(model, contacts)
        self.damping = _damping(damping)

    def __repr__(self):
        return f"ContactDynamics({self.model!r}, {self.contacts!r})"

    def aba(self, q, v, tau):
        return constrained_dynamics(self.model, self.contacts, q, v, tau, self.damping)[0]

    def forces(self, q, v, tau):
        """The contact forces lam (nc,) or (T, nc)."""
        return constrained_dynamics(self.model, self.contacts, q, v, tau, self.damping)[1]

    def derivatives(self, q, v, tau) -> ContactDerivatives:
        return constrained_derivatives(self.model, self.contacts, q, v, tau, self.damping)

    def contact_derivatives(self, q, v, tau, order: int = 1) -> ContactDerivatives:
        """The protocol's contact dynamics (:mod:`dynamics.protocol`): ``order`` 0 a and lam
        (the derivatives None), 1 :meth:`derivatives`, 2 the tensors of (a, lam) too
        (:func:`constrained_second_derivatives`)."""
        check_order_0_to_2(order)
        if order == 0:
            a, lam, status = constrained_dynamics(self.model, self.contacts, q, v, tau,
                                                  self.damping)
            return values_only(a, lam, status)
        if order == 1:
            return self.derivatives(q, v, tau)
        return constrained_second_derivatives(self.model, self.contacts, q, v, tau,
                                              damping=self.damping)

    def impulse_derivatives(self, q, v, restitution: float = 0.0, order: int = 1):
        """The impact map on the contacts (v the velocity before it) as an
        :class:`ImpulseDerivatives` (:func:`impulse_dynamics`; ``order`` 0 its values)."""
        if order == 0:
            v_plus, imp, status = impulse_dynamics(self.model, self.contacts, q, v, restitution,
                                                   self.damping)
            return ImpulseDerivatives(v_plus, imp, status=status)
        return impulse_dynamics(self.model, self.contacts, q, v, restitution, self.damping,
                                order)

    def rnea(self, q, v, a):
        raise NotImplementedError("ContactDynamics: the contact forces are not determined by "
                                  "(q, v, a) alone")

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        """The derivatives of a (the protocol's): ``order=2`` adds the second derivatives of a,
        as (nv, nv, nv) tensors or contracted with the co-state ``lam`` (nv,) of a."""
        if order not in (1, 2):
            raise ValueError(f"order: expected 1 or 2; got {order!r}")
        if order == 1:
            d = self.derivatives(q, v, tau)
            return FDDerivatives(d.a, d.da_dq, d.da_dv, d.da_dtau)
        n = self.nv
        mu = None
        if lam is not None:
            b = prepare(self.model, lam=lam)
            mu = np.zeros((b.T, n + self.contacts.size))
            mu[:, :n] = b["lam"]
            mu = b.unbatch(mu)
        d = constrained_second_derivatives(self.model, self.contacts, q, v, tau, mu,
                                           self.damping)
        second = (d.d2_dq2, d.d2_dv2, d.d2_dqdv, d.d2_dtaudq)
        if lam is None:
            second = tuple(x[..., :n, :, :] for x in second)
        return FDDerivatives(d.a, d.da_dq, d.da_dv, d.da_dtau, *second)

    def id_derivatives(self, q, v, a, order=1):
        raise NotImplementedError("ContactDynamics has no inverse dynamics")
