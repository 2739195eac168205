"""Globalization strategies of the solver: how the step is regularized and how the
regularization adapts.  One class per strategy; the solver loop (:mod:`ddp.solver`) asks it for
the arguments of the backward pass and tells it what happened.

==================  =============================================================================
name                strategy
==================  =============================================================================
``shift``           mu I added to Q_uu; mu grows while Q_uu is indefinite or no step length of the
                    line search decreases the cost, and shrinks after each accepted step, by
                    factors that grow while the direction repeats (Tassa, Erez, Todorov 2012,
                    "Synthesis and stabilization of complex behaviors", Sec. II-F).  With exact
                    Hessians this is the "pure" DDP of the papers.
``state-shift``     the same schedule, mu I added to V'_xx inside Q_uu and Q_ux (Tassa et al.
                    2012, eq. 10): the step stays invariant to the control parametrization and
                    is damped where the dynamics are sensitive; and 1e-6 mu I on Q_uu, which
                    damps the controls that do not move the state (with contacts, the torques
                    that only change the contact forces: F_u has a null space there, which
                    mu I on V'_xx never reaches).
``crocoddyl``       mu I added to Q_uu and to every V_xx; mu is multiplied by 10 when the
                    accepted step length is at most 0.01 (or the backward pass fails) and divided
                    by 10 when it is above 0.5 (Crocoddyl's SolverDDP, Mastalli et al. 2020).
``trust-region``    mu I on Q_uu, full steps only, mu adapted from the ratio rho of actual to
                    predicted decrease (Levenberg-Marquardt as a trust region, with Nielsen's
                    update: mu *= max(1/3, 1 - (2 rho - 1)^3) on acceptance, mu *= nu,
                    nu *= 2 on rejection; cf. Coleman & Liao 1995 for a trust region in DDP).
``safeguarded``     ``state-shift``, and the exact Hessians (DDP's second-order dynamics terms,
                    the exact cost Hessians of ``hessians="exact"``) only where they can be
                    trusted: the first iteration is Gauss-Newton (as in Fletcher & Xu's hybrid
                    method); later ones use them once the trajectory is feasible (no gaps),
                    except right after an iteration with them that took a partial step (or
                    none), which is followed by one Gauss-Newton iteration, and while a
                    Gauss-Newton iteration lowers the cost by at least the fraction
                    ``gauss_newton_reduction`` of itself (Fletcher & Xu 1987); within an
                    iteration, at each knot where DDP's terms make Q_uu indefinite they are
                    dropped at that knot (Gauss-Newton there), and if the pass still fails
                    the iteration is redone with Gauss-Newton Hessians, instead of raising mu.
                    Far from the optimum the solver then steps like Gauss-Newton; near it,
                    with the exact second-order model.
==================  =============================================================================
"""

from __future__ import annotations

import numpy as np

from .kernels.records import Regularization
from .local_model import GAUSS_NEWTON, LocalModel

GLOBALIZATIONS = ("shift", "state-shift", "crocoddyl", "trust-region", "safeguarded")


class Globalization:
    """The interface: ``regularization()`` gives the
    :data:`~ddp.kernels.records.Regularization` of the next backward pass; ``alphas`` the step
    lengths to try; ``local_model(feasible)`` the :class:`~ddp.local_model.LocalModel` of an
    iteration (the solve's exact model, or Gauss-Newton); ``backward_failed()`` and
    ``no_step()`` return False when the regularization is exhausted (``exact_failed()`` True:
    retry with Gauss-Newton first); ``accepted(alpha, ratio, reduction)`` after each accepted
    step (``ratio``: actual over expected decrease; ``reduction``: actual decrease over the cost
    before the step).  ``exact``: the solve's exact model (DDP with its second-order terms, or
    iLQR; the cost Hessians of its settings)."""

    def __init__(self, settings, exact: LocalModel):
        s = settings
        self.exact = exact
        self.reg = float(s.reg_init)
        self.reg_min, self.reg_max = float(s.reg_min), float(s.reg_max)
        self.alphas = tuple(s.alphas)

    @property
    def value(self) -> float:
        return self.reg

    def regularization(self) -> Regularization:
        return Regularization(self.reg, 0.0, 0.0, False)

    def local_model(self, feasible: bool) -> LocalModel:
        """The local model of this iteration: the exact one (DDP's dynamics terms, the exact
        cost Hessians of ``hessians="exact"``) or Gauss-Newton."""
        return self.exact

    def exact_failed(self) -> bool:
        """The backward pass with the exact terms failed: True to retry this iteration with
        Gauss-Newton terms (at the same regularization) instead of raising it."""
        return False

    def backward_failed(self) -> bool:
        return self._increase()

    def no_step(self) -> bool:
        return self._increase()

    def accepted(self, alpha, ratio, reduction=0.0):
        self._decrease()

    def _increase(self) -> bool:
        raise NotImplementedError

    def _decrease(self):
        raise NotImplementedError


