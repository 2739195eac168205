"""Smooth trajectories q(t) written in CasADi, and time derivatives by automatic differentiation:
the independent reference (and the AD baseline) of :mod:`dynamics.higher_order`.

* :func:`velocity_of_curve`: v(t) of a configuration curve q(t) in the toolkit's convention
  (per joint, the local twist of its transform X_J(q(t)) = (R, p): (R^T p', vee(R^T R')) projected
  on the joint's motion subspace), so that q' = v holds exactly.
* :func:`curve_function`: t (, p) -> q(t) and [v, v', ..., v^(K)] by repeated forward-mode AD in t.
* :func:`tau_derivs_function`: t (, p) -> [tau, tau', ..., tau^(r)] by AD in t of the symbolic RNEA
  (:mod:`dynamics.symbolic`), which shares no code with the compiled kernels.  Its expression graph
  grows exponentially with r (each differentiation roughly doubles it).
* :func:`random_curve`: a random smooth curve through every joint type (sums of sinusoids; base and
  spherical orientations as products of three single-axis rotations).
"""

from __future__ import annotations

from typing import Callable

import casadi as cs
import numpy as np

from .kernels import kinematics as _kin
from .symbolic import SymbolicTree, _joint_transform

CurveFn = Callable[[cs.SX, cs.SX], cs.SX]


def quat_mul(a, b):
    """Hamilton product of quaternions stored (x, y, z, w) (Pinocchio's order)."""
    ax, ay, az, aw = a[0], a[1], a[2], a[3]
    bx, by, bz, bw = b[0], b[1], b[2], b[3]
    return cs.vertcat(aw * bx + ax * bw + ay * bz - az * by,
                      aw * by - ax * bz + ay * bw + az * bx,
                      aw * bz + ax * by - ay * bx + az * bw,
                      aw * bw - ax * bx - ay * by - az * bz)


def axis_quat(axis, angle):
    """Quaternion (x, y, z, w) of a rotation by ``angle`` about the unit ``axis``."""
    s = cs.sin(angle / 2)
    return cs.vertcat(axis[0] * s, axis[1] * s, axis[2] * s, cs.cos(angle / 2))


def _d_dt(x, t):
    return cs.jacobian(x, t)


def velocity_of_curve(model, q, t):
    """v(t) (nv x 1 SX) such that q' = v for the configuration curve q(t) (nq x 1 SX)."""
    a = model.arrays
    parts = []
    for i in range(1, model.njoints):
        iq, nqj, iv, nvj = (int(a.iq[i]), int(a.nqj[i]), int(a.iv[i]), int(a.nvj[i]))
        R, p = _joint_transform(int(a.jtype[i]), a.axis[i], float(a.pitch[i]), q[iq:iq + nqj])
        R = cs.SX(R)
        Rd = cs.reshape(_d_dt(cs.reshape(R, 9, 1), t), 3, 3)
        W = cs.mtimes(R.T, Rd)
        twist = cs.vertcat(cs.mtimes(R.T, _d_dt(p, t)), W[2, 1], W[0, 2], W[1, 0])
        S = a.S_local[iv:iv + nvj].T  # (6, nvj)
        proj = np.linalg.solve(S.T @ S, S.T)
        parts.append(cs.mtimes(cs.DM(proj), twist))
    return cs.vertcat(*parts)


def _derivative_stack(x, t, K):
    cols = [x]
    for _ in range(K):
        cols.append(_d_dt(cols[-1], t))
    return cs.horzcat(*cols)


def curve_function(model, q_of_t: CurveFn, K: int, n_params: int = 0) -> cs.Function:
    """``f(t[, p]) -> (q (nq x 1), VD (nv x (K+1)))``: the configuration and [v, ..., v^(K)] of the
    curve ``q_of_t(t, p)`` at time t."""
    t = cs.SX.sym("t")
    p = cs.SX.sym("p", n_params)
    q = q_of_t(t, p)
    VD = _derivative_stack(velocity_of_curve(model, q, t), t, K)
    ins = [t, p] if n_params else [t]
    return cs.Function("curve", ins, [q, VD])


