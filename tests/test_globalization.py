"""Globalization strategies and multiple shooting: one step on a linear-quadratic problem for
every strategy, FDDP's expected decrease exact on it with gaps, multiple shooting without gaps
equal to single shooting iteration by iteration, gaps shrinking by (1 - alpha), the safeguard,
and the checks of the new settings."""

import numpy as np
import pytest

import ddp
import problems
from ddp.backward import backward
from ddp.globalization import GLOBALIZATIONS
from test_solver import _linear_problem, _riccati_reference, _ur3_problem


@pytest.mark.parametrize("shooting", ["single", "multiple"])
@pytest.mark.parametrize("globalization", GLOBALIZATIONS)
@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_every_globalization_solves_the_lq_problem_in_one_step(method, globalization, shooting):
    P = _linear_problem()
    xs = P.rollout(np.zeros((P.T, P.nu)))
    sol = ddp.solve(P, xs, np.zeros((P.T, P.nu)), method=method, globalization=globalization,
                    shooting=shooting, tol=1e-9)
    assert sol.converged, sol.message
    assert sol.history[0].alpha == 1.0 and sol.history[1].grad_norm < 1e-9
    np.testing.assert_allclose(sol.us, _riccati_reference(P), atol=1e-8)


def _gappy_start(P, seed=0, scale=0.3):
    """States with gaps: the rollout of random controls, perturbed at every knot."""
    rng = np.random.default_rng(seed)
    us = 0.5 * rng.standard_normal((P.T, P.nu))
    xs = P.rollout(us)
    dx = scale * rng.standard_normal((P.T + 1, P.ndx))
    return P.integrator.integrate(xs, dx), us


@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_with_gaps_the_expected_decrease_is_exact_on_the_lq_problem(method):
    P = _linear_problem()
    xs, us = _gappy_start(P)
    gaps = P.gaps(xs, us)
    assert np.max(np.abs(gaps)) > 0.1
    local = ddp.LocalModel("exact", ddp.SecondOrderMode.TENSORS if method == "ddp"
                           else ddp.SecondOrderMode.NONE, True)
    d = P.calc_diff(xs, us, local)
    policy, _ = backward(P, xs, us, d, local, gaps=gaps)
    cost = P.cost(xs, us)
    for alpha in (1.0, 0.7, 0.25):
        x1, u1 = P.closed_loop(xs, us, policy.k, policy.K, alpha, gaps=gaps)
        expected = policy.expected_decrease(alpha, P.integrator.difference(xs, x1))
        assert expected == pytest.approx(cost - P.cost(x1, u1), rel=1e-9, abs=1e-12)
        # the feasibility-driven rollout shrinks every gap by (1 - alpha) (linear dynamics)
        np.testing.assert_allclose(P.gaps(x1, u1), (1 - alpha) * gaps, atol=1e-12)
    # the full step closes the gaps and lands on the optimum
    x1, u1 = P.closed_loop(xs, us, policy.k, policy.K, 1.0, gaps=gaps)
    np.testing.assert_allclose(u1, _riccati_reference(P), atol=1e-8)


def test_gaps_shrink_by_one_minus_alpha_on_a_robot():
    """UR3 (revolute joints: the configuration space is a vector space in its coordinates)."""
    P = _ur3_problem(T=20)
    xs, us = np.tile(P.x0, (P.T + 1, 1)), P.quasi_static()
    xs[1:, :6] += 0.05
    gaps = P.gaps(xs, us)
    d = P.calc_diff(xs, us, ddp.GAUSS_NEWTON)
    policy, _ = backward(P, xs, us, d, ddp.GAUSS_NEWTON, gaps=gaps)
    for alpha in (0.5, 0.125):
        x1, u1 = P.closed_loop(xs, us, policy.k, policy.K, alpha, gaps=gaps)
        np.testing.assert_allclose(P.gaps(x1, u1), (1 - alpha) * gaps, atol=1e-12)
    sol = ddp.solve(P, xs, us, shooting="multiple", max_iter=30)
    assert sol.converged, sol.message
    first_full = next(h.iteration for h in sol.history if h.alpha == 1.0)
    assert sol.history[first_full].gap > 0 and sol.history[first_full + 1].gap == 0.0
    assert np.max(np.abs(P.gaps(sol.xs, sol.us))) < 1e-12


