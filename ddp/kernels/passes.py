"""The solver's passes over the knots, compiled: rollout (open or closed loop), the Riccati
backward pass of DDP / iLQR (Cholesky, or the box-QP of Tassa, Mansard, Todorov 2014 when controls
are bounded) with the exact second-order dynamics terms, and the adjoint gradient.

Shapes: T knots, n = nv, ndx = 2 n, nu controls.  A state x = (q, v) (nq + nv), its tangent
dx = (dq, dv).  The discrete step is semi-implicit Euler (:mod:`ddp.integrators`)::

    a = FD(q, v, B u),  v+ = v + dt a,  q+ = q (+) dt v+

Second-order dynamics terms (DDP), contracted with the co-state lam = V'_x (tangent at x+):
``mu = lam_v + dt J_w^T lam_q`` weights the FD-SO terms (Lq, Lv, Lqv, Lt: ``sum_i mu_i`` of
d2a_dq2, d2a_dv2, d2a_dqdv, d2a_dtaudq) and, on Lie-group joints, ``lam_q`` weights the Hessian of
``(q (+) dq) (+) (w + dw)`` (the ``lie`` blocks).  ``so_mode`` says where the FD-SO terms come from:
0 none (iLQR), 1 full tensors of every knot (any backend, contracted here), 2 the contracted
IDSVA-SO sweep called at each knot, chained through the knot's first-order FDSVA from the
derivative phase (the analytical backend; O(n d) pairs of DoFs and a few n^3 products per knot).
"""

import numpy as np
from numba import njit

from dynamics.kernels.dense import gemm, gemm_nt, gemm_tn
from dynamics.kernels.forward import aba_sweeps
from dynamics.kernels.forward_so import fdsva_so_lam_terms
from dynamics.kernels.inverse import kinematics_and_inertias
from dynamics.kernels.kinematics import difference_point, integrate_point
from dynamics.kernels.layout import borrowed, keep_alive, unpack
from dynamics.kernels.step import block_T_times_add, jw_times

_JIT = dict(cache=True, error_model="numpy")

#: statuses of the backward pass
OK, NOT_POSITIVE_DEFINITE = 0, 1


# ---------------------------------------------------------------------------------- rollout
@njit(**_JIT)
def rollout(ints, floats, B, dt, x0, us, k, K, alpha, lo, hi, xs_ref, feedback, gaps, infeasible,
            xs, us_out, kin):
    """States xs (T + 1, nx) from x0 under ``u_t = clip(us_t + alpha k_t + K_t (x_t (-) xs_ref_t),
    lo, hi)`` (``feedback`` False: u_t = clip(us_t)), written to us_out.  With ``infeasible``
    (multiple shooting, Mastalli et al. 2020) each state keeps the fraction 1 - alpha of its gap
    f_t (``gaps`` (T + 1, ndx)): x_0 = x0 (+) (alpha - 1) f_0,
    x_{t+1} = F(x_t, u_t) (+) (alpha - 1) f_{t+1}.  A non-finite step gives NaN states and
    controls from there on.  Returns the number of finite steps taken.

    ``kin``: (oR (T, nj, 3, 3), op (T, nj, 3), S0 (T, nv, 6)) to keep the forward kinematics
    of each knot's ABA (for its costs: :func:`~ddp.kernels.costs.cost_knots`), or empty arrays.
    """
    m = unpack(ints, floats)
    nj = ints[0]
    n = ints[1]
    nq = x0.shape[0] - n
    T, nu = us.shape
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    B, x0, us, k, K, lo, hi = borrowed((B, x0, us, k, K, lo, hi))
    xs_ref, gaps, xs, us_out = borrowed((xs_ref, gaps, xs, us_out))
    KR, Kp, KS = borrowed(kin)
    keep = KR.shape[0] > 0
    work = (np.empty((n, 6)), np.empty((nj, 6, 6)), np.empty((n, 6)), np.empty((n, 6)),
            np.empty((nj, 3, 3)), np.empty((nj, 3)), np.empty(n), np.empty(n), np.empty(n),
            np.empty(n), np.empty(2 * n))
    S0, I0, U, Dinv, oR, op, tau, acc, v1, w, dx = borrowed(work)
    xs[0] = x0
    if infeasible:
        _shift_by_gap(m, xs[0], gaps[0], alpha - 1.0, nq, n, w)
    for t in range(T):
        q = xs[t, :nq]
        v = xs[t, nq:]
        if feedback:
            difference_point(m, xs_ref[t, :nq], q, dx[:n])
            for r in range(n):
                dx[n + r] = v[r] - xs_ref[t, nq + r]
        for c in range(nu):
            uc = us[t, c]
            if feedback:
                uc += alpha * k[t, c]
                for r in range(2 * n):
                    uc += K[t, c, r] * dx[r]
            us_out[t, c] = min(max(uc, lo[c]), hi[c])
        for r in range(n):
            s = 0.0
            for c in range(nu):
                s += B[r, c] * us_out[t, c]
            tau[r] = s
        # ABA (aba_point's body, inlined here: a call takes a reference to each of its arrays,
        # the model's 16 among them), its kinematics kept with ``kin``
        oRt, opt, S0t = oR, op, S0
        if keep:
            oRt, opt, S0t = KR[t], Kp[t], KS[t]
        kinematics_and_inertias(m, q, oRt, opt, S0t, I0)
        aba_sweeps(m, v, tau, acc, S0t, I0, U, Dinv)
        ok = True
        for r in range(n):
            v1[r] = v[r] + dt * acc[r]
            w[r] = dt * v1[r]
            if not np.isfinite(v1[r]):
                ok = False
        if not ok:
            xs[t + 1:] = np.nan
            us_out[t + 1:] = np.nan
            keep_alive(work)
            return t
        integrate_point(m, q, w, xs[t + 1, :nq])
        xs[t + 1, nq:] = v1
        if infeasible:
            _shift_by_gap(m, xs[t + 1], gaps[t + 1], alpha - 1.0, nq, n, w)
    keep_alive(work)
    return T


