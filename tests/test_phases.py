"""Problems made of phases (ddp.phases): contacts and impacts at the knots of a shooting problem,
run by the compiled passes.

The step of a contact knot and of an impact is checked by its second-order Taylor model (an
O(eps^3) remainder, with DDP's contracted terms including the forces' cost curvature), a
zero-contact phase is today's free-flight problem bit for bit, and a standing HyQ solves to
the same optimum by DDP and iLQR.  The CasADi and finite-difference backends step the same
phases through the Dynamics protocol, with the same second-order terms at every kind of knot."""

import numpy as np
import pinocchio as pin
import pytest

import ddp
import dynamics as dyn
from ddp.kernels.contact_knots import STEP_NOT_FINITE, STEPPED
from ddp.kernels.records import SecondOrderMode, kkt_factors
from ddp.local_model import exact_model
from dynamics import robots
from dynamics.kernels.contact import SINGULAR_CONTACT
from helpers import rel_err

FEET = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")


def standing_hyq():
    """HyQ at rest in its standing posture with the feet on the ground (z = 0)."""
    m = robots.load("hyq")
    q = np.array(m.neutral())
    q[7:] = [-0.2, 0.75, -1.5] * 2 + [-0.2, -0.75, 1.5] * 2
    pm = m.pin_model
    data = pm.createData()
    pin.framesForwardKinematics(pm, data, q)
    q[2] -= min(data.oMf[pm.getFrameId(f)].translation[2] for f in FEET)
    return m, np.concatenate([q, np.zeros(m.nv)])


def _costs(m, x_ref):
    w = np.concatenate([[0, 0, 1e2], [1e2] * 3, [1e-1] * 12, [1] * 6, [1e-1] * 12])
    run = ddp.Sum([ddp.StateRegularization(m, x_ref, w), ddp.ControlRegularization(12, 1e-4)])
    return run, ddp.StateRegularization(m, x_ref, 10 * w)


def _one_knot(m, x0, phase):
    run, term = _costs(m, x0)
    return ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term,
                               actuation=np.eye(m.nv)[:, 6:], phases=[phase])


@pytest.mark.parametrize("impact", [False, True])
@pytest.mark.parametrize("feet", ["points", "flat"])
def test_the_step_of_a_contact_knot_has_a_third_order_taylor_remainder(feet, impact):
    """h(dz) = F(x (+) dx, u + du) (-) F(x, u) at a knot with three of HyQ's feet in contact
    (Baumgarte gains) or Talos's two flat feet, or an impact on them: lam . h - lam . (J dz) -
    1/2 dz^T H dz is O(eps^3), with J the step derivatives and H DDP's second-order terms of the
    backward pass.  Those read the KKT factors and kinematics that the derivative call kept;
    without them (``kkt`` of no knots) the pass forms them again, to the same terms."""
    if feet == "points":
        m, x = standing_hyq()
        contacts = [dyn.Contact3D(f, reference=(0.1, 0.0, 0.0), gains=(5.0, 2.0))
                    for f in FEET[:3]]
    else:
        m = robots.load("talos_legs")
        x = np.r_[robots.TALOS_LEGS_HALF_SITTING, np.zeros(m.nv)]
        contacts = [dyn.Contact6D(f, gains=(0.0, 30.0))
                    for f in ("left_sole_link", "right_sole_link")]
    rng = np.random.default_rng(3)
    x = np.concatenate([m.integrate(x[:m.nq], 0.1 * rng.normal(size=m.nv)),
                        rng.normal(size=m.nv)])
    P = _one_knot(m, x, ddp.Phase(1, contacts, impact=impact))
    u = P.quasi_static()[0] + rng.normal(size=P.nu)
    xs = P.rollout(u[None])
    d = P.calc_diff(xs, u[None], exact_model("ddp", "exact", ddp.SecondOrderMode.CONTRACTED))
    lam = rng.normal(size=P.ndx)
    assert d.second_order.kkt.LM.shape[0] == 1  # kept
    Fxx, Fxu, Fuu = P.step_hessians(0, lam, d.step, d.second_order)
    H = np.block([[Fxx, Fxu], [Fxu.T, Fuu]])
    formed = d.second_order._replace(kkt=kkt_factors(0, 0, 0, 0))
    Fxx, Fxu, Fuu = P.step_hessians(0, lam, d.step, formed)
    assert rel_err(np.block([[Fxx, Fxu], [Fxu.T, Fuu]]), H) < 1e-12
    J = np.concatenate([d.step.Fx[0], d.step.Fu[0]], axis=1)
    dz = rng.normal(size=P.ndx + P.nu)
    errs = []
    for eps in (1e-2, 1e-3):
        z = eps * dz
        x1 = P.rollout((u + z[P.ndx:])[None], x0=P.integrator.integrate(x, z[:P.ndx]))[1]
        h = P.integrator.difference(xs[1], x1)
        errs.append(abs(lam @ (h - J @ z) - 0.5 * z @ H @ z))
    assert errs[1] < errs[0] * 3e-3, errs
    if impact:  # no control, and the configuration does not move
        assert np.all(d.step.Fu[0] == 0) and np.array_equal(xs[1, :m.nq], x[:m.nq])


