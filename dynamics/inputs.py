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

UNIT_NORM_TOL = 1e-6

#: argument name -> which dimension it has ("nq" for configurations, "nv" for tangent vectors)
_DIMS = {"q": "nq", "q0": "nq", "q1": "nq", "v": "nv", "a": "nv", "tau": "nv", "dq": "nv",
         "lam": "nv"}


class Batch(dict):
    """The prepared arrays (by argument name) and whether the input was a single point."""

    def __init__(self, arrays, single, T):
        super().__init__(arrays)
        self.single = single
        self.T = T

    def unbatch(self, x):
        """Drop the knot axis of a result (or of every array in a tuple) for single-point input."""
        if isinstance(x, tuple):
            return tuple(self.unbatch(y) for y in x)
        return x[0] if self.single else x


def prepare(model, **arrays) -> Batch:
    """Check and batch the named arrays for ``model`` (see module docstring)."""
    out = {}
    ndims = set()
    Ts = {}
    for name, x in arrays.items():
        dim = getattr(model, _DIMS[name])
        try:
            arr = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}: expected an array of floats of shape ({dim},) or (T, {dim}); "
                             f"got {type(x).__name__}") from exc
        if arr.ndim not in (1, 2) or arr.shape[-1] != dim:
            raise ValueError(f"{name}: expected shape ({dim},) or (T, {dim}) for {model.name} "
                             f"({_DIMS[name]}={dim}); got shape {arr.shape}")
        if not np.all(np.isfinite(arr)):
            bad = np.argwhere(~np.isfinite(np.atleast_2d(arr)))[0]
            raise ValueError(f"{name}: expected finite values; got {np.atleast_2d(arr)[tuple(bad)]} "
                             f"at index {tuple(int(b) for b in bad) if arr.ndim == 2 else int(bad[1])}")
        ndims.add(arr.ndim)
        arr2 = np.ascontiguousarray(np.atleast_2d(arr))
        Ts[name] = arr2.shape[0]
        if _DIMS[name] == "nq":
            _check_unit_blocks(model, name, arr2)
        out[name] = arr2
    if len(ndims) > 1:
        raise ValueError("inputs: mix of single points and batches ("
                         + ", ".join(f"{k}: {np.shape(v)}" for k, v in arrays.items())
                         + "); pass all as (dim,) or all as (T, dim)")
    if len(set(Ts.values())) > 1:
        raise ValueError("inputs: batches must have the same number of knots T; got "
                         + ", ".join(f"{k}: T={t}" for k, t in Ts.items()))
    single = ndims == {1}
    T = next(iter(Ts.values())) if Ts else 1
    return Batch(out, single, T)


def _check_unit_blocks(model, name, Q):
    from .model import UNIT_BLOCKS

    a = model.arrays
    for i in range(1, model.njoints):
        for off, size in UNIT_BLOCKS.get(int(a.jtype[i]), ()):
            o = int(a.iq[i]) + off
            norms = np.linalg.norm(Q[:, o:o + size], axis=1)
            bad = np.abs(norms - 1.0) > UNIT_NORM_TOL
            if np.any(bad):
                t = int(np.argmax(bad))
                what = "quaternion" if size == 4 else "(cos, sin) pair"
                where = f" at knot {t}" if Q.shape[0] > 1 else ""
                raise ValueError(
                    f"{name}: the {what} of joint {model.joint_names[i]!r} (q[{o}:{o + size}]) must "
                    f"have unit norm (tolerance {UNIT_NORM_TOL:g}); got norm {norms[t]:.9g}{where}")
