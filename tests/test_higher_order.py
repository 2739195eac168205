"""Higher-order time derivatives (:mod:`dynamics.higher_order`, Ali et al. 2026) against
references that share no code with them: our first-order kernels and Pinocchio (order 0), the
IDSVA chain rule (order 1), the IDSVA-SO chain rule (order 2, the link between the two papers),
CasADi AD in time of the symbolic RNEA (orders 0-4), finite differences in time along smooth
trajectories, and the ID -> FD and hybrid round trips (orders 0-5)."""

import numpy as np
import pinocchio as pin
import pytest

import dynamics as dyn
from dynamics import higher_order as ho
from dynamics import robots
from dynamics import time_curves as tc
from helpers import ROBOTS, SO_CASES, TREES, build, rel_err, spec_id

CASES = [pytest.param(s, marks=pytest.mark.slow) if s == "talos" else s
         for s in ROBOTS + ("aerial_manipulator",)] + TREES
E = np.einsum


def _derivs(model, r, seed=0):
    rng = np.random.default_rng(seed)
    return model.random_configuration(rng), rng.normal(size=(r + 2, model.nv))


@pytest.mark.parametrize("spec", CASES, ids=spec_id)
def test_order_0_is_rnea_and_aba_and_order_1_is_the_idsva_chain_rule(spec):
    """tau = rnea(q, v, v') (also Pinocchio's), tau' = dtau/dq v + dtau/dv v' + M v'' (IDSVA), and
    the forward algorithm's first row is aba."""
    m = build(spec)
    q, vd = _derivs(m, 1)
    tau = ho.rnea(m, q, vd)
    assert tau.shape == (2, m.nv)
    assert rel_err(tau[0], pin.rnea(m.pin_model, m.pin_model.createData(), q, vd[0], vd[1])) < 1e-12
    d = dyn.id_derivatives(m, q, vd[0], vd[1])
    assert rel_err(tau[1], d.dtau_dq @ vd[0] + d.dtau_dv @ vd[1] + d.M @ vd[2]) < 1e-12
    acc = ho.aba(m, q, vd[0], tau)
    assert rel_err(acc[0], dyn.aba(m, q, vd[0], tau[0])) < 1e-10


def _second_order_chain_rule(d, v, a, j, s):
    """d^2/dt^2 tau(q, v, a) along q' = v, v' = a, a' = j, j' = s with the IDSVA-SO tensors
    T[i, j, k] = L_k(L_j tau_i): the q-q, q-v and v-v blocks, the two q-a blocks (both dM_dq), and
    the first-order terms."""
    return (E("ijk,j,k", d.d2tau_dq2, v, v) + 2 * E("ijk,j,k", d.d2tau_dqdv, v, a)
            + E("ijk,j,k", d.d2tau_dv2, a, a) + 2 * E("ijk,j,k", d.dM_dq, j, v)
            + d.dtau_dq @ a + d.dtau_dv @ j + d.M @ s)


@pytest.mark.parametrize("spec", SO_CASES + ["aerial_manipulator"], ids=spec_id)
def test_order_2_is_the_idsva_so_chain_rule(spec):
    """tau'' = sum_jk T_qq v v + 2 T_qv v a + T_vv a a + 2 dM_dq[:, j, k] j_j v_k + dtau/dq a
    + dtau/dv j + M s: the second-order paper's tensors predict the higher-order paper's output."""
    m = build(spec)
    q, vd = _derivs(m, 2, seed=1)
    tau = ho.rnea(m, q, vd)
    d = dyn.id_second_derivatives(m, q, vd[0], vd[1])
    assert rel_err(tau[2], _second_order_chain_rule(d, *vd)) < 1e-11


AD_CASES = [(6, True, 0), (6, True, 3), (6, False, 1), (6, False, 5), "aerial_manipulator"]


@pytest.mark.parametrize("spec", AD_CASES, ids=spec_id)
def test_orders_0_to_4_equal_casadi_ad_in_time(spec):
    """Along a random smooth curve through every joint type (free-flyer, spherical, planar,
    helical...), tau^(r) for r <= 4 equals CasADi's AD in t of the symbolic RNEA."""
    m = build(spec) if not isinstance(spec, tuple) else robots.random_tree(
        spec[0], joint_types=robots.JOINT_TYPES, floating_base=spec[1], seed=spec[2])
    r = 4
    curve = tc.random_curve(m, seed=2)
    times = np.array([0.2, 1.3])
    Q, VD = tc.evaluate(tc.curve_function(m, curve, r + 1), times)
    ref = tc.evaluate(tc.tau_derivs_function(m, curve, r), times)
    ours = ho.rnea(m, Q, VD)
    for k in range(r + 1):
        assert rel_err(ours[:, k], ref[:, k]) < 1e-11, k


