"""RNEA and ABA written once for CasADi ``SX``, from the same :class:`~dynamics.model.RobotModel`
arrays as the compiled kernels (no per-robot code).

The dynamics is written in body-local frames (Featherstone), spatial vectors ``[lin, ang]``.  Each
joint transform carries two local perturbations of its configuration, ``eps`` and ``delta``
(tangent vectors of size nv)::

    X_J(q) -> X_J(q) E(S eps) E(S delta),        E(xi) = (I + [w]x, v)  for xi = [v, w]

E agrees with the group exponential to first order, which is all that the derivatives below use:
the Jacobian in ``delta`` at 0 is the Lie derivative along the right perturbation ``q (+) delta``,
and the mixed Jacobian in ``delta`` then ``eps`` is ``L_{eps_k}(L_{delta_j} f)`` exactly (a mixed
second derivative of f(X E(eps) E(delta)) involves only the first-order terms of E).  So the
symbolic derivatives follow the convention of the analytical kernels,
``T[i, j, k] = L_{x_k}(L_{x_j} f_i)``, including the non-symmetric q-q blocks of multi-DoF joints.
"""

from __future__ import annotations

from fractions import Fraction
from math import factorial

import casadi as cs
import numpy as np

from .kernels import kinematics as _kin
from .lie import exp_group, quat_rot, skew


def _rodrigues(u, c, s):
    u = cs.DM(u)
    return c * cs.DM.eye(3) + s * skew(u) + (1 - c) * cs.mtimes(u, u.T)


def _joint_transform(jtype, axis, pitch, qj):
    """(R, p) of X_J(q) for one joint (child frame in the joint's parent-side frame)."""
    zero = cs.SX.zeros(3, 1)
    if jtype == _kin.REV:
        return _rodrigues(axis, cs.cos(qj[0]), cs.sin(qj[0])), zero
    if jtype == _kin.HEL:
        return _rodrigues(axis, cs.cos(qj[0]), cs.sin(qj[0])), pitch * qj[0] * cs.DM(axis)
    if jtype == _kin.RUB:
        n = cs.sqrt(qj[0] ** 2 + qj[1] ** 2)
        return _rodrigues(axis, qj[0] / n, qj[1] / n), zero
    if jtype == _kin.PRI:
        return cs.SX.eye(3), qj[0] * cs.DM(axis)
    if jtype == _kin.SPH:
        return quat_rot(qj[0], qj[1], qj[2], qj[3]), zero
    if jtype == _kin.FF:
        return quat_rot(qj[3], qj[4], qj[5], qj[6]), cs.vertcat(qj[0], qj[1], qj[2])
    if jtype == _kin.PLA:
        n = cs.sqrt(qj[2] ** 2 + qj[3] ** 2)
        c, s = qj[2] / n, qj[3] / n
        R = cs.vertcat(cs.horzcat(c, -s, 0), cs.horzcat(s, c, 0), cs.horzcat(0, 0, 1))
        return R, cs.vertcat(qj[0], qj[1], 0)
    raise ValueError(f"joint type code {jtype} is not supported by the symbolic dynamics")


def _compose(A, B):
    return cs.mtimes(A[0], B[0]), A[1] + cs.mtimes(A[0], B[1])


def _first_order_exp(xi):
    return cs.SX.eye(3) + skew(xi[3:]), xi[:3]


def _exact_exp(xi):
    M = exp_group(_kin.FF, xi)
    return M[:3, :3], M[:3, 3]


def world_placements(tree, X):
    """oM_i (R, p) of every joint from the parent placements X of :meth:`SymbolicTree.placements`."""
    out = [(cs.SX.eye(3), cs.SX.zeros(3, 1))]
    for i in range(1, tree.nj):
        out.append(_compose(out[tree.parent[i]], X[i]))
    return out


def frame_velocity(tree, X, v, joint, fR, fp):
    """The spatial velocity [lin, ang] (6 x 1 SX) of the frame ``jMf = (fR, fp)`` on ``joint``
    in the frame's own axes (Pinocchio's ``LOCAL``), for the parent placements X of
    :meth:`SymbolicTree.placements` and the velocity v."""
    V = [cs.SX.zeros(6, 1)] * (joint + 1)
    for i in range(1, joint + 1):  # parents come first
        sl = slice(tree.iv[i], tree.iv[i] + tree.nvj[i])
        V[i] = _motion_to_child(X[i], V[tree.parent[i]]) + cs.mtimes(tree.S[i], v[sl])
    return _motion_to_child((cs.DM(fR), cs.DM(fp)), V[joint])


