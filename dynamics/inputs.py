"""Validation of user input and the single-point / batch convention.

Every public kernel accepts either one point (``q`` of shape ``(nq,)``, ``v`` of shape ``(nv,)``,
...) or a batch with a leading knot axis (``(T, nq)``, ``(T, nv)``, ...).  :func:`prepare` checks
the arrays and returns them as C-contiguous float64 batches; a single point is the batch of one, and
:meth:`Batch.unbatch` strips the knot axis again from the results.

Bad input raises ``ValueError`` naming the argument and what was expected: wrong shape, NaN or inf,
or a unit-norm block of a configuration (quaternion, cos/sin pair) whose norm is off by more than
``UNIT_NORM_TOL``.
"""

from __future__ import annotations

import numpy as np

from .kernels import finite as _finite

UNIT_NORM_TOL = 1e-6

#: argument name -> which dimension it has ("nq" for configurations, "nv" for tangent vectors)
_DIMS = {"q": "nq", "q0": "nq", "q1": "nq", "v": "nv", "a": "nv", "tau": "nv", "dq": "nv",
         "lam": "nv"}


class Batch:
    """The prepared arrays (``batch[name]``) and whether the input was a single point."""

    __slots__ = ("arrays", "single", "T")

    def __init__(self, arrays, single, T):
        self.arrays = arrays
        self.single = single
        self.T = T

    def __getitem__(self, name):
        return self.arrays[name]

    def unbatch(self, x):
        """Drop the knot axis of a result (or of every array in a tuple, None kept) for
        single-point input."""
        if not self.single:
            return x
        if isinstance(x, tuple):
            return tuple([None if y is None else y[0] for y in x])
        return x[0]


def prepare(model, sizes=None, **arrays) -> Batch:
    """Check and batch the named arrays for ``model`` (see module docstring); ``sizes`` gives
    the dimension of any array whose name is not one of the model's, and what it is
    (``{"mu": (nv + nc, "nv + nc")}``)."""
    out = {}
    single = None
    T = None
    for name, x in arrays.items():
        kind = _DIMS.get(name)
        dim, what = (getattr(model, kind), kind) if kind else sizes[name]
        if np.iscomplexobj(x):
            raise ValueError(f"{name}: expected real values (floats); got complex values")
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: expected an array of floats of shape ({dim},) or (T, {dim}); "
                             f"got {type(x).__name__}") from exc
        if arr.ndim not in (1, 2) or arr.shape[-1] != dim:
            raise ValueError(f"{name}: expected shape ({dim},) or (T, {dim}) for {model.name} "
                             f"({what}={dim}); got shape {arr.shape}")
        is_single = arr.ndim == 1
        arr2 = arr[None] if is_single else arr
        if not arr2.flags.c_contiguous:
            arr2 = np.ascontiguousarray(arr2)
        bad = _finite.first_nonfinite(arr2)
        if bad >= 0:
            t, k = divmod(int(bad), dim)
            where = k if is_single else (t, k)
            raise ValueError(f"{name}: expected finite values; got {arr2[t, k]} at index {where}")
        if single is None:
            single, T = is_single, arr2.shape[0]
        elif single != is_single:
            raise ValueError("inputs: mix of single points and batches ("
                             + ", ".join(f"{k}: {np.shape(v)}" for k, v in arrays.items())
                             + "); pass all as (dim,) or all as (T, dim)")
        elif T != arr2.shape[0]:
            raise ValueError("inputs: batches must have the same number of knots T; got "
                             + ", ".join(f"{k}: T={np.shape(v)[0]}" for k, v in arrays.items()))
        if kind == "nq" and model.unit_blocks.shape[0]:
            _check_unit_blocks(model, name, arr2)
        out[name] = arr2
    return Batch(out, bool(single), T or 1)


def _check_unit_blocks(model, name, Q):
    t, k = _finite.first_unit_norm_violation(Q, model.unit_blocks, UNIT_NORM_TOL)
    if t < 0:
        return
    idx = model.unit_blocks[k]
    o, size = int(idx[0]), int(np.sum(idx >= 0))
    norm = float(np.linalg.norm(Q[t, o:o + size]))
    what = "quaternion" if size == 4 else "(cos, sin) pair"
    where = f" at knot {t}" if Q.shape[0] > 1 else ""
    raise ValueError(
        f"{name}: the {what} of joint {model.joint_names[model.unit_block_joint[k]]!r} "
        f"(q[{o}:{o + size}]) must have unit norm (tolerance {UNIT_NORM_TOL:g}); got norm "
        f"{norm:.9g}{where}")


def reusable_buffer(out, size: int, what: str, batch: Batch) -> np.ndarray:
    """The flat output buffer for a kernel writing ``size`` floats.

    ``out`` is None (a fresh buffer from numpy's allocator, which uses huge pages for large
    arrays) or the result of an earlier call of the same function with the same shapes, whose
    buffer is reused: its arrays are overwritten.
    """
    if out is None:
        return np.empty(size)
    buf = getattr(out, "_buffer", None)
    if not isinstance(buf, np.ndarray) or buf.size != size:
        raise ValueError(f"out: expected the {what} of an earlier call with the same shapes "
                         f"({batch.T} knot{'s' if batch.T > 1 else ''}, {'single point' if batch.single else 'batch'}); "
                         f"got {type(out).__name__} with buffer size "
                         f"{getattr(buf, 'size', None)} instead of {size}")
    return buf
