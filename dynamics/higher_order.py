"""Higher-order time derivatives of rigid-body dynamics along a trajectory (Ali, Gabellieri, Franchi
2026, arXiv 2605.06498): inverse (H-GRNE-FBS, Alg. 2), forward (H-GABI-FBS, Alg. 3) and hybrid
(H-GHYB-FBS, Alg. 4) dynamics, and the closed form M, h, g and an admissible Coriolis matrix C
(Prop. 1, Lemma 1).

Conventions (the toolkit's, for every joint type and a fixed or free-flyer base):

* ``q`` on the configuration manifold, ``v`` Pinocchio's velocity (the free-flyer twist is local);
* the trajectory satisfies q' = v (right/local perturbation), and v^(k) = d^k v / dt^k of that vector;
* ``tau = rnea(q, v, v')`` (the free-flyer block is the base wrench in the base frame), so
  ``tau^(r) = d^r tau / dt^r`` along the trajectory.

Shapes: one sample, or a batch with a leading sample axis T (evaluated in parallel):

* ``rnea(model, q, v_derivs)``: q (nq,), v_derivs (r+2, nv) = [v, v', ..., v^(r+1)]
  -> tau_derivs (r+1, nv) = [tau, tau', ..., tau^(r)];
* ``aba(model, q, v, tau_derivs)``: tau_derivs (r+1, nv) -> accel_derivs (r+1, nv) = [v', ..., v^(r+1)];
* ``hybrid(...)``: the mix, see its docstring.

The kernels (:mod:`dynamics.kernels.higher_order`) propagate Taylor coefficients in body frames by
the Leibniz rule; the cost is O(N r^2) and the articulated inertia is computed once for all orders.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .inputs import prepare
from .jit import num_chunks, run_in_chunks
from .kernels import finite as _finite
from .kernels import higher_order as _ho
from .kernels import kinematics as _kin


class HybridResult(NamedTuple):
    """Output of :func:`hybrid`: every DoF's accelerations [v', ..., v^(r+1)] and generalized
    forces [tau, ..., tau^(r)], each (r+1, nv) (batched (T, r+1, nv)); given entries are copied."""

    accel_derivs: np.ndarray
    tau_derivs: np.ndarray


def _derivs(model, name, x, rows_min):
    """Checks a stack of derivatives: (R, nv) or (T, R, nv) with R >= rows_min; returns the batch
    (T, R, nv) and whether the input was a single sample."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name}: expected an array of floats of shape (r+?, {model.nv}); got "
                         f"{type(x).__name__}") from exc
    if arr.ndim not in (2, 3) or arr.shape[-1] != model.nv or arr.shape[-2] < rows_min:
        raise ValueError(f"{name}: expected shape (rows, {model.nv}) or (T, rows, {model.nv}) with "
                         f"rows >= {rows_min} for {model.name} (nv={model.nv}); got {arr.shape}")
    single = arr.ndim == 2
    arr = np.ascontiguousarray(arr[None] if single else arr)
    if _finite.first_nonfinite(arr.reshape(arr.shape[0], -1)) >= 0:
        idx = tuple(int(i) for i in np.argwhere(~np.isfinite(arr[0] if single else arr))[0])
        bad = (arr[0] if single else arr)[idx]
        raise ValueError(f"{name}: expected finite values; got {bad} at index {idx}")
    return arr, single


def _with_q(model, q, single, T, name):
    b = prepare(model, q=q)
    if b.single != single:
        raise ValueError(f"q and {name}: pass one sample (q (nq,), {name} (rows, nv)) or a batch "
                         f"(q (T, nq), {name} (T, rows, nv)); got q {np.shape(q)}")
    if b.T != T:
        raise ValueError(f"q and {name}: batches must have the same T; got {b.T} and {T}")
    return b["q"]


def rnea(model, q, v_derivs) -> np.ndarray:
    """H-GRNE: [tau, tau', ..., tau^(r)] (r+1, nv) from v_derivs = [v, v', ..., v^(r+1)] (r+2, nv).

    Row 0 equals ``dynamics.rnea(model, q, v, v')``; row k is its k-th time derivative along the
    trajectory with q' = v.  Batched: q (T, nq), v_derivs (T, r+2, nv) -> (T, r+1, nv).
    """
    VD, single = _derivs(model, "v_derivs", v_derivs, 2)
    Q = _with_q(model, q, single, VD.shape[0], "v_derivs")
    out = np.empty((len(Q), VD.shape[1] - 1, model.nv))
    run_in_chunks(_ho.rnea_batch, _ho.rnea_chunk, (*model.kernel_args, Q, VD, out),
                  num_chunks(len(Q)))
    return out[0] if single else out


def _motion_mask(model, motion_joints, base):
    """Per joint, 1 for prescribed motion (cached per model and choice)."""
    key = (tuple(motion_joints), base)
    cache = model.__dict__.setdefault("_higher_order_masks", {})
    if key not in cache:
        cache[key] = _build_motion_mask(model, *key)
    return cache[key]


