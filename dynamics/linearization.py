"""Linearization of the dynamics about a state and input: the geometric route of Bos, Traversaro,
Pucci and Saccon (2022) and the FDSVA route, cross-checking each other.

Public building blocks (the paper's algorithms, :mod:`dynamics.kernels.geometric`):

* :func:`eidamb` (Table 4): extended inverse dynamics, ``[base wrench; joint torques]``;
* :func:`eidamb_derivatives` (Tables 5-8): its derivatives in q (local perturbations), v, and
  for a free-flyer root in the base pose with the inertial base twist held fixed;
* :func:`immamb` (Table 9): the inverse mass matrix.

:func:`linearize` returns the :class:`Linearization` ``d(dx)/dt = A dx + B du`` (continuous time)
or ``dx+ = A dx + B du`` (one semi-implicit Euler step of ``dt``, as the DDP solver's ``Fx``,
``Fu``) in the tangent coordinates ``dx = (dq, dv)`` with ``q = q_ref (+) dq``, and ``u = tau``.
Every function takes one point or a batch with a leading knot axis.

Conventions of the base twist (free-flyer root), ``base_twist=``:

* ``"body"``: the velocity is Pinocchio's, the base twist local (``v_0``, body frame):
  ``A = [[-ad_v, I], [da/dq, da/dv]]``, ``B = [[0], [M^-1]]``.
* ``"inertial"``: the base velocity coordinates are the inertial twist ``nu = Ad(H) v_0``
  (``^Av_{A,0}``, expressed in the world frame); the pose error stays ``H = H_ref exp(xi)``.
  Then ``d(xi)/dt = ^0X_A d(nu)``, ``d(nu)/dt = Ad(H) (da_0 - crm(a_0) xi)``, and the pose
  derivative of the accelerations is taken with ``nu`` held fixed (Table 5).  Continuous time
  only: the solver's discrete step is written in the body twist.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np

from .algorithms import fd_derivatives
from .inputs import prepare
from .jit import num_chunks, run_in_chunks
from .kernels import geometric as _geo
from .kernels.step import assemble_step_chunk, assemble_step_derivatives, step_velocities
from .lie import integrate_second_order

METHODS = ("geometric", "fdsva")
BASE_TWISTS = ("body", "inertial")


@dataclass
class EIDAmbDerivatives:
    """:func:`eidamb_derivatives`: tau (nv,), dtau_dq, dtau_dv (nv, nv) in Pinocchio's
    convention (local perturbations; base columns with the body twist fixed), and dtau_dH (nv, 6),
    the left-trivialized pose derivative with the inertial base twist fixed (Table 5; None without
    a free-flyer root).  Batched: a leading T axis."""

    tau: np.ndarray
    dtau_dq: np.ndarray
    dtau_dv: np.ndarray
    dtau_dH: np.ndarray | None


@dataclass
class Linearization:
    """``A`` (2nv, 2nv) and ``B`` (2nv, nv) (batched: leading T axis) about (q, v, tau), with the
    forward-dynamics pieces they are built from: ``a`` (nv,), ``da_dq``, ``da_dv``, ``Minv``
    (nv, nv), and with ``base_twist="inertial"`` ``da_dH`` (nv, 6), the pose derivative at fixed
    inertial twist (else None).  ``dt`` None for continuous time.  With the defaults
    (geometric, continuous time, body twist) ``da_dq``, ``da_dv`` and ``Minv`` are views of the
    blocks of ``A`` and ``B`` they fill, as Pinocchio's results are fields of its ``Data``."""

    A: np.ndarray
    B: np.ndarray
    a: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    Minv: np.ndarray
    da_dH: np.ndarray | None
    dt: float | None
    method: str
    base_twist: str


def _ncol(model) -> int:
    return 2 * model.nv + (6 if model.has_free_flyer else 0)


#: model -> {ncol: (seg, nseg, nslot, slot)}, see :func:`column_support`
_SUPPORT = weakref.WeakKeyDictionary()


def column_support(model, ncol: int):
    """(seg, nseg, nslot, slot): where each of the ``ncol`` columns of the EIDAmb derivatives can
    be non-zero (``geometric.derivative_column_support``) and which columns the sweep carries at
    each body (``geometric.column_slots``), the arguments of the geometric batch kernels.  They
    depend on the model only and are computed once per model (about 1 us per call saved)."""
    per_model = _SUPPORT.setdefault(model, {})
    if ncol not in per_model:
        per_model[ncol] = _geo.column_support(*model.kernel_args, int(ncol))
    return per_model[ncol]


