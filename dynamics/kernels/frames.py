"""Frames attached to joints: placement, local Jacobian and the second-order term of their motion
under a configuration perturbation, compiled.

For a frame f on joint j (placement ``jMf``) and a perturbation ``q (+) dq``,

    oMf(q (+) dq) = oMf(q) Exp(xi(dq)),   xi(dq) = J dq + 1/2 sum_{a, b} dq_a dq_b Xi[:, a, b] + O(3)

with ``J`` the frame Jacobian in the local frame (Pinocchio's ``LOCAL``) and, by the
Baker-Campbell-Hausdorff formula applied to the product of joint exponentials (root first),
``Xi[:, a, b] = Xi[:, b, a] = 1/2 [J_a, J_b]`` when the joint of DoF a is a strict ancestor of the
joint of DoF b, and 0 otherwise (within one joint, ``q (+) dq`` is a single exponential).  The
bracket of motion vectors is the motion cross product ``J_a x J_b``.
"""

import numpy as np

from ..jit import njit
from .kinematics import compose_placements
from .spatial import motion_cross

_JIT = dict(cache=True, error_model="numpy")


@njit(callee=True, forceinline=True, **_JIT)
def support_joints(m, joint, chain):
    """The joints from the root to ``joint`` (inclusive), root first, in ``chain``; returns their
    number."""
    n = 0
    j = joint
    while j > 0:
        chain[n] = j
        n += 1
        j = m.parent[j]
    for k in range(n // 2):  # reverse: root first
        chain[k], chain[n - 1 - k] = chain[n - 1 - k], chain[k]
    return n


@njit(forceinline=True, **_JIT)
def frame_placement(oR, op, joint, fR, fp, Rf, pf):
    """World placement (Rf, pf) of the frame ``jMf = (fR, fp)`` on ``joint``, from the world
    placements (oR, op) of the joints."""
    compose_placements(oR[joint], op[joint], fR, fp, Rf, pf)


@njit(callee=True, forceinline=True, **_JIT)
def frame_jacobian(m, S0, chain, nchain, Rf, pf, J):
    """The local Jacobian J (6, nv) (zero outside the support ``chain``) of the frame at (Rf, pf),
    from the ground-frame motion subspace S0 of
    :func:`~dynamics.kernels.kinematics.forward_kinematics`."""
    J[:, :] = 0.0
    for n in range(nchain):
        i = chain[n]
        for k in range(m.iv[i], m.iv[i] + m.nvj[i]):
            # velocity of the frame origin: lin0 + ang0 x pf, then both in the frame's axes
            a0, a1, a2 = S0[k, 3], S0[k, 4], S0[k, 5]
            l0 = S0[k, 0] + a1 * pf[2] - a2 * pf[1]
            l1 = S0[k, 1] + a2 * pf[0] - a0 * pf[2]
            l2 = S0[k, 2] + a0 * pf[1] - a1 * pf[0]
            for r in range(3):
                J[r, k] = Rf[0, r] * l0 + Rf[1, r] * l1 + Rf[2, r] * l2
                J[3 + r, k] = Rf[0, r] * a0 + Rf[1, r] * a1 + Rf[2, r] * a2


@njit(callee=True, **_JIT)
def add_bracket_hessian(m, J, chain, nchain, g, H):
    """H[a, b] += g . Xi[:, a, b] for the DoFs of the support (module docstring): the
    second-order term of the frame motion contracted with a covector g (6,)."""
    cr = np.empty(6)
    for n1 in range(nchain):
        i = chain[n1]
        for n2 in range(n1 + 1, nchain):
            k = chain[n2]
            for a in range(m.iv[i], m.iv[i] + m.nvj[i]):
                for b in range(m.iv[k], m.iv[k] + m.nvj[k]):
                    motion_cross(J[:, a], J[:, b], cr)
                    x = 0.5 * (g[0] * cr[0] + g[1] * cr[1] + g[2] * cr[2] + g[3] * cr[3]
                               + g[4] * cr[4] + g[5] * cr[5])
                    H[a, b] += x
                    H[b, a] += x
