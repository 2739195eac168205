"""IDSVA-SO against references that share no code with it: central differences of Pinocchio's
computeRNEADerivatives and crba on the manifold; structural identities; batching."""

import numpy as np
import pinocchio_ref as ref
import pytest
from helpers import random_state, rel_err
from numba import njit

import dynamics as dyn
from dynamics import accuracy, robots
from dynamics.kernels.packed_model import unpack
from dynamics.kernels.second_order import idsva_so_contracted

FD_TOL = 1e-6
def test_against_pinocchio_finite_differences(so_model):
    q, v, a, _ = random_state(so_model, 1)
    d = dyn.id_second_derivatives(so_model, q, v, a)
    d2q, d2v, d2qv, dM = ref.rnea_second_order_fd(so_model, q, v, a)
    assert rel_err(d.d2tau_dq2, d2q) < FD_TOL
    assert rel_err(d.d2tau_dv2, d2v) < FD_TOL
    assert rel_err(d.d2tau_dqdv, d2qv) < FD_TOL
    assert rel_err(d.dM_dq, dM) < FD_TOL
    # the first-order fields of the same sweep match Pinocchio exactly
    dq, dv, M = ref.rnea_derivatives(so_model, q, v, a)
    assert rel_err(d.dtau_dq, dq) < 1e-10 and rel_err(d.dtau_dv, dv) < 1e-10
    assert rel_err(d.M, M) < 1e-10
    assert rel_err(d.tau, ref.rnea(so_model, q, v, a)) < 1e-10


def _motion_cross(x, y):
    """Spatial motion cross product, [linear, angular] ordering."""
    vx, wx, vy, wy = x[:3], x[3:], y[:3], y[3:]
    return np.concatenate([np.cross(wx, vy) + np.cross(vx, wy), np.cross(wx, wy)])


def test_symmetries(so_model):
    """v-v blocks symmetric; dM_dq symmetric in (i, j); q-q blocks symmetric except between two
    DoFs of one multi-DoF joint, where T[:, j, k] - T[:, k, j] is the first derivative along the
    Lie bracket of the two directions: dtau_dq[:, J] @ c with S_J c = S_k x S_j."""
    q, v, a, _ = random_state(so_model, 2)
    d = dyn.id_second_derivatives(so_model, q, v, a)
    scale = max(1.0, np.abs(d.d2tau_dq2).max())
    np.testing.assert_allclose(d.d2tau_dv2, np.swapaxes(d.d2tau_dv2, 1, 2), atol=1e-12 * scale)
    np.testing.assert_allclose(d.dM_dq, np.swapaxes(d.dM_dq, 0, 1), atol=1e-12 * scale)
    A = so_model.arrays
    antisym = d.d2tau_dq2 - np.swapaxes(d.d2tau_dq2, 1, 2)
    expected = np.zeros_like(antisym)
    for i in range(1, so_model.njoints):
        o, nj = int(A.iv[i]), int(A.nvj[i])
        S = A.S_local[o:o + nj].T  # 6 x nj
        for j in range(nj):
            for k in range(nj):
                c = np.linalg.lstsq(S, _motion_cross(S[:, k], S[:, j]), rcond=None)[0]
                expected[:, o + j, o + k] = d.dtau_dq[:, o:o + nj] @ c
    # expected is zero between DoFs of different joints: those blocks must be symmetric
    np.testing.assert_allclose(antisym, expected, atol=1e-10 * scale)


def test_multi_dof_joints_really_are_non_symmetric():
    """The bracket term above is not vacuous: on a floating base it is non-zero."""
    m = robots.load("hyq")
    q, v, a, _ = random_state(m, 0)
    d = dyn.id_second_derivatives(m, q, v, a)
    assert np.abs(d.d2tau_dq2[:, :6, :6] - np.swapaxes(d.d2tau_dq2[:, :6, :6], 1, 2)).max() > 1e-3


@njit  # one compile per process (a closure in the test compiled again for every model)
def _contracted(ints, floats, q, v, a, mu, H):  # unpack's views stay in compiled code
    idsva_so_contracted(unpack(ints, floats), q, v, a, mu, H[0], H[1], H[2], H[3])


