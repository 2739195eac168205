"""Example problems, the ``soddp`` command and the studies.

``problems.get(name, **options)`` returns the :class:`ddp.ShootingProblem` of an example (see
:mod:`problems.examples`); ``problems.PROBLEMS`` lists them.
"""

from .examples import BACKENDS, PROBLEMS, get, make_backend

__all__ = ["get", "PROBLEMS", "BACKENDS", "make_backend"]
