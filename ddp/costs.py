"""Costs of a shooting problem, with exact gradients and Hessians in tangent coordinates.

Conventions as in Crocoddyl, so that a problem written in both has the same optimum: a cost is
``1/2 sum_i w_i r_i^2`` of a residual r with weights w (a scalar or one weight per residual entry);
the problem multiplies running costs by dt, not the terminal cost.  Derivatives are w.r.t. the
tangent state ``dx = (dq, dv)`` (size 2 nv, q perturbed as ``q (+) dq``) and u.

Two mechanisms, one for speed and one for generality:

* **Built-in costs** (:class:`StateRegularization`, :class:`ControlRegularization`,
  :class:`FramePlacement`, :class:`FrameTranslation`, :class:`FrameRotation`,
  :class:`FrameVelocity`) are terms of a
  compiled :class:`CostProgram` (:mod:`ddp.kernels.costs`): value, gradient, exact Hessian
  (including the second-order terms of forward kinematics and of log6 / log3) and Gauss-Newton
  Hessian of all knots in one parallel call.
* **Residuals written in CasADi** (:class:`ResidualCost`): a subclass implements
  ``residual(q, dq, v, u)`` as an SX expression of the state perturbed on the manifold
  ``(q (+) dq, v, u)``; value, gradient, exact Hessian (symmetric: a single perturbation) and
  Gauss-Newton Hessian ``J_r^T W J_r`` come from CasADi AD.  This is how users write their own
  residuals (see :class:`ResidualCost`); every built-in cost also keeps its residual written this
  way, which the tests use as the reference (:meth:`ResidualCost.casadi_calc_diff`).

:class:`Sum` adds costs of both kinds: the built-in terms run as one program, the others through
CasADi.
"""

from __future__ import annotations

import copy
import weakref

import casadi as cs
import numpy as np

from dynamics import lie, robots
from dynamics import protocol as _dyn_protocol
from dynamics.model import FF, HEL, PRI, REV, SPH, RobotModel
from dynamics.symbolic import SymbolicTree, frame_velocity, world_placements

from .kernels import costs as _k
from .kernels import num_chunks, run_in_chunks
from .kernels.records import CostDerivatives, PackedModel, Program, empty_forces


def _weights(weight, size, name):
    w = np.broadcast_to(np.asarray(weight, dtype=float), (size,)) if np.ndim(weight) == 0 \
        else np.asarray(weight, dtype=float)
    if w.shape != (size,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name}: expected a non-negative scalar or {size} non-negative weights; "
                         f"got {weight!r}")
    return w.copy()


def _finite(name, value, shape, expected):
    """``value`` as a float array of ``shape`` with finite entries, else ValueError naming
    ``name`` and what was ``expected``."""
    a = np.asarray(getattr(value, "vector", value), dtype=float)
    if a.shape != shape or not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: expected {expected}; got {value!r}")
    return a.copy()


def _position(cost, position):
    return _finite("position", position, (3,), "3 finite values")


def _rotation(name, R, expected="a 3x3 rotation matrix"):
    """``R`` if it is a rotation matrix (orthonormal to 1e-9, determinant +1), else ValueError."""
    if R.shape != (3, 3) or not np.all(np.isfinite(R)) \
            or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
        raise ValueError(f"{name}: expected {expected}; got {R!r}")
    return R


def check_hessians(hessians):
    if hessians not in ("exact", "gauss-newton"):
        raise ValueError(f"hessians: expected 'exact' or 'gauss-newton'; got {hessians!r}")


def _knots(xs, us, nu):
    xs = np.atleast_2d(np.asarray(xs, dtype=float))
    T = xs.shape[0]
    us = np.zeros((T, nu)) if us is None else np.atleast_2d(np.asarray(us, dtype=float))
    return xs, us, T


class QuadraticBarrier:
    """An activation: ``1/2 sum_i w_i (r_i - clip(r_i, lower_i, upper_i))^2``, zero while the
    residual stays within the bounds (Crocoddyl's ``ActivationModelQuadraticBarrier`` with
    ``ActivationBounds(lower, upper)``, weighted).  ``lower``, ``upper``: scalars or one bound
    per residual entry (+-inf: none).  Give it to a built-in cost as ``activation=``."""

    def __init__(self, lower, upper):
        lo, up = (np.atleast_1d(np.asarray(b, dtype=float)) for b in (lower, upper))
        try:
            lo, up = np.broadcast_arrays(lo, up)
        except ValueError:
            raise ValueError(f"QuadraticBarrier: lower and upper must have the same size; got "
                             f"{lo.size} and {up.size}") from None
        if np.any(np.isnan(lo)) or np.any(np.isnan(up)):
            raise ValueError("QuadraticBarrier: expected bounds (+-inf for none); got NaN")
        bad = np.flatnonzero(lo > up)
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"QuadraticBarrier: lower bound above upper bound at entry {i} "
                             f"({lo[i]} > {up[i]})")
        self.lower, self.upper = lo.copy(), up.copy()

    def bounds(self, nr, name):
        """(lower, upper), each (nr,), for a residual of size nr."""
        try:
            return (np.broadcast_to(self.lower, (nr,)).copy(),
                    np.broadcast_to(self.upper, (nr,)).copy())
        except ValueError:
            raise ValueError(f"{name} activation: expected bounds for its {nr} residual entries; "
                             f"got {self.lower.size}") from None

    def __repr__(self):
        return f"QuadraticBarrier({self.lower.tolist()}, {self.upper.tolist()})"


class SecondOrderCone:
    """An activation: ``1/2 w_0 dist(r, K)^2`` for the second-order cone
    ``K = {r : |(r_0, r_1)| <= mu r_2}`` of a residual of three entries (a contact force in its
    surface's axes: tangential, tangential, normal), zero inside the cone, with the exact
    projection onto it (no facets: the friction cone itself).  ``mu``: the friction
    coefficient, > 0.  Give it to :class:`ContactForce` (or any cost of 3 residual entries on a
    contact force) as ``activation=``, or as ``cone=`` to a :class:`~ddp.constraints.Constraint`.
    """

    def __init__(self, mu):
        if isinstance(mu, bool) or not isinstance(mu, (int, float, np.floating, np.integer)) \
                or not (np.isfinite(mu) and mu > 0):
            raise ValueError(f"mu: expected a friction coefficient > 0; got {mu!r}")
        self.mu = float(mu)

    def floats(self, shift=None) -> np.ndarray:
        """Its floats in a compiled program: the shift s of ``dist(r + s, K)`` (an augmented
        Lagrangian's lam / mu; zero for a cost), mu, two unused."""
        return np.concatenate([np.zeros(3) if shift is None else shift, [self.mu, 0.0, 0.0]])

    def project(self, z):
        """The projection of z (..., 3) onto the cone (NumPy): z inside it, 0 in its polar
        cone, else the nearest point of its boundary, on the ray of z's tangential direction."""
        z = np.asarray(z, dtype=float)
        s, n = np.linalg.norm(z[..., :2], axis=-1), z[..., 2]
        mu = self.mu
        c = (mu * s + n) / (1 + mu * mu)
        unit = z[..., :2] / np.where(s > 0, s, 1.0)[..., None]
        out = np.concatenate([(c * mu)[..., None] * unit, c[..., None]], axis=-1)
        out = np.where((s <= mu * n)[..., None], z, out)
        return np.where((mu * s <= -n)[..., None], 0.0, out)

    def distance_squared(self, r):
        """dist(r, K)^2 of residuals r (..., 3) (NumPy)."""
        r = np.asarray(r, dtype=float)
        s, n = np.linalg.norm(r[..., :2], axis=-1), r[..., 2]
        mu = self.mu
        between = np.maximum(s - mu * n, 0.0) ** 2 / (1 + mu * mu)
        return np.where(mu * s <= -n, s * s + n * n, between)

    def __repr__(self):
        return f"SecondOrderCone({self.mu:g})"


