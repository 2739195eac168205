"""DDP / iLQR: Riccati optimality on a linear-quadratic problem, the same optimum with quadratic
vs linear rates, box-QP and bounds, failure statuses, the iteration table."""

import copy
import dataclasses
import itertools

import numpy as np
import pinocchio as pin
import pytest

import ddp
import dynamics as dyn
from dynamics import robots
from helpers import rel_err


class Linear(dyn.EuclideanDynamics):
    """q'' = A [q; v] + tau: linear dynamics (zero second derivatives)."""

    nq = nv = 2
    A = np.array([[-1.0, 0.5, -0.2, 0.1], [0.3, -2.0, 0.0, -0.4]])

    def aba(self, q, v, tau):
        return self.A @ np.concatenate([q, v]) + tau

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        z = np.zeros((2, 2)) if lam is not None else np.zeros((2, 2, 2))
        return dyn.FDDerivatives(self.aba(q, v, tau), self.A[:, :2], self.A[:, 2:], np.eye(2),
                                 *([z] * 4 if order == 2 else []))


def _linear_problem(T=20, **bounds):
    d = Linear()
    x_ref = np.array([1.0, -1.0, 0.0, 0.0])
    run = ddp.Sum([ddp.StateRegularization(d, x_ref, 1.0), ddp.ControlRegularization(2, 0.1)])
    return ddp.ShootingProblem(d, np.array([0.0, 0.5, 0.2, 0.0]), T, 0.05, run,
                               ddp.StateRegularization(d, x_ref, 10.0), **bounds)


def _riccati_reference(P):
    """The exact optimum of the linear-quadratic problem as one dense least-squares problem."""
    T, nu = P.T, P.nu
    base = P.rollout(np.zeros((T, nu)))
    cols = []
    for k in range(T * nu):
        e = np.zeros(T * nu)
        e[k] = 1.0
        cols.append((P.rollout(e.reshape(T, nu)) - base).ravel())
    S = np.array(cols).T  # xs = base + S u (linear system)
    x_ref = P.running_cost.costs[0].x_ref
    w_run, w_term = np.sqrt(P.dt * 1.0), np.sqrt(10.0)
    rows, rhs = [], []
    for t in range(T + 1):
        St = S[t * 4:(t + 1) * 4]
        w = w_term if t == T else w_run
        rows.append(w * St)
        rhs.append(-w * (base[t] - x_ref))
    rows.append(np.sqrt(P.dt * 0.1) * np.eye(T * nu))
    rhs.append(np.zeros(T * nu))
    u, *_ = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=None)
    return u.reshape(T, nu)


@pytest.mark.parametrize("method", ["ddp", "ilqr"])
def test_linear_quadratic_problem_converges_in_one_iteration_to_riccati(method):
    P = _linear_problem()
    sol = ddp.solve(P, method=method, tol=1e-9)
    assert sol.converged and sol.status == "converged"
    assert sol.history[0].alpha == 1.0 and sol.history[1].grad_norm < 1e-9
    np.testing.assert_allclose(sol.us, _riccati_reference(P), atol=1e-8)


def _ur3_problem(T=30, backend=dyn.AnalyticalDynamics, **bounds):
    m = robots.load("ur3")
    q0 = np.array([0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0])
    x0 = np.concatenate([q0, np.zeros(6)])
    data = m.pin_model.createData()
    pin.framesForwardKinematics(m.pin_model, data, q0 + np.array([0.6, 0.4, -0.5, 0.3, 0.5, 0.2]))
    target = data.oMf[m.pin_model.getFrameId("tool0")].copy()
    run = ddp.Sum([ddp.FramePlacement(m, "tool0", target, 1.0),
                   ddp.StateRegularization(m, x0, 1e-1), ddp.ControlRegularization(6, 1e-3)])
    term = ddp.Sum([ddp.FramePlacement(m, "tool0", target, 1e3),
                    ddp.StateRegularization(m, x0, 1e-1)])
    return ddp.ShootingProblem(backend(m), x0, T, 0.01, run, term, **bounds)


