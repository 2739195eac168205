"""Receding-horizon control (ddp.MPC): a tick from an exact solution takes no step, one
derivative evaluation per iteration, the shifted warm start, the time budget, constraints'
multipliers carried over, bad input."""

import numpy as np
import pytest

import ddp
from problems import examples
from problems.bench.mpc import tick_allocations


@pytest.fixture(scope="module")
def ur3():
    P = examples.get("ur3", T=30)
    sol = ddp.solve(P, shooting="multiple", tol=1e-9)
    assert sol.status == "converged"
    return P, sol


def test_a_tick_from_an_exact_solution_takes_no_step(ur3):
    P, sol = ur3
    mpc = ddp.MPC(P, iterations=3, xs=sol.xs, us=sol.us, tol=1e-6)
    u = mpc.step(sol.xs[0])
    assert mpc.solution.status == "converged" and mpc.solution.iterations == 0
    np.testing.assert_array_equal(u, sol.us[0])


def test_one_derivative_evaluation_per_iteration(ur3, monkeypatch):
    """A one-iteration tick differentiates once (the final trajectory's gradient is the next
    tick's first row); a plain solve with max_iter=1 differentiates twice."""
    P, sol = ur3
    calls = []
    original = type(P).calc_diff

    def counted(self, *args, **kwargs):
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(P), "calc_diff", counted)
    mpc = ddp.MPC(P, iterations=1, xs=sol.xs, us=sol.us)
    x0 = P.x0.copy()
    mpc.step(sol.xs[1])  # not the solution's start: one iteration with a step
    assert mpc.solution.iterations == 1 and len(calls) == 1
    calls.clear()
    ddp.solve(P, xs=sol.xs, us=sol.us, shooting="multiple", max_iter=1)
    assert len(calls) == 2
    P.x0 = x0


def test_the_warm_start_is_the_last_solution_shifted(ur3, monkeypatch):
    P, sol = ur3
    x0 = P.x0.copy()
    mpc = ddp.MPC(P, iterations=1, xs=sol.xs, us=sol.us)
    mpc.step(sol.xs[0])
    first = mpc.solution
    seen = {}
    original = ddp.mpc.solve

    def spy(problem, xs, us, *args, **kwargs):
        seen["xs"], seen["us"] = xs, us
        return original(problem, xs, us, *args, **kwargs)

    monkeypatch.setattr(ddp.mpc, "solve", spy)
    mpc.step(first.xs[1])
    np.testing.assert_array_equal(seen["xs"][:-1], first.xs[1:])
    np.testing.assert_array_equal(seen["xs"][-1], first.xs[-1])
    np.testing.assert_array_equal(seen["us"][:-1], first.us[1:])
    np.testing.assert_array_equal(P.x0, first.xs[1])
    assert mpc.ticks == 2
    # the policy about the solution: its states and controls, the backward pass's gains, no
    # feedforward (the tick's step is in us)
    p, s = mpc.policy, mpc.solution
    assert p.xs is s.xs and p.us is s.us and p.K is s.policy.K and not p.k.any()
    np.testing.assert_array_equal(p.control(0, np.zeros(P.ndx)), s.us[0])
    P.x0 = x0


def test_a_closed_loop_reaches_the_target(ur3):
    """Each tick's control applied to the problem's own step for 60 ticks (the horizon
    receding past the open-loop one): tool0 ends within a quarter of the distance it started
    from the target (18 cm -> 2.4 cm measured; a loop that applied stale or wrong controls
    drifts away)."""
    import pinocchio as pin

    P, sol = ur3
    x0 = P.x0.copy()
    model = P.dynamics.model.pin_model
    data, tool = model.createData(), model.getFrameId("tool0")
    target = P.info["target"].translation

    def distance(x):
        pin.framesForwardKinematics(model, data, x[:P.nq])
        return float(np.linalg.norm(data.oMf[tool].translation - target))

    mpc = ddp.MPC(P, iterations=1, xs=sol.xs, us=sol.us)
    x = sol.xs[0].copy()
    start = distance(x)
    for _ in range(60):
        x = P.evaluation.steps(x[None], mpc.step(x)[None])[0]
    assert start > 0.15 and distance(x) < 0.25 * start
    P.x0 = x0


def test_a_time_budget_stops_the_tick(ur3):
    P, sol = ur3
    x0 = P.x0.copy()
    mpc = ddp.MPC(P, iterations=5, budget_ms=1e-6, xs=sol.xs, us=sol.us)
    mpc.step(sol.xs[2])
    assert mpc.solution.status == "stopped-by-callback" and mpc.solution.iterations == 1
    P.x0 = x0