def _central_derivative(f, t0, h, order):
    """Central finite difference of the given order (1-3) on the nine points t0 + k h, k = -4..4
    (accurate to O(h^8), O(h^8) and O(h^6))."""
    stencils = {  # offsets -4..4
        1: np.array([1 / 280, -4 / 105, 1 / 5, -4 / 5, 0, 4 / 5, -1 / 5, 4 / 105, -1 / 280]),
        2: np.array([-1 / 560, 8 / 315, -1 / 5, 8 / 5, -205 / 72, 8 / 5, -1 / 5, 8 / 315, -1 / 560]),
        3: np.array([-7 / 240, 3 / 10, -169 / 120, 61 / 30, 0, -61 / 30, 169 / 120, -3 / 10, 7 / 240]),
    }
    vals = np.array([f(t0 + k * h) for k in range(-4, 5)])
    return np.tensordot(stencils[order], vals, axes=1) / h ** order


def test_finite_differences_in_time_along_polynomial_joint_trajectories():
    """UR3 on polynomial joint trajectories (q' = v exactly): tau', tau'', tau''' from the
    algorithm equal high-order central differences in time of rnea(q(t), v(t), v'(t))."""
    m = robots.load("ur3")
    rng = np.random.default_rng(3)
    C = rng.normal(size=(7, m.nv)) / np.array([1, 1, 2, 6, 24, 120, 720])[:, None]

    def deriv(t, k):  # k-th derivative of q(t) = sum_j C_j t^j
        return sum(C[j] * np.prod(np.arange(j - k + 1, j + 1)) * t ** (j - k)
                   for j in range(k, C.shape[0]))

    def tau(t):
        return dyn.rnea(m, deriv(t, 0), deriv(t, 1), deriv(t, 2))

    t0 = 0.4
    ours = ho.rnea(m, deriv(t0, 0), np.array([deriv(t0, k) for k in range(1, 6)]))
    for k, h in ((1, 5e-3), (2, 1e-2), (3, 2e-2)):
        assert rel_err(_central_derivative(tau, t0, h, k), ours[k]) < 1e-7, k


def test_finite_differences_in_time_along_a_free_flyer_curve():
    """The aerial manipulator on a smooth curve (base on SE(3)): differences in time of the
    order-0 algorithm at q(t), v(t), v'(t) equal its orders 1-3."""
    m = robots.load("aerial_manipulator")
    curve = tc.curve_function(m, tc.random_curve(m, seed=4), 5)
    t0 = 0.7

    def state(t):
        Q, VD = tc.evaluate(curve, [t])
        return Q[0], VD[0]

    def tau(t):
        q, vd = state(t)
        return ho.rnea(m, q, vd[:2])[0]

    q, vd = state(t0)
    ours = ho.rnea(m, q, vd[:5])
    for k, h in ((1, 5e-3), (2, 1e-2), (3, 2e-2)):
        assert rel_err(_central_derivative(tau, t0, h, k), ours[k]) < 1e-7, k


ROUND_TRIP = ["ur3", "hyq", "atlas", "aerial_manipulator"] + TREES


def _rounding_sensitivity(m, q, v, tau, seed=0):
    """How far a 1-ulp relative perturbation of tau moves H-GABI's output, per order (max over
    three draws): the conditioning of the forward problem.  Errors in v^(k) feed every higher
    order through the bias terms, so with unit-size random derivatives this grows with the order
    (ATLAS, order 5: about 1e-6) whatever the algorithm."""
    rng = np.random.default_rng(seed)
    acc = ho.aba(m, q, v, tau)
    moved = [np.abs(ho.aba(m, q, v, tau * (1 + 1.1e-16 * rng.choice([-1, 1], size=tau.shape)))
                    - acc).max(axis=1) for _ in range(3)]
    return np.max(moved, axis=0)


@pytest.mark.parametrize("spec", ROUND_TRIP, ids=spec_id)
def test_inverse_then_forward_round_trip_to_order_5(spec):
    """H-GABI(q, v, H-GRNE(q, [v, ..., v^(6)])) = [v', ..., v^(6)] for r <= 5 to 1e-9, or, where
    random unit-size derivatives make the problem worse conditioned than that, to within 20x of
    the effect of a 1-ulp perturbation of the torques (the algorithm is backward stable)."""
    m = build(spec)
    q, vd = _derivs(m, 5, seed=5)
    tau = ho.rnea(m, q, vd)
    acc = ho.aba(m, q, vd[0], tau)
    tol = np.maximum(1e-9, 20 * _rounding_sensitivity(m, q, vd[0], tau))
    for k in range(6):
        assert np.abs(acc[k] - vd[k + 1]).max() < tol[k], (k, tol[k])


