"""A user's own system written once in CasADi: :class:`SymbolicSystem` turns the forward
dynamics ``a = forward(q, v, tau)`` of a system on a vector space into a
:class:`~dynamics.protocol.Dynamics` with exact first and second derivatives by automatic
differentiation, evaluated for all knots in one mapped CasADi call (no per-knot Python).

The solver assumes a step whose acceleration is affine in tau (a = M^-1 (tau - b), as for every
mechanical system); :class:`SymbolicSystem` checks it once, symbolically, and uses it for
``rnea`` (the torque that gives an acceleration, for the quasi-static start).

Tensor conventions as everywhere: ``T[i, j, k] = d/dx_k (da_i/dx_j)``; with ``lam`` the
contraction over the output index i.
"""

from __future__ import annotations

import casadi as cs
import numpy as np

from .protocol import EuclideanDynamics, _check_order
from .results import FDDerivatives

#: parallel evaluation of the mapped functions (CasADi's thread map over knots)
_MAP = ("thread", 2)


class SymbolicSystem(EuclideanDynamics):
    """``forward(q, v, tau)`` -> a, written with CasADi operations on SX column vectors of size
    ``n`` (nq = nv = n: a vector space); ``name`` for messages.  ValueError at construction if
    ``forward`` does not build, does not return n entries, or is not affine in tau."""

    _BATCHED = ()  # its methods take batches themselves, through mapped CasADi functions

    def __init__(self, n: int, forward, name: str = "system"):
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ValueError(f"n: expected a positive number of coordinates; got {n!r}")
        self.nq = self.nv = int(n)
        self.name = str(name)
        q, v, tau, lam = (cs.SX.sym(s, n) for s in ("q", "v", "tau", "lam"))
        try:
            a = cs.SX(forward(q, v, tau))
        except Exception as e:
            raise ValueError(f"forward(q, v, tau) failed on CasADi symbols: {type(e).__name__}: "
                             f"{e}") from None
        if a.shape != (n, 1):
            raise ValueError(f"forward: expected a column of n = {n} accelerations; got shape "
                             f"{a.shape}")
        Jq, Jv, Jt = cs.jacobian(a, q), cs.jacobian(a, v), cs.jacobian(a, tau)
        if cs.depends_on(Jt, tau):
            raise ValueError("forward: expected an acceleration affine in tau "
                             "(a = M(q)^-1 (tau - b(q, v))); it is not")
        vec = cs.vec
        self._fns = {
            "aba": cs.Function(f"{self.name}_a", [q, v, tau], [a]),
            1: cs.Function(f"{self.name}_d1", [q, v, tau], [a, vec(Jq), vec(Jv), vec(Jt)]),
            2: cs.Function(f"{self.name}_d2", [q, v, tau],
                           [a, vec(Jq), vec(Jv), vec(Jt),
                            vec(cs.jacobian(vec(Jq), q)), vec(cs.jacobian(vec(Jv), v)),
                            vec(cs.jacobian(vec(Jq), v)), vec(cs.jacobian(vec(Jt), q))]),
            "lam": cs.Function(f"{self.name}_d2lam", [q, v, tau, lam],
                               [a, vec(Jq), vec(Jv), vec(Jt),
                                vec(cs.jacobian(cs.mtimes(Jq.T, lam), q)),
                                vec(cs.jacobian(cs.mtimes(Jv.T, lam), v)),
                                vec(cs.jacobian(cs.mtimes(Jq.T, lam), v)),
                                vec(cs.jacobian(cs.mtimes(Jt.T, lam), q))]),
            # the torque of an acceleration: a = a0 + Jt tau, whence tau = Jt^-1 (a - a0)
            "rnea": cs.Function(f"{self.name}_tau", [q, v, tau],
                                [cs.solve(Jt, tau - cs.substitute(a, tau, cs.SX.zeros(n)))]),
        }
        self._forward = forward
        self._maps, self._rollouts = {}, {}

    def __repr__(self):
        return f"SymbolicSystem({self.name!r}, n={self.nv})"

    # ------------------------------------------------------------------ evaluation
    def _call(self, key, *args):
        """Outputs of function ``key`` at one point (1-D args) or a batch (T, n) args, as
        arrays (T, size) (a batch) or (size,) (one point)."""
        args = [np.asarray(x, dtype=float) for x in args]
        single = args[0].ndim == 1
        X = [np.atleast_2d(x) for x in args]
        T = X[0].shape[0]
        for x in X:
            if x.shape != (T, self.nv):
                raise ValueError(f"{self.name}: expected arrays (n,) or (T, n) with n = "
                                 f"{self.nv}; got shapes {[np.shape(y) for y in args]}")
        fn = self._fns[key]
        if T > 1:
            if (key, T) not in self._maps:
                self._maps[key, T] = fn.map(T, *_MAP)
            fn = self._maps[key, T]
        outs = fn(*(x.T for x in X))
        outs = [outs] if isinstance(outs, cs.DM) else outs
        arrays = [np.asarray(o.full()).T for o in outs]  # (T, size)
        return [o[0] for o in arrays] if single else arrays

    @staticmethod
    def _unvec(x, n, rank):
        """Column-major vec (.., n^rank) back to [.., i, j(, k)] (the last axis reversed)."""
        lead = x.shape[:-1]
        y = x.reshape(*lead, *([n] * rank))
        return np.moveaxis(y, range(-rank, 0), range(-1, -rank - 1, -1))

    def aba(self, q, v, tau):
        return self._call("aba", q, v, tau)[0]

    def rnea(self, q, v, a):
        return self._call("rnea", q, v, a)[0]

    def fd_derivatives(self, q, v, tau, order: int = 1, lam=None) -> FDDerivatives:
        """The acceleration and its derivatives (order 1), with the second derivatives as
        tensors (order 2) or contracted with ``lam`` (order 2 and lam: (n,) or (T, n))."""
        _check_order(order)
        n = self.nv
        if order == 2 and lam is not None:
            outs = self._call("lam", q, v, tau, lam)
            rank2 = 2
        else:
            outs = self._call(order, q, v, tau)
            rank2 = 3
        a = outs[0]
        first = [self._unvec(o, n, 2) for o in outs[1:4]]
        d = FDDerivatives(a, *first)
        if order == 2:
            d.d2a_dq2, d.d2a_dv2, d.d2a_dqdv, d.d2a_dtaudq = (self._unvec(o, n, rank2)
                                                              for o in outs[4:8])
        return d

    # ------------------------------------------------------------------ rollout
    def rollout_function(self, T: int, dt: float, B, u_min, u_max):
        """A CasADi function of the whole closed-loop rollout of T semi-implicit Euler steps
        (the solver's step, ``ddp.SemiImplicitEuler``), one compiled recurrence instead of T
        Python calls: (x0 (nx,), U, k (nu, T), K (nu * nx, T), XR (nx, T), G (nx, T), alpha,
        feedback) -> (X (nx, T), U applied (nu, T)), with u_t = clip(U_t + feedback (alpha k_t
        + K_t (x_t - XR_t)), u_min, u_max) and x_{t+1} = F(x_t, u_t) + (alpha - 1) G_t."""
        B = np.asarray(B, dtype=float)
        key = (int(T), float(dt), B.tobytes(), np.asarray(u_min, float).tobytes(),
               np.asarray(u_max, float).tobytes())
        if key not in self._rollouts:
            n, nu = self.nv, B.shape[1]
            x, u_ref, k = cs.SX.sym("x", 2 * n), cs.SX.sym("u", nu), cs.SX.sym("k", nu)
            K, xr, g = cs.SX.sym("K", nu * 2 * n), cs.SX.sym("xr", 2 * n), cs.SX.sym("g", 2 * n)
            alpha, fb = cs.SX.sym("alpha"), cs.SX.sym("feedback")
            u = u_ref + fb * (alpha * k + cs.mtimes(cs.reshape(K, nu, 2 * n), x - xr))
            u = cs.fmin(cs.fmax(u, cs.DM(np.asarray(u_min, float))), cs.DM(np.asarray(u_max,
                                                                                   float)))
            q, v = x[:n], x[n:]
            a = cs.SX(self._forward(q, v, cs.mtimes(cs.DM(B), u)))
            v1 = v + dt * a
            x1 = cs.vertcat(q + dt * v1, v1) + (alpha - 1) * g
            step = cs.Function(f"{self.name}_loop", [x, cs.vertcat(u_ref, k, K, xr, g),
                                                     cs.vertcat(alpha, fb)], [x1, u])
            self._rollouts[key] = step.mapaccum(f"{self.name}_rollout", int(T))
        return self._rollouts[key]
