"""First-order kernels against Pinocchio: RNEA, ABA, CRBA, M^-1, IDSVA, FDSVA (1e-10 relative)."""

import numpy as np
import pytest

import dynamics as dyn
from dynamics import robots
from helpers import TREES, random_state, rel_err
import pinocchio_ref as ref

TOL = 1e-10


def test_rnea_aba_mass_matrix(any_model):
    for seed in range(3):
        q, v, a, tau = random_state(any_model, seed)
        assert rel_err(dyn.rnea(any_model, q, v, a), ref.rnea(any_model, q, v, a)) < TOL
        assert rel_err(dyn.aba(any_model, q, v, tau), ref.aba(any_model, q, v, tau)) < TOL
        assert rel_err(dyn.mass_matrix(any_model, q), ref.crba(any_model, q)) < TOL
        assert rel_err(dyn.inverse_mass_matrix(any_model, q), ref.minv(any_model, q)) < TOL


def test_id_derivatives(any_model):
    for seed in range(3):
        q, v, a, _ = random_state(any_model, seed)
        d = dyn.id_derivatives(any_model, q, v, a)
        dq, dv, M = ref.rnea_derivatives(any_model, q, v, a)
        assert rel_err(d.tau, ref.rnea(any_model, q, v, a)) < TOL
        assert rel_err(d.dtau_dq, dq) < TOL
        assert rel_err(d.dtau_dv, dv) < TOL
        assert rel_err(d.M, M) < TOL
        assert d.d2tau_dq2 is None


@pytest.mark.parametrize("ipr", ["dmm", "aza", "ltdl", "auto"])
def test_fd_derivatives(any_model, ipr):
    for seed in range(2):
        q, v, _, tau = random_state(any_model, seed)
        f = dyn.fd_derivatives(any_model, q, v, tau, ipr=ipr)
        a, da_dq, da_dv, Minv = ref.aba_derivatives(any_model, q, v, tau)
        assert rel_err(f.a, a) < TOL
        assert rel_err(f.da_dq, da_dq) < TOL
        assert rel_err(f.da_dv, da_dv) < TOL
        assert rel_err(f.da_dtau, Minv) < TOL


def test_batch_equals_pointwise(any_model):
    T = 5
    states = [random_state(any_model, s) for s in range(T)]
    Q, V, A, TAU = (np.array(x) for x in zip(*states))
    tau_b = dyn.rnea(any_model, Q, V, A)
    acc_b = dyn.aba(any_model, Q, V, TAU)
    M_b = dyn.mass_matrix(any_model, Q)
    Minv_b = dyn.inverse_mass_matrix(any_model, Q)
    d_b = dyn.id_derivatives(any_model, Q, V, A)
    f_b = dyn.fd_derivatives(any_model, Q, V, TAU)
    assert tau_b.shape == (T, any_model.nv) and M_b.shape == (T, any_model.nv, any_model.nv)
    assert d_b.dtau_dq.shape == (T, any_model.nv, any_model.nv)
    for t in range(T):
        q, v, a, tau = states[t]
        np.testing.assert_array_equal(tau_b[t], dyn.rnea(any_model, q, v, a))
        np.testing.assert_array_equal(acc_b[t], dyn.aba(any_model, q, v, tau))
        np.testing.assert_array_equal(M_b[t], dyn.mass_matrix(any_model, q))
        np.testing.assert_array_equal(Minv_b[t], dyn.inverse_mass_matrix(any_model, q))
        d = dyn.id_derivatives(any_model, q, v, a)
        f = dyn.fd_derivatives(any_model, q, v, tau)
        for name in ("tau", "dtau_dq", "dtau_dv", "M"):
            np.testing.assert_array_equal(getattr(d_b, name)[t], getattr(d, name))
        for name in ("a", "da_dq", "da_dv", "da_dtau"):
            np.testing.assert_array_equal(getattr(f_b, name)[t], getattr(f, name))


def test_every_joint_type_is_covered():
    """The random trees used above really contain every supported joint type, fixed and floating."""
    seen = set()
    for n, fb, s in TREES:
        seen.update(robots.random_tree(n, floating_base=fb, seed=s, branching=0.4).joint_types())
    assert seen == {"revolute", "revolute-unbounded", "prismatic", "helical", "spherical", "planar",
                    "free-flyer"}
