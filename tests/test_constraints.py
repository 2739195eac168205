"""Hard constraints (ddp.Constraint, the augmented Lagrangian of ddp.constraints): a QP solved in
closed form, the KKT conditions at the solution of mim-solvers' UR5 example, its optimum against
CSQP's, the compiled ControlGravity against CasADi AD and Pinocchio, statuses and bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

import ddp
from dynamics import AnalyticalDynamics, robots
from helpers import build, rel_err, spec_id
from problems import examples

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------- ControlGravity
@pytest.mark.parametrize("spec", ["ur3", (8, False, 2), (8, True, 1), (10, False, 3)],
                         ids=spec_id)
def test_control_gravity_against_casadi_and_pinocchio(spec):
    """The compiled u - g(q) (IDSVA, contracted IDSVA-SO) against its CasADi residual (AD, no
    code shared) for value, gradient, exact and Gauss-Newton Hessians, and g against
    Pinocchio's computeGeneralizedGravity (armature included in the random trees)."""
    m = build(spec)
    rng = np.random.default_rng(3)
    T = 4
    xs = np.array([np.concatenate([m.random_configuration(rng), rng.normal(size=m.nv)])
                   for _ in range(T)])
    us = rng.normal(size=(T, m.nv))
    w = rng.uniform(0.5, 2.0, m.nv)
    for activation in (None, ddp.QuadraticBarrier(-0.5, 0.5)):
        c = ddp.costs.bind(ddp.ControlGravity(m, w, activation=activation), m.nq, m.nv, m.nv, m)
        for hessians in ("exact", "gauss-newton"):
            a, b = c.calc_diff(xs, us, hessians), c.casadi_calc_diff(xs, us, hessians)
            for k in a._fields:
                assert rel_err(getattr(a, k), getattr(b, k)) < 1e-10, (k, hessians)
    g = np.array([pin.computeGeneralizedGravity(m.pin_model, m.pin_model.createData(),
                                                x[:m.nq]) for x in xs])
    np.testing.assert_allclose(c.residual_values(xs, us), us - g, atol=1e-10)


def test_control_gravity_needs_a_fully_actuated_robot():
    m = robots.load("hyq")
    with pytest.raises(ValueError, match="nu: ControlGravity needs a fully actuated robot"):
        ddp.ControlGravity(m, 1.0, nu=12)


# ------------------------------------------------------------------------- a closed-form QP
def _control_problem(lower, upper, u_ref, w=2.0, T=5, **kwargs):
    """UR3 with only a control cost 1/2 w |u - u_ref|^2 and a constraint on u: the optimum is
    u = clip(u_ref, lower, upper) at every knot, whatever the dynamics."""
    m = robots.load("ur3")
    x0 = np.concatenate([m.neutral(), np.zeros(m.nv)])
    cost = ddp.ControlRegularization(m.nv, w, u_ref=u_ref)
    box = ddp.Constraint(ddp.ControlRegularization(m.nv, 1.0), lower, upper)
    return ddp.ShootingProblem(AnalyticalDynamics(m), x0, T, 0.01, cost,
                               ddp.StateRegularization(m, x0, 0.0), constraints=[box], **kwargs)


def test_a_qp_solved_in_closed_form():
    """Box and equality entries: u = clip(u_ref, lower, upper), and the multipliers satisfy
    stationarity dt w (u - u_ref) + lam = 0 (zero on the entries within their bounds)."""
    u_ref = np.array([1.0, -2.0, 0.3, 0.0, 4.0, -1.0])
    lower = np.array([-0.5, -0.5, -0.5, 0.2, 1.0, -np.inf])
    upper = np.array([0.5, 0.5, 0.5, 0.2, np.inf, -2.0])
    P = _control_problem(lower, upper, u_ref)
    for method in ("ddp", "ilqr"):
        sol = ddp.solve(P, method=method)
        assert sol.status == "converged", sol.message
        u_star = np.clip(u_ref, lower, upper)
        np.testing.assert_allclose(sol.us, np.tile(u_star, (P.T, 1)), atol=1e-6)
        assert sol.violation <= 1e-6
        lam = np.array(P.constraints.split(sol.multipliers)[0])[:, 0]
        np.testing.assert_allclose(lam, np.tile(P.dt * 2.0 * (u_ref - u_star), (P.T, 1)),
                                   atol=1e-6)
        # the reported cost is the cost alone, and so is the problem's outside a solve
        assert sol.cost == pytest.approx(P.T * P.dt * np.sum((u_star - u_ref) ** 2), rel=1e-6)
        assert P.cost(sol.xs, sol.us) == pytest.approx(sol.cost, rel=1e-12)