def test_a_free_flight_phase_is_the_problem_without_phases():
    m, x0 = standing_hyq()
    run, term = _costs(m, x0)
    B = np.eye(m.nv)[:, 6:]
    D = dyn.AnalyticalDynamics(m)
    plain = ddp.ShootingProblem(D, x0, 12, 0.02, run, term, actuation=B)
    phased = ddp.ShootingProblem(D, x0, None, 0.02, run, term, actuation=B,
                                 phases=[ddp.Phase(5), ddp.Phase(7)])
    a = ddp.solve(plain, max_iter=5)
    b = ddp.solve(phased, max_iter=5)
    np.testing.assert_array_equal(a.xs, b.xs)
    assert a.cost == b.cost and a.iterations == b.iterations


def test_standing_hyq_solves_to_one_optimum_by_ddp_and_ilqr():
    """Four feet in contact, the trunk raised 5 cm: DDP and iLQR converge to the same cost, DDP
    in no more iterations; the contact forces carry the weight."""
    m, x0 = standing_hyq()
    x_ref = x0.copy()
    x_ref[2] += 0.05
    run, term = _costs(m, x_ref)
    contacts = [dyn.Contact3D(f, gains=(0.0, 50.0)) for f in FEET]
    P = ddp.ShootingProblem(dyn.ContactDynamics(m, contacts), x0, 30, 0.02, run, term,
                            actuation=np.eye(m.nv)[:, 6:])
    sols = {method: ddp.solve(P, method=method, max_iter=100) for method in ("ddp", "ilqr")}
    assert all(s.status == "converged" for s in sols.values())
    assert abs(sols["ddp"].cost - sols["ilqr"].cost) < 1e-9 * sols["ilqr"].cost
    assert sols["ddp"].iterations <= sols["ilqr"].iterations
    forces = P.contact_forces(sols["ddp"].xs, sols["ddp"].us)
    assert sorted(forces) == sorted(FEET)
    weight = -pin.computeTotalMass(m.pin_model) * m.pin_model.gravity.linear[2]
    normal = sum(f[:, 2] for f in forces.values())
    assert abs(normal.mean() - weight) < 0.05 * weight  # on average they carry the weight
    assert all(np.all(f[:, 2] > 0) for f in forces.values())


def test_a_singular_contact_set_is_a_diverged_status_naming_the_knot():
    """Two contacts on one foot (a heel beside the foot): J has dependent rows and, without
    damping, J M^-1 J^T is singular at every knot of the phase; the same status at an impact on
    them, and when the finite-difference backend steps the phases through the protocol."""
    m, x0 = standing_hyq()
    pm = m.pin_model
    foot = pm.frames[pm.getFrameId("lf_foot")]
    pm.addFrame(pin.Frame("lf_heel", foot.parentJoint,
                          foot.placement * pin.SE3(np.eye(3), np.array([0.05, 0.0, 0.0])),
                          pin.FrameType.OP_FRAME))
    run, term = _costs(m, x0)
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term,
                            actuation=np.eye(m.nv)[:, 6:],
                            phases=[ddp.Phase(3), ddp.Phase(4, ["lf_foot", "lf_heel"])])
    sol = ddp.solve(P, max_iter=5)
    assert sol.status == "diverged"
    assert "knot 3 (contacts: lf_foot, lf_heel)" in sol.message and "singular" in sol.message
    damped = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term,
                                 actuation=np.eye(m.nv)[:, 6:],
                                 phases=[ddp.Phase(3), ddp.Phase(4, ["lf_foot", "lf_heel"],
                                                                 damping=1e-6)])
    assert ddp.solve(damped, max_iter=3).status != "diverged"
    for backend in (dyn.AnalyticalDynamics(m), dyn.FiniteDifferenceDynamics(m)):
        for phases, kind in (([ddp.Phase(3), ddp.Phase(4, ["lf_foot", "lf_heel"])], "contacts"),
                             ([ddp.Phase(3), ddp.Phase(1, ["lf_foot", "lf_heel"], impact=True),
                               ddp.Phase(3, ["lf_foot"])], "impact")):
            sol = ddp.solve(ddp.ShootingProblem(backend, x0, None, 0.02, run, term,
                                                actuation=np.eye(m.nv)[:, 6:], phases=phases),
                            max_iter=5)
            assert sol.status == "diverged", (backend, kind)
            assert f"knot 3 ({kind}: lf_foot, lf_heel): the contact-space" in sol.message
        # knot by knot: a step, a step that is not finite (a NaN control), a singular KKT system
        Q = ddp.ShootingProblem(backend, x0, None, 0.02, run, term, actuation=np.eye(m.nv)[:, 6:],
                                phases=[ddp.Phase(2, ["lf_foot"]),
                                        ddp.Phase(1, ["lf_foot", "lf_heel"])])
        us = Q.quasi_static()
        us[1] = np.nan
        xs = np.repeat(x0[None], Q.T + 1, axis=0)
        assert [Q.evaluation.step_status(xs, us, t) for t in range(Q.T)] == [
            STEPPED, STEP_NOT_FINITE, SINGULAR_CONTACT], backend


