"""Costs: values against Pinocchio, gradients and Hessians against central differences on the
manifold, Gauss-Newton Hessians positive semi-definite, argument errors."""

import numpy as np
import pinocchio as pin
import pytest

import ddp
from dynamics import robots
from helpers import rel_err


def _cost_fd(m, c, x, u):
    n, nu = m.nv, len(u)
    q, v = x[:m.nq], x[m.nq:]

    def f(z):
        xx = np.concatenate([m.integrate(q, z[:n]), v + z[n:2 * n]])
        return c.calc(xx[None], (u + z[2 * n:])[None])[0]

    N, h = 2 * n + nu, 1e-4
    E = np.eye(N) * h
    g = np.array([(f(E[k]) - f(-E[k])) / (2 * h) for k in range(N)])
    H = np.array([[(f(E[j] + E[k]) - f(E[j] - E[k]) - f(E[k] - E[j]) + f(-E[j] - E[k]))
                   / (4 * h * h) for k in range(N)] for j in range(N)])
    return g, H


@pytest.mark.parametrize("name,frame", [("ur3", "tool0"), ("hyq", "lf_foot")])
def test_cost_values_and_derivatives(name, frame):
    m = robots.load(name)
    n, nu = m.nv, 3
    rng = np.random.default_rng(2)
    q, v, u = m.random_configuration(rng), rng.normal(size=n), rng.normal(size=nu)
    x = np.concatenate([q, v])
    q_ref = m.random_configuration(rng)
    x_ref = np.concatenate([q_ref, rng.normal(size=n)])
    target = pin.SE3(pin.exp3(np.array([0.3, -0.2, 0.5])), np.array([0.2, 0.1, 0.3]))
    data = m.pin_model.createData()
    pin.framesForwardKinematics(m.pin_model, data, q)
    oMf = data.oMf[m.pin_model.getFrameId(frame)]
    r_place = pin.log6(target.inverse() * oMf).vector
    r_state = np.concatenate([pin.difference(m.pin_model, q_ref, q), v - x_ref[m.nq:]])
    cases = [(ddp.StateRegularization(m, x_ref, 2.0), 1.0 * r_state @ r_state),
             (ddp.FramePlacement(m, frame, target, 3.0), 1.5 * r_place @ r_place),
             (ddp.FrameTranslation(m, frame, np.ones(3), 5.0),
              2.5 * np.sum((oMf.translation - 1) ** 2)),
             (ddp.ControlRegularization(nu, 0.1, u_ref=np.ones(nu)), 0.05 * np.sum((u - 1) ** 2))]
    for c, value in cases:
        c = ddp.costs.bind(c, m.nq, n, nu)
        d = c.calc_diff(x[None], u[None])
        assert d.l[0] == pytest.approx(value, rel=1e-10)
        g, H = _cost_fd(m, c, x, u)
        assert rel_err(np.concatenate([d.lx[0], d.lu[0]]), g) < 1e-7
        HH = np.block([[d.lxx[0], d.lxu[0]], [d.lxu[0].T, d.luu[0]]])
        assert rel_err(HH, H) < 1e-5, type(c).__name__
        gn = c.calc_diff(x[None], u[None], hessians="gauss-newton")
        assert np.all(np.linalg.eigvalsh(gn.lxx[0]) > -1e-9)


def test_cost_arguments_are_checked():
    m = robots.load("ur3")
    with pytest.raises(ValueError, match="frame_name: no frame 'hand'"):
        ddp.FrameTranslation(m, "hand", np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="x_ref: expected 12 finite values"):
        ddp.StateRegularization(m, np.zeros(5), 1.0)
    with pytest.raises(ValueError, match="StateRegularization weight: expected a non-negative"):
        ddp.StateRegularization(m, np.zeros(12), -1.0)