def _motion_to_child(X, m):
    """Motion m given in the parent frame, expressed in the child frame X = parent_M_child."""
    R, p = X
    w = m[3:]
    return cs.vertcat(cs.mtimes(R.T, m[:3] - cs.cross(p, w)), cs.mtimes(R.T, w))


def _force_to_parent(X, f):
    R, p = X
    fl = cs.mtimes(R, f[:3])
    return cs.vertcat(fl, cs.mtimes(R, f[3:]) + cs.cross(p, fl))


def _motion_matrix(X):
    """6x6 matrix of :func:`_motion_to_child`; forces go to the parent with its transpose."""
    R, p = X
    Z = cs.SX.zeros(3, 3)
    return cs.vertcat(cs.horzcat(R.T, -cs.mtimes(R.T, skew(p))), cs.horzcat(Z, R.T))


def _mcross(v, m):
    return cs.vertcat(cs.cross(v[3:], m[:3]) + cs.cross(v[:3], m[3:]), cs.cross(v[3:], m[3:]))


def _fcross(v, f):
    return cs.vertcat(cs.cross(v[3:], f[:3]), cs.cross(v[3:], f[3:]) + cs.cross(v[:3], f[:3]))


def _spatial_inertia(mass, com, Icom):
    c = skew(cs.DM(com))
    return cs.DM(np.block([[mass * np.eye(3), -mass * np.array(c)],
                           [mass * np.array(c), Icom - mass * np.array(c @ c)]]))


def spd_solve(A, B):
    """Solve A X = B for a small symmetric positive-definite SX matrix A by an unpivoted
    L D L^T factorization written out in scalar operations (no symbolic pivoting), eliminating
    the last row first: for a mass matrix in a tree's order (parents first), the leaves go
    first and the factors keep the tree's zeros."""
    n = A.shape[0]
    L = [[None] * n for _ in range(n)]
    d = [None] * n
    o = list(reversed(range(n)))
    for j in range(n):
        d[j] = A[o[j], o[j]] - sum((L[j][k] ** 2 * d[k] for k in range(j)), cs.SX(0))
        for i in range(j + 1, n):
            L[i][j] = (A[o[i], o[j]]
                       - sum((L[i][k] * L[j][k] * d[k] for k in range(j)), cs.SX(0))) / d[j]
    X = []
    for c in range(B.shape[1]):
        y = [None] * n
        for i in range(n):
            y[i] = B[o[i], c] - sum((L[i][k] * y[k] for k in range(i)), cs.SX(0))
        x = [None] * n
        for i in reversed(range(n)):
            x[i] = y[i] / d[i] - sum((L[k][i] * x[k] for k in range(i + 1, n)), cs.SX(0))
        X.append(cs.vertcat(*x[::-1]))
    return cs.horzcat(*X)