def test_bad_phases_are_named():
    m, x0 = standing_hyq()
    run, term = _costs(m, x0)
    D, B = dyn.AnalyticalDynamics(m), np.eye(m.nv)[:, 6:]

    def problem(phases, horizon=None, dynamics=D):
        return ddp.ShootingProblem(dynamics, x0, horizon, 0.02, run, term, actuation=B,
                                   phases=phases)

    with pytest.raises(ValueError, match="knots: expected a positive number"):
        ddp.Phase(0)
    with pytest.raises(ValueError, match=r"phases\[1\].contacts\[0\].frame: no frame 'lf_fot'"):
        problem([ddp.Phase(2), ddp.Phase(2, ["lf_fot"])])
    with pytest.raises(ValueError, match="add up to 4; the horizon is 5"):
        problem([ddp.Phase(2), ddp.Phase(2)], horizon=5)
    with pytest.raises(ValueError, match="an impact needs the contacts"):
        ddp.Phase(1, impact=True)
    with pytest.raises(ValueError, match="expected one cost or 3 costs"):
        ddp.Phase(3, cost=[run, run])
    with pytest.raises(ValueError, match="restitution: expected a number in"):
        ddp.Phase(1, ["lf_foot"], impact=True, restitution=2.0)

    class NoContactModel(dyn.AnalyticalDynamics):
        compiled = False  # a robot's backend stepped through the protocol, without contacts

    with pytest.raises(ValueError, match="NoContactModel has none"):
        problem([ddp.Phase(2, ["lf_foot"])], dynamics=NoContactModel(m))
    push = ddp.ContactForce(m, "lf_foot", [0.0, 0.0, 100.0], 1e-2)

    class NoForces(dyn.FiniteDifferenceDynamics):
        contact_derivatives = property()  # steps contacts, without their forces

    with pytest.raises(ValueError, match=r"phases\[0\].cost: ContactForce on 'lf_foot' needs the "
                                         r"contact forces and their derivatives "
                                         r"\(contact_derivatives\), which NoForces does not give"):
        problem([ddp.Phase(2, ["lf_foot"], cost=ddp.Sum([run, push]))], dynamics=NoForces(m))
    with pytest.raises(ValueError, match="second_order: 'tensor' is not available on the "
                                         "analytical backend with contacts"):
        ddp.solve(problem([ddp.Phase(2, ["lf_foot"])]), second_order="tensor", max_iter=1)


def _around_a_rollout(P, rng):
    """(us, xs, co): quasi-static controls of P perturbed, their rollout, and a random co-state
    per knot."""
    us = P.quasi_static() + rng.normal(scale=2.0, size=(P.T, P.nu))
    return us, P.rollout(us), rng.normal(size=(P.T, P.ndx))


def _step_terms(P, xs, us, co, mode):
    """P's derivatives at (xs, us) with DDP's second-order data of ``mode``, and the Fxx, Fxu,
    Fuu of the co-states ``co`` at every knot (the backward pass's function)."""
    d = P.calc_diff(xs, us, exact_model("ddp", "exact", mode))
    return d, [P.step_hessians(t, co[t], d.step, d.second_order)
               for t in range(P.T)]


