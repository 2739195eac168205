"""The records at the door of the compiled passes: named tuples of arrays and scalars.

A compiled pass takes a handful of records instead of dozens of positional arrays, and reads
their fields by name (numba types a named tuple field by field, so a record costs no more at the
call than its arrays passed one by one: about 0.1 us per array).  Two arrays of the same shape
can no longer be swapped by position, and a new field reaches the kernel through its record.

Shapes: T knots, n = nv, ndx = 2 n, nu controls, nq configuration size.

===================  ==========================================================================
record               what it holds
===================  ==========================================================================
:data:`PackedModel`  the robot's flat buffers (``RobotModel.kernel_args``)
:data:`Step`         the discrete step: dt, the actuation B (n, nu), the tangent offsets and
                     sizes of the Lie-group joints (where ⊕ is not an addition), and the
                     :data:`KnotContacts`
:data:`KnotContacts` per knot: its kind (STEP or IMPACT), its contact set (packed by
                     ``dynamics.ContactSet``: ``ints[int_offsets[t]:]``,
                     ``floats[float_offsets[t]:]``, ``size[t]`` force components; none: free
                     flight), the weight of its running cost (dt for a step, 1 for an impact,
                     as in Crocoddyl), the damping of J M^-1 J^T, the restitution of impacts
                     and the model without gravity that impacts use
:data:`StepDerivatives`  per knot: Fx (T, ndx, ndx), Fu (T, ndx, nu), da_dq, da_dv (T, n, n),
                     da_du = M^-1 B (T, n, nu), the Jacobians Jq, Jw (T, n, n) of ⊕ (for an
                     impact: dv+/dq, dv+/dv in da_dq, da_dv; Jq = Jw = I), and the
                     :data:`Forces`
:data:`Forces`       per knot: the contact forces (or impulses) lam (T, nc) and their
                     derivatives in q, v, tau, u (T, nc, n / nu), the running cost's gradient
                     in lam (T, nc) (weighted as the cost), and the status of the KKT solve
:data:`SecondOrder`  DDP's second-order dynamics terms: the :class:`SecondOrderMode` (as an
                     int: an IntEnum in a record sends numba's dispatch down its slow path,
                     about 20 us per call) and its data (full FD-SO tensors, or each knot's q,
                     v, a and da_dtau = M^-1 for the contracted sweep; the Hessians of ⊕ on the
                     Lie-group joints; the :data:`KKTFactors` of the knots with contacts)
:data:`KKTFactors`   per knot with contacts or an impact, what the derivative call formed and
                     the contracted sweep reads again: the Cholesky factors of M (T, n, n) and
                     of J M^-1 J^T (T, nc * nc), Y = M^-1 J^T (T, n * nc), and the forward
                     kinematics S0 (T, n, 6), oR (T, nj, 3, 3), op (T, nj, 3) (knots: 0 when
                     nothing is kept)
:data:`CostDerivatives`  l (T,), lx (T, ndx), lu (T, nu), lxx, lxu, luu of a cost at T knots
:data:`Costs`        the running costs (T knots, scaled by dt) and the terminal cost (1 knot)
:data:`Regularization`  the shifts on Q_uu, inside Q_uu / Q_ux (on V'_xx), on every V_xx, and
                     whether the safeguard drops the exact terms at a knot where they fail
:data:`Box`          the control bounds and the controls they apply to
:data:`Gaps`         the defects of a multiple-shooting trajectory, and whether it has any
:data:`Gains`        what a backward pass writes: k, K, the expected-decrease terms, V_x per
                     knot, V_xx f per knot, and the knots where the safeguard fell back
:data:`ClosedLoop`   the controls of a rollout: u = clip(us + alpha k + K (x (-) xs_ref))
:data:`Program`      built-in cost programs (:mod:`.costs`): their packed ints and floats, and
                     where knot t's program starts in them (``starts`` (T, 2); one row: the
                     same program at every knot)
:data:`Programs`     the running and terminal programs
===================  ==========================================================================
"""

