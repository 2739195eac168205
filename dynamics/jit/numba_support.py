"""Which numba the layer is tested with, and whether it patches numba's internals.

Three things here reach into numba's internals, each for a measured gain (the compile notes,
``docs/compiling.md``):

* the repaired inliner (:mod:`.inliner`: ``ir.Scope.__deepcopy__`` and
  ``InlineWorker.inline_ir``): a cold ``soddp compare ur3`` 68 -> 60 s;
* callees without a Python entry (:class:`~.dispatch.CalleeDispatcher`, a ``CPUDispatcher``
  subclass): 60 -> 58 s;
* the compile lock around a kernel's cache (:class:`~.dispatch.LockedCache`, in place of the
  dispatcher's ``_cache``): two cold runs started at once 188 -> 92 s each.

They apply only under the numba versions listed in :data:`TESTED` (``pyproject.toml`` pins the
same range) and unless ``SODDP_NUMBA_PATCHES=0``; otherwise every kernel is plain
``numba.njit`` and only compiles slower (``tests/test_compile_speed.py`` runs that path).
"""

import os

import numba

#: the numba minor versions the patches are tested with
TESTED = ("0.68",)


def _minor(version: str) -> str:
    return ".".join(version.split(".")[:2])


#: whether this process patches numba's internals (module docstring)
PATCHES = os.environ.get("SODDP_NUMBA_PATCHES") != "0" and _minor(numba.__version__) in TESTED