def test_a_warm_start_from_the_solution_takes_at_most_one_step():
    """The returned multipliers are the update at the solution, so the first subproblem of a
    warm start is centred on them: its optimum moves by at most constraint_tol, which one
    Newton step covers (its gradient is amplified by the penalty: 1.2e-3 here)."""
    P = _control_problem(-0.5, 0.5, np.full(6, 1.0))
    sol = ddp.solve(P)
    again = ddp.solve(P, xs=sol.xs, us=sol.us, multipliers=sol.multipliers,
                      penalty=sol.penalty)
    assert again.status == "converged" and again.iterations <= 1
    np.testing.assert_allclose(again.us, sol.us, atol=1e-8)
    cold = ddp.solve(P)
    assert cold.iterations >= 3  # the warm start is what saves the iterations


def test_infeasible_constraints_give_the_status_naming_the_knot():
    """u = 1 (equality) against the control bound u_max = 0.5: never met."""
    P = _control_problem(1.0, 1.0, np.zeros(6), u_max=0.5, T=3)
    sol = ddp.solve(P, penalty_max=1e5)
    assert sol.status == "infeasible"
    assert "ControlRegularization at knot" in sol.message and "penalty_max" in sol.message
    assert np.all(np.isfinite(sol.xs)) and np.isfinite(sol.cost)


# ------------------------------------------------------------------------- mim-solvers' UR5
@pytest.fixture(scope="module")
def ur5_box():
    P = examples.get("ur5-box")
    start, shooting = examples.default_start("ur5-box")
    xs, us = examples.initial_guess(P, start)
    return P, ddp.solve(P, xs=xs, us=us, shooting=shooting)


def test_ur5_box_meets_the_kkt_conditions(ur5_box):
    """At the solution: feasible to 1e-6 m; multipliers of the right sign (upper bounds >= 0,
    lower <= 0) and zero on inactive entries; the Lagrangian's gradient in the controls, by
    central differences of the problem's cost and the constraints' CasADi residuals along
    rollouts (no code shared with the backward pass), near zero."""
    P, sol = ur5_box
    assert sol.status == "converged", sol.message
    assert sol.violation <= 1e-6
    al = P.constraints
    r, lam = al.residuals(sol.xs, sol.us), sol.multipliers
    inside = (r > al.lower + 1e-5) & (r < al.upper - 1e-5)
    assert np.max(np.abs(lam[inside]), initial=0.0) < 1e-8
    assert np.all(lam[r >= al.upper - 1e-5] >= -1e-8)
    assert np.all(lam[r <= al.lower + 1e-5] <= 1e-8)
    assert np.any(~inside)  # the box is active somewhere: the test can see a wrong multiplier

    def lagrangian(us):
        xs = P.rollout(us)
        return P.cost(xs, us) + lam @ al.residuals(xs, us)

    # the rollouts are stiff (UR5's wrist under gravity, dt = 0.05): h = 1e-6 leaves a
    # truncation error of 4.5e-4 in the gradient, h = 1e-8 one below 1e-7
    h, us = 1e-8, sol.us
    grad, cost_grad = np.zeros_like(us), np.zeros_like(us)
    for t in range(P.T):
        for a in range(P.nu):
            e = np.zeros_like(us)
            e[t, a] = h
            grad[t, a] = (lagrangian(us + e) - lagrangian(us - e)) / (2 * h)
            cost_grad[t, a] = (P.cost(P.rollout(us + e), us + e)
                               - P.cost(P.rollout(us - e), us - e)) / (2 * h)
    assert np.max(np.abs(grad)) < 1e-5, np.max(np.abs(grad))
    assert np.max(cost_grad) > 1e-3  # the cost alone is not stationary: the multipliers matter