def test_ddp_and_ilqr_reach_the_same_optimum_with_quadratic_vs_linear_rates():
    P = _ur3_problem()
    # from zero torques (the arm falls first) both reach a local optimum with large residuals,
    # where iLQR's Gauss-Newton-like model is only linearly convergent
    # (pure DDP: the exact terms at every iteration, control shift; see test_globalization for
    # the safeguarded default)
    u0 = np.zeros((P.T, P.nu))
    d = ddp.solve(P, method="ddp", us=u0, tol=1e-8, max_iter=200, globalization="shift")
    i = ddp.solve(P, method="ilqr", us=u0, tol=1e-8, max_iter=200, globalization="shift")
    assert d.converged and i.converged, (d.message, i.message)
    assert d.cost == pytest.approx(i.cost, rel=1e-9)
    assert rel_err(d.us, i.us) < 1e-5
    # the last steps: DDP's ratio of successive gradient norms shrinks with the gradient
    # (quadratic, g_{k+1} ~ g_k^2), iLQR's stays bounded away from 0 (linear)
    # (ratios taken above the rounding floor of the gradient, about 4e-8 on this problem)
    ratios = lambda g: (g[1:] / g[:-1])[g[1:] > 1e-7]
    rd, ri = ratios(d.grad_norms), ratios(i.grad_norms)
    assert rd[-1] < 1e-2 and rd[-1] < rd[-2]
    assert np.median(ri[-4:]) > 10 * rd[-1]


def test_box_constrained_solve_respects_bounds_and_box_qp_is_optimal():
    from scipy.optimize import minimize

    rng = np.random.default_rng(3)
    A = rng.normal(size=(4, 4))
    H, g = A @ A.T + 0.1 * np.eye(4), rng.normal(size=4) * 5
    lo, hi = -np.ones(4), np.ones(4)
    res = ddp.box_qp(H, g, lo, hi, np.zeros(4))
    x = res.x
    assert res.solved
    ref = minimize(lambda y: 0.5 * y @ H @ y + g @ y, np.zeros(4), jac=lambda y: H @ y + g,
                   bounds=list(zip(lo, hi)), method="L-BFGS-B", options=dict(ftol=1e-15,
                                                                           gtol=1e-12))
    np.testing.assert_allclose(x, ref.x, atol=1e-6)
    P = _ur3_problem(T=20, u_min=-2.0, u_max=2.0)
    sol = ddp.solve(P, method="ddp", max_iter=100)
    assert sol.converged, sol.message
    assert np.all(sol.us <= 2.0 + 1e-12) and np.all(sol.us >= -2.0 - 1e-12)
    assert np.any(np.isclose(np.abs(sol.us), 2.0))  # some bound is active


class Exploding(Linear):
    def aba(self, q, v, tau):
        return np.full(2, np.nan) if abs(tau[0]) > 0.5 else super().aba(q, v, tau)


class SingularJacobian(Linear):
    """Finite values, but a non-finite da/dq where tau_0 > 0.5."""

    def fd_derivatives(self, q, v, tau, order=1, lam=None):
        d = super().fd_derivatives(q, v, tau, order, lam)
        if tau[0] > 0.5:
            d = dataclasses.replace(d, da_dq=d.da_dq + np.array([[np.inf, 0.0], [0.0, 0.0]]))
        return d


