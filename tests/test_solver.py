"""DDP / iLQR: Riccati optimality on a linear-quadratic problem, the same optimum with quadratic
vs linear rates, box-QP and bounds, failure statuses, the iteration table."""

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
    sol = ddp.solve(P, method, tol=1e-9)
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
    u0 = np.zeros((P.T, P.nu))
    d = ddp.solve(P, "ddp", us=u0, tol=1e-8, max_iter=200)
    i = ddp.solve(P, "ilqr", us=u0, tol=1e-8, max_iter=200)
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
    sol = ddp.solve(P, "ddp", max_iter=100)
    assert sol.converged, sol.message
    assert np.all(sol.us <= 2.0 + 1e-12) and np.all(sol.us >= -2.0 - 1e-12)
    assert np.any(np.isclose(np.abs(sol.us), 2.0))  # some bound is active


class Exploding(Linear):
    def aba(self, q, v, tau):
        return np.full(2, np.nan) if abs(tau[0]) > 0.5 else super().aba(q, v, tau)


def test_failure_statuses():
    sol = ddp.solve(_ur3_problem(T=10), "ddp", max_iter=1)
    assert sol.status == "max-iterations" and not sol.converged and sol.iterations == 1
    P = _linear_problem()
    sol = ddp.solve(_linear_problem(u_min=[1.0, 0.0], u_max=[0.0, 1.0]), "ilqr")
    assert sol.status == "infeasible" and "u_min > u_max for control 0" in sol.message
    sol = ddp.solve(P, "ddp", c1=10.0)  # no step can decrease 10x more than predicted
    assert sol.status == "line-search-failed"
    d = Exploding()
    P2 = ddp.ShootingProblem(d, P.x0, 10, 0.05, ddp.ControlRegularization(2, 1.0),
                             ddp.StateRegularization(d, np.zeros(4), 1.0))
    sol = ddp.solve(P2, "ddp", us=np.ones((10, 2)))
    assert sol.status == "diverged" and not np.isfinite(sol.cost)
    with pytest.raises(ValueError, match="method: expected 'ddp' or 'ilqr'"):
        ddp.solve(P, "newton")
    with pytest.raises(ValueError, match=r"us: expected shape \(20, 2\)"):
        ddp.solve(P, "ddp", us=np.zeros((3, 2)))


def test_verbose_prints_the_iteration_table(capsys):
    ddp.solve(_linear_problem(), "ddp", verbose=True)
    out = capsys.readouterr().out
    assert "iter" in out and "|grad|" in out and "status: converged" in out
