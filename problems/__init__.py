"""Example problems, the ``soddp`` command, the studies and the benchmarks.

``problems.get(name, **options)`` returns the :class:`ddp.ShootingProblem` of an example (see
:mod:`problems.examples`); ``problems.PROBLEMS`` lists them.  One module per concern:
:mod:`.examples` (the problems), :mod:`.studies` (solve, compare, the backends study),
:mod:`.robustness` (the globalization and random-instance studies), :mod:`.tasks` (one solve as a
task), :mod:`.store` (the results store), :mod:`.engine` (tasks on Dask), :mod:`.parts` (``soddp
study`` and ``soddp report``), :mod:`.output` (results folder, tables, figures), :mod:`.bench`
(the benchmark registry and its families), :mod:`.reference` (C++ Pinocchio and Crocoddyl),
:mod:`.cli` (the ``soddp`` command).
"""

from .examples import BACKENDS, PROBLEMS, get, make_backend

__all__ = ["get", "PROBLEMS", "BACKENDS", "make_backend"]