class SymbolicTree:
    """The kinematic tree of a RobotModel with the perturbed joint transforms as SX expressions.

    ``placements(q, eps, delta)`` gives, for every joint i >= 1, parent_M_i(q (+) eps (+) delta)
    to the order needed (see module docstring).
    """

    def __init__(self, model):
        a = model.arrays
        self.model = model
        self.nj = model.njoints
        self.parent = [int(x) for x in a.parent]
        self.jtype = [int(x) for x in a.jtype]
        self.iq = [int(x) for x in a.iq]
        self.nqj = [int(x) for x in a.nqj]
        self.iv = [int(x) for x in a.iv]
        self.nvj = [int(x) for x in a.nvj]
        self.S = [cs.DM(a.S_local[self.iv[i]:self.iv[i] + self.nvj[i]].T) if i else None
                  for i in range(self.nj)]
        self.inertia = [_spatial_inertia(a.mass[i], a.com[i], a.Icom[i]) for i in range(self.nj)]
        self.gravity = cs.DM(a.gravity)
        self.armature = [float(x) for x in a.armature]
        self._axis = a.axis
        self._pitch = a.pitch
        self._place = [(cs.DM(a.place_R[i]), cs.DM(a.place_p[i])) for i in range(self.nj)]

    def placements(self, q, eps, delta, exact: bool = False, more=()):
        """parent_M_i for every joint; ``exact`` uses the group exponential Exp(S d) instead of
        its first-order part (needed for a Hessian in a single perturbation).  ``more``: further
        perturbations applied after ``delta`` (innermost last: a mixed derivative in the
        perturbations p_1, ..., p_k in that order is L_{p_1}(...(L_{p_k} f)))."""
        exp = _exact_exp if exact else _first_order_exp
        out = [None]
        for i in range(1, self.nj):
            qj = q[self.iq[i]:self.iq[i] + self.nqj[i]]
            XJ = _joint_transform(self.jtype[i], self._axis[i], float(self._pitch[i]), qj)
            sl = slice(self.iv[i], self.iv[i] + self.nvj[i])
            for pert in (eps, delta, *more):
                if pert is not None:
                    XJ = _compose(XJ, exp(cs.mtimes(self.S[i], pert[sl])))
            out.append(_compose(self._place[i], XJ))
        return out

    def rnea(self, X, v, a):
        """tau (nv x 1 SX) for placements X, velocity v and acceleration a."""
        nj, par = self.nj, self.parent
        V = [cs.SX.zeros(6, 1)] * nj
        A = [-self.gravity] * nj
        F = [None] * nj
        for i in range(1, nj):
            sl = slice(self.iv[i], self.iv[i] + self.nvj[i])
            vJ = cs.mtimes(self.S[i], v[sl])
            V[i] = _motion_to_child(X[i], V[par[i]]) + vJ
            A[i] = (_motion_to_child(X[i], A[par[i]]) + cs.mtimes(self.S[i], a[sl])
                    + _mcross(V[i], vJ))
            I = self.inertia[i]
            F[i] = cs.mtimes(I, A[i]) + _fcross(V[i], cs.mtimes(I, V[i]))
        tau = [None] * self.model.nv
        for i in range(nj - 1, 0, -1):
            t = cs.mtimes(self.S[i].T, F[i])
            for r in range(self.nvj[i]):
                k = self.iv[i] + r
                tau[k] = t[r] + self.armature[k] * a[k]
            if par[i] > 0:
                F[par[i]] = F[par[i]] + _force_to_parent(X[i], F[i])
        return cs.vertcat(*tau)

    def aba(self, X, v, tau):
        """Joint accelerations (nv x 1 SX) by the articulated-body algorithm."""
        nj, par = self.nj, self.parent
        V = [cs.SX.zeros(6, 1)] * nj
        c = [None] * nj
        IA = [None] * nj
        pA = [None] * nj
        for i in range(1, nj):
            sl = slice(self.iv[i], self.iv[i] + self.nvj[i])
            vJ = cs.mtimes(self.S[i], v[sl])
            V[i] = _motion_to_child(X[i], V[par[i]]) + vJ
            c[i] = _mcross(V[i], vJ)
            IA[i] = cs.SX(self.inertia[i])
            pA[i] = _fcross(V[i], cs.mtimes(self.inertia[i], V[i]))
        U, Dinv_u, Dinv_UT = [None] * nj, [None] * nj, [None] * nj
        for i in range(nj - 1, 0, -1):
            sl = slice(self.iv[i], self.iv[i] + self.nvj[i])
            S = self.S[i]
            U[i] = cs.mtimes(IA[i], S)
            D = cs.mtimes(S.T, U[i]) + cs.diag(cs.DM(self.armature[sl]))
            u = tau[sl] - cs.mtimes(S.T, pA[i])
            sol = spd_solve(D, cs.horzcat(u, U[i].T))
            Dinv_u[i], Dinv_UT[i] = sol[:, 0], sol[:, 1:]
            if par[i] > 0:
                Ia = IA[i] - cs.mtimes(U[i], Dinv_UT[i])
                pa = pA[i] + cs.mtimes(Ia, c[i]) + cs.mtimes(U[i], Dinv_u[i])
                Xm = _motion_matrix(X[i])
                IA[par[i]] = IA[par[i]] + cs.mtimes(Xm.T, cs.mtimes(Ia, Xm))
                pA[par[i]] = pA[par[i]] + cs.mtimes(Xm.T, pa)
        Acc = [-self.gravity] * nj
        qdd = [None] * self.model.nv
        for i in range(1, nj):
            ai = _motion_to_child(X[i], Acc[par[i]]) + c[i]
            ddq = Dinv_u[i] - cs.mtimes(Dinv_UT[i], ai)
            Acc[i] = ai + cs.mtimes(self.S[i], ddq)
            for r in range(self.nvj[i]):
                qdd[self.iv[i] + r] = ddq[r]
        return cs.vertcat(*qdd)


