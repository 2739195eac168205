"""The semi-implicit Euler step on the configuration manifold, compiled, in one place: the step
itself, its Jacobians, the quadratic form of a value function through it and its second-order
terms.  The DDP solver (:mod:`ddp.kernels`) and ``dynamics.linearize(..., dt=dt)`` call these;
no other kernel writes the step formula::

    a = FD(q, v, B u),   v+ = v + dt a,   q+ = q (+) w,   w = dt v+

    Fx = [[Jq + dt^2 Jw da_dq,  dt Jw (I + dt da_dv)],      Fu = [[dt^2 Jw da_du],
          [dt da_dq,            I + dt da_dv       ]],            [dt da_du     ]]

with da_du = M^-1 B and ``Jq``, ``Jw`` the Jacobians of ``(q (+) dq) (+) (w + dw)`` at
w = dt v+ (:mod:`.lie_group`): the identity outside the Lie-group joints (free-flyer, spherical,
planar), whose blocks are given by their velocity offsets and sizes (``lie_offsets``,
``lie_sizes``).  Second order, contracted with a co-state lam = (lam_q, lam_v) at x+ (z = (dx,
du))::

    lam . F_zz = dt (mu . a_zz) + Jz^T (lam_q . G_zz) Jz,     mu = lam_v + dt Jw^T lam_q

where ``G(dq, dw) = ((q (+) dq) (+) (w + dw)) (-) (q (+) w)`` has second-order terms on the
Lie-group joints only, and the rows of ``Jz`` (dz -> (dq, dw)) of a joint's DoFs r are
e_r for dq and ``dw_r = dt^2 (da_dq, da_dv, da_du)_r dz + dt dv_r``.
An impact knot (:mod:`dynamics.contacts`) maps x = (q, v) to (q, v+(q, v)) without time or
control: :func:`assemble_impact`, :func:`add_impact_hessian`.

Shapes: n = nv, nu controls, T knots.
"""

import numpy as np

from ..jit import chunk_range, in_parallel, njit
from .dense import gemm
from .kinematics import integrate_point

_JIT = dict(cache=True, error_model="numpy")

# The per-knot functions below are inlined into their callers' knot loops: a call to a compiled
# function takes a reference to each of its array arguments, and assemble_knot has 14 (UR3's
# assembly per knot: 0.68 -> 0.26 us).  The backward pass's terms (step_quadratic,
# add_step_hessian) are called once per knot with borrowed arrays, not inlined.


@njit(inline="always", **_JIT)
def jw_times(Jw, lie_offsets, lie_sizes, X, scale, out):
    """out = scale Jw X for Jw identity outside the Lie-group joint blocks (X (n, p)).  On
    transposed views it is the right product: ``jw_times(J.T, ..., X.T, s, out.T)`` gives
    out = s X J."""
    n, p = X.shape
    for r in range(n):
        for c in range(p):
            out[r, c] = scale * X[r, c]
    for b in range(lie_offsets.shape[0]):
        o, mb = lie_offsets[b], lie_sizes[b]
        for r in range(o, o + mb):
            for c in range(p):
                s = 0.0
                for j in range(o, o + mb):
                    s += Jw[r, j] * X[j, c]
                out[r, c] = scale * s


@njit(inline="always", **_JIT)
def block_T_times_add(J, lie_offsets, lie_sizes, X, scale, out):
    """out += scale J^T X (X (n, p)) for J identity outside the Lie-group joint blocks."""
    n, p = X.shape
    for r in range(n):
        for c in range(p):
            out[r, c] += scale * X[r, c]
    for b in range(lie_offsets.shape[0]):
        o, mb = lie_offsets[b], lie_sizes[b]
        for r in range(o, o + mb):
            for c in range(p):
                s = -X[r, c]
                for j in range(o, o + mb):
                    s += J[j, r] * X[j, c]
                out[r, c] += scale * s


@njit(inline="always", **_JIT)
def euler_step(m, q, v, a, dt, q_next, v_next, w):
    """One step: v+ = v + dt a, w = dt v+, q+ = q (+) w into q_next, v_next (w: the
    displacement, written too).  False (and q_next not written) when v+ is not finite."""
    ok = True
    for r in range(v.shape[0]):
        v_next[r] = v[r] + dt * a[r]
        w[r] = dt * v_next[r]
        if not np.isfinite(v_next[r]):
            ok = False
    if ok:
        integrate_point(m, q, w, q_next)
    return ok


