"""The robot model as two flat buffers, so that a compiled kernel call unboxes two arrays instead of
a tuple of fifteen (about 3 us per call saved).  :func:`pack` (Python) and :func:`unpack` (numba)
are inverses; ``unpack`` returns the :class:`KernelModel` namedtuple of borrowed views used by
every kernel (its buffers are the kernel's arguments, held by the Python caller).

ints   = [nj, nv, parent, jtype, iq, nqj, iv, nvj (nj each), dof_parent (nv)]
floats = [axis (nj*3), place_R (nj*9), place_p (nj*3), mass (nj), com (nj*3), Icom (nj*9),
          S_local (nv*6), gravity (6), pitch (nj), armature (nv)]
"""

from collections import namedtuple

import numpy as np

from ..jit import borrowed, njit

KernelModel = namedtuple(
    "KernelModel",
    "parent jtype axis iq nqj iv nvj place_R place_p mass com Icom S_local dof_parent gravity "
    "pitch armature",
)


def pack(m: KernelModel):
    nj, nv = m.parent.shape[0], m.S_local.shape[0]
    ints = np.concatenate([[nj, nv], m.parent, m.jtype, m.iq, m.nqj, m.iv, m.nvj,
                           m.dof_parent]).astype(np.int64)
    floats = np.concatenate([np.ravel(x) for x in (m.axis, m.place_R, m.place_p, m.mass, m.com,
                                                   m.Icom, m.S_local, m.gravity, m.pitch,
                                                   m.armature)]).astype(float)
    return np.ascontiguousarray(ints), np.ascontiguousarray(floats)

@njit(callee=True, cache=True, error_model="numpy")
def unpack(ints, floats):
    """The :class:`KernelModel` of the buffers of :func:`pack`, as borrowed views (module
    docstring): a kernel's model costs no reference counting.  Compiled code only."""
    ints = borrowed(ints)
    floats = borrowed(floats)
    nj, nv = ints[0], ints[1]
    o = 2
    parent = ints[o:o + nj]
    jtype = ints[o + nj:o + 2 * nj]
    iq = ints[o + 2 * nj:o + 3 * nj]
    nqj = ints[o + 3 * nj:o + 4 * nj]
    iv = ints[o + 4 * nj:o + 5 * nj]
    nvj = ints[o + 5 * nj:o + 6 * nj]
    dof_parent = ints[o + 6 * nj:o + 6 * nj + nv]
    f = 0
    axis = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    place_R = floats[f:f + 9 * nj].reshape((nj, 3, 3))
    f += 9 * nj
    place_p = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    mass = floats[f:f + nj]
    f += nj
    com = floats[f:f + 3 * nj].reshape((nj, 3))
    f += 3 * nj
    Icom = floats[f:f + 9 * nj].reshape((nj, 3, 3))
    f += 9 * nj
    S_local = floats[f:f + 6 * nv].reshape((nv, 6))
    f += 6 * nv
    gravity = floats[f:f + 6]
    f += 6
    pitch = floats[f:f + nj]
    f += nj
    armature = floats[f:f + nv]
    return KernelModel(parent, jtype, axis, iq, nqj, iv, nvj, place_R, place_p, mass, com, Icom,
                       S_local, dof_parent, gravity, pitch, armature)

