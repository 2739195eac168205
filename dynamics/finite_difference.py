"""Finite-difference derivatives on the manifold (App. A of the second-order paper) and the
:class:`FiniteDifferenceDynamics` backend.

Two methods, for inverse dynamics tau = ID(q, v, a) and forward dynamics a = FD(q, v, tau) alike
(below f(q, v, x) is either, x = a or tau):

* ``"finite-diff-1"`` (Finite-Diff-1, App. A.II.1): second-order central differences of f itself
  (RNEA or ABA), first derivatives by central differences; default step ``FD1_STEP`` = 3e-4 (the
  paper found the best between 1e-4 and 1e-3).
* ``"finite-diff-2"`` (Finite-Diff-2, App. A.II.2): first-order central differences of the
  analytical first derivatives (IDSVA / FDSVA); first derivatives exact; default step
  ``FD2_STEP`` = 1e-5.

The short spellings ``"fd1"`` and ``"fd2"`` of earlier versions are accepted as aliases.  The step
is called ``h`` everywhere (as in the paper).

Configuration steps are taken on the manifold, ``q (+) h e_k``; a second derivative along (j, k)
perturbs along k first and then along j, matching ``T[i, j, k] = L_{x_k}(L_{x_j} f_i)``.  Each method
evaluates all perturbed states of one knot in one batched (parallel) kernel call.
"""

from __future__ import annotations

import numpy as np

from . import algorithms as _alg
from .contact_dynamics import (ContactDerivatives, ContactSecondDerivatives, ImpulseDerivatives,
                               _contact_set, _damping, _restitution, check_order_0_to_2,
                               constrained_derivatives, constrained_dynamics, holds,
                               impulse_dynamics, values_only)
from .inputs import prepare
from .model import RobotModel
from .protocol import (Dynamics, EuclideanDynamics, RobotConfigurationSpace, _check_order,
                       robot_model)
from .results import FDDerivatives, IDDerivatives

FD1_STEP = 3e-4
FD2_STEP = 1e-5
METHODS = ("finite-diff-1", "finite-diff-2")
#: earlier spellings, still accepted
METHOD_ALIASES = {"fd1": "finite-diff-1", "fd2": "finite-diff-2"}


def _one_point(model, q, v, x):
    q, v, x = (np.asarray(y, dtype=float) for y in (q, v, x))
    if q.ndim != 1:
        raise ValueError(f"q: the finite-difference methods take one point, shape ({model.nv},); "
                         f"got shape {q.shape}")
    return q, v, x


def differentiate_first_order(model, first_order, q, v, x, h: float = FD2_STEP):
    """Finite-Diff-2 at one point: ``first_order(Q, V, X)`` is a batched analytical first-order
    function returning (f, df_dq, df_dv, df_dx).  Returns (f, df_dq, df_dv, df_dx, H_qq, H_vv,
    H_qv, H_xq) with ``H_xq[i, j, k] = d/dq_k (df_i/dx_j)``."""
    q, v, x = _one_point(model, q, v, x)
    n = model.nv
    E = np.eye(n) * h
    Qn = np.tile(q, (n, 1))
    Q = np.concatenate([model.integrate(Qn, E), model.integrate(Qn, -E), np.tile(q, (2 * n, 1))])
    V = np.concatenate([np.tile(v, (2 * n, 1)), v + E, v - E])
    d = first_order(Q, V, np.tile(x, (4 * n, 1)))
    c = first_order(q, v, x)
    sl = [slice(k * n, (k + 1) * n) for k in range(4)]  # q+, q-, v+, v-
    diff = lambda X, p, m: np.moveaxis((X[sl[p]] - X[sl[m]]) / (2 * h), 0, -1)
    return (*c, diff(d[1], 0, 1), diff(d[2], 2, 3), diff(d[1], 2, 3), diff(d[3], 0, 1))


