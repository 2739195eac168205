"""Spatial-vector algebra on flat arrays, compiled with numba.

Conventions (as in Pinocchio): a spatial motion vector is ``[linear(3), angular(3)]``, a spatial force
is ``[force(3), moment(3)]``.  All kernels work in the ground frame (the papers' formulation), so
quantities are never transformed between body frames once computed.

    motion cross   v x u   = [w x u_l + v_l x u_a,  w x u_a]
    force cross    v x* f  = [w x f_l,  w x f_a + v_l x f_l]
    force bar      (f xbar*) v = v x* f

Every helper writes into an output array given by the caller (no allocation in hot loops).

3-vectors as tuples (``tup3``, ``col3``, ``row3``, ``cross_t``, ``dot_t``, ...): in loops over
pairs of DoFs a slice such as ``W[:, k]`` builds an array view at every use, and a tuple lives in
registers (the contact kernels' chain terms: HyQ's four feet 37 -> 21 us a knot).
"""

from ..jit import njit

_JIT = dict(cache=True, error_model="numpy", fastmath=False, forceinline=True)


@njit(callee=True, **_JIT)
def cross3(a, b, out):
    x = a[1] * b[2] - a[2] * b[1]
    y = a[2] * b[0] - a[0] * b[2]
    z = a[0] * b[1] - a[1] * b[0]
    out[0] = x
    out[1] = y
    out[2] = z


@njit(callee=True, **_JIT)
def motion_cross(v, u, out):
    """out = v x u (motion x motion).  ``out`` must not alias ``v`` or ``u``."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    ux, uy, uz, ax, ay, az = u[0], u[1], u[2], u[3], u[4], u[5]
    out[0] = wy * uz - wz * uy + vy * az - vz * ay
    out[1] = wz * ux - wx * uz + vz * ax - vx * az
    out[2] = wx * uy - wy * ux + vx * ay - vy * ax
    out[3] = wy * az - wz * ay
    out[4] = wz * ax - wx * az
    out[5] = wx * ay - wy * ax


@njit(callee=True, **_JIT)
def motion_cross_add(v, u, out):
    """out += v x u."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    ux, uy, uz, ax, ay, az = u[0], u[1], u[2], u[3], u[4], u[5]
    out[0] += wy * uz - wz * uy + vy * az - vz * ay
    out[1] += wz * ux - wx * uz + vz * ax - vx * az
    out[2] += wx * uy - wy * ux + vx * ay - vy * ax
    out[3] += wy * az - wz * ay
    out[4] += wz * ax - wx * az
    out[5] += wx * ay - wy * ax


@njit(callee=True, **_JIT)
def force_cross(v, f, out):
    """out = v x* f (motion x force).  ``out`` must not alias ``v`` or ``f``."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    fx, fy, fz, nx, ny, nz = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] = wy * fz - wz * fy
    out[1] = wz * fx - wx * fz
    out[2] = wx * fy - wy * fx
    out[3] = wy * nz - wz * ny + vy * fz - vz * fy
    out[4] = wz * nx - wx * nz + vz * fx - vx * fz
    out[5] = wx * ny - wy * nx + vx * fy - vy * fx


@njit(callee=True, **_JIT)
def force_cross_add(v, f, out):
    """out += v x* f."""
    vx, vy, vz, wx, wy, wz = v[0], v[1], v[2], v[3], v[4], v[5]
    fx, fy, fz, nx, ny, nz = f[0], f[1], f[2], f[3], f[4], f[5]
    out[0] += wy * fz - wz * fy
    out[1] += wz * fx - wx * fz
    out[2] += wx * fy - wy * fx
    out[3] += wy * nz - wz * ny + vy * fz - vz * fy
    out[4] += wz * nx - wx * nz + vz * fx - vx * fz
    out[5] += wx * ny - wy * nx + vx * fy - vy * fx


@njit(callee=True, **_JIT)
def tup6(x):
    """The six entries of x as a tuple.  Values held in a tuple live in registers and cannot alias
    an output array, so the compiler need not reload them after every store into a result."""
    return (x[0], x[1], x[2], x[3], x[4], x[5])


@njit(callee=True, **_JIT)
def row6(A, i):
    """Row i of an (n, 6) array as a tuple, without the array view that ``A[i]`` builds (and
    counts) at every use."""
    return (A[i, 0], A[i, 1], A[i, 2], A[i, 3], A[i, 4], A[i, 5])


@njit(callee=True, **_JIT)
def dot6(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(callee=True, **_JIT)
def matvec6(A, x, out):
    """out = A @ x for a 6x6 matrix."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] = s