class Shift(Globalization):
    """``shift``: mu on Q_uu, Tassa's schedule (see the module docstring)."""

    def __init__(self, settings, exact):
        super().__init__(settings, exact)
        self.factor, self.delta = float(settings.reg_factor), 1.0

    def _increase(self):
        self.delta = max(self.factor, self.delta * self.factor)
        self.reg = max(self.reg_min, self.reg * self.delta)
        return self.reg <= self.reg_max

    def _decrease(self):
        self.delta = min(1 / self.factor, self.delta / self.factor)
        self.reg = self.reg * self.delta if self.reg * self.delta > self.reg_min else 0.0


class StateShift(Shift):
    """``state-shift``: mu on V'_xx inside Q_uu and Q_ux, and CONTROL_SHARE mu on Q_uu."""

    #: the share of mu added to Q_uu.  Measured on HyQ standing (T = 20) with its left-front
    #: foot's normal force bounded below (a hard constraint, or a stiff barrier cost): with 0,
    #: no step length decreased the cost up to mu = 1e9 (the step grew in the torques that
    #: only move the contact forces); with 1e-6, 1e-3 or 1 the solves converged
    CONTROL_SHARE = 1e-6

    def regularization(self):
        return Regularization(self.CONTROL_SHARE * self.reg, self.reg, 0.0, False)


class Safeguarded(StateShift):
    """``safeguarded``: ``state-shift`` with the exact terms where they can be trusted."""

    def __init__(self, settings, exact):
        super().__init__(settings, exact)
        self.trusted = False  # the first iteration is Gauss-Newton (Fletcher & Xu start so)
        self.used = False
        self.gauss_newton_reduction = float(settings.gauss_newton_reduction)

    def regularization(self):
        return super().regularization()._replace(safeguard=True)

    def local_model(self, feasible):
        self.used = feasible and self.trusted
        return self.exact if self.used else GAUSS_NEWTON

    def exact_failed(self):
        self.used = False
        return True

    def no_step(self):
        self.trusted = not self.used
        return super().no_step()

    def accepted(self, alpha, ratio, reduction=0.0):
        if self.used:
            self.trusted = alpha == 1.0
        else:  # Gauss-Newton stays while it converges fast (Fletcher & Xu's switch)
            self.trusted = not (self.gauss_newton_reduction > 0.0
                                and reduction >= self.gauss_newton_reduction)
        super().accepted(alpha, ratio, reduction)


class Crocoddyl(Globalization):
    """``crocoddyl``: mu on Q_uu and V_xx, adapted from the accepted step length."""

    FACTOR, STEP_DEC, STEP_INC = 10.0, 0.5, 0.01

    def regularization(self):
        return Regularization(self.reg, 0.0, self.reg, False)

    def _increase(self):
        self.reg = min(max(self.reg * self.FACTOR, self.reg_min), self.reg_max * self.FACTOR)
        return self.reg <= self.reg_max

    def _decrease(self):
        self.reg = max(self.reg / self.FACTOR, self.reg_min)

    def accepted(self, alpha, ratio, reduction=0.0):
        if alpha > self.STEP_DEC:
            self._decrease()
        elif alpha <= self.STEP_INC:
            self._increase()


class TrustRegion(Globalization):
    """``trust-region``: full steps, mu from the ratio of actual to predicted decrease."""

    def __init__(self, settings, exact):
        super().__init__(settings, exact)
        self.alphas = (1.0,)
        self.nu = 2.0

    def _increase(self):
        self.reg = max(self.reg * self.nu, self.reg_min)
        self.nu *= 2.0
        return self.reg <= self.reg_max

    def accepted(self, alpha, ratio, reduction=0.0):
        self.nu = 2.0
        scale = max(1.0 / 3.0, 1.0 - (2.0 * min(ratio, 1.0) - 1.0) ** 3) if np.isfinite(ratio) \
            else 1.0
        self.reg = self.reg * scale if self.reg * scale > self.reg_min else 0.0


STRATEGIES = {"shift": Shift, "state-shift": StateShift, "crocoddyl": Crocoddyl,
              "trust-region": TrustRegion, "safeguarded": Safeguarded}