HYBRID = [("hyq", "twist"), ("hyq", "wrench"), ("aerial_manipulator", "twist"),
          ("aerial_manipulator", "wrench"), ("ur3", "wrench"), ((8, True, 2), "twist"),
          ((8, False, 3), "wrench"), ((8, True, 5), "wrench")]


@pytest.mark.parametrize("spec,base", HYBRID, ids=lambda x: spec_id(x) if not isinstance(x, str)
                         or x not in ("twist", "wrench") else x)
def test_hybrid_round_trip_to_order_5(spec, base):
    """Half the joints motion-prescribed (random), the base twist- or wrench-given: the hybrid
    algorithm fed with the inverse dynamics' own torques and accelerations returns the other half
    for r <= 5, to the same tolerance as the forward round trip."""
    m = build(spec)
    q, vd = _derivs(m, 5, seed=7)
    tau = ho.rnea(m, q, vd)
    rng = np.random.default_rng(8)
    names = [n for i, n in enumerate(m.joint_names) if i > 0 and not (
        m.arrays.parent[i] == 0 and m.arrays.jtype[i] == 4)]
    motion = [n for n in names if rng.random() < 0.5]
    acc_in = vd[1:].copy()
    tau_in = tau.copy()
    prescribed = np.zeros(m.nv, bool)
    for n in motion + ([m.joint_names[1]] if base == "twist" else []):
        i = m.joint_names.index(n)
        prescribed[m.arrays.iv[i]:m.arrays.iv[i] + m.arrays.nvj[i]] = True
    acc_in[:, ~prescribed] = 0.0
    tau_in[:, prescribed] = 0.0
    out = ho.hybrid(m, q, vd[0], acc_in, tau_in, motion_joints=motion, base=base)
    tol = np.maximum(1e-9, 20 * _rounding_sensitivity(m, q, vd[0], tau))
    for k in range(6):
        assert np.abs(out.accel_derivs[k] - vd[k + 1]).max() < tol[k], (k, tol[k])
        assert rel_err(out.tau_derivs[k], tau[k]) < max(1e-9, 1e3 * tol[k]), k


@pytest.mark.parametrize("spec", ["ur3", "hyq", "aerial_manipulator", (8, True, 1), (8, False, 4)],
                         ids=spec_id)
def test_closed_form_and_passivity(spec):
    """M = CRBA, g = rnea(q, 0, 0), h + g = rnea(q, v, 0), h = C v, M' = C + C^T (i.e. M' - 2C
    skew) with M' = dM_dq . v from IDSVA-SO, and C equals Pinocchio's computeCoriolisMatrix."""
    m = build(spec)
    rng = np.random.default_rng(9)
    q, v = m.random_configuration(rng), rng.normal(size=m.nv)
    z = np.zeros(m.nv)
    cf = ho.closed_form(m, q, v)
    assert rel_err(cf.M, dyn.mass_matrix(m, q)) < 1e-12
    assert rel_err(cf.g, dyn.rnea(m, q, z, z)) < 1e-12
    assert rel_err(cf.h + cf.g, dyn.rnea(m, q, v, z)) < 1e-12
    assert rel_err(cf.C @ v, cf.h) < 1e-12
    Mdot = E("ijk,k", dyn.id_second_derivatives(m, q, v, z).dM_dq, v)
    assert rel_err(cf.C + cf.C.T, Mdot) < 1e-12
    skew = Mdot - 2 * cf.C
    assert rel_err(skew, -skew.T) < 1e-12
    Cp = pin.computeCoriolisMatrix(m.pin_model, m.pin_model.createData(), q, v)
    assert rel_err(cf.C, Cp) < 1e-12


def test_batch_equals_pointwise_and_threads_agree():
    """A batch over samples gives, sample by sample, the single-point result (serial and parallel
    paths), for the inverse, forward and closed-form functions."""
    m = robots.load("hyq")
    rng = np.random.default_rng(10)
    T, r = 5, 3
    Q = np.array([m.random_configuration(rng) for _ in range(T)])
    VD = rng.normal(size=(T, r + 2, m.nv))
    tau = ho.rnea(m, Q, VD)
    acc = ho.aba(m, Q, VD[:, 0], tau)
    cf = ho.closed_form(m, Q, VD[:, 0])
    for t in range(T):
        np.testing.assert_array_equal(tau[t], ho.rnea(m, Q[t], VD[t]))
        np.testing.assert_allclose(acc[t], ho.aba(m, Q[t], VD[t, 0], tau[t]), rtol=0, atol=1e-12)
        np.testing.assert_array_equal(cf.C[t], ho.closed_form(m, Q[t], VD[t, 0]).C)