def test_every_backend_steps_a_gait_with_the_same_second_order_terms():
    """HyQ on four feet, then three (damped), an impact with restitution, four again: the
    CasADi and finite-difference backends step each phase through the protocol (the contact
    dynamics of ``with_contacts``, the impact map of ``impulse_derivatives``) and give the
    compiled analytical passes' Fx, Fu and DDP's second-order terms (Fxx, Fxu, Fuu of a random
    co-state) at every knot, CasADi's AD tensors to 1e-11, finite-diff-2's to 1e-7; from the
    same controls DDP reaches one optimum on the three (iLQR too), and multiple shooting with
    bounded controls one optimum on the analytical and finite-difference backends.  A backend
    built on contacts without phases is one phase on them, stepped by that backend itself."""
    m, x0 = standing_hyq()
    rng = np.random.default_rng(5)
    x0[m.nq:] = rng.normal(scale=0.2, size=m.nv)
    run, term = _costs(m, standing_hyq()[1])
    feet = [dyn.Contact3D(f, gains=(0.0, 20.0)) for f in FEET]
    phases = [ddp.Phase(3, feet), ddp.Phase(3, feet[:3], damping=1e-6),
              ddp.Phase(1, feet, impact=True, restitution=0.2), ddp.Phase(3, feet)]
    B = np.eye(m.nv)[:, 6:]

    def problem(backend, phases=phases):
        return ddp.ShootingProblem(backend, x0, None if phases else 10, 0.02, run, term,
                                   actuation=B, phases=phases)

    exact = problem(dyn.AnalyticalDynamics(m))
    us, xs, co = _around_a_rollout(exact, rng)
    terms = lambda P, mode: _step_terms(P, xs, us, co, mode)
    d0, want = terms(exact, SecondOrderMode.CONTRACTED)
    backends = {"casadi": dyn.CasadiDynamics(m), "fd": dyn.FiniteDifferenceDynamics(m)}
    for label, tol in (("casadi", 1e-11), ("fd", 1e-7)):
        P = problem(backends[label])
        assert rel_err(P.rollout(us), xs) < 1e-12
        d, got = terms(P, SecondOrderMode.TENSORS)
        assert rel_err(d.step.Fx, d0.step.Fx) < 1e-12 and rel_err(d.step.Fu, d0.step.Fu) < 1e-12
        for t in range(P.T):
            for name, a, b in zip(("Fxx", "Fxu", "Fuu"), got[t], want[t]):
                scale = max(np.abs(b).max(), np.abs(want[t][0]).max())
                assert np.abs(a - b).max() < tol * scale, (label, t, name)
    sols = {}
    for label, backend in (("analytical", None), *backends.items()):
        P = exact if backend is None else problem(backend)
        for method in ("ddp", "ilqr"):
            sols[label, method] = ddp.solve(P, us=us, method=method, max_iter=50)
            assert sols[label, method].status == "converged", (label, method)
    ref = sols["analytical", "ddp"]
    assert all(abs(s.cost - ref.cost) < 1e-9 * ref.cost for s in sols.values())
    assert all(sols[k, "ddp"].iterations == ref.iterations for k in backends)
    # multiple shooting from states at x0 with bounded controls: the same optimum, no gaps
    bounded = [ddp.ShootingProblem(b, x0, None, 0.02, run, term, actuation=B, phases=phases,
                                   u_min=-60.0, u_max=60.0)
               for b in (dyn.AnalyticalDynamics(m), backends["fd"])]
    cold = np.tile(x0, (bounded[0].T + 1, 1)), bounded[0].quasi_static()
    shot = [ddp.solve(P, *cold, shooting="multiple", max_iter=50) for P in bounded]
    assert all(s.status == "converged" for s in shot)
    assert abs(shot[1].cost - shot[0].cost) < 1e-9 * shot[0].cost
    assert np.abs(bounded[1].gaps(shot[1].xs, shot[1].us)).max() < 1e-12
    held = dyn.FiniteDifferenceDynamics(m, contacts=feet)
    P = problem(held, phases=None)
    assert P.phases[0].contacts == tuple(feet) and P.evaluation.spans[0].dynamics is held
    stand = ddp.solve(P, us=us[:10], max_iter=50)
    same = ddp.solve(problem(dyn.ContactDynamics(m, feet), phases=None), us=us[:10], max_iter=50)
    assert abs(stand.cost - same.cost) < 1e-9 * same.cost


