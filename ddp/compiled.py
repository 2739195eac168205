"""The compiled :class:`~ddp.evaluation.Evaluation` of a problem whose backend declares
``compiled`` (the analytical kernels): each phase of an iteration in one compiled call over all
knots (kernels in :mod:`ddp.kernels.evaluation` and :mod:`ddp.kernels.passes`).

* the derivatives of every knot in one parallel call: FDSVA (or the full FDSVA-SO tensors), the
  expansion of (+), Fx, Fu, and the built-in running and terminal costs;
* a closed-loop rollout and its total cost in one call: the rollout, then the costs of the knots
  in parallel, on the forward kinematics that the rollout's ABA kept.

Built-in cost programs on the dynamics' model run inside these calls; any other cost (a CasADi
residual, or built-in costs on another model) is added by its own ``calc`` / ``calc_diff``.
With :mod:`ddp.kernels` this is the only module of ``ddp`` that reaches into
:mod:`dynamics.kernels` (``tests/test_layout.py``).
"""

from __future__ import annotations

import numpy as np

from dynamics.algorithms import INNER_CROSSOVER_NV
from dynamics.kernels.forward_so import INNER_DTM, INNER_IDFOZA, OUTER_DTM

from . import costs as _costs
from .evaluation import Evaluation, KnotDerivatives, add_costs, weighted
from .kernels.costs import kinematics_buffers
from .kernels.records import (Box, CostDerivatives, Costs, FDTensors, Knots, Program, Programs,
                              Rollout, SecondOrder, SecondOrderMode, empty_forces,
                              empty_step_derivatives, kkt_factors)

#: the empty ``kin`` of a rollout that keeps no kinematics (numpy's run of the kernel's function)
_NO_KINEMATICS = kinematics_buffers.py_func(0, 0, 0)
_ONE = np.zeros((1, 2), dtype=np.int64)  # one program for every knot, at the start
_NO_PROGRAM = Program(np.zeros(1, dtype=np.int64), np.zeros(0), _ONE)


def _same_model(a, b) -> bool:
    return a is b or all(np.array_equal(x, y) for x, y in zip(a.kernel_args, b.kernel_args))


