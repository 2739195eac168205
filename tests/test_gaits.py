"""The gait builder (problems.gaits): phase sequences in Crocoddyl's quadrupedal_gaits
formulation, the jump, and the bad input each gait option names."""

import numpy as np
import pytest

import ddp
import problems
from dynamics import robots
from problems.gaits import BIPED_WALKING, GAITS, BipedGaits, QuadrupedGaits, hyq_gait


def _phases(P):
    return [(p.name, p.knots, p.impact, tuple(c.frame for c in p.contacts)) for p in P.phases]


@pytest.mark.parametrize("gait", list(GAITS))
def test_every_gait_is_a_cycle_of_supports_swings_and_landings(gait):
    P = hyq_gait(gait)
    p = GAITS[gait]
    phases = _phases(P)
    assert phases[0] == ("support", p["support_knots"], False,
                         ("lf_foot", "rf_foot", "lh_foot", "rh_foot"))
    swings = [x for x in phases if x[0].startswith("swing")]
    lands = [x for x in phases if x[2]]
    assert len(swings) == len(lands) >= 2 and all(x[1] == p["step_knots"] for x in swings)
    # the feet that land are the ones that swung, and land on one impact knot
    for s, l in zip(swings, lands):
        swung = {"lf_foot", "rf_foot", "lh_foot", "rh_foot"} - set(s[3])
        assert set(l[3]) == swung and l[1] == 1
    assert P.T == sum(x[1] for x in phases) and P.dt == p["dt"]


def test_landings_aim_where_crocoddyl_aims_them_or_at_the_ground():
    """A trot's landing targets: Crocoddyl's are the last swing knot's (8 mm above the ground
    for its 25 knots of 0.1 m high swings: rise 0.1 (1 - 11.5 / 12.5)); with ground_landing
    the feet's new places on the ground, a step on."""
    m = robots.load("hyq")
    gaits = QuadrupedGaits(m)
    ground = {f: z for f, z in zip(("lf_foot", "rf_foot", "lh_foot", "rh_foot"),
                                   [p[2] for p in gaits._start(None)[1]])}
    for landing, above in ((False, 0.1 * (1 - 11.5 / 12.5)), (True, 0.0)):
        P = gaits.problem("trotting", first_step=False, ground_landing=landing)
        targets = [(c.frame_name, c.position) for p in P.schedule if p.impact
                   for c in p.cost.costs if isinstance(c, ddp.FrameTranslation)]
        assert len(targets) == 4
        for frame, position in targets:
            assert position[2] - ground[frame] == pytest.approx(above, abs=1e-12)


def test_the_jump_flies_and_lands_where_it_was_told():
    """Crocoddyl's createJumpingProblem: take-off on four feet, 2 x flying_knots without
    contacts, one landing impact, the rest on the ground; DDP and iLQR reach one optimum, and
    the feet land jump_length from where they started (1e7-weighted targets)."""
    P = problems.get("hyq-jump")
    assert [(n, k, i, len(c)) for n, k, i, c in _phases(P)] == [
        ("take-off", 10, False, 4), ("flying up", 20, False, 0), ("flying down", 20, False, 0),
        ("landing", 1, True, 4), ("landed", 9, False, 4)]
    sols = {m: ddp.solve(P, method=m, max_iter=200) for m in ("ddp", "ilqr")}
    assert all(s.status == "converged" for s in sols.values())
    assert sols["ddp"].cost == pytest.approx(sols["ilqr"].cost, rel=1e-8)
    assert sols["ddp"].iterations <= sols["ilqr"].iterations
    m = robots.load("hyq")
    import pinocchio as pin

    pm, data = m.pin_model, m.pin_model.createData()
    feet = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")

    def feet_at(q):
        pin.framesForwardKinematics(pm, data, q)
        return np.array([data.oMf[pm.getFrameId(f)].translation for f in feet])

    start, end = feet_at(P.x0[:m.nq]), feet_at(sols["ddp"].xs[-1][:m.nq])
    np.testing.assert_allclose(end[:, :2] - start[:, :2], [[0.0, 0.3]] * 4, atol=5e-3)
    # in the air (mid-flight): no foot below the ground, the base higher than at the start
    mid = sols["ddp"].xs[30]
    assert np.all(feet_at(mid[:m.nq])[:, 2] > 0.0) and mid[2] > P.x0[2]


def test_bad_gait_options_are_named():
    hyq = robots.load("hyq")
    gaits = QuadrupedGaits(hyq)
    with pytest.raises(ValueError, match="step_knots: expected a positive number of knots; "
                                         "got 0"):
        gaits.problem("walking", step_knots=0)
    with pytest.raises(ValueError, match="ground_knots: expected a positive number of knots"):
        gaits.jumping(ground_knots=0)
    with pytest.raises(ValueError, match=r"jump_length: expected a finite \(x, y, z\)"):
        gaits.jumping(jump_length=(0.3, 0.0))
    with pytest.raises(ValueError, match="gait: expected one of walking, trotting"):
        gaits.problem("galloping")
    with pytest.raises(ValueError, match="mu: expected a positive friction coefficient; got 0"):
        QuadrupedGaits(hyq, mu=0)
    with pytest.raises(ValueError, match="mu: expected a positive friction coefficient"):
        ddp.FrictionCone(hyq, "lf_foot", -0.5, 1.0)
    with pytest.raises(ValueError, match=r"feet: no frame 'lf_fot' in hyq \(did you mean "
                                         r"'lf_foot'"):
        QuadrupedGaits(hyq, feet=("lf_fot", "rf_foot", "lh_foot", "rh_foot"))
    with pytest.raises(ValueError, match=r"lower bound above upper bound at entry 1 "
                                         r"\(2.0 > 1.0\)"):
        ddp.QuadraticBarrier([0.0, 2.0], [1.0, 1.0])