class Cost:
    """Base class: ``calc(xs, us)`` values (T,) and ``calc_diff(xs, us, hessians)``
    :class:`CostDerivatives`; xs (T, nx) with x = (q, v), us (T, nu) (zeros for a terminal cost).
    ``hessians``: "exact" or "gauss-newton"."""

    nq: int
    nv: int
    nu: int

    def calc(self, xs, us):
        raise NotImplementedError

    def calc_diff(self, xs, us, hessians="exact") -> CostDerivatives:
        raise NotImplementedError

    def bind(self, nq, nv, nu, model=None, contacts=None) -> "Cost":
        """This cost for a problem's (nq, nv, nu) on ``model`` (its RobotModel, or None for a
        vector space), at the knots whose contacts are ``contacts`` (a ContactSet or None): a
        copy where it must change (the user's cost objects are not changed), ValueError where
        it does not fit.  Done by the problem (:func:`bind`)."""
        return self


class ResidualCost(Cost):
    """``1/2 sum_i w_i r_i(q (+) dq, v, u)^2`` of a residual written in CasADi.

    Subclass it and implement ``residual(q, dq, v, u)`` returning an SX column vector of size
    ``nr``, where q (nq), dq (nv), v (nv) and u (nu) are SX symbols; write the configuration
    dependence through ``q (+) dq`` (for a vector space, ``q + dq``; :mod:`dynamics.lie` and
    :mod:`dynamics.symbolic` have Exp/Log and forward kinematics in SX).  For example, the
    residual ``[sin q_0, 1 + cos q_0, v_0]`` of a pendulum swing-up (zero upright and at rest, at
    q = pi for ``robots.load("pendulum")``, which hangs at q = 0)::

        class Upright(ddp.ResidualCost):
            def __init__(self, weight):
                super().__init__(nq=1, nv=1, nu=1, weight=weight, nr=3, name="Upright")

            def residual(self, q, dq, v, u):
                th = q[0] + dq[0]
                return casadi.vertcat(casadi.sin(th), 1 + casadi.cos(th), v[0])

    Value, gradient, exact Hessian and Gauss-Newton Hessian of all knots come from one mapped
    CasADi call (values alone, as in a line search, from a mapped function of the value only),
    evaluated through CasADi's ``FunctionBuffer`` on the NumPy arrays themselves.  ``nu`` may be
    left 0: the problem sizes the cost for its controls.
    """

    #: whether a :class:`SecondOrderCone` can activate its residual (the contact forces' only:
    #: the compiled force term applies it)
    TAKES_CONE = False

    def __init__(self, nq, nv, nu, weight, nr, name, activation=None):
        self.nq, self.nv, self.nu, self.nr = int(nq), int(nv), int(nu), int(nr)
        self.weight = _weights(weight, self.nr, f"{name} weight")
        if activation is not None and not isinstance(activation, (QuadraticBarrier,
                                                                  SecondOrderCone)):
            raise ValueError(f"activation: expected None (1/2 sum w r^2), a "
                             f"ddp.QuadraticBarrier or a ddp.SecondOrderCone; got {activation!r}")
        if isinstance(activation, SecondOrderCone) and not self.TAKES_CONE:
            raise ValueError(f"activation: a SecondOrderCone acts on a contact force's residual "
                             f"(ddp.ContactForce); {name} is not one")
        if isinstance(activation, SecondOrderCone) and self.nr != 3:
            raise ValueError(f"activation: a SecondOrderCone acts on 3 residual entries "
                             f"(tangential, tangential, normal); {name} has {self.nr}")
        #: None, or the (lower, upper) bounds of a quadratic barrier on the residual
        self.bounds = (activation.bounds(self.nr, name)
                       if isinstance(activation, QuadraticBarrier) else None)
        #: None, or the :class:`SecondOrderCone` of the residual
        self.cone = activation if isinstance(activation, SecondOrderCone) else None
        self._fn = None
        self._maps = {}
        #: where this term's weights and parameters sit in compiled programs (built-in costs):
        #: (weak reference to the floats, weight offset or -1, parameter offset)
        self._slots = []
        #: this cost and its bound copies (weak references): an assignment reaches them all
        self._family = [weakref.ref(self)]
        self._slots_ready = True

    def residual(self, q, dq, v, u):
        raise NotImplementedError

    @property
    def activation(self):
        """What the compiled program packs: None (quadratic), the barrier's (lower, upper) or
        the :class:`SecondOrderCone`."""
        return self.cone if self.cone is not None else self.bounds

    def bind(self, nq, nv, nu, model=None, contacts=None):
        """:meth:`Cost.bind`: a residual sized for (nq, nv) fits only that state; costs built
        without knowing nu (state and frame costs default to nu = 0) get the control dimension
        here."""
        if (self.nq, self.nv) != (nq, nv):
            raise ValueError(f"{type(self).__name__}: sized for nq={self.nq}, nv={self.nv}; "
                             f"the problem has nq={nq}, nv={nv}")
        if self.nu == nu:
            return self
        return self.copy_with(nu=int(nu))

    def copy_with(self, **changes):
        """A copy with some attributes changed (no setter checks: a problem's own copy), its
        CasADi functions and program rebuilt on use; an assignment to this cost's references
        reaches it too (:class:`BuiltinCost`)."""
        c = copy.copy(self)
        c.__dict__.update(_fn=None, _maps={}, _program=None, _slots=self._slots,
                          _family=self._family, **changes)
        self._family.append(weakref.ref(c))
        return c

    def __getstate__(self):  # the mapped functions' buffers do not pickle: rebuilt on use
        state = dict(self.__dict__)
        state["_fn"], state["_maps"] = None, {}
        state["_slots"], state["_family"] = [], []  # weak references: this process's
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__["_family"] = [weakref.ref(self)]

    def _function(self):
        """The CasADi functions (q, v, u) -> (l, g, H, GN) and (q, v, u) -> l of one knot."""
        if self._fn is None:
            q, dq = cs.SX.sym("q", self.nq), cs.SX.sym("dq", self.nv)
            v, u = cs.SX.sym("v", self.nv), cs.SX.sym("u", self.nu)
            r = self.residual(q, dq, v, u)
            if self.bounds is not None:  # the barrier: r - clip(r, lower, upper)
                lo, up = (cs.DM(b) for b in self.bounds)
                r = cs.fmax(r - up, 0) + cs.fmin(r - lo, 0)
            if self.cone is not None:
                raise ValueError(f"{type(self).__name__}: a SecondOrderCone activation runs "
                                 f"in the compiled programs only")
            w = cs.DM(self.weight)
            l = 0.5 * cs.dot(w * r, r)
            z = cs.vertcat(dq, v, u)
            H, g = cs.hessian(l, z)
            J = cs.jacobian(r, z)
            GN = cs.mtimes(J.T, cs.mtimes(cs.diag(w), J))
            outs = [cs.densify(o) for o in  # dense: the buffers receive every entry
                    cs.substitute([l, g, H, GN], [dq], [cs.SX.zeros(self.nv)])]
            # CasADi names start with a letter and have no double underscore
            name = "residual_" + "_".join(p for p in type(self).__name__.split("_") if p)
            self._fn = (cs.Function(name, [q, v, u], outs),
                        cs.Function(name + "_value", [q, v, u], outs[:1]))
        return self._fn

    def _eval(self, xs, us, k):
        """The first k of (l (T,), g (T, nz + nu), H, GN (T, nz + nu, nz + nu)) at every knot
        (k = 1: the value-only function).  CasADi reads and writes column-major: (T, n) C arrays
        are its (n, T) inputs, and its (nall, T nall) Hessian output is the (T, nall, nall) C
        array of the transposed blocks, so those are transposed back (a view)."""
        xs, us, T = _knots(xs, us, self.nu)
        nall = 2 * self.nv + self.nu
        outs = [np.empty(T), np.empty((T, nall)), np.empty((T, nall, nall)),
                np.empty((T, nall, nall))][:k]
        self._mapped((T, k == 1), lambda: self._function()[1 if k == 1 else 0], xs, us, outs)
        return [o.transpose(0, 2, 1) if o.ndim == 3 else o for o in outs], T

    def _mapped(self, key, function, xs, us, outs):
        """Run ``function()`` (a CasADi function of one knot's q, v, u, made once per ``key``)
        mapped over the knots of (xs, us) into the arrays ``outs``, through its buffer."""
        if key not in self._maps:
            self._maps[key] = function().map(len(us), "serial").buffer()
        buf, evaluate = self._maps[key]
        args = [np.ascontiguousarray(a) for a in (xs[:, :self.nq], xs[:, self.nq:], us)]
        for i, a in enumerate(args):
            buf.set_arg(i, memoryview(a))
        for i, o in enumerate(outs):
            buf.set_res(i, memoryview(o))
        evaluate()

    def residual_values(self, xs, us):
        """The residual r (T, nr) at T knots (no weight, no activation), by one mapped CasADi
        call (what a :class:`~ddp.constraints.Constraint` bounds)."""
        xs, us, T = _knots(xs, us, self.nu)

        def function():
            q, dq = cs.SX.sym("q", self.nq), cs.SX.sym("dq", self.nv)
            v, u = cs.SX.sym("v", self.nv), cs.SX.sym("u", self.nu)
            r = cs.densify(cs.substitute(self.residual(q, dq, v, u), dq, cs.SX.zeros(self.nv)))
            name = "r_" + "_".join(p for p in type(self).__name__.split("_") if p)
            return cs.Function(name, [q, v, u], [r])

        out = np.empty((T, self.nr))
        self._mapped(("residual", T), function, xs, us, [out])
        return out

    def casadi_calc(self, xs, us):
        """Values by CasADi (the reference for built-in costs)."""
        (l,), _ = self._eval(xs, us, 1)
        return l.ravel()

    def casadi_calc_diff(self, xs, us, hessians="exact"):
        """Derivatives by CasADi AD (the reference for built-in costs)."""
        check_hessians(hessians)
        (l, g, H, GN), T = self._eval(xs, us, 4)
        nz = 2 * self.nv
        H = H if hessians == "exact" else GN
        return CostDerivatives(l, g[:, :nz], g[:, nz:], H[:, :nz, :nz], H[:, :nz, nz:],
                               H[:, nz:, nz:])

    calc = casadi_calc
    calc_diff = casadi_calc_diff


