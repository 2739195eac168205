"""The configuration-space operations ``integrate`` and ``difference`` per joint group: their
exact symbolic Exp / Log (CasADi; the CasADi residuals of the costs and the symbolic dynamics
build on them, and the tests take them as the reference), and the compiled second-order
expansion of ``integrate`` that the DDP integrator needs.

Every joint's configuration is an element of a matrix Lie group written as a homogeneous matrix
(revolute / prismatic: R, handled additively; unbounded revolute: SO(2); spherical: SO(3);
planar: SE(2); free-flyer: SE(3)), with ``q (+) d = X(q) Exp(d)`` and ``q1 (-) q0 =
Log(X(q0)^-1 X(q1))``, exactly as Pinocchio.  ``Exp`` and ``Log`` are written in closed form with
Taylor series below a small angle, so that they and their derivatives are exact at and near the
identity (where the derivatives are evaluated).  ``Log`` assumes rotation angles below pi.

:func:`integrate_expansion` gives, for ``G(dq, dw) = ((q (+) dq) (+) (w + dw)) (-) (q (+) w)``,
the Jacobians ``J_q = dG/ddq``, ``J_w = dG/ddw`` at 0 (Pinocchio's ``dIntegrate``) and the
``lam``-contracted Hessian ``sum_i lam_i d^2 G_i / d(dq, dw)^2`` (2n x 2n): the second-order terms
of ``(+)`` that an exact second-order model of a discrete step on the manifold needs (zero for
vector-space joints).  G does not depend on q (left invariance).  Both are closed forms
(:mod:`dynamics.kernels.lie_group`); the Hessians follow from Baker-Campbell-Hausdorff and the
Hessian of the logarithm (see :func:`~dynamics.kernels.lie_group.integrate_expansion_point`).

A leaf module: it imports nothing from the algorithms or the backends (the symbolic dynamics of
:mod:`dynamics.symbolic` builds on its ``skew``, ``quat_rot`` and ``exp_group``).
"""

from __future__ import annotations

from dataclasses import dataclass

import casadi as cs
import numpy as np

from .inputs import prepare
from .jit import num_chunks, run_in_chunks
from .kernels import kinematics as _kin
from .kernels import lie_group as _lg

_SMALL = 1e-2  # theta^2 below which the Taylor series are used (truncation error < 1e-17)


def _series(s, coeffs):
    out = 0
    for c in reversed(coeffs):
        out = out * s + c
    return out


def _guarded(s, closed, coeffs):
    """closed(theta) for theta^2 = s above _SMALL, else the Taylor series in s."""
    safe = cs.if_else(s < _SMALL, _SMALL, s)  # keeps the closed branch finite (and its AD)
    return cs.if_else(s < _SMALL, _series(s, coeffs), closed(cs.sqrt(safe)))


def sinc(s):      # sin(t) / t
    return _guarded(s, lambda t: cs.sin(t) / t, [1, -1 / 6, 1 / 120, -1 / 5040, 1 / 362880])


def cosc(s):      # (1 - cos t) / t^2
    return _guarded(s, lambda t: (1 - cs.cos(t)) / t ** 2,
                    [1 / 2, -1 / 24, 1 / 720, -1 / 40320, 1 / 3628800])


def sinc3(s):     # (t - sin t) / t^3
    return _guarded(s, lambda t: (t - cs.sin(t)) / t ** 3,
                    [1 / 6, -1 / 120, 1 / 5040, -1 / 362880, 1 / 39916800])


def vinv_coeff(s):  # (1 - t sin t / (2 (1 - cos t))) / t^2
    return _guarded(s, lambda t: (1 - t * cs.sin(t) / (2 * (1 - cs.cos(t)))) / t ** 2,
                    [1 / 12, 1 / 720, 1 / 30240, 1 / 1209600, 1 / 47900160])


def skew(w):
    """[w]x, the 3x3 cross-product matrix of a 3-vector (SX or DM)."""
    return cs.vertcat(cs.horzcat(0, -w[2], w[1]), cs.horzcat(w[2], 0, -w[0]),
                      cs.horzcat(-w[1], w[0], 0))