class CompiledEvaluation(Evaluation):
    """The fused evaluation on the analytical kernels (module docstring)."""

    def __init__(self, problem):
        super().__init__(problem)
        P = problem
        self.robot = P.dynamics.model
        run, self.running_others = self._knot_programs(P.knot_costs)
        term, terminal_others = self._split(P.terminal_cost)
        term = _NO_PROGRAM if term is None else term.record
        self.terminal_others = terminal_others
        self.programs = Programs(run, term)
        self.inner = INNER_DTM if P.nv <= INNER_CROSSOVER_NV else INNER_IDFOZA
        self.nc = int(P.knot_contacts.size.max(initial=0))  # force components at a knot, at most
        self.needs_forces = self.nc > 0  # the cost programs read forces of width nc
        self._rollout_box = None
        self._cost_chunk_args = None  # of rollout_cost's costs, for their address
        self._unused_arrays = {}
        #: the work arrays, made once: the knots' record, the derivatives' output records per
        #: local model, and two trajectories for the line search (the current and a trial)
        self._knots = None
        self._records = {}
        self._trajectories = ()

    def _split(self, cost):
        """(program, others): the :class:`~ddp.costs.CostProgram` run inside the compiled calls
        (None if the cost has none on the dynamics' model) and the costs added by their own
        calls."""
        program, others = _costs.split(cost)
        if program is not None and not _same_model(program.model, self.robot):
            program, others = None, [cost]
        return program, others

    def _knot_programs(self, knot_costs):
        """The running :data:`~ddp.kernels.records.Program` of every knot (one program when all
        knots share their cost, else each distinct one packed once, ``starts`` per knot) and
        the other costs as (cost, knots) pairs."""
        others, parts, starts = [], [], np.zeros((self.problem.T, 2), dtype=np.int64)
        packed = []  # (cost program, where its floats start)
        no = nf = 0
        for cost, knots in knot_costs.distinct:
            program, rest = self._split(cost)
            others += [(c, knots) for c in rest]
            record = _NO_PROGRAM if program is None else program.record
            parts.append(record)
            if program is not None:
                packed.append((program, nf))
            starts[knots] = no, nf
            no, nf = no + record.ints.size, nf + record.floats.size
        if len(parts) == 1:
            return parts[0], others
        record = Program(np.concatenate([p.ints for p in parts]),
                         np.concatenate([p.floats for p in parts]), starts)
        for program, base in packed:  # the costs' setters reach the packed copy too
            program.register(record.floats, base)
        return record, others

    def cycle(self, order):
        starts = self.programs.running.starts
        if starts.shape[0] > 1:
            starts[...] = starts[order]
        new_knot = np.argsort(order)
        self.running_others = [(c, np.sort(new_knot[k])) for c, k in self.running_others]

    def knot_programs(self, t) -> list:
        own = super().knot_programs(t)
        packed = (self.programs.terminal, 0) if t == self.problem.T \
            else (self.programs.running, t)
        return own + ([packed] if all(packed[0] is not r for r, _ in own) else [])

    def _others_cost(self, xs, us):
        """The weighted running costs and the terminal cost of the costs outside the programs."""
        P = self.problem
        w = P.cost_weights
        cost = sum(float(np.sum(w[k] * c.calc(xs[k], us[k]))) for c, k in self.running_others)
        return cost + sum(float(c.calc(xs[-1:], np.zeros((1, P.nu)))[0])
                          for c in self.terminal_others)

    def _box(self):
        """The bounds a rollout clips to (its nominal controls are not read)."""
        P = self.problem
        box = self._rollout_box
        if box is None or box.lower is not P.u_min or box.upper is not P.u_max:
            box = self._rollout_box = Box(np.zeros((P.T, P.nu)), P.u_min, P.u_max, P.bounded, 0)
        return box

    def rollout(self, x0, loop, gaps):
        P = self.problem
        xs = np.empty((P.T + 1, P.nx))
        un = np.empty_like(loop.us)
        with np.errstate(all="ignore"):
            P.compiled_problem.rollout(x0, loop, self._box(), P.gaps_record(gaps), xs, un,
                                       _NO_KINEMATICS, np.empty((P.T, self.nc)))
        return xs, un

    def _rollout_record(self):
        P = self.problem
        return Rollout(np.empty((P.T + 1, P.nx)), np.empty((P.T, P.nu)), np.empty(P.T + 1),
                       np.empty((P.T, self.nc)))

    def trial_record(self, current_xs):
        if not self._trajectories:
            self._trajectories = (self._rollout_record(), self._rollout_record())
        first, second = self._trajectories
        return second if first.xs is current_xs else first

    def rollout_cost(self, x0, loop, gaps, out=None):
        P = self.problem
        out = self._rollout_record() if out is None else out
        C = P.compiled_problem
        if self._cost_chunk_args is None:  # arrays of the types the door passes its costs
            self._cost_chunk_args = (C.model, self.programs.running,
                                     np.empty((0, P.nq)), np.empty((0, P.nv)),
                                     np.empty((0, P.nu)), np.empty(0), _NO_KINEMATICS,
                                     np.empty((0, self.nc)))
        with np.errstate(all="ignore"):
            cost = C.rollout_cost(x0, loop, self._box(), P.gaps_record(gaps), self.programs, out,
                                  self._cost_chunk_args)
            xs, un = out.xs, out.us
            if np.isfinite(cost) and (self.running_others or self.terminal_others):
                cost += self._others_cost(xs, un)
        return xs, un, float(cost)

    def derivatives(self, xs, us, local) -> KnotDerivatives:
        P = self.problem
        knots, step, second_order, costs = self._derivative_records(xs, us, local)
        P.compiled_problem.derivatives(knots, self.programs, local.hessians == "exact", step,
                                       second_order, costs)
        run, term = self._with_others(costs.running, costs.terminal, xs, us, local.hessians)
        return KnotDerivatives(run, term, step, second_order)

    def unevaluated_derivatives(self, xs, us, local) -> KnotDerivatives:
        """The records of :meth:`derivatives`, zero, without running the derivative kernel:
        what the passes take, for compiling them apart from it (:mod:`ddp.warm_up`)."""
        knots, step, second_order, costs = self._derivative_records(xs, us, local)
        for record in (step, second_order, costs):
            _zero(record)
        return KnotDerivatives(costs.running, costs.terminal, step, second_order)

    def _derivative_records(self, xs, us, local):
        """The knots (written from xs, us) and the output records of :meth:`derivatives` for
        the local model: made once per local model and reused by every iteration and solve
        (the arrays the kernels read before they write them are zeroed again)."""
        P = self.problem
        knots = self._knots
        if knots is None:
            T, nq, nv, nu = P.T, P.nq, P.nv, P.nu
            knots = self._knots = Knots(np.empty((T, nq)), np.empty((T, nv)), np.empty((T, nu)),
                                        np.empty((T, nv)), np.empty((1, nq)), np.empty((1, nv)))
        nq = P.nq
        np.copyto(knots.q, xs[:-1, :nq])
        np.copyto(knots.v, xs[:-1, nq:])
        np.copyto(knots.u, us)
        np.matmul(knots.u, P.integrator.B.T, out=knots.tau)
        np.copyto(knots.q_T, xs[-1:, :nq])
        np.copyto(knots.v_T, xs[-1:, nq:])
        key = (int(local.second_order), local.hessians)
        records = self._records.get(key)
        if records is None:
            records = self._records[key] = self._new_records(local.second_order, knots)
        else:
            for a in records[3]:
                a[...] = 0
        return (knots, *records[:3])

    def _new_records(self, mode, knots):
        """The output records (step, second_order, costs) of :meth:`derivatives` in ``mode``,
        and the arrays among them that the kernels write in this mode and read before writing
        (made as zeros: zeroed again on reuse)."""
        P = self.problem
        T, n, nu, ndx = P.T, P.nv, P.nu, P.ndx
        if mode == SecondOrderMode.TENSORS:
            tensors = FDTensors(*(np.empty((T, n, n, n)) for _ in range(4)))
        else:
            tensors = self._unused("tensors", lambda: FDTensors(
                *(np.empty((T, 0, 0, 0)) for _ in range(4))))
        if mode == SecondOrderMode.CONTRACTED:
            point = np.empty((T, n)), np.empty((T, n, n))
        else:
            point = self._unused("point", lambda: (np.empty((T, 0)), np.empty((T, 0, 0))))
        nblocks = P.integrator.lie_offsets.shape[0]
        if mode == SecondOrderMode.NONE or nblocks == 0:  # the Hessians of (+) are not written
            lie_H = self._unused("lie_H", lambda: np.zeros((T, nblocks, 6, 12, 12)))
        else:
            lie_H = np.zeros((T, nblocks, 6, 12, 12))
        if mode == SecondOrderMode.CONTRACTED and self.nc:  # the contact knots' KKT factors
            kkt = kkt_factors(T, n, self.nc, int(P.compiled_problem.model.ints[0]))
        else:
            kkt = self._unused("kkt", lambda: kkt_factors(0, 0, 0, 0))
        second_order = SecondOrder(int(mode), self.inner, OUTER_DTM, tensors, knots.q, knots.v,
                                   *point, lie_H, kkt)
        step = empty_step_derivatives(T, n, nu, self.nc)
        costs = Costs(CostDerivatives.empty(T, ndx, nu), CostDerivatives.empty(1, ndx, nu))
        written = [*step.forces]
        if mode != SecondOrderMode.NONE and nblocks:
            written.append(lie_H)
        if mode == SecondOrderMode.CONTRACTED and self.nc:
            written += kkt
        return step, second_order, costs, tuple(a for a in written if a.size)

    def steps(self, xs, us, first=0):
        return self._steps(xs, us, first)[0]

    def _steps(self, xs, us, first=0):
        """(F(xs_t, us_t) (T, nx), the knots' forces (T, nc), their steps' statuses (T,)) of
        the knots first, first + 1, ..., each from its own state."""
        P = self.problem
        out, lam = np.empty((len(us), P.nx)), np.zeros((len(us), self.nc))
        status = np.empty(len(us), np.int64)
        with np.errstate(all="ignore"):
            P.compiled_problem.knot_steps(first, np.ascontiguousarray(xs, dtype=float),
                                          np.ascontiguousarray(us, dtype=float), out, lam,
                                          status)
        return out, lam, status

    def knot_forces(self, xs, us):
        return self._steps(xs[:-1], us)[1]

    def step_status(self, xs, us, t):
        return int(self._steps(xs[:-1], us)[2][t])

    def _program_costs(self, xs, us, order, hessians, forces):
        """The built-in running costs of every knot (its program, on ``forces``), unweighted."""
        P = self.problem
        return _costs.run_program(P.compiled_problem.model, self.programs.running,
                                  xs[:-1, :P.nq], xs[:-1, P.nq:], us, order,
                                  hessians == "exact", forces, P.nv, P.nu)

    def _terminal_costs(self, xs, order, hessians):
        """The built-in terminal costs at the last state (its program, no forces)."""
        P = self.problem
        return _costs.run_program(P.compiled_problem.model, self.programs.terminal,
                                  xs[-1:, :P.nq], xs[-1:, P.nq:], np.zeros((1, P.nu)), order,
                                  hessians == "exact", empty_forces(1, 0, P.nv, P.nu), P.nv,
                                  P.nu)

    def cost(self, xs, us):
        P = self.problem
        lam = self.knot_forces(xs, us) if self.nc else np.zeros((P.T, 0))
        l = self._program_costs(xs, us, 0, "gauss-newton", _forces_of(lam, P.nv, P.nu)).l
        lT = self._terminal_costs(xs, 0, "gauss-newton")
        return float(np.sum(P.cost_weights * l) + lT.l[0]) + self._others_cost(xs, us)

    def _cost_derivatives(self, xs, us, hessians, forces):
        P = self.problem
        if forces is None:  # no contacts (nc = 0): no force term runs
            forces = empty_forces(P.T, 0, P.nv, P.nu)
        forces.dl_dlam[...] = 0.0
        run = weighted(self._program_costs(xs, us, 2, hessians, forces), P.cost_weights,
                       P.impacts)
        return self._with_others(run, self._terminal_costs(xs, 2, hessians), xs, us, hessians)

    def _with_others(self, run, term, xs, us, hessians):
        """The derivatives ``run`` (T knots, weighted) and ``term`` of the built-in costs plus
        those of the other costs (CasADi residuals, each by its own calls)."""
        P = self.problem
        for c, k in self.running_others:
            d = weighted(c.calc_diff(xs[k], us[k], hessians), P.cost_weights[k], P.impacts[k])
            run = run + CostDerivatives(*(_on_knots(a, k, P.T) for a in d))
        term = add_costs(term, self.terminal_others, xs[-1:], np.zeros((1, P.nu)), hessians)
        return run, term

    def _unused(self, name, make):
        """The arrays the kernels are given but do not write (this mode's empty or zero data),
        made once."""
        if name not in self._unused_arrays:
            self._unused_arrays[name] = make()
        return self._unused_arrays[name]


def _zero(record) -> None:
    """Set every array of a (nested) record of arrays to zero."""
    for field in record:
        if isinstance(field, np.ndarray):
            field[...] = 0
        elif isinstance(field, tuple):
            _zero(field)


def _on_knots(a, knots, T):
    """The rows ``a`` of the knots ``knots`` in a (T, ...) array of zeros elsewhere."""
    if len(knots) == T:
        return a
    out = np.zeros((T, *a.shape[1:]))
    out[knots] = a
    return out


def _forces_of(lam, nv, nu):
    """The :data:`~ddp.kernels.records.Forces` of knots with forces lam (T, nc) and no
    derivatives (what the costs' values read)."""
    T, nc = lam.shape
    return empty_forces(T, nc, nv, nu)._replace(lam=np.ascontiguousarray(lam))