@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_multiple_shooting_without_gaps_is_single_shooting_iteration_by_iteration(method):
    P = _ur3_problem(T=30)
    us = P.quasi_static()
    single = ddp.solve(P, us=us, method=method, max_iter=15)
    multiple = ddp.solve(P, P.rollout(us), us, method=method, shooting="multiple", max_iter=15)
    assert single.iterations == multiple.iterations and single.status == multiple.status
    np.testing.assert_allclose(multiple.costs, single.costs, rtol=1e-12)
    np.testing.assert_allclose(multiple.grad_norms, single.grad_norms, rtol=1e-8)
    np.testing.assert_allclose(multiple.us, single.us, rtol=1e-10, atol=1e-12)
    assert all(h.gap == 0.0 for h in multiple.history)


def test_multiple_shooting_from_the_cold_start_reaches_the_quasi_static_optimum():
    """UR3 from xs = x0 at every knot and zero controls (Crocoddyl's FDDP reaches the optimum of
    the quasi-static start from there; single shooting falls into a worse local optimum)."""
    P = _ur3_problem(T=30)
    warm = ddp.solve(P, tol=1e-8)
    cold = (np.tile(P.x0, (P.T + 1, 1)), np.zeros((P.T, P.nu)))
    for method in ("ilqr", "ddp"):
        ms = ddp.solve(P, *cold, method=method, shooting="multiple", tol=1e-8)
        assert ms.converged and ms.cost == pytest.approx(warm.cost, rel=1e-8), ms.message


def test_the_safeguard_keeps_ddp_within_ilqr_where_pure_ddp_crawls():
    """Double pendulum swing-up: pure DDP ("shift") needs far more iterations than iLQR; the
    safeguarded exact Hessian does not, and still uses the exact terms near the optimum."""
    P = problems.get("double_pendulum")
    ilqr = ddp.solve(P, method="ilqr")
    # pure DDP crawls for about 100 iterations, and a relative 1e-15 change of the start moves
    # that anywhere in 94-105: it gets room beyond the default max_iter of 100
    pure = ddp.solve(P, method="ddp", globalization="shift", max_iter=300)
    safe = ddp.solve(P, method="ddp", globalization="safeguarded")
    assert ilqr.converged and pure.converged and safe.converged
    assert safe.cost == pytest.approx(ilqr.cost, rel=1e-8)
    assert pure.iterations > 3 * ilqr.iterations  # what the safeguard is for
    assert safe.iterations <= ilqr.iterations
    assert safe.history[-2].exact  # the last step was an exact DDP step
    assert all(h.exact for h in pure.history[:-1])  # pure DDP: the exact terms throughout


def test_the_safeguarded_default_keeps_the_quadratic_tail():
    """UR3 from zero torques: the default DDP reaches iLQR's optimum in no more iterations, and
    its last steps are exact and quadratic, g_{k+1} <= C g_k^2."""
    P = _ur3_problem()
    u0 = np.zeros((P.T, P.nu))
    d = ddp.solve(P, method="ddp", us=u0, tol=1e-8, max_iter=200)
    i = ddp.solve(P, method="ilqr", us=u0, tol=1e-8, max_iter=200)
    assert d.converged and i.converged and d.cost == pytest.approx(i.cost, rel=1e-9)
    assert d.iterations <= i.iterations
    # Gauss-Newton while it cuts the cost by >= 20% per iteration, then exact to the end
    assert all(h.exact for h in d.history[-3:-1])

    def quadratic_constants(g):  # g_{k+1} / g_k^2 above the rounding floor
        keep = g[1:] > 1e-10
        return (g[1:] / g[:-1] ** 2)[keep]

    # a linear rate r would give C = r / g_k, above 500 for g_k < 2e-4 and r > 0.1
    g = d.grad_norms
    assert g[-2] < 1e-3 and g[-1] < 1e-8
    assert np.all(quadratic_constants(g)[-2:] < 100.0)


def test_gauss_newton_stays_while_it_converges_fast():
    """The Fletcher-Xu switch of "safeguarded": on the double pendulum (seed 15 of the random
    family), Gauss-Newton takes the cost from 108 to within 1e-3 of the optimum in one step; DDP
    then keeps Gauss-Newton for that step instead of the exact terms built on the far-off
    costates, and needs no more iterations than iLQR (without the switch it needs 2 more)."""
    from problems.tasks import instance
    P = instance("double_pendulum", 15)
    i = ddp.solve(P, method="ilqr")
    d = ddp.solve(P, method="ddp")
    plain = ddp.solve(P, method="ddp", gauss_newton_reduction=0.0)
    assert i.converged and d.converged and plain.converged
    assert d.cost == pytest.approx(i.cost, rel=1e-9)
    assert plain.cost == pytest.approx(i.cost, rel=1e-9)
    assert d.iterations <= i.iterations < plain.iterations
    # every iteration that followed a Gauss-Newton step cutting the cost by >= 20% is Gauss-Newton
    for prev, h in zip(d.history[:-2], d.history[1:-1]):
        if not prev.exact and prev.actual >= 0.2 * prev.cost:
            assert not h.exact
    assert d.history[-2].exact  # and the last step is exact


