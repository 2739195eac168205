"""Result dataclasses of the derivative kernels.

Shapes are for one point; a batched call returns the same fields with a leading knot axis ``T``.
Tensor layout (the project convention, README "Conventions"): ``T[i, j, k] =
L_{x_k}(L_{x_j} f_i)``, output on axis 0, first derivative on axis 1, second on axis 2.  Configuration derivatives are Lie derivatives along
right perturbations ``q (+) d`` (``pinocchio.integrate``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class IDDerivatives:
    """Derivatives of inverse dynamics tau = ID(q, v, a).

    tau (n,), dtau_dq (n, n), dtau_dv (n, n), M (n, n) = dtau/da.
    Second order (``None`` unless requested): d2tau_dq2, d2tau_dv2, d2tau_dqdv (each (n, n, n),
    ``d2tau_dqdv[i, j, k] = d/dv_k (dtau_i/dq_j)``) and dM_dq (``[i, j, k] = dM_ij/dq_k``).
    The remaining second derivatives vanish or repeat: d2tau/da2 = d2tau/dadv = 0 and
    d2tau/da_j dq_k = dM_dq[:, j, k].
    """

    tau: np.ndarray
    dtau_dq: np.ndarray
    dtau_dv: np.ndarray
    M: np.ndarray
    d2tau_dq2: np.ndarray | None = None
    d2tau_dv2: np.ndarray | None = None
    d2tau_dqdv: np.ndarray | None = None
    dM_dq: np.ndarray | None = None


@dataclass
class FDDerivatives:
    """Derivatives of forward dynamics a = FD(q, v, tau).

    a (n,), da_dq (n, n), da_dv (n, n), da_dtau (n, n) = M^{-1}.
    Second order (``None`` unless requested): d2a_dq2, d2a_dv2, d2a_dqdv (``[i, j, k] =
    d/dv_k (da_i/dq_j)``), d2a_dtaudq (``[i, j, k] = d(M^{-1})_ij/dq_k``), each (n, n, n), or
    (n, n) matrices contracted with a co-state ``lam`` over the output index.
    """

    a: np.ndarray
    da_dq: np.ndarray
    da_dv: np.ndarray
    da_dtau: np.ndarray
    d2a_dq2: np.ndarray | None = None
    d2a_dv2: np.ndarray | None = None
    d2a_dqdv: np.ndarray | None = None
    d2a_dtaudq: np.ndarray | None = None
