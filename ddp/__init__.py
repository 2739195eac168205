"""Full second-order DDP and iLQR on rigid-body robots.

Data flow: a :class:`~dynamics.protocol.Dynamics` backend -> :class:`SemiImplicitEuler` (exact
first and second derivatives of the discrete step on the manifold) -> :class:`ShootingProblem`
(with the costs of :mod:`ddp.costs`, control bounds) -> :func:`solve` (DDP or iLQR, configured by
:class:`SolverSettings`) -> :class:`Solution` (with the feedback :class:`Policy`).

One module per phase: :mod:`.problem` (the problem), :mod:`.evaluation` and :mod:`.compiled`
(rollouts and derivatives, through the Dynamics protocol or compiled), :mod:`.local_model` (what
an iteration differentiates), :mod:`.backward` (Riccati), :mod:`.line_search`,
:mod:`.globalization` (regularization strategies), :mod:`.box_qp`, :mod:`.callbacks` (iteration
table), :mod:`.lqr` (LQR on a linearization), :mod:`.solver` (the loop); the compiled kernels
and the records at their door are in :mod:`.kernels`.
"""

from . import costs, globalization, lqr
from .animation import animate
from .backward import Policy
from .box_qp import BoxQPResult, box_qp
from .callbacks import Iteration, IterationTable
from .constraints import Constraint
from .costs import (Capsule, CoMPosition, ContactForce, ControlGravity,
                    ControlRegularization, Column, CostProgram, Distance, ForceCost, HalfSpace,
                    Sphere, FramePlacement, FrameRotation, FrameTranslation, FrameVelocity, FrictionCone,
                    QuadraticBarrier, ResidualCost, SecondOrderCone, StateRegularization, Sum,
                    WrenchCone)
from .integrators import SemiImplicitEuler
from .kernels.records import Regularization, SecondOrderMode
from .local_model import GAUSS_NEWTON, LocalModel
from .mpc import MPC
from .phases import Phase
from .problem import ShootingProblem
from .settings import SolverSettings
from .solution import Solution, load_solution
from .solver import STATUSES, solve

__all__ = ["costs", "globalization", "lqr", "ControlRegularization", "FramePlacement", "FrameTranslation",
           "FrameRotation", "FrameVelocity", "ResidualCost", "CostProgram", "StateRegularization", "Sum",
           "SemiImplicitEuler", "ShootingProblem", "SolverSettings", "solve", "Solution", "load_solution", "animate",
           "Policy", "Iteration", "IterationTable", "STATUSES", "box_qp", "BoxQPResult",
           "LocalModel", "GAUSS_NEWTON", "SecondOrderMode", "Regularization", "Phase",
           "CoMPosition", "ContactForce", "FrictionCone", "WrenchCone", "ForceCost",
           "QuadraticBarrier", "Constraint", "ControlGravity", "MPC", "Distance", "Sphere",
           "HalfSpace", "Column", "Capsule", "SecondOrderCone"]