def test_failure_statuses():
    sol = ddp.solve(_ur3_problem(T=10), method="ddp", max_iter=1)
    assert sol.status == "max-iterations" and not sol.converged and sol.iterations == 1
    P = _linear_problem()
    with pytest.raises(ValueError, match=r"u_min, u_max: expected u_min <= u_max; control 0 "
                                         r"has 1 > 0"):
        _linear_problem(u_min=[1.0, 0.0], u_max=[0.0, 1.0])
    bad = _linear_problem(u_min=[0.0, 0.0], u_max=[0.0, 1.0])
    bad.u_min[0] = 1.0  # bounds changed after construction: a status, not an exception
    sol = ddp.solve(bad, method="ilqr")
    assert sol.status == "infeasible" and "u_min > u_max for control 0" in sol.message
    sol = ddp.solve(P, method="ddp", c1=10.0)  # no step can decrease 10x more than predicted
    assert sol.status == "line-search-failed"
    d = Exploding()
    P2 = ddp.ShootingProblem(d, P.x0, 10, 0.05, ddp.ControlRegularization(2, 1.0),
                             ddp.StateRegularization(d, np.zeros(4), 1.0))
    sol = ddp.solve(P2, method="ddp", us=np.ones((10, 2)))
    assert sol.status == "diverged" and not np.isfinite(sol.cost)
    d = SingularJacobian()
    P3 = ddp.ShootingProblem(d, P.x0, 10, 0.05, ddp.ControlRegularization(2, 1.0),
                             ddp.StateRegularization(d, np.zeros(4), 1.0))
    sol = ddp.solve(P3, method="ilqr", us=np.ones((10, 2)))
    assert sol.status == "diverged" and sol.message == "non-finite derivatives"
    assert np.isfinite(sol.cost) and ddp.solve(P3, method="ilqr", us=np.zeros((10, 2))).converged
    with pytest.raises(ValueError, match="method: expected 'ddp' or 'ilqr'"):
        ddp.solve(P, method="newton")
    with pytest.raises(ValueError, match=r"us: expected shape \(20, 2\)"):
        ddp.solve(P, method="ddp", us=np.zeros((3, 2)))


def test_verbose_prints_the_iteration_table(capsys):
    """DDP's rows end with the model of the iteration's step (exact, GN, mixed or exact>GN),
    iLQR's do not."""
    ddp.solve(_linear_problem(), method="ddp", verbose=True)
    out = capsys.readouterr().out
    assert "iter" in out and "|grad|" in out and "status: converged" in out
    lines = out.splitlines()
    head = next(i for i, x in enumerate(lines) if x.lstrip().startswith("iter"))
    rows = [x for x in lines[head + 1:] if x[:4].strip().isdigit()]
    assert lines[head].split()[-1] == "model" and rows
    assert all(x.split()[-1] in ("exact", "GN", "mixed", "exact>GN") for x in rows), rows
    assert rows[0].split()[-1] == "GN"  # safeguarded: Gauss-Newton far from the optimum
    ddp.solve(_linear_problem(), method="ddp", globalization="shift", verbose=True)
    rows = [x for x in capsys.readouterr().out.splitlines() if x[:4].strip().isdigit()]
    assert rows and all(x.split()[-1] == "exact" for x in rows), rows  # pure DDP
    ddp.solve(_linear_problem(), method="ilqr", verbose=True)
    lines = capsys.readouterr().out.splitlines()
    head = next(x for x in lines if x.lstrip().startswith("iter"))
    assert head.endswith("fwd ms") and "model" not in head


def test_the_table_names_each_ddp_step_model(capsys):
    """IterationTable's model column, row by row: a fallback (the solver sets ``fell_back``
    where the exact backward pass failed), Gauss-Newton, exact with knots dropped, exact."""
    table = ddp.IterationTable()
    table.start("ddp")
    for r in (ddp.Iteration(0, 1.0, 1.0, fell_back=True), ddp.Iteration(1, 1.0, 1.0),
              ddp.Iteration(2, 1.0, 1.0, exact=True, gauss_newton_knots=3),
              ddp.Iteration(3, 1.0, 1.0, exact=True)):
        table(r)
    lines = capsys.readouterr().out.splitlines()
    assert [x.split()[-1] for x in lines[1:]] == ["model", "exact>GN", "GN", "mixed", "exact"]