def _model_of(dynamics_or_model):
    """The RobotModel behind a backend (or the model itself), None for a vector-space system."""
    if isinstance(dynamics_or_model, RobotModel):
        return dynamics_or_model
    # the Dynamics protocol declares the model (None: a vector space)
    return _dyn_protocol.check_dynamics(dynamics_or_model).model


class BuiltinCost(ResidualCost):
    """A built-in cost: one compiled term (:meth:`term`), plus its CasADi residual as the
    reference.  ``calc`` / ``calc_diff`` run the compiled kernel.

    Its references and weight can change after a problem is built (between the ticks of a
    receding horizon): assigning ``weight`` or one of :attr:`SETTABLE` (a frame target, a state
    or control reference) checks the value as the constructor does and writes the term's
    floats into every compiled program that holds it, so the next evaluation uses it (a few
    microseconds).  Assigning any other attribute raises AttributeError: the compiled problem
    would not read it."""

    model: RobotModel | None = None
    #: the references that can be assigned after construction (besides ``weight``), and how
    #: each is checked: {name: check(cost, value) -> the value to keep}
    SETTABLE: dict = {}

    def __setattr__(self, name, value):
        if name.startswith("_") or not self.__dict__.get("_slots_ready"):
            object.__setattr__(self, name, value)
            return
        if name == "weight":
            value = _weights(value, self.nr, f"{type(self).__name__} weight")
        elif name in self.SETTABLE:
            value = self.SETTABLE[name](self, value)
        else:
            settable = ", ".join(["weight", *self.SETTABLE])
            raise AttributeError(f"{type(self).__name__}.{name} is fixed once the cost is built "
                                 f"(the compiled programs would not see a change); settable: "
                                 f"{settable}")
        for ref in self._family:  # the copies the problems bound, and this cost
            member = ref()
            if member is None or (name == "weight" and member.__dict__.get("_parameters_only")):
                continue
            object.__setattr__(member, name, value)
            member.__dict__.update(_fn=None, _maps={})  # its CasADi functions read the value
        self._write_slots(weights=name == "weight")

    def _write_slots(self, weights):
        """Write this term's weights (``weights``) or parameters into every program holding
        it (:meth:`CostProgram.register`); slots of programs gone are dropped.  The weights are
        the term's own (a force cost not yet bound to its contacts has no term, but its weight
        reaches the problems that bound it)."""
        w, par = (self.weight, None) if weights else self.term()[2:]
        live = []
        for ref, wo, po in self._slots:
            floats = ref()
            if floats is None:
                continue
            live.append((ref, wo, po))
            if weights:
                if wo >= 0:
                    floats[wo:wo + len(w)] = w
            else:
                floats[po:po + len(par)] = par
        self._slots[:] = live

    def term(self):
        """(kind, frame joint or -1, weights, parameters) of :mod:`ddp.kernels.costs`."""
        raise NotImplementedError

    def kernel_model(self):
        return self.model if self.model is not None else robots.vector_space(self.nv)

    @property
    def program(self) -> CostProgram:
        """The compiled program of this one term, built once (a resized copy builds its own)."""
        if getattr(self, "_program", None) is None:
            self._program = CostProgram(self.kernel_model(), self.nu,
                                        [(*self.term(), self.activation)], [self])
        return self._program

    def calc(self, xs, us, forces=None):
        """Values (T,); ``forces``: the knots' :data:`~ddp.kernels.records.Forces` (for the
        costs on contact forces)."""
        return self.program.calc(xs, us, forces)

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        """Derivatives; with ``forces``, the gradients in the forces are added to their
        ``dl_dlam``."""
        return self.program.calc_diff(xs, us, hessians, forces)


def configuration_difference(model, q_ref, q, dq):
    """SX residual ``(q (+) dq) (-) q_ref`` joint by joint (Pinocchio's ``difference``)."""
    a = model.arrays
    parts = []
    for i in range(1, model.njoints):
        t = int(a.jtype[i])
        sq = slice(int(a.iq[i]), int(a.iq[i] + a.nqj[i]))
        sv = slice(int(a.iv[i]), int(a.iv[i] + a.nvj[i]))
        if t in (REV, PRI, HEL):
            parts.append(q[sq] + dq[sv] - q_ref[sq])
        else:
            rel = cs.mtimes([lie.inverse(t, lie.element(t, cs.DM(q_ref[sq]))),
                             lie.element(t, q[sq]), lie.exp_group(t, dq[sv])])
            parts.append(lie.log_group(t, rel))
    return cs.vertcat(*parts)