def eidamb(model, q, v, a) -> np.ndarray:
    """EIDAmb (Table 4): ``[base wrench; joint torques]`` = ``rnea(q, v, a)``, (nv,) or (T, nv)."""
    b = prepare(model, q=q, v=v, a=a)
    tau = np.empty((b.T, model.nv))
    run_in_chunks(_geo.eidamb_batch, _geo.eidamb_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["a"], tau), num_chunks(b.T))
    return b.unbatch(tau)


def eidamb_derivatives(model, q, v, a) -> EIDAmbDerivatives:
    """EIDAmb and its derivatives by Tables 5-8 (see :class:`EIDAmbDerivatives`)."""
    b = prepare(model, q=q, v=v, a=a)
    n = model.nv
    tau, D = np.empty((b.T, n)), np.empty((b.T, n, _ncol(model)))
    run_in_chunks(_geo.eidamb_derivatives_batch, _geo.eidamb_derivatives_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["a"], tau, D), num_chunks(b.T))
    dH = b.unbatch(D[:, :, 2 * n:]) if model.has_free_flyer else None
    return EIDAmbDerivatives(*b.unbatch((tau, D[:, :, :n], D[:, :, n:2 * n])), dH)


def immamb(model, q) -> np.ndarray:
    """IMMAmb (Table 9): M(q)^-1, (nv, nv) or (T, nv, nv)."""
    b = prepare(model, q=q)
    Minv = np.empty((b.T, model.nv, model.nv))
    run_in_chunks(_geo.immamb_batch, _geo.immamb_chunk, (*model.kernel_args, b["q"], Minv),
                  num_chunks(b.T))
    return b.unbatch(Minv)


def geometric_fd(model, Q, V, TAU, ncol):
    """The forward-dynamics derivatives of the geometric route at every knot of (Q, V, TAU)
    (T, nq / nv / nv): a (T, nv), Minv (T, nv, nv) and dacc (T, nv, ``ncol``), the derivatives of
    a in the first ``ncol`` columns of the model's :func:`column_support`."""
    T, n = len(Q), model.nv
    a, Minv, dacc = np.empty((T, n)), np.empty((T, n, n)), np.empty((T, n, ncol))
    run_in_chunks(_geo.geometric_fd_batch, _geo.geometric_fd_chunk,
                  (*model.kernel_args, Q, V, TAU, column_support(model, ncol), a, Minv, dacc),
                  num_chunks(T))
    return a, Minv, dacc


def linearize(model, q, v, tau, dt=None, method: str = "geometric",
              base_twist: str = "body") -> Linearization:
    """The linearized dynamics about (q, v, tau) (see the module docstring for A and B).

    ``method``: ``"geometric"`` (EIDAmb derivatives and IMMAmb, the paper's route) or
    ``"fdsva"`` (the FDSVA kernels).  ``dt``: None for continuous time, else the Jacobians of
    the semi-implicit Euler step ``v+ = v + dt a``, ``q+ = q (+) dt v+`` (equal to the DDP
    solver's ``Fx``, ``Fu`` with full actuation).  ``base_twist``: ``"body"`` or
    ``"inertial"`` (free-flyer root, continuous time only).
    """
    if method not in METHODS:
        raise ValueError(f"method: expected one of {', '.join(map(repr, METHODS))}; got {method!r}")
    if base_twist not in BASE_TWISTS:
        raise ValueError(f"base_twist: expected 'body' or 'inertial'; got {base_twist!r}")
    if dt is not None:
        if isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating)) \
                or not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected None (continuous time) or a positive time step; "
                             f"got {dt!r}")
        dt = float(dt)
    if base_twist == "inertial":
        if not model.has_free_flyer:
            raise ValueError(f"base_twist: 'inertial' needs a free-flyer root joint; "
                             f"{model.name} has none")
        if dt is not None:
            raise ValueError("dt: the discrete step is written in the body twist; use "
                             "base_twist='body' with dt, or dt=None")
    b = prepare(model, q=q, v=v, tau=tau)
    n, T = model.nv, b.T
    Q, V, TAU = b["q"], b["v"], b["tau"]
    if method == "geometric" and dt is None and base_twist == "body":  # assembled compiled
        a, A, B = np.empty((T, n)), np.empty((T, 2 * n, 2 * n)), np.empty((T, 2 * n, n))
        run_in_chunks(_geo.geometric_linearization_batch, _geo.geometric_linearization_chunk,
                      (*model.kernel_args, Q, V, TAU, column_support(model, 2 * n), a, A, B),
                      num_chunks(T))
        return Linearization(*b.unbatch((A, B, a, A[:, n:, :n], A[:, n:, n:], B[:, n:])), None,
                             None, method, base_twist)
    if method == "geometric":
        ncol = 2 * n + (6 if base_twist == "inertial" else 0)
        a, Minv, dacc = geometric_fd(model, Q, V, TAU, ncol)
        da_dq, da_dv = dacc[:, :, :n], dacc[:, :, n:2 * n]
        da_dH = dacc[:, :, 2 * n:] if base_twist == "inertial" else None
    else:
        f = fd_derivatives(model, Q, V, TAU)
        a, da_dq, da_dv, Minv = f.a, f.da_dq, f.da_dv, f.da_dtau
        da_dH = None
        if base_twist == "inertial":  # Table 5 = body-fixed pose derivative + D_v crm(v_0)
            da_dH = da_dq[:, :, :6] + da_dv[:, :, :6] @ _ad(model, V)[:, :6, :6]
    if dt is None and base_twist == "body":
        A, B = _continuous_body(model, V, da_dq, da_dv, Minv)
    elif dt is None:
        A, B = _continuous_inertial(model, Q, V, a, da_dq, da_dv, da_dH, Minv)
    else:
        A, B = _semi_implicit_euler(model, Q, V, dt, a, da_dq, da_dv, Minv)
    dH = b.unbatch(da_dH) if da_dH is not None else None
    return Linearization(*b.unbatch((A, B, a, da_dq, da_dv, Minv)), dH, dt, method, base_twist)


