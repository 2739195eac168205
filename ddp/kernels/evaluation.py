"""A whole trajectory evaluated in one compiled call each (the analytical backend):

* :func:`knot_derivatives`: what one iteration differentiates at every knot, in one parallel
  call: FDSVA (or the full FDSVA-SO tensors), the expansion of (+), the step derivatives Fx, Fu
  and the built-in running costs (scaled by dt, on FDSVA's forward kinematics), then the
  terminal cost;
* :func:`rollout_cost`: a (closed-loop) rollout and then its total cost, the costs of the knots
  in parallel, on the forward kinematics that the rollout's ABA kept.

Fusing them saves a Python dispatch, a parallel launch and the output allocations per phase: on a
small robot these cost as much as the arithmetic (UR3, T = 100: about 0.3 ms of an iteration's
2 ms).  Outputs go to flat buffers, viewed by :func:`step_views` and
:func:`~ddp.kernels.costs.cost_views` from Python and from the kernels alike.
"""

import numpy as np
from numba import njit, prange

from dynamics.kernels.forward import IPR_LTDL, fdsva_core, fdsva_workspace
from dynamics.kernels.forward_so import fdsva_so_point
from dynamics.kernels.kinematics import forward_kinematics
from dynamics.kernels.layout import borrowed, chunk_range, keep_alive, unpack
from dynamics.kernels.lie_group import integrate_expansion_point
from dynamics.kernels.step import assemble_knot

from .costs import cost_knots, cost_views, has_frame_terms, kinematics_buffers
from .passes import rollout

_JIT = dict(cache=True, error_model="numpy")


def step_size(T, n, nu):
    """Floats of the buffer of :func:`step_views`."""
    return T * (8 * n * n + 3 * n * nu)


@njit(**_JIT)
def step_views(buf, T, n, nu):
    """Fx (T, 2n, 2n), Fu (T, 2n, nu), da_dq, da_dv (T, n, n), Minv B (T, n, nu), Jq, Jw
    (T, n, n): views of one flat buffer of :func:`step_size` floats."""
    out = []
    o = 0
    for rows, cols in ((2 * n, 2 * n), (2 * n, nu), (n, n), (n, n), (n, nu), (n, n), (n, n)):
        out.append(buf[o:o + T * rows * cols].reshape((T, rows, cols)))
        o += T * rows * cols
    return out[0], out[1], out[2], out[3], out[4], out[5], out[6]


@njit(**_JIT)
def tensor_views(buf, T, n):
    """d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq (T, n, n, n): views of a buffer of 4 T n^3 floats
    (n = 0 when the tensors are not computed)."""
    s = T * n * n * n
    return (buf[:s].reshape((T, n, n, n)), buf[s:2 * s].reshape((T, n, n, n)),
            buf[2 * s:3 * s].reshape((T, n, n, n)), buf[3 * s:4 * s].reshape((T, n, n, n)))


def point_size(T, n):
    """Floats of the buffer of :func:`point_views`."""
    return T * (n + n * n)


@njit(**_JIT)
def point_views(buf, T, n):
    """acc (T, n) and Minv (T, n, n) of every knot (kept for DDP's contracted second-order
    terms): views of a buffer of :func:`point_size` floats (n = 0 when they are not kept)."""
    return buf[:T * n].reshape((T, n)), buf[T * n:T * (n + n * n)].reshape((T, n, n))


@njit(**_JIT)
def _zero_rows(buf_views, t0, t1):
    l, lx, lu, lxx, lxu, luu = buf_views
    l[t0:t1] = 0.0
    lx[t0:t1] = 0.0
    lu[t0:t1] = 0.0
    lxx[t0:t1] = 0.0
    lxu[t0:t1] = 0.0
    luu[t0:t1] = 0.0


