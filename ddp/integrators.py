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
``fd_derivatives``.  An impact knot maps x = (q, v) to (q, v+(q, v)) through the backend's
``impulse_derivatives`` (:meth:`SemiImplicitEuler.impact_step`,
:meth:`SemiImplicitEuler.impact_derivatives`).  The solver evaluates the second-order terms
inside its compiled backward pass (:mod:`ddp.kernels.passes`);
:meth:`ddp.problem.ShootingProblem.step_hessians` gives them for one knot through the same
kernel.
"""

from __future__ import annotations

import numpy as np

from dynamics import lie

from .kernels import (assemble_step_chunk, assemble_step_derivatives, num_chunks, run_in_chunks,
                      step_velocities)
from .kernels.records import (FDTensors, SecondOrder, SecondOrderMode, empty_step_derivatives,
                              kkt_factors)


def lie_blocks(model):
    """The tangent offsets and sizes of the Lie-group joints of ``model`` (none for a system
    without a RobotModel)."""
    none = np.zeros(0, dtype=np.int64)
    return (none, none) if model is None else lie.lie_blocks(model)


_EMPTY_INDEX = np.zeros(0, dtype=np.int64)


class SemiImplicitEuler:
    """Semi-implicit Euler step of a :class:`~dynamics.protocol.Dynamics` backend (see module
    docstring).  ``actuation``: (nv, nu) matrix B, or None for full actuation.  The compiled
    passes read the same step from the problem's
    :class:`~ddp.compiled_problem.CompiledProblem`."""

    def __init__(self, dynamics, dt: float, actuation=None):
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
        #: the tangent offsets and sizes of the Lie-group joints (where (+) is not +)
        self.lie_offsets, self.lie_sizes = lie_blocks(model)
        #: a robot whose every joint is a vector space (a Lie-group joint has nq > nv): (+) and
        #: (-) are + and - (a backend without a model keeps its own manifold operations)
        self.euclidean = model is not None and self.nq == self.nv

    # ------------------------------------------------------------------ state manifold
    def integrate(self, x, dx):
        """x (+) dx, batched or not."""
        x, dx = np.asarray(x, dtype=float), np.asarray(dx, dtype=float)
        if self.euclidean:
            return x + dx
        q = self.dynamics.integrate(x[..., :self.nq], dx[..., :self.nv])
        return np.concatenate([q, x[..., self.nq:] + dx[..., self.nv:]], axis=-1)

    def difference(self, x0, x1):
        """x1 (-) x0 (tangent at x0), batched or not."""
        x0, x1 = np.asarray(x0, dtype=float), np.asarray(x1, dtype=float)
        if self.euclidean:  # a subtraction, no kernel call
            return x1 - x0
        dq = self.dynamics.difference(x0[..., :self.nq], x1[..., :self.nq])
        return np.concatenate([dq, x1[..., self.nq:] - x0[..., self.nq:]], axis=-1)

    # ------------------------------------------------------------------ step
    def step(self, x, u, dynamics=None):
        """F(x, u) for one knot (nx,), (nu,) or a batch (T, nx), (T, nu), through ``dynamics``
        (None: the integrator's; a phase's backend on its contacts).  A diverged step gives a
        NaN state (no exception: the solver reports it)."""
        dynamics = self.dynamics if dynamics is None else dynamics
        x, u = np.asarray(x, dtype=float), np.asarray(u, dtype=float)
        single = x.ndim == 1
        X, U = np.atleast_2d(x), np.atleast_2d(u)
        q, v = X[:, :self.nq], np.ascontiguousarray(X[:, self.nq:])
        with np.errstate(all="ignore"):
            a = _returned("aba", "a", dynamics.aba(q, v, U @ self.B.T), v.shape)
        v1, w = np.empty_like(v), np.empty_like(v)
        step_velocities(v, a, self.dt, v1, w)
        bad = ~np.all(np.isfinite(v1), axis=-1)
        if np.any(bad):
            w[bad] = 0.0
        x1 = np.concatenate([np.reshape(self.dynamics.integrate(q, w), q.shape), v1], axis=-1)
        x1[bad] = np.nan
        return x1[0] if single else x1

    def impact_step(self, x, dynamics, restitution=0.0):
        """(q, v+) of the states x (nx,) or (T, nx) at an impact on the contacts of
        ``dynamics`` (a backend with ``impulse_derivatives``); NaN where it diverged."""
        x = np.asarray(x, dtype=float)
        X = np.atleast_2d(x)
        q, v = np.ascontiguousarray(X[:, :self.nq]), np.ascontiguousarray(X[:, self.nq:])
        with np.errstate(all="ignore"):
            e = dynamics.impulse_derivatives(q, v, restitution, 0)
        v1 = _returned("impulse_derivatives", "v_plus", e.v_plus, v.shape)
        x1 = np.concatenate([q, v1], axis=-1)
        x1[~np.all(np.isfinite(v1), axis=-1)] = np.nan
        return x1[0] if x.ndim == 1 else x1

    def impact_derivatives(self, xs, dynamics, restitution=0.0, mode=SecondOrderMode.NONE,
                           force_rows=0):
        """:meth:`derivatives` of a batch of impact knots (T, nx) on the contacts of
        ``dynamics`` (a backend with ``impulse_derivatives``): Fx = [[I, 0], [dv+/dq, dv+/dv]],
        Fu = 0 (da_dq, da_dv hold dv+/dq, dv+/dv), and with ``mode`` TENSORS the tensors of v+
        in (q, q) and (q, v) as d2a_dq2 and d2a_dqdv (the others zero: v+ is linear in v at
        fixed q and has no control).  ``force_rows``: as for :meth:`derivatives`, with the
        impulses."""
        xs = np.atleast_2d(xs)
        mode = SecondOrderMode(mode)
        if mode == SecondOrderMode.CONTRACTED:
            raise ValueError("mode: an impact through the Dynamics protocol gives tensors "
                             "(TENSORS) or none")
        T, n = xs.shape[0], self.nv
        q, v = np.ascontiguousarray(xs[:, :self.nq]), np.ascontiguousarray(xs[:, self.nq:])
        tensors = mode == SecondOrderMode.TENSORS
        e = dynamics.impulse_derivatives(q, v, restitution, 2 if tensors else 1)
        dv_dq, dv_dv = (_returned("impulse_derivatives", k, getattr(e, k), (T, n, n))
                        for k in ("dv_dq", "dv_dv"))
        d = empty_step_derivatives(T, n, self.nu, force_rows)
        if force_rows:
            _held_forces("impulse_derivatives", d.forces, e.impulse, e.dimpulse_dq,
                         e.dimpulse_dv, None, self.B)
        eye = np.eye(n)
        d.Fx[:] = 0.0
        d.Fx[:, :n, :n] = eye
        d.Fx[:, n:, :n], d.Fx[:, n:, n:] = dv_dq, dv_dv
        d.Fu[:], d.da_du[:] = 0.0, 0.0
        d.da_dq[:], d.da_dv[:] = dv_dq, dv_dv
        d.Jq[:], d.Jw[:] = eye, eye
        empty4 = np.zeros((T, 0, 0, 0))
        held = FDTensors(empty4, empty4, empty4, empty4)
        if tensors:  # the rows of v+, then (with force rows) the impulse's
            d2q, d2qv = (_rows(np.reshape(getattr(e, k), (T, -1, n, n)), n, force_rows)
                         for k in ("d2_dq2", "d2_dqdv"))
            zero = np.zeros(d2q.shape)
            held = FDTensors(d2q, zero, d2qv, zero)
        # no displacement at an impact: lie_H unused, zero, shaped as the steps' (to join them)
        H = self.dynamics.integrate_second_order(q, np.zeros((T, n)), hessian=tensors).H
        so = SecondOrder(int(mode), 0, 0, held, q, v, np.zeros((T, 0)), np.zeros((T, 0, 0)),
                         np.zeros(np.shape(H)), kkt_factors(0, 0, 0, 0))
        return d, so

    def derivatives(self, xs, us, mode=SecondOrderMode.NONE, dynamics=None, force_rows=0,
                    held=False):
        """(:data:`~ddp.kernels.records.StepDerivatives`, :data:`~ddp.kernels.records.SecondOrder`)
        of a batch (T, nx), (T, nu), with one batched (parallel) FD call of ``dynamics`` (None:
        the integrator's; a phase's backend on its contacts); with ``mode`` TENSORS that call
        also returns the full FD-SO tensors, with CONTRACTED each knot's acceleration and M^-1
        are kept for the contracted sweep.  ``force_rows`` > 0 (a problem with costs on the
        contact forces): the :data:`~ddp.kernels.records.Forces` hold that many components per knot,
        filled from the backend's ``contact_derivatives`` when it ``held`` contacts (zero
        without), and the tensors have as many more rows, the forces' (those of the passes'
        co-state dl/dlam)."""
        dynamics = self.dynamics if dynamics is None else dynamics
        xs, us = np.atleast_2d(xs), np.atleast_2d(us)
        mode = SecondOrderMode(mode)
        T, n, dt = xs.shape[0], self.nv, self.dt
        q, v = np.ascontiguousarray(xs[:, :self.nq]), np.ascontiguousarray(xs[:, self.nq:])
        tau = np.ascontiguousarray(us @ self.B.T)
        order = 2 if mode == SecondOrderMode.TENSORS else 1
        held = bool(force_rows) and held
        if held:
            method = "contact_derivatives"
            fd = c = dynamics.contact_derivatives(q, v, tau, order)
        else:
            method = "fd_derivatives"
            fd = dynamics.fd_derivatives(q, v, tau, order=order)
        a = _returned(method, "a", fd.a, (T, n))
        da_dq, da_dv, da_dtau = (_returned(method, k, getattr(fd, k), (T, n, n))
                                 for k in ("da_dq", "da_dv", "da_dtau"))
        v1, w = np.empty_like(v), np.empty_like(v)
        step_velocities(v, a, dt, v1, w)
        w[~np.all(np.isfinite(w), axis=-1)] = 0.0  # a failed step: NaN derivatives, not an error
        e = dynamics.integrate_second_order(q, w, hessian=mode != SecondOrderMode.NONE)
        d = empty_step_derivatives(T, n, self.nu, force_rows)
        if held:
            _held_forces(method, d.forces, c.lam, c.dlam_dq, c.dlam_dv, c.dlam_dtau, self.B)
        d.da_dq[:], d.da_dv[:] = da_dq, da_dv
        d.Jq[:], d.Jw[:] = e.Jq, e.Jw
        run_in_chunks(assemble_step_derivatives, assemble_step_chunk,
                      (self.B, dt, d.da_dq, d.da_dv, da_dtau, d.Jq, d.Jw, self.lie_offsets,
                       self.lie_sizes, d.Fx, d.Fu, d.da_du), num_chunks(T))
        empty4 = np.zeros((T, 0, 0, 0))
        tensors = FDTensors(empty4, empty4, empty4, empty4)
        if mode == SecondOrderMode.TENSORS and held:
            nc = np.shape(c.lam)[-1]
            tensors = FDTensors(*(_rows(_returned("contact_derivatives(order=2)", k,
                                                  getattr(c, k), (T, n + nc, n, n)), n,
                                        force_rows)
                                  for k in ("d2_dq2", "d2_dv2", "d2_dqdv", "d2_dtaudq")))
        elif mode == SecondOrderMode.TENSORS:
            tensors = FDTensors(*(_rows(_returned("fd_derivatives(order=2)", k, getattr(fd, k),
                                                  (T, n, n, n)), n, force_rows)
                                  for k in FDTensors._fields))
        contracted = mode == SecondOrderMode.CONTRACTED
        so = SecondOrder(int(mode), 0, 0, tensors, q, v, a if contracted else np.zeros((T, 0)),
                         da_dtau if contracted else np.zeros((T, 0, 0)),
                         np.ascontiguousarray(e.H, dtype=float), kkt_factors(0, 0, 0, 0))
        return d, so


def _held_forces(method, out, lam, dlam_dq, dlam_dv, dlam_dtau, B):
    """Write the forces (T, nc) that a backend's ``method`` returned and their derivatives in q,
    v and tau (None at an impact: no tau) into the first nc components of the zero
    :data:`~ddp.kernels.records.Forces` ``out``, with dlam_du = dlam_dtau B."""
    T, n = out.dlam_dq.shape[0], out.dlam_dq.shape[2]
    nc = np.shape(lam)[-1]
    out.lam[:, :nc] = _returned(method, "lam", lam, (T, nc))
    out.dlam_dq[:, :nc] = _returned(method, "dlam_dq", dlam_dq, (T, nc, n))
    out.dlam_dv[:, :nc] = _returned(method, "dlam_dv", dlam_dv, (T, nc, n))
    if dlam_dtau is not None:
        out.dlam_dtau[:, :nc] = _returned(method, "dlam_dtau", dlam_dtau, (T, nc, n))
        out.dlam_du[:, :nc] = out.dlam_dtau[:, :nc] @ B


def _rows(x, n, force_rows):
    """Tensors (T, n + nc, ...) of (a, lam) as (T, n + force_rows, ...): the first n rows (a's),
    and with ``force_rows`` the forces' rows, zero beyond nc."""
    if not force_rows:
        return np.ascontiguousarray(x[:, :n])
    out = np.zeros((x.shape[0], n + force_rows) + x.shape[2:])
    out[:, :x.shape[1]] = x
    return out


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