def _power_series(terms):
    """The first ``terms`` coefficients, in x = 1 - cos(theta), of theta / sin(theta) and of
    1/theta^2 - (1 + cos theta) / (2 theta sin theta), from acos(1 - x) = sqrt(2 x) A(x) and
    sin(theta) = sqrt(2 x) sqrt(1 - x / 2), in exact fractions."""
    n = terms + 1

    def times(a, b):
        return [sum(a[i] * b[k - i] for i in range(k + 1)) for k in range(n)]

    def binomial(a, k):
        out = Fraction(1)
        for i in range(k):
            out *= (a - i) / Fraction(i + 1)
        return out

    A = [Fraction(factorial(2 * k), factorial(k) ** 2 * 8 ** k * (2 * k + 1)) for k in range(n)]
    root = [binomial(Fraction(1, 2), k) * Fraction(-1, 2) ** k for k in range(n)]
    inverse_root = [binomial(Fraction(-1, 2), k) * Fraction(-1, 2) ** k for k in range(n)]
    ratio = times(A, inverse_root)  # theta / sin(theta)
    rA = times(root, A)  # alpha = (1 - sqrt(1 - x/2) A) / (2 x A^2)
    num = [-c for c in rA[1:]] + [Fraction(0)]
    den = [2 * c for c in times(A, A)]
    alpha = []
    for k in range(n):
        alpha.append((num[k] - sum(alpha[i] * den[k - i] for i in range(k))) / den[0])
    return [float(c) for c in ratio[:terms]], [float(c) for c in alpha[:terms]]


_RATIO, _ALPHA = _power_series(6)
_SERIES_BELOW = 1e-3  # x below which the series serve (their error is about x^6)


def _polynomial(coefficients, x):
    out = 0
    for c in reversed(coefficients):
        out = out * x + c
    return out


def log6(R, p):
    """log6 of the placement (R, p) in SX, (linear, angular) = (Jl^-1(w) p, w), w = log3(R)
    = theta / (2 sin theta) vee(R - R^T), Jl^-1(w) = I - 1/2 [w]x + alpha [w]x^2; written in
    x = 1 - cos(theta) = (3 - trace R) / 2, with power series near theta = 0 (not at pi)."""
    x = (3 - (R[0, 0] + R[1, 1] + R[2, 2])) / 2
    c = 1 - x
    theta = cs.acos(c)
    sine = cs.sqrt(1 - c * c)
    small = x < _SERIES_BELOW
    ratio = cs.if_else(small, _polynomial(_RATIO, x), theta / sine)
    alpha = cs.if_else(small, _polynomial(_ALPHA, x),
                       1 / theta ** 2 - (1 + c) / (2 * theta * sine))
    w = ratio / 2 * cs.vertcat(R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1])
    wp = cs.cross(w, p)
    return cs.vertcat(p - wp / 2 + alpha * cs.cross(w, wp), w)


def contact_specs(model, contacts):
    """(joint, fR, fp, reference, Kp, Kd, surface) of each of ``contacts``
    (:class:`~dynamics.contacts.Contact3D` or :class:`~dynamics.contacts.Contact6D`; the
    reference: a position, a 4 x 4 placement for a flat foot): the specs that
    :func:`contact_dynamics` and :func:`impulse_dynamics` take."""
    out = []
    for c in contacts:
        surface = c.size == 6
        ref = c.placement if surface else np.array(c.reference)
        out.append((*model.frame(c.frame), ref, *c.gains, surface))
    return out


