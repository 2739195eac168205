"""Compiled kernels of rigid-body dynamics (numba, built on :mod:`dynamics.jit`): kinematics,
RNEA, ABA, CRBA, IDSVA, FDSVA, their second-order sweeps, contacts and impacts, the Euler step,
the Lie-group expansions, geometric linearization and higher-order time derivatives.

On import the package's numba cache is checked against its sources and the compile layer's
(:func:`dynamics.jit.guard_cache`).
"""

from pathlib import Path

from ..jit import guard_cache

guard_cache(Path(__file__).resolve().parent, Path(__file__).resolve().parent.parent / "jit")