def tau_derivs_function(model, q_of_t: CurveFn, r: int, n_params: int = 0) -> cs.Function:
    """``f(t[, p]) -> TAU (nv x (r+1))``: [tau, tau', ..., tau^(r)] along the curve by AD in t of
    the symbolic RNEA with tau = rnea(q(t), v(t), v'(t))."""
    t = cs.SX.sym("t")
    p = cs.SX.sym("p", n_params)
    q = q_of_t(t, p)
    v = velocity_of_curve(model, q, t)
    tree = SymbolicTree(model)
    tau = tree.rnea(tree.placements(q, None, None), v, _d_dt(v, t))
    ins = [t, p] if n_params else [t]
    return cs.Function("tau_derivs", ins, [_derivative_stack(tau, t, r)])


def _smooth(rng, t, scale=1.0):
    """A random smooth scalar function of t: a constant plus two sinusoids."""
    c, a1, a2 = rng.uniform(-1, 1, 3) * scale
    w1, w2 = rng.uniform(0.5, 2.0, 2)
    f1, f2 = rng.uniform(0, 2 * np.pi, 2)
    return c + a1 * cs.sin(w1 * t + f1) + a2 * cs.sin(w2 * t + f2)


def _orientation(rng, t):
    q0 = rng.normal(size=4)
    q0 /= np.linalg.norm(q0)
    out = cs.DM(q0)
    for axis in np.eye(3)[[2, 1, 0]]:
        out = quat_mul(out, axis_quat(axis, _smooth(rng, t)))
    return out


def random_curve(model, seed: int = 0) -> CurveFn:
    """A random smooth configuration curve ``q_of_t(t, p)`` (p unused) for every joint type."""

    def q_of_t(t, p=None):
        rng = np.random.default_rng(seed)
        a = model.arrays
        parts = []
        for i in range(1, model.njoints):
            jt = int(a.jtype[i])
            if jt in (_kin.REV, _kin.PRI, _kin.HEL):
                parts.append(_smooth(rng, t))
            elif jt == _kin.RUB:
                th = _smooth(rng, t)
                parts.append(cs.vertcat(cs.cos(th), cs.sin(th)))
            elif jt == _kin.SPH:
                parts.append(_orientation(rng, t))
            elif jt == _kin.FF:
                parts.append(cs.vertcat(*[_smooth(rng, t) for _ in range(3)], _orientation(rng, t)))
            elif jt == _kin.PLA:
                th = _smooth(rng, t)
                parts.append(cs.vertcat(_smooth(rng, t), _smooth(rng, t), cs.cos(th), cs.sin(th)))
            else:  # pragma: no cover - every type of kinematics.py is listed above
                raise ValueError(f"joint type code {jt} has no random curve")
        return cs.vertcat(*parts)

    return q_of_t


def evaluate(f: cs.Function, times, params=None):
    """Evaluates a curve or tau-derivative function at many times: returns numpy arrays with a
    leading time axis, the derivative stacks transposed to (T, orders, nv)."""
    times = np.atleast_1d(np.asarray(times, dtype=float))
    fm = f.map(times.size)
    args = [times[None, :]]
    if params is not None:
        args.append(np.repeat(np.asarray(params, float)[:, None], times.size, axis=1))
    out = fm(*args)
    out = out if isinstance(out, (list, tuple)) else [out]
    res = []
    for k, o in enumerate(out):
        arr = np.asarray(o)
        rows, cols = f.size1_out(k), f.size2_out(k)
        if cols > 1:  # map concatenates the per-time (rows x cols) blocks horizontally
            res.append(np.transpose(arr.reshape(rows, times.size, cols), (1, 2, 0)))
        else:
            res.append(arr.T)
    return res if len(res) > 1 else res[0]