def quat_rot(x, y, z, w):
    """The rotation matrix of the quaternion (x, y, z, w) (Pinocchio's order), normalized first."""
    n = cs.sqrt(x * x + y * y + z * z + w * w)
    x, y, z, w = x / n, y / n, z / n, w / n
    return cs.vertcat(
        cs.horzcat(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
        cs.horzcat(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
        cs.horzcat(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))


def exp_so3(w):
    W = skew(w)
    s = cs.dot(w, w)
    return cs.SX.eye(3) + sinc(s) * W + cosc(s) * cs.mtimes(W, W)


def log_so3(R):
    """Rotation vector of R (angle below pi): theta / (2 sin theta) (R - R^T)^vee."""
    c = (R[0, 0] + R[1, 1] + R[2, 2] - 1) / 2
    # theta / (2 sin theta) as a function of t = 1 - cos(theta): series near 0, else closed form
    t = 1 - c
    t_safe = cs.if_else(t < _SMALL / 2, _SMALL / 2, t)
    closed = cs.acos(1 - t_safe) / (2 * cs.sqrt(t_safe * (2 - t_safe)))
    series = _series(t, [1 / 2, 1 / 6, 2 / 45, 4 / 315, 2 / 525, 4 / 3465])
    f = cs.if_else(t < _SMALL / 2, series, closed)
    return f * cs.vertcat(R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])


def _hom(R, p):
    n = R.shape[0]
    return cs.vertcat(cs.horzcat(R, p), cs.horzcat(cs.SX.zeros(1, n), 1))


def exp_group(jtype, d):
    """Exp of a tangent vector d of the joint's group, as a homogeneous matrix (SE(3): 4x4,
    SO(3): 3x3, SE(2): 3x3, SO(2): 2x2)."""
    if jtype == _kin.SPH:
        return exp_so3(d)
    if jtype == _kin.FF:
        v, w = d[:3], d[3:]
        W = skew(w)
        s = cs.dot(w, w)
        V = cs.SX.eye(3) + cosc(s) * W + sinc3(s) * cs.mtimes(W, W)
        return _hom(exp_so3(w), cs.mtimes(V, v))
    if jtype == _kin.PLA:
        w = d[2]
        s = w * w
        R = cs.vertcat(cs.horzcat(cs.cos(w), -cs.sin(w)), cs.horzcat(cs.sin(w), cs.cos(w)))
        V = cs.vertcat(cs.horzcat(sinc(s), -w * cosc(s)), cs.horzcat(w * cosc(s), sinc(s)))
        return _hom(R, cs.mtimes(V, d[:2]))
    if jtype == _kin.RUB:
        return cs.vertcat(cs.horzcat(cs.cos(d[0]), -cs.sin(d[0])),
                          cs.horzcat(cs.sin(d[0]), cs.cos(d[0])))
    raise ValueError(f"joint type {jtype} is a vector space")


def log_group(jtype, M):
    """Inverse of :func:`exp_group` (rotation angles below pi)."""
    if jtype == _kin.SPH:
        return log_so3(M)
    if jtype == _kin.FF:
        R, p = M[:3, :3], M[:3, 3]
        w = log_so3(R)
        W = skew(w)
        Vinv = cs.SX.eye(3) - 0.5 * W + vinv_coeff(cs.dot(w, w)) * cs.mtimes(W, W)
        return cs.vertcat(cs.mtimes(Vinv, p), w)
    if jtype == _kin.PLA:
        w = cs.atan2(M[1, 0], M[0, 0])
        s = w * w
        A, B = sinc(s), w * cosc(s)
        Vinv = cs.vertcat(cs.horzcat(A, B), cs.horzcat(-B, A)) / (A * A + B * B)
        return cs.vertcat(cs.mtimes(Vinv, M[:2, 2]), w)
    if jtype == _kin.RUB:
        return cs.atan2(M[1, 0], M[0, 0])
    raise ValueError(f"joint type {jtype} is a vector space")


def inverse(jtype, M):
    n = M.shape[0]
    if jtype in (_kin.SPH, _kin.RUB):
        return M.T
    R, p = M[:n - 1, :n - 1], M[:n - 1, n - 1]
    return _hom(R.T, -cs.mtimes(R.T, p))


def element(jtype, qj):
    """The joint configuration qj (Pinocchio layout) as a homogeneous matrix."""
    if jtype == _kin.SPH:
        return quat_rot(qj[0], qj[1], qj[2], qj[3])
    if jtype == _kin.FF:
        return _hom(quat_rot(qj[3], qj[4], qj[5], qj[6]), qj[:3])
    if jtype == _kin.PLA:
        n = cs.sqrt(qj[2] ** 2 + qj[3] ** 2)
        c, s = qj[2] / n, qj[3] / n
        return _hom(cs.vertcat(cs.horzcat(c, -s), cs.horzcat(s, c)), qj[:2])
    if jtype == _kin.RUB:
        n = cs.sqrt(qj[0] ** 2 + qj[1] ** 2)
        c, s = qj[0] / n, qj[1] / n
        return cs.vertcat(cs.horzcat(c, -s), cs.horzcat(s, c))
    raise ValueError(f"joint type {jtype} is a vector space")


LIE_TYPES = (_kin.RUB, _kin.SPH, _kin.FF, _kin.PLA)
#: the largest tangent size of a Lie-group joint (free flyer)
MAX_BLOCK = 6


@dataclass
class IntegrateExpansion:
    """The second-order expansion of ``G(dq, dw) = ((q (+) dq) (+) (w + dw)) (-) (q (+) w)`` at
    T knots: ``Jq``, ``Jw`` (T, n, n) (Pinocchio's ``dIntegrate``), and for each Lie-group joint b
    (tangent offset ``offsets[b]``, size ``sizes[b]`` = m) the Hessians ``H[t, b, a]`` (2m, 2m) of
    component a of G in (dq, dw) of that joint (zero-padded to MAX_BLOCK).  Vector-space joints
    have identity Jacobians and no second-order term."""

    Jq: np.ndarray
    Jw: np.ndarray
    offsets: np.ndarray
    sizes: np.ndarray
    H: np.ndarray

    def contracted(self, lam):
        """sum_i lam_i d2G_i as (T, 2n, 2n) in the coordinates (dq, dw); lam (T, n)."""
        T, n = self.Jq.shape[0], self.Jq.shape[1]
        out = np.zeros((T, 2 * n, 2 * n))
        for b, (o, m) in enumerate(zip(self.offsets, self.sizes)):
            h = np.einsum("ta,taij->tij", lam[:, o:o + m], self.H[:, b, :m, :2 * m, :2 * m])
            ix = np.r_[o:o + m, n + o:n + o + m]
            out[:, ix[:, None], ix[None, :]] = h
        return out


def integrate_second_order(model, q, w, hessian: bool = True) -> IntegrateExpansion:
    """:class:`IntegrateExpansion` of a batch q (T, nq), w (T, nv), in closed form
    (:func:`dynamics.kernels.lie_group.integrate_expansion_batch`, parallel over knots); the
    Hessians only with ``hessian`` (zeros otherwise)."""
    b = prepare(model, q=q, dq=w)
    offsets, sizes = lie_blocks(model)
    T, nv = b.T, model.nv
    H = np.zeros((T, len(offsets), 6, 12, 12))
    if len(offsets) == 0:  # a vector space: (+) is a sum (and the kernel never compiles)
        eye = np.broadcast_to(np.eye(nv), (T, nv, nv))
        return IntegrateExpansion(eye.copy(), eye.copy(), offsets, sizes, H)
    Jq, Jw = np.empty((T, nv, nv)), np.empty((T, nv, nv))
    run_in_chunks(_lg.integrate_expansion_batch, _lg.integrate_expansion_chunk,
                  (*model.kernel_args, b["dq"], bool(hessian), Jq, Jw, H), num_chunks(T))
    return IntegrateExpansion(Jq, Jw, offsets, sizes, H)


def lie_blocks(model) -> tuple[np.ndarray, np.ndarray]:
    """The blocks of ``model``'s velocity whose (+) is not a sum (free flyer, spherical,
    planar, ...: the joints of ``LIE_TYPES``): their offsets in v and their sizes (int64)."""
    a = model.arrays
    blocks = [i for i in range(1, model.njoints) if int(a.jtype[i]) in LIE_TYPES]
    return (np.array([int(a.iv[i]) for i in blocks], dtype=np.int64),
            np.array([int(a.nvj[i]) for i in blocks], dtype=np.int64))


def integrate_expansion(model, q, w, lam):
    """(J_q, J_w, H) of ``(q (+) dq) (+) (w + dw)`` at dq = dw = 0 (module docstring), H the
    ``lam``-contracted Hessian.

    q (nq,), w (nv,), lam (nv,) or batches (T, ...); returns J_q, J_w (n, n) and H (2n, 2n) in
    the coordinates (dq, dw), or with a leading T axis.
    """
    b = prepare(model, q=q, dq=w, lam=lam)
    e = integrate_second_order(model, b["q"], b["dq"])
    return b.unbatch((e.Jq, e.Jw, e.contracted(b["lam"])))
