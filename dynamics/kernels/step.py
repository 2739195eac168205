"""The Jacobians of the semi-implicit Euler step on the configuration manifold, compiled: the
step of the DDP solver (:mod:`ddp.integrators`) and of ``dynamics.linearize(..., dt=dt)``::

    a = FD(q, v, B u),   v+ = v + dt a,   q+ = q (+) dt v+

    Fx = [[Jq + dt^2 Jw da_dq,  dt Jw (I + dt da_dv)],      Fu = [[dt^2 Jw Minv B],
          [dt da_dq,            I + dt da_dv       ]],            [dt Minv B     ]]

with ``Jq``, ``Jw`` the Jacobians of ``(q (+) dq) (+) (w + dw)`` at w = dt v+
(:mod:`.lie_group`): the identity outside the Lie-group joints (free-flyer, spherical, planar),
whose blocks are given by their velocity offsets and sizes (``lie_iv``, ``lie_nv``).
Shapes: n = nv, nu controls, T knots.
"""

import numpy as np
from numba import njit, prange

from .layout import chunk_range

_JIT = dict(cache=True, error_model="numpy")

# The per-knot functions below are inlined into their callers' knot loops: a call to a compiled
# function takes a reference to each of its array arguments, and assemble_knot has 14 (UR3's
# assembly per knot: 0.68 -> 0.26 us).


@njit(inline="always", **_JIT)
def jw_times(Jw, lie_iv, lie_nv, X, scale, out):
    """out = scale Jw X for Jw identity outside the Lie-group joint blocks (X (n, p)).  On
    transposed views it is the right product: ``jw_times(J.T, ..., X.T, s, out.T)`` gives
    out = s X J."""
    n, p = X.shape
    for r in range(n):
        for c in range(p):
            out[r, c] = scale * X[r, c]
    for b in range(lie_iv.shape[0]):
        o, mb = lie_iv[b], lie_nv[b]
        for r in range(o, o + mb):
            for c in range(p):
                s = 0.0
                for j in range(o, o + mb):
                    s += Jw[r, j] * X[j, c]
                out[r, c] = scale * s


@njit(inline="always", **_JIT)
def block_T_times_add(J, lie_iv, lie_nv, X, scale, out):
    """out += scale J^T X (X (n, p)) for J identity outside the Lie-group joint blocks."""
    n, p = X.shape
    for r in range(n):
        for c in range(p):
            out[r, c] += scale * X[r, c]
    for b in range(lie_iv.shape[0]):
        o, mb = lie_iv[b], lie_nv[b]
        for r in range(o, o + mb):
            for c in range(p):
                s = -X[r, c]
                for j in range(o, o + mb):
                    s += J[j, r] * X[j, c]
                out[r, c] += scale * s


@njit(inline="always", **_JIT)
def assemble_knot(B, dt, da_dq, da_dv, Minv, Jq, Jw, lie_iv, lie_nv, Fx, Fu, MinvB, tmp, tu):
    """Fx (2n, 2n), Fu (2n, nu) and Minv B (n, nu) of one knot's step from its FD derivatives
    and the Jacobians of (+) (tmp (n, n), tu (n, nu): work arrays)."""
    n = da_dq.shape[0]
    nu = B.shape[1]
    for r in range(n):  # Minv B
        for c in range(nu):
            MinvB[r, c] = 0.0
        for j in range(n):
            a = Minv[r, j]
            for c in range(nu):
                MinvB[r, c] += a * B[j, c]
    # Fx = [[Jq + dt^2 Jw da_dq, dt Jw (I + dt da_dv)], [dt da_dq, I + dt da_dv]]
    jw_times(Jw, lie_iv, lie_nv, da_dq, dt * dt, tmp)
    for r in range(n):
        for c in range(n):
            Fx[r, c] = Jq[r, c] + tmp[r, c]
            Fx[n + r, c] = dt * da_dq[r, c]
            Fx[n + r, n + c] = dt * da_dv[r, c] + (1.0 if r == c else 0.0)
    jw_times(Jw, lie_iv, lie_nv, Fx[n:, n:], dt, tmp)
    for r in range(n):
        for c in range(n):
            Fx[r, n + c] = tmp[r, c]
    # Fu = [dt^2 Jw Minv B ; dt Minv B]
    jw_times(Jw, lie_iv, lie_nv, MinvB, dt * dt, tu)
    for r in range(n):
        for c in range(nu):
            Fu[r, c] = tu[r, c]
            Fu[n + r, c] = dt * MinvB[r, c]


@njit(**_JIT)
def _assemble_chunk(B, dt, da_dq, da_dv, Minv, Jq, Jw, lie_iv, lie_nv, Fx, Fu, MinvB, chunk,
                    nchunks):
    n = da_dq.shape[1]
    tmp = np.empty((n, n))
    tu = np.empty((n, B.shape[1]))
    t0, t1 = chunk_range(Fx.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        assemble_knot(B, dt, da_dq[t], da_dv[t], Minv[t], Jq[t], Jw[t], lie_iv, lie_nv, Fx[t],
                      Fu[t], MinvB[t], tmp, tu)


@njit(cache=True, error_model="numpy", parallel=True)
def assemble_step_derivatives(B, dt, da_dq, da_dv, Minv, Jq, Jw, lie_iv, lie_nv, Fx, Fu, MinvB,
                              nchunks):
    """Fx (T, 2n, 2n), Fu (T, 2n, nu) and Minv B (T, n, nu) of the step (module docstring),
    written into the given arrays, from the FD derivatives and the Jacobians of (+) of every
    knot, in parallel over ``nchunks`` chunks of knots."""
    if nchunks == 1:
        _assemble_chunk(B, dt, da_dq, da_dv, Minv, Jq, Jw, lie_iv, lie_nv, Fx, Fu, MinvB,
                        np.int64(0), nchunks)
    else:
        for c in prange(nchunks):
            _assemble_chunk(B, dt, da_dq, da_dv, Minv, Jq, Jw, lie_iv, lie_nv, Fx, Fu, MinvB,
                            np.int64(c), nchunks)
