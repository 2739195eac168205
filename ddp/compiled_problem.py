"""The compiled problem: what the compiled passes of one :class:`~ddp.problem.ShootingProblem`
read, made once, and the doors of those passes.

* the records (:mod:`ddp.kernels.records`): ``model`` (the robot's flat buffers, or a vector
  space's for a system without a RobotModel) and ``step`` (dt, the actuation B, the Lie-group
  joints, the :data:`~ddp.kernels.records.KnotContacts` of every knot);
* the problem's kernels, linked lazily at their doors: each door method here links what its
  pass reaches for this problem (the contact knots' kernels when some knot has contacts, DDP's
  second-order terms of its mode, the expansion of (+) on Lie-group joints, the cost program),
  once per process, before it calls the pass.  A backend stepped through the Dynamics protocol
  links none of the knots' kernels (its derivatives come from its own calls): only the
  backward pass and its records are compiled for it.

The evaluations (:mod:`ddp.compiled`, :mod:`ddp.evaluation`) and the backward pass
(:mod:`ddp.backward`) call these doors; none of them links anything itself.
"""

from __future__ import annotations

import os

import numpy as np

from dynamics import robots

from .kernels import CHUNK_RAISED, call_door, num_chunks, run_in_chunks
from .kernels import contact_knots as _contact_knots
from .kernels import costs as _kcosts
from .kernels import evaluation as _kev
from .kernels import linked as _linked
from .kernels import passes as _passes
from .kernels.records import (CONTACT_SLOTS, LINKED_DERIVATIVES, LINKED_FREE_SECOND_ORDER,
                              LINKED_LIE_EXPANSION, LINKED_SECOND_ORDER, LINKED_STEP,
                              LINKED_TENSORS, PackedModel, SecondOrderMode, Step,
                              empty_gains)
from .local_model import second_order_mode