def test_force_costs_through_the_protocol_reach_the_analytical_terms():
    """Costs on the contact forces (a force target, friction cones; at an impact on the
    impulses) on HyQ's phases: two feet, an impact on them, one foot (damped), free flight.
    The CasADi and finite-difference backends give the forces through ``contact_derivatives``
    and ``impulse_derivatives``; the costs, their derivatives, their gradients in the forces and
    DDP's second-order terms (Fxx, Fxu, Fuu of a random co-state, with the forces' rows of the
    tensors weighted by those gradients) equal the compiled analytical passes' at every knot
    (CasADi 1e-11, finite-diff-2 1e-7), and DDP and iLQR reach the same optimum in as many
    iterations.  Without the forces' rows the terms differ by far more than that."""
    m, x0 = standing_hyq()
    rng = np.random.default_rng(11)
    x0[m.nq:] = rng.normal(scale=0.2, size=m.nv)
    run, term = _costs(m, standing_hyq()[1])
    feet = [dyn.Contact3D(f, gains=(0.0, 20.0)) for f in FEET[:2]]
    push = ddp.ContactForce(m, "lf_foot", [5.0, 0.0, 150.0], 1e-2)
    cones = [ddp.FrictionCone(m, f, 0.1, 10.0) for f in FEET[:2]]
    phases = [ddp.Phase(2, feet, cost=ddp.Sum([run, push] + cones)),
              ddp.Phase(1, feet, cost=ddp.Sum([run, push]), impact=True, restitution=0.2),
              ddp.Phase(2, feet[:1], cost=ddp.Sum([run, push, cones[0]]), damping=1e-6),
              ddp.Phase(1)]
    B = np.eye(m.nv)[:, 6:]

    def problem(backend):
        return ddp.ShootingProblem(backend, x0, None, 0.02, run, term, actuation=B,
                                   phases=phases)

    exact = problem(dyn.AnalyticalDynamics(m))
    us, xs, co = _around_a_rollout(exact, rng)
    terms = lambda P, mode: _step_terms(P, xs, us, co, mode)
    d0, want = terms(exact, SecondOrderMode.CONTRACTED)
    assert np.abs(d0.step.forces.dl_dlam).max() > 1e-2  # the costs act on the forces
    ref = {method: ddp.solve(exact, us=us, method=method, max_iter=50)
           for method in ("ddp", "ilqr")}
    # the forces along the trajectory: two feet, the impulses at the impact, one foot, none
    forces = exact.contact_forces(xs, us)
    q, v = xs[:, :m.nq], xs[:, m.nq:]
    lam = dyn.constrained_dynamics(m, feet, q[1], v[1], B @ us[1])[1]
    imp = dyn.impulse_dynamics(m, feet, q[2], v[2], 0.2)[1]
    assert rel_err(np.r_[forces["lf_foot"][1], forces["rf_foot"][1]], lam) < 1e-12
    assert rel_err(np.r_[forces["lf_foot"][2], forces["rf_foot"][2]], imp) < 1e-12
    assert np.isnan(forces["rf_foot"][3:]).all() and np.isnan(forces["lf_foot"][5]).all()
    for backend, tol in ((dyn.CasadiDynamics(m), 1e-11),
                         (dyn.FiniteDifferenceDynamics(m), 1e-7)):
        P = problem(backend)
        assert abs(P.cost(xs, us) - exact.cost(xs, us)) < 1e-12 * exact.cost(xs, us)
        by_protocol = P.contact_forces(xs, us)
        assert all(np.array_equal(np.isnan(by_protocol[f]), np.isnan(forces[f]))
                   and rel_err(np.nan_to_num(by_protocol[f]), np.nan_to_num(forces[f])) < 1e-10
                   for f in forces)
        d, got = terms(P, SecondOrderMode.TENSORS)
        for k in ("lx", "lu", "lxx", "lxu", "luu"):
            assert rel_err(getattr(d.running, k), getattr(d0.running, k)) < 1e-10, k
        assert rel_err(d.step.forces.dl_dlam, d0.step.forces.dl_dlam) < 1e-10
        for Q, dQ in ((exact, d0), (P, d)):  # the costs alone need the forces, and keep them
            kept = dQ.step.forces.dl_dlam.copy()
            alone = Q.cost_derivatives(xs, us, "exact", dQ.step.forces)[0]
            assert rel_err(alone.lxx, dQ.running.lxx) < 1e-12
            assert np.array_equal(dQ.step.forces.dl_dlam, kept)
            with pytest.raises(ValueError, match=r"^forces: the cost derivatives of this"):
                Q.cost_derivatives(xs, us, "exact")
        d.step.forces.dl_dlam[:] = 0.0
        without = [P.step_hessians(t, co[t], d.step, d.second_order)
                   for t in range(P.T)]
        worst = 0.0
        for t in range(P.T):
            scale = np.abs(want[t][0]).max()
            for name, a, b in zip(("Fxx", "Fxu", "Fuu"), got[t], want[t]):
                assert np.abs(a - b).max() < tol * scale, (backend, t, name)
            worst = max(worst, np.abs(without[t][0] - want[t][0]).max() / scale)
        assert worst > 1e-3
        for method, want_sol in ref.items():  # iLQR: the forces' first derivatives only
            sol = ddp.solve(P, us=us, method=method, max_iter=50)
            assert sol.status == "converged" and sol.iterations == want_sol.iterations
            assert abs(sol.cost - want_sol.cost) < 1e-9 * want_sol.cost


def _force_cost_case(name):
    """(model, start, contacts, force costs) of the force-cost test: HyQ on two point feet, or
    Talos's legs on two flat feet with a wrench target, a friction cone on a flat foot's force
    part and a wrench cone."""
    if name == "hyq":
        m, x0 = standing_hyq()
        feet = [dyn.Contact3D(f, reference=(0.1, 0.0, 0.0), gains=(4.0, 3.0)) for f in FEET[:2]]
        return m, x0, feet, [ddp.ContactForce(m, "lf_foot", [1.0, -2.0, 150.0],
                                              [1e-2, 2e-2, 3e-3]),
                             ddp.FrictionCone(m, "rf_foot", 0.05, 5.0),
                             ddp.ContactForce(m, "lf_foot", np.zeros(3), [4.0, 0.0, 0.0],
                                              activation=ddp.SecondOrderCone(0.05))]
    m = robots.load("talos_legs")
    x0 = np.r_[robots.TALOS_LEGS_HALF_SITTING, np.zeros(m.nv)]
    feet = [dyn.Contact6D(f, gains=(0.0, 30.0)) for f in ("left_sole_link", "right_sole_link")]
    return m, x0, feet, [ddp.ContactForce(m, "left_sole_link", [1.0, -2.0, 250.0, 0.5, 1.0, 0.2],
                                          1e-2),
                         ddp.FrictionCone(m, "left_sole_link", 0.05, 5.0),
                         ddp.WrenchCone(m, "right_sole_link", 0.3, (0.1, 0.05), 5.0)]