@njit(**_JIT)
def _shift_by_gap(m, x, gap, scale, nq, n, w):
    """x <- x (+) scale * gap, in place (w: an n-vector of workspace)."""
    for r in range(n):
        w[r] = scale * gap[r]
    q = x[:nq].copy()
    integrate_point(m, q, w, x[:nq])
    for r in range(n):
        x[nq + r] += scale * gap[n + r]


# ---------------------------------------------------------------------------------- linear algebra
@njit(inline="always", **_JIT)
def cholesky(A, L):
    """L L^T = A (lower); False if A is not positive definite."""
    n = A.shape[0]
    for j in range(n):
        s = A[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = np.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
        for i in range(j):
            L[i, j] = 0.0
    return True


@njit(**_JIT)
def cholesky_solve(L, B, X):
    """X = -(L L^T)^{-1} B for B (n, p) (the sign DDP's gains need), by substitutions on whole
    rows (contiguous, vectorized over the p columns), four rows of X into each pass over row i:
    the loads and stores of row i bound the loop (ATLAS's gains, n = 30, p = 72: 9.3 -> 5.6 us;
    p = 1: 2.4 -> 1.1 us)."""
    forward_substitution(L, B, X)
    back_substitution(L, X)


@njit(inline="always", **_JIT)
def forward_substitution(L, B, X):
    """X = -L^{-1} B (the first half of :func:`cholesky_solve`)."""
    n, p = B.shape
    for i in range(n):
        xi = X[i]
        for c in range(p):
            xi[c] = -B[i, c]
        _subtract_rows(L[i], X, 0, i, xi)
        d = 1.0 / L[i, i]
        for c in range(p):
            xi[c] *= d


@njit(inline="always", **_JIT)
def back_substitution(L, X):
    """X <- L^{-T} X in place (the second half of :func:`cholesky_solve`)."""
    n, p = X.shape
    for i in range(n - 1, -1, -1):
        xi = X[i]
        _subtract_rows(L[:, i], X, i + 1, n, xi)
        d = 1.0 / L[i, i]
        for c in range(p):
            xi[c] *= d


@njit(cache=True, error_model="numpy", inline="always")
def _subtract_rows(a, X, k0, k1, out):
    """out -= sum_k a[k] X[k] over k0 <= k < k1, four rows at a time."""
    p = out.shape[0]
    k = k0
    while k + 3 < k1:
        a0, a1, a2, a3 = a[k], a[k + 1], a[k + 2], a[k + 3]
        x0, x1, x2, x3 = X[k], X[k + 1], X[k + 2], X[k + 3]
        for c in range(p):
            out[c] -= a0 * x0[c] + a1 * x1[c] + a2 * x2[c] + a3 * x3[c]
        k += 4
    while k < k1:
        a0 = a[k]
        x0 = X[k]
        for c in range(p):
            out[c] -= a0 * x0[c]
        k += 1


@njit(**_JIT)
def _quadratic(H, g, x):
    """1/2 x^T H x + g^T x."""
    f = 0.0
    for i in range(x.shape[0]):
        s = 0.0
        for j in range(x.shape[0]):
            s += H[i, j] * x[j]
        f += x[i] * (0.5 * s + g[i])
    return f


@njit(**_JIT)
def box_qp(H, g, lower, upper, x0, max_iter, x, free, L):
    """Minimize 1/2 x^T H x + g^T x subject to lower <= x <= upper by projected Newton (Tassa,
    Mansard, Todorov 2014), from x0.  Writes x, the free set and the Cholesky factor of H on the
    free set (in the leading nf x nf block of L); returns (status, nf) with status 0 on success,
    1 when H is not positive definite on the free set."""
    n = g.shape[0]
    for i in range(n):
        x[i] = min(max(x0[i], lower[i]), upper[i])
    grad = np.empty(n)
    dx = np.empty(n)
    xn = np.empty(n)
    idx = np.empty(n, dtype=np.int64)
    nf = 0
    for _ in range(max_iter):
        nf = 0
        for i in range(n):
            s = g[i]
            for j in range(n):
                s += H[i, j] * x[j]
            grad[i] = s
            clamped = (x[i] <= lower[i] and s > 0.0) or (x[i] >= upper[i] and s < 0.0)
            free[i] = not clamped
            if not clamped:
                idx[nf] = i
                nf += 1
        if nf == 0:
            return 0, 0
        Hf = np.empty((nf, nf))
        gf = np.empty((nf, 1))
        for a in range(nf):
            gf[a, 0] = grad[idx[a]]
            for b in range(nf):
                Hf[a, b] = H[idx[a], idx[b]]
        Lf = L[:nf, :nf]
        if not cholesky(Hf, Lf):
            return 1, nf
        sol = np.empty((nf, 1))
        cholesky_solve(Lf, gf, sol)
        dx[:] = 0.0
        big = 0.0
        for a in range(nf):
            dx[idx[a]] = sol[a, 0]
            big = max(big, abs(sol[a, 0]))
        if big < 1e-12:
            break
        f0 = _quadratic(H, g, x)
        step = 1.0
        while step > 1e-10:
            lin = 0.0
            for i in range(n):
                xn[i] = min(max(x[i] + step * dx[i], lower[i]), upper[i])
                lin += grad[i] * (xn[i] - x[i])
            if _quadratic(H, g, xn) - f0 <= 0.1 * lin:
                break
            step *= 0.5
        moved = 0.0
        for i in range(n):
            moved = max(moved, abs(xn[i] - x[i]))
            x[i] = xn[i]
        if moved < 1e-12:
            break
    return 0, nf


# ---------------------------------------------------------------------------------- backward
@njit(**_JIT)
def _second_order_terms(t, n, nu, dt, B, lam, Jw, da_dq, da_dv, MinvB, so_mode, T2q, T2v, T2qv,
                        T2t, m, Q, V, ACC, MINV, lie_iv, lie_nv, lie_H, Qxx, Qux, Quu):
    """Add the exact second-order dynamics terms of knot t contracted with lam (module docstring)
    to Qxx, Qux, Quu.  so_mode 2 reads the knot's q, v, acceleration and Minv (Q, V, ACC, MINV)
    with the first-order da_dq, da_dv of the derivative phase."""
    mu = np.empty(n)
    for i in range(n):
        s = lam[n + i]
        for r in range(n):
            s += dt * Jw[t, r, i] * lam[r]
        mu[i] = s
    Lq = np.zeros((n, n))
    Lv = np.zeros((n, n))
    Lqv = np.zeros((n, n))
    LtB = np.zeros((n, nu))  # Lt^T B
    if so_mode == 1:
        Lt = np.zeros((n, n))
        for i in range(n):
            c = mu[i]
            for j in range(n):
                for k in range(n):
                    Lq[j, k] += c * T2q[t, i, j, k]
                    Lv[j, k] += c * T2v[t, i, j, k]
                    Lqv[j, k] += c * T2qv[t, i, j, k]
                    Lt[j, k] += c * T2t[t, i, j, k]
        gemm_tn(Lt, B, LtB, 1.0, 0.0)
    else:  # Lt = -Minv G, so Lt^T B = -G^T (Minv B)
        G = np.empty((n, n))
        fdsva_so_lam_terms(m, Q[t], V[t], ACC[t], da_dq[t], da_dv[t], MINV[t], mu, Lq, Lv, Lqv,
                           G)
        gemm_tn(G, MinvB[t], LtB, -1.0, 0.0)
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
    for b in range(lie_iv.shape[0]):
        o, mb = lie_iv[b], lie_nv[b]
        if mb == 0:
            continue
        Hc = np.zeros((2 * mb, 2 * mb))
        for a in range(mb):
            la = lam[o + a]
            for i in range(2 * mb):
                for j in range(2 * mb):
                    Hc[i, j] += la * lie_H[t, b, a, i, j]
        W = np.empty((mb, nz))
        for a in range(mb):
            for k in range(n):
                W[a, k] = dt * dt * da_dq[t, o + a, k]
                W[a, n + k] = dt * dt * da_dv[t, o + a, k]
            W[a, n + o + a] += dt
            for c in range(nu):
                W[a, 2 * n + c] = dt * dt * MinvB[t, o + a, c]
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


#: from this many DoFs on, the backward pass forms F^T V F from the step's structure
#: (:func:`_step_quadratic`: 2.5x fewer flops; measured with a free-flyer block, per knot:
#: nv = 36, nu = 30 (ATLAS) 54 -> 36 us, nv = 50 129 -> 79 us, nv = 24 17.4 -> 16.0 us, but
#: nv = 18 (HyQ) 7.2 -> 9.9 us: below BLAS sizes its extra passes cost more than it saves)
STRUCTURED_MIN_NV = 24


@njit(**_JIT)
def _step_quadratic(Vxx, Fx, Fu, Jq, Jw, dt, lie_iv, lie_nv, P, S, W, Hx, Hu, R, Qxx, Qux, Quu):
    """The blocks Qxx (ndx, ndx), Qux (nu, ndx), Quu (nu, nu) of F^T Vxx F for the semi-implicit
    Euler step F = [Fx Fu], from its structure instead of two dense products on F.  The rows of
    v+ are Fv = [Fvx Fvu] = [dt da_dq, I + dt da_dv | dt Minv B] (``Fx[n:]``, ``Fu[n:]``), and
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
    jw_times(Jw.T, lie_iv, lie_nv, Vqq.T, dt, P.T)  # P = dt Vqq Jw + Vqv
    for r in range(n):
        for c in range(n):
            P[r, c] += Vxx[r, n + c]
    jw_times(Jw.T, lie_iv, lie_nv, Vxx[n:, :n].T, dt, S.T)  # S = dt Vvq Jw + Vvv + dt Jw^T P
    for r in range(n):
        for c in range(n):
            S[r, c] += Vxx[n + r, n + c]
    block_T_times_add(Jw, lie_iv, lie_nv, P, dt, S)
    W[:, :] = 0.0  # W = Jq^T P
    block_T_times_add(Jq, lie_iv, lie_nv, P, 1.0, W)
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
    jw_times(Jq.T, lie_iv, lie_nv, Vqq.T, 1.0, P.T)  # E^T Vqq E = [[Jq^T Vqq Jq, 0], [0, 0]]
    S[:, :] = 0.0
    block_T_times_add(Jq, lie_iv, lie_nv, P, 1.0, S)
    for r in range(n):
        for c in range(n):
            Qxx[r, c] += S[r, c]


#: from this size on, products go to BLAS (single call per product, outside any parallel region);
#: below, our loops (a BLAS call costs about a microsecond of overhead)
BLAS_MIN = 24


@njit(**_JIT)
def _mmt(A, B, out):
    """out = A @ B.T."""
    if A.shape[1] >= BLAS_MIN:
        np.dot(A, B.T, out)
    else:
        gemm_nt(A, B, out)


@njit(**_JIT)
def _mtm(A, B, out):
    """out = A.T @ B."""
    if A.shape[1] >= BLAS_MIN:
        np.dot(A.T, B, out)
    else:
        gemm_tn(A, B, out, 1.0, 0.0)


@njit(**_JIT)
def backward_pass(Fx, Fu, lx, lu, lxx, lxu, luu, Vx_T, Vxx_T, reg_u, reg_x, reg_v, safeguard,
                  gaps, infeasible, us, lo, hi, bounded, qp_iter, dt, B, Jw, da_dq, da_dv, MinvB,
                  so_mode, T2q, T2v, T2qv, T2t, ints, floats, Q, V, ACC, MINV, lie_iv, lie_nv,
                  lie_H, Jq, structured, k, K, dV, Vx_all, fVxx, info):
    """The Riccati backward pass (see module docstring).

    Regularization: ``reg_u`` is added to Q_uu; ``reg_x`` to V'_xx inside Q_uu and Q_ux only
    (Tassa, Erez, Todorov 2012); ``reg_v`` to the diagonal of every V_xx (Crocoddyl).
    ``safeguard``: at a knot where Q_uu with the exact second-order dynamics terms is not
    positive definite, those terms are dropped at that knot (Gauss-Newton there); ``info[0]``
    counts such knots.  ``structured``: F^T V_xx F by :func:`_step_quadratic` (from Jq (T, n, n),
    Jw and the v+ rows of F; for nv >= ``STRUCTURED_MIN_NV``), else two dense products on the
    assembled F.  ``gaps`` (T + 1, ndx), used when ``infeasible``: the defects
    f_t = F(x_{t-1}, u_{t-1}) (-) x_t (f_0 = x0 (-) x_0) of multiple shooting; the value gradient
    at each knot becomes V_x + V_xx f (Mastalli et al. 2020).

    Writes the gains k (T, nu), K (T, nu, ndx), dV = (sum k.Qu, 1/2 sum k.Quu.k), the value
    gradients Vx_all (T + 1, ndx) and fVxx[t] = V_xx,t f_t (T + 1, ndx).  Returns
    (status, knot): status OK, or NOT_POSITIVE_DEFINITE at that knot."""
    T, ndx, nu = Fu.shape
    n = ndx // 2
    nz = ndx + nu
    m = unpack(ints, floats)
    # arguments and work arrays as borrowed views (no reference counting in the knot loop)
    Fx, Fu, lx, lu, lxx, lxu, luu = borrowed((Fx, Fu, lx, lu, lxx, lxu, luu))
    gaps, us, lo, hi, B, Jw, da_dq, da_dv = borrowed((gaps, us, lo, hi, B, Jw, da_dq, da_dv))
    MinvB, T2q, T2v, T2qv, T2t, Q, V = borrowed((MinvB, T2q, T2v, T2qv, T2t, Q, V))
    ACC, MINV, lie_iv, lie_nv, lie_H, Jq = borrowed((ACC, MINV, lie_iv, lie_nv, lie_H, Jq))
    k, K, dV, Vx_all, fVxx, info = borrowed((k, K, dV, Vx_all, fVxx, info))
    m_ = n if structured else 0  # work arrays of _step_quadratic
    work = (Vx_T.copy(), Vxx_T.copy(),
            np.empty((ndx, ndx)), np.empty((nu, ndx)), np.empty((nu, nu)),  # Q.._gn
            np.empty((ndx, nz)), np.empty((nz, ndx)), np.empty((nz, ndx)),   # F, FT, (Vxx F)^T
            np.empty((nz, nz)), np.empty(nz),                               # Qzz, Qz = [Qx, Qu]
            np.empty((nu, nu)), np.empty((nu, ndx)), np.empty((ndx, ndx)),  # Quu, Qux, Qxx
            np.empty((nu, nu)), np.empty((nu, ndx)), np.zeros((nu, nu)),    # Quu_r, Qux_r, L
            np.empty((nu, 1)), np.empty((nu, ndx)), np.empty((ndx, nu)),    # kt, Kt, KT
            np.empty((ndx, nu)), np.empty((ndx, ndx)),                      # ZT, KZ
            np.empty(nu), np.empty(nu), np.empty(nu),                       # x, lo_t, hi_t
            np.empty((ndx, nz)), np.empty((nu, nz)),                        # VFr, Qzr
            np.empty((m_, m_)), np.empty((m_, m_)), np.empty((m_, m_)),
            np.empty((m_, ndx)), np.empty((m_, nu)), np.empty((m_, ndx)),
            np.empty((nu, ndx)), np.empty((2 * nu, ndx)))                   # -W, Z
    free_own = np.empty(nu, dtype=np.bool_)
    (Vx, Vxx, Qxx_gn, Qux_gn, Quu_gn, F, FT, VFT, Qzz, Qz, Quu, Qux, Qxx, Quu_r, Qux_r, L, kt, Kt,
     KT, ZT, KZ, x, lo_t, hi_t, VFr, Qzr, Pw, Sw, Ww, Hxw, Huw, Rw, Wn, Zw) = borrowed(work)
    free = borrowed(free_own)
    info[0] = 0
    _value_update(Vx, Vxx, reg_v, gaps[T], infeasible, Vx_all[T], fVxx[T])
    dV[0] = 0.0
    dV[1] = 0.0
    # the value update in Schur form (below) when the gains solve the unclamped Q_uu with
    # reg_x = 0; otherwise the general form of Tassa et al. (2012, eq. 11)
    schur = not bounded and reg_x == 0.0
    for t in range(T - 1, -1, -1):
        Fxt, Fut = Fx[t], Fu[t]
        if reg_x > 0.0:  # F = [Fx Fu] for the regularization terms
            F[:, :ndx] = Fxt
            F[:, ndx:] = Fut
        # Qz = l_z + F^T Vx ; [[Qxx, .], [Qux, Quu]] = l_zz + F^T Vxx F
        if structured:
            for i in range(ndx):
                Qz[i] = lx[t, i]
            for c in range(nu):
                Qz[ndx + c] = lu[t, c]
            for r in range(ndx):
                a = Vx[r]
                for i in range(ndx):
                    Qz[i] += Fxt[r, i] * a
                for c in range(nu):
                    Qz[ndx + c] += Fut[r, c] * a
            _step_quadratic(Vxx, Fx[t], Fu[t], Jq[t], Jw[t], dt, lie_iv, lie_nv, Pw, Sw, Ww, Hxw,
                            Huw, Rw, Qxx, Qux, Quu)
            for i in range(ndx):
                for j in range(ndx):
                    Qxx[i, j] += lxx[t, i, j]
            for c in range(nu):
                for i in range(ndx):
                    Qux[c, i] += lxu[t, i, c]
                for d in range(nu):
                    Quu[c, d] += luu[t, c, d]
        else:
            for r in range(ndx):
                for i in range(ndx):
                    FT[i, r] = Fxt[r, i]
                for c in range(nu):
                    FT[ndx + c, r] = Fut[r, c]
            for i in range(nz):
                s = lx[t, i] if i < ndx else lu[t, i - ndx]
                for r in range(ndx):
                    s += FT[i, r] * Vx[r]
                Qz[i] = s
            _mmt(FT, Vxx, VFT)
            _mmt(FT, VFT, Qzz)
            for i in range(ndx):
                for j in range(ndx):
                    Qxx[i, j] = Qzz[i, j] + lxx[t, i, j]
            for c in range(nu):
                for i in range(ndx):
                    Qux[c, i] = Qzz[ndx + c, i] + lxu[t, i, c]
                for d in range(nu):
                    Quu[c, d] = Qzz[ndx + c, ndx + d] + luu[t, c, d]
        if so_mode > 0:
            if safeguard:
                Qxx_gn[:, :] = Qxx
                Qux_gn[:, :] = Qux
                Quu_gn[:, :] = Quu
            _second_order_terms(t, n, nu, dt, B, Vx, Jw, da_dq, da_dv, MinvB, so_mode, T2q, T2v,
                                T2qv, T2t, m, Q, V, ACC, MINV, lie_iv, lie_nv, lie_H, Qxx, Qux,
                                Quu)
        Qu = Qz[ndx:]
        _regularized(Quu, Qux, F, Fu[t], reg_u, reg_x, VFr, Qzr, Quu_r, Qux_r)
        factored = False  # whether L holds the Cholesky factor of Quu_r
        if so_mode > 0 and safeguard:
            factored = cholesky(Quu_r, L)
            if not factored:  # the exact terms make Q_uu indefinite: Gauss-Newton at this knot
                info[0] += 1
                Qxx[:, :] = Qxx_gn
                Qux[:, :] = Qux_gn
                Quu[:, :] = Quu_gn
                _regularized(Quu, Qux, F, Fu[t], reg_u, reg_x, VFr, Qzr, Quu_r, Qux_r)
        if bounded:
            for c in range(nu):
                lo_t[c] = lo[c] - us[t, c]
                hi_t[c] = hi[c] - us[t, c]
                kt[c, 0] = k[t + 1, c] if t + 1 < T else 0.0
            status, nf = box_qp(Quu_r, Qu, lo_t, hi_t, kt[:, 0].copy(), qp_iter, x, free, L)
            if status != 0:
                keep_alive((work, free_own))
                return NOT_POSITIVE_DEFINITE, t
            for c in range(nu):
                k[t, c] = x[c]
                for i in range(ndx):
                    K[t, c, i] = 0.0
            if nf > 0:
                idx = np.empty(nf, dtype=np.int64)
                f = 0
                for c in range(nu):
                    if free[c]:
                        idx[f] = c
                        f += 1
                Bf = np.empty((nf, ndx))
                Xf = np.empty((nf, ndx))
                for a in range(nf):
                    Bf[a] = Qux_r[idx[a]]
                cholesky_solve(L[:nf, :nf], Bf, Xf)
                for a in range(nf):
                    K[t, idx[a]] = Xf[a]
        else:
            if not (factored or cholesky(Quu_r, L)):
                keep_alive((work, free_own))
                return NOT_POSITIVE_DEFINITE, t
            cholesky_solve(L, Qu.reshape((nu, 1)), kt)
            forward_substitution(L, Qux_r, Kt)  # -W = -L^{-1} Qux, kept for the Schur form
            if schur:
                Wn[:, :] = Kt
            back_substitution(L, Kt)
            for c in range(nu):
                k[t, c] = kt[c, 0]
                K[t, c] = Kt[c]
        # expected decrease
        for c in range(nu):
            x[c] = 0.0
            for d in range(nu):
                x[c] += Quu[c, d] * k[t, d]
            dV[0] += k[t, c] * Qu[c]
            dV[1] += 0.5 * k[t, c] * x[c]
        if schur:
            _schur_value_update(Qz, Qxx, Qux, k[t], K[t], Wn, reg_u, Zw, KZ, Vx, Vxx)
            _value_update(Vx, Vxx, reg_v, gaps[t], infeasible, Vx_all[t], fVxx[t])
            continue
        # general form: V_x = Q_x + K^T (Quu k + Qu) + Qux^T k;
        # V_xx = Q_xx + sym(K^T (Quu K + 2 Qux)) (= Q_xx + K^T Quu K + K^T Qux + Qux^T K)
        for i in range(ndx):
            Vx[i] = Qz[i]
        for c in range(nu):
            a = x[c] + Qu[c]
            b = k[t, c]
            for i in range(ndx):
                Vx[i] += K[t, c, i] * a + Qux[c, i] * b
        # KZ = K^T Z with Z = Quu K + 2 Qux, as row products of KT = K^T and ZT = Z^T
        for i in range(ndx):
            for c in range(nu):
                KT[i, c] = K[t, c, i]
        _mmt(KT, Quu, ZT)
        for i in range(ndx):
            for c in range(nu):
                ZT[i, c] += 2.0 * Qux[c, i]
        _mmt(KT, ZT, KZ)
        for i in range(ndx):
            for j in range(i, ndx):
                a = Qxx[i, j] + 0.5 * (KZ[i, j] + KZ[j, i])
                Vxx[i, j] = a
                Vxx[j, i] = a
        _value_update(Vx, Vxx, reg_v, gaps[t], infeasible, Vx_all[t], fVxx[t])
    keep_alive((work, free_own))
    return OK, -1


@njit(inline="always", **_JIT)
def _regularized(Quu, Qux, F, Fu, reg_u, reg_x, VFr, Qzr, Quu_r, Qux_r):
    """The Q_uu, Q_ux the gains are computed from: Q_uu + reg_u I, and with reg_x the terms of
    V'_xx + reg_x I: + reg_x Fu^T [Fx Fu] (Tassa et al. 2012, eq. 10).  The value update keeps
    the unregularized Q_uu, Q_ux (their eq. 11)."""
    ndx, nu = Fu.shape
    for c in range(nu):
        for i in range(ndx):
            Qux_r[c, i] = Qux[c, i]
        for d in range(nu):
            Quu_r[c, d] = Quu[c, d] + (reg_u if c == d else 0.0)
    if reg_x > 0.0:
        nz = F.shape[1]
        for r in range(ndx):
            for i in range(nz):
                VFr[r, i] = reg_x * F[r, i]
        _mtm(Fu, VFr, Qzr)
        for c in range(nu):
            for i in range(ndx):
                Qux_r[c, i] += Qzr[c, i]
            for d in range(nu):
                Quu_r[c, d] += Qzr[c, ndx + d]


@njit(inline="always", **_JIT)
def _schur_value_update(Qz, Qxx, Qux, k, K, Wn, reg_u, Z, ZZ, Vx, Vxx):
    """V_x, V_xx of the general form (Tassa et al. 2012, eq. 11) for gains of the unclamped
    Q_uu_r = Q_uu + reg_u I = L L^T with reg_x = 0, from W = L^{-1} Q_ux (Wn = -W)::

        V_x = Q_x + Q_ux^T k - reg_u K^T k,   V_xx = Q_xx - W^T W - reg_u K^T K

    (K^T Q_uu K = W^T W - reg_u K^T K and K^T Q_ux = -W^T W): a Schur complement, symmetric by
    construction, with a third of the general form's products (UR3's backward pass 200 ->
    175 us).  The two products are one BLAS product Z^T Z of Z = [Wn; sqrt(reg_u) K] (work
    array (2 nu, ndx), ZZ (ndx, ndx)): faster than our loops at every size measured, UR3 to
    ATLAS (nu = 30, ndx = 72: 17 -> 7.5 us, 33 -> 12 us with reg_u > 0)."""
    nu, ndx = Wn.shape
    for i in range(ndx):
        Vx[i] = Qz[i]
    for c in range(nu):
        b = k[c]
        kr = reg_u * b
        for i in range(ndx):
            Vx[i] += Qux[c, i] * b - K[c, i] * kr
    rows = nu
    Z[:nu] = Wn
    if reg_u > 0.0:
        s = np.sqrt(reg_u)
        for c in range(nu):
            for j in range(ndx):
                Z[nu + c, j] = s * K[c, j]
        rows = 2 * nu
    Zr = Z[:rows]
    np.dot(Zr.T, Zr, ZZ)
    for i in range(ndx):  # Q_xx is symmetric up to rounding: keep its upper triangle
        for j in range(i, ndx):
            a = Qxx[i, j] - ZZ[i, j]
            Vxx[i, j] = a
            Vxx[j, i] = a


@njit(inline="always", **_JIT)
def _value_update(Vx, Vxx, reg_v, gap, infeasible, Vx_out, fVxx_out):
    """With gaps V_x += V_xx f, then V_xx += reg_v I (in place); store V_x and V_xx f.  (The gap
    term uses the unregularized V_xx: with the exact second-order terms, contracted with V_x, a
    large reg_v times a gap would otherwise enter Q_uu.)"""
    ndx = Vx.shape[0]
    for i in range(ndx):
        s = 0.0
        if infeasible:
            for j in range(ndx):
                s += Vxx[i, j] * gap[j]
        fVxx_out[i] = s
        Vx[i] += s
        Vx_out[i] = Vx[i]
    for i in range(ndx):
        Vxx[i, i] += reg_v


@njit(**_JIT)
def step_hessians(t, lam, dt, B, Jw, da_dq, da_dv, MinvB, so_mode, T2q, T2v, T2qv, T2t, ints,
                  floats, Q, V, ACC, MINV, lie_iv, lie_nv, lie_H):
    """(Fxx, Fxu, Fuu) of one knot: the second-order terms of the backward pass alone."""
    m = unpack(ints, floats)
    n = Jw.shape[1]
    nu = B.shape[1]
    Fxx = np.zeros((2 * n, 2 * n))
    Fux = np.zeros((nu, 2 * n))
    Fuu = np.zeros((nu, nu))
    _second_order_terms(t, n, nu, dt, B, lam, Jw, da_dq, da_dv, MinvB, so_mode, T2q, T2v, T2qv,
                        T2t, m, Q, V, ACC, MINV, lie_iv, lie_nv, lie_H, Fxx, Fux, Fuu)
    return Fxx, Fux.T.copy(), Fuu


# ---------------------------------------------------------------------------------- gradient
@njit(**_JIT)
def gradient_norm(Fx, Fu, lx, lu, lx_T, us, lo, hi):
    """|| dJ/du || (projected onto the box) by the adjoint sweep lam_t = l_x + Fx^T lam_{t+1}
    (the products run along the rows of Fx and Fu: contiguous, vectorized)."""
    T, ndx, nu = Fu.shape
    lam = lx_T.copy()
    nxt = np.empty(ndx)
    g = np.empty(nu)
    total = 0.0
    for t in range(T - 1, -1, -1):
        for c in range(nu):
            g[c] = lu[t, c]
        for i in range(ndx):
            nxt[i] = lx[t, i]
        for r in range(ndx):
            lr = lam[r]
            for c in range(nu):
                g[c] += Fu[t, r, c] * lr
            for i in range(ndx):
                nxt[i] += Fx[t, r, i] * lr
        for c in range(nu):
            if not ((us[t, c] <= lo[c] and g[c] > 0.0) or (us[t, c] >= hi[c] and g[c] < 0.0)):
                total += g[c] * g[c]
        lam[:] = nxt
    return np.sqrt(total)