# ---------------------------------------------------------------------------------- compiled passes
def _regulation_problem(m, nu, T):
    """Hold a random configuration of model m at rest: state and control regularization, the
    last nu DoFs actuated."""
    q = m.random_configuration(np.random.default_rng(0))
    x0 = np.concatenate([q, np.zeros(m.nv)])
    run = ddp.Sum([ddp.StateRegularization(m, x0, 1.0), ddp.ControlRegularization(nu, 1e-2)])
    return ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, T, 0.02, run,
                               ddp.StateRegularization(m, x0, 10.0),
                               actuation=np.eye(m.nv)[:, m.nv - nu:])


def _hyq_problem(T=8):
    return _regulation_problem(robots.load("hyq"), 12, T)


def _tree_problem(T=6):
    """A floating random tree with spherical, planar and free-flyer joints (Lie-group blocks of
    the step), a third of the DoFs unactuated."""
    m = robots.random_tree(6, floating_base=True, seed=4, branching=0.4,
                           joint_types=("spherical", "planar", "revolute", "helical"))
    return _regulation_problem(m, m.nv - m.nv // 3, T)


def _numpy_backward(P, xs, us, d, method, reg, reg_x=0.0):
    """The Riccati recursion written plainly in numpy, with DDP's terms from F.hessians."""
    run, term, st = d.running, d.terminal, d.step
    Vx, Vxx = term.lx[0].copy(), term.lxx[0].copy()
    k, K, dV = np.zeros((P.T, P.nu)), np.zeros((P.T, P.nu, P.ndx)), np.zeros(2)
    Vxs = np.zeros((P.T + 1, P.ndx))
    Vxs[P.T] = Vx
    for t in range(P.T - 1, -1, -1):
        Fx, Fu = st.Fx[t], st.Fu[t]
        Qx, Qu = run.lx[t] + Fx.T @ Vx, run.lu[t] + Fu.T @ Vx
        Qxx = run.lxx[t] + Fx.T @ Vxx @ Fx
        Qux = run.lxu[t].T + Fu.T @ Vxx @ Fx
        Quu = run.luu[t] + Fu.T @ Vxx @ Fu
        if method == "ddp":
            Fxx, Fxu, Fuu = P.step_hessians(t, Vx, st, d.second_order)
            Qxx, Qux, Quu = Qxx + Fxx, Qux + Fxu.T, Quu + Fuu
        Quu_r = Quu + reg * np.eye(P.nu) + reg_x * Fu.T @ Fu
        Qux_r = Qux + reg_x * Fu.T @ Fx
        k[t], K[t] = -np.linalg.solve(Quu_r, Qu), -np.linalg.solve(Quu_r, Qux_r)
        dV += [k[t] @ Qu, 0.5 * k[t] @ Quu @ k[t]]
        Vx = Qx + K[t].T @ Quu @ k[t] + K[t].T @ Qu + Qux.T @ k[t]
        Vxx = Qxx + K[t].T @ Quu @ K[t] + K[t].T @ Qux + Qux.T @ K[t]
        Vxx = 0.5 * (Vxx + Vxx.T)
        Vxs[t] = Vx
    return k, K, dV, Vxs


@pytest.mark.parametrize("name", ["ur3", "hyq", "tree"])
@pytest.mark.parametrize("method", ["ilqr", "ddp"])
def test_compiled_backward_pass_equals_the_numpy_recursion(name, method):
    """The compiled pass forms F^T V F either from the step's structure (Jq, Jw and the v+ rows
    of F: ``structured``, the default from nv >= 24) or by dense products on the assembled F;
    the reference multiplies the assembled Fx, Fu with NumPy.  Both forms on every problem, and
    both forms of the value update: the Schur form (unbounded, reg_x = 0; reg_u = 0 where Q_uu
    allows it, else reg_u > 0) and the general one (reg_x > 0, or bounds: here far enough not
    to bind, so that the box-QP gives the same gains)."""
    P = {"ur3": lambda: _ur3_problem(T=10), "hyq": _hyq_problem, "tree": _tree_problem}[name]()
    lie_blocks = P.integrator.lie_sizes
    assert sorted(lie_blocks) == {"ur3": [], "hyq": [6], "tree": [3, 3, 3, 6]}[name]
    rng = np.random.default_rng(1)
    us = P.quasi_static() + rng.normal(size=(P.T, P.nu))
    xs = P.rollout(us)
    so_mode = P.second_order_mode("tensor") if method == "ddp" else 0
    for mode in {so_mode, 2 if method == "ddp" else 0}:  # DDP: tensors and the contracted kernel
        local = ddp.LocalModel("exact", ddp.SecondOrderMode(mode), True)
        d = P.calc_diff(xs, us, local)
        bounded = copy.copy(P)
        bounded.u_min, bounded.u_max = np.full(P.nu, -1e12), np.full(P.nu, 1e12)
        for reg_x, structured, Pb in itertools.product((0.0, 0.5), (False, True), (P, bounded)):
            # the smallest reg_u of 0, 10, 100, ... that gives a policy (far from the optimum
            # Q_uu may need some), and ten times it
            regs = [float(r) for r in (0.0, *10.0 ** np.arange(1, 10))]
            first = next(i for i, r in enumerate(regs) if ddp.backward.backward(
                Pb, xs, us, d, local, ddp.Regularization(u=r, x=reg_x),
                structured=structured)[0])
            for reg in (regs[first], regs[first + 1]):
                policy, _ = ddp.backward.backward(Pb, xs, us, d, local,
                                                  ddp.Regularization(u=reg, x=reg_x),
                                                  structured=structured)
                k, K, dV, Vx = _numpy_backward(P, xs, us, d, method, reg, reg_x)
                case = (mode, reg_x, structured, Pb is bounded, reg)
                assert rel_err(policy.k, k) < 1e-9 and rel_err(policy.K, K) < 1e-9, case
                assert rel_err(policy.Vx, Vx) < 1e-9, case
                np.testing.assert_allclose([policy.dV1, policy.dV2], dV, rtol=1e-9)


def test_compiled_rollouts_equal_stepping_knot_by_knot():
    P = _hyq_problem()
    rng = np.random.default_rng(2)
    us = P.quasi_static() + rng.normal(size=(P.T, P.nu))
    xs = [P.x0]
    for t in range(P.T):
        xs.append(P.integrator.step(xs[-1], us[t]))
    np.testing.assert_allclose(P.rollout(us), np.array(xs), atol=1e-12)
    k, K = rng.normal(size=(P.T, P.nu)), 0.1 * rng.normal(size=(P.T, P.nu, P.ndx))
    ref = P.rollout(us + 0.3)
    xn, un = P.closed_loop(ref, us, k, K, alpha=0.5)
    x = P.x0
    for t in range(P.T):
        u = us[t] + 0.5 * k[t] + K[t] @ P.integrator.difference(ref[t], x)
        np.testing.assert_allclose(un[t], u, atol=1e-12)
        x = P.integrator.step(x, u)
        np.testing.assert_allclose(xn[t + 1], x, atol=1e-12)


def test_settings_and_bounds_are_checked():
    with pytest.raises(ValueError, match="hessians: expected 'exact' or 'gauss-newton'"):
        ddp.SolverSettings(hessians="newton")
    with pytest.raises(ValueError, match="max_iter: expected a non-negative integer"):
        ddp.SolverSettings(max_iter=-1)
    with pytest.raises(ValueError, match="alphas: expected step lengths in"):
        ddp.SolverSettings(alphas=(1.0, 2.0))
    with pytest.raises(ValueError, match="second_order: expected one of"):
        ddp.SolverSettings(second_order="exact")
    with pytest.raises(ValueError, match="reg_factor: expected a number above 1"):
        ddp.SolverSettings(reg_factor=1.0)
    with pytest.raises(ValueError, match="reg_factor: expected a number above 1; got 'a'"):
        ddp.SolverSettings(reg_factor="a")
    for name, bad in (("tol", np.nan), ("c1", -1.0), ("reg_max", np.inf), ("gap_tol", "x")):
        with pytest.raises(ValueError, match=f"{name}: expected a non-negative finite number"):
            ddp.SolverSettings(**{name: bad})
    assert ddp.SolverSettings(alphas=[1, 0.5]).alphas == (1.0, 0.5)
    assert ddp.SolverSettings(alphas=0.25).alphas == (0.25,)
    with pytest.raises(ValueError, match="tolerance: not a solver setting"):
        ddp.solve(_linear_problem(), tolerance=1e-3)
    with pytest.raises(ValueError, match=r"u_min: expected a scalar or 2 values; got shape \(3,\)"):
        _linear_problem(u_min=np.zeros(3))
    with pytest.raises(ValueError, match="u_max: expected numbers"):
        _linear_problem(u_max=[np.nan, 1.0])
    with pytest.raises(ValueError, match="second_order: 'contracted' needs the analytical"):
        ddp.solve(_linear_problem(), second_order="contracted")
    s = ddp.SolverSettings(method="ilqr", max_iter=3)
    assert ddp.solve(_linear_problem(), settings=s, max_iter=1).iterations == 1
    with pytest.raises(ValueError, match="callbacks: expected callables cb.Iteration.; got 3 at "
                                         "position 1"):
        ddp.solve(_linear_problem(), callbacks=(print, 3))
    with pytest.raises(ValueError, match="callbacks: expected callables cb.Iteration.; got 3$"):
        ddp.solve(_linear_problem(), callbacks=3)


@pytest.mark.parametrize("bad", [np.nan, 1e200])
def test_a_bad_initial_guess_is_a_status_naming_it(bad):
    P = _ur3_problem(T=10)
    us = np.zeros((P.T, P.nu))
    us[3, 2] = bad
    sol = ddp.solve(P, us=us)
    assert sol.status == "diverged" and sol.message.startswith("us:"), sol.message
    xs = np.tile(P.x0, (P.T + 1, 1))
    xs[2, 0] = np.nan
    sol = ddp.solve(P, xs=xs)
    assert sol.status == "diverged" and sol.message.startswith("xs:"), sol.message


def test_statuses_of_callbacks_and_regularization():
    P = _linear_problem()
    sol = ddp.solve(P, method="ddp", callbacks=[lambda it: True])
    assert sol.status == "stopped-by-callback" and sol.iterations == 1
    assert set(ddp.STATUSES) >= {"regularization-exhausted", "line-search-failed",
                                 "stopped-by-callback"}
    # a concave cost in u: Q_uu is not positive definite below reg = 100 > reg_max
    P2 = ddp.ShootingProblem(P.dynamics, P.x0, P.T, P.dt, _Concave(), P.terminal_cost)
    sol = ddp.solve(P2, method="ddp", reg_max=1.0)
    assert sol.status == "regularization-exhausted" and "not positive definite" in sol.message


class _Upright(ddp.ResidualCost):
    """The pendulum upright and at rest: from exactly hanging the gradient is zero by symmetry,
    at the cost's maximum in the angle."""

    def __init__(self, weight):
        super().__init__(nq=1, nv=1, nu=1, weight=weight, nr=3, name="Upright")

    def residual(self, q, dq, v, u):
        import casadi

        th = q[0] + dq[0]
        return casadi.vertcat(casadi.sin(th), 1 + casadi.cos(th), v[0])


def test_a_stationary_point_that_is_no_minimum_is_a_saddle_status_for_ddp():
    """Hanging is a maximum of the upright cost: DDP's exact Q_uu says so (it was "converged"
    at iteration 0); iLQR's Gauss-Newton Q_uu cannot tell; one nudge away, DDP swings up."""
    run = ddp.Sum([_Upright(1.0), ddp.ControlRegularization(1, 1e-3)])
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(robots.load("pendulum")), np.zeros(2), 50,
                            0.02, run, _Upright(100.0))
    sol = ddp.solve(P, us=np.zeros((50, 1)), method="ddp")
    assert sol.status == "converged-saddle" and not sol.converged and sol.iterations == 0
    assert "not positive definite at knot" in sol.message and sol.cost == pytest.approx(202.0)
    assert ddp.solve(P, us=np.zeros((50, 1)), method="ilqr").status == "converged"
    swing = ddp.solve(P, us=np.full((50, 1), 0.1), method="ddp", max_iter=200)
    assert swing.status == "converged" and swing.cost < 10.0