@pytest.mark.parametrize("name", ["hyq", "talos"])
def test_force_costs_equal_the_casadi_reference(name):
    """ContactForce, FrictionCone and WrenchCone (the barriers, some rows active) and a
    ContactForce in a second-order cone (HyQ) on a knot with two feet in contact (point feet on
    HyQ, flat feet on Talos): value, gradient and Gauss-Newton Hessian against CasADi's AD of
    the residual of the forces of the KKT system written in SX (dynamics.symbolic, sharing no
    code with the kernels; the cone's squared distance written with its projection, which
    CasADi differentiates twice); their gradient in the forces (for DDP's terms), and the
    forces' curvature that DDP adds (the step's second-order terms with a zero co-state)
    against CasADi's exact minus Gauss-Newton Hessian."""
    import casadi

    from dynamics.symbolic import SymbolicTree, contact_dynamics, contact_specs

    m, x0, feet, costs = _force_cost_case(name)
    starts = dict(zip([c.frame for c in feet], np.cumsum([0] + [c.size for c in feet])))
    rows = [slice(starts[c.frame], starts[c.frame] + c.A.shape[1]) for c in costs]
    quadratic = {i for c, r in zip(costs, rows) if c.activation is None
                 for i in range(r.start, r.stop)}
    only_barriers = sorted({i for c, r in zip(costs, rows) if c.bounds is not None
                            for i in range(r.start, r.stop)} - quadratic)
    dt, B = 0.02, np.eye(m.nv)[:, 6:]
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, dt, ddp.Sum(costs),
                            ddp.StateRegularization(m, x0, 0.0), actuation=B,
                            phases=[ddp.Phase(4, feet)])
    rng = np.random.default_rng(8)
    xs = np.array([np.concatenate([m.integrate(x0[:m.nq], 0.05 * rng.normal(size=m.nv)),
                                   rng.normal(size=m.nv)]) for _ in range(5)])
    us = P.quasi_static() + 5 * rng.normal(size=(4, P.nu))
    d = P.calc_diff(xs, us, exact_model("ddp", "gauss-newton", ddp.SecondOrderMode.CONTRACTED))
    # the reference: l(lambda(q (+) e, v, B u)) in CasADi
    tree = SymbolicTree(m)
    n = m.nv
    q, v, u = casadi.SX.sym("q", m.nq), casadi.SX.sym("v", n), casadi.SX.sym("u", P.nu)
    e, dd = casadi.SX.sym("e", n), casadi.SX.sym("d", n)
    X = tree.placements(q, None, e, exact=True, more=(dd,))
    specs = contact_specs(m, feet)
    lam = contact_dynamics(tree, X, dd, v, casadi.mtimes(casadi.DM(B), u), specs)[1]
    lam_s = casadi.SX.sym("lam", sum(c.size for c in feet))

    def residuals(L):
        out = []
        for c, rc in zip(costs, rows):
            r = c.force_residual(L[rc])
            if c.bounds is not None:
                lo, up = (casadi.DM(b) for b in c.bounds)
                r = casadi.fmax(r - up, 0) + casadi.fmin(r - lo, 0)
            out.append((c, r))
        return out

    def cone_distance_squared(r, mu):
        """|r - P(r)|^2, P the projection onto {|r_t| <= mu r_n} (inside: r; polar: 0; else
        the boundary point on r's tangential ray)."""
        s = casadi.sqrt(r[0] ** 2 + r[1] ** 2 + 1e-300)
        c = (mu * s + r[2]) / (1 + mu ** 2)
        edge = casadi.vertcat(c * mu * r[0] / s, c * mu * r[1] / s, c)
        p = casadi.if_else(s <= mu * r[2], r, casadi.if_else(mu * s <= -r[2], 0 * r, edge))
        return casadi.sumsqr(r - p)

    def activated(c, r):
        if c.cone is not None:
            return 0.5 * c.weight[0] * cone_distance_squared(r, c.cone.mu)
        return 0.5 * casadi.dot(casadi.DM(c.weight) * r, r)

    def value(parts):
        return sum(activated(c, r) for c, r in parts)

    z = casadi.vertcat(e, v, u)
    parts = residuals(lam)
    total = value(parts)
    gn = 0
    cone_gradients = []
    for c, r in parts:
        J = casadi.jacobian(r, z)
        rs = casadi.SX.sym("r", r.shape[0])
        Ha = casadi.substitute(casadi.hessian(activated(c, rs), rs)[0], rs, r)
        gn += casadi.mtimes(J.T, casadi.mtimes(Ha, J))
        if c.cone is not None:
            cone_gradients.append(casadi.gradient(activated(c, rs), rs))
    H, g = casadi.hessian(total, z)
    gl = casadi.substitute(casadi.gradient(value(residuals(lam_s)), lam_s), lam_s, lam)
    f = casadi.Function("f", [q, v, u, e, dd], [total, g, H, gn, gl])
    active = 0
    for t in range(4):
        l, gr, Hr, GN, gl = (np.array(a) for a in f(xs[t, :m.nq], xs[t, m.nq:], us[t],
                                                     np.zeros(n), np.zeros(n)))
        for c in costs:  # a cone's force outside it, between the cone and its polar cone
            if c.cone is not None:
                r = d.step.forces.lam[t, starts[c.frame]:starts[c.frame] + 3]
                mu, s = c.cone.mu, np.linalg.norm(r[:2])
                active += int(mu * r[2] < s and mu * s > -r[2])
        run = d.running
        assert rel_err(run.l[t] / dt, l) < 1e-10
        assert rel_err(np.concatenate([run.lx[t], run.lu[t]]) / dt, gr.ravel()) < 1e-10
        ours = np.block([[run.lxx[t], run.lxu[t]], [run.lxu[t].T, run.luu[t]]]) / dt
        assert rel_err(ours, GN) < 1e-10, rel_err(ours, GN)
        assert rel_err(d.step.forces.dl_dlam[t] / dt, gl.ravel()) < 1e-10
        Fxx, Fxu, Fuu = P.step_hessians(t, np.zeros(P.ndx), d.step, d.second_order)
        curvature = np.block([[Fxx, Fxu], [Fxu.T, Fuu]]) / dt
        assert rel_err(curvature, Hr - GN) < 1e-9, rel_err(curvature, Hr - GN)
        active += np.count_nonzero(gl[only_barriers])
    assert active > 0  # a cone's barrier was active somewhere