@njit(**_JIT)
def _derivatives_chunk(ints, floats, B, dt, Q, V, TAU, U, tensors, inner, outer, hessian, lie_iv,
                       lie_nv, run_ints, run_floats, exact, step_buf, tensor_buf, point_buf, H,
                       run_buf, chunk, nchunks):
    m = unpack(ints, floats)
    nj, n = ints[0], ints[1]
    T = Q.shape[0]
    nu = B.shape[1]
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    B, Q, V, TAU, U, lie_iv, lie_nv = borrowed((B, Q, V, TAU, U, lie_iv, lie_nv))
    step_buf, tensor_buf, point_buf, H = borrowed((step_buf, tensor_buf, point_buf, H))
    Fx, Fu, da_dq, da_dv, MinvB, Jq, Jw = step_views(step_buf, T, n, nu)
    d2q, d2v, d2qv, d2t = tensor_views(tensor_buf, T, n if tensors else 0)
    keep = point_buf.shape[0] > 0
    ACC, MINV = point_views(point_buf, T, n if keep else 0)
    work = (np.empty(n), np.empty(n), np.empty((n, n)), np.empty((n, n)), np.empty((n, nu)))
    fdsva_work = fdsva_workspace(nj, n)
    run_ints = borrowed(run_ints)
    frames = has_frame_terms(run_ints)
    nk = T if frames else 0  # the knots' forward kinematics, kept for the costs' frame terms
    kin_own = kinematics_buffers(nk, nj, n)
    a, w, Minv, tmp, tu = borrowed(work)
    M, dtq, dtv, S0, IA, U6, Dinv, oR, op = borrowed(fdsva_work)
    kin = borrowed(kin_own)
    KR, Kp, KS = kin
    t0, t1 = chunk_range(T, chunk, nchunks)
    for t in range(t0, t1):
        if tensors:
            fdsva_so_point(m, Q[t], V[t], TAU[t], inner, outer, a, da_dq[t], da_dv[t], Minv,
                           d2q[t], d2v[t], d2qv[t], d2t[t])
            if frames:
                forward_kinematics(m, Q[t], KR[t], Kp[t], KS[t])
        else:
            M[:, :] = 0.0
            dtq[:, :] = 0.0
            dtv[:, :] = 0.0
            S0t, oRt, opt = S0, oR, op
            if frames:  # FDSVA's forward kinematics, kept in kin
                S0t, oRt, opt = KS[t], KR[t], Kp[t]
            fdsva_core(m, Q[t], V[t], TAU[t], np.int64(IPR_LTDL), a, da_dq[t], da_dv[t], Minv, M,
                       dtq, dtv, S0t, IA, U6, Dinv, oRt, opt)
            if keep:
                ACC[t] = a
                MINV[t] = Minv
        if lie_iv.shape[0] == 0:  # no Lie-group joint: (+) is an addition (UR3: 0.25 us a knot)
            for r in range(n):
                for c in range(n):
                    Jq[t, r, c] = 1.0 if r == c else 0.0
                    Jw[t, r, c] = 1.0 if r == c else 0.0
        else:
            for r in range(n):
                w[r] = dt * (V[t, r] + dt * a[r])
            integrate_expansion_point(m, w, Jq[t], Jw[t], H[t], hessian)
        assemble_knot(B, dt, da_dq[t], da_dv[t], Minv, Jq[t], Jw[t], lie_iv, lie_nv, Fx[t], Fu[t],
                      MinvB[t], tmp, tu)
    run = cost_views(run_buf, T, 2 * n, U.shape[1])
    _zero_rows(run, t0, t1)
    l, lx, lu, lxx, lxu, luu = run
    cost_knots(m, run_ints, run_floats, Q, V, U, t0, t1, np.int64(2), exact, l, lx, lu, lxx, lxu,
               luu, kin)
    keep_alive((work, fdsva_work, kin_own))
    for t in range(t0, t1):  # running costs times dt
        l[t] *= dt
        for i in range(lx.shape[1]):
            lx[t, i] *= dt
            for j in range(lx.shape[1]):
                lxx[t, i, j] *= dt
            for j in range(lu.shape[1]):
                lxu[t, i, j] *= dt
        for i in range(lu.shape[1]):
            lu[t, i] *= dt
            for j in range(lu.shape[1]):
                luu[t, i, j] *= dt


