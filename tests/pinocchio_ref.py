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


def _stencil(f, h):
    """Fourth-order central difference of the scalar-parameter function f at 0:
    (-f(2h) + 8 f(h) - 8 f(-h) + f(-2h)) / (12 h); f returns a tuple of arrays."""
    fp2, fp1, fm1, fm2 = f(2 * h), f(h), f(-h), f(-2 * h)
    return tuple((-a + 8 * b - 8 * c + d) / (12 * h) for a, b, c, d in zip(fp2, fp1, fm1, fm2))


H = 1e-4  # with the fourth-order stencil: truncation ~ h^4, round-off ~ 1e-12 |f|


def rnea_second_order_fd(model, q, v, a, h=H):
    """(d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq) by central differences (fourth order) of Pinocchio's
    computeRNEADerivatives and crba along q (+) h e_k (pinocchio.integrate) and v + h e_k."""
    n = model.nv
    d2q, d2v, d2qv, dM = (np.zeros((n, n, n)) for _ in range(4))
    for k in range(n):
        e = np.eye(n)[k]
        along_q = lambda s: (rnea_derivatives(model, integrate(model, q, s * e), v, a)[0],
                             crba(model, integrate(model, q, s * e)))
        along_v = lambda s: rnea_derivatives(model, q, v + s * e, a)[:2]
        d2q[:, :, k], dM[:, :, k] = _stencil(along_q, h)
        d2qv[:, :, k], d2v[:, :, k] = _stencil(along_v, h)
    return d2q, d2v, d2qv, dM


def aba_second_order_fd(model, q, v, tau, h=H):
    """(d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq) by central differences (fourth order) of
    Pinocchio's computeABADerivatives (and its Minv) along q (+) h e_k and v + h e_k."""
    n = model.nv
    d2q, d2v, d2qv, d2t = (np.zeros((n, n, n)) for _ in range(4))
    for k in range(n):
        e = np.eye(n)[k]
        along_q = lambda s: aba_derivatives(model, integrate(model, q, s * e), v, tau)[1::2]
        along_v = lambda s: aba_derivatives(model, q, v + s * e, tau)[1:3]
        d2q[:, :, k], d2t[:, :, k] = _stencil(along_q, h)
        d2qv[:, :, k], d2v[:, :, k] = _stencil(along_v, h)
    return d2q, d2v, d2qv, d2t
