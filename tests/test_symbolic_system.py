"""A user's system written once in CasADi (dynamics.SymbolicSystem): exact derivatives against
central differences, batches, the compiled closed-loop rollout against the per-knot loop, the
same optimum as the same system written by hand, and the errors of a wrong forward model."""

import casadi
import numpy as np
import pytest

import ddp
import dynamics as dyn


def cartpole(q, v, tau):
    c, s = casadi.cos(q[1]), casadi.sin(q[1])
    M = casadi.blockcat([[1.2, 0.1 * c], [0.1 * c, 0.05]])
    return casadi.solve(M, tau - casadi.vertcat(-0.1 * s * v[1] ** 2, -0.981 * s))


CP = dyn.SymbolicSystem(2, cartpole, name="cartpole")


class ByHand(dyn.EuclideanDynamics):
    """The same system one knot at a time (the batching loop of EuclideanDynamics), and with
    the per-knot Python rollout: the reference for the compiled paths."""

    nq = nv = 2

    def aba(self, q, v, tau):
        return CP.aba(q, v, tau)

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        return CP.fd_derivatives(q, v, tau, order, lam)


def _problem(dynamics, **kw):
    up = np.zeros(4)
    run = ddp.Sum([ddp.StateRegularization(dynamics, up, [1, 10, 0.1, 0.1]),
                   ddp.ControlRegularization(1, 1e-2)])
    return ddp.ShootingProblem(dynamics, np.array([0.0, np.pi, 0, 0]), 100, 0.02, run,
                               ddp.StateRegularization(dynamics, up, 1e3),
                               actuation=[[1.0], [0.0]], **kw)


def test_derivatives_against_central_differences_batched_and_contracted():
    rng = np.random.default_rng(5)
    Q, V, TAU, LAM = rng.normal(size=(4, 7, 2))
    assert dyn.check_derivatives(CP, Q[0], V[0], TAU[0], verbose=False).ok
    full = CP.fd_derivatives(Q, V, TAU, order=2)
    lam = CP.fd_derivatives(Q, V, TAU, order=2, lam=LAM)
    for t in range(7):
        one = CP.fd_derivatives(Q[t], V[t], TAU[t], order=2)
        for f in ("a", "da_dq", "da_dv", "da_dtau", "d2a_dq2", "d2a_dqdv", "d2a_dtaudq"):
            np.testing.assert_allclose(getattr(full, f)[t], getattr(one, f), atol=1e-14)
        for f in ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"):
            np.testing.assert_allclose(getattr(lam, f)[t],
                                       np.einsum("i,ijk->jk", LAM[t], getattr(one, f)),
                                       atol=1e-12)
    # rnea inverts aba (the acceleration is affine in tau)
    np.testing.assert_allclose(CP.rnea(Q, V, CP.aba(Q, V, TAU)), TAU, atol=1e-12)


def test_the_compiled_rollout_equals_the_per_knot_loop():
    fast, slow = _problem(CP), _problem(ByHand())
    rng = np.random.default_rng(1)
    us, k = rng.normal(size=(2, 100, 1))
    K = rng.normal(size=(100, 1, 4)) * 0.1
    xs_ref = fast.rollout(us)
    gaps = rng.normal(size=(101, 4)) * 1e-3
    for P in (fast, slow):
        assert P.u_min.shape == (1,)
    for args in ((), (0.5,), (0.5, None, gaps)):
        a = fast.closed_loop(xs_ref, us, k, K, *args)
        b = slow.closed_loop(xs_ref, us, k, K, *args)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
    blow_up = fast.rollout(np.full((100, 1), 1e200))  # not finite from some knot on: NaN
    assert np.isnan(blow_up[-1]).all() and np.isfinite(blow_up[0]).all()


def test_the_swing_up_reaches_the_optimum_of_the_system_written_by_hand():
    a = ddp.solve(_problem(CP), max_iter=300)
    b = ddp.solve(_problem(ByHand()), max_iter=300)
    assert a.status == b.status == "converged"
    assert a.cost == pytest.approx(b.cost, rel=1e-10) and a.iterations == b.iterations
    assert abs(a.xs[-1, 1]) < 0.05  # the pole is up


@pytest.mark.parametrize("forward, message", [
    (lambda q, v, tau: q[0] + tau[0], r"forward: expected a column of n = 2 accelerations"),
    (lambda q, v, tau: tau * tau, r"forward: expected an acceleration affine in tau"),
    (lambda q, v, tau: q.no_such_method(), r"forward\(q, v, tau\) failed on CasADi symbols"),
])
def test_a_wrong_forward_model_is_named_at_construction(forward, message):
    with pytest.raises(ValueError, match=message):
        dyn.SymbolicSystem(2, forward)


class AbaOnly(dyn.EuclideanDynamics):
    """A user's system with nothing but its forward dynamics."""

    nq = nv = 2

    def aba(self, q, v, tau):
        return CP.aba(q, v, tau)


@pytest.mark.parametrize("system, method, tol", [
    (CP, "finite-diff-2", 1e-9),       # central differences of its exact first derivatives
    (CP, "finite-diff-1", 1e-6),       # of its aba, twice
    (AbaOnly(), "finite-diff-2", 1e-6),  # no first derivatives of its own: as finite-diff-1
])
def test_finite_differences_of_a_user_system(system, method, tol):
    """FiniteDifferenceDynamics takes a user's system on a vector space: its aba (or its first
    derivatives) differentiated, every perturbed point of a batch in one call."""
    fd = dyn.FiniteDifferenceDynamics(system, method)
    rng = np.random.default_rng(2)
    Q, V, TAU, LAM = rng.normal(size=(4, 5, 2))
    got, ref = fd.fd_derivatives(Q, V, TAU, order=2), CP.fd_derivatives(Q, V, TAU, order=2)
    for f in ("da_dq", "da_dv", "da_dtau", "d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"):
        err = np.abs(getattr(got, f) - getattr(ref, f)).max() / np.abs(getattr(ref, f)).max()
        assert err < tol, (f, err)
    one = fd.fd_derivatives(Q[1], V[1], TAU[1], order=2, lam=LAM[1])
    np.testing.assert_allclose(one.d2a_dq2, np.einsum("i,ijk->jk", LAM[1], ref.d2a_dq2[1]),
                               atol=100 * tol)


class BatchedAbaOnly(dyn.EuclideanDynamics):
    """:class:`AbaOnly` with an aba that takes a batch of points in one call, as a vectorized
    user system does: the finite differences of 100 knots are then one call per derivative,
    not some 12000 calls of CasADi at one point each."""

    nq = nv = 2
    _BATCHED = ()

    def aba(self, q, v, tau):
        return CP.aba(q, v, tau)


def test_ddp_on_finite_differences_of_an_aba_only_system_finds_the_optimum():
    exact = ddp.solve(_problem(CP), max_iter=300)
    fd = ddp.solve(_problem(dyn.FiniteDifferenceDynamics(BatchedAbaOnly())), max_iter=300)
    assert fd.status == "converged" and fd.cost == pytest.approx(exact.cost, rel=1e-6)