def test_the_new_settings_are_checked():
    P = _linear_problem()
    with pytest.raises(ValueError, match="globalization: expected one of 'shift'"):
        ddp.solve(P, globalization="levenberg")
    with pytest.raises(ValueError, match="shooting: expected 'single' or 'multiple'"):
        ddp.solve(P, shooting="double")
    with pytest.raises(ValueError, match="gap_tol: expected a non-negative finite number"):
        ddp.SolverSettings(gap_tol=-1.0)
    with pytest.raises(ValueError, match="gauss_newton_reduction: expected a non-negative finite"):
        ddp.SolverSettings(gauss_newton_reduction=float("nan"))
    with pytest.raises(ValueError, match=r"xs: expected shape \(21, 4\)"):
        ddp.solve(P, np.zeros((20, 4)), shooting="multiple")
    sol = ddp.solve(P, np.full((21, 4), np.nan), shooting="multiple")
    assert sol.status == "diverged" and "xs" in sol.message


def test_the_first_safeguarded_iteration_is_gauss_newton():
    """Like Fletcher & Xu's hybrid method, "safeguarded" starts with Gauss-Newton.  On UR3 from
    the quasi-static start, iLQR with the exact cost Hessians in its first iteration (the log6
    terms of the placement cost, far from the target) must cut its step to 0.125; with the
    Gauss-Newton start it takes the full step and needs Crocoddyl's 6 iterations."""
    P = problems.get("ur3")
    gn_first = ddp.solve(P, method="ilqr")
    exact_first = ddp.solve(P, method="ilqr", globalization="state-shift")
    assert not gn_first.history[0].exact and gn_first.history[0].alpha == 1.0
    assert exact_first.history[0].exact and exact_first.history[0].alpha < 1.0
    assert gn_first.converged and gn_first.iterations <= 6
    assert gn_first.cost == pytest.approx(exact_first.cost, rel=1e-9)


def test_the_state_shift_also_damps_the_controls_that_only_move_contact_forces():
    """HyQ standing on four feet with its left-front foot's normal force bounded below (a hard
    constraint): torques that only change the contact forces do not move the state, so mu I on
    V'_xx never damps them.  Without the share of mu on Q_uu, the safeguarded default stopped
    with line-search-failed after 16 iterations (no step length up to mu = 1e9); with it, the
    solve converges, feasible (in 103 iterations at an effective penalty of 100 on the force in
    newtons, stiff on purpose; the default share of the penalty on forces makes it 1: 27)."""
    import dynamics as dyn
    from ddp.globalization import StateShift
    from dynamics import robots
    from problems import gaits

    assert StateShift.CONTROL_SHARE > 0
    m = robots.load("hyq")
    x0 = np.concatenate([gaits.HYQ_STANDING, np.zeros(m.nv)])
    w = 10 * np.r_[[0.0] * 3, [500.0] * 3, [0.01] * 12, [10.0] * 6, [1.0] * 12] ** 2
    feet = [dyn.Contact3D(f, gains=(0.0, 50.0)) for f in gaits.HYQ_FEET]
    cost = ddp.Sum([ddp.StateRegularization(m, x0, w), ddp.ControlRegularization(12, 0.1)])
    push = ddp.Constraint(ddp.ContactForce(m, "lf_foot", np.zeros(3), 1.0),
                          lower=[-np.inf, -np.inf, 250.0], upper=np.inf)
    T = 20
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.01, None,
                            ddp.StateRegularization(m, x0, w), actuation=np.eye(m.nv)[:, 6:],
                            phases=[ddp.Phase(T, feet, cost, constraints=[push])])
    xs = np.tile(x0, (T + 1, 1))
    sol = ddp.solve(P, xs=xs, us=P.quasi_static(xs), max_iter=200, penalty=1e4)  # mu 100 on N
    assert sol.status == "converged", sol.message
    assert sol.violation <= 1e-6
    assert P.contact_forces(sol.xs, sol.us)["lf_foot"][:, 2].min() > 250.0 - 1e-5
