"""Public entry points of the compiled kernels: validate, batch, call, unbatch.

Each function takes one point or a batch with a leading knot axis (see :mod:`dynamics.inputs`);
batches are evaluated in parallel over knots on all cores.
"""

from __future__ import annotations

import numpy as np

from .inputs import prepare, reusable_buffer
from .jit import compile_notice, num_chunks, run_in_chunks
from .kernels import forward as _fwd
from .kernels import forward_so as _fso
from .kernels import inverse as _inv
from .kernels import second_order as _so
from .results import FDDerivatives, IDDerivatives

_IPR = {"dmm": _fwd.IPR_DMM, "aza": _fwd.IPR_AZA, "ltdl": _fwd.IPR_LTDL}

#: the ``ipr="auto"`` choice: of the three, ltdl measured fastest on UR3, HyQ, ATLAS and Talos when
#: FDSVA was written (``soddp bench fo`` times this default beside Pinocchio)
IPR_AUTO = "ltdl"


def rnea(model, q, v, a) -> np.ndarray:
    """Inverse dynamics tau = M(q) a + C(q, v) v + g(q).  (nv,) or (T, nv)."""
    compile_notice(_inv.rnea_chunk, "RNEA", 10)
    b = prepare(model, q=q, v=v, a=a)
    out = np.empty((b.T, model.nv))
    run_in_chunks(_inv.rnea_batch, _inv.rnea_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["a"], out), num_chunks(b.T))
    return b.unbatch(out)


def aba(model, q, v, tau) -> np.ndarray:
    """Forward dynamics a = M(q)^{-1} (tau - C(q, v) v - g(q)) by ABA.  (nv,) or (T, nv)."""
    compile_notice(_fwd.aba_chunk, "ABA", 10)
    b = prepare(model, q=q, v=v, tau=tau)
    out = np.empty((b.T, model.nv))
    run_in_chunks(_fwd.aba_batch, _fwd.aba_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["tau"], out), num_chunks(b.T))
    return b.unbatch(out)


def mass_matrix(model, q) -> np.ndarray:
    """Joint-space inertia matrix M(q) (full, symmetric) by CRBA.  (nv, nv) or (T, nv, nv)."""
    compile_notice(_inv.crba_chunk, "CRBA", 10)
    b = prepare(model, q=q)
    out = np.empty((b.T, model.nv, model.nv))
    run_in_chunks(_inv.crba_batch, _inv.crba_chunk, (*model.kernel_args, b["q"], out),
                  num_chunks(b.T))
    return b.unbatch(out)


def inverse_mass_matrix(model, q) -> np.ndarray:
    """M(q)^{-1} (CRBA + sparse L^T D L factorization).  (nv, nv) or (T, nv, nv)."""
    compile_notice(_fwd.minv_chunk, "the inverse mass matrix", 10)
    b = prepare(model, q=q)
    out = np.empty((b.T, model.nv, model.nv))
    run_in_chunks(_fwd.minv_batch, _fwd.minv_chunk, (*model.kernel_args, b["q"], out),
                  num_chunks(b.T))
    return b.unbatch(out)


def id_derivatives(model, q, v, a) -> IDDerivatives:
    """First-order derivatives of inverse dynamics by IDSVA: tau, dtau_dq, dtau_dv, M."""
    compile_notice(_inv.idsva_chunk, "IDSVA", 15)
    b = prepare(model, q=q, v=v, a=a)
    T, nv = b.T, model.nv
    out = (np.empty((T, nv)), np.empty((T, nv, nv)), np.empty((T, nv, nv)),
           np.empty((T, nv, nv)))
    run_in_chunks(_inv.idsva_batch, _inv.idsva_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["a"], *out), num_chunks(T))
    return IDDerivatives(*b.unbatch(out))


def id_second_derivatives(model, q, v, a, out: IDDerivatives | None = None) -> IDDerivatives:
    """First- and second-order derivatives of inverse dynamics by IDSVA-SO (Alg. 1 of the
    second-order paper): tau, dtau_dq, dtau_dv, M and d2tau_dq2, d2tau_dv2, d2tau_dqdv, dM_dq,
    each (n, n, n) (batched: (T, n, n, n)).

    Layout ``T[i, j, k] = L_{x_k}(L_{x_j} tau_i)``; ``d2tau_dqdv[i, j, k] = d/dv_k (dtau_i/dq_j)``;
    ``dM_dq[i, j, k] = dM_ij/dq_k``.  By construction (tau is affine in a) d2tau/da2 = 0,
    d2tau/dadv = 0 and d2tau/da_j dq_k = dM_dq[:, j, k].  For joints whose configuration
    derivatives do not commute (spherical, free-flyer, planar) the q-q blocks between their DoFs
    are not symmetric: ``d2tau_dq2[i, j, k] - d2tau_dq2[i, k, j]`` is the first derivative along the
    Lie bracket of the two directions.

    ``out``: the result of an earlier call with the same shapes, whose arrays are overwritten
    (avoids allocating, for ATLAS, 1.5 MB per knot on every call).
    """
    compile_notice(_so.idsva_so_chunk, "IDSVA-SO", 20)
    b = prepare(model, q=q, v=v, a=a)
    buf = reusable_buffer(out, _so.id_so_size(b.T, model.nv), "IDDerivatives", b)
    run_in_chunks(_so.idsva_so_batch, _so.idsva_so_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["a"], buf), num_chunks(b.T))
    result = IDDerivatives(*b.unbatch(_so.id_so_views(buf, b.T, model.nv)))
    result._buffer = buf
    return result