from collections import namedtuple
from enum import IntEnum

import numpy as np


class SecondOrderMode(IntEnum):
    """Where DDP's second-order dynamics terms ``V'_x . F_zz`` come from at a knot."""

    #: none: iLQR, or a Gauss-Newton iteration of DDP
    NONE = 0
    #: the full FD-SO tensors of every knot (at an impact those of v+), from the batched
    #: derivative call, contracted in the backward pass (any backend on free-flight knots; with
    #: contacts, the backends stepped through the Dynamics protocol; O(n^4) per knot)
    TENSORS = 1
    #: the lam-contracted FDSVA-SO sweep at each knot inside the backward pass, and the linked
    #: contact kernels at the knots with contacts (the analytical backend; O(n^3) per knot)
    CONTRACTED = 2


#: the kinds of a knot's step (:data:`KnotContacts` ``kind``): a time step of the dynamics
#: with the knot's contacts (none: free flight), or an impact (no time passes, no control)
STEP, IMPACT = 0, 1

#: the slots of the knots' kernels in the table of linked kernels
#: (:func:`dynamics.jit.call_linked`): those of the knots with contacts or an impact
#: (:mod:`.contact_knots` links them), the second-order terms of the free knots, one per
#: :class:`SecondOrderMode`, and the expansion of (+) on Lie-group joints (:mod:`.linked`)
LINKED_STEP, LINKED_DERIVATIVES, LINKED_SECOND_ORDER = 0, 1, 2
LINKED_TENSORS, LINKED_FREE_SECOND_ORDER, LINKED_LIE_EXPANSION = 3, 4, 5
#: the slot of the cost program (:func:`~.costs.cost_knots`, linked by
#: :func:`~.costs.link_costs`), which every evaluation of the costs reaches
LINKED_COSTS = 6
#: the slots of the contact knots' kernels
CONTACT_SLOTS = (LINKED_STEP, LINKED_DERIVATIVES, LINKED_SECOND_ORDER)

PackedModel = namedtuple("PackedModel", "ints floats")
KnotContacts = namedtuple("KnotContacts", "kind ints floats int_offsets float_offsets size "
                                          "cost_scale damping restitution impact_model")
Step = namedtuple("Step", "dt B lie_offsets lie_sizes contacts")
Knots = namedtuple("Knots", "q v u tau q_T v_T")
Forces = namedtuple("Forces", "lam dlam_dq dlam_dv dlam_dtau dlam_du dl_dlam status")
StepDerivatives = namedtuple("StepDerivatives", "Fx Fu da_dq da_dv da_du Jq Jw forces")
FDTensors = namedtuple("FDTensors", "d2a_dq2 d2a_dv2 d2a_dqdv d2a_dtaudq")
SecondOrder = namedtuple("SecondOrder", "mode inner outer tensors q v a da_dtau lie_H kkt")
KKTFactors = namedtuple("KKTFactors", "LM Y LL S0 oR op IC BC FC Psid Psidd Sd dof_forces")
Costs = namedtuple("Costs", "running terminal")
Regularization = namedtuple("Regularization", "u x v safeguard",
                            defaults=(0.0, 0.0, 0.0, False))
Box = namedtuple("Box", "us lower upper bounded iterations")
Gaps = namedtuple("Gaps", "f open")
Gains = namedtuple("Gains", "k K dV Vx fVxx gauss_newton_knots")
ClosedLoop = namedtuple("ClosedLoop", "us k K alpha xs_ref feedback")
Program = namedtuple("Program", "ints floats starts")
Programs = namedtuple("Programs", "running terminal")
Rollout = namedtuple("Rollout", "xs us l lam")


