"""Costs: values against Pinocchio, gradients and Hessians against central differences on the
manifold, Gauss-Newton Hessians positive semi-definite, argument errors."""

import numpy as np
import pinocchio as pin
import pytest

import ddp
from dynamics import robots
from helpers import Upright, build, rel_err, spec_id, with_frame


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
    pin.forwardKinematics(m.pin_model, data, q, v)
    for ref in (pin.LOCAL, pin.LOCAL_WORLD_ALIGNED):
        r_vel = pin.getFrameVelocity(m.pin_model, data, m.pin_model.getFrameId(frame), ref).vector
        cases.append((ddp.FrameVelocity(m, frame, np.ones(6), 0.4, reference=ref),
                      0.2 * np.sum((r_vel - 1) ** 2)))
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


@pytest.mark.parametrize("name,frame", [("ur3", "tool0"), ("hyq", "lf_foot"),
                                        ((8, True, 5), "tip")])
def test_frame_velocity_jacobian_equals_pinocchios(name, frame):
    """The residual Jacobian J of FrameVelocity (seen through its Gauss-Newton Hessian J^T J and
    gradient J^T r, unit weights) against Pinocchio's velocity derivatives; a random tree with
    every joint type.  LOCAL: getFrameVelocityDerivatives.  LOCAL_WORLD_ALIGNED, v = (v0 + w x p,
    w) from the WORLD velocity (v0, w) and the frame's position p: from the WORLD derivatives and
    the position Jacobian (Pinocchio 4.1's own LOCAL_WORLD_ALIGNED dv/dq is not the derivative
    along q (+) dq: on UR3 it is 0.63 off central differences of getFrameVelocity)."""
    m = robots.load(name) if isinstance(name, str) else with_frame(robots.random_tree(
        name[0], joint_types=robots.JOINT_TYPES, floating_base=name[1], seed=name[2]))
    rng = np.random.default_rng(11)
    q, v = m.random_configuration(rng), rng.normal(size=m.nv)
    x = np.concatenate([q, v])[None]
    pm, data = m.pin_model, m.pin_model.createData()
    fid = pm.getFrameId(frame)
    pin.computeForwardKinematicsDerivatives(pm, data, q, v, np.zeros(m.nv))
    pin.updateFramePlacements(pm, data)
    pin.computeJointJacobians(pm, data, q)
    J_local = np.hstack(pin.getFrameVelocityDerivatives(pm, data, fid, pin.LOCAL))
    dV = np.hstack(pin.getFrameVelocityDerivatives(pm, data, fid, pin.WORLD))
    w, p = pin.getFrameVelocity(pm, data, fid, pin.WORLD).angular, data.oMf[fid].translation
    dp = np.hstack([pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)[:3],
                    np.zeros((3, m.nv))])
    J_aligned = np.vstack([dV[:3] - pin.skew(p) @ dV[3:] + pin.skew(w) @ dp, dV[3:]])
    for ref, J in ((pin.LOCAL, J_local), (pin.LOCAL_WORLD_ALIGNED, J_aligned)):
        r = pin.getFrameVelocity(pm, data, fid, ref).vector - 0.5
        c = ddp.costs.bind(ddp.FrameVelocity(m, frame, 0.5 * np.ones(6), 1.0, reference=ref),
                           m.nq, m.nv, 2, m)
        d = c.calc_diff(x, np.zeros((1, 2)), hessians="gauss-newton")
        assert rel_err(d.lxx[0], J.T @ J) < 1e-12, ref
        assert rel_err(d.lx[0], J.T @ r) < 1e-12, ref


