"""The exact expansion of (+): Jacobians against Pinocchio's dIntegrate, the contracted Hessian
against central differences (at a finite step and at the identity); the logarithm's contracted
Hessians against its full expansion."""

import numpy as np
import pinocchio as pin
import pytest

from dynamics import lie, robots
from helpers import rel_err


@pytest.mark.parametrize("name", ["hyq", "tree"])
def test_integrate_expansion_against_pinocchio_and_differences(name):
    m = (robots.random_tree(6, joint_types=robots.JOINT_TYPES, seed=1, floating_base=True)
         if name == "tree" else robots.load(name))
    n = m.nv
    rng = np.random.default_rng(0)
    for scale in (1.0, 0.0):  # a finite step and the identity (small-angle series)
        q = m.random_configuration(rng)
        w, lam = scale * rng.normal(size=n), rng.normal(size=n)
        Jq, Jw, H = lie.integrate_expansion(m, q, w, lam)
        np.testing.assert_allclose(Jq, pin.dIntegrate(m.pin_model, q, w, pin.ArgumentPosition.ARG0),
                                   atol=1e-12)
        np.testing.assert_allclose(Jw, pin.dIntegrate(m.pin_model, q, w, pin.ArgumentPosition.ARG1),
                                   atol=1e-12)
        q1 = m.integrate(q, w)
        G = lambda z: lam @ m.difference(q1, m.integrate(m.integrate(q, z[:n]), w + z[n:]))
        h, E = 1e-3, np.eye(2 * n) * 1e-3
        Hfd = np.array([[(G(E[j] + E[k]) - G(E[j] - E[k]) - G(E[k] - E[j]) + G(-E[j] - E[k]))
                         / (4 * h * h) for k in range(2 * n)] for j in range(2 * n)])
        assert rel_err(H, Hfd) < 1e-5


def _casadi_expansion(m, w):
    """Jq, Jw (n, n) and the Hessian blocks H (nb, 6, 12, 12) of (q (+) dq) (+) (w + dw) at 0 by
    CasADi AD of the exact symbolic Exp / Log of each Lie-group joint (identity Jacobian blocks
    elsewhere): a reference sharing no code with the compiled kernels."""
    import casadi as cs

    n = m.nv
    Jq, Jw = np.eye(n), np.eye(n)
    a = m.arrays
    blocks = [i for i in range(1, m.njoints) if int(a.jtype[i]) in lie.LIE_TYPES]
    H = np.zeros((len(blocks), lie.MAX_BLOCK, 2 * lie.MAX_BLOCK, 2 * lie.MAX_BLOCK))
    for b, i in enumerate(blocks):
        t, o, k = int(a.jtype[i]), int(a.iv[i]), int(a.nvj[i])
        dq, dw = cs.SX.sym("dq", k), cs.SX.sym("dw", k)
        wi = cs.DM(w[o:o + k])
        G = lie.log_group(t, cs.mtimes([lie.inverse(t, lie.exp_group(t, wi)),
                                        lie.exp_group(t, dq), lie.exp_group(t, wi + dw)]))
        z = cs.vertcat(dq, dw)
        Hz = cs.jacobian(cs.vec(cs.jacobian(G, z).T), z)  # row c * 2k + r: d2 G_c / dz_r dz
        f = cs.Function("J", [dq, dw], [cs.jacobian(G, dq), cs.jacobian(G, dw), Hz])
        jq, jw, hz = f(np.zeros(k), np.zeros(k))
        Jq[o:o + k, o:o + k], Jw[o:o + k, o:o + k] = np.array(jq), np.array(jw)
        H[b, :k, :2 * k, :2 * k] = np.array(hz).reshape(k, 2 * k, 2 * k)
    return Jq, Jw, H


