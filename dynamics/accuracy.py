"""Accuracy metrics and the finite-difference alternatives of the second-order paper.

* :func:`metrics`: MAE, RMSAE, MRE, RMSRE (eq. 40-43) of a tensor against a reference.
* :func:`id_hessian`: the n x 3n x 3n second-derivative tensor of tau(q, v, a) that the paper's
  metrics are taken over, assembled from an :class:`~dynamics.results.IDDerivatives`.
* :func:`finite_diff_1`: Finite-Diff-1 (App. A.II.1), second-order central differences of RNEA,
  steps h = k (the paper found the best between 1e-4 and 1e-3).
* :func:`finite_diff_2`: Finite-Diff-2 (App. A.II.2), first-order central differences of the
  analytical first derivatives (IDSVA), step h = 1e-5 (the paper's best).

Both are implemented (for RNEA and ABA alike) in :mod:`dynamics.finite_difference`.
"""

from __future__ import annotations

import numpy as np

from . import finite_difference as _fd
from .finite_difference import FD1_STEP, FD2_STEP
from .results import IDDerivatives


def metrics(A, A_ref) -> dict:
    """The paper's error metrics of A against A_ref (same shape): MAE (eq. 40), RMSAE (41),
    MRE (42) and RMSRE (43), with the relative error of an entry taken w.r.t. max(|ref|, 1)."""
    A, A_ref = np.asarray(A, dtype=float), np.asarray(A_ref, dtype=float)
    if A.shape != A_ref.shape:
        raise ValueError(f"A: expected the shape of A_ref {A_ref.shape}; got {A.shape}")
    d = A - A_ref
    r = d / np.maximum(np.abs(A_ref), 1.0)
    return dict(MAE=float(np.max(np.abs(d))), RMSAE=float(np.sqrt(np.mean(d * d))),
                MRE=float(np.max(np.abs(r))), RMSRE=float(np.sqrt(np.mean(r * r))))


def id_hessian(d: IDDerivatives) -> np.ndarray:
    """The (n, 3n, 3n) tensor of second derivatives of tau w.r.t. x = (q, v, a):
    blocks [[d2tau_dq2, d2tau_dqdv, dM_dq], [d2tau_dvdq, d2tau_dv2, 0], [dM_dq^R, 0, 0]] where
    ``^R`` swaps the two derivative axes (d2tau/da_j dq_k = dM[:, j, k])."""
    n = d.d2tau_dq2.shape[-1]
    H = np.zeros((n, 3 * n, 3 * n))
    H[:, :n, :n] = d.d2tau_dq2
    H[:, :n, n:2 * n] = d.d2tau_dqdv
    H[:, n:2 * n, :n] = np.swapaxes(d.d2tau_dqdv, 1, 2)
    H[:, n:2 * n, n:2 * n] = d.d2tau_dv2
    H[:, 2 * n:, :n] = d.dM_dq
    H[:, :n, 2 * n:] = np.swapaxes(d.dM_dq, 1, 2)
    return H


def finite_diff_2(model, q, v, a, h: float = FD2_STEP) -> IDDerivatives:
    """Finite-Diff-2: central differences of IDSVA's first derivatives (one point)."""
    return _fd.id_second_derivatives(model, q, v, a, method="finite-diff-2", h=h)


def finite_diff_1(model, q, v, a, h: float = FD1_STEP) -> IDDerivatives:
    """Finite-Diff-1: second-order central differences of RNEA (one point), eq. 55-56 with
    k = h.  First derivatives by central differences too."""
    return _fd.id_second_derivatives(model, q, v, a, method="finite-diff-1", h=h)