def test_the_biped_walks_two_steps_on_flat_feet():
    """Crocoddyl's createWalkingProblem on Talos's legs: double support, the right foot's half
    step and its landing impact, double support, the left foot's step (its landing's costs are
    the terminal cost); flat-foot contacts with wrench cones.  DDP and iLQR reach one optimum
    (Crocoddyl 3.2.1's FDDP reaches it too: results/solver_speed.md), and each foot lands where
    it was told: half a step, then a whole one."""
    P = problems.get("talos-walk")
    feet = ("right_sole_link", "left_sole_link")
    p = BIPED_WALKING
    assert [(n, k, i, c) for n, k, i, c in _phases(P)] == [
        ("double support", p["support_knots"], False, feet),
        ("swing right_sole_link", p["step_knots"], False, feet[1:]),
        ("land right_sole_link", 1, True, feet[:1]),
        ("double support", p["support_knots"], False, feet),
        ("swing left_sole_link", p["step_knots"], False, feet[:1])]
    assert all(c.size == 6 for ph in P.phases for c in ph.contacts)
    sols = {m: ddp.solve(P, method=m, max_iter=100) for m in ("ddp", "ilqr")}
    assert all(s.status == "converged" for s in sols.values())
    assert sols["ddp"].cost == pytest.approx(sols["ilqr"].cost, rel=1e-8)
    m = robots.load("talos_legs")
    import pinocchio as pin

    pm, data = m.pin_model, m.pin_model.createData()

    def feet_at(q):
        pin.framesForwardKinematics(pm, data, q)
        return np.array([data.oMf[pm.getFrameId(f)].translation for f in feet])

    start, end = feet_at(P.x0[:m.nq]), feet_at(sols["ddp"].xs[-1][:m.nq])
    np.testing.assert_allclose(end[:, :2] - start[:, :2], [[0.3, 0], [0.6, 0]], atol=2e-3)
    # Crocoddyl's last swing target, where the foot lands, is 1.3 cm up: 0.1 (1 - 6.5 / 7.5)
    assert np.all((end[:, 2] - start[:, 2] > 0.005) & (end[:, 2] - start[:, 2] < 0.015))
    # mid-swing of the right foot: it is in the air, the left one on the ground
    mid = feet_at(sols["ddp"].xs[p["support_knots"] + p["step_knots"] // 2][:m.nq])
    assert mid[0, 2] > start[0, 2] + 0.02 and abs(mid[1, 2] - start[1, 2]) < 1e-3


def test_bad_biped_options_are_named():
    legs = robots.load("talos_legs")
    with pytest.raises(ValueError, match=r"feet: expected the 2 feet \(right, left\)"):
        BipedGaits(legs, feet=("right_sole_link",))
    with pytest.raises(ValueError, match="model: a biped gait needs a floating base"):
        BipedGaits(robots.load("ur3"))
    with pytest.raises(ValueError, match="step_knots: expected a positive number of knots"):
        BipedGaits(legs).walking(step_knots=0)
    with pytest.raises(ValueError, match=r"size: expected the foot's \(length, width\)"):
        ddp.WrenchCone(legs, "left_sole_link", 0.7, (0.1, -0.05), 10.0)
    with pytest.raises(ValueError, match="mu: expected a positive friction coefficient; got -1"):
        BipedGaits(legs, mu=-1)
    with pytest.raises(ValueError, match=r"size: expected the foot's"):
        BipedGaits(legs, foot_size=(0.0, 0.05))
    P = BipedGaits(legs).walking()
    point = ddp.Phase(2, ["left_sole_link"], ddp.Sum([ddp.WrenchCone(
        legs, "left_sole_link", 0.7, (0.1, 0.05), 10.0)]))
    with pytest.raises(ValueError, match="acts on a wrench.*hold the frame with a Contact6D"):
        ddp.ShootingProblem(P.dynamics, P.x0, None, 0.03, None, P.terminal_cost,
                            actuation=np.eye(18)[:, 6:], phases=[point])


def test_hard_constraints_reach_every_gait_and_the_jump():
    """With hard cones and limits, every knot but the impacts holds its support feet's cones
    and the joint limits, the terminal knot the limits, and no barrier cost is left (the jump
    too, whose contact knots once lost their cones: costs dropped, no constraint added)."""
    m = robots.load("hyq")
    gaits = QuadrupedGaits(m, hard_cones="second-order", hard_limits=True)
    for P in (gaits.problem("trotting"), gaits.jumping(ground_knots=3, flying_knots=4)):
        for t, p in enumerate(p for p in P.phases for _ in range(p.knots)):
            names = [c.name for c in P.constraints.at(t)]
            if p.impact:
                assert names == []
            else:
                assert names == [f"friction cone on {c.frame}" for c in p.contacts] + \
                    ["joint limits"], (t, p.name)
        assert [c.name for c in P.constraints.at(P.T)] == ["joint limits"]
        # the barrier costs' weights are gone (the constraints' own terms weigh 0 until solved)
        assert not any(c.bounds is not None and np.any(c.weight > 0)
                       for k in P.knot_costs.costs for c in getattr(k, "costs", [k]))