@pytest.mark.parametrize("scale", [1.0, 0.05, 1e-3, 0.0])
def test_compiled_integrate_jacobians_equal_the_exact_casadi_expansion(scale):
    """dIntegrate in closed form (numba) against CasADi AD of the exact Exp / Log (series near the
    identity) to 1e-13, and against Pinocchio at a finite step and at the identity (between,
    Pinocchio's own small-angle approximations are off by up to ~3e-9 at w ~ 1e-3)."""
    m = robots.random_tree(8, joint_types=robots.JOINT_TYPES, seed=1, floating_base=True)
    rng = np.random.default_rng(3)
    Q = np.array([m.random_configuration(rng) for _ in range(4)])
    W = scale * rng.normal(size=(4, m.nv))
    e = lie.integrate_second_order(m, Q, W, hessian=False)
    for t in range(4):
        Jq, Jw, _ = _casadi_expansion(m, W[t])
        np.testing.assert_allclose(e.Jq[t], Jq, atol=1e-13)
        np.testing.assert_allclose(e.Jw[t], Jw, atol=1e-13)
        if scale in (1.0, 0.0):
            for arg, J in ((pin.ArgumentPosition.ARG0, e.Jq[t]), (pin.ArgumentPosition.ARG1, e.Jw[t])):
                np.testing.assert_allclose(J, pin.dIntegrate(m.pin_model, Q[t], W[t], arg),
                                           atol=1e-12)
    assert not np.any(e.H)  # hessian=False leaves the second-order blocks at zero


@pytest.mark.parametrize("scale", [1.0, 0.05, 1e-3, 0.0])
def test_compiled_integrate_hessians_equal_the_exact_casadi_expansion(scale):
    """The second-order blocks in closed form (Baker-Campbell-Hausdorff and the Hessian of the
    logarithm) against CasADi AD of the exact Exp / Log, on every Lie-group joint (free flyer,
    spherical, planar, unbounded revolute), from a finite step down to the identity."""
    m = robots.random_tree(10, joint_types=robots.JOINT_TYPES, seed=2, floating_base=True)
    types = {int(m.arrays.jtype[i]) for i in range(1, m.njoints)}
    assert set(lie.LIE_TYPES) <= types
    rng = np.random.default_rng(4)
    Q = np.array([m.random_configuration(rng) for _ in range(3)])
    W = scale * rng.normal(size=(3, m.nv))
    e = lie.integrate_second_order(m, Q, W)
    assert e.H.shape == (3, len(e.offsets), 6, 12, 12)
    for t in range(3):
        Jq, Jw, H = _casadi_expansion(m, W[t])
        np.testing.assert_allclose(e.Jq[t], Jq, atol=1e-13)
        np.testing.assert_allclose(e.H[t], H, atol=1e-12)
    if scale:
        assert np.abs(e.H).max() > 0.1 * scale  # the test compares non-trivial blocks


def test_contracted_log_hessians_equal_the_contraction_of_the_expansion():
    """The exact cost Hessians contract the logarithm's Hessian with W r without forming it
    (closed forms of ``se3_log_hessian_contracted`` / ``so3_log_hessian_contracted``): equal to
    sum_a lam_a H[a] of the full expansions (themselves checked against CasADi AD in
    tests/test_costs.py), from rotation angles of 1e-9 rad to 3 rad."""
    from dynamics.kernels import lie_group as lg

    rng = np.random.default_rng(11)
    for angle in (1e-9, 1e-4, 0.3, 1.0, 2.0, 3.0):
        for _ in range(5):
            axis = rng.normal(size=3)
            R = pin.exp3(angle * axis / np.linalg.norm(axis))
            p, lam = rng.normal(size=3), rng.normal(size=6)
            r, J, H = np.empty(6), np.empty((6, 6)), np.empty((6, 6, 6))
            lg.se3_log_expansion(R, p, r, J, H, True)
            rj, Jj, G = np.empty(6), np.empty((6, 6)), np.empty((6, 6))
            lg.se3_log_jacobian(R, p, rj, Jj)
            lg.se3_log_hessian_contracted(R, p, rj, Jj, lam, G)
            ref = np.einsum("a,ajk->jk", lam, H)
            assert np.abs(G - ref).max() <= 1e-13 * max(1.0, np.abs(ref).max()), angle
            w, A, H3 = np.empty(3), np.empty((3, 3)), np.empty((3, 3, 3))
            lg.so3_log_expansion(R, w, A, H3, True)
            G3 = np.empty((3, 3))
            lg.so3_log_hessian_contracted(w, A, lam[:3], G3)
            ref3 = np.einsum("a,ajk->jk", lam[:3], H3)
            assert np.abs(G3 - ref3).max() <= 1e-13 * max(1.0, np.abs(ref3).max()), angle