class StateRegularization(BuiltinCost):
    """Residual ``x (-) x_ref = (q (-) q_ref, v - v_ref)`` (size 2 nv).  ``dynamics``: a backend
    (or RobotModel) for the configuration manifold, or a vector-space system (nq = nv).
    ``weight``: a scalar or 2 nv weights (Crocoddyl's ``ActivationModelWeightedQuad``);
    ``activation``: a :class:`QuadraticBarrier` (state bounds: x_ref the neutral state at rest)."""

    def __init__(self, dynamics, x_ref, weight, nu=0, activation=None):
        self.model = _model_of(dynamics)
        nq, nv = int(dynamics.nq), int(dynamics.nv)
        self.nq, self.nv = nq, nv
        self.x_ref = self._state(x_ref)
        super().__init__(nq, nv, nu, weight, 2 * nv, "StateRegularization", activation)

    def _state(self, x_ref):
        n = self.nq + self.nv
        x_ref = _finite("x_ref", x_ref, (n,), f"{n} finite values (q, v)")
        if self.model is not None:
            self.model.check_configuration(x_ref[:self.nq], "x_ref")  # unit quaternions etc.
        return x_ref

    SETTABLE = {"x_ref": _state}

    def term(self):
        return _k.STATE, -1, self.weight, self.x_ref

    def residual(self, q, dq, v, u):
        q_ref, v_ref = self.x_ref[:self.nq], self.x_ref[self.nq:]
        if self.model is None:
            rq = q + dq - cs.DM(q_ref)
        else:
            rq = configuration_difference(self.model, q_ref, q, dq)
        return cs.vertcat(rq, v - cs.DM(v_ref))


class ControlRegularization(BuiltinCost):
    """Residual ``u - u_ref`` (u_ref defaults to zero); ``activation``: a
    :class:`QuadraticBarrier` (control bounds as a cost)."""

    def __init__(self, nu, weight, u_ref=None, nq=None, nv=None, activation=None):
        if isinstance(nu, bool) or not isinstance(nu, (int, np.integer)) or nu < 1:
            raise ValueError(f"nu: expected a positive integer (the number of controls); got "
                             f"{nu!r}")
        self.u_ref = np.zeros(nu) if u_ref is None else _finite(
            "u_ref", u_ref, (nu,), f"{nu} finite values")
        super().__init__(nq or 0, nv or 0, nu, weight, nu, "ControlRegularization", activation)

    SETTABLE = {"u_ref": lambda self, u: _finite("u_ref", u, (self.nu,),
                                                 f"{self.nu} finite values")}

    def bind(self, nq, nv, nu, model=None, contacts=None):
        """:meth:`Cost.bind`: a copy sized for a state with (nq, nv) on ``model``."""
        if self.nu != nu:
            raise ValueError(f"ControlRegularization: nu = {self.nu}, the problem has nu = {nu}")
        return self.copy_with(nq=int(nq), nv=int(nv), model=model)

    def term(self):
        return _k.CONTROL, -1, self.weight, self.u_ref

    def residual(self, q, dq, v, u):
        return u - cs.DM(self.u_ref)


class _FrameCost(BuiltinCost):
    def __init__(self, model, frame_name, weight, nr, nu, name, activation=None):
        self.model = _model_of(model)
        if self.model is None:
            raise ValueError(f"model: {name} needs a RobotModel (or a backend with .model)")
        self._joint, self._fR, self._fp = self.model.frame(frame_name, "frame_name")
        self.frame_name = frame_name
        self._tree = SymbolicTree(self.model)
        super().__init__(self.model.nq, self.model.nv, nu, weight, nr, name, activation)

    def _frame_parameters(self):
        return np.concatenate([self._fR.ravel(), self._fp])

    def frame_placement(self, q, dq):
        """oMf(q (+) dq) as (R, p) SX."""
        X = self._tree.placements(q, None, dq, exact=True)
        R, p = world_placements(self._tree, X)[self._joint]
        return cs.mtimes(R, cs.DM(self._fR)), p + cs.mtimes(R, cs.DM(self._fp))


class FramePlacement(_FrameCost):
    """Residual ``log6(placement^-1 oMf)`` (6, [lin, ang]) of a frame; ``placement`` a
    ``pinocchio.SE3`` or a 4x4 homogeneous matrix.  The rotation error must stay below pi
    (log6 is not differentiable at pi: a target rotated by exactly pi from the frame gives NaN,
    which the solver reports as "diverged")."""

    def __init__(self, model, frame_name, placement, weight, nu=0, activation=None):
        self.placement = self._placement(placement)
        super().__init__(model, frame_name, weight, 6, nu, "FramePlacement", activation)

    def _placement(self, placement):
        expected = "a pinocchio.SE3 or a 4x4 homogeneous matrix (a rotation, finite)"
        M = _finite("placement", getattr(placement, "homogeneous", placement), (4, 4), expected)
        if not np.array_equal(M[3], [0.0, 0.0, 0.0, 1.0]):
            raise ValueError(f"placement: expected {expected}; its last row is {M[3]}")
        _rotation("placement", M[:3, :3], expected)
        return M

    SETTABLE = {"placement": _placement}

    def term(self):
        return (_k.PLACEMENT, self._joint, self.weight,
                np.concatenate([self._frame_parameters(), self.placement[:3, :3].ravel(),
                                self.placement[:3, 3]]))

    def residual(self, q, dq, v, u):
        R, p = self.frame_placement(q, dq)
        Rr, pr = cs.DM(self.placement[:3, :3]), cs.DM(self.placement[:3, 3])
        rel = cs.vertcat(cs.horzcat(cs.mtimes(Rr.T, R), cs.mtimes(Rr.T, p - pr)),
                         cs.DM([[0, 0, 0, 1]]))
        return lie.log_group(FF, rel)


class FrameTranslation(_FrameCost):
    """Residual ``oMf.translation - position`` (3)."""

    def __init__(self, model, frame_name, position, weight, nu=0, activation=None):
        self.position = _position(self, position)
        super().__init__(model, frame_name, weight, 3, nu, "FrameTranslation", activation)

    SETTABLE = {"position": _position}

    def term(self):
        return _k.TRANSLATION, self._joint, self.weight, np.concatenate(
            [self._frame_parameters(), self.position])

    def residual(self, q, dq, v, u):
        return self.frame_placement(q, dq)[1] - cs.DM(self.position)


class FrameRotation(_FrameCost):
    """Residual ``log3(rotation^T oMf.rotation)`` (3) of a frame; ``rotation`` a 3x3 rotation
    matrix (the rotation error must stay below pi, as for :class:`FramePlacement`)."""

    def __init__(self, model, frame_name, rotation, weight, nu=0, activation=None):
        self.rotation = _rotation("rotation", np.array(rotation, dtype=float))
        super().__init__(model, frame_name, weight, 3, nu, "FrameRotation", activation)

    SETTABLE = {"rotation": lambda self, R: _rotation("rotation", np.array(R, dtype=float))}

    def term(self):
        return _k.ROTATION, self._joint, self.weight, np.concatenate(
            [self._frame_parameters(), self.rotation.ravel()])

    def residual(self, q, dq, v, u):
        R, _ = self.frame_placement(q, dq)
        return lie.log_group(SPH, cs.mtimes(cs.DM(self.rotation).T, R))


