"""The discrete step x+ = F(x, u) on the state manifold, through the Dynamics protocol, and its
exact first and second derivatives.

State x = (q, v) (size nq + nv), tangent dx = (dq, dv) (size 2 nv), control u (size nu),
generalized force tau = B u with the actuation matrix B (nv x nu, identity by default).

:class:`SemiImplicitEuler` (as Crocoddyl's Euler integrator)::

    a = FD(q, v, B u),   v+ = v + dt a,   q+ = q (+) dt v+

The formula, its Jacobians ``Fx``, ``Fu`` and its second-order terms (the Hessians ``Fxx``,
``Fxu``, ``Fuu`` of ``lam . h`` for a co-state ``lam`` at x+, with h(dx, du) = F(x (+) dx,
u + du) (-) F(x, u)) are written once, in :mod:`dynamics.kernels.step`; this class evaluates
them for any backend, knot by knot through its ``aba`` and batched through its
``fd_derivatives``.  The solver evaluates the second-order terms inside its compiled backward
pass (:mod:`ddp.kernels.passes`); :meth:`SemiImplicitEuler.hessians` gives them for one knot
through the same kernel.
"""

from __future__ import annotations

import os

import numpy as np

from dynamics import lie, robots

from .kernels import assemble_step_derivatives, num_chunks, step_velocities
from .kernels import contact_knots as _contact_knots
from .kernels import passes as _passes
from .kernels.records import (LINKED_SECOND_ORDER, FDTensors, Model, SecondOrder,
                              SecondOrderMode, Step, StepDerivatives, empty_step_derivatives,
                              kkt_factors)
from .local_model import second_order_mode
from .phases import Phase, knot_contacts

_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