def _phases_rotated(phases, s, default):
    """The phases' knots from knot s on, then the first s (one phase per run), built afresh:
    each knot's contacts, impact and cost (``default`` where the phase has none) taken from
    the phase list itself."""
    knots = [(p, c) for p in phases for c in p.knot_costs(default)]
    knots = knots[s:] + knots[:s]
    runs = []
    for p, c in knots:
        if runs and runs[-1][0] is p:
            runs[-1][1].append(c)
        else:
            runs.append((p, [c]))
    return [ddp.Phase(len(cs), p.contacts, cs, p.impact, p.damping, p.restitution)
            for p, cs in runs]


def test_a_cycled_schedule_is_the_problem_built_at_the_shifted_phase():
    """A gait of HyQ (four feet with a cost per knot, three damped, an impact with
    restitution, four again) moved on by ``cycle`` 1 then 3 more knots is, on the compiled
    analytical passes and through the protocol (finite differences), the problem built directly
    from the phases rotated by 1 and 4 knots: the same cost, gaps, step of the last knot, and
    first and second derivatives (the packed contacts, cost programs and phase spans reordered
    in place).  A problem with constraints refuses to cycle."""
    m, x0 = standing_hyq()
    rng = np.random.default_rng(11)
    x0[m.nq:] = rng.normal(scale=0.2, size=m.nv)
    run, term = _costs(m, standing_hyq()[1])
    feet = [dyn.Contact3D(f, gains=(0.0, 20.0)) for f in FEET]
    weighted = [ddp.Sum([run, ddp.ControlRegularization(12, w)]) for w in (1e-2, 1e-1, 1.0)]
    phases = [ddp.Phase(3, feet, weighted), ddp.Phase(3, feet[:3], damping=1e-6),
              ddp.Phase(1, feet, impact=True, restitution=0.2), ddp.Phase(3, feet)]
    B = np.eye(m.nv)[:, 6:]
    for backend in (dyn.AnalyticalDynamics(m), dyn.FiniteDifferenceDynamics(m)):
        def problem(phases):
            return ddp.ShootingProblem(backend, x0, None, 0.02, run, term, actuation=B,
                                       phases=phases)

        P = problem(phases)
        us = P.quasi_static() + rng.normal(scale=2.0, size=(P.T, P.nu))
        xs = P.rollout(us) + 1e-3 * rng.normal(size=(P.T + 1, P.nx))
        xs[:, 3:7] /= np.linalg.norm(xs[:, 3:7], axis=1)[:, None]
        local = exact_model("ddp", "exact", SecondOrderMode.CONTRACTED if backend.compiled
                            else SecondOrderMode.TENSORS)
        for step, total in ((1, 1), (3, 4)):
            P.cycle(step)
            Q = problem(_phases_rotated(phases, total, run))
            assert [(p.knots, p.contacts, p.impact) for p in P.phases] == \
                   [(p.knots, p.contacts, p.impact) for p in Q.phases]
            assert P.cost(xs, us) == pytest.approx(Q.cost(xs, us), rel=1e-14)
            assert rel_err(P.gaps(xs, us), Q.gaps(xs, us)) < 1e-14
            last = P.evaluation.steps(xs[-2:-1], us[-1:], P.T - 1)
            assert rel_err(last, Q.evaluation.steps(xs[:-1], us)[-1:]) < 1e-14
            a, b = P.calc_diff(xs, us, local), Q.calc_diff(xs, us, local)
            for name in ("Fx", "Fu"):
                assert rel_err(getattr(a.step, name), getattr(b.step, name)) < 1e-12, name
            for x, y in zip(a.running, b.running):
                assert rel_err(x, y) < 1e-12
            co = rng.normal(size=P.ndx)
            for t in (0, 3, P.T - 1):
                for x, y in zip(P.step_hessians(t, co, a.step, a.second_order),
                                Q.step_hessians(t, co, b.step, b.second_order)):
                    assert rel_err(x, y) < 1e-9, t
    box = ddp.Constraint(ddp.ControlRegularization(12, 1.0), -50.0, 50.0)
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term, actuation=B,
                            phases=phases, constraints=[box])
    with pytest.raises(ValueError, match="cycle: a problem with constraints"):
        P.cycle(1)
    with pytest.raises(ValueError, match="knots: expected a non-negative number"):
        P.cycle(-1)


