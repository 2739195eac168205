"""The local model of one iteration: what the derivatives compute and what the backward pass
uses, decided once per iteration by the globalization (:mod:`ddp.globalization`) and passed to
both.

* ``hessians``: the cost Hessians, "exact" (the second-order terms of the residuals included) or
  "gauss-newton" (J_r^T W J_r);
* ``second_order``: DDP's second-order dynamics terms ``V'_x . F_zz``
  (:class:`~ddp.kernels.records.SecondOrderMode`): NONE for iLQR and for a Gauss-Newton iteration
  of DDP, else where they come from (full FD-SO tensors, or the contracted sweep at each knot).

iLQR is the exact-Hessian model without DDP's terms; a Gauss-Newton iteration (the safeguarded
globalization far from the optimum) is :data:`GAUSS_NEWTON`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .kernels.records import SecondOrderMode

#: where DDP's second-order dynamics terms come from (the ``second_order`` setting)
SECOND_ORDER = ("auto", "tensor", "contracted")
#: up to this nv, "auto" computes the full FD-SO tensors of all knots in the batched derivative
#: call and contracts them in the backward pass; above, the analytical backend's contracted
#: FDSVA-SO kernel runs at each knot inside the backward pass (O(n^3) instead of O(n^4)).
#: Measured per DDP solve (2-core Zen 5): tensors 1-7% faster at nv = 1, 2 (pendulum, double
#: pendulum, pendubot), the contracted kernel 3-5% faster at nv = 6 (UR3)
TENSOR_MAX_NV = 4


@dataclass(frozen=True)
class LocalModel:
    """The local model of an iteration (module docstring); ``exact``: whether it is the solve's
    exact model (its method's, with the settings' cost Hessians) rather than Gauss-Newton."""

    hessians: str = "gauss-newton"
    second_order: SecondOrderMode = SecondOrderMode.NONE
    exact: bool = False


#: Gauss-Newton cost Hessians, no second-order dynamics terms
GAUSS_NEWTON = LocalModel()


def second_order_mode(setting: str, nv: int, compiled: bool,
                      contacts: bool = False) -> SecondOrderMode:
    """The :class:`SecondOrderMode` of DDP for a ``second_order`` setting ("auto", "tensor" or
    "contracted") on a system of ``nv`` DoFs; ``compiled``: whether the backend is the analytical
    one (the contracted sweep needs its kernels); ``contacts``: whether some knot has contacts
    or is an impact (there the analytical backend's terms are the contracted ones only)."""
    if setting not in SECOND_ORDER:
        raise ValueError(f"second_order: expected one of {', '.join(SECOND_ORDER)}; got "
                         f"{setting!r}")
    if setting == "contracted" and not compiled:
        raise ValueError("second_order: 'contracted' needs the analytical backend; this backend "
                         "gives 'tensor' (or 'auto')")
    if setting == "tensor" and compiled and contacts:
        raise ValueError("second_order: 'tensor' is not available on the analytical backend with "
                         "contacts (its contact knots' terms are contracted); use 'auto' or "
                         "'contracted', or the CasADi or finite-difference backend for tensors")
    if setting == "auto":
        setting = ("contracted" if compiled and (nv > TENSOR_MAX_NV or contacts)
                   else "tensor")
    return SecondOrderMode.TENSORS if setting == "tensor" else SecondOrderMode.CONTRACTED


def exact_model(method: str, hessians: str, mode: SecondOrderMode) -> LocalModel:
    """The exact model of a solve: DDP with its second-order terms (``mode``), or iLQR without
    them, both with the cost Hessians of the ``hessians`` setting."""
    return LocalModel(hessians, mode if method == "ddp" else SecondOrderMode.NONE, True)