# ---------------------------------------------------------------------------------- assembly
def _ad(model, X):
    """ad_x (T, nv, nv) of tangent vectors X (T, nv) (``geometric.tangent_ad_point``; its
    free-flyer block is crm(x[:6]))."""
    out = np.empty((len(X), model.nv, model.nv))
    run_in_chunks(_geo.tangent_ad_batch, _geo.tangent_ad_chunk,
                  (*model.kernel_args, np.ascontiguousarray(X), out), num_chunks(len(X)))
    return out


def _continuous_body(model, V, da_dq, da_dv, Minv):
    T, n = V.shape
    A, B = np.empty((T, 2 * n, 2 * n)), np.empty((T, 2 * n, n))
    run_in_chunks(_geo.continuous_linearization_batch, _geo.continuous_linearization_chunk,
                  (*model.kernel_args, V, *map(np.ascontiguousarray, (da_dq, da_dv, Minv)), A,
                   B), num_chunks(T))
    return A, B


def _continuous_inertial(model, Q, V, a, da_dq, da_dv, da_dH, Minv):
    T, n = V.shape
    Ad = np.zeros((T, 6, 6))  # Ad(H)
    run_in_chunks(_geo.base_adjoint_batch, _geo.base_adjoint_chunk, (*model.kernel_args, Q, Ad),
                  num_chunks(T))
    AdInv = np.linalg.inv(Ad)  # ^0X_A
    A = np.zeros((T, 2 * n, 2 * n))
    A[:, :6, n:n + 6] = AdInv
    A[:, 6:n, :n] = -_ad(model, V)[:, 6:, :]
    A[:, 6:n, n + 6:] = np.eye(n - 6)
    # acceleration rows in (xi, ds, dnu, dr): the base twist columns go through ^0X_A
    rows = np.concatenate([da_dH, da_dq[:, :, 6:], da_dv[:, :, :6] @ AdInv, da_dv[:, :, 6:]],
                          axis=2)
    rows[:, :6, :6] -= _ad(model, a)[:, :6, :6]  # crm(a_0)
    A[:, n:n + 6] = Ad @ rows[:, :6]
    A[:, n + 6:] = rows[:, 6:]
    B = np.zeros((T, 2 * n, n))
    B[:, n:n + 6] = Ad @ Minv[:, :6]
    B[:, n + 6:] = Minv[:, 6:]
    return A, B


def _semi_implicit_euler(model, Q, V, dt, a, da_dq, da_dv, Minv):
    """Fx, Fu of ``v+ = v + dt a``, ``q+ = q (+) dt v+``, assembled by the solver's kernel
    (:mod:`dynamics.kernels.step`) with full actuation, B = I (its M^-1 B output is
    discarded)."""
    T, n = V.shape
    V1, W = np.empty((T, n)), np.empty((T, n))
    step_velocities(np.ascontiguousarray(V, dtype=float), np.ascontiguousarray(a, dtype=float),
                    dt, V1, W)
    e = integrate_second_order(model, Q, W, hessian=False)
    A = np.empty((T, 2 * n, 2 * n))
    B = np.empty((T, 2 * n, n))
    run_in_chunks(assemble_step_derivatives, assemble_step_chunk,
                  (np.eye(n), dt, *map(np.ascontiguousarray, (da_dq, da_dv, Minv, e.Jq, e.Jw)),
                   e.offsets, e.sizes, A, B, np.empty((T, n, n))), num_chunks(T))
    return A, B