def contact_velocity(tree, X, d, v, joint, fR, fp, surface=False):
    """(p, u, drift, R) of the frame ``jMf = (fR, fp)`` on ``joint``: the world position of its
    origin, the velocity its contact constrains in the world's axes (the origin's, 3 x 1; for a
    ``surface`` contact the origin's and the angular one, 6 x 1) and that velocity's drift
    along the innermost perturbation ``d`` of X: the classical acceleration for a point, the
    local spatial acceleration rotated to the world's axes for a surface (Crocoddyl's
    ``ContactModel3D`` / ``ContactModel6D`` with ``LOCAL_WORLD_ALIGNED``); None if d is None;
    R its world rotation."""
    oM = world_placements(tree, X)[joint]
    R, p = _compose(oM, (cs.DM(fR), cs.DM(fp)))
    vf = frame_velocity(tree, X, v, joint, fR, fp)
    if not surface:
        u = cs.mtimes(R, vf[:3])
        return p, u, None if d is None else cs.mtimes(cs.jacobian(u, d), v), R
    u = cs.vertcat(cs.mtimes(R, vf[:3]), cs.mtimes(R, vf[3:]))
    if d is None:
        return p, u, None, R
    dvf = cs.mtimes(cs.jacobian(vf, d), v)
    return p, u, cs.vertcat(cs.mtimes(R, dvf[:3]), cs.mtimes(R, dvf[3:])), R


def contact_dynamics(tree, X, d, v, tau, contacts, damping=0.0):
    """(a, lam): the KKT contact dynamics of :mod:`dynamics.contacts` in SX, for placements X
    built with the innermost perturbation ``d`` (the drift's Lie derivative is taken along it,
    so ``d`` must be the last perturbation of X and be evaluated at 0).  ``contacts``: (joint,
    fR, fp, reference, Kp, Kd, surface) of each contact (``surface``: a flat foot, else a point);
    ``damping`` is added to J M^-1 J^T.  The solves are unpivoted L D L^T factorizations
    written out in scalar operations (:func:`spd_solve`)."""
    n = tree.model.nv
    a_sym = cs.SX.sym("a_kkt", n)
    M = cs.jacobian(tree.rnea(X, v, a_sym), a_sym)
    b = tree.rnea(X, v, cs.SX.zeros(n, 1))
    J, gamma = [], []
    for joint, fR, fp, ref, kp, kd, surface in contacts:
        p, u, drift, R = contact_velocity(tree, X, d, v, joint, fR, fp, surface)
        J.append(cs.jacobian(u, v))
        g = drift + kd * u
        if not surface:
            g = g + kp * (p - cs.DM(ref))
        elif kp != 0.0:  # Kp R log6(ref^-1 oMf), R on the linear and the angular part
            Rr = cs.DM(ref[:3, :3])
            e = log6(cs.mtimes(Rr.T, R), cs.mtimes(Rr.T, p - cs.DM(ref[:3, 3])))
            g = g + kp * cs.vertcat(cs.mtimes(R, e[:3]), cs.mtimes(R, e[3:]))
        gamma.append(g)
    J, gamma = cs.vertcat(*J), cs.vertcat(*gamma)
    sol = spd_solve(M, cs.horzcat(tau - b, J.T))
    a_free, Y = sol[:, 0], sol[:, 1:]
    lam = spd_solve(cs.mtimes(J, Y) + damping * cs.SX.eye(J.shape[0]),
                    -(gamma + cs.mtimes(J, a_free)))
    return a_free + cs.mtimes(Y, lam), lam


def impulse_dynamics(tree, X, v, contacts, restitution=0.0, damping=0.0):
    """(v+, imp): the impact map of :mod:`dynamics.contacts` in SX for the placements X and the
    velocity v before the impact; ``contacts``: the specs of :func:`contact_specs` (gains
    unused); ``damping`` is added to J M^-1 J^T; ``restitution`` a number or an SX scalar."""
    n = tree.model.nv
    a_sym = cs.SX.sym("a_imp", n)
    M = cs.jacobian(tree.rnea(X, cs.SX.zeros(n, 1), a_sym), a_sym)
    J = cs.vertcat(*[cs.jacobian(contact_velocity(tree, X, None, v, joint, fR, fp, s)[1], v)
                     for joint, fR, fp, *_, s in contacts])
    Y = spd_solve(M, J.T)
    imp = spd_solve(cs.mtimes(J, Y) + damping * cs.SX.eye(J.shape[0]),
                    -(1 + restitution) * cs.mtimes(J, v))
    return v + cs.mtimes(Y, imp), imp
