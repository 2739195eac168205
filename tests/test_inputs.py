"""Bad input gives a ValueError naming the argument and what was expected."""

import numpy as np
import pytest

import dynamics as dyn
from dynamics import robots


@pytest.fixture
def hyq():
    return robots.load("hyq")


def test_wrong_shape(hyq):
    q = hyq.neutral()
    with pytest.raises(ValueError, match=r"v: expected shape \(18,\) or \(T, 18\).*got shape \(17,\)"):
        dyn.rnea(hyq, q, np.zeros(17), np.zeros(18))
    with pytest.raises(ValueError, match=r"q: expected shape \(19,\)"):
        dyn.aba(hyq, q[:-1], np.zeros(18), np.zeros(18))
    with pytest.raises(ValueError, match=r"q: expected shape"):
        dyn.mass_matrix(hyq, np.zeros((2, 3, 19)))


def test_nan_and_inf(hyq):
    q = hyq.neutral()
    v = np.zeros(18)
    v[4] = np.nan
    with pytest.raises(ValueError, match=r"v: expected finite values; got nan at index 4"):
        dyn.rnea(hyq, q, v, np.zeros(18))
    tau = np.zeros((3, 18))
    tau[1, 2] = np.inf
    with pytest.raises(ValueError, match=r"tau: expected finite values; got inf at index \(1, 2\)"):
        dyn.aba(hyq, np.tile(q, (3, 1)), np.zeros((3, 18)), tau)


def test_unnormalized_quaternion(hyq):
    q = hyq.neutral()
    q[3:7] = [0.0, 0.0, 0.0, 1.01]
    with pytest.raises(ValueError, match=r"q: the quaternion of joint 'root_joint' \(q\[3:7\]\) must "
                                         r"have unit norm.*got norm 1.01"):
        dyn.id_derivatives(hyq, q, np.zeros(18), np.zeros(18))
    q[3:7] = [0.0, 0.0, 0.0, 1.0 + 1e-8]  # within tolerance
    dyn.rnea(hyq, q, np.zeros(18), np.zeros(18))


def test_mixed_and_mismatched_batches(hyq):
    q = hyq.neutral()
    with pytest.raises(ValueError, match="mix of single points and batches"):
        dyn.rnea(hyq, np.tile(q, (2, 1)), np.zeros(18), np.zeros((2, 18)))
    with pytest.raises(ValueError, match="same number of knots"):
        dyn.rnea(hyq, np.tile(q, (2, 1)), np.zeros((3, 18)), np.zeros((2, 18)))


def test_bad_option(hyq):
    with pytest.raises(ValueError, match="ipr: expected 'auto', 'dmm', 'aza' or 'ltdl'; got 'lu'"):
        dyn.fd_derivatives(hyq, hyq.neutral(), np.zeros(18), np.zeros(18), ipr="lu")


def test_integrate_checks_inputs(hyq):
    with pytest.raises(ValueError, match=r"dq: expected shape \(18,\)"):
        hyq.integrate(hyq.neutral(), np.zeros(19))
