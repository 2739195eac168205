"""The geometric linearization (Bos et al. 2022, :mod:`dynamics.linearization`) against Pinocchio,
against geometric central differences with exp-map perturbations, against the FDSVA route, against
the solver's step derivatives, and the paper's identities; LQR on it (:mod:`ddp.lqr`)."""

import numpy as np
import pinocchio as pin
import pytest

import ddp
import dynamics as dyn
from dynamics import robots
from helpers import ROBOTS, TREES, build, random_state, rel_err, spec_id

#: every named robot (Talos marked slow) and the random trees with every joint type incl. helical
CASES = [pytest.param(s, marks=pytest.mark.slow) if s == "talos" else s for s in ROBOTS] + TREES
FLOATING = ["hyq", "atlas", (8, True, 1), (8, True, 4), "bos"]


def _build(spec):
    return robots.bos_validation_tree() if spec == "bos" else build(spec)


def crm(v):
    w, l = v[3:], v[:3]
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = pin.skew(w)
    out[:3, 3:] = pin.skew(l)
    return out


@pytest.mark.parametrize("spec", CASES, ids=spec_id)
def test_tables_4_to_9_equal_pinocchio(spec):
    """EIDAmb = rnea, Tables 5-8 through the mapping = computeRNEADerivatives, IMMAmb = M^-1 and
    the geometric forward-dynamics derivatives = computeABADerivatives, to 1e-10 relative."""
    m = build(spec)
    pm, pd = m.pin_model, m.pin_model.createData()
    q, v, a, tau = random_state(m, 3)
    assert rel_err(dyn.eidamb(m, q, v, a), pin.rnea(pm, pd, q, v, a)) < 1e-12
    d = dyn.eidamb_derivatives(m, q, v, a)
    pin.computeRNEADerivatives(pm, pd, q, v, a)
    assert rel_err(d.dtau_dq, pd.dtau_dq) < 1e-10
    assert rel_err(d.dtau_dv, pd.dtau_dv) < 1e-10
    if m.has_free_flyer:  # dtau/dq[:, :6] = Table 5 - Table 7 crm(v0)
        assert rel_err(d.dtau_dH - d.dtau_dv[:, :6] @ crm(v[:6]), pd.dtau_dq[:, :6]) < 1e-10
    else:
        assert d.dtau_dH is None
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert rel_err(dyn.immamb(m, q) @ M, np.eye(m.nv)) < 1e-10
    lin = dyn.linearize(m, q, v, tau)
    pin.computeABADerivatives(pm, pd, q, v, tau)
    for got, ref in ((lin.a, pin.aba(pm, pd, q, v, tau)), (lin.da_dq, pd.ddq_dq),
                     (lin.da_dv, pd.ddq_dv), (lin.Minv, pd.Minv)):
        ref = np.triu(ref) + np.triu(ref, 1).T if ref is pd.Minv else ref
        assert rel_err(got, ref) < 1e-10
    n = m.nv  # the compiled assembly: A = [[-ad_v, I], [da_dq, da_dv]], B = [[0], [Minv]]
    assert np.array_equal(lin.A[n:], np.hstack([lin.da_dq, lin.da_dv]))
    assert np.array_equal(lin.A[:n, n:], np.eye(n))
    assert np.array_equal(lin.B[n:], lin.Minv) and not lin.B[:n].any()


@pytest.mark.parametrize("spec", FLOATING, ids=spec_id)
def test_identities_of_the_base_pose_derivative(spec):
    """D_H (inertial twist fixed) = D_v crm(v0) + M[:, :6] crm(a_r0), and with the body twist
    fixed D_H = M[:, :6] crm(a_r0), where a_r0 = Ad(H)^-1 (-g) is the gravity seen by the base."""
    m = _build(spec)
    pm, pd = m.pin_model, m.pin_model.createData()
    q, v, a, _ = random_state(m, 5)
    d = dyn.eidamb_derivatives(m, q, v, a)
    M = dyn.mass_matrix(m, q)
    pin.forwardKinematics(pm, pd, q)
    a_r0 = pd.oMi[1].actInv(pin.Motion(-pm.gravity.vector)).vector
    assert rel_err(d.dtau_dH, d.dtau_dv[:, :6] @ crm(v[:6]) + M[:, :6] @ crm(a_r0)) < 1e-10
    assert rel_err(d.dtau_dq[:, :6], M[:, :6] @ crm(a_r0)) < 1e-10
    assert np.abs(M[:, :6] @ crm(a_r0)).max() > 1e-2  # not vacuous


