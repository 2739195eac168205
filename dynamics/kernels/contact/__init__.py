"""Rigid-contact dynamics and impacts with their first and second derivatives, compiled (the
model: :mod:`dynamics.contacts`), one concern per module:

* :mod:`.chain`: a contact's chain of DoFs, its Jacobian's columns and their derivatives;
* :mod:`.point`: a point contact's second-order chain terms;
* :mod:`.surface`: a flat foot's angular rows and position gain;
* :mod:`.kkt`: the KKT system, its factors and a knot's work arrays;
* :mod:`.derivatives`: the first derivatives and the contracted second order;
* :mod:`.impulse`: the impact map, through the same KKT system and residual terms;
* :mod:`.batch`: the batched kernels over knots.

Per knot, with the contact set packed by :class:`~dynamics.contacts.ContactSet` (``cints``,
``cfloats``): the constrained forward dynamics (a, lam) of the KKT system

    M a - J^T lam = tau - b,     J a + gamma = 0,

and the derivatives of (a, lam) in (q, v, tau) along the project's conventions (Lie derivatives
along right perturbations of q).

Kinematics of a point contact (ground frame, ``[lin, ang]`` motion vectors).  For the chain of
DoFs from the root to the contact's joint, with S_j = (s_j, w_j) their ground-frame motion
subspace columns and p the contact point, the columns of its world-aligned Jacobian are the
velocities of p, ``P_j = s_j + w_j x p``.  A right perturbation of DoF k moves rigidly the
subtree of its joint, which holds p and the columns of its own and every later joint of the
chain; with lev(j) the position of j's joint along the chain::

    dp/dq_k   = P_k
    dw_j/dq_k = w_k x w_j                      if lev(k) <= lev(j), else 0
    dP_j/dq_k = w_k x P_j                      if lev(k) <= lev(j)   (the subtree turns)
              = w_j x P_k                      otherwise              (only p moves)

(``dP(j, k)`` below; within one multi-DoF joint both cases give the first, whence the non-
symmetric q-q blocks of the convention).  Then, with the contact force lam_c and the gains::

    J a + Jdot v   = sum_j P_j a_j + sum_jk v_j v_k dP(j, k)      (the classical acceleration)
    gamma          = sum_jk v_j v_k dP(j, k) + Kp (p - ref) + Kd sum_j P_j v_j
    (J^T lam)_j    = P_j . lam

and the derivatives below follow by the same rules, the second derivatives of P by
differentiating dP(j, k) once more (ddP(j, k, l), which :func:`.point.weighted_hessian` sums
with weights over j).

A flat foot (kind SURFACE, Crocoddyl's ``ContactModel6D`` with ``LOCAL_WORLD_ALIGNED``) holds
the whole frame: its rows are its origin's point rows, with the spatial instead of the classical
acceleration, and three angular rows.  With om = sum_j v_j w_j and pd = sum_j v_j P_j (the
frame's angular velocity and its origin's velocity), U_j = sum_{lev_i < lev_j} v_i w_i and the
angular columns' rule ``dW(j, k) = dw_j/dq_k = [lev_k <= lev_j] w_k x w_j``::

    linear rows    J a + gamma = (the point rows at Kp = 0) - om x pd
    angular rows   J a + gamma = sum_j w_j a_j + sum_j v_j U_j x w_j + Kd om
    (J^T lam)_j    += w_j . tau_c                  (tau_c: the torque rows of the wrench)

(the drift sum_jk v_j v_k dW(j, k) keeps only lev_k < lev_j: the pairs in one joint cancel).
Their second derivatives take ``ddW(j, k, l) = L_l dW(j, k) = [lev_k <= lev_j] (dW(k, l) x w_j
+ w_k x dW(j, l))``; every (q, q) term is a weight dotted with ddW or ddP, so level suffix sums
give them without a third-order tensor (:func:`.surface.surface_second_order`).

A flat foot's position gain (Crocoddyl's ``Kp log6``, :func:`.surface.surface_position_gain`) adds
Kp g to its rows, g = R l with l = log6(ref^-1 oMf) = (l_v, l_w) and R the frame's rotation
acting on each part.  A chain DoF k moves the frame by the local twist
xi_k = (R^T P_k, R^T w_k), so with Jlog6 the log's Jacobian in a right perturbation
(:func:`~dynamics.kernels.lie_group.se3_log_jacobian`)::

    L_k l = Jlog6 xi_k,      L_k g_b = w_k x g_b + R (Jlog6 xi_k)_b      (b: the part v or w)

For the second derivative of rho . g: Jlog6 changes along DoF l by H(xi_l, .) + 1/2 Jlog6
ad(xi_l) (H: the log's Hessian; the bracket from Exp(xi_l) Exp(x) = Exp(xi_l + x + 1/2
ad(xi_l) x + ...)), and L_l xi_k = -ad(xi_l) xi_k when lev_l > lev_k (the frame moves against
column k), else 0 (both move with the subtree).  With sigma = R^T rho by parts, G = sigma . H
(:func:`~dynamics.kernels.lie_group.se3_log_hessian_contracted`), kappa = Jlog6^T sigma and
c = sum_b g_b x rho_b::

    L_l L_k (rho . g) = [lev_l <= lev_k] (w_l x w_k) . c + w_k . sum_b L_l g_b x rho_b
                        + w_l . sum_b R (Jlog6 xi_k)_b x rho_b + xi_l^T G xi_k
                        + (1/2 - [lev_l > lev_k]) kappa . ad(xi_l) xi_k

O(nd^2) on the chain; g does not depend on v.

Derivatives of the KKT solution (the implicit function theorem).  With
r(q, v, tau, a, lam) = [ID(q, v, a) - J^T lam - tau ; J a + gamma] and
K = dr/d(a, lam) = [[M, -J^T], [J, 0]], the derivatives are d(a, lam)/dx = -K^-1 dr/dx.  Here
dID/dq, dID/dv come from IDSVA at the constrained acceleration, and K^-1 is applied through the
Cholesky factors of M and of the contact-space inverse inertia Lambda = J M^-1 J^T (+ damping I,
Crocoddyl's ``JMinvJt_damping``; with none, a rank-deficient J makes Lambda singular: status
SINGULAR).

Second derivatives, contracted with a co-state mu over (a, lam).  Differentiating r = 0 twice,
with Z = [I ; d(a, lam)/dx] (the total derivative of (x, a, lam) in x) and rho = K^-T mu,

    mu . d2(a, lam)/dx2 = -Z^T (d2 (rho . r)) Z,

so no tensor is formed: rho_a . ID's second derivatives come from the contracted IDSVA-SO at
the constrained acceleration (its (q, q), (v, v), (q, v) blocks and its (q, a) block, which is
rho_a . dM/dq; it reads the forward pass, the composites and the per-DoF forces that IDSVA
left at the same point for the first derivatives, :data:`.kkt.ContactWork`), and the contact rows'
from :func:`.point.point_second_order`, a closed form on each contact's chain in the rules above.
The (v, a), (a, a), (lam, .) blocks of d2 (rho . r) are 0 (r is linear in a and lam, and M
does not depend on v), and tau enters r linearly.  The full
tensors are the contractions with unit co-states, one per output row.

Impacts (:func:`.impulse.impulse_dynamics_point`).  The residual r = [M(q) (v+ - v) - J^T imp ;
J (v+ + r_c v)] has the same K in y = (v+, imp); dr/dq is ID's at rest without gravity and
acceleration v+ - v (that is d(M dv)/dq) with the contacts' terms at velocity 0 and
acceleration v+ + r_c v, and dr/dv = [-M ; r_c J].  Its second derivatives follow as above:
(q, q) and (q, v+) from the contracted IDSVA-SO at rest, (q, v) = -rho_a . dM/dq plus r_c times
the contacts' (q, v+) block, and none in (v, v).

Memory.  The chain functions run once per contact and knot on arrays of a few dozen numbers,
and numba's allocations and reference counts took about a quarter of a batched second order's
time (HyQ, four feet, first derivatives included).  A function's scratch arrays, of any
shapes, are therefore one allocation, carved into borrowed views (:func:`dynamics.jit.carve`:
views without a reference count).  A HyQ knot on four feet then allocates 43 times for its
first derivatives and 65 for its second order, against 88 and 184 with an allocation per array.
A batched second order (:func:`.batch.constrained_so_chunk`) forms the first derivatives of a
block of :data:`.batch.KNOT_BLOCK` knots, each into its own work arrays
(:func:`.kkt.workspace_block`), before their second-order terms, so that each phase's code
stays in the core's caches over the block.
"""

