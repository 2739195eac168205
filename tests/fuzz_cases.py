"""Run by tests/test_fuzz.py in a subprocess (a crash there fails the test instead of killing
pytest): wrong shapes, dtypes, NaN, inf and non-contiguous arrays through the public entry points
and the user-extension hooks; prints {case: "ok" or "module.Error: message"} as JSON."""

import json
import sys

import numpy as np

import ddp
import dynamics as dyn
from dynamics import robots
from dynamics.results import FDDerivatives


def variants(x):
    """Bad versions of a valid 1-D array x (and two that must be accepted: strided, list)."""
    x = np.asarray(x, dtype=float)
    yield "short", x[..., :-1]
    yield "3d", np.broadcast_to(x, (2, 2) + x.shape[-1:]).copy()
    yield "nan", np.where(np.arange(x.shape[-1]) == 0, np.nan, x)
    yield "inf", np.where(np.arange(x.shape[-1]) == 0, np.inf, x)
    yield "strided", np.repeat(x, 2)[::2]
    yield "list", list(x)
    yield "complex", x.astype(complex)
    yield "object", np.array(list(x)[:-1] + ["a"], dtype=object)
    yield "str", "abc"
    yield "empty", np.zeros(0)


results = {}


def case(name, fn):
    """Record "ok" (a solve: "ok: <status>") or the exception's class and message."""
    try:
        out = fn()
        results[name] = f"ok: {out.status}" if isinstance(out, ddp.Solution) else "ok"
    except Exception as e:  # what is reported: the test checks the kinds
        results[name] = f"{type(e).__module__}.{type(e).__name__}: {str(e)[:160]}"


def tile(bad, n):
    return bad if isinstance(bad, str) or np.ndim(bad) != 1 else np.tile(bad, (n, 1))


ur3, hyq = robots.load("ur3"), robots.load("hyq")
rng = np.random.default_rng(0)
q, v = ur3.random_configuration(rng), rng.normal(size=6)
functions = {"aba": dyn.aba, "rnea": dyn.rnea, "fd_derivatives": dyn.fd_derivatives,
             "id_derivatives": dyn.id_derivatives, "fd_second_derivatives": dyn.fd_second_derivatives,
             "id_second_derivatives": dyn.id_second_derivatives}
for name, f in functions.items():
    for pos in range(3):
        for kind, bad in variants((q, v, v)[pos]):
            args = [q, v, v]
            args[pos] = bad
            case(f"{name}[{pos}:{kind}]", lambda f=f, args=args: f(ur3, *args))

x0 = np.concatenate([q, np.zeros(6)])
cost = ddp.ControlRegularization(6, 1.0)
P = ddp.ShootingProblem(dyn.AnalyticalDynamics(ur3), x0, 10, 0.01, cost, cost)
us = np.zeros((10, 6))
xs = P.rollout(us)
for kind, bad in variants(us[0]):
    b = tile(bad, 10)
    case(f"solve[us:{kind}]", lambda b=b: ddp.solve(P, us=b, max_iter=2))
    case(f"rollout[us:{kind}]", lambda b=b: P.rollout(b))
    case(f"cost[us:{kind}]", lambda b=b: P.cost(xs, b))
    case(f"calc_diff[us:{kind}]", lambda b=b: P.calc_diff(xs, b))
for kind, bad in variants(xs[0]):
    b = tile(bad, 11)
    case(f"solve[xs:{kind}]", lambda b=b: ddp.solve(P, xs=b, us=us, max_iter=2,
                                                    shooting="multiple"))
    case(f"cost[xs:{kind}]", lambda b=b: P.cost(b, us))
    case(f"problem[x0:{kind}]", lambda bad=bad: ddp.ShootingProblem(
        dyn.AnalyticalDynamics(ur3), bad, 10, 0.01, cost, cost))
feet = [dyn.Contact3D("lf_foot")]
qh = hyq.random_configuration(rng)
for kind, bad in variants(qh):
    case(f"constrained_dynamics[q:{kind}]",
         lambda bad=bad: dyn.constrained_dynamics(hyq, feet, bad, np.zeros(18), np.zeros(18)))
    case(f"impulse_dynamics[q:{kind}]",
         lambda bad=bad: dyn.impulse_dynamics(hyq, feet, bad, np.zeros(18)))


class User(dyn.EuclideanDynamics):
    """A user's system whose fd_derivatives returns ``field`` = ``value``."""

    nq = nv = 2

    def __init__(self, field, value):
        self.field, self.value = field, value

    def aba(self, q, v, tau):
        return tau - q

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        d = FDDerivatives(tau - q, -np.eye(2), np.zeros((2, 2)), np.eye(2))
        setattr(d, self.field, self.value)
        return d


good = {"a": np.zeros(2), "da_dq": -np.eye(2), "da_dv": np.zeros((2, 2)), "da_dtau": np.eye(2)}
for field, value in good.items():
    for kind, bad in variants(value.ravel()[:2] if value.ndim == 1 else value[0]):
        if value.ndim == 2 and not isinstance(bad, str) and np.ndim(bad) == 1:
            bad = np.stack([bad, bad]) if len(bad) == 2 else bad
        U = ddp.ShootingProblem(User(field, bad), np.zeros(4), 5, 0.1,
                                ddp.ControlRegularization(2, 1.0),
                                ddp.ControlRegularization(2, 1.0))
        case(f"user.fd_derivatives.{field}[{kind}]",
             lambda U=U: ddp.solve(U, method="ilqr", max_iter=2))
json.dump(results, sys.stdout)
