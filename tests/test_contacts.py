"""Rigid-contact dynamics (dynamics.contacts, dynamics.contact_dynamics) against Pinocchio, which
shares no code with the kernels: the values against ``forwardDynamics(model, data, q, v, tau,
J, gamma)`` with J and gamma from Pinocchio's frame functions (as Crocoddyl forms them), the
first derivatives against ``computeConstraintDynamicsDerivatives`` (no Baumgarte terms there)
and, with Baumgarte terms, against central differences on the manifold.  The second derivatives
(which no peer has) against CasADi's AD of the KKT system written in SX (dynamics.symbolic,
its own kinematics and factorizations) and, on ATLAS and Talos, against central differences of
the first derivatives that the Pinocchio tests check."""

import numpy as np
import pinocchio as pin
import pytest

import dynamics as dyn
from dynamics import robots
from dynamics.contact_dynamics import (ContactDynamics, constrained_derivatives,
                                       constrained_dynamics, constrained_second_derivatives)
from dynamics.contacts import Contact3D, Contact6D, ContactSet
from helpers import random_state, rel_err
from problems.reference.casadi_contacts import contact_dynamics_reference, impulse_reference
from problems.reference.pinocchio_contacts import rigid_contacts

FEET = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")


def _tree(seed):
    """A floating random tree with every joint type and three contact frames on three joints;
    rotor inertias (armature) on its DoFs unless seed is 0."""
    m = robots.random_tree(8, floating_base=True, seed=seed, branching=0.4,
                           joint_types=robots.JOINT_TYPES, armature=0.0 if seed == 0 else 0.5)
    pm = m.pin_model
    for k, j in enumerate((m.njoints - 1, m.njoints // 2, 2)):
        M = pin.SE3(pin.exp3(np.array([0.3, 0.2, -0.4]) * (k + 1)), np.array([0.1, -0.2, 0.3]))
        pm.addFrame(pin.Frame(f"c{k}", j, M, pin.FrameType.OP_FRAME))
    return m, ["c0", "c1", "c2"]


CASES = {"hyq-2": ("hyq", FEET[:2]), "hyq-3": ("hyq", FEET[:3]), "hyq-4": ("hyq", FEET),
         "atlas-2": ("atlas", ("l_foot", "r_foot")), "talos-2": ("talos", ("left_sole_link",
                                                                          "right_sole_link")),
         "tree-0": ("tree", 0), "tree-3": ("tree", 3), "tree-5": ("tree", 5)}


def _case(name):
    robot, frames = CASES[name]
    if robot == "tree":
        return _tree(frames)
    return robots.load(robot), list(frames)


def _pinocchio_values(m, frames, q, v, tau, ref, gains, damping=0.0):
    """(a, lam) by pin.forwardDynamics with J, gamma from Pinocchio's frame functions."""
    pm = m.pin_model
    data = pm.createData()
    pin.forwardKinematics(pm, data, q, v, np.zeros(m.nv))
    pin.updateFramePlacements(pm, data)
    pin.computeJointJacobians(pm, data, q)
    J, gamma = [], []
    for f in frames:
        fid = pm.getFrameId(f)
        J.append(pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)[:3])
        acc = pin.getFrameClassicalAcceleration(pm, data, fid, pin.LOCAL_WORLD_ALIGNED).linear
        vel = pin.getFrameVelocity(pm, data, fid, pin.LOCAL_WORLD_ALIGNED).linear
        gamma.append(acc + gains[0] * (data.oMf[fid].translation - ref) + gains[1] * vel)
    a = pin.forwardDynamics(pm, data, q, v, tau, np.vstack(J), np.concatenate(gamma), damping)
    return a, np.array(data.lambda_c)


def _pinocchio_derivatives(m, frames, q, v, tau, surfaces=()):
    pm = m.pin_model
    models, datas, data, settings = rigid_contacts(pm, frames, surfaces)
    a = pin.constraintDynamics(pm, data, q, v, tau, models, datas, settings)
    d = pin.computeConstraintDynamicsDerivatives(pm, data, models, datas, settings)
    return a, np.array(data.lambda_c), [np.array(x) for x in d]  # copies: views of data


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_first_derivatives_equal_pinocchios(name):
    m, frames = _case(name)
    for seed in (1, 2):
        q, v, _, tau = random_state(m, seed)
        ref, gains = np.array([0.3, -0.1, 0.2]), (4.0, 3.0)
        a, lam, status = constrained_dynamics(
            m, [Contact3D(f, reference=ref, gains=gains) for f in frames], q, v, tau)
        a_ref, lam_ref = _pinocchio_values(m, frames, q, v, tau, ref, gains)
        assert status == 0
        assert rel_err(a, a_ref) < 1e-10 and rel_err(lam, lam_ref) < 1e-10, (name, seed)
        d = constrained_derivatives(m, [Contact3D(f) for f in frames], q, v, tau)
        a_p, lam_p, (daq, dav, dat, dlq, dlv, dlt) = _pinocchio_derivatives(m, frames, q, v, tau)
        assert rel_err(d.a, a_p) < 1e-10 and rel_err(d.lam, lam_p) < 1e-10
        for got, want, what in ((d.da_dq, daq, "da_dq"), (d.da_dv, dav, "da_dv"),
                                (d.da_dtau, dat, "da_dtau"), (d.dlam_dq, dlq, "dlam_dq"),
                                (d.dlam_dv, dlv, "dlam_dv"), (d.dlam_dtau, dlt, "dlam_dtau")):
            assert rel_err(got, want) < 1e-10, (name, seed, what, rel_err(got, want))


def _central(f, x, h, n):
    """Columns of the central difference of f at x along e_k, k < n (f(x, k, +-h))."""
    return np.stack([(f(x, k, h) - f(x, k, -h)) / (2 * h) for k in range(n)], axis=-1)


@pytest.mark.parametrize("name", ["hyq-4", "tree-3"])
def test_the_baumgarte_terms_have_the_derivatives_of_central_differences(name):
    """With Kp, Kd > 0 (Pinocchio's constraint derivatives have no such terms): the
    derivatives in q (along q (+) h e_k), v and tau against fourth-order central differences."""
    m, frames = _case(name)
    q, v, _, tau = random_state(m, 4)
    cs = ContactSet(m, [Contact3D(f, reference=np.array([0.1, 0.2, -0.3]), gains=(5.0, 2.0))
                        for f in frames])
    d = constrained_derivatives(m, cs, q, v, tau)
    both = lambda q_, v_, t_: np.concatenate(constrained_dynamics(m, cs, q_, v_, t_)[:2])
    _assert_central_differences(m, both, q, v, tau, d, name)


def _assert_central_differences(m, values, q, v, tau, d, name):
    """Assert that the first derivatives ``d`` of (a, lam) at (q, v, tau) equal fourth-order
    central differences of ``values(q, v, tau)`` (q moved along q (+) h e_k) to 1e-7."""
    e, h = np.eye(m.nv), 1e-3

    def along(k, s, which):
        args = [q, v, tau]
        args[which] = m.integrate(q, s * e[k]) if which == 0 else args[which] + s * e[k]
        return values(*args)

    for which, (da, dl) in enumerate(((d.da_dq, d.dlam_dq), (d.da_dv, d.dlam_dv),
                                      (d.da_dtau, d.dlam_dtau))):
        fd = np.stack([(8 * (along(k, h, which) - along(k, -h, which))
                        - (along(k, 2 * h, which) - along(k, -2 * h, which))) / (12 * h)
                       for k in range(m.nv)], axis=-1)
        got = np.concatenate([da, dl])
        assert rel_err(got, fd) < 1e-7, (name, which, rel_err(got, fd))


def test_dependent_contacts_are_a_status_and_a_damping_solves_them():
    """Two point contacts on one rigid body (the foot of a 3-DoF leg: 6 constraints, rank 5)
    make J M^-1 J^T singular: NaN and the status, no exception; with a damping the result is
    Pinocchio's forwardDynamics with the same damping."""
    m = robots.load("hyq")
    pm = m.pin_model
    foot = pm.frames[pm.getFrameId("lf_foot")]
    pm.addFrame(pin.Frame("lf_heel", foot.parentJoint,
                          foot.placement * pin.SE3(np.eye(3), np.array([0.05, 0.0, 0.0])),
                          pin.FrameType.OP_FRAME))
    frames = ["lf_foot", "lf_heel"]
    q, v, _, tau = random_state(m, 5)
    a, lam, status = constrained_dynamics(m, [Contact3D(f) for f in frames], q, v, tau)
    assert status == 2 and np.all(np.isnan(a)) and np.all(np.isnan(lam))
    assert "singular" in dyn.contact_dynamics.STATUS[int(status)]
    a, lam, status = constrained_dynamics(m, [Contact3D(f) for f in frames], q, v, tau,
                                          damping=1e-6)
    a_ref, lam_ref = _pinocchio_values(m, frames, q, v, tau, np.zeros(3), (0.0, 0.0), 1e-6)
    # J M^-1 J^T + 1e-6 I has a condition number of 1e7 here: rounding reaches lam at 1e-9
    assert status == 0 and rel_err(a, a_ref) < 1e-9 and rel_err(lam, lam_ref) < 1e-8


def test_a_batch_gives_the_points():
    m, frames = _case("hyq-3")
    cs = ContactSet(m, [Contact3D(f, gains=(1.0, 1.0)) for f in frames])
    states = [random_state(m, s) for s in range(5)]
    Q, V, TAU = (np.array([s[i] for s in states]) for i in (0, 1, 3))
    batch = constrained_derivatives(m, cs, Q, V, TAU)
    for t in range(5):
        one = constrained_derivatives(m, cs, Q[t], V[t], TAU[t])
        for k in ("a", "lam", "da_dq", "dlam_dv", "da_dtau"):
            np.testing.assert_array_equal(getattr(batch, k)[t], getattr(one, k))


def test_a_batched_second_order_gives_the_points_across_its_groups():
    """The batched second order takes its knots in groups (first derivatives, then
    second-order terms, each knot with its own work arrays: kernels.contact.KNOT_BLOCK).  On one
    thread (one chunk), over two groups and a part, every knot's results are bit for bit its own
    alone, contracted and as full tensors."""
    from dynamics.kernels.contact import KNOT_BLOCK
    m, frames = _case("hyq-3")
    cs = ContactSet(m, [Contact3D(f, gains=(1.0, 5.0)) for f in frames])
    T = 2 * KNOT_BLOCK + 3
    states = [random_state(m, s) for s in range(T)]
    Q, V, TAU = (np.array([s[i] for s in states]) for i in (0, 1, 3))
    MU = np.random.default_rng(3).normal(size=(T, m.nv + cs.size))
    threads = dyn.threads()
    dyn.set_threads(1)
    try:
        batches = (constrained_second_derivatives(m, cs, Q, V, TAU, MU),
                   constrained_second_derivatives(m, cs, Q, V, TAU))
    finally:
        dyn.set_threads(threads)
    for batch, mu in zip(batches, (MU, None)):
        for t in range(T):
            one = constrained_second_derivatives(m, cs, Q[t], V[t], TAU[t],
                                                 None if mu is None else mu[t])
            for k in ("a", "da_dq", "dlam_dv", "d2_dq2", "d2_dv2", "d2_dqdv", "d2_dtaudq"):
                np.testing.assert_array_equal(getattr(batch, k)[t], getattr(one, k),
                                              err_msg=f"{k}, knot {t}")


def test_bad_contacts_are_named():
    m = robots.load("hyq")
    with pytest.raises(ValueError, match=r"contacts\[0\].frame: no frame 'lf_fot'.*did you mean "
                                         r"'lf_foot'"):
        ContactSet(m, [Contact3D("lf_fot")])
    with pytest.raises(ValueError, match="universe"):
        ContactSet(m, [Contact3D("universe")])
    with pytest.raises(ValueError, match="gains: expected"):
        Contact3D("lf_foot", gains=(-1.0, 0.0))
    with pytest.raises(ValueError, match="gains: expected"):
        Contact3D("lf_foot", gains=(np.nan, 0.0))
    with pytest.raises(ValueError, match="reference: expected a finite world position"):
        Contact3D("lf_foot", reference=(0.0, np.inf, 0.0))
    with pytest.raises(ValueError, match=r"contacts\[1\]: expected a dynamics.Contact3D"):
        ContactSet(m, [Contact3D("lf_foot"), "rf_foot"])
    with pytest.raises(ValueError, match=r"contacts: expected a list of dynamics.Contact3D or "
                                         r"dynamics.Contact6D; got the single 'lf_foot' \(a "
                                         r"list of one: \[Contact3D\('lf_foot'\)\]\)"):
        ContactDynamics(m, "lf_foot")
    with pytest.raises(ValueError, match=r"got the single Contact3D"):
        ContactSet(m, Contact3D("lf_foot"))
    with pytest.raises(ValueError, match="damping: expected"):
        constrained_dynamics(m, [Contact3D("lf_foot")], *random_state(m)[:2], np.zeros(m.nv),
                             damping=-1.0)


def _equal_casadi(m, cs_, name, seeds=(3, 4)):
    """Assert that (a, lam), their first derivatives and their second derivatives contracted
    with a random co-state equal CasADi's AD at the random states of ``seeds`` (1e-11); returns
    [(q, v, tau, mu, ours)] of those states."""
    ref = contact_dynamics_reference(m, cs_.contacts)
    out = []
    for seed in seeds:
        q, v, _, tau = random_state(m, seed)
        mu = np.random.default_rng(seed).normal(size=m.nv + cs_.size)
        w, jq, jv, jt, hqq, hvv, hqv, hqt = ref(q, v, tau, mu)
        d = constrained_second_derivatives(m, cs_, q, v, tau, mu)
        assert d.status == 0
        assert rel_err(np.concatenate([d.a, d.lam]), w.ravel()) < 1e-11
        for got, want, what in ((np.vstack([d.da_dq, d.dlam_dq]), jq, "q"),
                                (np.vstack([d.da_dv, d.dlam_dv]), jv, "v"),
                                (np.vstack([d.da_dtau, d.dlam_dtau]), jt, "tau"),
                                (d.d2_dq2, hqq, "qq"), (d.d2_dv2, hvv, "vv"),
                                (d.d2_dqdv, hqv, "qv"), (d.d2_dtaudq, hqt.T, "tau q")):
            assert rel_err(got, want) < 1e-11, (name, seed, what, rel_err(got, want))
        out.append((q, v, tau, mu, d))
    return out


@pytest.mark.parametrize("name", ["hyq-2", "hyq-4", "tree-0", "tree-3"])
def test_second_derivatives_equal_casadi_ad(name):
    """Contracted with a random co-state mu over (a, lam), with Baumgarte gains: the (q, q),
    (v, v), (q, v) and (tau, q) second derivatives against CasADi's AD; and the full tensors
    contracted with mu give the same matrices."""
    m, frames = _case(name)
    cs_ = ContactSet(m, [Contact3D(f, reference=(0.1, 0.2, -0.3), gains=(5.0, 2.0))
                         for f in frames])
    for q, v, tau, mu, d in _equal_casadi(m, cs_, name):
        full = constrained_second_derivatives(m, cs_, q, v, tau)
        for k in ("d2_dq2", "d2_dv2", "d2_dqdv", "d2_dtaudq"):
            assert rel_err(np.einsum("i,ijk->jk", mu, getattr(full, k)), getattr(d, k)) < 1e-12


def _fourth_order(f, h):
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


@pytest.mark.parametrize("name", [pytest.param("atlas-2", marks=pytest.mark.slow),
                                  pytest.param("talos-2", marks=pytest.mark.slow), "hyq-3"])
def test_second_derivative_tensors_are_central_differences_of_the_first(name):
    """The tensors of (a, lam) against fourth-order central differences of the first
    derivatives (checked against Pinocchio above): T[:, j, k] = d/dx_k of column j, q moved
    along q (+) h e_k."""
    m, frames = _case(name)
    cs_ = ContactSet(m, [Contact3D(f, reference=(0.0, 0.1, 0.0), gains=(3.0, 1.0))
                         for f in frames])
    q, v, _, tau = random_state(m, 6)
    full = constrained_second_derivatives(m, cs_, q, v, tau)
    e, h = np.eye(m.nv), 1e-3

    def first(q_, v_):
        d = constrained_derivatives(m, cs_, q_, v_, tau)
        return (np.vstack([d.da_dq, d.dlam_dq]), np.vstack([d.da_dv, d.dlam_dv]),
                np.vstack([d.da_dtau, d.dlam_dtau]))

    by_q = np.stack([_fourth_order(lambda s: np.stack(first(m.integrate(q, s * e[k]), v)), h)
                     for k in range(m.nv)], axis=-1)
    by_v = np.stack([_fourth_order(lambda s: np.stack(first(q, v + s * e[k])), h)
                     for k in range(m.nv)], axis=-1)
    for got, want, what in ((full.d2_dq2, by_q[0], "qq"), (full.d2_dv2, by_v[1], "vv"),
                            (full.d2_dqdv, by_v[0], "qv"), (full.d2_dtaudq, by_q[2], "tau q")):
        assert rel_err(got, want) < 1e-7, (name, what, rel_err(got, want))


def test_the_backend_gives_the_second_derivatives_of_a():
    """ContactDynamics.fd_derivatives(order=2): the rows of a of the tensors, and with the
    protocol's co-state lam (of a only) the contraction with (lam, 0)."""
    m, frames = _case("hyq-4")
    backend = dyn.ContactDynamics(m, [Contact3D(f, gains=(2.0, 1.0)) for f in frames])
    q, v, _, tau = random_state(m, 7)
    full = backend.fd_derivatives(q, v, tau, order=2)
    ref = constrained_second_derivatives(m, backend.contacts, q, v, tau)
    assert full.d2a_dq2.shape == (m.nv,) * 3
    np.testing.assert_array_equal(full.d2a_dqdv, ref.d2_dqdv[:m.nv])
    lam = np.random.default_rng(7).normal(size=m.nv)
    lam_part = backend.fd_derivatives(q, v, tau, order=2, lam=lam)
    assert rel_err(lam_part.d2a_dtaudq, np.einsum("i,ijk->jk", lam, full.d2a_dtaudq)) < 1e-12
    with pytest.raises(ValueError, match=r"mu: expected shape \(30,\).*\(nv \+ nc=30\)"):
        constrained_second_derivatives(m, backend.contacts, q, v, tau, np.zeros(m.nv))


def _pinocchio_impulse(m, frames, q, v, r, surfaces=()):
    pm = m.pin_model
    models, datas, data, settings = rigid_contacts(pm, frames, surfaces)
    v_plus = np.array(pin.impulseDynamics(pm, data, q, v, models, datas, r, settings))
    imp = np.array(data.impulse_c)
    pin.computeImpulseDynamicsDerivatives(pm, data, models, datas, r, settings)
    return v_plus, imp, [np.array(x) for x in (data.ddq_dq, data.ddq_dv, data.dlambda_dq,
                                               data.dlambda_dv)]


@pytest.mark.parametrize("name", list(CASES))
def test_the_impact_map_and_its_first_derivatives_equal_pinocchios(name):
    """impulseDynamics and computeImpulseDynamicsDerivatives (whose ddq_dv is dv+/dv - I), with
    restitution 0 and 0.4."""
    m, frames = _case(name)
    for seed, r in ((1, 0.0), (2, 0.4)):
        q, v, _, _ = random_state(m, seed)
        d = dyn.impulse_dynamics(m, [Contact3D(f) for f in frames], q, v, restitution=r,
                                 order=1)
        v_plus, imp, (dvq, dvv, diq, div) = _pinocchio_impulse(m, frames, q, v, r)
        assert d.status == 0
        for got, want, what in ((d.v_plus, v_plus, "v+"), (d.impulse, imp, "impulse"),
                                (d.dv_dq, dvq, "dv_dq"), (d.dv_dv - np.eye(m.nv), dvv, "dv_dv"),
                                (d.dimpulse_dq, diq, "dimp_dq"), (d.dimpulse_dv, div, "dimp_dv")):
            assert rel_err(got, want) < 1e-10, (name, r, what, rel_err(got, want))
        v_plus0, imp0, status = dyn.impulse_dynamics(m, [Contact3D(f) for f in frames], q, v,
                                                     restitution=r)
        np.testing.assert_array_equal(v_plus0, d.v_plus)


@pytest.mark.parametrize("name", ["hyq-3", "tree-3"])
def test_impact_second_derivatives_equal_casadi_ad(name):
    """The impact map's second derivatives contracted with a random mu over (v+, imp) against
    CasADi's AD of the impact map written in SX; the (v, v) block is zero."""
    m, frames = _case(name)
    cs_ = ContactSet(m, [Contact3D(f) for f in frames])
    n, r = m.nv, 0.3
    ref = impulse_reference(m, cs_.contacts, r)
    for seed in (3, 4):
        qn, vn, _, _ = random_state(m, seed)
        mun = np.random.default_rng(seed).normal(size=n + cs_.size)
        w_ref, jq, hqq, hqv = ref(qn, vn, mun)
        d = dyn.impulse_dynamics(m, cs_, qn, vn, restitution=r, order=2, mu=mun)
        assert rel_err(np.concatenate([d.v_plus, d.impulse]), w_ref.ravel()) < 1e-11
        assert rel_err(np.vstack([d.dv_dq, d.dimpulse_dq]), jq) < 1e-11
        assert rel_err(d.d2_dq2, hqq) < 1e-11, (name, rel_err(d.d2_dq2, hqq))
        assert rel_err(d.d2_dqdv, hqv) < 1e-11, (name, rel_err(d.d2_dqdv, hqv))
        full = dyn.impulse_dynamics(m, cs_, qn, vn, restitution=r, order=2)
        assert rel_err(np.einsum("i,ijk->jk", mun, full.d2_dq2), d.d2_dq2) < 1e-12


# ---------------------------------------------------------------------------------- flat feet
#: flat-foot cases: (robot, frames, kinds), kind "6" a Contact6D and "3" a Contact3D
SURFACES = {"atlas-6d": ("atlas", ("l_foot", "r_foot"), "66"),
            "talos-6d": ("talos", ("left_sole_link", "right_sole_link"), "66"),
            "talos-mixed": ("talos", ("left_sole_link", "right_sole_link"), "63"),
            "hyq-6d": ("hyq", FEET[:2], "66"), "tree-0-6d": ("tree", 0, "633"),
            "tree-3-6d": ("tree", 3, "633")}


#: where a flat foot's position gain pulls it, from where it is: 0.61 rad and 0.37 m away
OFFSET = pin.exp6(pin.Motion(np.array([0.1, -0.2, 0.3, 0.3, -0.4, 0.35])))


def _surface_case(name, kd=0.0, kp=0.0, seed=None):
    """(model, contacts, the frames of the flat ones) of a flat-foot case, gains (``kp``,
    ``kd``) (a point contact's Kp is 0); with ``seed``, the flat feet are held at
    oMf :data:`OFFSET`, oMf their placements in the state ``random_state(m, seed)`` (log6 is
    ill-conditioned near a half turn, where a random reference may lie)."""
    robot, frames, kinds = SURFACES[name]
    m, frames = _tree(frames) if robot == "tree" else (robots.load(robot), list(frames))
    pm = m.pin_model
    data = pm.createData()
    if seed is not None:
        pin.framesForwardKinematics(pm, data, random_state(m, seed)[0])
    held = lambda f: None if seed is None else data.oMf[pm.getFrameId(f)] * OFFSET
    contacts = [Contact6D(f, reference=held(f), gains=(kp, kd)) if k == "6"
                else Contact3D(f, gains=(0.0, kd)) for f, k in zip(frames, kinds)]
    return m, contacts, [f for f, k in zip(frames, kinds) if k == "6"]


def test_the_symbolic_log6_is_pinocchios_with_its_jacobian():
    """dynamics.symbolic.log6 (the CasADi reference's, written in 1 - cos(theta) with power
    series below 1e-3) against pin.log6 and pin.Jlog6 (the derivative along M Exp(xi)) at
    angles on both sides of the switch, down to the identity, and up to 3 rad."""
    import casadi

    from dynamics.symbolic import log6

    xi = casadi.SX.sym("xi", 6)
    R0, p0 = casadi.SX.sym("R", 3, 3), casadi.SX.sym("p", 3)
    # M Exp(xi) to first order in xi (enough for the Jacobian at xi = 0)
    R = casadi.mtimes(R0, casadi.SX.eye(3) + casadi.skew(xi[3:]))
    p = p0 + casadi.mtimes(R0, xi[:3])
    e = log6(R, p)
    f = casadi.Function("f", [R0, p0, xi], [e, casadi.jacobian(e, xi)])
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    for angle in (0.0, 1e-6, 0.02, 0.0447, 0.0448, 0.5, 2.0, 3.0):  # 1 - cos = 1e-3 at 0.0447
        M = pin.SE3(pin.exp3(angle * axis), np.array([0.2, -0.1, 0.4]))
        value, jac = (np.array(x) for x in f(M.rotation, M.translation, np.zeros(6)))
        assert rel_err(value.ravel(), pin.log6(M).vector) < 1e-13, angle
        assert rel_err(jac, pin.Jlog6(M)) < 1e-12, (angle, rel_err(jac, pin.Jlog6(M)))


@pytest.mark.parametrize("name", ["atlas-6d", "talos-mixed", "tree-3-6d"])
def test_a_flat_foots_position_gain_is_crocoddyls_log6(name):
    """With Kp, Kd > 0: the values against pin.forwardDynamics with gamma formed as Crocoddyl's
    ContactModel6D (LOCAL_WORLD_ALIGNED) forms it from Pinocchio's functions,
    R (a_f + Kp log6(ref^-1 oMf) + Kd v_f) (local spatial acceleration and velocity, R acting on
    both parts); the first derivatives in q (along q (+) h e_k), v and tau against fourth-order
    central differences of those values."""
    m, contacts, _ = _surface_case(name, kd=3.0, kp=5.0, seed=7)
    pm = m.pin_model
    data = pm.createData()
    kp, kd = 5.0, 3.0

    def pinocchio(q, v, tau):
        pin.forwardKinematics(pm, data, q, v, np.zeros(m.nv))
        pin.updateFramePlacements(pm, data)
        pin.computeJointJacobians(pm, data, q)
        J, gamma = [], []
        for c in contacts:
            fid = pm.getFrameId(c.frame)
            Jw = pin.getFrameJacobian(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
            if c.size == 3:
                J.append(Jw[:3])
                acc = pin.getFrameClassicalAcceleration(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
                vel = pin.getFrameVelocity(pm, data, fid, pin.LOCAL_WORLD_ALIGNED)
                gamma.append(acc.linear + kd * vel.linear)
                continue
            J.append(Jw)
            a0 = (pin.getFrameAcceleration(pm, data, fid, pin.LOCAL).vector
                  + kp * pin.log6(pin.SE3(c.placement).actInv(data.oMf[fid])).vector
                  + kd * pin.getFrameVelocity(pm, data, fid, pin.LOCAL).vector)
            R = data.oMf[fid].rotation
            gamma.append(np.concatenate([R @ a0[:3], R @ a0[3:]]))
        a = pin.forwardDynamics(pm, data, q, v, tau, np.vstack(J), np.concatenate(gamma), 0.0)
        return np.concatenate([a, data.lambda_c])

    q, v, _, tau = random_state(m, 7)
    d = constrained_derivatives(m, contacts, q, v, tau)
    assert d.status == 0
    assert rel_err(np.concatenate([d.a, d.lam]), pinocchio(q, v, tau)) < 1e-10
    _assert_central_differences(m, pinocchio, q, v, tau, d, name)


@pytest.mark.parametrize("name", ["atlas-6d", "talos-6d", "talos-mixed", "hyq-6d"])
def test_flat_feet_equal_pinocchios_contact_6d(name):
    """Contact6D against Pinocchio's CONTACT_6D (LOCAL_WORLD_ALIGNED): the spatial, not
    classical, acceleration on the linear rows, the wrench in the world's axes; values and first
    derivatives of the contact dynamics and of the impact map."""
    m, contacts, surfaces = _surface_case(name)
    frames = [c.frame for c in contacts]
    for seed in (1, 2):
        q, v, _, tau = random_state(m, seed)
        d = constrained_derivatives(m, contacts, q, v, tau)
        a_p, lam_p, ref = _pinocchio_derivatives(m, frames, q, v, tau, surfaces)
        assert d.status == 0 and d.lam.shape == (3 * len(contacts) + 3 * len(surfaces),)
        assert rel_err(d.a, a_p) < 1e-10 and rel_err(d.lam, lam_p) < 1e-10, (name, seed)
        for got, want, what in zip((d.da_dq, d.da_dv, d.da_dtau, d.dlam_dq, d.dlam_dv,
                                    d.dlam_dtau), ref, ("da_dq", "da_dv", "da_dtau", "dlam_dq",
                                                        "dlam_dv", "dlam_dtau")):
            # HyQ's 3-DoF legs make a 6D foot contact ill-conditioned: 2e-10 there
            assert rel_err(got, want) < 3e-10, (name, seed, what, rel_err(got, want))
        imp = dyn.impulse_dynamics(m, contacts, q, v, restitution=0.3, order=1)
        v_plus, impulse, (dvq, dvv, diq, div) = _pinocchio_impulse(m, frames, q, v, 0.3,
                                                                   surfaces)
        for got, want, what in ((imp.v_plus, v_plus, "v+"), (imp.impulse, impulse, "impulse"),
                                (imp.dv_dq, dvq, "dv_dq"), (imp.dv_dv - np.eye(m.nv), dvv,
                                                            "dv_dv"),
                                (imp.dimpulse_dq, diq, "dimp_dq"), (imp.dimpulse_dv, div,
                                                                    "dimp_dv")):
            assert rel_err(got, want) < 3e-10, (name, seed, what, rel_err(got, want))


@pytest.mark.parametrize("name", ["hyq-6d", "tree-0-6d", "tree-3-6d"])
def test_flat_feet_second_derivatives_equal_casadi_ad(name):
    """Flat feet (with point contacts beside them on the random trees, whose joints include
    every type), with gains Kp (log6) and Kd: values, first and contracted second derivatives of
    (a, lam) against CasADi's AD of the KKT system in SX (the drift there is the Lie derivative
    of the frame's local velocity, rotated to the world's axes), and of the impact map."""
    m, contacts, _ = _surface_case(name, kd=2.0)
    cs_ = ContactSet(m, contacts)
    _equal_casadi(m, cs_, name)
    m, with_kp, _ = _surface_case(name, kd=2.0, kp=4.0, seed=3)
    _equal_casadi(m, ContactSet(m, with_kp), name, seeds=(3,))
    n, r = m.nv, 0.3
    q, v, _, _ = random_state(m, 5)
    mu = np.random.default_rng(5).normal(size=n + cs_.size)
    w_ref, jq, hqq, hqv = impulse_reference(m, contacts, r)(q, v, mu)
    d = dyn.impulse_dynamics(m, cs_, q, v, restitution=r, order=2, mu=mu)
    assert rel_err(np.concatenate([d.v_plus, d.impulse]), w_ref.ravel()) < 1e-11
    assert rel_err(np.vstack([d.dv_dq, d.dimpulse_dq]), jq) < 1e-11
    # rounding: on tree-0-6d an entry of 1.6e5 differs by 1.7e-6 (1.09e-11 of the largest) with
    # the machine code LLVM makes for an AMD Zen 5 host, the same with or without the kernels'
    # latest changes; under 1e-11 on the hosts before
    assert rel_err(d.d2_dq2, hqq) < 2e-11 and rel_err(d.d2_dqdv, hqv) < 2e-11


@pytest.mark.slow
def test_flat_feet_tensors_are_central_differences_of_the_first():
    """Talos on two flat feet with Kd = 30 (Crocoddyl's biped gains) and Kp = 10: the
    second-derivative tensors of (a, lam) against fourth-order central differences of the
    first derivatives (checked against Pinocchio and central differences above), q moved along
    q (+) h e_k."""
    m, contacts, _ = _surface_case("talos-6d", kd=30.0, kp=10.0, seed=6)
    cs_ = ContactSet(m, contacts)
    q, v, _, tau = random_state(m, 6)
    full = constrained_second_derivatives(m, cs_, q, v, tau)
    e, h = np.eye(m.nv), 1e-3

    def first(q_, v_):
        d = constrained_derivatives(m, cs_, q_, v_, tau)
        return (np.vstack([d.da_dq, d.dlam_dq]), np.vstack([d.da_dv, d.dlam_dv]))

    by_q = np.stack([_fourth_order(lambda s: np.stack(first(m.integrate(q, s * e[k]), v)), h)
                     for k in range(m.nv)], axis=-1)
    by_v = np.stack([_fourth_order(lambda s: np.stack(first(q, v + s * e[k])), h)
                     for k in range(m.nv)], axis=-1)
    for got, want, what in ((full.d2_dq2, by_q[0], "qq"), (full.d2_dv2, by_v[1], "vv"),
                            (full.d2_dqdv, by_v[0], "qv")):
        assert rel_err(got, want) < 1e-7, (what, rel_err(got, want))


def test_bad_flat_feet_are_named():
    m = robots.load("talos")
    with pytest.raises(ValueError, match="gains: expected"):
        Contact6D("left_sole_link", gains=(0.0, -1.0))
    bad = np.eye(4)
    bad[:3, :3] *= 2.0
    with pytest.raises(ValueError, match=r"reference: expected an SE\(3\) placement.*R\^T R"):
        Contact6D("left_sole_link", reference=bad)
    with pytest.raises(ValueError, match=r"reference: expected an SE\(3\) placement"):
        Contact6D("left_sole_link", reference=np.eye(3))
    with pytest.raises(ValueError, match=r"contacts\[0\].frame: no frame 'left_sole'"):
        ContactSet(m, [Contact6D("left_sole")])
    foot = Contact6D("left_sole_link", reference=pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.3])),
                                                         np.array([0.1, 0.2, 0.0])))
    assert foot.placement.shape == (4, 4) and foot.size == 6


