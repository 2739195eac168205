"""The example problems: registry, shapes, and the floating-base tasks' physics."""

import numpy as np
import pytest

import ddp
import problems


@pytest.mark.parametrize("name", list(problems.PROBLEMS))
def test_every_problem_builds_and_rolls_out(name):
    P = problems.get(name)
    assert isinstance(P, ddp.ShootingProblem) and P.info["task"]
    # Legs folding under zero torque make a contact's KKT system singular (NaN states): a
    # standing robot starts from the torques that hold its start state.  So does the Panda:
    # falling under zero torque, its light wrist outruns the step of 20 ms (states ~1e163).
    us = (P.quasi_static() if name in problems.examples.CONTACT_PROBLEMS + ("panda-obstacle",)
          else np.zeros((P.T, P.nu)))
    xs = P.rollout(us)
    assert xs.shape == (P.T + 1, P.nx) and np.all(np.isfinite(xs))
    assert np.isfinite(P.cost(xs, us))


def test_registry_errors():
    with pytest.raises(ValueError, match="problem: expected one of pendulum, double_pendulum"):
        problems.get("cartpole")
    with pytest.raises(ValueError, match="backend: expected one of analytical, casadi"):
        problems.get("ur3", backend="pinocchio")
    with pytest.raises(ValueError, match=r"target: expected a pinocchio.SE3 or a position \(3,\)"):
        problems.get("ur3", target=[0.2, 0.25])
    with pytest.raises(ValueError, match="horizon: not an option of the ur3 problem "
                                         r"\(options: backend, T, dt, target\)"):
        problems.get("ur3", horizon=10)


def test_a_ur3_target_position_keeps_the_start_orientation():
    default = problems.get("ur3").info["target"]
    moved = problems.get("ur3", target=[0.1, 0.2, 0.3]).info["target"]
    np.testing.assert_array_equal(moved.rotation, default.rotation)
    np.testing.assert_array_equal(moved.translation, [0.1, 0.2, 0.3])
    np.testing.assert_array_equal(default.translation, problems.examples.UR3_TARGET_POSITION)


def test_floating_base_is_unactuated_and_floats_without_gravity():
    P = problems.get("hyq")
    assert P.nu == 12 and np.all(P.integrator.B[:6] == 0)
    xs = P.rollout(np.zeros((P.T, P.nu)))  # no torque, no gravity: stays at rest
    np.testing.assert_allclose(xs[-1], P.x0, atol=1e-12)
    Pg = problems.get("hyq", gravity=True)
    xg = Pg.rollout(np.zeros((Pg.T, Pg.nu)))
    assert xg[-1, 2] < P.x0[2] - 4.0  # free fall: about g t^2 / 2 = 4.9 m in 1 s


def test_pendulum_swing_up_is_solved_by_both_methods():
    P = problems.get("pendulum")
    d, i = ddp.solve(P, method="ddp"), ddp.solve(P, method="ilqr")
    assert d.converged and i.converged
    assert d.cost == pytest.approx(i.cost, rel=1e-8)
    assert abs(d.xs[-1, 0] - np.pi) < 0.05  # upright at the end
    assert d.iterations < i.iterations


def test_the_gaits_start_where_they_reach_their_best_optimum():
    """The gaits default to Crocoddyl's examples' start (x0 at every knot, the controls holding
    it) with multiple shooting, in ``soddp solve`` and in study tasks; the other problems to
    the quasi-static rollout with single shooting.  From its default hyq-jump reaches the
    optimum of Crocoddyl's FDDP from that start (4657.640514201262, measured with Crocoddyl
    3.2.1), standing; from the quasi-static rollout with single shooting it stops crouched at
    a cost above 8e4."""
    from problems.examples import default_start
    from problems.studies import run_one
    from problems.tasks import task

    assert default_start("hyq-jump") == ("crocoddyl", "multiple")
    assert default_start("ur3") == ("quasi-static", "single")
    t = task(part="backends", problem="talos-walk", method="ddp")
    assert (t["start"], t["shooting"]) == ("crocoddyl", "multiple")
    t = task(part="backends", problem="ur3", method="ddp")
    assert (t["start"], t["shooting"]) == ("quasi-static", "single")
    _, sol, _ = run_one("hyq-jump", verbose=False)
    assert sol.converged and abs(sol.cost - 4657.640514201262) < 1e-6 * 4657.64
    _, sol, _ = run_one("hyq-jump", verbose=False, start="quasi-static",
                        settings=dict(shooting="single"), max_iter=30)
    assert sol.cost > 8e4
