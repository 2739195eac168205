"""dynamics.jit.carve and extent: a compiled function's scratch arrays of any shapes
as views of one buffer."""

import numba
import numpy as np
import pytest

from dynamics.jit import carve, extent, keep_alive


@numba.njit(cache=False)
def _carved(n, m):
    """Each view of ((n, 3), (0, 0), (m,), (2, n, m)) filled with its own numbers, in C order;
    the buffer, the views' shapes and strides."""
    shapes = ((n, 3), (0, 0), (m,), (2, n, m))
    own = np.zeros(extent(shapes))
    a, empty, b, c = carve(own, shapes)
    k = 1.0
    for i in range(n):
        for j in range(3):
            a[i, j] = k
            k += 1.0
    for i in range(m):
        b[i] = k
        k += 1.0
    for i in range(2):
        for j in range(n):
            for r in range(m):
                c[i, j, r] = k
                k += 1.0
    out = own.copy()
    keep_alive(own)
    return out, a.shape, empty.shape, b.shape, c.shape, a.strides, c.strides


def test_carve_takes_adjacent_c_ordered_views_of_one_buffer():
    """The views lie one after the other in the buffer, each in C order (so the buffer reads
    1, 2, 3, ... when each view is filled in C order), with their shapes and strides, and
    extent is the sum of their sizes (an empty shape takes nothing)."""
    n, m = 4, 5
    out, sa, se, sb, sc, ta, tc = _carved(n, m)
    assert out.shape == (n * 3 + m + 2 * n * m,)
    np.testing.assert_array_equal(out, np.arange(1.0, out.size + 1.0))
    assert (sa, se, sb, sc) == ((n, 3), (0, 0), (m,), (2, n, m))
    assert ta == (24, 8) and tc == (8 * n * m, 8 * m, 8)


def test_carve_refuses_what_is_not_a_flat_buffer_and_shapes():
    """A 2-D buffer, or shapes that are not tuples of integers, do not type."""

    @numba.njit(cache=False)
    def two_d(x):
        return carve(x, ((2,),))

    @numba.njit(cache=False)
    def floats(x):
        return carve(x, ((2.0,),))

    with pytest.raises(numba.core.errors.TypingError):
        two_d(np.zeros((2, 2)))
    with pytest.raises(numba.core.errors.TypingError):
        floats(np.zeros(4))