def test_ur5_box_exact_curvature_needs_no_more_iterations(ur5_box):
    P, exact = ur5_box
    xs, us = examples.initial_guess(P, "cold")
    gn = ddp.solve(P, xs=xs, us=us, shooting="multiple", method="ilqr", hessians="gauss-newton")
    assert gn.status == "converged"
    assert exact.iterations <= gn.iterations
    assert exact.cost == pytest.approx(gn.cost, rel=1e-6)


@pytest.mark.skipif(not os.environ.get("SODDP_MIM_SOLVERS_PYTHON"),
                    reason="SODDP_MIM_SOLVERS_PYTHON (mim-solvers 0.3.0) is not set")
def test_ur5_box_reaches_csqps_optimum(ur5_box, tmp_path):
    """The same problem (Crocoddyl's cost of our trajectory equals ours) and the same optimum
    as mim-solvers' CSQP run as its example runs it: our cost at most CSQP's + 1e-6 relative."""
    _, sol = ur5_box
    cmd = os.environ["SODDP_MIM_SOLVERS_PYTHON"].split()
    script = str(ROOT / "problems/reference/mim_solvers_examples.py")
    np.savez(tmp_path / "ours.npz", xs=sol.xs, us=sol.us)
    theirs = json.loads(subprocess.run(cmd + [script, "ur5", "--cost-of",
                                              str(tmp_path / "ours.npz")],
                                       capture_output=True, text=True, check=True).stdout)
    assert theirs["cost"] == pytest.approx(sol.cost, rel=1e-12)
    csqp = json.loads(subprocess.run(cmd + [script, "ur5"], capture_output=True, text=True,
                                     check=True).stdout)
    assert csqp["converged"]
    assert sol.cost <= csqp["cost"] * (1 + 1e-6)
    assert abs(sol.cost - csqp["cost"]) <= 1e-6 * csqp["cost"]


# ------------------------------------------------------------------------- bad input
def test_bad_constraints_are_named():
    m = robots.load("ur3")
    tr = ddp.FrameTranslation(m, "tool0", np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="lower, upper: expected lower <= upper; entry 1"):
        ddp.Constraint(tr, [0, 1, 0], [1, 0, 1])
    with pytest.raises(ValueError, match="expected at least one finite bound"):
        ddp.Constraint(tr)
    with pytest.raises(ValueError, match="lower: expected a scalar or 3 bounds"):
        ddp.Constraint(tr, [0, 1])
    with pytest.raises(ValueError, match="residual: expected a built-in cost"):
        ddp.Constraint("tool0", 0, 1)
    with pytest.raises(ValueError, match="cannot be constrained yet"):
        ddp.Constraint(ddp.FrameVelocity(m, "tool0", np.zeros(6), 1.0), -1, 1)
    with pytest.raises(ValueError, match="did you mean"):
        ddp.Constraint(ddp.FrameTranslation(m, "tool", np.zeros(3), 1.0), -1, 1)
    x0 = np.concatenate([m.neutral(), np.zeros(m.nv)])
    c = ddp.Constraint(tr, -1, 1)
    args = (AnalyticalDynamics(m), x0, 4, 0.01, ddp.ControlRegularization(6, 1.0),
            ddp.StateRegularization(m, x0, 1.0))
    with pytest.raises(ValueError, match="constraints: expected a list of ddp.Constraint for "
                                         "every knot, or 4 such lists"):
        ddp.ShootingProblem(*args, constraints=[[c]] * 3)
    with pytest.raises(ValueError, match=r"constraints\[1\]: expected ddp.Constraint"):
        ddp.ShootingProblem(*args, constraints=[[c], ["x"], [], []])
    other = robots.load("double_pendulum")
    with pytest.raises(ValueError, match="constraints: FrameTranslation: sized for nq=2"):
        ddp.ShootingProblem(*args, constraints=[ddp.Constraint(
            ddp.FrameTranslation(other, other.pin_model.frames[-1].name, np.zeros(3), 1.0),
            -1, 1)])
    P = ddp.ShootingProblem(*args, constraints=[c])
    with pytest.raises(ValueError, match="multipliers: expected 12 finite values"):
        ddp.solve(P, multipliers=np.zeros(3))
    hyq = robots.load("hyq")
    for mu in (0.0, -0.5, np.inf):
        with pytest.raises(ValueError, match="mu: expected a friction coefficient > 0"):
            ddp.Constraint.friction_cone(hyq, "lf_foot", mu)
    with pytest.raises(ValueError, match="cone: a second-order cone constrains a contact "
                                         "force's residual of 3 entries"):
        ddp.Constraint(tr, cone=0.7)
    force = ddp.ContactForce(hyq, "lf_foot", np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="lower, upper: a cone constraint has no bounds"):
        ddp.Constraint(force, 0, 1, cone=0.7)
    with pytest.raises(ValueError, match="normal: expected a finite non-zero vector"):
        ddp.Constraint.friction_cone(hyq, "lf_foot", 0.7, normal=(0, 0, 0))
    with pytest.raises(ValueError, match="activation: a SecondOrderCone acts on a contact "
                                         "force's residual"):
        ddp.FrameTranslation(m, "tool0", np.zeros(3), 1.0, activation=ddp.SecondOrderCone(1))
    with pytest.raises(ValueError, match="did you mean"):
        ddp.Constraint.friction_cone(hyq, "lf_fot", 0.7)


