"""The gait builder (problems.gaits): phase sequences in Crocoddyl's quadrupedal_gaits
formulation, the jump, and the bad input each gait option names."""

import numpy as np
import pytest

import ddp
import problems
from dynamics import robots
from problems.gaits import GAITS, QuadrupedGaits, hyq_gait


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
