"""CasADi's AD of the contact dynamics and of the impact map, written in SX by
:mod:`dynamics.symbolic` (its own kinematics and unpivoted factorizations, no code shared with
the kernels): the reference that the contact tests and ``soddp bench contact`` compare our
second derivatives with.

Derivatives in q are Lie derivatives along right perturbations: the placements of the symbolic
tree carry the perturbations g (outer) and e (inner), evaluated at 0, and the contact drift a
third one, d (:func:`dynamics.symbolic.contact_dynamics`).  The Jacobians of each output are
taken in one call over the stacked variables (fewer instructions and a faster build than one
call per variable: 4.7 against 8.3 million on a random tree with a flat foot and two points).
"""

from __future__ import annotations

import casadi
import numpy as np

from dynamics.symbolic import SymbolicTree, contact_dynamics, contact_specs, impulse_dynamics


def _split(x, n, parts):
    """The column blocks of width n of x."""
    return [x[:, k * n:(k + 1) * n] for k in range(parts)]


def contact_dynamics_reference(model, contacts, damping=0.0):
    """A function (q, v, tau, mu) -> [w, dw/dq, dw/dv, dw/dtau, and the second derivatives of
    mu . w on (q, q), (v, v), (q, v), (q, tau)] (numpy arrays) for w = (a, lam) of the KKT
    contact dynamics with ``contacts`` (Contact3D and Contact6D, gains and references
    included)."""
    tree = SymbolicTree(model)
    n = model.nv
    q, v, tau = casadi.SX.sym("q", model.nq), casadi.SX.sym("v", n), casadi.SX.sym("tau", n)
    g, e, d = (casadi.SX.sym(x, n) for x in ("g", "e", "d"))
    X = tree.placements(q, g, e, more=(d,))
    a, lam = contact_dynamics(tree, X, d, v, tau, contact_specs(model, contacts), damping)
    w = casadi.vertcat(a, lam)
    mu = casadi.SX.sym("mu", w.shape[0])
    s = casadi.dot(mu, w)
    first = _split(casadi.jacobian(w, casadi.vertcat(e, v, tau)), n, 3)
    hq, hqv, hqt = _split(casadi.jacobian(casadi.gradient(s, e), casadi.vertcat(g, v, tau)), n, 3)
    f = casadi.Function("contact_reference", [q, v, tau, mu, g, e, d],
                        [w, *first, hq, casadi.hessian(s, v)[0], hqv, hqt])
    zero = np.zeros(n)
    return lambda q_, v_, tau_, mu_: [np.array(x) for x in f(q_, v_, tau_, mu_, zero, zero, zero)]


def impulse_reference(model, contacts, restitution=0.0):
    """A function (q, v, mu) -> [w, dw/dq, and the second derivatives of mu . w on (q, q) and
    (q, v)] (numpy arrays) for w = (v+, impulse) of the impact map with ``contacts`` and
    ``restitution`` (the (v, v) block is zero: w is linear in v)."""
    tree = SymbolicTree(model)
    n = model.nv
    q, v = casadi.SX.sym("q", model.nq), casadi.SX.sym("v", n)
    g, e = casadi.SX.sym("g", n), casadi.SX.sym("e", n)
    w = casadi.vertcat(*impulse_dynamics(tree, tree.placements(q, g, e), v,
                                         contact_specs(model, contacts), restitution))
    mu = casadi.SX.sym("mu", w.shape[0])
    hq, hqv = _split(casadi.jacobian(casadi.gradient(casadi.dot(mu, w), e),
                                     casadi.vertcat(g, v)), n, 2)
    f = casadi.Function("impulse_reference", [q, v, mu, g, e],
                        [w, casadi.jacobian(w, e), hq, hqv])
    zero = np.zeros(n)
    return lambda q_, v_, mu_: [np.array(x) for x in f(q_, v_, mu_, zero, zero)]
