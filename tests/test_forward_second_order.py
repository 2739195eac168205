"""FDSVA-SO against central differences of Pinocchio's computeABADerivatives (and its Minv) on
the manifold; all Inner/Outer variants agree; the lam-contracted form equals the contraction of
the full tensors; batching; output reuse."""

import numpy as np
import pytest

import dynamics as dyn
from dynamics import robots
from helpers import random_state, rel_err
import pinocchio_ref as ref

FIELDS = ("d2a_dq2", "d2a_dv2", "d2a_dqdv", "d2a_dtaudq")
def test_against_pinocchio_finite_differences(so_model):
    q, v, _, tau = random_state(so_model, 1)
    f = dyn.fd_second_derivatives(so_model, q, v, tau)
    refs = ref.aba_second_order_fd(so_model, q, v, tau)
    for name, r in zip(FIELDS, refs):
        assert rel_err(getattr(f, name), r) < 1e-6, name
    a, da_dq, da_dv, Minv = ref.aba_derivatives(so_model, q, v, tau)
    assert rel_err(f.a, a) < 1e-10 and rel_err(f.da_dq, da_dq) < 1e-10
    assert rel_err(f.da_dv, da_dv) < 1e-10 and rel_err(f.da_dtau, Minv) < 1e-10


def test_inner_outer_variants_agree(so_model):
    q, v, _, tau = random_state(so_model, 2)
    base = dyn.fd_second_derivatives(so_model, q, v, tau, inner="dtm", outer="dtm")
    for inner, outer in (("idfoza", "dtm"), ("dtm", "aza"), ("idfoza", "aza")):
        other = dyn.fd_second_derivatives(so_model, q, v, tau, inner=inner, outer=outer)
        for name in FIELDS:
            assert rel_err(getattr(other, name), getattr(base, name)) < 1e-10, (inner, outer, name)


def test_contracted_equals_contracted_full_tensors(so_model):
    q, v, _, tau = random_state(so_model, 3)
    lam = np.random.default_rng(3).normal(size=so_model.nv)
    full = dyn.fd_second_derivatives(so_model, q, v, tau)
    con = dyn.fd_second_derivatives(so_model, q, v, tau, lam=lam)
    for name in FIELDS:
        expected = np.einsum("i,ijk->jk", lam, getattr(full, name))
        assert getattr(con, name).shape == (so_model.nv, so_model.nv)
        assert rel_err(getattr(con, name), expected) < 1e-10, name
    for name in ("a", "da_dq", "da_dv", "da_dtau"):
        np.testing.assert_allclose(getattr(con, name), getattr(full, name), rtol=0, atol=1e-12 *
                                   max(1.0, np.abs(getattr(full, name)).max()))


def test_batch_equals_pointwise(any_model):
    T = 3
    states = [random_state(any_model, s) for s in range(T)]
    Q, V, _, TAU = (np.array(x) for x in zip(*states))
    LAM = np.random.default_rng(0).normal(size=(T, any_model.nv))
    full = dyn.fd_second_derivatives(any_model, Q, V, TAU)
    con = dyn.fd_second_derivatives(any_model, Q, V, TAU, lam=LAM)
    for t in range(T):
        p = dyn.fd_second_derivatives(any_model, Q[t], V[t], TAU[t])
        pc = dyn.fd_second_derivatives(any_model, Q[t], V[t], TAU[t], lam=LAM[t])
        for name in ("a", "da_dq", "da_dv", "da_dtau") + FIELDS:
            np.testing.assert_array_equal(getattr(full, name)[t], getattr(p, name))
            np.testing.assert_array_equal(getattr(con, name)[t], getattr(pc, name))


def test_output_reuse_and_bad_options():
    m = robots.load("hyq")
    q, v, _, tau = random_state(m, 0)
    lam = np.ones(m.nv)
    first = dyn.fd_second_derivatives(m, q, v, tau, lam=lam)
    q2, v2, _, tau2 = random_state(m, 1)
    again = dyn.fd_second_derivatives(m, q2, v2, tau2, lam=lam, out=first)
    fresh = dyn.fd_second_derivatives(m, q2, v2, tau2, lam=lam)
    assert np.shares_memory(again.d2a_dq2, first.d2a_dq2)
    np.testing.assert_array_equal(again.d2a_dq2, fresh.d2a_dq2)
    with pytest.raises(ValueError, match="out: expected the FDDerivatives of an earlier call"):
        dyn.fd_second_derivatives(m, q, v, tau, out=first)  # full tensors into a lam-sized buffer
    with pytest.raises(ValueError, match="inner: expected 'auto', 'dtm' or 'idfoza'; got 'x'"):
        dyn.fd_second_derivatives(m, q, v, tau, inner="x")
    with pytest.raises(ValueError, match="outer: expected 'auto', 'dtm' or 'aza'"):
        dyn.fd_second_derivatives(m, q, v, tau, outer="dmm")
    with pytest.raises(ValueError, match=r"lam: expected shape \(18,\)"):
        dyn.fd_second_derivatives(m, q, v, tau, lam=np.ones(3))