class _RoundObstacle:
    """An obstacle given by a centre (3,) in the world and a radius >= 0."""

    def __init__(self, center, radius):
        self.center = _finite("center", center, (3,), "3 finite values")
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a non-negative finite number; got {radius!r}")
        self.radius = float(radius)

    def __repr__(self):
        return f"{type(self).__name__}({self.center.tolist()}, {self.radius:g})"


class Sphere(_RoundObstacle):
    """A sphere obstacle: ``center`` (3,) in the world, ``radius`` >= 0."""


class HalfSpace:
    """A half-space obstacle: the side of the plane through ``point`` that ``normal`` points
    away from (the free side is where normal . (x - point) > 0)."""

    def __init__(self, normal, point):
        n = _finite("normal", normal, (3,), "a finite non-zero vector (3,)")
        if np.linalg.norm(n) == 0:
            raise ValueError(f"normal: expected a finite non-zero vector (3,); got {normal!r}")
        self.normal = n / np.linalg.norm(n)
        self.point = _finite("point", point, (3,), "3 finite values")

    def __repr__(self):
        return f"HalfSpace({self.normal.tolist()}, {self.point.tolist()})"


class Column(_RoundObstacle):
    """A vertical cylinder obstacle, infinite along z: its axis through ``center`` (its x, y
    are read), ``radius`` >= 0."""


class Capsule:
    """A capsule obstacle: the points within ``radius`` >= 0 of the segment from ``start`` to
    ``end`` (3,) in the world (a rod, a table's edge, a link of another robot)."""

    def __init__(self, start, end, radius):
        self.start = _finite("start", start, (3,), "3 finite values")
        self.end = _finite("end", end, (3,), "3 finite values")
        if not np.linalg.norm(self.end - self.start) > 0:
            raise ValueError(f"end: expected a point other than start; got {end!r}")
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a non-negative finite number; got {radius!r}")
        self.radius = float(radius)

    def __repr__(self):
        return f"Capsule({self.start.tolist()}, {self.end.tolist()}, {self.radius:g})"


def _obstacle(cost, obstacle):
    if not isinstance(obstacle, (Sphere, HalfSpace, Column, Capsule)):
        raise ValueError(f"obstacle: expected a ddp.Sphere, ddp.HalfSpace, ddp.Column or "
                         f"ddp.Capsule; got {obstacle!r}")
    return obstacle


class Distance(_FrameCost):
    """Residual: the signed distance (1) between a sphere of ``radius`` on a frame (centred at
    ``offset`` in the frame's axes) and an ``obstacle`` (:class:`Sphere`: |p - c| - radii;
    :class:`Column`: the same in x and y; :class:`Capsule`: the distance to its segment minus
    the radii; :class:`HalfSpace`: n . (p - point) - radius), negative when they overlap.  As a hard
    constraint, ``ddp.Constraint(ddp.Distance(...), lower=margin)`` keeps the sphere out of the
    obstacle.  Compiled with its exact Hessian (the distance's curvature and forward
    kinematics' second order); ``obstacle`` can be assigned between solves."""

    def __init__(self, model, frame_name, radius, obstacle, weight=1.0, offset=(0.0, 0.0, 0.0),
                 nu=0, activation=None):
        if not (np.isfinite(radius) and radius >= 0):
            raise ValueError(f"radius: expected a non-negative finite number; got {radius!r}")
        self.radius = float(radius)
        self.offset = _finite("offset", offset, (3,), "3 finite values")
        self.obstacle = _obstacle(self, obstacle)
        super().__init__(model, frame_name, weight, 1, nu, "Distance", activation)

    SETTABLE = {"obstacle": _obstacle}

    def _obstacle_parameters(self):
        o = self.obstacle
        if isinstance(o, (Sphere, Column)):
            kind = _k.SPHERE if isinstance(o, Sphere) else _k.COLUMN
            return np.r_[kind, o.center, np.zeros(3), self.radius + o.radius]
        if isinstance(o, Capsule):
            return np.r_[_k.CAPSULE, o.start, o.end - o.start, self.radius + o.radius]
        return np.r_[_k.HALF_SPACE, o.point, o.normal, self.radius]

    def term(self):
        return _k.DISTANCE, self._joint, self.weight, np.concatenate(
            [self._fR.ravel(), self._fp + self._fR @ self.offset, self._obstacle_parameters()])

    def residual(self, q, dq, v, u):
        R, p = self.frame_placement(q, dq)
        point = p + cs.mtimes(R, cs.DM(self.offset))
        o = self.obstacle
        if isinstance(o, (Sphere, Column)):
            d = point - cs.DM(o.center)
            if isinstance(o, Column):
                d = d[:2]
            return cs.sqrt(cs.dot(d, d)) - (self.radius + o.radius)
        if isinstance(o, Capsule):
            a, axis = cs.DM(o.start), cs.DM(o.end - o.start)
            s = cs.fmin(cs.fmax(cs.dot(point - a, axis) / cs.dot(axis, axis), 0), 1)
            d = point - a - s * axis
            return cs.sqrt(cs.dot(d, d)) - (self.radius + o.radius)
        return cs.dot(cs.DM(o.normal), point - cs.DM(o.point)) - self.radius


class FrameVelocity(_FrameCost):
    """Residual ``v_f - velocity`` (6, [lin, ang]) of a frame's spatial velocity, as Crocoddyl's
    ``ResidualModelFrameVelocity``: with ``reference="local"`` (or ``pinocchio.LOCAL``) in the
    frame's own axes, with ``"world-aligned"`` (or ``pinocchio.LOCAL_WORLD_ALIGNED``) in the
    world's axes at the frame's origin.  ``velocity``: a ``pinocchio.Motion`` or 6 values
    [lin, ang] in that reference.

    The derivatives are those along ``q (+) dq`` (:func:`ddp.kernels.costs._velocity_term`).
    Pinocchio's ``getFrameVelocityDerivatives`` with ``LOCAL_WORLD_ALIGNED`` (4.0.0 and 4.1.0),
    which Crocoddyl's residual uses, is not that derivative (on UR3, 0.63-0.66 off central
    differences of ``getFrameVelocity``): on a UR3 velocity-tracking problem Crocoddyl 3.2.1's
    FDDP stops at a cost 0.19% above ours (0.0535039 against 0.0534048); with ``LOCAL`` both
    reach the same optimum to 1e-13."""

    #: names of ``reference`` -> whether the velocity is world-aligned
    REFERENCES = {"local": False, "world-aligned": True, "LOCAL": False,
                  "LOCAL_WORLD_ALIGNED": True}

    def __init__(self, model, frame_name, velocity, weight, reference="local", nu=0):
        ref = getattr(reference, "name", reference)  # a pinocchio.ReferenceFrame has a name
        if not isinstance(ref, str) or ref not in self.REFERENCES:
            raise ValueError(f"reference: expected 'local' (pinocchio.LOCAL) or 'world-aligned' "
                             f"(pinocchio.LOCAL_WORLD_ALIGNED); got {reference!r}")
        self.world_aligned = self.REFERENCES[ref]
        self.velocity = _finite("velocity", velocity, (6,),
                                "a pinocchio.Motion or 6 finite values [lin, ang]")
        super().__init__(model, frame_name, weight, 6, nu, "FrameVelocity")

    SETTABLE = {"velocity": lambda self, v: _finite(
        "velocity", v, (6,), "a pinocchio.Motion or 6 finite values [lin, ang]")}

    def term(self):
        return _k.VELOCITY, self._joint, self.weight, np.concatenate(
            [self._frame_parameters(), self.velocity, [float(self.world_aligned)]])

    def residual(self, q, dq, v, u):
        X = self._tree.placements(q, None, dq, exact=True)
        vf = frame_velocity(self._tree, X, v, self._joint, self._fR, self._fp)
        if self.world_aligned:
            R, _ = self.frame_placement(q, dq)
            vf = cs.vertcat(cs.mtimes(R, vf[:3]), cs.mtimes(R, vf[3:]))
        return vf - cs.DM(self.velocity)


