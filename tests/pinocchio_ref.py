"""Reference values from Pinocchio (C++ through its Python bindings), sharing no code with ours."""

import numpy as np
import pinocchio as pin


def _sym_upper(M):
    M = np.array(M)
    return np.triu(M) + np.triu(M, 1).T


def rnea(model, q, v, a):
    pm = model.pin_model
    return np.array(pin.rnea(pm, pm.createData(), q, v, a))


def aba(model, q, v, tau):
    pm = model.pin_model
    return np.array(pin.aba(pm, pm.createData(), q, v, tau))


def crba(model, q):
    pm = model.pin_model
    return _sym_upper(pin.crba(pm, pm.createData(), q))


def minv(model, q):
    pm = model.pin_model
    return _sym_upper(pin.computeMinverse(pm, pm.createData(), q))


def rnea_derivatives(model, q, v, a):
    """(dtau_dq, dtau_dv, M)."""
    pm = model.pin_model
    d = pm.createData()
    dq, dv, M = pin.computeRNEADerivatives(pm, d, q, v, a)
    return np.array(dq), np.array(dv), _sym_upper(M)


def aba_derivatives(model, q, v, tau):
    """(a, da_dq, da_dv, Minv)."""
    pm = model.pin_model
    d = pm.createData()
    pin.computeABADerivatives(pm, d, q, v, tau)
    return np.array(d.ddq), np.array(d.ddq_dq), np.array(d.ddq_dv), _sym_upper(d.Minv)


def integrate(model, q, dq):
    return np.array(pin.integrate(model.pin_model, q, dq))


def difference(model, q0, q1):
    return np.array(pin.difference(model.pin_model, q0, q1))


def rnea_second_order_fd(model, q, v, a, eps=1e-6):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) by central differences of Pinocchio's
    computeRNEADerivatives and crba along q (+) eps e_k (pinocchio.integrate) and v + eps e_k."""
    n = model.nv
    d2q, d2v, d2qv, dM = (np.zeros((n, n, n)) for _ in range(4))
    for k in range(n):
        e = np.zeros(n)
        e[k] = eps
        qp, qm = integrate(model, q, e), integrate(model, q, -e)
        dqp, _, _ = rnea_derivatives(model, qp, v, a)
        dqm, _, _ = rnea_derivatives(model, qm, v, a)
        d2q[:, :, k] = (dqp - dqm) / (2 * eps)
        dM[:, :, k] = (crba(model, qp) - crba(model, qm)) / (2 * eps)
        dqp, dvp, _ = rnea_derivatives(model, q, v + e, a)
        dqm, dvm, _ = rnea_derivatives(model, q, v - e, a)
        d2qv[:, :, k] = (dqp - dqm) / (2 * eps)
        d2v[:, :, k] = (dvp - dvm) / (2 * eps)
    return d2q, d2v, d2qv, dM