def fd_derivatives(model, q, v, tau, ipr: str = "auto") -> FDDerivatives:
    """First-order derivatives of forward dynamics by FDSVA: a, da_dq, da_dv, da_dtau = M^{-1}.

    ``ipr`` chooses how the inverse-partial relation da/dx = -M^{-1} dtau/dx is applied:
    ``"dmm"`` (M^{-1} formed, then a dense product), ``"aza"`` (ABA-Zero-Algorithm per column),
    ``"ltdl"`` (one block solve with the sparse L^T D L factor of M) or ``"auto"`` (``IPR_AUTO``,
    the fastest measured on every robot we benchmark).  All give the same result to rounding.
    """
    compile_notice(_fwd.fdsva_chunk, "FDSVA", 30)
    if ipr not in ("auto", *_IPR):
        raise ValueError(f"ipr: expected 'auto', 'dmm', 'aza' or 'ltdl'; got {ipr!r}")
    code = _IPR[IPR_AUTO if ipr == "auto" else ipr]
    b = prepare(model, q=q, v=v, tau=tau)
    T, nv = b.T, model.nv
    out = (np.empty((T, nv)), np.empty((T, nv, nv)), np.empty((T, nv, nv)),
           np.empty((T, nv, nv)))
    run_in_chunks(_fwd.fdsva_batch, _fwd.fdsva_chunk,
                  (*model.kernel_args, b["q"], b["v"], b["tau"], code, *out), num_chunks(T))
    return FDDerivatives(*b.unbatch(out))


#: ``inner="auto"``/``outer="auto"`` choices of :func:`fd_second_derivatives`: DTM up to these
#: sizes (nv), IDFOZA / AZA above.  Measured by ``soddp bench crossover``
#: (results/fd_so_crossover.md): with our kernels DTM is faster for both terms on every size
#: measured (serial chains and binary trees, N <= 60); IDFOZA above 60 DoFs is an extrapolation
#: from its lower complexity, AZA is never chosen (4x slower than DTM at N = 60).
INNER_CROSSOVER_NV = 60
OUTER_CROSSOVER_NV = 10_000


def fd_second_derivatives(model, q, v, tau, lam=None, inner: str = "auto", outer: str = "auto",
                          out: FDDerivatives | None = None) -> FDDerivatives:
    """First- and second-order derivatives of forward dynamics a = FD(q, v, tau) by FDSVA-SO.

    Returns a, da_dq, da_dv, da_dtau (= M^{-1}) and d2a_dq2, d2a_dv2, d2a_dqdv
    (``[i, j, k] = d/dv_k (da_i/dq_j)``) and d2a_dtaudq (``[i, j, k] = d(M^{-1})_ij/dq_k``), each
    (n, n, n) (batched (T, n, n, n)).  The others vanish: d2a/dtau2 = d2a/dtau dv = 0.

    With ``lam`` (an n-vector, or (T, n) for a batch) the second-order fields are contracted over
    the output index, ``sum_i lam_i T[i, :, :]``, and returned as (n, n) matrices, computed
    without forming any n^3 tensor (what the DDP backward pass consumes).

    ``inner``: "dtm" | "idfoza" | "auto" and ``outer``: "dtm" | "aza" | "auto" choose how the
    Inner- and Outer-Terms of eq. 46 are computed (full tensors only; all give the same result).
    ``out``: a result of an earlier call with the same shapes, whose arrays are overwritten.
    """
    compile_notice(_fso.fdsva_so_chunk, "FDSVA-SO", 45)
    if inner not in ("auto", "dtm", "idfoza"):
        raise ValueError(f"inner: expected 'auto', 'dtm' or 'idfoza'; got {inner!r}")
    if outer not in ("auto", "dtm", "aza"):
        raise ValueError(f"outer: expected 'auto', 'dtm' or 'aza'; got {outer!r}")
    n = model.nv
    if lam is not None:
        b = prepare(model, q=q, v=v, tau=tau, lam=lam)
        buf = reusable_buffer(out, _fso.fd_lam_size(b.T, n), "FDDerivatives (with lam)", b)
        run_in_chunks(_fso.fdsva_so_lam_batch, _fso.fdsva_so_lam_chunk,
                      (*model.kernel_args, b["q"], b["v"], b["tau"], b["lam"], buf),
                      num_chunks(b.T))
        views = _fso.fd_lam_views(buf, b.T, n)
    else:
        b = prepare(model, q=q, v=v, tau=tau)
        if inner == "auto":
            inner = "dtm" if n <= INNER_CROSSOVER_NV else "idfoza"
        if outer == "auto":
            outer = "dtm" if n <= OUTER_CROSSOVER_NV else "aza"
        buf = reusable_buffer(out, _so.id_so_size(b.T, n), "FDDerivatives", b)
        methods = (_fso.INNER_DTM if inner == "dtm" else _fso.INNER_IDFOZA,
                   _fso.OUTER_DTM if outer == "dtm" else _fso.OUTER_AZA)
        run_in_chunks(_fso.fdsva_so_batch, _fso.fdsva_so_chunk,
                      (*model.kernel_args, b["q"], b["v"], b["tau"], *methods, buf),
                      num_chunks(b.T))
        views = _so.id_so_views(buf, b.T, n)
    result = FDDerivatives(*b.unbatch(views))
    result._buffer = buf
    return result