def test_cost_arguments_are_checked():
    m = robots.load("ur3")
    with pytest.raises(ValueError, match="reference: expected 'local'"):
        ddp.FrameVelocity(m, "tool0", np.zeros(6), 1.0, reference=pin.WORLD)
    with pytest.raises(ValueError, match="reference: expected 'local'"):
        ddp.FrameVelocity(m, "tool0", np.zeros(6), 1.0, reference="world")
    with pytest.raises(ValueError, match="velocity: expected a pinocchio.Motion or 6 finite"):
        ddp.FrameVelocity(m, "tool0", np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="velocity: expected a pinocchio.Motion or 6 finite"):
        ddp.FrameVelocity(m, "tool0", np.full(6, np.nan), 1.0)
    with pytest.raises(ValueError, match="FrameVelocity weight"):
        ddp.FrameVelocity(m, "tool0", pin.Motion.Zero(), -np.ones(6))
    with pytest.raises(ValueError, match="frame_name: no frame 'hand'"):
        ddp.FrameTranslation(m, "hand", np.zeros(3), 1.0)
    with pytest.raises(ValueError, match=r"frame_name: no frame 'tool' .*did you mean 'tool0'"):
        ddp.FramePlacement(m, "tool", pin.SE3.Identity(), 1.0)
    with pytest.raises(ValueError, match="x_ref: expected 12 finite values"):
        ddp.StateRegularization(m, np.zeros(5), 1.0)
    with pytest.raises(ValueError, match="StateRegularization weight: expected a non-negative"):
        ddp.StateRegularization(m, np.zeros(12), -1.0)
    M = np.eye(4)
    for bad in (np.eye(3), np.where(np.eye(4) > 0, 1.0, np.nan), np.diag([2.0, 1, 1, 1]),
                np.vstack([np.eye(4)[:3], [1.0, 0, 0, 1]])):
        with pytest.raises(ValueError, match="placement: expected a pinocchio.SE3 or a 4x4"):
            ddp.FramePlacement(m, "tool0", bad, 1.0)
    assert np.array_equal(ddp.FramePlacement(m, "tool0", pin.SE3(M), 1.0).placement, M)
    with pytest.raises(ValueError, match="position: expected 3 finite values"):
        ddp.FrameTranslation(m, "tool0", [np.nan, 0.0, 0.0], 1.0)
    with pytest.raises(ValueError, match="rotation: expected a 3x3 rotation matrix"):
        ddp.FrameRotation(m, "tool0", np.diag([1.0, 1.0, -1.0]), 1.0)
    with pytest.raises(ValueError, match="u_ref: expected 6 finite values"):
        ddp.ControlRegularization(6, 1.0, u_ref=np.full(6, np.inf))
    with pytest.raises(ValueError, match="nu: expected a positive integer"):
        ddp.ControlRegularization(np.zeros(6), 1.0)


# ---------------------------------------------------------------------------------- compiled
@pytest.mark.parametrize("spec", ["ur3", "hyq", pytest.param("atlas", marks=pytest.mark.slow),
                                  (8, True, 1), (8, False, 2), (10, False, 3), (10, True, 4)],
                         ids=spec_id)
def test_compiled_costs_equal_the_casadi_reference(spec):
    """Every built-in cost, exact and Gauss-Newton, at random states: the compiled program and the
    CasADi residual (AD, sharing no code with it) agree to 1e-10 relative.  States and targets are
    drawn around a random configuration, with rotation errors up to 2.8 rad: at an error of
    pi - 0.04 rad, where log3 and its derivatives are ill-conditioned (~ 1 / (pi - theta)^2),
    the two implementations were measured to differ by 1.4e-10."""
    m = with_frame(build(spec) if not isinstance(spec, tuple) else robots.random_tree(
        spec[0], joint_types=robots.JOINT_TYPES, floating_base=spec[1], seed=spec[2]))
    rng = np.random.default_rng(7)
    nu, T = 3, 5
    q0 = m.random_configuration(rng)
    data = m.pin_model.createData()
    tip = m.pin_model.getFrameId("tip")
    pin.framesForwardKinematics(m.pin_model, data, q0)
    target = data.oMf[tip] * pin.exp6(0.6 * rng.normal(size=6))

    def near():  # a configuration near q0 whose rotation error to the target is <= 2.8 rad
        while True:
            q = m.integrate(q0, 0.6 * rng.normal(size=m.nv))
            pin.framesForwardKinematics(m.pin_model, data, q)
            if np.linalg.norm(pin.log3(target.rotation.T @ data.oMf[tip].rotation)) <= 2.8:
                return q

    xs = np.array([np.concatenate([near(), rng.normal(size=m.nv)]) for _ in range(T)])
    us = rng.normal(size=(T, nu))
    x_ref = np.concatenate([near(), rng.normal(size=m.nv)])
    costs = [ddp.StateRegularization(m, x_ref, rng.uniform(0.5, 2, 2 * m.nv)),
             ddp.ControlRegularization(nu, 0.3, u_ref=np.ones(nu)),
             ddp.FramePlacement(m, "tip", target, rng.uniform(1, 2, 6)),
             ddp.FrameTranslation(m, "tip", np.ones(3), 2.0),
             ddp.FrameRotation(m, "tip", target.rotation, 1.5),
             ddp.FrameVelocity(m, "tip", rng.normal(size=6), rng.uniform(1, 2, 6)),
             ddp.FrameVelocity(m, "tip", rng.normal(size=6), 0.7, reference="world-aligned"),
             ddp.CoMPosition(m, rng.normal(size=3), rng.uniform(1, 2, 3))]
    # the quadratic barrier, with bounds that some knots' residuals leave and others do not
    r_state = rng.uniform(0.2, 1.0, 2 * m.nv)
    costs += [ddp.StateRegularization(m, x_ref, rng.uniform(0.5, 2, 2 * m.nv),
                                      activation=ddp.QuadraticBarrier(-r_state, r_state)),
              ddp.ControlRegularization(nu, 0.3, activation=ddp.QuadraticBarrier(-0.5, 0.8)),
              ddp.FrameTranslation(m, "tip", np.ones(3), 2.0,
                                   activation=ddp.QuadraticBarrier([-1, -np.inf, 0], [0.5, 1, 2])),
              ddp.FramePlacement(m, "tip", target, 1.5,
                                 activation=ddp.QuadraticBarrier(-0.4, 0.4)),
              ddp.CoMPosition(m, np.zeros(3), 3.0, activation=ddp.QuadraticBarrier(-0.1, 0.1))]
    for c in costs:
        c = ddp.costs.bind(c, m.nq, m.nv, nu, m)
        for hessians in ("exact", "gauss-newton"):
            a, b = c.calc_diff(xs, us, hessians), c.casadi_calc_diff(xs, us, hessians)
            for k in a._fields:
                assert rel_err(getattr(a, k), getattr(b, k)) < 1e-10, (type(c).__name__, k)
        np.testing.assert_allclose(c.calc(xs, us), c.casadi_calc(xs, us), rtol=1e-12)
    # a Sum runs the built-in terms as one program and adds a CasADi residual
    s = ddp.costs.bind(ddp.Sum(costs[:2] + [Upright(m)]), m.nq, m.nv, nu, m)
    parts = [ddp.costs.bind(c, m.nq, m.nv, nu, m) for c in costs[:2] + [Upright(m)]]
    np.testing.assert_allclose(s.calc_diff(xs, us).lxx,
                               sum(p.calc_diff(xs, us).lxx for p in parts), atol=1e-12)


