"""Costs of a shooting problem, with exact gradients and Hessians in tangent coordinates.

Conventions as in Crocoddyl, so that a problem written in both has the same optimum: a cost is
``1/2 sum_i w_i r_i^2`` of a residual r with weights w (a scalar or one weight per residual entry);
the problem multiplies running costs by dt, not the terminal cost.

Every cost here is a residual written once in CasADi ``SX`` as a function of the state perturbed on
the manifold, ``(q (+) dq, v, u)``, and one general mechanism (:class:`ResidualCost`) derives, at
``dq = 0`` and for a batch of knots: the value, the gradient, the exact Hessian (Lie-derivative
convention, symmetric since a single perturbation is used) and the Gauss-Newton Hessian
``J_r^T W J_r``.  Derivatives are w.r.t. the tangent state ``dx = (dq, dv)`` (size 2 nv) and u.
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs
import numpy as np

from dynamics import lie
from dynamics.inputs import prepare
from dynamics.kernels import kinematics as _kin
from dynamics.model import RobotModel
from dynamics.symbolic import SymbolicTree, world_placements


@dataclass
class CostDerivatives:
    """Values and derivatives of a cost at T knots: l (T,), lx (T, ndx), lu (T, nu),
    lxx (T, ndx, ndx), lxu (T, ndx, nu), luu (T, nu, nu)."""

    l: np.ndarray
    lx: np.ndarray
    lu: np.ndarray
    lxx: np.ndarray
    lxu: np.ndarray
    luu: np.ndarray

    def __add__(self, other):
        return CostDerivatives(*(getattr(self, k) + getattr(other, k)
                                 for k in self.__dataclass_fields__))

    def scaled(self, s):
        return CostDerivatives(*(s * getattr(self, k) for k in self.__dataclass_fields__))


def _weights(weight, size, name):
    w = np.broadcast_to(np.asarray(weight, dtype=float), (size,)) if np.ndim(weight) == 0 \
        else np.asarray(weight, dtype=float)
    if w.shape != (size,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"{name}: expected a non-negative scalar or {size} non-negative weights; "
                         f"got {weight!r}")
    return w.copy()


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


class ResidualCost(Cost):
    """``1/2 sum_i w_i r_i(q (+) dq, v, u)^2`` from a CasADi residual (see module docstring).
    Subclasses implement ``residual(q, dq, v, u)`` returning an SX column vector."""

    def __init__(self, nq, nv, nu, weight, nr, name):
        self.nq, self.nv, self.nu, self.nr = int(nq), int(nv), int(nu), int(nr)
        self.weight = _weights(weight, self.nr, f"{name} weight")
        self._fn = None
        self._maps = {}

    def residual(self, q, dq, v, u):
        raise NotImplementedError

    def _function(self):
        if self._fn is None:
            q, dq = cs.SX.sym("q", self.nq), cs.SX.sym("dq", self.nv)
            v, u = cs.SX.sym("v", self.nv), cs.SX.sym("u", self.nu)
            r = self.residual(q, dq, v, u)
            w = cs.DM(self.weight)
            l = 0.5 * cs.dot(w * r, r)
            z = cs.vertcat(dq, v, u)
            H, g = cs.hessian(l, z)
            J = cs.jacobian(r, z)
            GN = cs.mtimes(J.T, cs.mtimes(cs.diag(w), J))
            outs = cs.substitute([l, g, H, GN], [dq], [cs.SX.zeros(self.nv)])
            self._fn = cs.Function(type(self).__name__, [q, v, u], outs)
        return self._fn

    def _eval(self, xs, us, k):
        xs = np.atleast_2d(np.asarray(xs, dtype=float))
        T = xs.shape[0]
        us = np.zeros((T, self.nu)) if us is None else np.atleast_2d(np.asarray(us, dtype=float))
        f = self._function()
        if T not in self._maps:
            self._maps[T] = f.map(T, "serial")
        outs = self._maps[T](xs[:, :self.nq].T, xs[:, self.nq:].T, us.T)
        return [np.asarray(o) for o in outs[:k]], T

    def calc(self, xs, us):
        (l,), _ = self._eval(xs, us, 1)
        return l.ravel()

    def calc_diff(self, xs, us, hessians="exact"):
        if hessians not in ("exact", "gauss-newton"):
            raise ValueError(f"hessians: expected 'exact' or 'gauss-newton'; got {hessians!r}")
        (l, g, H, GN), T = self._eval(xs, us, 4)
        nz = 2 * self.nv
        nall = nz + self.nu
        g = g.T
        H = (H if hessians == "exact" else GN).reshape(nall, T, nall).transpose(1, 0, 2)
        return CostDerivatives(l.ravel(), g[:, :nz], g[:, nz:], H[:, :nz, :nz], H[:, :nz, nz:],
                               H[:, nz:, nz:])


def _model_of(dynamics_or_model):
    """The RobotModel behind a backend (or the model itself), None for a vector-space system."""
    if isinstance(dynamics_or_model, RobotModel):
        return dynamics_or_model
    return getattr(dynamics_or_model, "model", None)


def configuration_difference(model, q_ref, q, dq):
    """SX residual ``(q (+) dq) (-) q_ref`` joint by joint (Pinocchio's ``difference``)."""
    a = model.arrays
    parts = []
    for i in range(1, model.njoints):
        t = int(a.jtype[i])
        sq = slice(int(a.iq[i]), int(a.iq[i] + a.nqj[i]))
        sv = slice(int(a.iv[i]), int(a.iv[i] + a.nvj[i]))
        if t in (_kin.REV, _kin.PRI):
            parts.append(q[sq] + dq[sv] - q_ref[sq])
        else:
            rel = cs.mtimes([lie.inverse(t, lie.element(t, cs.DM(q_ref[sq]))),
                             lie.element(t, q[sq]), lie.exp_group(t, dq[sv])])
            parts.append(lie.log_group(t, rel))
    return cs.vertcat(*parts)


class StateRegularization(ResidualCost):
    """Residual ``x (-) x_ref = (q (-) q_ref, v - v_ref)`` (size 2 nv).  ``dynamics``: a backend
    (or RobotModel) for the configuration manifold, or a vector-space system (nq = nv)."""

    def __init__(self, dynamics, x_ref, weight, nu=0):
        self.model = _model_of(dynamics)
        nq, nv = int(dynamics.nq), int(dynamics.nv)
        x_ref = np.asarray(x_ref, dtype=float)
        if x_ref.shape != (nq + nv,) or not np.all(np.isfinite(x_ref)):
            raise ValueError(f"x_ref: expected {nq + nv} finite values (q, v); got shape "
                             f"{x_ref.shape}")
        if self.model is not None:
            prepare(self.model, q=x_ref[:nq])  # unit quaternions etc.
        self.x_ref = x_ref
        super().__init__(nq, nv, nu, weight, 2 * nv, "StateRegularization")

    def residual(self, q, dq, v, u):
        q_ref, v_ref = self.x_ref[:self.nq], self.x_ref[self.nq:]
        if self.model is None:
            rq = q + dq - cs.DM(q_ref)
        else:
            rq = configuration_difference(self.model, q_ref, q, dq)
        return cs.vertcat(rq, v - cs.DM(v_ref))


class ControlRegularization(ResidualCost):
    """Residual ``u - u_ref`` (u_ref defaults to zero)."""

    def __init__(self, nu, weight, u_ref=None, nq=None, nv=None):
        self.u_ref = np.zeros(nu) if u_ref is None else np.asarray(u_ref, dtype=float)
        if self.u_ref.shape != (nu,):
            raise ValueError(f"u_ref: expected shape ({nu},); got {self.u_ref.shape}")
        super().__init__(nq or 0, nv or 0, nu, weight, nu, "ControlRegularization")

    def bind(self, nq, nv):
        """A copy sized for a state with (nq, nv) (done by the problem)."""
        return ControlRegularization(self.nu, self.weight, self.u_ref, nq, nv)

    def residual(self, q, dq, v, u):
        return u - cs.DM(self.u_ref)


class _FrameCost(ResidualCost):
    def __init__(self, model, frame_name, weight, nr, nu, name):
        self.model = _model_of(model)
        if self.model is None:
            raise ValueError(f"model: {name} needs a RobotModel (or a backend with .model)")
        pm = self.model.pin_model
        if not pm.existFrame(frame_name):
            names = [f.name for f in pm.frames]
            raise ValueError(f"frame_name: no frame {frame_name!r} in {self.model.name} (frames: "
                             f"{', '.join(names[:12])}{', ...' if len(names) > 12 else ''})")
        self.frame_name = frame_name
        frame = pm.frames[pm.getFrameId(frame_name)]
        self._joint = int(frame.parentJoint)
        self._fR, self._fp = np.array(frame.placement.rotation), np.array(frame.placement.translation)
        self._tree = SymbolicTree(self.model)
        super().__init__(self.model.nq, self.model.nv, nu, weight, nr, name)

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

    def __init__(self, model, frame_name, placement, weight, nu=0):
        M = np.asarray(placement.homogeneous if hasattr(placement, "homogeneous") else placement,
                       dtype=float)
        if M.shape != (4, 4):
            raise ValueError(f"placement: expected a pinocchio.SE3 or a 4x4 matrix; got {M.shape}")
        self.placement = M
        super().__init__(model, frame_name, weight, 6, nu, "FramePlacement")

    def residual(self, q, dq, v, u):
        R, p = self.frame_placement(q, dq)
        Rr, pr = cs.DM(self.placement[:3, :3]), cs.DM(self.placement[:3, 3])
        rel = cs.vertcat(cs.horzcat(cs.mtimes(Rr.T, R), cs.mtimes(Rr.T, p - pr)),
                         cs.DM([[0, 0, 0, 1]]))
        return lie.log_group(_kin.FF, rel)


class FrameTranslation(_FrameCost):
    """Residual ``oMf.translation - position`` (3)."""

    def __init__(self, model, frame_name, position, weight, nu=0):
        self.position = np.asarray(position, dtype=float)
        if self.position.shape != (3,):
            raise ValueError(f"position: expected shape (3,); got {self.position.shape}")
        super().__init__(model, frame_name, weight, 3, nu, "FrameTranslation")

    def residual(self, q, dq, v, u):
        return self.frame_placement(q, dq)[1] - cs.DM(self.position)


class Sum(Cost):
    """The sum of costs (all sized for the same state and control)."""

    def __init__(self, costs):
        self.costs = list(costs)
        if not self.costs:
            raise ValueError("costs: expected at least one cost")
        self.nq, self.nv, self.nu = self.costs[0].nq, self.costs[0].nv, self.costs[0].nu

    def calc(self, xs, us):
        return sum(c.calc(xs, us) for c in self.costs)

    def calc_diff(self, xs, us, hessians="exact"):
        out = self.costs[0].calc_diff(xs, us, hessians)
        for c in self.costs[1:]:
            out = out + c.calc_diff(xs, us, hessians)
        return out


def bind(cost, nq, nv, nu):
    """The cost sized for the problem's (nq, nv, nu): a cost built without knowing nu (state and
    frame costs default to nu = 0) gets the control dimension here."""
    if isinstance(cost, Sum):
        return Sum([bind(c, nq, nv, nu) for c in cost.costs])
    if isinstance(cost, ControlRegularization):
        if cost.nu != nu:
            raise ValueError(f"ControlRegularization: nu = {cost.nu}, the problem has nu = {nu}")
        return cost.bind(nq, nv) if (cost.nq, cost.nv) != (nq, nv) else cost
    if isinstance(cost, ResidualCost):
        if (cost.nq, cost.nv) != (nq, nv):
            raise ValueError(f"{type(cost).__name__}: sized for nq={cost.nq}, nv={cost.nv}; "
                             f"the problem has nq={nq}, nv={nv}")
        if cost.nu != nu:
            cost.nu, cost._fn, cost._maps = nu, None, {}
        return cost
    return cost
