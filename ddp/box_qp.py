"""The box-constrained QP of the backward pass with bounded controls (Tassa, Mansard, Todorov
2014: projected Newton on the free set).  The solver calls the compiled kernel
(:func:`ddp.kernels.passes.box_qp`) at each knot; :func:`box_qp` is the same kernel for one QP."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import passes as _passes


@dataclass
class BoxQPResult:
    """x: the minimizer; free: the controls not at an active bound; L: the Cholesky factor of H
    on the free set (nf x nf, None when every control is clamped); status: "solved" or
    "not-positive-definite" (H is not positive definite on the free set)."""

    x: np.ndarray
    free: np.ndarray
    L: np.ndarray | None
    status: str

    @property
    def solved(self) -> bool:
        return self.status == "solved"


def box_qp(H, g, lower, upper, x0, max_iter=50) -> BoxQPResult:
    """Minimize 1/2 x^T H x + g^T x subject to lower <= x <= upper, from x0."""
    H, g = np.ascontiguousarray(H, dtype=float), np.ascontiguousarray(g, dtype=float)
    n = g.shape[0]
    x, free, L = np.empty(n), np.empty(n, dtype=bool), np.zeros((n, n))
    status, nf = _passes.box_qp(H, g, np.broadcast_to(lower, (n,)).astype(float),
                                np.broadcast_to(upper, (n,)).astype(float),
                                np.asarray(x0, dtype=float).copy(), int(max_iter), x, free, L)
    return BoxQPResult(x, free, L[:nf, :nf].copy() if nf else None,
                       "solved" if status == 0 else "not-positive-definite")