def test_constraints_multipliers_carry_over():
    P = examples.get("ur5-box")
    mpc = ddp.MPC(P, iterations=30, xs=np.tile(P.x0, (P.T + 1, 1)), us=np.zeros((P.T, 6)))
    mpc.step(P.x0)
    assert mpc.solution.status == "converged"
    lam = mpc.solution.multipliers
    shifted = P.constraints.shifted(lam)
    running, terminal = P.constraints.split(shifted)
    before, before_T = P.constraints.split(lam)
    assert len(running[0]) == 0  # knot 0 has no constraint
    np.testing.assert_array_equal(running[1][0], before[2][0])
    np.testing.assert_array_equal(running[-1][0], before[-1][0])
    np.testing.assert_array_equal(terminal[0], before_T[0])
    mpc.step(mpc.solution.xs[1])
    assert mpc.solution.violation < 1e-3


def test_bad_mpc_input_is_named(ur3):
    P, _ = ur3
    with pytest.raises(ValueError, match="iterations: expected a positive integer"):
        ddp.MPC(P, iterations=0)
    with pytest.raises(ValueError, match="budget_ms: expected a positive number"):
        ddp.MPC(P, budget_ms=-1)
    with pytest.raises(ValueError, match="x: expected shape"):
        ddp.MPC(P).step(np.zeros(3))
    with pytest.raises(ValueError, match="methd: not a solver setting"):
        ddp.MPC(P, methd="ddp")


# ------------------------------------------------------------------------- reference setters
def _reach(target, T=20):
    from dynamics import AnalyticalDynamics, robots

    m = robots.load("ur3")
    x0 = np.concatenate([examples.UR3_Q0, np.zeros(6)])
    reach = ddp.FrameTranslation(m, "tool0", target, 1.0)
    end = ddp.FrameTranslation(m, "tool0", target, 1e3)
    ctrl = ddp.ControlRegularization(6, 1e-3)
    run = ddp.Sum([reach, ddp.StateRegularization(m, x0, 1e-1), ctrl])
    P = ddp.ShootingProblem(AnalyticalDynamics(m), x0, T, 0.01, run, ddp.Sum([end]))
    return P, reach, end, ctrl


def test_changing_a_reference_takes_effect():
    """Assigning a target, a control reference and a weight to the user's cost objects after
    the problem is built: its cost, its CasADi reference and its optimum become those of a
    problem built with the new values (to rounding)."""
    P, reach, end, ctrl = _reach([0.2, 0.25, 0.25])
    first = ddp.solve(P)
    new, u_ref = np.array([0.25, 0.2, 0.3]), np.full(6, 0.1)
    reach.position, end.position, ctrl.u_ref, ctrl.weight = new, new, u_ref, 2e-3
    Q, reach2, end2, ctrl2 = _reach(new)
    ctrl2.u_ref, ctrl2.weight = u_ref, 2e-3  # before Q's first evaluation: its own program
    assert P.cost(first.xs, first.us) == pytest.approx(Q.cost(first.xs, first.us), rel=1e-14)
    bound = P.running_cost.costs[0]  # the problem's copy, its CasADi residual rebuilt
    np.testing.assert_allclose(bound.casadi_calc(first.xs[:4], first.us[:4]),
                               Q.running_cost.costs[0].casadi_calc(first.xs[:4], first.us[:4]))
    a, b = ddp.solve(P), ddp.solve(Q)
    assert a.cost == pytest.approx(b.cost, rel=1e-12) and a.iterations == b.iterations
    assert abs(a.cost - first.cost) > 1e-3


def test_a_constraints_reference_reaches_its_residuals():
    P = examples.get("ur5-box", T=10)
    inside = P.constraints.running[1][0]
    xs = np.tile(P.x0, (P.T + 1, 1))
    before = P.constraints.residuals(xs, np.zeros((P.T, 6)))
    inside.residual.position = [0.0, 0.0, -1.0]  # the box 1 m lower: tool0 is above it
    after = P.constraints.residuals(xs, np.zeros((P.T, 6)))
    np.testing.assert_allclose(after - before, np.tile([0.0, 0.0, 1.0], P.T), atol=1e-14)
    # and the compiled terms: a multiplier-free penalty on the shifted box
    P.constraints.write(np.zeros(P.constraints.size), 1.0)
    v = P.cost(xs, np.zeros((P.T, 6)))
    P.constraints.write(np.zeros(P.constraints.size), 0.0)
    f = P.cost(xs, np.zeros((P.T, 6)))
    s = after - np.clip(after, P.constraints.lower, P.constraints.upper)
    assert np.max(s) > 0.5
    assert v - f == pytest.approx(0.5 * np.sum(s ** 2), rel=1e-12, abs=1e-15)


def test_an_attribute_the_program_does_not_read_raises():
    P, reach, _, _ = _reach([0.2, 0.25, 0.25])
    with pytest.raises(AttributeError, match="frame_name is fixed once the cost is built .*"
                                             "settable: weight, position"):
        reach.frame_name = "wrist_3_link"
    with pytest.raises(ValueError, match="position: expected 3 finite values"):
        reach.position = [0.0, np.nan, 0.0]