def differentiate_function(model, f, q, v, x, h: float = FD1_STEP):
    """Finite-Diff-1 at one point: ``f(Q, V, X)`` a batched function (RNEA or ABA).  Returns the
    same tuple as :func:`differentiate_first_order`, all by central differences (eq. 55-56)."""
    q, v, x = _one_point(model, q, v, x)
    n = model.nv
    I = np.eye(n)
    steps = [(+1, +1), (+1, -1), (-1, +1), (-1, -1)]
    Vb, Xb, Qb = np.tile(v, (n * n, 1)), np.tile(x, (n * n, 1)), np.tile(q, (n * n, 1))
    Qqq, VV, Qv, Vq, Xq = [], [], [], [], []
    qj = {s: model.integrate(np.tile(q, (n, 1)), s * h * I) for s in (+1, -1)}
    for sj, sk in steps:
        # index (k * n + j): q (+) sk h e_k (+) sj h e_j ; v + sk h e_k + sj h e_j
        Qk = np.repeat(qj[sk], n, axis=0)
        Qqq.append(model.integrate(Qk, np.tile(sj * h * I, (n, 1))))
        VV.append(Vb + np.repeat(sk * h * I, n, axis=0) + np.tile(sj * h * I, (n, 1)))
        # index (j * n + k): q (+) sj h e_j with v + sk h e_k, or with x + sk h e_k
        Qv.append(np.repeat(qj[sj], n, axis=0))
        Vq.append(Vb + np.tile(sk * h * I, (n, 1)))
        Xq.append(Xb + np.tile(sk * h * I, (n, 1)))
    cat = np.concatenate
    Qall = cat([cat(Qqq), np.tile(Qb, (4, 1)), cat(Qv), cat(Qv)])
    Vall = cat([np.tile(Vb, (4, 1)), cat(VV), cat(Vq), np.tile(Vb, (4, 1))])
    Xall = cat([np.tile(Xb, (4, 1)), np.tile(Xb, (4, 1)), np.tile(Xb, (4, 1)), cat(Xq)])
    F = f(Qall, Vall, Xall).reshape(4, 4, n, n, -1)  # block, signs, outer, inner, output i
    mix = lambda b: (F[b, 0] - F[b, 1] - F[b, 2] + F[b, 3]) / (4 * h * h)
    Hqq = np.transpose(mix(0), (2, 1, 0))       # outer k, inner j -> [i, j, k]
    Hvv = np.transpose(mix(1), (2, 1, 0))
    Hqv = np.transpose(mix(2), (2, 0, 1))       # outer j (q), inner k (v) -> [i, j, k]
    Hxq = np.transpose(mix(3), (2, 1, 0))       # outer j (q), inner k (x) -> [i, k, j]
    # diagonal entries of the pure blocks: the three-point formula (eq. 55)
    f0 = f(q, v, x)
    fq = f(cat([qj[+1], qj[-1]]), np.tile(v, (2 * n, 1)), np.tile(x, (2 * n, 1)))
    fv = f(np.tile(q, (2 * n, 1)), cat([v + h * I, v - h * I]), np.tile(x, (2 * n, 1)))
    fx = f(np.tile(q, (2 * n, 1)), np.tile(v, (2 * n, 1)), cat([x + h * I, x - h * I]))
    for j in range(n):
        Hqq[:, j, j] = (fq[j] - 2 * f0 + fq[n + j]) / (h * h)
        Hvv[:, j, j] = (fv[j] - 2 * f0 + fv[n + j]) / (h * h)
    central = lambda t: ((t[:n] - t[n:]) / (2 * h)).T
    return f0, central(fq), central(fv), central(fx), Hqq, Hvv, Hqv, Hxq


def _method_and_step(method, h):
    """The canonical method name and its step h (the method's default when h is None)."""
    method = METHOD_ALIASES.get(method, method)
    if method not in METHODS:
        raise ValueError(f"method: expected 'finite-diff-1' or 'finite-diff-2'; got {method!r}")
    step = (FD1_STEP if method == "finite-diff-1" else FD2_STEP) if h is None else h
    try:
        step = float(step)
    except (TypeError, ValueError):
        step = float("nan")
    if not (np.isfinite(step) and step > 0):
        raise ValueError(f"h: expected a positive finite step; got {h!r}")
    return method, step


def _second_derivatives(model, q, v, x, method, h, first_order, function, cls):
    method, h = _method_and_step(method, h)
    if method == "finite-diff-2":
        first = lambda Q, V, X: _first_four(first_order(model, Q, V, X))
        return cls(*differentiate_first_order(model, first, q, v, x, h))
    return cls(*differentiate_function(model, lambda Q, V, X: function(model, Q, V, X), q, v, x,
                                       h))


def id_second_derivatives(model, q, v, a, method: str = "finite-diff-2", h=None) -> IDDerivatives:
    """Second-order inverse-dynamics derivatives of one point by finite differences
    (``method`` "finite-diff-1" or "finite-diff-2", step ``h``)."""
    return _second_derivatives(model, q, v, a, method, h, _alg.id_derivatives, _alg.rnea,
                               IDDerivatives)


