"""Wrong objects fail at construction, each with an error that names the argument and what it
expects (they used to be accepted and fail later with a traceback from inside)."""

import casadi
import numpy as np
import pinocchio as pin
import pytest

import ddp
import dynamics as dyn
from dynamics import robots


@pytest.fixture(scope="module")
def ur3():
    return robots.load("ur3")


class ShortResidual(ddp.ResidualCost):
    """Declares nr = 3 but returns 2 entries."""

    def __init__(self):
        super().__init__(nq=6, nv=6, nu=6, weight=1.0, nr=3, name="ShortResidual")

    def residual(self, q, dq, v, u):
        return casadi.vertcat(q[0] + dq[0], v[0])


class BrokenResidual(ShortResidual):
    def residual(self, q, dq, v, u):
        return q[0] + undefined_name  # noqa: F821  (the user's slip)


def _problem(ur3, **kw):
    args = dict(dynamics=dyn.AnalyticalDynamics(ur3), x0=np.zeros(12), horizon=10, dt=0.01,
                running_cost=ddp.ControlRegularization(6, 1.0),
                terminal_cost=ddp.ControlRegularization(6, 1.0))
    args.update(kw)
    return ddp.ShootingProblem(**args)


@pytest.mark.parametrize("field, value, error, message", [
    ("dynamics", "robot", TypeError, r"dynamics: expected a Dynamics backend .*; got str"),
    ("running_cost", "cost", TypeError, r"running_cost: expected a ddp cost .*; got str"),
    ("running_cost", None, ValueError, r"running_cost: no running cost"),
    ("terminal_cost", 3.0, TypeError, r"terminal_cost: expected a ddp cost .*; got float"),
    ("running_cost", ShortResidual(), ValueError,
     r"running_cost: ShortResidual.residual: expected a column of nr = 3 entries; got shape "
     r"\(2, 1\)"),
    ("running_cost", BrokenResidual(), ValueError,
     r"running_cost: BrokenResidual.residual\(q, dq, v, u\) failed on CasADi symbols: "
     r"NameError"),
    ("x0", np.r_[np.nan, np.zeros(11)], ValueError,
     r"x0: expected finite values; got nan at index 0"),
    ("x0", np.zeros(11), ValueError, r"x0: expected shape \(12,\) \(q: 6, v: 6\); got \(11,\)"),
    ("u_max", -1.0, ValueError, r"u_min, u_max: expected u_min <= u_max; control 0 has 0 > -1"),
])
def test_a_wrong_problem_argument_is_named(ur3, field, value, error, message):
    kw = {field: value}
    if field == "u_max":
        kw["u_min"] = 0.0
    with pytest.raises(error, match=message):
        _problem(ur3, **kw)


def test_a_robot_model_where_a_dynamics_is_expected(ur3):
    with pytest.raises(TypeError, match=r"got a RobotModel \(wrap it: "
                                        r"dynamics.AnalyticalDynamics\(model\)\)"):
        _problem(ur3, dynamics=ur3)


@pytest.mark.parametrize("backend", ["AnalyticalDynamics", "CasadiDynamics",
                                     "FiniteDifferenceDynamics"])
def test_a_backend_names_what_it_got_instead_of_a_robot_model(backend):
    cls = getattr(dyn, backend)
    with pytest.raises(TypeError, match=rf"{backend}: model: expected a dynamics.RobotModel; "
                                        r"got str \(load it: dynamics.robots.load\('ur3'\)\)"):
        cls("ur3")
    with pytest.raises(TypeError, match=r"got Model \(wrap it: "
                                        r"dynamics.RobotModel.from_pinocchio\(model\)\)"):
        cls(pin.buildSampleModelManipulator())
    with pytest.raises(TypeError, match=r"ContactDynamics: model: expected a dynamics.RobotModel"):
        dyn.ContactDynamics("hyq", [dyn.Contact3D("lf_foot")])


def test_a_singular_mass_matrix_is_a_diverged_status_that_says_so():
    """A point mass on its revolute joint's axis, without rotational inertia, loads (the
    subtree has mass) but M = 0: the solve ends 'diverged', naming the knot and the mass
    matrix, instead of a bare 'non-finite'."""
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelRX(), pin.SE3.Identity(), "spin")
    I = pin.Inertia(1.0, np.zeros(3), np.eye(3))
    I.inertia = np.diag([0.0, 1.0, 1.0])
    pm.appendBodyToJoint(j, I, pin.SE3.Identity())
    m = dyn.RobotModel.from_pinocchio(pm, "spinner")
    c = ddp.ControlRegularization(1, 1.0)
    P = ddp.ShootingProblem(dyn.AnalyticalDynamics(m), np.zeros(2), 5, 0.1, c, c)
    sol = ddp.solve(P, us=np.ones((5, 1)), max_iter=3)
    assert sol.status == "diverged", sol.status
    assert "knot 0: the mass matrix is singular" in sol.message, sol.message