# ------------------------------------------------------------------------- the MuJoCo plant
@pytest.mark.parametrize("name", ["ur5", "ur3"])
def test_the_mujoco_plant_is_the_same_robot(name):
    """MuJoCo's forward dynamics of the MJCF written from the model (MuJoCo's own algorithms,
    no code shared with ours) equal our ABA, rotor inertias included."""
    from dynamics import aba, robots
    from problems.plant import Plant

    m = robots.load(name).with_armature(np.linspace(0.1, 0.6, 6))
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, v, tau = m.random_configuration(rng), rng.normal(size=6), 10 * rng.normal(size=6)
        plant = Plant(m, np.concatenate([q, v]))
        plant.data.ctrl[:] = tau
        plant.mujoco.mj_forward(plant.mj, plant.data)
        np.testing.assert_allclose(plant.data.qacc, aba(m, q, v, tau), rtol=1e-9, atol=1e-9)


def test_a_floating_base_plant_is_the_same_robot():
    """Solo-12 with its free flyer: the plant's state reads back in Pinocchio's convention
    what was set (MuJoCo keeps the quaternion w first and the linear velocity in the world's
    axes); MuJoCo's forward dynamics equal our ABA (its free joint's linear acceleration is
    d/dt (R v) = R (a + w x v) in the world's axes); each foot's sphere sits on its frame, and
    the robot standing with the spheres on the floor has the four contacts."""
    import pinocchio as pin

    from dynamics import aba, robots
    from problems.plant import FOOT_RADIUS, Plant

    m = robots.load("solo12")
    feet = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
    rng = np.random.default_rng(6)
    data = m.pin_model.createData()
    for _ in range(3):
        q, v, tau = m.random_configuration(rng), rng.normal(size=m.nv), rng.normal(size=12)
        q[2] = 2.0  # in the air
        plant = Plant(m, np.concatenate([q, v]), feet=feet)
        np.testing.assert_allclose(plant.state(), np.concatenate([q, v]), rtol=0, atol=1e-14)
        plant.data.ctrl[:] = tau
        plant.mujoco.mj_forward(plant.mj, plant.data)
        a = aba(m, q, v, np.r_[np.zeros(6), tau])
        R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
        want = np.r_[R @ (a[:3] + np.cross(v[3:6], v[:3])), a[3:]]
        np.testing.assert_allclose(plant.data.qacc, want, rtol=1e-9, atol=1e-9)
        pin.framesForwardKinematics(m.pin_model, data, q)
        for f in feet:
            np.testing.assert_allclose(plant.data.geom(f).xpos,
                                       data.oMf[m.pin_model.getFrameId(f)].translation,
                                       atol=1e-12)
    q = np.array(m.reference_configurations["standing"], dtype=float)
    pin.framesForwardKinematics(m.pin_model, data, q)
    q[2] += FOOT_RADIUS - min(data.oMf[m.pin_model.getFrameId(f)].translation[2] for f in feet)
    plant = Plant(m, np.concatenate([q - np.r_[0, 0, 1e-4, np.zeros(16)], np.zeros(m.nv)]),
                  feet=feet)
    assert plant.data.ncon == 4