class ControlGravity(BuiltinCost):
    """Residual ``u - g(q)`` (nv) of a fully actuated robot: the control minus the torques that
    hold it against gravity (Crocoddyl's ``ResidualModelControlGrav``; at the terminal knot, where
    u = 0, ``-g(q)``).  Compiled: g and dg/dq by IDSVA, the exact Hessian's second derivatives
    of g by the contracted IDSVA-SO; its CasADi residual (on the robot's symbolic tree) is the
    reference."""

    def __init__(self, model, weight, nu=None, activation=None):
        self.model = _model_of(model)
        if self.model is None:
            raise ValueError("model: ControlGravity needs a RobotModel (or a backend with .model)")
        nv = self.model.nv
        if nu is not None and int(nu) != nv:
            raise ValueError(f"nu: ControlGravity needs a fully actuated robot (nu = nv = {nv}); "
                             f"got {nu}")
        self._tree = SymbolicTree(self.model)
        super().__init__(self.model.nq, nv, nv, weight, nv, "ControlGravity", activation)

    def term(self):
        return _k.GRAVITY, -1, self.weight, np.zeros(0)

    def bind(self, nq, nv, nu, model=None, contacts=None):
        if nu != self.nv:
            raise ValueError(f"ControlGravity: needs a fully actuated robot (nu = nv = "
                             f"{self.nv}); the problem has nu = {nu}")
        return super().bind(nq, nv, nu, model, contacts)

    def residual(self, q, dq, v, u):
        X = self._tree.placements(q, None, dq, exact=True)
        zero = cs.SX.zeros(self.nv, 1)
        return u - self._tree.rnea(X, zero, zero)


class CoMPosition(BuiltinCost):
    """Residual ``c(q) - position`` (3): the robot's centre of mass (Crocoddyl's
    ``ResidualModelCoMPosition``).  Its exact Hessian holds the second derivatives of every
    body's centre (:func:`ddp.kernels.costs._com_term`)."""

    def __init__(self, model, position, weight, nu=0, activation=None):
        self.model = _model_of(model)
        if self.model is None:
            raise ValueError("model: CoMPosition needs a RobotModel (or a backend with .model)")
        self.position = _position(self, position)
        self._tree = SymbolicTree(self.model)
        super().__init__(self.model.nq, self.model.nv, nu, weight, 3, "CoMPosition", activation)

    SETTABLE = {"position": _position}

    def term(self):
        return _k.COM, -1, self.weight, self.position

    def residual(self, q, dq, v, u):
        a = self.model.arrays
        X = self._tree.placements(q, None, dq, exact=True)
        c = cs.SX.zeros(3, 1)
        for i, (R, p) in enumerate(world_placements(self._tree, X)):
            if i > 0 and a.mass[i] > 0:
                c = c + float(a.mass[i]) * (cs.mtimes(R, cs.DM(a.com[i])) + p)
        return c / float(np.sum(a.mass[1:])) - cs.DM(self.position)


class ForceCost(BuiltinCost):
    """A residual linear in the force of one contact, ``A lam - b`` (lam in the world's axes, as
    :mod:`dynamics.contacts` defines it: (3,) for a point contact, the wrench (6,) for a flat
    one; an A of 3 columns acts on the force part of a wrench): the base of
    :class:`ContactForce`, :class:`FrictionCone` and :class:`WrenchCone`.  It is bound to a
    knot's contacts by the problem (the phase must hold the frame in contact) and evaluated
    there, on the forces and their derivatives of the contact dynamics; :meth:`force_residual`
    writes it in CasADi for a given force."""

    TAKES_CONE = True

    def __init__(self, model, frame, A, b, weight, nu, name, activation=None):
        self.model = _model_of(model)
        if self.model is None:
            raise ValueError(f"model: {name} needs a RobotModel (or a backend with .model)")
        self.model.frame(frame, "frame")  # exists, or a ValueError naming close matches
        self.frame, self.A, self.b = frame, np.asarray(A, dtype=float), np.asarray(b, dtype=float)
        self.row = None  # the first row of its force in the knot's forces, once bound
        super().__init__(self.model.nq, self.model.nv, nu, weight, len(self.b), name,
                         activation)

    def bind(self, nq, nv, nu, model=None, contacts=None):
        """:meth:`Cost.bind`: a copy for the knots whose contacts are ``contacts`` (its force's
        first row among the knot's forces), sized as a residual."""
        held = [] if contacts is None else list(contacts.contacts)
        frames = [c.frame for c in held]
        if self.frame not in frames:
            raise ValueError(f"{type(self).__name__}: the frame {self.frame!r} is not in contact "
                             f"here (contacts: {', '.join(frames) or 'none'})")
        k = frames.index(self.frame)
        width = held[k].size
        if self.A.shape[1] > width:
            raise ValueError(f"{type(self).__name__} on {self.frame!r}: it acts on a wrench (6 "
                             f"components) and the contact there is a point contact (a force, "
                             f"3); hold the frame with a Contact6D")
        c = self.copy_with(A=np.hstack([self.A, np.zeros((len(self.b),
                                                         width - self.A.shape[1]))]),
                           row=sum(h.size for h in held[:k]))
        return ResidualCost.bind(c, nq, nv, nu, model, contacts)

    def term(self):
        if self.row is None:
            raise ValueError(f"{type(self).__name__} on {self.frame!r}: a force cost is evaluated "
                             f"by a problem, on a phase that holds the frame in contact")
        return _k.FORCE, self.row, self.weight, np.concatenate([[self.A.shape[1]],
                                                                self.A.ravel(), self.b])

    def _forces(self, forces):
        if forces is None:
            raise ValueError(f"{type(self).__name__}: a force cost is evaluated by its problem "
                             f"(it needs the contact forces of the knots)")
        return forces

    def calc(self, xs, us, forces=None):
        return super().calc(xs, us, self._forces(forces))

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        return super().calc_diff(xs, us, hessians, self._forces(forces))

    def force_residual(self, lam):
        """The residual (SX) for a contact force lam (SX, as many rows as A has columns),
        before the activation."""
        return cs.mtimes(cs.DM(self.A), lam) - cs.DM(self.b)

    def residual(self, q, dq, v, u):
        raise ValueError(f"{type(self).__name__}: its residual depends on the contact forces "
                         f"(see force_residual)")


class ContactForce(ForceCost):
    """Residual ``lam - force`` of the contact on ``frame`` (Crocoddyl's
    ``ResidualModelContactForce`` with ``LOCAL_WORLD_ALIGNED``): ``force`` (3,) (or the linear
    part of a pinocchio.Force) acts on the force of a point contact or the force part of a flat
    one's wrench; a wrench (6,), (force, torque), on a flat contact's whole wrench."""

    def __init__(self, model, frame, force, weight, nu=0, activation=None):
        f = np.asarray(getattr(force, "linear", force), dtype=float)
        f = _finite("force", f, (6,) if f.shape == (6,) else (3,),
                    "3 finite values (a force) or 6 (a wrench)")
        super().__init__(model, frame, np.eye(len(f)), f, weight, nu, "ContactForce",
                         activation)