@njit(inline="always", **_JIT)
def step_displacement(v, a, dt, w):
    """w = dt (v + dt a): the displacement of the step (what q+ = q (+) w integrates)."""
    for r in range(v.shape[0]):
        w[r] = dt * (v[r] + dt * a[r])


@njit(**_JIT)
def step_velocities(V, A, dt, V_next, W):
    """v+ = v + dt a and w = dt v+ at T knots (V, A, V_next, W (T, n)): the step of a backend
    stepped through the Dynamics protocol (its ``integrate`` then takes q (+) w)."""
    for t in range(V.shape[0]):
        for r in range(V.shape[1]):
            V_next[t, r] = V[t, r] + dt * A[t, r]
            W[t, r] = dt * V_next[t, r]


@njit(inline="always", **_JIT)
def assemble_knot(B, dt, da_dq, da_dv, da_dtau, Jq, Jw, lie_offsets, lie_sizes, Fx, Fu, da_du,
                  tmp, tu):
    """Fx (2n, 2n), Fu (2n, nu) and da_du = M^-1 B (n, nu) of one knot's step from its FD
    derivatives (da_dtau = M^-1) and the Jacobians of (+) (tmp (n, n), tu (n, nu): work
    arrays)."""
    n = da_dq.shape[0]
    nu = B.shape[1]
    for r in range(n):  # da_du = M^-1 B
        for c in range(nu):
            da_du[r, c] = 0.0
        for j in range(n):
            a = da_dtau[r, j]
            for c in range(nu):
                da_du[r, c] += a * B[j, c]
    # Fx = [[Jq + dt^2 Jw da_dq, dt Jw (I + dt da_dv)], [dt da_dq, I + dt da_dv]]
    jw_times(Jw, lie_offsets, lie_sizes, da_dq, dt * dt, tmp)
    for r in range(n):
        for c in range(n):
            Fx[r, c] = Jq[r, c] + tmp[r, c]
            Fx[n + r, c] = dt * da_dq[r, c]
            Fx[n + r, n + c] = dt * da_dv[r, c] + (1.0 if r == c else 0.0)
    jw_times(Jw, lie_offsets, lie_sizes, Fx[n:, n:], dt, tmp)
    for r in range(n):
        for c in range(n):
            Fx[r, n + c] = tmp[r, c]
    # Fu = [dt^2 Jw da_du ; dt da_du]
    jw_times(Jw, lie_offsets, lie_sizes, da_du, dt * dt, tu)
    for r in range(n):
        for c in range(nu):
            Fu[r, c] = tu[r, c]
            Fu[n + r, c] = dt * da_du[r, c]


@njit(inline="always", **_JIT)
def assemble_impact(dv_dq, dv_dv, Fx, Fu, da_du, Jq, Jw):
    """The step of an impact knot, x+ = (q, v+(q, v)) with no control:
    Fx = [[I, 0], [dv+/dq, dv+/dv]], Fu = 0, da_du = 0, and Jq = Jw = I (no displacement)."""
    n = dv_dq.shape[0]
    Fx[:, :] = 0.0
    Fu[:, :] = 0.0
    da_du[:, :] = 0.0
    for r in range(n):
        Fx[r, r] = 1.0
        for c in range(n):
            Fx[n + r, c] = dv_dq[r, c]
            Fx[n + r, n + c] = dv_dv[r, c]
            Jq[r, c] = 1.0 if r == c else 0.0
            Jw[r, c] = 1.0 if r == c else 0.0


@njit(callee=True, **_JIT)
def add_impact_hessian(Lq, Lqv, Qxx):
    """Add lam . F_xx of an impact knot to Qxx: with mu = lam_v (q+ = q has none), the (q, q)
    block mu . v+_qq (symmetrized: Lq) and the (q, v) blocks mu . v+_qv (Lqv); v+ is linear in
    v at fixed q."""
    n = Lq.shape[0]
    for j in range(n):
        for k in range(n):
            Qxx[j, k] += 0.5 * (Lq[j, k] + Lq[k, j])
            Qxx[j, n + k] += Lqv[j, k]
            Qxx[n + k, j] += Lqv[j, k]