@njit(cache=True, error_model="numpy", parallel=True)
def knot_derivatives(ints, floats, B, dt, Q, V, TAU, U, tensors, inner, outer, hessian, lie_iv,
                     lie_nv, run_ints, run_floats, term_ints, term_floats, QT, VT, exact, step_buf,
                     tensor_buf, point_buf, H, run_buf, term_buf, nchunks):
    """The derivatives of every knot of a trajectory (Q, V (T, nq / nv), TAU = U B^T, U (T, nu)),
    in ``nchunks`` parallel chunks of knots, into flat buffers:

    * ``step_buf`` (:func:`step_views`): the step derivatives of :mod:`ddp.integrators` (FDSVA,
      the Jacobians of (+) and their assembly); with ``tensors`` the full FDSVA-SO tensors into
      ``tensor_buf`` (:func:`tensor_views`, by the ``inner`` / ``outer`` methods of
      :func:`~dynamics.kernels.forward_so.fdsva_so_point`), else, if ``point_buf`` is not empty,
      each knot's acceleration and Minv into it (:func:`point_views`); with ``hessian`` the
      Hessians of (+) into H (T, nblocks, 6, 12, 12) (zeroed by the caller);
    * ``run_buf`` (:func:`~ddp.kernels.costs.cost_views`, T knots): the running cost program
      (run_ints, run_floats) times dt, exact or Gauss-Newton Hessians by ``exact``;
    * ``term_buf`` (one knot): the terminal cost program at (QT, VT) (1, nq / nv), zero
      controls.

    lie_iv, lie_nv: the velocity offsets and sizes of the Lie-group joints (where Jw is not the
    identity).  The cost programs run on the dynamics' model."""
    if nchunks == 1:
        _derivatives_chunk(ints, floats, B, dt, Q, V, TAU, U, tensors, inner, outer, hessian,
                           lie_iv, lie_nv, run_ints, run_floats, exact, step_buf, tensor_buf,
                           point_buf, H, run_buf, np.int64(0), nchunks)
    else:
        for c in prange(nchunks):
            _derivatives_chunk(ints, floats, B, dt, Q, V, TAU, U, tensors, inner, outer, hessian,
                               lie_iv, lie_nv, run_ints, run_floats, exact, step_buf, tensor_buf,
                               point_buf, H, run_buf, np.int64(c), nchunks)
    term = cost_views(term_buf, 1, 2 * ints[1], U.shape[1])
    zero, one = np.int64(0), np.int64(1)
    _zero_rows(term, zero, one)
    l, lx, lu, lxx, lxu, luu = term
    cost_knots(unpack(ints, floats), term_ints, term_floats, QT, VT, np.zeros((1, U.shape[1])),
               zero, one, np.int64(2), exact, l, lx, lu, lxx, lxu, luu,
               kinematics_buffers(0, 0, 0))


@njit(**_JIT)
def _cost_values_chunk(ints, floats, cints, cfloats, Q, V, U, l, kin, chunk, nchunks):
    T = U.shape[0]
    t0, t1 = chunk_range(T, chunk, nchunks)
    l[t0:t1] = 0.0
    e2 = np.empty((T, 0))
    e3 = np.empty((T, 0, 0))
    cost_knots(unpack(ints, floats), cints, cfloats, Q, V, U, t0, t1, np.int64(0), np.bool_(False),
               l, e2, e2, e3, e3, e3, kin)


@njit(cache=True, error_model="numpy", parallel=True)
def rollout_cost(ints, floats, B, dt, x0, us, k, K, alpha, lo, hi, xs_ref, feedback, gaps,
                 infeasible, xs, us_out, run_ints, run_floats, term_ints, term_floats, l,
                 nchunks):
    """:func:`~ddp.kernels.passes.rollout` (same arguments, up to ``us_out``), then the total
    cost ``dt sum_t l(x_t, u_t) + l_T(x_T)`` of the built-in running and terminal programs, the
    running costs of the knots (into l (T + 1,), the terminal one last) in ``nchunks`` parallel
    chunks, on the forward kinematics that the rollout's ABA kept.  NaN when a state or control
    is not finite."""
    T = us.shape[0]
    n = ints[1]
    nj = ints[0]
    nq = x0.shape[0] - n
    nk = T if has_frame_terms(run_ints) else 0  # the kinematics of ABA, kept for frame terms
    kin = kinematics_buffers(nk, nj, n)
    rollout(ints, floats, B, dt, x0, us, k, K, alpha, lo, hi, xs_ref, feedback, gaps, infeasible,
            xs, us_out, kin)
    for t in range(T + 1):
        for r in range(xs.shape[1]):
            if not np.isfinite(xs[t, r]):
                return np.nan
        if t < T:
            for r in range(us.shape[1]):
                if not np.isfinite(us_out[t, r]):
                    return np.nan
    Q = np.ascontiguousarray(xs[:, :nq])
    V = np.ascontiguousarray(xs[:, nq:])
    if nchunks == 1:
        _cost_values_chunk(ints, floats, run_ints, run_floats, Q, V, us_out, l, kin,
                           np.int64(0), nchunks)
    else:
        for c in prange(nchunks):
            _cost_values_chunk(ints, floats, run_ints, run_floats, Q, V, us_out, l, kin,
                               np.int64(c), nchunks)
    lT = l[T:]
    _cost_values_chunk(ints, floats, term_ints, term_floats, np.ascontiguousarray(Q[T:]),
                       np.ascontiguousarray(V[T:]), np.zeros((1, us.shape[1])), lT,
                       kinematics_buffers(0, 0, 0), np.int64(0), np.int64(1))
    total = 0.0
    for t in range(T):  # a plain loop: np.sum here would become a parallel reduction, whose
        total += l[t]   # rounding depends on the number of threads
    return dt * total + lT[0]
