"""The Dynamics protocol: the analytical backend and a user's EuclideanDynamics subclass."""

import numpy as np
import pytest

import dynamics as dyn
from dynamics import robots
from helpers import random_state, rel_err


def test_analytical_backend_matches_the_kernels():
    m = robots.load("hyq")
    d = dyn.AnalyticalDynamics(m)
    assert isinstance(d, dyn.Dynamics) and (d.nq, d.nv) == (19, 18)
    q, v, a, tau = random_state(m, 0)
    np.testing.assert_array_equal(d.aba(q, v, tau), dyn.aba(m, q, v, tau))
    np.testing.assert_array_equal(d.rnea(q, v, a), dyn.rnea(m, q, v, a))
    f1 = d.fd_derivatives(q, v, tau)
    assert f1.d2a_dq2 is None
    np.testing.assert_array_equal(f1.da_dq, dyn.fd_derivatives(m, q, v, tau).da_dq)
    f2 = d.fd_derivatives(q, v, tau, order=2)
    assert f2.d2a_dq2.shape == (18, 18, 18)
    lam = np.ones(18)
    f2l = d.fd_derivatives(q, v, tau, order=2, lam=lam)
    assert f2l.d2a_dq2.shape == (18, 18)
    i2 = d.id_derivatives(q, v, a, order=2)
    np.testing.assert_array_equal(i2.dM_dq, dyn.id_second_derivatives(m, q, v, a).dM_dq)
    assert d.id_derivatives(q, v, a).dM_dq is None
    with pytest.raises(ValueError, match="order: expected 1 or 2; got 3"):
        d.fd_derivatives(q, v, tau, order=3)


def test_manifold_jacobians_against_pinocchio_and_finite_differences():
    m = robots.load("hyq")
    d = dyn.AnalyticalDynamics(m)
    rng = np.random.default_rng(1)
    q = m.random_configuration(rng)
    dq = 0.3 * rng.normal(size=m.nv)
    Jq, Jdq = d.integrate_jacobians(q, dq)
    eps = 1e-6
    for k in (0, 3, 5, 10):
        e = np.eye(m.nv)[k] * eps
        fd_q = m.difference(m.integrate(q, dq), m.integrate(m.integrate(q, e), dq)) / eps
        fd_dq = m.difference(m.integrate(q, dq), m.integrate(q, dq + e)) / eps
        assert rel_err(Jq[:, k], fd_q) < 1e-5 and rel_err(Jdq[:, k], fd_dq) < 1e-5
    Q = np.stack([q, q])
    JQ, _ = d.integrate_jacobians(Q, np.stack([dq, dq]))
    np.testing.assert_array_equal(JQ[1], Jq)
    J0, J1 = d.difference_jacobians(q, m.integrate(q, dq))
    assert J0.shape == J1.shape == (18, 18)


class DoubleIntegrator(dyn.EuclideanDynamics):
    """x'' = tau - c x' (a user system: only aba and fd_derivatives)."""

    nq = nv = 2
    c = 0.5

    def aba(self, q, v, tau):
        return tau - self.c * v

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        n = self.nv
        out = dyn.FDDerivatives(self.aba(q, v, tau), np.zeros((n, n)), -self.c * np.eye(n),
                                np.eye(n))
        if order == 2:
            shape = (n, n) if lam is not None else (n, n, n)
            out.d2a_dq2, out.d2a_dv2, out.d2a_dqdv, out.d2a_dtaudq = (np.zeros(shape)
                                                                      for _ in range(4))
        return out


def test_euclidean_dynamics_subclass_is_a_dynamics_and_batches():
    d = DoubleIntegrator()
    assert isinstance(d, dyn.Dynamics)
    q, v, tau = np.array([1.0, 2.0]), np.array([0.5, -1.0]), np.array([0.1, 0.2])
    np.testing.assert_allclose(d.aba(q, v, tau), tau - 0.5 * v)
    Q, V, TAU = np.stack([q, 2 * q]), np.stack([v, v]), np.stack([tau, -tau])
    A = d.aba(Q, V, TAU)
    assert A.shape == (2, 2) and np.allclose(A[1], -tau - 0.5 * v)
    F = d.fd_derivatives(Q, V, TAU, order=2, lam=np.ones((2, 2)))
    assert F.da_dv.shape == (2, 2, 2) and F.d2a_dq2.shape == (2, 2, 2) and F.d2a_dv2.shape == (2, 2, 2)
    np.testing.assert_array_equal(d.integrate(q, v), q + v)
    J0, J1 = d.difference_jacobians(Q, Q)
    assert J0.shape == (2, 2, 2) and np.all(J1[0] == np.eye(2)) and np.all(J0[0] == -np.eye(2))
    with pytest.raises(NotImplementedError, match="DoubleIntegrator does not implement rnea"):
        d.rnea(q, v, tau)