def fd_second_derivatives(model, q, v, tau, method: str = "finite-diff-2", h=None) -> FDDerivatives:
    """Second-order forward-dynamics derivatives of one point by finite differences
    (``method`` "finite-diff-1" or "finite-diff-2", step ``h``)."""
    return _second_derivatives(model, q, v, tau, method, h, _alg.fd_derivatives, _alg.aba,
                               FDDerivatives)


class FiniteDifferenceDynamics(RobotConfigurationSpace):
    """The :class:`~dynamics.protocol.Dynamics` protocol with second derivatives by finite
    differences on the manifold (``method`` "finite-diff-1" or "finite-diff-2", step ``h``; see
    module docstring).  Values and, for "finite-diff-2", first derivatives come from the
    analytical kernels.  Batches are evaluated knot by knot; with ``lam`` the full tensors are
    contracted over the output index.  Given a user's system on a vector space instead of a
    RobotModel, it is :class:`SystemFiniteDifferences` of that system.  With ``contacts``
    (:mod:`dynamics.contacts`), ``aba`` is the KKT contact dynamics and the differences are
    taken of it (or, for "finite-diff-2", of its analytical first derivatives), and
    ``impulse_derivatives`` of the impact map on them; ``damping`` as for
    :class:`~dynamics.contact_dynamics.ContactDynamics`; ``with_contacts``: the same backend on
    another contact set (:mod:`ddp.phases`)."""

    def __new__(cls, model, method: str = "finite-diff-2", h=None, contacts=None,
                damping: float = 0.0):
        # a user's system on a vector space: its own aba, differentiated
        if isinstance(model, EuclideanDynamics) or (
                not isinstance(model, RobotModel) and isinstance(model, Dynamics)
                and model.model is None):
            return SystemFiniteDifferences(model, method, h)
        return super().__new__(cls)

    def __init__(self, model, method: str = "finite-diff-2", h=None, contacts=None,
                 damping: float = 0.0):
        self.method, self.h = _method_and_step(method, h)
        self.model = robot_model(model, "FiniteDifferenceDynamics")
        self.nq, self.nv = model.nq, model.nv
        self._aba, self._fd_first = _alg.aba, _alg.fd_derivatives
        #: the :class:`~dynamics.contacts.ContactSet` of the constrained dynamics (class
        #: docstring), or None (no contacts: free flight)
        self.contacts = None
        self.damping = _damping(damping)
        if contacts:
            held, d = _contact_set(model, contacts), self.damping
            self.contacts = held
            self._aba = lambda m, q, v, tau: constrained_dynamics(m, held, q, v, tau, d)[0]

            def first(m, q, v, tau):
                c = constrained_derivatives(m, held, q, v, tau, d)
                return FDDerivatives(c.a, c.da_dq, c.da_dv, c.da_dtau)

            self._fd_first = first

    def __repr__(self):
        held = "" if self.contacts is None else f", contacts={self.contacts!r}"
        return (f"FiniteDifferenceDynamics({self.model!r}, method={self.method!r}, "
                f"h={self.h:g}{held})")

    def with_contacts(self, contacts, damping: float = 0.0):
        """This backend (its method and step) on the contacts ``contacts`` (none: free flight)
        with ``damping``; itself when they are its own."""
        if holds(self, contacts, damping):
            return self
        return FiniteDifferenceDynamics(self.model, self.method, self.h, contacts, damping)

    def aba(self, q, v, tau):
        return self._aba(self.model, q, v, tau)

    def _no_inverse(self):
        if self.contacts is not None:
            raise NotImplementedError("FiniteDifferenceDynamics with contacts: the contact "
                                      "forces are not determined by (q, v, a) alone; no "
                                      "inverse dynamics")

    def rnea(self, q, v, a):
        self._no_inverse()
        return _alg.rnea(self.model, q, v, a)

    def id_derivatives(self, q, v, a, order=1):
        _check_order(order)
        self._no_inverse()
        if order == 1:
            return self._first_order(_alg.id_derivatives, q, v, a)
        b = prepare(self.model, q=q, v=v, a=a)
        res = [id_second_derivatives(self.model, b["q"][t], b["v"][t], b["a"][t], self.method,
                                     self.h) for t in range(b.T)]
        return _stack(IDDerivatives, res, b)

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        _check_order(order)
        if order == 1:
            if lam is not None:
                raise ValueError("lam: only used with order=2")
            return self._first_order(self._fd_first, q, v, tau)
        b = prepare(self.model, q=q, v=v, tau=tau) if lam is None else \
            prepare(self.model, q=q, v=v, tau=tau, lam=lam)
        res = []
        for t in range(b.T):
            d = _second_derivatives(self.model, b["q"][t], b["v"][t], b["tau"][t], self.method,
                                    self.h, self._fd_first, self._aba, FDDerivatives)
            if lam is not None:
                for k in ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"):
                    setattr(d, k, np.tensordot(b["lam"][t], getattr(d, k), axes=(0, 0)))
            res.append(d)
        return _stack(FDDerivatives, res, b)

    def impulse_derivatives(self, q, v, restitution: float = 0.0, order: int = 1):
        """The impact map on the contacts at one knot or a batch (v the velocity before it) as
        an :class:`~dynamics.contact_dynamics.ImpulseDerivatives`: ``order`` 0 the values (of
        the analytical kernels), 1 the first derivatives (analytical for "finite-diff-2",
        central differences of the values for "finite-diff-1"), 2 the second-derivative
        tensors of (v+, impulse) by the method's differences too."""
        if self.contacts is None:
            raise ValueError("FiniteDifferenceDynamics without contacts: an impact needs "
                             "contacts (with_contacts)")
        check_order_0_to_2(order)
        r, held, d = _restitution(restitution), self.contacts, self.damping
        if order == 1 and self.method == "finite-diff-2":
            return impulse_dynamics(self.model, held, q, v, r, d, order=1)
        b = prepare(self.model, q=q, v=v)
        v_plus, imp, status = impulse_dynamics(self.model, held, b["q"], b["v"], r, d)
        if order == 0:
            return ImpulseDerivatives(*b.unbatch((v_plus, imp)), status=b.unbatch(status))

        def first(m, Q, V, X):  # w = (v+, impulse); X unused
            e = impulse_dynamics(m, held, Q, V, r, d, order=1)
            return _stacked((e.v_plus, e.impulse), (e.dv_dq, e.dimpulse_dq),
                            (e.dv_dv, e.dimpulse_dv))

        def value(m, Q, V, X):
            return np.concatenate(impulse_dynamics(m, held, Q, V, r, d)[:2], axis=-1)

        n = self.nv
        w = self._differences(value, first, b["q"], b["v"], np.zeros((b.T, n)), order)
        out = (w[1][:, :n], w[2][:, :n], w[1][:, n:], w[2][:, n:])
        second = (w[4], w[6]) if order == 2 else ()
        return ImpulseDerivatives(*b.unbatch((v_plus, imp, *out, status, *second)))

    def contact_derivatives(self, q, v, tau, order: int = 1):
        """The contact dynamics on the contacts with its forces at one knot or a batch, as a
        :class:`~dynamics.contact_dynamics.ContactDerivatives`: ``order`` 0 the values (of the
        analytical kernels), 1 the first derivatives (analytical for "finite-diff-2", central
        differences of the values for "finite-diff-1"), 2 a
        :class:`~dynamics.contact_dynamics.ContactSecondDerivatives` with the tensors of
        (a, lam) by the method's differences."""
        if self.contacts is None:
            raise ValueError("FiniteDifferenceDynamics without contacts: no contact forces "
                             "(with_contacts)")
        check_order_0_to_2(order)
        held, d = self.contacts, self.damping
        if order == 1 and self.method == "finite-diff-2":
            return constrained_derivatives(self.model, held, q, v, tau, d)
        b = prepare(self.model, q=q, v=v, tau=tau)
        a, lam, status = constrained_dynamics(self.model, held, b["q"], b["v"], b["tau"], d)
        if order == 0:
            return values_only(*b.unbatch((a, lam, status)))

        def first(m, Q, V, X):  # w = (a, lam)
            c = constrained_derivatives(m, held, Q, V, X, d)
            return _stacked((c.a, c.lam), (c.da_dq, c.dlam_dq), (c.da_dv, c.dlam_dv),
                            (c.da_dtau, c.dlam_dtau))

        def value(m, Q, V, X):
            return np.concatenate(constrained_dynamics(m, held, Q, V, X, d)[:2], axis=-1)

        n = self.nv
        w = self._differences(value, first, b["q"], b["v"], b["tau"], order)
        fields = (a, lam, *(w[k][:, :n] for k in (1, 2, 3)), *(w[k][:, n:] for k in (1, 2, 3)),
                  status)
        if order == 1:
            return ContactDerivatives(*b.unbatch(fields))
        return ContactSecondDerivatives(*b.unbatch(fields + tuple(w[4:])))

    def _differences(self, value, first, Q, V, X, order):
        """The method's differences of a map w = value(m, Q, V, X) (batched; ``first`` gives
        (w, dw_dq, dw_dv[, dw_dx]) analytically, batched) at each knot of (Q, V, X): ``order``
        1 (w, dw_dq, dw_dv, dw_dx) by central differences of the values, 2 also the tensors
        (w_qq, w_vv, w_qv, w_xq); each stacked over the knots."""
        n = self.nv

        def first_four(m, Q_, V_, X_):
            f = first(m, Q_, V_, X_)
            return FDDerivatives(*f, *(() if len(f) == 4 else
                                       (np.zeros(np.shape(f[1])[:-1] + (n,)),)))

        res = []
        for t in range(Q.shape[0]):
            if order == 1:
                res.append(_central_first(self.model, value, Q[t], V[t], X[t], self.h))
            else:
                res.append(_second_derivatives(self.model, Q[t], V[t], X[t], self.method, self.h,
                                               first_four, value, lambda *w: w))
        return [np.stack(k) for k in zip(*res)]

    def _first_order(self, fn, q, v, x):
        if self.method == "finite-diff-2":
            return fn(self.model, q, v, x)
        # Finite-Diff-1: first derivatives by central differences of the function itself
        f = _alg.rnea if fn is _alg.id_derivatives else self._aba
        cls = IDDerivatives if fn is _alg.id_derivatives else FDDerivatives
        b = prepare(self.model, q=q, v=v, **({"a": x} if cls is IDDerivatives else {"tau": x}))
        X = b["a"] if cls is IDDerivatives else b["tau"]
        res = [cls(*_central_first(self.model, f, b["q"][t], b["v"][t], X[t], self.h))
               for t in range(b.T)]
        return _stack(cls, res, b)


