"""Rigid-body dynamics and its analytical first- and second-order derivatives as compiled,
batched kernels (IDSVA, FDSVA, IDSVA-SO, FDSVA-SO), and the geometric linearization of
moving-base dynamics (:mod:`dynamics.linearization`, Bos et al. 2022).

Data flow: :class:`RobotModel` (flat arrays derived once from a Pinocchio model) -> kernels in
:mod:`dynamics.kernels` (numba, ground-frame formulation) -> the functions below, each taking one
point or a batch over a leading knot axis.
"""

from . import robots
from .algorithms import (aba, fd_derivatives, fd_second_derivatives, id_derivatives,
                         id_second_derivatives,
                         inverse_mass_matrix, mass_matrix, rnea)
from .casadi_backend import CasadiDynamics, CodegenLimitError, CodegenLimits
from .checks import DerivativeCheck, check_derivatives
from .contact_dynamics import (ContactDerivatives, ContactDynamics, ContactSecondDerivatives,
                               ImpulseDerivatives, constrained_derivatives, constrained_dynamics,
                               constrained_second_derivatives, impulse_dynamics)
from .contacts import Contact3D, Contact6D, ContactSet
from .finite_difference import FiniteDifferenceDynamics
from .jit import available as threads, set_threads
from .lie import IntegrateExpansion
from .linearization import (EIDAmbDerivatives, Linearization, eidamb, eidamb_derivatives, immamb,
                            linearize)
from .model import RobotModel
from .protocol import (AnalyticalDynamics, Capabilities, Dynamics, EuclideanDynamics,
                       capabilities)
from .results import FDDerivatives, IDDerivatives
from .symbolic_system import SymbolicSystem

__all__ = [
    "RobotModel", "robots", "rnea", "aba", "mass_matrix", "inverse_mass_matrix", "id_derivatives",
    "id_second_derivatives", "fd_second_derivatives",
    "fd_derivatives", "IDDerivatives", "FDDerivatives", "Dynamics", "AnalyticalDynamics", "Capabilities", "capabilities",
    "EuclideanDynamics", "CasadiDynamics", "CodegenLimits", "CodegenLimitError",
    "FiniteDifferenceDynamics", "IntegrateExpansion", "linearize", "Linearization", "eidamb",
    "eidamb_derivatives", "EIDAmbDerivatives", "immamb", "set_threads", "threads",
    "Contact3D", "Contact6D", "ContactSet", "ContactDynamics", "ContactDerivatives",
    "constrained_dynamics",
    "constrained_derivatives", "ContactSecondDerivatives", "constrained_second_derivatives",
    "impulse_dynamics", "ImpulseDerivatives", "check_derivatives", "DerivativeCheck",
    "SymbolicSystem",
]