def test_a_short_closed_loop_in_mujoco(tmp_path):
    """One simulated second of ur5-reach-mpc through the CLI (the push at 0.5 s): the push
    moves tool0 by centimetres and the loop brings it back (1.4 cm at the end, measured); the
    summary and the trajectory files are written."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "problems.cli", "mpc", "ur5-reach-mpc",
                          "--seconds", "1", "--out", str(tmp_path)], capture_output=True,
                         text=True, cwd=root, check=False)
    assert out.returncode == 0, out.stderr
    rows = (tmp_path / "mpc_ur5-reach-mpc_ddp.csv").read_text().splitlines()
    header, row = rows[0].split(","), rows[1].split(",")
    summary = dict(zip(header, row))
    assert int(summary["ticks"]) == 50
    traj = np.loadtxt(tmp_path / "mpc_ur5-reach-mpc_ddp_trajectory.csv", delimiter=",",
                      skiprows=1)
    err = np.linalg.norm(traj[:, 1:4] - traj[:, 4:7], axis=1)
    assert err[0] < 1e-9 and 0.03 < np.max(err) < 0.1 and err[-1] < 0.4 * np.max(err)
    assert (tmp_path / "mpc_ur5-reach-mpc_ddp.png").is_file()


def test_solo12_trots_in_mujoco():
    """Four simulated seconds of solo12-trot-mpc (a floating base; a 4 N push at 2 s): the
    robot does not fall, trots forward within 2 cm of a stride per cycle, and a tick stays
    within its 20 ms on this 2-core host (median 3-6 ms measured).  It fell at 0.8 s with the
    wrapped knots warm-started by repeating the last knot, at 2.8 s with a tick spent on each
    impact, and at 3.7 s (4 cm forward) with Crocoddyl's landings, which aim above the
    ground."""
    from problems import mpc_scenarios

    row = mpc_scenarios.run_solo12_trot("ddp", 1, 4.0, write=False)
    assert row["fell_at_s"] == "" and row["ticks"] == 200
    assert abs(row["distance_m"] - row["commanded_m"]) < 0.02 < row["distance_m"]
    assert row["max_lateral_m"] < 0.03 and row["median_tick_ms"] < 20


def test_the_shifted_solutions_gaps_are_those_computed(ur3):
    """A tick takes the shifted solution's defects as zero but at its first and last knots
    (two differences and one step): they equal problem.gaps of the whole trajectory, after
    ticks that ended with a full step or with none."""
    from ddp.mpc import _shifted_gaps

    P, sol = ur3
    x0 = P.x0.copy()
    mpc = ddp.MPC(P, iterations=1, xs=sol.xs, us=sol.us)
    x = sol.xs[0] + 1e-3
    for _ in range(4):
        mpc.step(x)
        s = mpc.solution
        x = s.xs[1] + 1e-3
        P.x0 = P._check_x(x, "x")
        xs = np.concatenate([s.xs[1:], s.xs[-1:]])
        us = np.concatenate([s.us[1:], s.us[-1:]])
        known = _shifted_gaps(P, s, xs, us)
        assert known is not None
        np.testing.assert_allclose(known, P.gaps(xs, us), atol=1e-12)
        assert np.abs(known[0]).max() > 1e-4 and np.abs(known[-1]).max() > 0
    P.x0 = x0


@pytest.mark.skipif(not __import__("os").environ.get("SODDP_CROCODDYL_PYTHON"),
                    reason="SODDP_CROCODDYL_PYTHON (Crocoddyl 3.2.1) is not set")
def test_crocoddyl_drives_the_same_plant_to_the_same_tracking():
    """One simulated second of ur5-reach-mpc with Crocoddyl's FDDP as the controller (its own
    environment, the same MJCF, targets, ticks, push and policy) tracks as ours does: the same
    problem and the same loop (measured: mean error 9.65 mm for both over 5 s)."""
    from problems import mpc_scenarios

    theirs = mpc_scenarios.run_crocoddyl_ur5_reach(1, 1.0)
    ours = mpc_scenarios.run_ur5_reach("ilqr", 1, 1.0, log=lambda *a: None, write=False)
    assert theirs is not None and theirs["ticks"] == ours["ticks"] == 50
    assert abs(theirs["mean_error_mm"] - ours["mean_error_mm"]) < 0.02 * ours["mean_error_mm"]
    assert abs(theirs["max_error_mm"] - ours["max_error_mm"]) < 0.02 * ours["max_error_mm"]


@pytest.mark.skipif(not __import__("os").environ.get("SODDP_CROCODDYL_PYTHON"),
                    reason="SODDP_CROCODDYL_PYTHON (Crocoddyl 3.2.1) is not set")
def test_crocoddyl_trots_solo12_on_the_same_plant():
    """Two simulated seconds of solo12-trot-mpc with Crocoddyl's FDDP as the controller (its
    own environment, the same MJCF, trot, stand, cycling, strides and policy) trot as ours
    do: no fall, the same distance within 5 mm (measured over 5 s: 0.389 m for FDDP, 0.385
    and 0.389 for ours)."""
    from problems import mpc_scenarios

    theirs = mpc_scenarios.run_crocoddyl_solo12_trot(1, 2.0, push=0.0)
    ours = mpc_scenarios.run_solo12_trot("ilqr", 1, 2.0, write=False, push=0.0)
    assert theirs is not None and theirs["ticks"] == ours["ticks"] == 100
    assert theirs["fell_at_s"] == ours["fell_at_s"] == ""
    assert abs(theirs["distance_m"] - ours["distance_m"]) < 0.005


def test_a_tick_allocates_about_ten_times_per_knot():
    """The compiled allocations of a one-iteration tick grow by about 10 per knot (one buffer
    per sweep of the derivative call, and per ABA of each rollout), measured as the slope
    between two horizons.  A ratchet until the callers hand the work arrays down (#83's zero);
    the sweeps' one-array-at-a-time work arrays made it about 50."""
    counts = {}
    for T in (20, 40):
        P = examples.get("ur3", T=T)
        sol = ddp.solve(P, shooting="multiple", tol=1e-9)
        counts[T] = tick_allocations(P, "ilqr", 1, sol)[0]
    slope = (counts[40] - counts[20]) / 20
    assert 5 <= slope <= 12, counts