def _build_motion_mask(model, motion_joints, base):
    names = list(motion_joints)
    unknown = [n for n in names if n not in model.joint_names[1:]]
    if unknown:
        raise ValueError(f"motion_joints: unknown joint name(s) {unknown}; expected names from "
                         f"{model.joint_names[1:]}")
    if base not in ("wrench", "twist"):
        raise ValueError(f"base: expected 'wrench' or 'twist'; got {base!r}")
    mask = np.zeros(model.njoints, dtype=np.int64)
    for n in names:
        mask[model.joint_names.index(n)] = 1
    roots = [i for i in range(1, model.njoints)
             if model.arrays.parent[i] == 0 and model.arrays.jtype[i] == _kin.FF]
    if base == "twist":
        if not roots:
            raise ValueError("base: 'twist' needs a free-flyer root joint; "
                             f"{model.name} has a fixed base")
        mask[roots] = 1
    elif any(mask[i] for i in roots):
        raise ValueError(f"motion_joints: the free-flyer root {model.joint_names[roots[0]]!r} is "
                         "prescribed with base='twist', not through motion_joints")
    return mask


def hybrid(model, q, v, accel_derivs, tau_derivs, motion_joints: Sequence[str] = (),
           base: str = "wrench") -> HybridResult:
    """H-GHYB: higher-order hybrid dynamics.

    The joints named in ``motion_joints`` have prescribed motion: their entries of
    ``accel_derivs`` = [v', ..., v^(r+1)] (r+1, nv) are inputs and their generalized forces are
    computed.  The other joints have prescribed torques: their entries of ``tau_derivs``
    = [tau, ..., tau^(r)] (r+1, nv) are inputs and their accelerations are computed.  A free-flyer
    base is ``base="wrench"`` (its wrench derivatives are given in ``tau_derivs[:, :6]``) or
    ``base="twist"`` (its twist derivatives are given in ``accel_derivs[:, :6]``).  Entries that are
    outputs are ignored on input.  With no prescribed motion this is :func:`aba`.
    """
    mask = _motion_mask(model, motion_joints, base)
    TAU, single = _derivs(model, "tau_derivs", tau_derivs, 1)
    ACC, single_a = _derivs(model, "accel_derivs", accel_derivs, 1)
    if single_a != single or ACC.shape[:2] != TAU.shape[:2]:
        raise ValueError(f"accel_derivs and tau_derivs: expected the same shape; got "
                         f"{np.shape(accel_derivs)} and {np.shape(tau_derivs)}")
    acc, tau = _solve_hybrid(model, q, v, ACC, TAU, mask, single)
    return HybridResult(acc, tau)


def _solve_hybrid(model, q, v, ACC, TAU, mask, single):
    """Runs the hybrid kernel on checked derivative stacks (ACC may be None: no prescribed motion);
    returns (accel_derivs, tau_derivs) with the single-sample axis dropped."""
    b = prepare(model, q=q, v=v)
    if b.single != single or b.T != TAU.shape[0]:
        raise ValueError(f"q, v and tau_derivs: expected one sample (q (nq,), v (nv,), tau_derivs "
                         f"(r+1, nv)) or batches of the same T; got q {np.shape(q)}, v "
                         f"{np.shape(v)}, tau_derivs {TAU.shape[1:] if single else TAU.shape}")
    T, r1, nv = TAU.shape
    VD = np.empty((T, r1 + 1, nv))
    VD[:, 0] = b["v"]
    if ACC is not None:
        VD[:, 1:] = ACC
    TAU = TAU.copy()
    run_in_chunks(_ho.hybrid_batch, _ho.hybrid_chunk,
                  (*model.kernel_args, b["q"], VD, TAU, mask), num_chunks(b.T))
    acc = VD[:, 1:]
    return (acc[0], TAU[0]) if single else (acc, TAU)


def aba(model, q, v, tau_derivs) -> np.ndarray:
    """H-GABI: [v', v'', ..., v^(r+1)] (r+1, nv) from tau_derivs = [tau, ..., tau^(r)] (r+1, nv).

    Row 0 equals ``dynamics.aba(model, q, v, tau)``.  The articulated inertias are computed once
    for all orders.  Batched: q (T, nq), v (T, nv), tau_derivs (T, r+1, nv) -> (T, r+1, nv).
    """
    TAU, single = _derivs(model, "tau_derivs", tau_derivs, 1)
    return _solve_hybrid(model, q, v, None, TAU, _motion_mask(model, (), "wrench"), single)[0]


class ClosedForm(NamedTuple):
    """tau = M v' + h + g with h = C v; C is an admissible Coriolis matrix (M' = C + C^T, i.e.
    M' - 2 C skew-symmetric).  Shapes (nv, nv), (nv,), (nv,), (nv, nv), batched with a leading T."""

    M: np.ndarray
    h: np.ndarray
    g: np.ndarray
    C: np.ndarray


def closed_form(model, q, v) -> ClosedForm:
    """The closed-form equations of motion (the paper's Prop. 1 and Lemma 1) at (q, v): mass
    matrix M, Coriolis and centrifugal vector h = C v, gravity vector g and the Coriolis matrix C.
    C equals Pinocchio's ``computeCoriolisMatrix``."""
    b = prepare(model, q=q, v=v)
    T, nv = b.T, model.nv
    out = (np.empty((T, nv, nv)), np.empty((T, nv)), np.empty((T, nv)), np.empty((T, nv, nv)))
    run_in_chunks(_ho.closed_form_batch, _ho.closed_form_chunk,
                  (*model.kernel_args, b["q"], b["v"], *out), num_chunks(T))
    return ClosedForm(*b.unbatch(out))