def test_bad_input_is_reported_by_name():
    m = robots.load("aerial_manipulator")
    q, vd = _derivs(m, 2)
    with pytest.raises(ValueError, match="v_derivs"):
        ho.rnea(m, q, vd[:, :5])
    with pytest.raises(ValueError, match="v_derivs"):
        ho.rnea(m, q, vd[:1])
    bad = vd.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="v_derivs: expected finite"):
        ho.rnea(m, q, bad)
    qb = q.copy()
    qb[3:7] *= 2
    with pytest.raises(ValueError, match="q"):
        ho.rnea(m, qb, vd)
    with pytest.raises(ValueError, match="q and v_derivs"):
        ho.rnea(m, q[None], vd)
    with pytest.raises(ValueError, match="motion_joints: unknown"):
        ho.hybrid(m, q, vd[0], vd[1:], vd[1:], motion_joints=["elbow"])
    with pytest.raises(ValueError, match="base="):
        ho.hybrid(m, q, vd[0], vd[1:], vd[1:], motion_joints=["root_joint"])
    with pytest.raises(ValueError, match="base: expected"):
        ho.hybrid(m, q, vd[0], vd[1:], vd[1:], base="pose")
    ur3 = robots.load("ur3")
    q3, vd3 = _derivs(ur3, 1)
    with pytest.raises(ValueError, match="fixed base"):
        ho.hybrid(ur3, q3, vd3[0], vd3[1:], vd3[1:], base="twist")
    with pytest.raises(ValueError, match="accel_derivs and tau_derivs"):
        ho.hybrid(m, q, vd[0], vd[1:], vd[2:])


def test_multi_arm_aerial_2x3_is_the_aerial_manipulator():
    """The benchmark generator with two branches of three links has the URDF model's dynamics."""
    a, b = robots.load("aerial_manipulator"), robots.multi_arm_aerial(2, 3)
    q, vd = _derivs(a, 2, seed=11)
    assert rel_err(ho.rnea(b, q, vd), ho.rnea(a, q, vd)) < 1e-13
    with pytest.raises(ValueError, match="branches"):
        robots.multi_arm_aerial(0, 3)


def test_paper_example_command_writes_its_table_and_figures(tmp_path, monkeypatch, capsys):
    """``soddp higher-order`` on a shortened horizon: every round trip to 1e-9 for r <= 5, the
    table and both figures written; bad arguments give exit code 2."""
    from problems import cli, output

    monkeypatch.setattr(output, "RESULTS", tmp_path)
    assert cli.main(["higher-order", "--horizon", "3", "--dt", "0.05"]) == 0
    assert "ID->FD" in capsys.readouterr().out
    rows = (tmp_path / "higher_order_round_trip.csv").read_text().splitlines()
    assert len(rows) == 7
    for line in rows[1:]:
        r, _, _, fd, hacc, htau = (float(x) for x in line.split(","))
        assert max(fd, hacc, htau) < 1e-9, line
    for f in ("higher_order_tau.png", "higher_order_round_trip.png"):
        assert (tmp_path / f).stat().st_size > 0
    assert cli.main(["higher-order", "--dt", "-1"]) == 2
    assert cli.main(["higher-order", "--order", "11"]) == 2


def test_benchmark_functions_small(tmp_path, monkeypatch):
    """The benchmark's scaling parts run and write their tables (tiny sizes)."""
    from problems import output
    from problems.bench import higher_order as bench

    monkeypatch.setattr(output, "RESULTS", tmp_path)
    quiet = dict(min_time=0.001, log=lambda *a: None)
    rows = bench.run_scaling_n(per_branch=(1, 2, 3, 4), orders=(0, 2), **quiet)
    assert [r["N"] for r in rows] == [6, 11, 16, 21]
    rows = bench.run_scaling_r(per_branch=2, r_max=3, casadi_r_max=2, **quiet)
    assert all(r["grne"] > 0 for r in rows) and "casadi" in rows[2] and "casadi" not in rows[3]
    for f in ("higher_order_scaling_n.md", "higher_order_scaling_r.png"):
        assert (tmp_path / f).stat().st_size > 0
