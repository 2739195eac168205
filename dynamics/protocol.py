"""The ``Dynamics`` protocol: what a solver needs from a system, whatever computes it.

Backends: :class:`AnalyticalDynamics` (our compiled kernels), the CasADi and finite-difference
backends, or a user's own system (:class:`EuclideanDynamics` for systems on a vector space).

Every method takes one point or a batch with a leading knot axis, like the kernels.  Shapes for
one point (n = nv):

==========================================  ================================================
``integrate(q, dq)``                        q (+) dq, (nq,)
``difference(q0, q1)``                      q1 (-) q0, (n,)
``integrate_jacobians(q, dq)``              (J_q, J_dq), each (n, n): tangent-space
                                            Jacobians of q (+) dq w.r.t. q and dq
``difference_jacobians(q0, q1)``            (J_q0, J_q1), each (n, n)
``integrate_second_order(q, w, hessian)``   :class:`~dynamics.lie.IntegrateExpansion` of a
                                            batch: Jacobians of ``(q (+) dq) (+) (w + dw)``
                                            and, on Lie-group joints, its Hessians
``aba(q, v, tau)`` / ``rnea(q, v, a)``      (n,)
``fd_derivatives(q, v, tau, order, lam)``   :class:`~dynamics.results.FDDerivatives`
``id_derivatives(q, v, a, order)``          :class:`~dynamics.results.IDDerivatives`
==========================================  ================================================

``order=1`` leaves the second-order fields ``None``; ``order=2`` fills them: (n, n, n) tensors, or
(n, n) matrices contracted with the co-state ``lam`` over the output index when ``lam`` is given.

Besides its methods a backend declares what a solver may rely on:

* ``model``: the :class:`~dynamics.model.RobotModel` whose configuration manifold it lives on
  (None for a system on a vector space, nq = nv);
* ``compiled``: True when the analytical kernels compute exactly this backend's dynamics on
  ``model``, so that a solver may evaluate whole trajectories (rollouts, derivatives of every
  knot) in single compiled calls instead of through these methods;
* ``check_configuration(q, name)``: q (nq,) or (T, nq) as floats, or ValueError naming ``name``
  (finite values; on a robot, unit quaternions and unit complex numbers);
* what else it can do, as typed sub-protocols that :func:`capabilities` resolves once (by their members, so that
  a backend need not inherit them) (a
  solver reads the :class:`Capabilities` value, never the backend's attributes):

  - :class:`HoldsContacts`: ``contacts``, the :class:`~dynamics.contacts.ContactSet` that the
    dynamics holds fixed (:class:`~dynamics.contact_dynamics.ContactDynamics`, or the CasADi and
    finite-difference backends built with ``contacts=``; None: none), and its ``damping``;
  - :class:`StepsPhases`, for problems of phases through this protocol (:mod:`ddp.phases`; the
    CasADi and finite-difference backends): ``with_contacts(contacts, damping)``, the same
    backend on another contact set (none: free flight), and
    ``impulse_derivatives(q, v, restitution, order)``, the impact map on its contacts as a
    :class:`~dynamics.contact_dynamics.ImpulseDerivatives` (``order`` 0: v+ and the impulse; 1:
    their first derivatives; 2: the second-derivative tensors of (v+, impulse) in (q, q) and
    (q, v));
  - :class:`GivesContactForces`, for costs on the contact forces:
    ``contact_derivatives(q, v, tau, order)``, the contact dynamics' acceleration and forces as
    a :class:`~dynamics.contact_dynamics.ContactDerivatives` (``order`` 0: a and lam; 1: their
    first derivatives; 2: a :class:`~dynamics.contact_dynamics.ContactSecondDerivatives` with
    the tensors of (a, lam));
  - :class:`RollsOut`: ``rollout_function(T, dt, B, u_min, u_max)``, a compiled closed-loop
    rollout of a system on a vector space
    (:meth:`~dynamics.symbolic_system.SymbolicSystem.rollout_function`; None: the solver steps
    knot by knot through ``aba``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from . import algorithms as _alg
from .inputs import prepare
from .lie import IntegrateExpansion, integrate_second_order
from .model import RobotModel
from .results import FDDerivatives, IDDerivatives


@runtime_checkable
class Dynamics(Protocol):
    nq: int
    nv: int
    model: object
    compiled: bool

    def check_configuration(self, q, name: str = "q"): ...

    def integrate(self, q, dq): ...

    def difference(self, q0, q1): ...

    def integrate_jacobians(self, q, dq): ...

    def difference_jacobians(self, q0, q1): ...

    def integrate_second_order(self, q, w, hessian: bool = True) -> IntegrateExpansion: ...

    def aba(self, q, v, tau): ...

    def rnea(self, q, v, a): ...

    def fd_derivatives(self, q, v, tau, order: int = 1, lam=None) -> FDDerivatives: ...

    def id_derivatives(self, q, v, a, order: int = 1) -> IDDerivatives: ...


@runtime_checkable
class HoldsContacts(Protocol):
    """A backend whose dynamics holds a contact set fixed (module docstring)."""

    contacts: object
    damping: float


@runtime_checkable
class StepsPhases(Protocol):
    """A backend that steps a problem's phases through the protocol: itself on another contact
    set, and the impact map on its contacts (module docstring)."""

    def with_contacts(self, contacts, damping: float = 0.0): ...

    def impulse_derivatives(self, q, v, restitution: float = 0.0, order: int = 1): ...


@runtime_checkable
class GivesContactForces(Protocol):
    """A backend that gives its contact forces and their derivatives (module docstring)."""

    def contact_derivatives(self, q, v, tau, order: int = 1): ...


@runtime_checkable
class RollsOut(Protocol):
    """A backend with a compiled closed-loop rollout (module docstring)."""

    rollout_function: object


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do beyond the :class:`Dynamics` methods, resolved once
    (:func:`capabilities`).

    ``compiled``: the analytical kernels compute its dynamics (whole trajectories in single
    compiled calls); ``contacts``, ``damping``: the contact set it holds fixed (None: none) and
    the KKT damping; ``phases``: it steps phases through the protocol (:class:`StepsPhases`);
    ``contact_forces``: it gives the contact forces and their derivatives
    (:class:`GivesContactForces`); ``rollout``: it has a compiled rollout (:class:`RollsOut`,
    not None)."""

    compiled: bool
    contacts: object = None
    damping: float = 0.0
    phases: bool = False
    contact_forces: bool = False
    rollout: bool = False

    @property
    def contact_model(self) -> bool:
        """Whether a problem on this backend may have contacts: the analytical kernels, or
        phases stepped through the protocol."""
        return self.compiled or self.phases