def test_bind_does_not_change_the_users_cost():
    m = robots.load("ur3")
    c = ddp.FrameTranslation(m, "tool0", np.zeros(3), 1.0)
    b = ddp.costs.bind(c, m.nq, m.nv, 6, m)
    assert c.nu == 0 and b.nu == 6 and b is not c


def test_cost_derivatives_are_c_contiguous_whatever_the_residual_gives():
    """A user's CasADi residual (the pendubot's terminal cost) gives some derivatives
    transposed; CostDerivatives stores one memory layout, so the compiled passes are compiled
    once (another layout compiled the backward pass again, ~14 s, in the middle of a study)."""
    from ddp.costs import CostDerivatives
    from problems.examples import get

    P = get("pendubot")
    xs, us = np.tile(P.x0, (P.T + 1, 1)), P.quasi_static()
    for d in P.cost_derivatives(xs, us, "exact"):
        for k in ("l", "lx", "lu", "lxx", "lxu", "luu"):
            assert getattr(d, k).flags.c_contiguous, k
    fortran = CostDerivatives(*(np.asfortranarray(np.ones((2, 3, 3))),) * 6)
    assert fortran.lxx.flags.c_contiguous


def test_a_casadi_residual_pickles_after_use_and_gives_the_same_values():
    """A user's residual holds CasADi buffers once evaluated (they do not pickle); a copy (as
    Dask makes of a task's objects) rebuilds them.  Values, at one knot and at several, and
    derivatives stay those of the symbolic residual: sin, 1 - cos of q_0."""
    import pickle

    m = robots.load("ur3")
    c = ddp.costs.bind(Upright(m), m.nq, m.nv, 2, m)
    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.normal(size=(4, m.nq)), rng.normal(size=(4, m.nv))], axis=1)
    us = rng.normal(size=(4, 2))
    ref = 2.0 * 0.5 * (np.sin(xs[:, 0]) ** 2 + (1 - np.cos(xs[:, 0])) ** 2)
    np.testing.assert_allclose(c.calc(xs, us), ref, rtol=1e-14)
    d = c.calc_diff(xs, us, "gauss-newton")
    c2 = pickle.loads(pickle.dumps(c))
    np.testing.assert_allclose(c2.calc(xs[:1], us[:1]), ref[:1], rtol=1e-14)
    np.testing.assert_array_equal(c2.calc_diff(xs, us, "gauss-newton").lxx, d.lxx)
    np.testing.assert_allclose(d.lx[:, 0], 2.0 * np.sin(xs[:, 0]), rtol=1e-12)  # d/dq0 of ref
