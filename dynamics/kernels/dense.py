"""Small dense matrix products for the kernels, compiled with numba.

The kernels deliberately avoid ``np.dot`` (BLAS): called from inside numba's parallel loops,
OpenBLAS starts its own threads, which spin and compete with ours for the cores (measured on
ATLAS FD-SO: 7.6 ms with BLAS threads, 1.0 ms without).  These loops keep the innermost index
contiguous so that LLVM vectorizes them.
"""

import numpy as np

from ..jit import njit

_BLOCK = 64  # columns of B per panel: a k x 64 panel of B stays in L1 while all rows use it


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def gemm(A, B, out, alpha):
    """out = alpha * A @ B   (A: (n, k), B: (k, p), out: (n, p)).

    Wide products go in panels of ``_BLOCK`` columns, so that the k x panel block of B stays in L1
    while every row of A uses it.  The inner loop is kept in the plain form ``o[j] += a * b[j]``
    over 1-D views: LLVM vectorizes exactly that (a branch or a scale inside it measured 3-4x
    slower); alpha is applied once per output panel."""
    n, k = A.shape
    p = B.shape[1]
    if p <= 2 * _BLOCK:  # narrow: plain row loops (views cost more than they save here)
        for i in range(n):
            for j in range(p):
                out[i, j] = 0.0
            for l in range(k):
                a = alpha * A[i, l]
                for j in range(p):
                    out[i, j] += a * B[l, j]
        return
    bs = _BLOCK
    for j0 in range(0, p, bs):
        j1 = min(j0 + bs, p)
        for i in range(n):
            o = out[i, j0:j1]
            o[:] = 0.0
            for l in range(k):
                a = A[i, l]
                b = B[l, j0:j1]
                for j in range(j1 - j0):
                    o[j] += a * b[j]
            if alpha != 1.0:
                for j in range(j1 - j0):
                    o[j] *= alpha


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def gemm_tn(A, B, out, alpha, beta):
    """out = alpha * A.T @ B + beta * out   (A: (k, n), B: (k, p), out: (n, p))."""
    k, n = A.shape
    p = B.shape[1]
    if beta == 0.0:
        for i in range(n):
            for j in range(p):
                out[i, j] = 0.0
    elif beta != 1.0:
        for i in range(n):
            for j in range(p):
                out[i, j] *= beta
    for l in range(k):
        for i in range(n):
            a = alpha * A[l, i]
            if a != 0.0:
                for j in range(p):
                    out[i, j] += a * B[l, j]


@njit(callee=True, cache=True, error_model="numpy", fastmath=True)
def gemm_nt(A, B, out):
    """out = A @ B.T   (A: (n, k), B: (p, k), out: (n, p)), as dot products of rows: both
    operands are read along contiguous rows and the sum stays in registers, which LLVM
    vectorizes (measured 3x faster than :func:`gemm` for the 12 x 12 x 18 products of a DDP
    backward pass)."""
    n, k = A.shape
    p = B.shape[0]
    for i in range(n):
        for j in range(p):
            s = 0.0
            for l in range(k):
                s += A[i, l] * B[j, l]
            out[i, j] = s


@njit(cache=True, error_model="numpy", fastmath=True)
def symm_gemm_col_sparse(A, B, seg, nseg, half, out, alpha):
    """out = alpha * A @ B   (A: (n, n) symmetric, B: (n, p), out: (n, p)) for a B whose column
    j is zero outside the row ranges ``seg[j, s, 0] <= l < seg[j, s, 1]``, s < ``nseg[j]``;
    columns j and ``half + j`` (j < half) share a pattern, that of j.

    Column j of the product is accumulated as sum_l B[l, j] A[l, :] (A's row l is its column l):
    a contiguous axpy of length n per non-zero of B, which LLVM vectorizes whatever the pattern,
    so the work is proportional to the non-zeros of B; the paired columns share each read of A,
    and two rows l of A go into each pass over the accumulators (whose loads and stores bound
    the loop: ATLAS 9.2 -> 6.5 us)."""
    n = A.shape[0]
    p = B.shape[1]
    acc = np.empty((2, n))
    a0 = acc[0]
    a1 = acc[1]
    for j in range(half):
        jj = half + j
        a0[:] = 0.0
        a1[:] = 0.0
        for s in range(nseg[j]):
            l, hi = seg[j, s, 0], seg[j, s, 1]
            while l + 1 < hi:
                r0 = A[l]
                r1 = A[l + 1]
                b00 = alpha * B[l, j]
                b01 = alpha * B[l + 1, j]
                b10 = alpha * B[l, jj]
                b11 = alpha * B[l + 1, jj]
                for i in range(n):
                    x = r0[i]
                    y = r1[i]
                    a0[i] += b00 * x + b01 * y
                    a1[i] += b10 * x + b11 * y
                l += 2
            if l < hi:
                r0 = A[l]
                b00 = alpha * B[l, j]
                b10 = alpha * B[l, jj]
                for i in range(n):
                    x = r0[i]
                    a0[i] += b00 * x
                    a1[i] += b10 * x
        for i in range(n):
            out[i, j] = a0[i]
            out[i, jj] = a1[i]
    for j in range(2 * half, p):
        a0[:] = 0.0
        for s in range(nseg[j]):
            for l in range(seg[j, s, 0], seg[j, s, 1]):
                a = A[l]
                b0 = alpha * B[l, j]
                for i in range(n):
                    a0[i] += b0 * a[i]
        for i in range(n):
            out[i, j] = a0[i]


# ---------------------------------------------------------------------------------- Cholesky
@njit(cache=True, error_model="numpy", inline="always")
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


@njit(callee=True, cache=True, error_model="numpy")
def cholesky_solve(L, B, X):
    """X = -(L L^T)^{-1} B for B (n, p) (the sign DDP's gains need), by substitutions on whole
    rows (contiguous, vectorized over the p columns), four rows of X into each pass over row i:
    the loads and stores of row i bound the loop (ATLAS's gains, n = 30, p = 72: 9.3 -> 5.6 us;
    p = 1: 2.4 -> 1.1 us)."""
    forward_substitution(L, B, X)
    back_substitution(L, X)


@njit(callee=True, cache=True, error_model="numpy")
def cholesky_solve_vector(L, b, x):
    """x = (L L^T)^{-1} b for one right-hand side b (n,), by scalar substitutions along the rows
    of L (the row-wise :func:`cholesky_solve` makes a view per four rows; Talos's contact
    co-state, n = 50: 5.3 -> 2.1 us).  x may be b."""
    n = b.shape[0]
    for i in range(n):
        s = b[i]
        Li = L[i]
        for k in range(i):
            s -= Li[k] * x[k]
        x[i] = s / Li[i]
    for i in range(n - 1, -1, -1):
        xi = x[i] / L[i, i]
        x[i] = xi
        Li = L[i]
        for k in range(i):
            x[k] -= Li[k] * xi


@njit(cache=True, error_model="numpy", inline="always")
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


@njit(cache=True, error_model="numpy", inline="always")
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