class FrictionCone(ForceCost):
    """The linearized friction cone of the contact on ``frame`` with the quadratic barrier, as
    Crocoddyl's ``FrictionCone`` with ``ResidualModelContactFrictionCone`` and
    ``ActivationModelQuadraticBarrier``: ``facets`` rows ``(-mu n +- t_i) . lam <= 0`` (t_i the
    surface tangents at angles 2 pi i / facets; ``inner``: mu cos(pi / facets), the inner
    approximation) and ``min_force <= n . lam <= max_force``, for the surface normal n: in the
    surface's axes (R: the rotation taking z to n, Crocoddyl's ``R``), the rows are those of
    the flat ground applied to R^T lam.  ``weight``: the cost's weight (all rows)."""

    def __init__(self, model, frame, mu, weight, facets=4, inner=False, min_force=0.0,
                 max_force=np.inf, normal=(0.0, 0.0, 1.0), nu=0):
        A, lower, upper = _cone_rows(mu, facets, inner, min_force, max_force, normal)
        self.mu, self.inner, self.rotation = float(mu), bool(inner), _surface_rotation(normal)
        super().__init__(model, frame, A, np.zeros(len(A)), weight, nu, "FrictionCone",
                         QuadraticBarrier(lower, upper))


def _cone_rows(mu, facets, inner, min_force, max_force, normal):
    """(A (facets + 1, 3), lower, upper) of :class:`FrictionCone` in the world's axes."""
    try:
        mu_f = float(mu)
    except (TypeError, ValueError):
        mu_f = float("nan")
    if not (np.isfinite(mu_f) and mu_f > 0):
        raise ValueError(f"mu: expected a positive friction coefficient; got {mu!r}")
    if isinstance(facets, bool) or not isinstance(facets, (int, np.integer)) \
            or facets < 2 or facets % 2:
        raise ValueError(f"facets: expected an even number >= 2; got {facets!r}")
    n = _finite("normal", normal, (3,), "a finite non-zero vector (3,)")
    if np.linalg.norm(n) == 0:
        raise ValueError(f"normal: expected a finite non-zero vector (3,); got {normal!r}")
    R = _surface_rotation(normal)
    theta = 2 * np.pi / facets
    m_eff = mu_f * np.cos(theta / 2) if inner else mu_f
    rows = []
    for i in range(facets // 2):
        t = np.array([np.cos(theta * i), np.sin(theta * i), 0.0])
        rows += [np.array([0, 0, -m_eff]) + t, np.array([0, 0, -m_eff]) - t]
    rows.append(np.array([0.0, 0.0, 1.0]))
    lower = np.r_[np.full(facets, -np.inf), float(min_force)]
    upper = np.r_[np.zeros(facets), float(max_force)]
    return np.array(rows) @ R.T, lower, upper


def _surface_rotation(normal):
    """The rotation taking z to the unit vector along ``normal``."""
    n = np.asarray(normal, dtype=float)
    return _rotation_between(np.array([0.0, 0.0, 1.0]), n / np.linalg.norm(n))


class WrenchCone(ForceCost):
    """The linearized wrench cone of the flat-foot contact (:class:`~dynamics.contacts.Contact6D`)
    on ``frame`` with the quadratic barrier, as Crocoddyl's ``WrenchCone`` with
    ``ResidualModelContactWrenchCone`` and ``ActivationModelQuadraticBarrier``.  On the wrench
    (f, tau) in the surface's axes (R^T f, R^T tau, R as for :class:`FrictionCone`), for a
    rectangular foot of ``size`` (length, width) = 2 (L, W), in Crocoddyl's order:

    * the friction cone of f (:class:`FrictionCone`'s rows; ``inner`` by default here, as
      Crocoddyl's ``WrenchCone``), the normal force in [min_force, max_force];
    * the centre of pressure inside the foot: +-tau_x <= W f_z, +-tau_y <= L f_z;
    * the yaw torque within the friction's reach: for the signs (s_x, s_y) in (+, +), (+, -),
      (-, +), (-, -), ``s_x W f_x + s_y L f_y - mu (L + W) f_z - s_x mu tau_x - s_y mu tau_y
      -+ tau_z <= 0`` (the four rows with -tau_z, then the four with +tau_z and the signs of
      mu tau_x, mu tau_y flipped).

    ``weight``: the cost's weight (all rows)."""

    def __init__(self, model, frame, mu, size, weight, facets=4, inner=True, min_force=0.0,
                 max_force=np.inf, normal=(0.0, 0.0, 1.0), nu=0):
        box = _finite("size", size, (2,), "the foot's (length, width), two positive numbers")
        if np.any(box <= 0):
            raise ValueError(f"size: expected the foot's (length, width), two positive "
                             f"numbers; got {size!r}")
        A3, lower, upper = _cone_rows(mu, facets, inner, min_force, max_force, normal)
        R = _surface_rotation(normal)
        mu_e = float(mu) * (np.cos(np.pi / facets) if inner else 1.0)
        L, W = box / 2
        rows = [np.r_[-W, 0, 0, 0, 0, 1, 0, 0], np.r_[-W, 0, 0, 0, 0, -1, 0, 0],
                np.r_[-L, 0, 0, 0, 0, 0, 1, 0], np.r_[-L, 0, 0, 0, 0, 0, -1, 0]]
        rows = [np.r_[0, 0, r[0], r[5:]] for r in rows]  # (f, tau) in the surface's axes
        for turn in (-1.0, 1.0):
            for sx, sy in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                rows.append(np.r_[sx * W, sy * L, -mu_e * (L + W),
                                  turn * sx * mu_e, turn * sy * mu_e, turn])
        S = np.array(rows)
        A = np.vstack([np.hstack([A3, np.zeros_like(A3)]),
                       np.hstack([S[:, :3] @ R.T, S[:, 3:] @ R.T])])
        extra = len(S)
        self.mu, self.inner, self.rotation, self.foot = float(mu), bool(inner), R, box
        super().__init__(model, frame, A, np.zeros(len(A)), weight, nu, "WrenchCone",
                         QuadraticBarrier(np.r_[lower, np.full(extra, -np.inf)],
                                          np.r_[upper, np.zeros(extra)]))


def _rotation_between(a, b):
    """The rotation taking the unit vector a to the unit vector b (Eigen's FromTwoVectors)."""
    v, c = np.cross(a, b), float(np.dot(a, b))
    if c < -1 + 1e-12:  # opposite: a half turn about any axis normal to a
        axis = np.cross(a, [1.0, 0, 0] if abs(a[0]) < 0.9 else [0, 1.0, 0])
        axis /= np.linalg.norm(axis)
        return 2 * np.outer(axis, axis) - np.eye(3)
    K = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + K + K @ K / (1 + c)


class CostProgram:
    """Built-in cost terms compiled as one program on ``model`` (see :mod:`ddp.kernels.costs`):
    ``calc`` and ``calc_diff`` of all knots in one parallel call.  ``terms``: (kind, joint,
    weights, parameters) of :meth:`BuiltinCost.term`."""

    def __init__(self, model: RobotModel, nu: int, terms, owners=()):
        self.model, self.nu = model, int(nu)
        self.nq, self.nv = model.nq, model.nv
        terms = [t if len(t) == 5 else (*t, None) for t in terms]
        ints, weights, params, bounds = [len(terms)], [], [], []
        nw = sum(len(t[2]) for t in terms)
        npar = sum(len(t[3]) for t in terms)
        wo, po, bo = 0, nw, nw + npar
        self.offsets = []  # (weight offset, parameter offset) of each term
        for kind, joint, w, par, b in terms:
            self.offsets.append((wo, po))
            act = (_k.QUADRATIC if b is None else
                   _k.CONE if isinstance(b, SecondOrderCone) else _k.BARRIER)
            ints += _k.term_ints(kind, joint, len(w), wo, po, act, bo if b is not None else 0)
            weights.append(np.asarray(w, dtype=float))
            params.append(np.asarray(par, dtype=float))
            if b is not None:
                bounds += ([b.floats()] if act == _k.CONE else
                           [np.asarray(b[0], dtype=float), np.asarray(b[1], dtype=float)])
                bo += 2 * len(w)
            wo += len(w)
            po += len(par)
        self.ints = np.array(ints, dtype=np.int64)
        self.floats = np.concatenate(weights + params + bounds) if terms else np.zeros(0)
        #: the program as the compiled kernels take it
        self.record = Program(self.ints, self.floats, np.zeros((1, 2), dtype=np.int64))
        self._model = PackedModel(*model.kernel_args)
        #: the cost of each term (:class:`BuiltinCost`), whose setters write into the program
        self.owners = list(owners)
        self.register(self.floats, 0)

    def register(self, floats, base):
        """Tell each term's cost where its floats are in ``floats`` (this program's, or a copy
        packed at ``base``), so that its setters reach them."""
        for (wo, po), cost in zip(self.offsets, self.owners):
            own_weights = not cost.__dict__.get("_parameters_only", False)
            cost._slots.append((weakref.ref(floats), base + wo if own_weights else -1,
                                base + po))

    def _run(self, xs, us, order, exact, forces):
        xs, us, T = _knots(xs, us, self.nu)
        return run_program(self._model, self.record, xs[:, :self.nq], xs[:, self.nq:], us,
                           order, exact, empty_forces(T, 0, self.nv, self.nu)
                           if forces is None else forces, self.nv, self.nu)

    def calc(self, xs, us, forces=None):
        """Values (T,); ``forces``: the knots' :data:`~ddp.kernels.records.Forces`, which the
        terms on contact forces read."""
        return self._run(xs, us, 0, False, forces).l

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        """Derivatives (the terms on contact forces through the forces' derivatives, their
        gradients in the forces added to ``forces.dl_dlam``)."""
        check_hessians(hessians)
        return self._run(xs, us, 2, hessians == "exact", forces)


def run_program(model, program, qs, vs, us, order, exact, forces, nv, nu) -> CostDerivatives:
    """A compiled cost :data:`~ddp.kernels.records.Program` at T knots (qs, vs, us, and their
    :data:`~ddp.kernels.records.Forces`) on the kernels' ``model``: values (``order`` 0) or
    derivatives (2; exact Hessians if ``exact``), sized by the program's own nv and nu (a
    robot-free program's nv need not be the width of vs)."""
    out = CostDerivatives.zeros(len(us), 2 * nv, nu)
    _k.link_costs()
    run_in_chunks(_k.cost_batch, _k.cost_chunk,
                  (model, program, np.ascontiguousarray(qs), np.ascontiguousarray(vs),
                   np.ascontiguousarray(us), np.int64(order), np.bool_(exact), out, forces),
                  num_chunks(len(us)))
    return out


class Sum(Cost):
    """The sum of costs (all sized for the same state and control): the built-in costs run as
    one compiled program, the others (CasADi residuals) are added."""

    def __init__(self, costs):
        self.costs = list(costs)
        if not self.costs:
            raise ValueError("costs: expected at least one cost")
        self.nq, self.nv, self.nu = self.costs[0].nq, self.costs[0].nv, self.costs[0].nu
        self._program = None

    def bind(self, nq, nv, nu, model=None, contacts=None):
        """:meth:`Cost.bind`, term by term."""
        return Sum([bind(c, nq, nv, nu, model, contacts) for c in self.costs])

    @property
    def program(self) -> CostProgram | None:
        """The compiled program of the built-in terms (None if there is none)."""
        if self._program is None:
            builtin = [c for c in self.costs if isinstance(c, BuiltinCost)]
            if builtin:
                models = {id(c.model): c.model for c in builtin if c.model is not None}
                if len(models) > 1:
                    raise ValueError("costs: the built-in costs of a Sum must share one model")
                model = next(iter(models.values())) if models else robots.vector_space(self.nv)
                self._program = CostProgram(model, self.nu,
                                            [(*c.term(), c.activation) for c in builtin], builtin)
        return self._program

    def _others(self):
        return [c for c in self.costs if not isinstance(c, BuiltinCost)]

    def calc(self, xs, us, forces=None):
        """Values (T,); ``forces`` as for :meth:`CostProgram.calc`."""
        parts = [c.calc(xs, us) for c in self._others()]
        if self.program is not None:
            parts.append(self.program.calc(xs, us, forces))
        return sum(parts)

    def calc_diff(self, xs, us, hessians="exact", forces=None):
        """Derivatives; ``forces`` as for :meth:`CostProgram.calc_diff`."""
        parts = [c.calc_diff(xs, us, hessians) for c in self._others()]
        if self.program is not None:
            parts.append(self.program.calc_diff(xs, us, hessians, forces))
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out


def split(cost):
    """(program, others) of a bound cost: the :class:`CostProgram` of its built-in terms (None
    if it has none) and the costs added through CasADi."""
    if isinstance(cost, Sum):
        return cost.program, cost._others()
    if isinstance(cost, BuiltinCost):
        return cost.program, []
    return None, [cost]


def force_costs(cost) -> list:
    """The costs on contact forces (:class:`ForceCost`) in ``cost`` (a Sum's terms included)."""
    if isinstance(cost, Sum):
        return [f for c in cost.costs for f in force_costs(c)]
    return [cost] if isinstance(cost, ForceCost) else []


def bind(cost, nq, nv, nu, model=None, contacts=None):
    """``cost`` bound to a problem (:meth:`Cost.bind`), the residuals of the user's own costs
    checked; TypeError for what is not a cost."""
    if not isinstance(cost, Cost):
        raise TypeError(f"expected a ddp cost (ddp.StateRegularization, ddp.Sum, a "
                        f"ddp.ResidualCost subclass, ...); got {type(cost).__name__}")
    bound = cost.bind(nq, nv, nu, model, contacts)
    if isinstance(bound, ResidualCost) and not isinstance(bound, BuiltinCost):
        _check_residual(bound)
    return bound
    if not isinstance(cost, Cost):
        raise TypeError(f"expected a ddp cost (ddp.StateRegularization, ddp.Sum, a "
                        f"ddp.ResidualCost subclass, ...); got {type(cost).__name__}")
    return cost


def _check_residual(cost):
    """A user's residual evaluated once on symbols: it must build and have ``nr`` entries (a
    CasADi dimension error at the first solve named nothing)."""
    name = type(cost).__name__
    q, dq = cs.SX.sym("q", cost.nq), cs.SX.sym("dq", cost.nv)
    v, u = cs.SX.sym("v", cost.nv), cs.SX.sym("u", cost.nu)
    try:
        r = cs.SX(cost.residual(q, dq, v, u))
    except Exception as e:
        raise ValueError(f"{name}.residual(q, dq, v, u) failed on CasADi symbols: "
                         f"{type(e).__name__}: {e}") from None
    if r.shape != (cost.nr, 1):
        raise ValueError(f"{name}.residual: expected a column of nr = {cost.nr} entries; got "
                         f"shape {r.shape}")