@njit(**_JIT)
def assemble_step_chunk(B, dt, da_dq, da_dv, da_dtau, Jq, Jw, lie_offsets, lie_sizes, Fx, Fu,
                        da_du, chunk, nchunks):
    """Fx (T, 2n, 2n), Fu (T, 2n, nu) and da_du = M^-1 B (T, n, nu) of the step (module
    docstring), written into the given arrays, from the FD derivatives and the Jacobians of (+),
    at the knots of chunk ``chunk`` of ``nchunks``."""
    n = da_dq.shape[1]
    tmp = np.empty((n, n))
    tu = np.empty((n, B.shape[1]))
    t0, t1 = chunk_range(Fx.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        assemble_knot(B, dt, da_dq[t], da_dv[t], da_dtau[t], Jq[t], Jw[t], lie_offsets, lie_sizes,
                      Fx[t], Fu[t], da_du[t], tmp, tu)


@njit(cache=True, error_model="numpy")
def assemble_step_derivatives(B, dt, da_dq, da_dv, da_dtau, Jq, Jw, lie_offsets, lie_sizes, Fx, Fu,
                              da_du, chunks):
    """The door of :func:`assemble_step_chunk`, its chunks in parallel
    (:func:`dynamics.jit.run_in_chunks`)."""
    return in_parallel((B, dt, da_dq, da_dv, da_dtau, Jq, Jw, lie_offsets, lie_sizes, Fx, Fu,
                        da_du), chunks)


@njit(callee=True, **_JIT)
def step_quadratic(Vxx, Fx, Fu, Jq, Jw, dt, lie_offsets, lie_sizes, P, S, W, Hx, Hu, R, Qxx, Qux,
                   Quu):
    """The blocks Qxx (ndx, ndx), Qux (nu, ndx), Quu (nu, nu) of F^T Vxx F for the step
    F = [Fx Fu] of one knot, from its structure instead of two dense products on F.  The rows of
    v+ are Fv = [Fvx Fvu] = [dt da_dq, I + dt da_dv | dt da_du] (``Fx[n:]``, ``Fu[n:]``), and
    those of q+ are E + dt Jw Fv with E = [Jq, 0 | 0] (Jq, Jw: the Jacobians of (+), identity
    outside the Lie-group joint blocks).  With P = dt Vqq Jw + Vqv and S = dt Jw^T P +
    dt Vvq Jw + Vvv (n, n)::

        F^T Vxx F = Fv^T (S Fv + P^T E) + E^T P Fv + E^T Vqq E

    where P^T E = [P^T Jq, 0 | 0] and E^T P Fv fills the first n rows.  Products of n x n x nz
    and nz x n x ndx flops (BLAS; the Qxu block is not needed) instead of nz x ndx x (ndx + nz).
    P, S, W (n, n), Hx, R (n, ndx), Hu (n, nu): work arrays."""
    ndx = Fx.shape[0]
    n = ndx // 2
    Fvx, Fvu = Fx[n:], Fu[n:]
    Vqq = Vxx[:n, :n]
    jw_times(Jw.T, lie_offsets, lie_sizes, Vqq.T, dt, P.T)  # P = dt Vqq Jw + Vqv
    for r in range(n):
        for c in range(n):
            P[r, c] += Vxx[r, n + c]
    # S = dt Vvq Jw + Vvv + dt Jw^T P
    jw_times(Jw.T, lie_offsets, lie_sizes, Vxx[n:, :n].T, dt, S.T)
    for r in range(n):
        for c in range(n):
            S[r, c] += Vxx[n + r, n + c]
    block_T_times_add(Jw, lie_offsets, lie_sizes, P, dt, S)
    W[:, :] = 0.0  # W = Jq^T P
    block_T_times_add(Jq, lie_offsets, lie_sizes, P, 1.0, W)
    np.dot(S, Fvx, Hx)  # H = S Fv + P^T E
    np.dot(S, Fvu, Hu)
    for r in range(n):
        for c in range(n):
            Hx[r, c] += W[c, r]
    np.dot(Fvx.T, Hx, Qxx)
    np.dot(Fvu.T, Hx, Qux)
    np.dot(Fvu.T, Hu, Quu)
    np.dot(W, Fvx, R)  # E^T P Fv = [Jq^T P Fv; 0]
    for r in range(n):
        for c in range(ndx):
            Qxx[r, c] += R[r, c]
    # E^T Vqq E = [[Jq^T Vqq Jq, 0], [0, 0]]
    jw_times(Jq.T, lie_offsets, lie_sizes, Vqq.T, 1.0, P.T)
    S[:, :] = 0.0
    block_T_times_add(Jq, lie_offsets, lie_sizes, P, 1.0, S)
    for r in range(n):
        for c in range(n):
            Qxx[r, c] += S[r, c]


@njit(inline="always", **_JIT)
def acceleration_weights(lam, Jw, dt, mu):
    """mu = lam_v + dt Jw^T lam_q: the weights of the acceleration's second derivatives in
    lam . F_zz (module docstring; lam (2n,) at x+, Jw (n, n) of the knot)."""
    n = mu.shape[0]
    for i in range(n):
        s = lam[n + i]
        for r in range(n):
            s += dt * Jw[r, i] * lam[r]
        mu[i] = s


@njit(callee=True, **_JIT)
def add_step_hessian(dt, lam, Lq, Lv, Lqv, LtB, da_dq, da_dv, da_du, lie_offsets, lie_sizes,
                     lie_H, Qxx, Qux, Quu):
    """Add lam . F_zz of one knot (module docstring) to Qxx (2n, 2n), Qux (nu, 2n), Quu (nu, nu),
    given mu . a_zz for mu of :func:`acceleration_weights` as Lq, Lv, Lqv (n, n: the blocks
    (q, q), (v, v), (q, v)) and LtB = (mu . a_{tau q})^T B (n, nu), and the knot's derivatives and
    Hessians of (+) (lie_H (nblocks, 6, 12, 12))."""
    n = Lq.shape[0]
    nu = LtB.shape[1]
    for j in range(n):
        for k in range(n):
            Qxx[j, k] += 0.5 * dt * (Lq[j, k] + Lq[k, j])
            Qxx[j, n + k] += dt * Lqv[j, k]
            Qxx[n + k, j] += dt * Lqv[j, k]
            Qxx[n + j, n + k] += dt * Lv[j, k]
    for c in range(nu):
        for k in range(n):
            Qux[c, k] += dt * LtB[k, c]
    # Lie-group joints: Jz^T Hc Jz with Hc = lam_q . d2G (2mb, 2mb) and Jz: (dx, du) -> (dq, dw)
    # of the joint, whose rows are Z = [E; W]: E selects dq (the joint's columns of dx), W (mb,
    # nz) is dw to first order.  Jz^T Hc Jz = E^T (Hc Jz)_top + W^T (Hc Jz)_bottom: the first
    # term adds rows to Qxx, the second (nz, nz) is one BLAS product, of which the (x, x),
    # (u, x) and (u, u) blocks are added (ATLAS: 3 us less per knot than rank-1 updates).
    nz = 2 * n + nu
    for b in range(lie_offsets.shape[0]):
        o, mb = lie_offsets[b], lie_sizes[b]
        if mb == 0:
            continue
        Hc = np.zeros((2 * mb, 2 * mb))
        for a in range(mb):
            la = lam[o + a]
            for i in range(2 * mb):
                for j in range(2 * mb):
                    Hc[i, j] += la * lie_H[b, a, i, j]
        W = np.empty((mb, nz))
        for a in range(mb):
            for k in range(n):
                W[a, k] = dt * dt * da_dq[o + a, k]
                W[a, n + k] = dt * dt * da_dv[o + a, k]
            W[a, n + o + a] += dt
            for c in range(nu):
                W[a, 2 * n + c] = dt * dt * da_du[o + a, c]
        HZ = np.empty((2 * mb, nz))  # Hc Jz = Hc[:, :mb] E + Hc[:, mb:] W
        gemm(Hc[:, mb:], W, HZ, 1.0)
        for i in range(2 * mb):
            for a in range(mb):
                HZ[i, o + a] += Hc[i, a]
        for a in range(mb):
            top = HZ[a]
            r = o + a
            for j in range(2 * n):
                Qxx[r, j] += top[j]
        WB = np.empty((nz, nz))  # W^T (Hc Jz)_bottom
        np.dot(W.T, HZ[mb:], WB)
        for i in range(2 * n):
            for j in range(2 * n):
                Qxx[i, j] += WB[i, j]
        for c in range(nu):
            for j in range(2 * n):
                Qux[c, j] += WB[2 * n + c, j]
            for d in range(nu):
                Quu[c, d] += WB[2 * n + c, 2 * n + d]