def _offers(dynamics, protocol) -> bool:
    """Whether ``dynamics`` has every member of ``protocol``: its methods callable, its other
    attributes readable (a member that raises on access, or a method set to None, is absent)."""
    for name in protocol.__dict__.get("__annotations__", {}):
        try:
            getattr(dynamics, name)
        except AttributeError:
            return False
    for name, member in vars(protocol).items():
        if callable(member) and not name.startswith("_"):
            try:
                if not callable(getattr(dynamics, name)):
                    return False
            except AttributeError:
                return False
    return True


def capabilities(dynamics) -> Capabilities:
    """The :class:`Capabilities` of the backend ``dynamics`` (checked by
    :func:`check_dynamics`)."""
    held = _offers(dynamics, HoldsContacts)
    return Capabilities(
        compiled=bool(dynamics.compiled),
        contacts=dynamics.contacts if held else None,
        damping=float(dynamics.damping) if held and dynamics.contacts is not None else 0.0,
        phases=_offers(dynamics, StepsPhases),
        contact_forces=_offers(dynamics, GivesContactForces),
        rollout=_offers(dynamics, RollsOut) and dynamics.rollout_function is not None)


def _check_order(order):
    if order not in (1, 2):
        raise ValueError(f"order: expected 1 or 2; got {order!r}")


class RobotConfigurationSpace:
    """``integrate`` / ``difference`` and their Jacobians on the configuration space of
    ``self.model`` (a RobotModel): what every robot backend shares."""

    model = None
    compiled = False
    contacts = None  # the contacts held fixed (dynamics.contact_dynamics.ContactDynamics)
    damping = 0.0  # their KKT damping

    def check_configuration(self, q, name="q"):
        return self.model.check_configuration(q, name)

    def integrate(self, q, dq):
        return self.model.integrate(q, dq)

    def difference(self, q0, q1):
        return self.model.difference(q0, q1)

    def integrate_jacobians(self, q, dq):
        return _pin_jacobians(self.model, "dIntegrate", q, dq)

    def difference_jacobians(self, q0, q1):
        return _pin_jacobians(self.model, "dDifference", q0, q1)

    def integrate_second_order(self, q, w, hessian=True):
        return integrate_second_order(self.model, q, w, hessian)