def test_state_bounds_come_from_the_urdf():
    m = robots.load("ur5")
    c = ddp.Constraint.state_bounds(m)
    np.testing.assert_array_equal(c.lower[:6], m.pin_model.lowerPositionLimit)
    np.testing.assert_array_equal(c.upper[6:], m.pin_model.velocityLimit)
    hyq = ddp.Constraint.state_bounds(robots.load("hyq"))
    assert np.all(np.isinf(hyq.lower[:6])) and np.all(np.isinf(hyq.lower[18:24]))
    assert np.all(np.isfinite(hyq.upper[6:18]))


def test_solution_file_keeps_the_multipliers(tmp_path):
    P = _control_problem(-0.5, 0.5, np.full(6, 1.0))
    sol = ddp.solve(P)
    back = ddp.load_solution(sol.save(tmp_path / "s"))
    np.testing.assert_array_equal(back.multipliers, sol.multipliers)
    assert back.violation == sol.violation and back.penalty == sol.penalty


def test_cli_solves_ur5_box(tmp_path):
    out = subprocess.run([sys.executable, "-m", "problems.cli", "solve", "ur5-box", "--out",
                          str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "violation" in out.stdout and "status: converged" in out.stdout


def test_force_constraints_in_phases_are_the_compiled_terms():
    """A friction cone (its barrier's bounds taken as the constraint's) and a bound on a foot's
    normal force, declared on a phase of a HyQ stance: the compiled augmented-Lagrangian terms
    equal (mu / 2) dist(r + lam / mu, [lower, upper])^2 of the residuals A lam_c - b computed
    from the knots' contact forces (numpy, no code shared with the kernel's force term)."""
    import dynamics as dyn
    from problems import gaits

    m = robots.load("hyq")
    x0 = np.concatenate([gaits.HYQ_STANDING, np.zeros(m.nv)])
    feet = [dyn.Contact3D(f, gains=(0.0, 50.0)) for f in gaits.HYQ_FEET]
    cone = ddp.Constraint(ddp.FrictionCone(m, "rh_foot", 0.1, 1.0))
    push = ddp.Constraint(ddp.ContactForce(m, "lf_foot", np.zeros(3), 1.0),
                          lower=[-np.inf, -np.inf, 250.0], upper=np.inf)
    cost = ddp.ControlRegularization(12, 0.1)
    T = 6
    P = ddp.ShootingProblem(AnalyticalDynamics(m), x0, None, 0.01, None,
                            ddp.StateRegularization(m, x0, 1.0), actuation=np.eye(m.nv)[:, 6:],
                            phases=[ddp.Phase(2, feet, cost),
                                    ddp.Phase(4, feet, cost, constraints=[cone, push])])
    al = P.constraints
    assert [len(cs) for cs in al.running] == [0, 0, 2, 2, 2, 2] and al.size == 4 * (5 + 3)
    rng = np.random.default_rng(0)
    xs = np.tile(x0, (T + 1, 1))
    us = P.quasi_static(xs) + rng.normal(scale=5.0, size=(T, 12))
    r = al.residuals(xs, us)
    forces = P.contact_forces(xs, us)
    np.testing.assert_allclose(r[5:8], forces["lf_foot"][2], rtol=1e-12)  # knot 2: cone, push
    lam, mu = rng.normal(size=al.size), 30.0
    f = P.cost(xs, us)
    al.write(lam, mu)
    v = P.cost(xs, us)
    al.write(np.zeros(al.size), 0.0)
    mu_e = mu * al.penalty_scale  # forces take their share of the penalty
    assert np.all(mu_e == mu * ddp.Constraint.FORCE_PENALTY_SCALE)
    s = r + lam / mu_e
    dist = s - np.clip(s, al.lower, al.upper)
    assert v - f == pytest.approx(0.5 * np.sum(mu_e * dist ** 2), rel=1e-10)
    assert np.sum(dist ** 2) > 0  # some entry outside its bounds: the test sees the terms
    with pytest.raises(ValueError, match="FrictionCone has a QuadraticBarrier"):
        ddp.Constraint(ddp.FrictionCone(m, "rh_foot", 0.1, 1.0), lower=0)


# ------------------------------------------------------------------------- distances
@pytest.mark.parametrize("spec", ["ur3", (8, True, 1), (10, False, 3)], ids=spec_id)
def test_distance_against_casadi_and_pinocchio(spec):
    """The signed distance of a sphere on a frame (with an offset) to a sphere, a half-space,
    a column and capsules (the closest point between a capsule's ends and at an end, both
    met): the compiled value, gradient and exact and Gauss-Newton Hessians against its CasADi
    residual (AD), and the value against Pinocchio's frame placement."""
    from helpers import with_frame

    m = with_frame(build(spec))
    rng = np.random.default_rng(5)
    T, nu = 4, 3
    xs = np.array([np.concatenate([m.random_configuration(rng), rng.normal(size=m.nv)])
                   for _ in range(T)])
    us = rng.normal(size=(T, nu))
    offset = np.array([0.05, -0.02, 0.1])
    obstacles = [ddp.Sphere([0.3, -0.2, 0.4], 0.1),
                 ddp.HalfSpace([0.2, -0.3, 1.0], [0.0, 0.1, -0.2]),
                 ddp.Column([0.3, -0.2, 5.0], 0.1),
                 ddp.Capsule([-3.0, -0.2, 0.4], [3.0, 0.5, 0.1], 0.1),
                 ddp.Capsule([0.1, 0.2, 0.3], [0.15, 0.25, 0.3], 0.02)]
    regions = set()
    data, fid = m.pin_model.createData(), m.pin_model.getFrameId("tip")
    for obstacle in obstacles:
        c = ddp.costs.bind(ddp.Distance(m, "tip", 0.05, obstacle, 2.0, offset=offset),
                           m.nq, m.nv, nu, m)
        for hessians in ("exact", "gauss-newton"):
            a, b = c.calc_diff(xs, us, hessians), c.casadi_calc_diff(xs, us, hessians)
            for k in a._fields:
                assert rel_err(getattr(a, k), getattr(b, k)) < 1e-10, (obstacle, k)
        for t in range(T):
            pin.framesForwardKinematics(m.pin_model, data, xs[t, :m.nq])
            M = data.oMf[fid]
            p = M.translation + M.rotation @ offset
            if isinstance(obstacle, ddp.HalfSpace):
                d = obstacle.normal @ (p - obstacle.point) - 0.05
            elif isinstance(obstacle, ddp.Capsule):
                a, axis = obstacle.start, obstacle.end - obstacle.start
                s = (p - a) @ axis / (axis @ axis)
                regions.add("between" if 0 < s < 1 else "end")
                d = np.linalg.norm(p - a - np.clip(s, 0, 1) * axis) - 0.05 - obstacle.radius
            else:
                axes = 3 if isinstance(obstacle, ddp.Sphere) else 2
                d = np.linalg.norm((p - obstacle.center)[:axes]) - 0.15
            assert c.residual_values(xs[t:t + 1], us[t:t + 1])[0, 0] == pytest.approx(d,
                                                                                    abs=1e-12)
            assert c.calc(xs[t:t + 1], us[t:t + 1])[0] == pytest.approx(d * d, rel=1e-12)
    assert regions == {"between", "end"}
    with pytest.raises(ValueError, match="obstacle: expected a ddp.Sphere, ddp.HalfSpace, "
                                         "ddp.Column or ddp.Capsule"):
        ddp.Distance(m, "tip", 0.05, [0, 0, 0])
    with pytest.raises(ValueError, match="end: expected a point other than start"):
        ddp.Capsule([0, 0, 1], [0, 0, 1], 0.1)
    with pytest.raises(ValueError, match="radius: expected a non-negative"):
        ddp.Sphere([0, 0, 0], -1)


def test_a_reach_around_an_obstacle():
    """UR5 reaching (ur5-box's costs, no box) with tool0 (a 5 cm sphere) kept 1 cm clear of a
    sphere on its path: the unconstrained reach passes through it; the constrained one
    converges, clear of it at every knot, and its cost is higher."""
    m = robots.load("ur5")
    x0, target = np.zeros(12), examples.UR5_BOX_TARGET
    reg, grav = ddp.StateRegularization(m, x0, 1e-1), ddp.ControlGravity(m, 1e-4)
    run = ddp.Sum([reg, grav, ddp.FrameTranslation(m, "tool0", target, 4.0)])
    term = ddp.Sum([reg, grav, ddp.FrameTranslation(m, "tool0", target, 40.0)])

    def problem(constraints=None):
        return ddp.ShootingProblem(AnalyticalDynamics(m), x0, 40, 0.05, run, term,
                                   constraints=constraints, terminal_constraints=constraints)

    start = dict(xs=np.tile(x0, (41, 1)), us=np.zeros((40, 6)), shooting="multiple")
    free = ddp.solve(problem(), **start)
    data, fid = m.pin_model.createData(), m.pin_model.getFrameId("tool0")

    def tool(xs):
        out = []
        for x in xs:
            pin.framesForwardKinematics(m.pin_model, data, x[:m.nq])
            out.append(data.oMf[fid].translation.copy())
        return np.array(out)

    path = tool(free.xs)
    center = path[len(path) // 2]
    clear = ddp.Constraint(ddp.Distance(m, "tool0", 0.05, ddp.Sphere(center, 0.05)), lower=0.01)
    sol = ddp.solve(problem([clear]), max_iter=200, **start)
    assert sol.status == "converged", sol.message
    gap = np.linalg.norm(tool(sol.xs) - center, axis=1) - 0.1
    assert np.min(gap) >= 0.01 - 1e-6
    assert np.min(np.linalg.norm(path - center, axis=1) - 0.1) < 0  # it was in the way
    assert sol.cost > free.cost


def test_panda_reaches_around_its_obstacle():
    """panda-obstacle: converged, every constraint (the three spheres clear of the obstacle,
    the joint and velocity limits) met to 1e-6, the torques within their box; the hand's
    straight path (the problem without constraints) goes through the obstacle."""
    P = examples.get("panda-obstacle")
    xs, us = examples.initial_guess(P, "crocoddyl")
    sol = ddp.solve(P, xs=xs, us=us, shooting="multiple", max_iter=300)
    assert sol.status == "converged", sol.message
    assert sol.violation <= 1e-6
    assert np.all(np.abs(sol.us) <= P.u_max + 1e-12)
    r = P.constraints.residuals(sol.xs, sol.us)
    assert np.all(r >= P.constraints.lower - 1e-6) and np.all(r <= P.constraints.upper + 1e-6)
    free = ddp.ShootingProblem(P.dynamics, P.x0, P.T, P.dt, P.knot_costs.costs[0],
                               P.terminal_cost)
    straight = ddp.solve(free, xs=xs, us=us, shooting="multiple")
    hand = ddp.Distance(P.dynamics.model, "panda_hand_tcp", 0.04, P.info["obstacle"])
    hand = ddp.costs.bind(hand, P.nq, P.nv, P.nu, P.dynamics.model)
    assert hand.residual_values(straight.xs, np.zeros((P.T + 1, P.nu))).min() < -0.05


def test_the_quadrotor_flies_past_its_columns():
    """quadrotor-columns (aligator's example): converged with every constraint met to 1e-6 (the
    base above the floor, its 0.41 m sphere clear of both columns), the thrusts in [0, 5], and
    the target reached within 10 cm (6 cm: its terminal cost is soft); Gauss-Newton reaches the same optimum (it needs 36
    iterations here against DDP's 39: results/constrained.md)."""
    P = examples.get("quadrotor-columns")
    xs, us = examples.initial_guess(P, "quasi-static")
    sol = ddp.solve(P, xs=xs, us=us, shooting="multiple", max_iter=300)
    gn = ddp.solve(P, xs=xs, us=us, shooting="multiple", max_iter=300, method="ilqr",
                   hessians="gauss-newton")
    assert sol.status == gn.status == "converged", (sol.message, gn.message)
    assert sol.violation <= 1e-6
    assert sol.cost == pytest.approx(gn.cost, rel=1e-5)
    assert np.all((sol.us >= -1e-12) & (sol.us <= 5.0 + 1e-12))
    base = sol.xs[:, :3]
    for c in ([-0.45, 1.2], [0.4, 2.4]):
        assert np.min(np.linalg.norm(base[:, :2] - c, axis=1)) >= 0.22 + 0.408 - 1e-5
    assert np.min(base[:, 2]) >= -1e-6
    assert np.linalg.norm(base[-1] - [-0.1, 3.2, 1.0]) < 0.1  # 6 cm: a soft terminal cost


@pytest.fixture(scope="module")
def hyq_walks():
    """hyq-walk-constrained (second-order cones and joint limits), the same with the limits'
    barrier cost, with facets and the barrier, and hyq-walk, solved from Crocoddyl's start."""
    out = {}
    for name, options in (("hard", {}), ("second-order", dict(hard_limits=False)),
                          ("facets", dict(cone="facets", hard_limits=False))):
        P = examples.hyq_walk_constrained(**options)
        xs, us = examples.initial_guess(P, "crocoddyl")
        out[name] = P, ddp.solve(P, xs=xs, us=us, shooting="multiple", max_iter=100)
    soft = examples.get("hyq-walk")
    out["barrier"] = soft, ddp.solve(soft, xs=xs, us=us, shooting="multiple")
    return out


def test_hyq_walks_with_hard_friction_cones_and_joint_limits(hyq_walks):
    """hyq-walk-constrained: converged with every support foot's force inside its friction
    cone and every joint within its limits to 1e-6: the second-order cones and the limits
    (measured: 33 iterations, cost 1652.2156), the cones with the limits' barrier (19,
    1597.634: a knee 0.124 rad past its limit), or their 4 facets (15,
    1596.849); each at a cost at least the barrier walk's, the facets' below the cone's (they
    hold it), the hard limits' above; the default shares of the penalty take them there in
    under 40 iterations (mu 100 on newtons took 212)."""
    (P, sol), (_, cones), (_, facets), (_, ref) = (
        hyq_walks[k] for k in ("hard", "second-order", "facets", "barrier"))
    for s in (sol, cones, facets):
        assert s.status == "converged" and s.violation <= 1e-6, s.message
        assert s.iterations <= 40
    assert ref.cost - 1e-9 <= facets.cost <= cones.cost < sol.cost
    limits = P.constraints.running[0][-1]
    assert limits.name == "joint limits" and P.constraints.terminal == [limits]
    r = limits.residual.residual_values(sol.xs, np.zeros((P.T + 1, 0)))
    knots = np.r_[~P.impacts, True]  # the impacts' states are not constrained
    assert np.all(r[knots] >= limits.lower - 1e-6) and np.all(r[knots] <= limits.upper + 1e-6)
    r = limits.residual.residual_values(cones.xs, np.zeros((P.T + 1, 0)))
    assert np.max(np.maximum(limits.lower - r, r - limits.upper)) > 0.1  # the barrier let it
    # the feet's forces from the dynamics, against the cone written here
    held = [f[~np.isnan(f[:, 0]) & ~P.impacts]
            for f in P.contact_forces(sol.xs, sol.us).values()]
    worst = max(np.max(np.linalg.norm(f[:, :2], axis=1) - 0.7 * f[:, 2]) for f in held)
    assert -1.0 < worst <= 1e-6  # inside, some foot at its cone
    cone = ddp.Constraint(ddp.FrictionCone(P.dynamics.model, "lf_foot", 0.7, 1.0))
    assert cone.penalty_scale == ddp.Constraint.FORCE_PENALTY_SCALE
    with pytest.raises(ValueError, match="penalty_scale: expected a positive finite number"):
        ddp.Constraint(ddp.FrictionCone(P.dynamics.model, "lf_foot", 0.7, 1.0), penalty_scale=0)


class _Joint(ddp.ResidualCost):
    """Joint j's position (nq = nv = 6), written in CasADi."""

    def __init__(self, j):
        super().__init__(nq=6, nv=6, nu=0, weight=1.0, nr=1, name="Joint")
        self.j = j

    def residual(self, q, dq, v, u):
        return q[self.j] + dq[self.j]


class _Curved(ddp.ResidualCost):
    """A residual with curvature in q, v and u, written in CasADi."""

    def __init__(self):
        super().__init__(nq=6, nv=6, nu=6, weight=1.0, nr=2, name="Curved")

    def residual(self, q, dq, v, u):
        import casadi

        return casadi.vertcat(casadi.sin(q[0] + dq[0]) * casadi.cos(q[1] + dq[1]) + v[2] ** 2,
                              u[0] * v[1] + (q[2] + dq[2]) ** 2)


def test_a_constraint_on_a_casadi_residual_is_the_compiled_one():
    """UR3's third joint kept above -1.75 rad (its unconstrained reach goes to -1.87), written
    as a ResidualCost in CasADi and as the compiled state residual: the same solve (8
    iterations, cost to 1e-13, states to 1e-12) and the same multipliers (1e-10): the CasADi
    term takes the weights and shifted bounds that the compiled one does."""
    base = examples.get("ur3", T=30)
    m = base.dynamics.model
    lower = np.full(12, -np.inf)
    lower[3] = -1.75
    sols = []
    for c in (ddp.Constraint(ddp.StateRegularization(m, np.zeros(12), 1.0), lower=lower),
              ddp.Constraint(_Joint(3), lower=-1.75)):
        P = ddp.ShootingProblem(base.dynamics, base.x0, base.T, base.dt, base.running_cost,
                                base.terminal_cost, constraints=[c])
        sols.append(ddp.solve(P, shooting="multiple"))
    compiled, written = sols
    assert compiled.status == written.status == "converged"
    assert compiled.iterations == written.iterations
    assert written.violation <= 1e-6 and np.min(written.xs[:-1, 3]) > -1.75 - 1e-6
    assert abs(compiled.cost - written.cost) < 1e-13 * compiled.cost
    np.testing.assert_allclose(written.xs, compiled.xs, rtol=0, atol=1e-12)
    np.testing.assert_allclose(written.multipliers, compiled.multipliers.reshape(30, 12)[:, 3],
                               rtol=0, atol=1e-10)
    assert np.abs(written.multipliers).max() > 1.0


def test_a_casadi_constraints_term_has_its_residuals_curvature():
    """The augmented-Lagrangian term of a curved CasADi residual with both entries outside
    their shifted bounds: its gradient is the central difference of its value, its exact
    Hessian the central difference of its gradient (1e-6), and Gauss-Newton differs from it by
    the residual's curvature."""
    from ddp.constraints import _ResidualBarrier

    term = _ResidualBarrier(_Curved())
    term.parameters[:] = [[3.0, 2.0], [-np.inf, 0.5], [0.1, np.inf]]
    rng = np.random.default_rng(3)
    x, u = rng.normal(size=12), rng.normal(size=6)
    x[7] = 2.0  # v1: u0 v1 well above its bound

    def at(z):
        return (x + z[:12])[None], (u + z[12:])[None]

    d = term.calc_diff(*at(np.zeros(18)))
    g = np.r_[d.lx[0], d.lu[0]]
    H = np.block([[d.lxx[0], d.lxu[0]], [d.lxu[0].T, d.luu[0]]])
    eps, E = 1e-6, np.eye(18)
    fd_g = [(term.calc(*at(eps * e))[0] - term.calc(*at(-eps * e))[0]) / (2 * eps) for e in E]
    assert np.abs(g - fd_g).max() < 1e-6 * max(1.0, np.abs(g).max())
    grads = [term.calc_diff(*at(s * eps * e)) for e in E for s in (1, -1)]
    fd_H = np.array([np.r_[a.lx[0], a.lu[0]] - np.r_[b.lx[0], b.lu[0]]
                     for a, b in zip(grads[::2], grads[1::2])]).T / (2 * eps)
    assert np.abs(H - fd_H).max() < 1e-6 * np.abs(H).max()
    gn = term.calc_diff(*at(np.zeros(18)), hessians="gauss-newton")
    assert np.abs(gn.lxx[0] - d.lxx[0]).max() > 1e-3