@pytest.mark.parametrize("name", ["hyq-points", "talos-flat"])
def test_casadi_and_finite_differences_carry_the_contact_model(name):
    """CasadiDynamics(contacts=) and FiniteDifferenceDynamics(contacts=) hold the same contacts
    as ContactDynamics: CasADi's AD of the KKT system in SX gives its values, first and
    contracted second derivatives of a to 1e-10, finite-diff-2 (central differences of the
    analytical first derivatives) to 1e-5; the same for the impact map on the contacts
    (``impulse_derivatives``: v+, the impulse and their tensors, with a restitution and a
    damping; finite-diff-1, differences of the values, to 1e-4) and for the contact dynamics
    with its forces (``contact_derivatives``: a, lam and their first derivatives); neither has
    inverse dynamics; ``with_contacts`` is the same backend on other contacts (itself on its
    own)."""
    if name == "hyq-points":
        m, frames = _case("hyq-4")
        feet = [Contact3D(f, reference=(0.1, 0.0, 0.0), gains=(2.0, 1.0)) for f in frames]
    else:
        m = robots.load("talos_legs")
        data = m.pin_model.createData()
        pin.framesForwardKinematics(m.pin_model, data, random_state(m, 9)[0])
        feet = [Contact6D(f, reference=data.oMf[m.pin_model.getFrameId(f)] * OFFSET,
                          gains=(2.0, 30.0)) for f in ("left_sole_link", "right_sole_link")]
    exact = dyn.ContactDynamics(m, feet, damping=1e-9)
    ad = dyn.CasadiDynamics(m, contacts=feet, damping=1e-9)
    fd = dyn.FiniteDifferenceDynamics(m, contacts=feet, damping=1e-9)
    q, v, _, tau = random_state(m, 9)
    lam = np.random.default_rng(9).normal(size=m.nv)
    want = exact.fd_derivatives(q, v, tau, order=2, lam=lam)
    for backend, tol in ((ad, 1e-10), (fd, 1e-5)):
        got = backend.fd_derivatives(q, v, tau, order=2, lam=lam)
        assert rel_err(backend.aba(q, v, tau), exact.aba(q, v, tau)) < 1e-12
        for k in ("da_dq", "da_dv", "da_dtau", "d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq"):
            err = rel_err(getattr(got, k), getattr(want, k))
            assert err < tol, (name, type(backend).__name__, k, err)
        with pytest.raises(NotImplementedError, match="with contacts.*no inverse dynamics"):
            backend.rnea(q, v, np.zeros(m.nv))
    jump = exact.impulse_derivatives(q, v, 0.3, order=2)
    fd1 = dyn.FiniteDifferenceDynamics(m, "finite-diff-1", contacts=feet, damping=1e-9)
    for backend, tol in ((ad, 1e-10), (fd, 1e-5), (fd1, 1e-4)):
        got = backend.impulse_derivatives(q, v, 0.3, order=2)
        for k in ("v_plus", "impulse", "dv_dq", "dv_dv", "dimpulse_dq", "dimpulse_dv", "d2_dq2",
                  "d2_dqdv"):
            err = rel_err(getattr(got, k), getattr(jump, k))
            assert err < tol, (name, type(backend).__name__, k, err)
        assert rel_err(backend.impulse_derivatives(q, v, 0.3, order=0).v_plus,
                       jump.v_plus) < 1e-12
        # the contact dynamics with its forces (costs on forces): values and first derivatives
        # (their tensors: tests/test_phases.py)
        forces = exact.contact_derivatives(q, v, tau, 1)
        got = backend.contact_derivatives(q, v, tau, 1)
        for k in ("a", "lam", "da_dq", "da_dv", "da_dtau", "dlam_dq", "dlam_dv", "dlam_dtau"):
            err = rel_err(getattr(got, k), getattr(forces, k))
            assert err < tol, (name, type(backend).__name__, k, err)
        assert rel_err(backend.contact_derivatives(q, v, tau, 0).lam, forces.lam) < 1e-12
        if backend is fd1:
            continue
        assert backend.with_contacts(feet, 1e-9) is backend
        other = backend.with_contacts(feet[:1])
        assert type(other) is type(backend) and list(other.contacts.contacts) == feet[:1]
        assert backend.with_contacts([]).contacts is None
        with pytest.raises(ValueError, match="restitution: expected a number in"):
            backend.impulse_derivatives(q, v, 1.5)

