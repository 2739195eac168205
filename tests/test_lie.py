"""The exact expansion of (+): Jacobians against Pinocchio's dIntegrate, the contracted Hessian
against central differences (at a finite step and at the identity)."""

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