def test_contracted_sweep_equals_contracted_tensors(so_model):
    """idsva_so_contracted (O(n d) pairs, the third DoF summed out) against the explicit
    contraction of the four tensors of Alg. 1, for a random weight mu."""
    q, v, a, _ = random_state(so_model, 4)
    mu = np.random.default_rng(4).normal(size=so_model.nv)
    d = dyn.id_second_derivatives(so_model, q, v, a)
    H = np.zeros((4, so_model.nv, so_model.nv))
    _contracted(*so_model.kernel_args, q, v, a, mu, H)
    for h, full in zip(H, (d.d2tau_dq2, d.d2tau_dv2, d.d2tau_dqdv, d.dM_dq)):
        assert rel_err(h, np.einsum("i,ijk->jk", mu, full)) < 1e-12


def test_batch_equals_pointwise(any_model):
    T = 4
    states = [random_state(any_model, s) for s in range(T)]
    Q, V, A, _ = (np.array(x) for x in zip(*states))
    b = dyn.id_second_derivatives(any_model, Q, V, A)
    assert b.d2tau_dq2.shape == (T, any_model.nv, any_model.nv, any_model.nv)
    for t in range(T):
        p = dyn.id_second_derivatives(any_model, Q[t], V[t], A[t])
        for name in ("tau", "dtau_dq", "dtau_dv", "M", "d2tau_dq2", "d2tau_dv2", "d2tau_dqdv",
                     "dM_dq"):
            np.testing.assert_array_equal(getattr(b, name)[t], getattr(p, name))


def test_output_reuse():
    m = robots.load("ur3")
    q, v, a, _ = random_state(m, 0)
    first = dyn.id_second_derivatives(m, q, v, a)
    expected = {k: np.copy(x) for k, x in vars(first).items()}
    q2, v2, a2, _ = random_state(m, 1)
    again = dyn.id_second_derivatives(m, q2, v2, a2, out=first)
    assert again.d2tau_dq2 is not None and np.shares_memory(again.d2tau_dq2, first.d2tau_dq2)
    fresh = dyn.id_second_derivatives(m, q2, v2, a2)
    for k in expected:
        np.testing.assert_array_equal(getattr(again, k), getattr(fresh, k))
    with pytest.raises(ValueError, match=r"out: expected the IDDerivatives of an earlier call with the same shapes \(2 knots, batch\)"):
        dyn.id_second_derivatives(m, np.tile(q, (2, 1)), np.tile(v, (2, 1)), np.tile(a, (2, 1)),
                                  out=first)


def test_identities_documented():
    """d2tau/da dq is dM_dq: check it through RNEA's linearity in a (central differences in q of
    tau(q, v, a + e_k) - tau(q, v, a) is column k of dM/dq)."""
    m = robots.load("hyq")
    q, v, a, _ = random_state(m, 3)
    d = dyn.id_second_derivatives(m, q, v, a)
    eps = 1e-6
    for k in (0, 4, 9):
        e = np.zeros(m.nv)
        e[k] = eps
        col = lambda qq: (dyn.rnea(m, qq, v, a + np.eye(m.nv)[2]) - dyn.rnea(m, qq, v, a))
        fd = (col(m.integrate(q, e)) - col(m.integrate(q, -e))) / (2 * eps)
        assert rel_err(fd, d.dM_dq[:, 2, k]) < 1e-6


@pytest.mark.parametrize("name", ["ur3", "hyq"])
def test_paper_finite_difference_methods(name):
    m = robots.load(name)
    q, v, a, _ = random_state(m, 4)
    H = accuracy.id_hessian(dyn.id_second_derivatives(m, q, v, a))
    e1 = accuracy.metrics(accuracy.id_hessian(accuracy.finite_diff_1(m, q, v, a)), H)
    e2 = accuracy.metrics(accuracy.id_hessian(accuracy.finite_diff_2(m, q, v, a)), H)
    assert e1["MRE"] < 1e-4 and e2["MRE"] < 1e-6
    assert e2["RMSRE"] < e1["RMSRE"]  # the paper's finding: Finite-Diff-2 is more accurate


def test_metrics():
    ref_ = np.array([[0.5, 2.0], [-4.0, 0.0]])
    A = ref_ + np.array([[0.1, 0.2], [0.0, -0.3]])
    e = accuracy.metrics(A, ref_)
    assert e["MAE"] == pytest.approx(0.3)
    assert e["RMSAE"] == pytest.approx(np.sqrt((0.01 + 0.04 + 0.09) / 4))
    assert e["MRE"] == pytest.approx(0.3)  # max(|ref|, 1) = 1 for the last entry
    assert e["RMSRE"] == pytest.approx(np.sqrt((0.01 + 0.01 + 0.0 + 0.09) / 4))
    assert accuracy.id_hessian(dyn.id_second_derivatives(robots.load("ur3"), *random_state(
        robots.load("ur3"))[:3])).shape == (6, 18, 18)