def check_dynamics(dynamics, name: str = "dynamics"):
    """``dynamics`` if it follows the :class:`Dynamics` protocol, else TypeError naming
    ``name`` and what it got (a RobotModel: wrap it in a backend)."""
    if isinstance(dynamics, RobotModel):
        raise TypeError(f"{name}: expected a Dynamics backend; got a RobotModel (wrap it: "
                        f"dynamics.AnalyticalDynamics(model))")
    if not isinstance(dynamics, Dynamics):
        raise TypeError(f"{name}: expected a Dynamics backend (dynamics.AnalyticalDynamics, "
                        f"CasadiDynamics, FiniteDifferenceDynamics, ContactDynamics, "
                        f"SymbolicSystem or an EuclideanDynamics subclass); got "
                        f"{type(dynamics).__name__}")
    return dynamics


def robot_model(model, who: str):
    """``model`` if it is a RobotModel, else TypeError naming the backend ``who`` and what it
    got (a robot name, a Pinocchio model, a user system)."""
    if isinstance(model, RobotModel):
        return model
    hint = {str: f" (load it: dynamics.robots.load({model!r}))",
            EuclideanDynamics: " (a user system: pass it to ShootingProblem directly, or to "
                               "FiniteDifferenceDynamics for derivatives of its aba)"}
    extra = next((h for t, h in hint.items() if isinstance(model, t)), "")
    if type(model).__name__ == "Model" and type(model).__module__.startswith("pinocchio"):
        extra = " (wrap it: dynamics.RobotModel.from_pinocchio(model))"
    raise TypeError(f"{who}: model: expected a dynamics.RobotModel; got "
                    f"{type(model).__name__}{extra}")


class AnalyticalDynamics(RobotConfigurationSpace):
    """The analytical backend: IDSVA / FDSVA (first order), IDSVA-SO / FDSVA-SO (second order)
    on a :class:`~dynamics.model.RobotModel`, batched and parallel over knots."""

    compiled = True

    def __init__(self, model):
        self.model = robot_model(model, "AnalyticalDynamics")
        self.nq = model.nq
        self.nv = model.nv

    def __repr__(self):
        return f"AnalyticalDynamics({self.model!r})"

    def aba(self, q, v, tau):
        return _alg.aba(self.model, q, v, tau)

    def rnea(self, q, v, a):
        return _alg.rnea(self.model, q, v, a)

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        _check_order(order)
        if order == 1:
            if lam is not None:
                raise ValueError("lam: only used with order=2")
            return _alg.fd_derivatives(self.model, q, v, tau)
        return _alg.fd_second_derivatives(self.model, q, v, tau, lam=lam)

    def id_derivatives(self, q, v, a, order=1):
        _check_order(order)
        if order == 1:
            return _alg.id_derivatives(self.model, q, v, a)
        return _alg.id_second_derivatives(self.model, q, v, a)


def _pin_jacobians(model, which, x0, x1):
    """Tangent-space Jacobians of pinocchio.integrate / pinocchio.difference (both arguments)."""
    import pinocchio as pin

    b = prepare(model, q=x0, dq=x1) if which == "dIntegrate" else prepare(model, q0=x0, q1=x1)
    A, B = (b["q"], b["dq"]) if which == "dIntegrate" else (b["q0"], b["q1"])
    fn = getattr(pin, which)
    J0 = np.empty((b.T, model.nv, model.nv))
    J1 = np.empty((b.T, model.nv, model.nv))
    for t in range(b.T):
        J0[t] = fn(model.pin_model, A[t], B[t], pin.ArgumentPosition.ARG0)
        J1[t] = fn(model.pin_model, A[t], B[t], pin.ArgumentPosition.ARG1)
    return b.unbatch((J0, J1))