class WrongShapes(DoubleIntegrator):
    """A user's slip: da_dq of a 3-DoF system (or a scalar acceleration) for n = 2."""

    def __init__(self, field, value):
        self.field, self.value = field, value

    def aba(self, q, v, tau):
        return self.value if self.field == "aba" else tau - self.c * v

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        out = DoubleIntegrator.fd_derivatives(self, q, v, tau, order, lam)
        if self.field != "aba":
            setattr(out, self.field, self.value)
        return out


@pytest.mark.parametrize("field, value, message", [
    ("da_dq", np.eye(3), r"fd_derivatives: da_dq: expected shape \(8, 2, 2\) \(knots first\); "
                         r"got \(8, 3, 3\)"),
    ("da_dtau", None, r"fd_derivatives: returned no da_dtau"),
    ("a", "fast", r"fd_derivatives: a: expected a float array of shape \(8, 2\); got an "
                  r"array of <U4"),
    ("aba", 1.0, r"aba: a: expected shape \(\d+, 2\) \(knots first\); got \(\d+,\)"),
])
def test_a_user_system_returning_wrong_shapes_is_named_not_a_crash(field, value, message):
    """Every array a user's Dynamics returns is checked before it enters compiled code (a
    (3, 3) da_dq for n = 2 used to write out of bounds and kill the process)."""
    import ddp

    P = ddp.ShootingProblem(WrongShapes(field, value), np.array([1.0, 0.0, 0.0, 0.0]), 8, 0.1,
                            ddp.ControlRegularization(2, 1.0), ddp.ControlRegularization(2, 1.0))
    with pytest.raises(ValueError, match=message):
        ddp.solve(P, max_iter=3)


class Pendulum(dyn.EuclideanDynamics):
    """A damped pendulum written by hand: a = tau - sin(q) - 0.1 v, with its second
    derivatives; ``slip`` puts a wrong sign in d2a_dq2 (what check_derivatives must catch)."""

    nq = nv = 1

    def __init__(self, slip=False):
        self.slip = slip

    def aba(self, q, v, tau):
        return tau - np.sin(q) - 0.1 * v

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        out = dyn.FDDerivatives(self.aba(q, v, tau), -np.cos(q).reshape(1, 1),
                                np.array([[-0.1]]), np.eye(1))
        if order == 2:
            z = np.zeros((1, 1, 1))
            out.d2a_dq2 = (1 if not self.slip else -1) * np.sin(q).reshape(1, 1, 1)
            out.d2a_dv2, out.d2a_dqdv, out.d2a_dtaudq = z, z.copy(), z.copy()
        return out


def test_check_derivatives_passes_right_ones_and_names_a_wrong_one(capsys):
    q, v, tau = np.array([0.7]), np.array([0.3]), np.array([0.2])
    assert dyn.check_derivatives(Pendulum(), q, v, tau).ok
    assert "all within 1e-05" in capsys.readouterr().out
    bad = dyn.check_derivatives(Pendulum(slip=True), q, v, tau, verbose=False)
    assert not bad.ok and bad["d2a_dq2"]["relative"] > 1 and bad["da_dq"]["relative"] < 1e-8
    m = robots.load("hyq")
    rng = np.random.default_rng(3)
    x = (m.random_configuration(rng), *rng.normal(size=(2, m.nv)))
    for backend in (dyn.AnalyticalDynamics(m), dyn.FiniteDifferenceDynamics(m)):
        assert dyn.check_derivatives(backend, *x, verbose=False).ok, backend
    with pytest.raises(ValueError, match=r"q: expected 19 finite values \(one point\)"):
        dyn.check_derivatives(dyn.AnalyticalDynamics(m), np.zeros(18), x[1], x[2])