def test_iterations_count_their_backward_passes():
    """An iteration records one backward pass when Q_uu is positive definite at once, and one more
    per increase of the regularization: "shift" tries reg_min, then multiplies by 1.6^2, 1.6^3,
    ... (Tassa's schedule), up to reg_max."""
    sol = ddp.solve(_linear_problem(), method="ilqr")
    assert [h.backward_passes for h in sol.history] == [1, 0]  # the last record only tests
    P = _linear_problem()
    concave = ddp.ShootingProblem(P.dynamics, P.x0, P.T, P.dt, _Concave(), P.terminal_cost)
    s = ddp.SolverSettings()
    for reg_max in (1.0, 1e4):
        sol = ddp.solve(concave, method="ilqr", reg_max=reg_max, max_iter=1)
        assert sol.status == "regularization-exhausted"
        tried = [k for k in range(1, 30)  # the regularizations after k increases
                 if s.reg_min * s.reg_factor ** (k * (k + 1) // 2 - 1) <= reg_max]
        assert sol.history[0].backward_passes == 1 + len(tried) > 2


class _Concave(ddp.costs.Cost):
    """-50 |u|^2: a user cost (any Cost subclass) that no step can minimize."""

    nq = nv = nu = 2

    def calc(self, xs, us):
        return -50.0 * np.sum(np.asarray(us) ** 2, axis=-1)

    def calc_diff(self, xs, us, hessians="exact"):
        T = len(us)
        return ddp.costs.CostDerivatives(self.calc(xs, us), np.zeros((T, 4)), -100.0 * us,
                                         np.zeros((T, 4, 4)), np.zeros((T, 4, 2)),
                                         np.tile(-100.0 * np.eye(2), (T, 1, 1)))


def test_the_solution_keeps_a_policy_that_tracks_its_trajectory():
    P = _ur3_problem(T=20)
    sol = ddp.solve(P, method="ddp", max_iter=50)
    assert sol.converged and sol.policy is not None
    p = sol.policy
    xs, us = P.closed_loop(p.xs, p.us, np.zeros_like(p.k), p.K, alpha=0.0)
    np.testing.assert_allclose(xs, p.xs, atol=1e-10)
    assert p.control(0, np.zeros(P.ndx), alpha=0.0) == pytest.approx(p.us[0])


def test_a_solution_saves_and_loads_back(tmp_path):
    """Solution.save / ddp.load_solution: the trajectory, the policy (its closed loop gives the
    same states), the history, the settings and the problem's description, in one .npz."""
    P = _ur3_problem(T=10)
    sol = ddp.solve(P, max_iter=20)
    path = sol.save(tmp_path / "ur3")
    assert path == tmp_path / "ur3.npz"
    back = ddp.load_solution(path)
    np.testing.assert_array_equal(back.xs, sol.xs)
    np.testing.assert_array_equal(back.us, sol.us)
    assert (back.cost, back.iterations, back.status, back.method) == (
        sol.cost, sol.iterations, sol.status, sol.method)
    assert back.settings == sol.settings
    np.testing.assert_equal([dataclasses.astuple(h) for h in back.history],  # NaN == NaN here
                            [dataclasses.astuple(h) for h in sol.history])
    assert back.problem["T"] == 10 and back.problem["nu"] == P.nu
    loop = [P.closed_loop(s.policy.xs, s.policy.us, s.policy.k, s.policy.K, 0.5)[0]
            for s in (sol, back)]
    np.testing.assert_array_equal(*loop)
    np.savez(tmp_path / "other.npz", meta=np.array('{"format": 0}'))
    with pytest.raises(ValueError, match="path: expected a solution file of format 1; got 0"):
        ddp.load_solution(tmp_path / "other.npz")