class SemiImplicitEuler:
    """Semi-implicit Euler step of a :class:`~dynamics.protocol.Dynamics` backend (see module
    docstring).  ``actuation``: (nv, nu) matrix B, or None for full actuation; ``contacts``: the
    :data:`~ddp.kernels.records.KnotContacts` of a problem's knots (None: free flight), which
    the compiled passes step (:mod:`ddp.phases`).

    ``record``: the :data:`~ddp.kernels.records.Step` of the compiled passes (dt, B and the
    tangent offsets and sizes of the Lie-group joints); ``kernel_model``: the
    :data:`~ddp.kernels.records.Model` they read (a vector space for a system without a
    RobotModel)."""

    def __init__(self, dynamics, dt: float, actuation=None, contacts=None):
        self.dynamics = dynamics
        self.nq, self.nv = int(dynamics.nq), int(dynamics.nv)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt: expected a positive time step; got {dt!r}")
        self.dt = float(dt)
        B = np.eye(self.nv) if actuation is None else np.asarray(actuation, dtype=float)
        if B.ndim != 2 or B.shape[0] != self.nv or not np.all(np.isfinite(B)):
            raise ValueError(f"actuation: expected a finite ({self.nv}, nu) matrix; got shape "
                             f"{B.shape}")
        self.B = np.ascontiguousarray(B)
        self.nu = B.shape[1]
        self.nx, self.ndx = self.nq + self.nv, 2 * self.nv
        model = dynamics.model
        if model is None and self.nq != self.nv:
            raise ValueError("dynamics: a system without a RobotModel must have nq == nv")
        self.kernel_model = Model(*(model if model is not None
                                    else robots.vector_space(self.nv)).kernel_args)
        none = np.zeros(0, dtype=np.int64)
        offsets, sizes = (none, none) if model is None else lie.lie_blocks(model)
        if contacts is None:  # free flight (a problem gives the contacts of each of its knots)
            contacts = knot_contacts(model, [Phase(1)], self.dt)[0]
        self.record = Step(self.dt, self.B, offsets, sizes, contacts)
        #: whether some knot has contacts (or is an impact)
        self.has_contacts = bool(np.any(contacts.size > 0))
        self._linked = set()

    def link_contact_kernel(self, which, **records):
        """Link the compiled kernel of the knots with contacts ``which`` (a slot of
        :mod:`ddp.kernels.records`: LINKED_STEP, LINKED_DERIVATIVES, LINKED_SECOND_ORDER) for
        the ``records`` of the call that reaches it (:func:`ddp.kernels.contact_knots.link`), once
        per process; nothing when no knot has contacts (the kernels then never compile)."""
        key = (which, os.getpid())
        if self.has_contacts and key not in self._linked:
            _contact_knots.link(which, self.kernel_model, self.record, **records)
            self._linked.add(key)

    def second_order_mode(self, second_order: str) -> SecondOrderMode:
        """The :class:`~ddp.kernels.records.SecondOrderMode` of DDP for a ``second_order``
        setting on this backend."""
        try:
            return second_order_mode(second_order, self.nv, self.dynamics.compiled)
        except ValueError as e:
            raise ValueError(str(e).replace("this backend",
                                            type(self.dynamics).__name__)) from None

    # ------------------------------------------------------------------ state manifold
    def integrate(self, x, dx):
        """x (+) dx, batched or not."""
        x, dx = np.asarray(x, dtype=float), np.asarray(dx, dtype=float)
        q = self.dynamics.integrate(x[..., :self.nq], dx[..., :self.nv])
        return np.concatenate([q, x[..., self.nq:] + dx[..., self.nv:]], axis=-1)

    def difference(self, x0, x1):
        """x1 (-) x0 (tangent at x0), batched or not."""
        x0, x1 = np.asarray(x0, dtype=float), np.asarray(x1, dtype=float)
        dq = self.dynamics.difference(x0[..., :self.nq], x1[..., :self.nq])
        return np.concatenate([dq, x1[..., self.nq:] - x0[..., self.nq:]], axis=-1)

    # ------------------------------------------------------------------ step
    def step(self, x, u):
        """F(x, u) for one knot (nx,), (nu,) or a batch (T, nx), (T, nu).  A diverged step gives
        a NaN state (no exception: the solver reports it)."""
        x, u = np.asarray(x, dtype=float), np.asarray(u, dtype=float)
        single = x.ndim == 1
        X, U = np.atleast_2d(x), np.atleast_2d(u)
        q, v = X[:, :self.nq], np.ascontiguousarray(X[:, self.nq:])
        with np.errstate(all="ignore"):
            a = _returned("aba", "a", self.dynamics.aba(q, v, U @ self.B.T), v.shape)
        v1, w = np.empty_like(v), np.empty_like(v)
        step_velocities(v, a, self.dt, v1, w)
        bad = ~np.all(np.isfinite(v1), axis=-1)
        if np.any(bad):
            w[bad] = 0.0
        x1 = np.concatenate([np.reshape(self.dynamics.integrate(q, w), q.shape), v1], axis=-1)
        x1[bad] = np.nan
        return x1[0] if single else x1

    def derivatives(self, xs, us, mode=SecondOrderMode.NONE):
        """(:data:`~ddp.kernels.records.StepDerivatives`, :data:`~ddp.kernels.records.SecondOrder`)
        of a batch (T, nx), (T, nu), with one batched (parallel) FD call; with ``mode`` TENSORS
        that call also returns the full FD-SO tensors, with CONTRACTED each knot's acceleration
        and M^-1 are kept for the contracted sweep."""
        xs, us = np.atleast_2d(xs), np.atleast_2d(us)
        mode = SecondOrderMode(mode)
        T, n, dt = xs.shape[0], self.nv, self.dt
        q, v = np.ascontiguousarray(xs[:, :self.nq]), np.ascontiguousarray(xs[:, self.nq:])
        tau = np.ascontiguousarray(us @ self.B.T)
        fd = self.dynamics.fd_derivatives(q, v, tau,
                                          order=2 if mode == SecondOrderMode.TENSORS else 1)
        a = _returned("fd_derivatives", "a", fd.a, (T, n))
        da_dq, da_dv, da_dtau = (_returned("fd_derivatives", k, getattr(fd, k), (T, n, n))
                                 for k in ("da_dq", "da_dv", "da_dtau"))
        v1, w = np.empty_like(v), np.empty_like(v)
        step_velocities(v, a, dt, v1, w)
        e = self.dynamics.integrate_second_order(q, w, hessian=mode != SecondOrderMode.NONE)
        d = empty_step_derivatives(T, n, self.nu)
        d.da_dq[:], d.da_dv[:] = da_dq, da_dv
        d.Jq[:], d.Jw[:] = e.Jq, e.Jw
        assemble_step_derivatives(self.B, dt, d.da_dq, d.da_dv, da_dtau, d.Jq, d.Jw,
                                  self.record.lie_offsets, self.record.lie_sizes, d.Fx, d.Fu,
                                  d.da_du, num_chunks(T))
        empty4 = np.zeros((T, 0, 0, 0))
        tensors = FDTensors(empty4, empty4, empty4, empty4)
        if mode == SecondOrderMode.TENSORS:
            tensors = FDTensors(*(_returned("fd_derivatives(order=2)", k, getattr(fd, k),
                                            (T, n, n, n)) for k in FDTensors._fields))
        contracted = mode == SecondOrderMode.CONTRACTED
        so = SecondOrder(int(mode), 0, 0, tensors, q, v, a if contracted else np.zeros((T, 0)),
                         da_dtau if contracted else np.zeros((T, 0, 0)),
                         np.ascontiguousarray(e.H, dtype=float), kkt_factors(0, 0, 0, 0))
        return d, so

    def hessians(self, x, u, lam, derivatives: StepDerivatives, second_order: SecondOrder,
                 t: int):
        """(Fxx, Fxu, Fuu) of ``lam . h`` at knot t (lam (2 nv,) tangent at x+), by the same
        compiled function as the backward pass."""
        if second_order.mode == SecondOrderMode.NONE:
            raise ValueError("second_order: derivatives computed without second-order data")
        self.link_contact_kernel(LINKED_SECOND_ORDER, derivatives=derivatives,
                                 second_order=second_order)
        return _passes.step_hessians(t, np.ascontiguousarray(lam, dtype=float),
                                     self.kernel_model, self.record, derivatives, second_order)


def _returned(method, field, x, shape):
    """What a Dynamics' ``method`` returned as ``field``, checked once per call before it
    enters compiled code: ``shape`` (T, ...) for a batch of T knots (a single knot's array may
    drop the leading 1), float, C-contiguous.  ValueError naming the method and the field."""
    if x is None:
        raise ValueError(f"{method}: returned no {field}; expected an array of shape {shape}")
    if np.iscomplexobj(x):
        raise ValueError(f"{method}: {field}: expected real values; got complex values")
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        got = (f"an array of {x.dtype}" if isinstance(x, np.ndarray) else type(x).__name__)
        raise ValueError(f"{method}: {field}: expected a float array of shape {shape}; got "
                         f"{got}") from None
    if arr.shape not in (shape, shape[1:] if shape[0] == 1 else shape):
        raise ValueError(f"{method}: {field}: expected shape {shape} (knots first); got "
                         f"{arr.shape}")
    return np.ascontiguousarray(arr.reshape(shape))
