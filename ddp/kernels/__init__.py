"""Compiled kernels of the solver (numba, ``cache=True``): the built-in costs (:mod:`.costs`) and
the solver's passes over the knots (:mod:`.passes`).

They call (and numba inlines) the dynamics kernels, so the cache guard of
:mod:`dynamics.kernels` covers this package too: its cache files are dropped when these sources or
the dynamics kernels change.
"""

import os
from pathlib import Path

from dynamics.kernels import guard_cache

if os.environ.get("SODDP_NO_CACHE_GUARD") != "1":
    guard_cache(Path(__file__).resolve().parent)

# the compiled pieces that ddp's Python modules call besides these kernels' own (the only door
# from ddp to dynamics.kernels outside ddp.kernels and the compiled evaluation)
from dynamics.kernels import compile_notice, is_cached  # noqa: E402
from dynamics.kernels.checks import all_finite  # noqa: E402
from dynamics.kernels.layout import (CHUNK_RAISED, call_door, num_chunks,  # noqa: E402
                                     run_in_chunks)
from dynamics.kernels.threads import every_thread  # noqa: E402
from dynamics.kernels.step import (assemble_step_chunk, assemble_step_derivatives,  # noqa: E402
                                   step_velocities)

__all__ = ["all_finite", "compile_notice", "is_cached", "num_chunks", "run_in_chunks",
           "call_door", "CHUNK_RAISED",
           "assemble_step_chunk", "assemble_step_derivatives", "step_velocities",
           "every_thread"]
