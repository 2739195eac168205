"""Compiled kernels of the solver (numba, built on :mod:`dynamics.jit`): the built-in costs
(:mod:`.costs`), the solver's passes over the knots (:mod:`.passes`), the derivative and
rollout doors (:mod:`.evaluation`), the kernels linked per problem (:mod:`.linked`,
:mod:`.contact_knots`) and the records at their door (:mod:`.records`).

They call (and numba inlines) the dynamics kernels, so this package's cache guard covers their
sources and the compile layer's too: its cache files are dropped when any of them changes.
"""

from pathlib import Path

from dynamics.jit import guard_cache

_HERE = Path(__file__).resolve().parent
guard_cache(_HERE, _HERE.parent.parent / "dynamics" / "jit",
            _HERE.parent.parent / "dynamics" / "kernels")

# the compiled pieces that ddp's Python modules call besides these kernels' own (the only door
# from ddp to dynamics.kernels outside ddp.kernels and the compiled evaluation)
from dynamics.jit import (CHUNK_RAISED, call_door, compile_notice, every_thread,  # noqa: E402
                          is_cached, num_chunks, run_in_chunks)
from dynamics.kernels.finite import all_finite  # noqa: E402
from dynamics.kernels.step import (assemble_step_chunk, assemble_step_derivatives,  # noqa: E402
                                   step_velocities)

__all__ = ["all_finite", "compile_notice", "is_cached", "num_chunks", "run_in_chunks",
           "call_door", "CHUNK_RAISED", "assemble_step_chunk", "assemble_step_derivatives",
           "step_velocities", "every_thread"]
