"""Public entry points of the compiled kernels: validate, batch, call, unbatch.

Each function takes one point or a batch with a leading knot axis (see :mod:`dynamics.inputs`);
batches are evaluated in parallel over knots on all cores.
"""

from __future__ import annotations

import numpy as np

from .inputs import prepare
from .kernels import forward as _fwd
from .kernels import inverse as _inv
from .results import FDDerivatives, IDDerivatives

#: Below this many DoFs the inverse-partial relation uses the dense product with M^{-1} (DMM),
#: above it the ABA-Zero-Algorithm column sweeps (AZA).  Measured with ``python -m problems.bench
#: ipr`` on serial chains (results/ipr_crossover.csv).
IPR_CROSSOVER_NV = 10_000


def rnea(model, q, v, a) -> np.ndarray:
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q).  (nv,) or (T, nv)."""
    b = prepare(model, q=q, v=v, a=a)
    return b.unbatch(_inv.rnea_batch(model.arrays, b["q"], b["v"], b["a"]))


def aba(model, q, v, tau) -> np.ndarray:
    """Forward dynamics a = M(q)^{-1} (tau - C(q, v) v - g(q)) by ABA.  (nv,) or (T, nv)."""
    b = prepare(model, q=q, v=v, tau=tau)
    return b.unbatch(_fwd.aba_batch(model.arrays, b["q"], b["v"], b["tau"]))


def mass_matrix(model, q) -> np.ndarray:
    """Joint-space inertia matrix M(q) (full, symmetric) by CRBA.  (nv, nv) or (T, nv, nv)."""
    b = prepare(model, q=q)
    return b.unbatch(_inv.crba_batch(model.arrays, b["q"]))


def inverse_mass_matrix(model, q) -> np.ndarray:
    """M(q)^{-1} (CRBA + sparse L^T D L factorization).  (nv, nv) or (T, nv, nv)."""
    b = prepare(model, q=q)
    return b.unbatch(_fwd.minv_batch(model.arrays, b["q"]))


def id_derivatives(model, q, v, a) -> IDDerivatives:
    """First-order derivatives of inverse dynamics by IDSVA: tau, dtau_dq, dtau_dv, M."""
    b = prepare(model, q=q, v=v, a=a)
    out = _inv.idsva_batch(model.arrays, b["q"], b["v"], b["a"])
    return IDDerivatives(*b.unbatch(out))


def fd_derivatives(model, q, v, tau, ipr: str = "auto") -> FDDerivatives:
    """First-order derivatives of forward dynamics by FDSVA: a, da_dq, da_dv, da_dtau = M^{-1}.

    ``ipr`` chooses how the inverse-partial relation da/dx = -M^{-1} dtau/dx is applied: ``"dmm"``
    (dense product with M^{-1}), ``"aza"`` (ABA-Zero-Algorithm per column) or ``"auto"`` (DMM up
    to ``IPR_CROSSOVER_NV`` DoFs).
    """
    if ipr not in ("auto", "dmm", "aza"):
        raise ValueError(f"ipr: expected 'auto', 'dmm' or 'aza'; got {ipr!r}")
    if ipr == "auto":
        ipr = "dmm" if model.nv <= IPR_CROSSOVER_NV else "aza"
    code = _fwd.IPR_DMM if ipr == "dmm" else _fwd.IPR_AZA
    b = prepare(model, q=q, v=v, tau=tau)
    out = _fwd.fdsva_batch(model.arrays, b["q"], b["v"], b["tau"], code)
    return FDDerivatives(*b.unbatch(out))