@pytest.mark.parametrize("spec", FLOATING, ids=spec_id)
def test_table_5_against_exp_map_central_differences(spec):
    """Table 5: tau at H exp(eps e_k) with the inertial twist ^Av_{A,0} = Ad(H) v0 and the body
    acceleration held fixed, by central differences on the manifold."""
    m = _build(spec)
    pm, pd = m.pin_model, m.pin_model.createData()
    q, v, a, _ = random_state(m, 7)
    d = dyn.eidamb_derivatives(m, q, v, a)
    h = 1e-6
    fd = np.empty((m.nv, 6))
    for k in range(6):
        cols = []
        for s in (h, -h):
            xi = np.zeros(m.nv)
            xi[k] = s
            v2 = v.copy()
            v2[:6] = pin.exp6(xi[:6]).actInv(pin.Motion(v[:6])).vector  # nu fixed
            cols.append(pin.rnea(pm, pd, pin.integrate(pm, q, xi), v2, a))
        fd[:, k] = (cols[0] - cols[1]) / (2 * h)
    assert rel_err(d.dtau_dH, fd) < 1e-7


@pytest.mark.parametrize("spec", ["hyq", (8, True, 1), (8, False, 2), "bos"], ids=spec_id)
def test_geometric_equals_fdsva_and_the_solver_step(spec):
    """method='geometric' = method='fdsva' (continuous, discrete, inertial), and the discrete
    linearization is the solver's Fx, Fu; (Fx - I)/dt tends to the continuous A."""
    m = _build(spec)
    q, v, _, tau = random_state(m, 11)
    twists = ("body", "inertial") if m.has_free_flyer else ("body",)
    for dt in (None, 0.01):
        for bt in twists if dt is None else ("body",):
            g = dyn.linearize(m, q, v, tau, dt=dt, method="geometric", base_twist=bt)
            f = dyn.linearize(m, q, v, tau, dt=dt, method="fdsva", base_twist=bt)
            assert rel_err(g.A, f.A) < 1e-10 and rel_err(g.B, f.B) < 1e-10, (dt, bt)
    step = ddp.SemiImplicitEuler(dyn.AnalyticalDynamics(m), 0.01)
    sd, _ = step.derivatives(np.concatenate([q, v])[None], tau[None])
    lin = dyn.linearize(m, q, v, tau, dt=0.01)
    assert rel_err(lin.A, sd.Fx[0]) < 1e-12 and rel_err(lin.B, sd.Fu[0]) < 1e-12
    dt = 1e-7
    cont = dyn.linearize(m, q, v, tau)
    disc = dyn.linearize(m, q, v, tau, dt=dt)
    assert rel_err((disc.A - np.eye(2 * m.nv)) / dt, cont.A) < 1e-5
    assert rel_err(disc.B / dt, cont.B) < 1e-5


@pytest.mark.parametrize("spec", ["hyq", (8, True, 4)], ids=spec_id)
def test_inertial_twist_linearization_against_central_differences(spec):
    """The acceleration rows of A, B with base_twist='inertial': d/dt of (nu, r) at the state
    perturbed as (H exp(xi), s (+) ds, nu + dnu, r + dr), by central differences."""
    m = build(spec)
    pm, pd = m.pin_model, m.pin_model.createData()
    n = m.nv
    q, v, _, tau = random_state(m, 13)
    lin = dyn.linearize(m, q, v, tau, base_twist="inertial")
    rng = np.random.default_rng(0)
    dx, du = rng.normal(size=2 * n), rng.normal(size=n)

    def rates(eps):
        q2 = pin.integrate(pm, q, eps * dx[:n])
        pin.forwardKinematics(pm, pd, q)
        nu = pd.oMi[1].act(pin.Motion(v[:6])).vector + eps * dx[n:n + 6]
        pin.forwardKinematics(pm, pd, q2)
        H2 = pd.oMi[1].copy()
        v2 = np.concatenate([H2.actInv(pin.Motion(nu)).vector, v[6:] + eps * dx[n + 6:]])
        acc = pin.aba(pm, pd, q2, v2, tau + eps * du)
        return np.concatenate([H2.act(pin.Motion(acc[:6])).vector, acc[6:]])

    h = 1e-6
    fd = (rates(h) - rates(-h)) / (2 * h)
    assert rel_err(lin.A[n:] @ dx + lin.B[n:] @ du, fd) < 1e-7
    pin.forwardKinematics(pm, pd, q)  # pose rows: d(xi)/dt = ^0X_A d(nu)
    assert rel_err(lin.A[:6, n:n + 6], pd.oMi[1].inverse().action) < 1e-12


def test_batch_equals_pointwise_and_bad_input():
    m = robots.load("hyq")
    states = [random_state(m, s) for s in range(3)]
    Q, V, _, TAU = (np.array(x) for x in zip(*states))
    b = dyn.linearize(m, Q, V, TAU, dt=0.02)
    for t in range(3):
        p = dyn.linearize(m, Q[t], V[t], TAU[t], dt=0.02)
        np.testing.assert_allclose(b.A[t], p.A, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.B[t], p.B, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="method"):
        dyn.linearize(m, Q[0], V[0], TAU[0], method="euler")
    with pytest.raises(ValueError, match="base_twist"):
        dyn.linearize(m, Q[0], V[0], TAU[0], base_twist="spatial")
    with pytest.raises(ValueError, match="dt"):
        dyn.linearize(m, Q[0], V[0], TAU[0], dt=-0.1)
    with pytest.raises(ValueError, match="dt"):
        dyn.linearize(m, Q[0], V[0], TAU[0], dt=0.1, base_twist="inertial")
    with pytest.raises(ValueError, match="free-flyer"):
        dyn.linearize(robots.load("ur3"), np.zeros(6), np.zeros(6), np.zeros(6),
                      base_twist="inertial")
    with pytest.raises(ValueError, match="tau"):
        dyn.linearize(m, Q[0], V[0], TAU[0, :3])