def test_a_cyclic_mpc_tick_moves_the_schedule_on_with_the_warm_start(monkeypatch):
    """MPC(cyclic=True) on a gait whose second knot is an impact: the second tick's problem is
    the schedule moved on past the impact (it takes no time: two knots), ``wrap`` sees the
    two wrapped knots' costs, the knots that wrapped are warm-started from the last solution a
    cycle earlier (the base moved on by the horizon's displacement), and the warm start's gaps
    (computed at its first knot and its last two only, from the steps of the new last knots,
    on other contacts than the first's) are the gaps of the full evaluation: the wrapped
    knots' own defect is zero, the one where the horizon's end meets them is not."""
    m, x0 = standing_hyq()
    run, term = _costs(m, standing_hyq()[1])
    feet = [dyn.Contact3D(f, gains=(0.0, 20.0)) for f in FEET]
    first = ddp.Sum([run, ddp.ControlRegularization(12, 1e-2)])
    phases = [ddp.Phase(1, feet, first), ddp.Phase(1, feet, impact=True, damping=1e-12),
              ddp.Phase(4, feet[:3], damping=1e-6), ddp.Phase(4, feet)]
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term,
                            actuation=np.eye(m.nv)[:, 6:], phases=phases)
    wrapped = []
    mpc = ddp.MPC(P, iterations=3, cyclic=True, wrap=wrapped.append)
    mpc.step(x0)
    sol = mpc.solution
    assert sol.history[-1].gap == 0.0 or sol.history[-1].alpha == 1.0
    seen = {}
    original = ddp.mpc.solve

    def spy(problem, xs, us, *args, gaps=None, **kwargs):
        seen.update(xs=xs, us=us, gaps=gaps)
        return original(problem, xs, us, *args, gaps=gaps, **kwargs)

    monkeypatch.setattr(ddp.mpc, "solve", spy)
    mpc.step(sol.xs[2])
    assert [(p.knots, len(p.contacts), p.impact) for p in P.phases] == \
        [(4, 3, False), (4, 4, False), (1, 4, False), (1, 4, True)]
    assert len(wrapped) == 2 and wrapped[0].costs[-1].weight[0] == 1e-2
    np.testing.assert_array_equal(seen["xs"][:-2], sol.xs[2:])
    tail = sol.xs[1:3].copy()
    tail[:, :3] += sol.xs[-1, :3] - sol.xs[0, :3]
    np.testing.assert_array_equal(seen["xs"][-2:], tail)
    np.testing.assert_array_equal(seen["us"][-2:], sol.us[:2])
    assert seen["gaps"] is not None
    want = P.gaps(seen["xs"], seen["us"])
    assert np.abs(seen["gaps"] - want).max() < 1e-9 * max(1.0, np.abs(want).max())
    assert np.abs(want[-2]).max() > 1e-6 and np.abs(want[-1]).max() < 1e-12
    with pytest.raises(ValueError, match="wrap: expected a function of a knot's cost, with "
                                         "cyclic=True"):
        ddp.MPC(P, wrap=print)


def test_a_force_costs_weight_set_after_the_build_takes_effect():
    """A FrictionCone's weight assigned after the problem bound it (the cost itself has no
    compiled term until a phase binds it to its contacts) reaches the problem: its cost is
    that of the problem built with the new weight."""
    m, x0 = standing_hyq()
    run, term = _costs(m, x0)
    feet = [dyn.Contact3D(f, gains=(0.0, 20.0)) for f in FEET]

    def problem(cone):
        return ddp.ShootingProblem(dyn.AnalyticalDynamics(m), x0, None, 0.02, run, term,
                                   actuation=np.eye(m.nv)[:, 6:],
                                   phases=[ddp.Phase(3, feet, ddp.Sum([run, cone]))])

    cone = ddp.FrictionCone(m, "lf_foot", 0.05, 5.0)
    P = problem(cone)
    us = P.quasi_static() + np.random.default_rng(2).normal(scale=3.0, size=(P.T, P.nu))
    xs = P.rollout(us)
    before = P.cost(xs, us)
    cone.weight = 50.0
    after = P.cost(xs, us)
    assert after != before
    assert after == pytest.approx(problem(ddp.FrictionCone(m, "lf_foot", 0.05, 50.0)).cost(
        xs, us), rel=1e-14)
