"""The discrete step (semi-implicit Euler on the manifold): its second-order Taylor model has an
O(eps^3) error, with both ways of getting the second-order dynamics terms."""

import numpy as np
import pytest

import ddp
import dynamics as dyn
from ddp.compiled_problem import CompiledProblem
from ddp.phases import knot_contacts
from dynamics import robots


@pytest.mark.parametrize("name", ["ur3", "hyq", pytest.param("atlas", marks=pytest.mark.slow)])
@pytest.mark.parametrize("second_order", ["tensor", "contracted"])
def test_step_taylor_model_error_is_third_order(name, second_order):
    m = robots.load(name)
    n = m.nv
    B = np.eye(n)[:, 6:] if m.has_free_flyer else np.eye(n)
    F = ddp.SemiImplicitEuler(dyn.AnalyticalDynamics(m), 0.05, B)
    rng = np.random.default_rng(1)
    x = np.concatenate([m.random_configuration(rng), 2 * rng.normal(size=n)])
    u = 10 * rng.normal(size=F.nu)
    lam = rng.normal(size=2 * n)
    C = CompiledProblem(F, knot_contacts(m, [ddp.Phase(1)], F.dt)[0])  # the passes' records
    d, so = F.derivatives(x[None], u[None], C.second_order_mode(second_order))
    Fxx, Fxu, Fuu = C.step_hessians(0, lam, d, so)
    H = np.block([[Fxx, Fxu], [Fxu.T, Fuu]])
    J = np.concatenate([d.Fx[0], d.Fu[0]], axis=1)
    x1 = F.step(x, u)
    dz = rng.normal(size=2 * n + F.nu)
    errs = []
    for eps in (1e-2, 1e-3):
        z = eps * dz
        h = F.difference(x1, F.step(F.integrate(x, z[:2 * n]), u + z[2 * n:]))
        errs.append(abs(lam @ (h - J @ z) - 0.5 * z @ H @ z))
    # O(eps^3): a decade in eps is three decades in the error (two for a wrong Hessian)
    assert errs[1] < errs[0] * 3e-3, errs