def _central_first(model, f, q, v, x, h):
    n = model.nv
    I = np.eye(n) * h
    Qn = np.tile(q, (n, 1))
    Q = np.concatenate([model.integrate(Qn, I), model.integrate(Qn, -I), np.tile(q, (4 * n, 1))])
    V = np.concatenate([np.tile(v, (2 * n, 1)), v + I, v - I, np.tile(v, (2 * n, 1))])
    X = np.concatenate([np.tile(x, (4 * n, 1)), x + I, x - I])
    F = f(model, Q, V, X).reshape(6, n, -1)
    d = lambda p, m: ((F[p] - F[m]) / (2 * h)).T
    return f(model, q, v, x), d(0, 1), d(2, 3), d(4, 5)


def _stacked(*pairs):
    """Each pair (of a map's outputs, their derivatives) stacked along the output index: the
    values along the last axis, the derivatives along the one before."""
    return tuple(np.concatenate(p, axis=-1 if k == 0 else -2) for k, p in enumerate(pairs))


def _stack(cls, results, b):
    fields = {}
    for k in cls.__dataclass_fields__:
        vals = [getattr(r, k) for r in results]
        fields[k] = None if vals[0] is None else (vals[0] if b.single else np.stack(vals))
    return cls(**fields)


def _first_four(d):
    """(f, df_dq, df_dv, df_dx) of an IDDerivatives / FDDerivatives."""
    return tuple(getattr(d, k) for k in list(type(d).__dataclass_fields__)[:4])