class EuclideanDynamics:
    """Base class for a user-defined system on a vector space (nq = nv = n), written by hand.

    A subclass sets ``nq = nv = n`` and implements, for one point (q, v, tau each (n,)):

    * ``aba(q, v, tau)`` -> a (n,), the forward dynamics; the solver assumes a affine in tau
      (a = M(q)^-1 (tau - b(q, v)), every mechanical system);
    * ``fd_derivatives(q, v, tau, order=1, lam=None)`` -> an
      :class:`~dynamics.results.FDDerivatives`: a (n,), da_dq, da_dv, da_dtau (n, n); with
      ``order=2`` also d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq as (n, n, n) tensors
      (``T[i, j, k] = d/dx_k (da_i/dx_j)``), or, when ``lam`` (n,) is given, as (n, n) matrices
      contracted with it over the output index i.  The solver asks for the tensors (order 2,
      lam None) and never passes ``lam`` to a user system;
    * optionally ``rnea(q, v, a)`` (the torques of an acceleration: the quasi-static start;
      without it the solver starts from zero controls).

    This class supplies the vector-space operations and makes those methods accept batches with
    a leading knot axis by a Python loop over knots: simple, but the solver's rollouts then call
    ``aba`` knot by knot.  A system written in CasADi is faster and its derivatives exact:
    :class:`~dynamics.symbolic_system.SymbolicSystem` (a cart-pole: 3.4 ms per DDP iteration
    against 33 ms as a subclass of this class).  Check hand-written derivatives with
    :func:`dynamics.check_derivatives`.  Returned arrays of the wrong shape are named
    (method, field, expected and received shapes) before they reach compiled code.
    """

    nq: int
    nv: int
    model = None
    compiled = False
    rollout_function = None  # knot by knot through aba (SymbolicSystem compiles it)

    _BATCHED = ("aba", "rnea", "fd_derivatives", "id_derivatives")

    def check_configuration(self, q, name="q"):
        q = np.asarray(q, dtype=float)
        if q.ndim not in (1, 2) or q.shape[-1] != self.nq:
            raise ValueError(f"{name}: expected shape ({self.nq},) or (T, {self.nq}); got shape "
                             f"{q.shape}")
        if not np.all(np.isfinite(q)):
            raise ValueError(f"{name}: expected finite values")
        return q

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls._BATCHED:
            if name in cls.__dict__:
                setattr(cls, name, _batching(cls.__dict__[name]))

    def integrate(self, q, dq):
        return np.asarray(q, dtype=float) + np.asarray(dq, dtype=float)

    def difference(self, q0, q1):
        return np.asarray(q1, dtype=float) - np.asarray(q0, dtype=float)

    def integrate_jacobians(self, q, dq):
        I = self._eye_like(q)
        return I, I.copy()

    def difference_jacobians(self, q0, q1):
        I = self._eye_like(q0)
        return -I, I.copy()

    def integrate_second_order(self, q, w, hessian=True):
        """The trivial expansion of a vector space: identity Jacobians, no Lie-group block."""
        I = self._eye_like(np.atleast_2d(q))
        none = np.zeros(0, dtype=np.int64)
        return IntegrateExpansion(I, I.copy(), none, none, np.zeros((I.shape[0], 0, 0, 0, 0)))

    def _eye_like(self, q):
        q = np.asarray(q)
        I = np.eye(self.nv)
        return np.broadcast_to(I, (q.shape[0], self.nv, self.nv)).copy() if q.ndim == 2 else I

    def rnea(self, q, v, a):
        raise NotImplementedError(f"{type(self).__name__} does not implement rnea")

    def id_derivatives(self, q, v, a, order=1):
        raise NotImplementedError(f"{type(self).__name__} does not implement id_derivatives")


def _batching(fn):
    """Wrap a single-point method so that it also takes batches (leading knot axis)."""
    import functools

    @functools.wraps(fn)
    def wrapper(self, x, *args, **kwargs):
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            return fn(self, x, *args, **kwargs)
        lam = kwargs.pop("lam", None)
        outs = []
        for t in range(x.shape[0]):
            extra = {} if lam is None else {"lam": np.asarray(lam)[t]}
            outs.append(fn(self, x[t], *(np.asarray(y)[t] for y in args), **kwargs, **extra))
        if isinstance(outs[0], (FDDerivatives, IDDerivatives)):
            fields = {k: (None if getattr(outs[0], k) is None
                          else np.stack([getattr(o, k) for o in outs]))
                      for k in type(outs[0]).__dataclass_fields__}
            return type(outs[0])(**fields)
        return np.stack(outs)

    return wrapper