class CompiledProblem:
    """The records and the doors of one problem's compiled passes (module docstring).
    ``integrator``: the problem's :class:`~ddp.integrators.SemiImplicitEuler` (its backend, dt,
    actuation and Lie-group joints); ``knot_contacts``: the
    :data:`~ddp.kernels.records.KnotContacts` of its knots."""

    def __init__(self, integrator, knot_contacts):
        dynamics = integrator.dynamics
        model = dynamics.model
        self.nv = int(dynamics.nv)
        self.model = PackedModel(*(model if model is not None
                             else robots.vector_space(self.nv)).kernel_args)
        offsets, sizes = integrator.lie_offsets, integrator.lie_sizes
        self.step = Step(integrator.dt, integrator.B, offsets, sizes, knot_contacts)
        #: whether the knots' kernels are the analytical backend's (linked here)
        self.links_knots = bool(dynamics.compiled)
        #: whether some knot has contacts (or is an impact); whether every knot has
        self.has_contacts = bool(np.any(knot_contacts.size > 0))
        self.all_contacts = bool(np.all(knot_contacts.size > 0))
        #: whether the robot has Lie-group joints (an expansion of (+) to link)
        self.lie_joints = offsets.shape[0] > 0
        self._linked = set()
        self._gains = ()

    def gains(self, T, nu, ndx, keep=None):
        """A :data:`~ddp.kernels.records.Gains` for a backward pass to write, zeroed: one of two
        made once (the problem's work arrays, which a solve's passes reuse), the one that does
        not hold the gains ``keep`` (the last policy's k, which a failed pass must not
        overwrite)."""
        if not self._gains:
            self._gains = (empty_gains(T, nu, ndx), empty_gains(T, nu, ndx))
        first, second = self._gains
        g = second if first.k is keep else first
        for a in (g.k, g.K, g.dV, g.gauss_newton_knots):
            a[...] = 0
        return g

    def second_order_mode(self, setting: str) -> SecondOrderMode:
        """The :class:`~ddp.kernels.records.SecondOrderMode` of DDP for a ``second_order``
        setting on this problem's backend."""
        return second_order_mode(setting, self.nv, self.links_knots, self.has_contacts)

    # ------------------------------------------------------------------------------- linking
    def link(self, which, **records) -> None:
        """Link the compiled kernel of the knots ``which`` (a slot of :mod:`ddp.kernels.records`)
        for the ``records`` of the call that reaches it, once per process, when some knot of
        this problem reaches it: a contact knots' kernel (LINKED_STEP, LINKED_DERIVATIVES,
        LINKED_SECOND_ORDER) when some knot has contacts, a free knots' second-order kernel
        (LINKED_TENSORS, LINKED_FREE_SECOND_ORDER) when some knot is free, the expansion of (+)
        (LINKED_LIE_EXPANSION) on a robot with Lie-group joints.  Nothing on a backend stepped
        through the Dynamics protocol, nor when no knot reaches it: the kernel then never
        compiles.  The doors below call it; a caller only to compile ahead (the warm-up)."""
        key = (which, os.getpid())
        if not self.links_knots or key in self._linked:
            return
        if which in CONTACT_SLOTS:
            if self.has_contacts:
                _contact_knots.link(which, self.model, self.step, **records)
        elif which == LINKED_LIE_EXPANSION:
            if self.lie_joints:
                _linked.link(which, self.model)
        elif not self.all_contacts:
            _linked.link(which, self.model)
        self._linked.add(key)

    def link_second_order(self, derivatives, second_order) -> None:
        """Link the kernels of DDP's second-order terms that the backward pass reaches with
        these ``derivatives`` and ``second_order`` records (by its mode: the contracted terms of
        the free knots and of the knots with contacts; none for tensors, which it contracts
        itself)."""
        if second_order.mode == SecondOrderMode.CONTRACTED:
            for which in (LINKED_FREE_SECOND_ORDER, LINKED_SECOND_ORDER):
                self.link(which, derivatives=derivatives, second_order=second_order)

    # --------------------------------------------------------------------------------- doors
    def rollout(self, x0, loop, box, gaps, xs, us_out, kin, lam) -> int:
        """:func:`ddp.kernels.passes.rollout` of this problem."""
        self.link(LINKED_STEP)
        return _passes.rollout(self.model, self.step, x0, loop, box, gaps, xs, us_out, kin, lam)

    def knot_steps(self, first, xs, us, next_xs, lam, status) -> None:
        """:func:`ddp.kernels.passes.knot_steps` of this problem (knots first, first + 1, ...)."""
        self.link(LINKED_STEP)
        _passes.knot_steps(self.model, self.step, first, xs, us, next_xs, lam, status)

    def rollout_cost(self, x0, loop, box, gaps, programs, out, chunk_args) -> float:
        """The cost of :func:`ddp.kernels.evaluation.rollout_cost` (its rollout into ``out``);
        ``chunk_args``: arrays of the types with which the door calls its cost chunk.
        RuntimeError when a cost raised."""
        self.link(LINKED_STEP)
        _kcosts.link_costs()
        args = (self.model, self.step, x0, loop, box, gaps, programs, out)
        cost, status = call_door(_kev.rollout_cost, _kev.cost_values_chunk, args, chunk_args,
                                 num_chunks(loop.us.shape[0]))
        if status == CHUNK_RAISED:
            raise RuntimeError("a cost raised in the closed-loop rollout's cost")
        return cost

    def derivatives(self, knots, programs, exact_hessians, step, second_order, costs) -> None:
        """:func:`ddp.kernels.evaluation.knot_derivatives` of this problem into the records
        ``step``, ``second_order`` and ``costs``."""
        linked = (LINKED_DERIVATIVES, LINKED_LIE_EXPANSION)
        if second_order.mode == SecondOrderMode.TENSORS:
            linked += (LINKED_TENSORS,)
        for which in linked:
            self.link(which, knots=knots, derivatives=step, second_order=second_order)
        _kcosts.link_costs()
        args = (self.model, self.step, knots, programs, exact_hessians, step, second_order,
                costs)
        run_in_chunks(_kev.knot_derivatives, _kev.derivatives_chunk, args,
                      num_chunks(knots.q.shape[0]))

    def backward_pass(self, derivatives, second_order, costs, regularization, box, gaps, gains,
                      structured):
        """:func:`ddp.kernels.passes.backward_pass` of this problem: (status, knot)."""
        self.link_second_order(derivatives, second_order)
        return _passes.backward_pass(self.model, self.step, derivatives, second_order, costs,
                                     regularization, box, gaps, gains, structured)

    def step_hessians(self, t, lam, derivatives, second_order):
        """(Fxx, Fxu, Fuu) of ``lam . h`` at knot t (lam (2 nv,) tangent at x+), by the same
        compiled function as the backward pass."""
        if second_order.mode == SecondOrderMode.NONE:
            raise ValueError("second_order: derivatives computed without second-order data")
        self.link_second_order(derivatives, second_order)
        return _passes.step_hessians(t, np.ascontiguousarray(lam, dtype=float), self.model,
                                     self.step, derivatives, second_order)