@njit(callee=True, **_JIT)
def matvec6_add(A, x, scale, out):
    """out += scale * A @ x."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] += scale * s


@njit(callee=True, **_JIT)
def matTvec6(A, x, out):
    """out = A.T @ x for a 6x6 matrix."""
    for c in range(6):
        s = 0.0
        for r in range(6):
            s += A[r, c] * x[r]
        out[c] = s


@njit(callee=True, **_JIT)
def ground_inertia(R, p, mass, com, Icom, out):
    """6x6 spatial inertia in the ground frame of a body placed at (R, p).

    ``com`` and ``Icom`` (rotational inertia about the centre of mass) are in the body frame.
    Blocks for [linear, angular]: [[m I, -m [c]x], [m [c]x, Ic - m [c]x [c]x]].
    """
    c0 = R[0, 0] * com[0] + R[0, 1] * com[1] + R[0, 2] * com[2] + p[0]
    c1 = R[1, 0] * com[0] + R[1, 1] * com[1] + R[1, 2] * com[2] + p[1]
    c2 = R[2, 0] * com[0] + R[2, 1] * com[1] + R[2, 2] * com[2] + p[2]
    # Ic0 = R Icom R^T
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                t = 0.0
                for l in range(3):
                    t += Icom[k, l] * R[c, l]
                s += R[r, k] * t
            out[3 + r, 3 + c] = s
    for r in range(3):
        for c in range(3):
            out[r, c] = 0.0
        out[r, r] = mass
    mc0, mc1, mc2 = mass * c0, mass * c1, mass * c2
    # m [c]x
    out[3, 0] = 0.0
    out[3, 1] = -mc2
    out[3, 2] = mc1
    out[4, 0] = mc2
    out[4, 1] = 0.0
    out[4, 2] = -mc0
    out[5, 0] = -mc1
    out[5, 1] = mc0
    out[5, 2] = 0.0
    for r in range(3):
        for c in range(3):
            out[r, 3 + c] = -out[3 + r, c]
    # - m [c]x [c]x = m (|c|^2 I - c c^T)
    cc = c0 * c0 + c1 * c1 + c2 * c2
    cv = (c0, c1, c2)
    for r in range(3):
        for c in range(3):
            out[3 + r, 3 + c] -= mass * cv[r] * cv[c]
        out[3 + r, 3 + r] += mass * cc


@njit(callee=True, **_JIT)
def body_coriolis_add(I, v, tmp6x6, tmp6, out):
    """out += B(I, v) = 1/2 [ (v x*) I - I (v x) + (I v) xbar* ]   (paper eq. 14).

    Uses I (v x) = -((v x*) I)^T for symmetric I.  ``tmp6x6`` (6x6) and ``tmp6`` (6) are scratch.
    """
    for c in range(6):
        force_cross(v, I[:, c], tmp6x6[:, c])
    for r in range(6):
        for c in range(6):
            out[r, c] += 0.5 * (tmp6x6[r, c] + tmp6x6[c, r])
    matvec6(I, v, tmp6)
    add_force_bar(tmp6, 0.5, out)


@njit(callee=True, **_JIT)
def add_force_bar(f, scale, out):
    """out += scale * (f xbar*), the 6x6 matrix with (f xbar*) v = v x* f.

    For v = [l, w]: v x* f = [w x f_l, w x f_a + l x f_l] = [-f_l x w, -f_a x w - f_l x l].
    """
    fx, fy, fz, nx, ny, nz = f[0] * scale, f[1] * scale, f[2] * scale, f[3] * scale, f[4] * scale, f[5] * scale
    # top-right: -[f_l]x
    out[0, 4] += fz
    out[0, 5] -= fy
    out[1, 3] -= fz
    out[1, 5] += fx
    out[2, 3] += fy
    out[2, 4] -= fx
    # bottom-left: -[f_l]x
    out[3, 1] += fz
    out[3, 2] -= fy
    out[4, 0] -= fz
    out[4, 2] += fx
    out[5, 0] += fy
    out[5, 1] -= fx
    # bottom-right: -[f_a]x
    out[3, 4] += nz
    out[3, 5] -= ny
    out[4, 3] -= nz
    out[4, 5] += nx
    out[5, 3] += ny
    out[5, 4] -= nx


# -------------------------------------------------------- 3-vectors as tuples and in place
@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def cross3_into(a, b, out):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def cross3_add(a, b, out):
    out[0] += a[1] * b[2] - a[2] * b[1]
    out[1] += a[2] * b[0] - a[0] * b[2]
    out[2] += a[0] * b[1] - a[1] * b[0]


# 3-vectors as tuples, for the loops over pairs of chain DoFs: values in a tuple live in
# registers, where a slice such as W[:, k] is an array view built (and counted) at every use
# (the weighted Hessian of HyQ's foot: 2.0 -> 1.0 us)
@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def tup3(x):
    """The three entries of x."""
    return (x[0], x[1], x[2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def col3(A, i):
    """Column i of a (3, n) array."""
    return (A[0, i], A[1, i], A[2, i])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def row3(A, i):
    """Row i of an (n, 3) array."""
    return (A[i, 0], A[i, 1], A[i, 2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def row3_at(A, i, j):
    """A[i, j] of an (n, m, 3) array."""
    return (A[i, j, 0], A[i, j, 1], A[i, j, 2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def cross_t(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def dot_t(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def add_t(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def sub_t(a, b):
    return (a[0] - b[0], a[1] - b[1], a[2] - b[2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def scale_t(a, x):
    return (a[0] * x, a[1] * x, a[2] * x)


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def matTvec_at(A, i, x):
    """A[i]^T @ x for an (n, 3, 3) array A."""
    return (A[i, 0, 0] * x[0] + A[i, 1, 0] * x[1] + A[i, 2, 0] * x[2],
            A[i, 0, 1] * x[0] + A[i, 1, 1] * x[1] + A[i, 2, 1] * x[2],
            A[i, 0, 2] * x[0] + A[i, 1, 2] * x[1] + A[i, 2, 2] * x[2])


@njit(callee=True, forceinline=True, cache=True, error_model="numpy")
def matvec_at(A, i, x):
    """A[i] @ x for an (n, 3, 3) array A."""
    return (A[i, 0, 0] * x[0] + A[i, 0, 1] * x[1] + A[i, 0, 2] * x[2],
            A[i, 1, 0] * x[0] + A[i, 1, 1] * x[1] + A[i, 1, 2] * x[2],
            A[i, 2, 0] * x[0] + A[i, 2, 1] * x[1] + A[i, 2, 2] * x[2])