@pytest.mark.parametrize("spec", ["atlas", (8, True, 3), (8, False, 2)], ids=spec_id)
@pytest.mark.parametrize("pose_columns", [False, True])
def test_the_sparse_product_and_the_support_it_relies_on(spec, pose_columns):
    """The row ranges of ``derivative_column_support`` cover every non-zero of the EIDAmb
    derivatives (at a random state, where no entry vanishes by chance), and cut real zeros; the
    sparse symmetric product on them equals numpy's dense product."""
    from dynamics.kernels.dense import symm_gemm_col_sparse
    from dynamics.kernels.geometric import column_support

    m = build(spec)
    if pose_columns and not m.has_free_flyer:
        pytest.skip("the base-pose columns need a free-flyer root")
    q, v, a, _ = random_state(m, 5)
    d = dyn.eidamb_derivatives(m, q, v, a)
    D = np.hstack([d.dtau_dq, d.dtau_dv] + ([d.dtau_dH] if pose_columns else []))
    seg, nseg = column_support(*m.kernel_args, D.shape[1])[:2]
    inside = np.zeros(D.shape, dtype=bool)
    for c in range(D.shape[1]):
        for s in range(nseg[c]):
            inside[seg[c, s, 0]:seg[c, s, 1], c] = True
    assert np.all(D[~inside] == 0.0)
    if m.name.startswith("atlas"):
        assert inside.mean() < 0.6
    rng = np.random.default_rng(0)
    A = rng.normal(size=(m.nv, m.nv))
    A = A + A.T
    out = np.empty(D.shape)
    symm_gemm_col_sparse(A, D, seg, nseg, m.nv, out, -1.0)
    np.testing.assert_allclose(out, -A @ D, rtol=0, atol=1e-12 * np.abs(A @ D).max())


def test_the_paper_validation_tree():
    """The paper's Fig. 4 system: a moving base with a branched tree of revolute, prismatic and
    helical joints, all at 0.3."""
    m = robots.bos_validation_tree()
    assert set(m.joint_types()) == {"free-flyer", "revolute", "prismatic", "helical"}
    assert len(set(m.arrays.parent[2:])) < m.njoints - 2  # branched
    q = robots.bos_validation_configuration(m)
    np.testing.assert_allclose(q[7:], 0.3)


def test_lqr_stabilizes_and_matches_ilqr_gains():
    """Infinite-horizon LQR about an equilibrium gives a stable closed loop; time-varying LQR on
    the discrete linearization of an iLQR solution, with the problem's cost Hessians (iLQR drops
    only the second-order dynamics terms), reproduces iLQR's feedback gains."""
    m = robots.load("ur3")
    q0 = m.neutral()
    tau0 = dyn.rnea(m, q0, np.zeros(m.nv), np.zeros(m.nv))
    lin = dyn.linearize(m, q0, np.zeros(m.nv), tau0)
    g = ddp.lqr.infinite_horizon(lin, np.ones(2 * m.nv), 0.1 * np.ones(m.nv))
    assert np.linalg.eigvals(lin.A + lin.B @ g.K).real.max() < 0
    lin_d = dyn.linearize(m, q0, np.zeros(m.nv), tau0, dt=0.01)
    gd = ddp.lqr.infinite_horizon(lin_d, np.ones(2 * m.nv), 0.1 * np.ones(m.nv))
    assert np.abs(np.linalg.eigvals(lin_d.A + lin_d.B @ gd.K)).max() < 1

    from problems import examples
    P = examples.get("ur3")
    sol = ddp.solve(P, method="ilqr", max_iter=200, tol=1e-9, globalization="shift")
    assert sol.converged and sol.history[-2].reg == 0.0
    xs, us = sol.policy.xs, sol.policy.us  # the trajectory of the last backward pass
    run, term = P.cost_derivatives(xs, us, "exact")
    lin_t = dyn.linearize(m, xs[:-1, :m.nq], xs[:-1, m.nq:], us, dt=P.dt)
    tv = ddp.lqr.time_varying(lin_t, run.lxx, run.luu, term.lxx[0], N=run.lxu)
    assert rel_err(tv.K, sol.policy.K) < 1e-10


def test_space_manipulator_example_recovers(tmp_path, monkeypatch):
    """The example of ``soddp linearize``: LQR brings the perturbed space manipulator back."""
    from problems import linearization, output

    monkeypatch.setattr(output, "RESULTS", tmp_path)

    rows = linearization.space_manipulator_lqr(duration=3.0, log=lambda *a: None)
    first, last = rows[0], rows[-1]
    for k in ("base_translation_error", "base_rotation_error", "joint_error"):
        assert last[k] < 1e-3 * first[k], k
    assert (tmp_path / "lqr_space_manipulator.png").is_file()