from .batch import (KNOT_BLOCK, constrained_derivatives_batch, constrained_derivatives_chunk,
                    constrained_dynamics_batch, constrained_dynamics_chunk, constrained_so_batch,
                    constrained_so_chunk, impulse_batch, impulse_chunk, jacobian_batch,
                    zero_gravity)
from .chain import C_FLOATS, C_INTS, POINT, SURFACE, chain_dofs, column_derivative, point_columns
from .derivatives import constrained_derivatives_point, so_contracted_terms
from .impulse import impulse_derivatives_point, impulse_dynamics_point, impulse_so_terms
from .kkt import (OK, SINGULAR_CONTACT, SINGULAR_MASS, ContactWork, constrained_dynamics_point,
                  contact_workspace, kinematics_workspace, second_order_state)

__all__ = ["KNOT_BLOCK", "constrained_derivatives_batch", "constrained_derivatives_chunk",
           "constrained_dynamics_batch", "constrained_dynamics_chunk", "constrained_so_batch",
           "constrained_so_chunk", "impulse_batch", "impulse_chunk", "jacobian_batch",
           "zero_gravity", "C_FLOATS", "C_INTS", "POINT", "SURFACE", "chain_dofs",
           "column_derivative", "point_columns", "constrained_derivatives_point",
           "so_contracted_terms", "impulse_derivatives_point", "impulse_dynamics_point",
           "impulse_so_terms", "OK", "SINGULAR_CONTACT", "SINGULAR_MASS", "ContactWork",
           "constrained_dynamics_point", "contact_workspace", "kinematics_workspace",
           "second_order_state"]