class SystemFiniteDifferences(EuclideanDynamics):
    """:class:`FiniteDifferenceDynamics` of a user's system on a vector space (an
    :class:`~dynamics.protocol.EuclideanDynamics` subclass or a
    :class:`~dynamics.symbolic_system.SymbolicSystem`): its ``aba`` with derivatives by central
    differences, each order from the one below, all perturbed points of a batch in one call of
    the system's ``aba`` (or ``fd_derivatives``).

    * ``"finite-diff-1"``: first derivatives by central differences of ``aba`` (step ``h``),
      second derivatives by central differences of those (the same step);
    * ``"finite-diff-2"``: first derivatives from the system's own ``fd_derivatives`` (exact, if
      it has them), second derivatives by central differences of them; a system with ``aba``
      only is differentiated as by finite-diff-1.
    """

    _BATCHED = ()  # batched through the system's own batched methods

    def __init__(self, system, method: str = "finite-diff-2", h=None):
        self.method, self.h = _method_and_step(method, h)
        self.system = system
        self.nq = self.nv = int(system.nv)
        #: whether the first derivatives are the system's own (finite-diff-2, and it has them)
        self.exact_first = (self.method == "finite-diff-2"
                            and callable(getattr(system, "fd_derivatives", None)))
        if not self.exact_first and method in ("finite-diff-2", "fd2") and h is None:
            self.h = FD1_STEP  # differences of differences: the larger step of finite-diff-1

    def __repr__(self):
        return f"FiniteDifferenceDynamics({self.system!r}, method={self.method!r}, h={self.h:g})"

    @property
    def rollout_function(self):
        """The system's compiled rollout, if it has one (values are the system's own)."""
        return getattr(self.system, "rollout_function", None)

    def aba(self, q, v, tau):
        return self.system.aba(q, v, tau)

    def rnea(self, q, v, a):
        return self.system.rnea(q, v, a)

    def _points(self, q, v, tau):
        args = [np.asarray(x, dtype=float) for x in (q, v, tau)]
        single = args[0].ndim == 1
        Q, V, X = (np.atleast_2d(x) for x in args)
        if not (Q.shape == V.shape == X.shape and Q.shape[1] == self.nv):
            raise ValueError(f"q, v, tau: expected arrays (n,) or (T, n) with n = {self.nv}; "
                             f"got shapes {[x.shape for x in args]}")
        return single, Q, V, X

    def _first(self, Q, V, X):
        """(a, da_dq, da_dv, da_dtau) of a batch (T, n) each."""
        n, T = self.nv, Q.shape[0]
        if self.exact_first:
            d = self.system.fd_derivatives(Q, V, X)
            return tuple(np.reshape(np.asarray(getattr(d, k), dtype=float), s) for k, s in
                         (("a", (T, n)), ("da_dq", (T, n, n)), ("da_dv", (T, n, n)),
                          ("da_dtau", (T, n, n))))
        h = self.h if self.method == "finite-diff-1" else FD1_STEP
        a = np.reshape(self.system.aba(Q, V, X), (T, n))
        return (a, *self._central(lambda q, v, x: np.reshape(self.system.aba(q, v, x), (-1, n)),
                                  Q, V, X, h, (n,)))

    @staticmethod
    def _central(f, Q, V, X, h, shape):
        """Central differences of f (batched, output ``shape`` per point) along each coordinate
        of q, v and tau: three arrays (T, *shape, n), the last axis the direction; one call."""
        T, n = Q.shape
        E = h * np.eye(n)
        pts = []
        for which in range(3):
            for sign in (1.0, -1.0):
                args = [np.repeat(Y[:, None, :], n, axis=1) for Y in (Q, V, X)]
                args[which] = args[which] + sign * E[None]
                pts.append([y.reshape(T * n, n) for y in args])
        Qs, Vs, Xs = (np.concatenate([p[i] for p in pts]) for i in range(3))
        out = np.reshape(f(Qs, Vs, Xs), (6, T, n, *shape))
        return tuple(np.moveaxis((out[2 * w] - out[2 * w + 1]) / (2 * h), 1, -1)
                     for w in range(3))

    def fd_derivatives(self, q, v, tau, order: int = 1, lam=None):
        _check_order(order)
        single, Q, V, X = self._points(q, v, tau)
        a, da_dq, da_dv, da_dtau = self._first(Q, V, X)
        d = FDDerivatives(a, da_dq, da_dv, da_dtau)
        if order == 2:
            n = self.nv

            def first_derivatives(q_, v_, x_):
                return np.stack(self._first(q_, v_, x_)[1:], axis=1)  # (m, 3, n, n)

            hq, hv, _ = self._central(first_derivatives, Q, V, X, self.h, (3, n, n))
            # hq[t, f, i, j, k] = d/dq_k of first derivative f's [i, j]
            d.d2a_dq2, d.d2a_dtaudq, d.d2a_dv2 = hq[:, 0], hq[:, 2], hv[:, 1]
            d.d2a_dqdv = hv[:, 0]
            if lam is not None:
                L = np.atleast_2d(np.asarray(lam, dtype=float))
                for k in ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"):
                    setattr(d, k, np.einsum("ti,tijk->tjk", L, getattr(d, k)))
        if single:
            for k in ("a", "da_dq", "da_dv", "da_dtau", "d2a_dq2", "d2a_dv2", "d2a_dqdv",
                      "d2a_dtaudq"):
                x = getattr(d, k)
                if x is not None:
                    setattr(d, k, x[0])
        return d
