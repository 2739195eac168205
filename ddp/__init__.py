"""Full second-order DDP and iLQR on rigid-body robots.

Data flow: a :class:`~dynamics.protocol.Dynamics` backend -> :class:`SemiImplicitEuler` (exact
first and second derivatives of the discrete step on the manifold) -> :class:`ShootingProblem`
(with the costs of :mod:`ddp.costs`) -> :func:`solve` (DDP or iLQR) -> :class:`Solution`.
"""

from . import costs
from .costs import (ControlRegularization, FramePlacement, FrameTranslation, StateRegularization,
                    Sum)
from .integrators import SemiImplicitEuler
from .problem import ShootingProblem
from .solver import STATUSES, Iteration, Solution, box_qp, solve

__all__ = ["costs", "ControlRegularization", "FramePlacement", "FrameTranslation",
           "StateRegularization", "Sum", "SemiImplicitEuler", "ShootingProblem", "solve",
           "Solution", "Iteration", "STATUSES", "box_qp"]