class CostDerivatives(namedtuple("CostDerivatives", "l lx lu lxx lxu luu")):
    """Values and derivatives of a cost at T knots: l (T,), lx (T, ndx), lu (T, nu),
    lxx (T, ndx, ndx), lxu (T, ndx, nu), luu (T, nu, nu); C-contiguous float arrays (a
    residual's derivatives may come transposed: the compiled passes take one memory layout,
    and another would compile them again).  ``a + b`` adds two costs' derivatives field by
    field; :meth:`scaled` multiplies them."""

    __slots__ = ()

    def __new__(cls, l, lx, lu, lxx, lxu, luu):
        return super().__new__(cls, *(np.ascontiguousarray(a, dtype=float)
                                      for a in (l, lx, lu, lxx, lxu, luu)))

    def __add__(self, other):
        return CostDerivatives(*(a + b for a, b in zip(self, other)))

    def scaled(self, s):
        return CostDerivatives(*(s * a for a in self))

    @classmethod
    def empty(cls, T, ndx, nu):
        """Uninitialized derivatives of T knots: views of one flat buffer."""
        return cls._on_buffer(np.empty, T, ndx, nu)

    @classmethod
    def zeros(cls, T, ndx, nu):
        """Zero derivatives of T knots (the compiled cost programs add into them): views of one
        flat buffer."""
        return cls._on_buffer(np.zeros, T, ndx, nu)

    @classmethod
    def _on_buffer(cls, make, T, ndx, nu):
        sizes = (T, T * ndx, T * nu, T * ndx * ndx, T * ndx * nu, T * nu * nu)
        shapes = ((T,), (T, ndx), (T, nu), (T, ndx, ndx), (T, ndx, nu), (T, nu, nu))
        buf = make(sum(sizes))
        out, o = [], 0
        for size, shape in zip(sizes, shapes):
            out.append(buf[o:o + size].reshape(shape))
            o += size
        return tuple.__new__(cls, out)


def empty_forces(T, nc, n, nu):
    """:data:`Forces` of T knots with at most nc force components per knot (zeros; the
    statuses OK)."""
    return Forces(np.zeros((T, nc)), np.zeros((T, nc, n)), np.zeros((T, nc, n)),
                  np.zeros((T, nc, n)), np.zeros((T, nc, nu)), np.zeros((T, nc)),
                  np.zeros(T, dtype=np.int64))


def empty_gains(T, nu, ndx):
    """The :data:`Gains` a backward pass writes, for T knots: k, K, dV and the count of
    Gauss-Newton knots zero (the pass accumulates into them), Vx and fVxx uninitialized."""
    return Gains(np.zeros((T, nu)), np.zeros((T, nu, ndx)), np.zeros(2), np.empty((T + 1, ndx)),
                 np.empty((T + 1, ndx)), np.zeros(1, dtype=np.int64))


def kkt_factors(T, n, nc, nj):
    """:data:`KKTFactors` of T knots with at most nc force components, nj joints (zeros; T = 0:
    none kept): what the second order at a contact knot reads of its first derivatives
    (:data:`~dynamics.kernels.contact.ContactWork`)."""
    return KKTFactors(np.zeros((T, n, n)), np.zeros((T, n * nc)), np.zeros((T, nc * nc)),
                      np.zeros((T, n, 6)), np.zeros((T, nj, 3, 3)), np.zeros((T, nj, 3)),
                      np.zeros((T, nj, 6, 6)), np.zeros((T, nj, 6, 6)), np.zeros((T, nj, 6)),
                      np.zeros((T, n, 6)), np.zeros((T, n, 6)), np.zeros((T, n, 6)),
                      np.zeros((T, n, 4, 6)))


def empty_step_derivatives(T, n, nu, nc=0):
    """Uninitialized :data:`StepDerivatives` of T knots (views of one flat buffer), with the
    :data:`Forces` of at most nc force components per knot."""
    shapes = ((T, 2 * n, 2 * n), (T, 2 * n, nu), (T, n, n), (T, n, n), (T, n, nu), (T, n, n),
              (T, n, n))
    sizes = [a * b * c for a, b, c in shapes]
    buf = np.empty(sum(sizes))
    out, o = [], 0
    for shape, size in zip(shapes, sizes):
        out.append(buf[o:o + size].reshape(shape))
        o += size
    return StepDerivatives(*out, empty_forces(T, nc, n, nu))
