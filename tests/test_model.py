"""RobotModel, robots and the configuration-space operations."""

import numpy as np
import pinocchio as pin
import pytest

import dynamics as dyn
from dynamics import robots
from helpers import rel_err
import pinocchio_ref as ref


@pytest.mark.parametrize("name,nq,nv", [("pendulum", 1, 1), ("double_pendulum", 2, 2), ("ur3", 6, 6),
                                        ("hyq", 19, 18), ("atlas", 37, 36), ("talos", 51, 50)])
def test_named_robots(name, nq, nv):
    m = robots.load(name)
    assert (m.nq, m.nv) == (nq, nv)
    assert m.has_free_flyer == (name in ("hyq", "atlas", "talos"))


def test_ur3_is_the_ur3():
    """The UR3 (not the UR5 that example-robot-data 5.0.0's load('ur3') returned): upper arm
    0.24365 m, forearm 0.21325 m."""
    m = robots.load("ur3")
    pm = m.pin_model
    lengths = sorted(abs(float(pm.jointPlacements[i].translation[k]))
                     for i in range(1, pm.njoints) for k in range(3))
    assert any(abs(x - 0.24365) < 1e-9 for x in lengths)
    assert any(abs(x - 0.21325) < 1e-9 for x in lengths)
    assert pm.existFrame("tool0")


def test_atlas_urdf_shipped_with_provenance():
    from pathlib import Path

    text = (Path(dyn.__file__).parent / "data" / "atlas.urdf").read_text()
    assert "Transcribed from the public" in text and "Drake" in text


def test_unknown_robot_name():
    with pytest.raises(ValueError, match="robot name: expected one of .*ur3.*; got 'ur6' "
                                         r"\(did you mean .*ur3"):
        robots.load("ur6")
    with pytest.raises(ValueError, match="floating_base: the built-in hyq has a free-flyer root"):
        robots.load("hyq", floating_base=False)


def test_any_example_robot_data_urdf_or_path_loads():
    """Beyond the built-in names: example-robot-data's URDFs by stem, and any URDF by path, each
    the model Pinocchio parses from the same file."""
    solo = robots.load("solo12", floating_base=True)
    assert (solo.nq, solo.nv) == (19, 18) and solo.floating_base
    # a legged robot whose SRDF poses its root_joint gets a free flyer by default; an arm not
    assert robots.load("solo12") is solo and robots.load("go1").floating_base
    assert not robots.load("panda").floating_base
    path = robots.example_robot_data_urdfs()["ur5_robot"]
    ur5 = robots.load(str(path))
    ref = pin.buildModelFromUrdf(str(path))
    assert ur5.nq == ref.nq == 6 and ur5 is robots.load("ur5_robot")
    q = pin.randomConfiguration(ref)
    np.testing.assert_allclose(dyn.aba(ur5, q, np.ones(6), np.zeros(6)),
                               pin.aba(ref, ref.createData(), q, np.ones(6), np.zeros(6)),
                               rtol=1e-12, atol=1e-12)


def test_a_robot_has_the_srdfs_rotor_inertias_and_reference_configurations():
    """As example-robot-data loads Talos: every leg joint's armature is rotor inertia 1e-5 x gear
    ratio 100^2 = 0.1 (the SRDF's <rotor_params>), the free-flyer's 0; the SRDF's half-sitting
    is the configuration written out in robots.TALOS_LEGS_HALF_SITTING.  Robots whose loaders
    read no rotor parameters (HyQ, UR3) have none; their reference configurations still load."""
    legs = robots.load("talos_legs")
    np.testing.assert_allclose(legs.armature, np.r_[np.zeros(6), np.full(12, 0.1)], rtol=1e-12)
    np.testing.assert_array_equal(legs.reference_configurations["half_sitting"],
                                  robots.TALOS_LEGS_HALF_SITTING)
    talos = robots.load("talos")
    assert talos.armature[6:].max() == pytest.approx(0.1) and not talos.armature[:6].any()
    hyq = robots.load("hyq")
    assert not hyq.armature.any() and set(hyq.reference_configurations) == {
        "standing", "straight_standing"}
    assert not robots.load("ur3").armature.any()
    assert robots.srdf_of(robots.example_robot_data_urdfs()["solo12"]).name == "solo.srdf"


def test_armature_is_on_the_mass_matrix_and_nowhere_else():
    """tau(armature) - tau(0) = armature * a exactly, and M gains diag(armature), on the
    same q, v, a: with_armature gives a new model and leaves the first unchanged."""
    m = robots.load("ur3")
    heavy = m.with_armature(np.linspace(0.1, 0.6, 6))
    assert not m.armature.any() and heavy.armature[-1] == 0.6
    q, v, a = m.random_configuration(1), np.ones(6), np.linspace(-1, 1, 6)
    np.testing.assert_allclose(dyn.rnea(heavy, q, v, a) - dyn.rnea(m, q, v, a),
                               heavy.armature * a, atol=1e-12)
    np.testing.assert_allclose(dyn.mass_matrix(heavy, q) - dyn.mass_matrix(m, q),
                               np.diag(heavy.armature), atol=1e-12)
    tau = dyn.rnea(heavy, q, v, a)
    np.testing.assert_allclose(dyn.aba(heavy, q, v, tau), a, atol=1e-12)
    with pytest.raises(ValueError, match=r"armature: expected a number or 6 finite non-negative"):
        m.with_armature([0.1, -1.0, 0, 0, 0, 0])


def test_unsupported_joint_is_named():
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelSphericalZYX(), pin.SE3.Identity(), "neck_zyx")
    pm.appendBodyToJoint(j, pin.Inertia.Random(), pin.SE3.Identity())
    with pytest.raises(ValueError, match="joint 'neck_zyx'.*JointModelSphericalZYX.*not supported"):
        dyn.RobotModel.from_pinocchio(pm)


def test_from_urdf_missing_file(tmp_path):
    with pytest.raises(ValueError, match="urdf path: no such file"):
        dyn.RobotModel.from_urdf(tmp_path / "nope.urdf")


def test_from_urdf_floating_base():
    m = dyn.RobotModel.from_urdf(robots.example_robot_data_dir() / "ur_description/urdf/ur3_robot.urdf",
                                 floating_base=True)
    assert (m.nq, m.nv) == (13, 12) and m.has_free_flyer


def test_integrate_difference_match_pinocchio(any_model):
    rng = np.random.default_rng(3)
    for _ in range(3):
        q0 = any_model.random_configuration(rng)
        q1 = any_model.random_configuration(rng)
        dq = rng.normal(size=any_model.nv)
        qi = any_model.integrate(q0, dq)
        qr = ref.integrate(any_model, q0, dq)
        # quaternions are compared through the configuration they represent
        assert rel_err(any_model.difference(qr, qi), np.zeros(any_model.nv)) < 1e-10
        assert rel_err(any_model.difference(q0, q1), ref.difference(any_model, q0, q1)) < 1e-10
        # small steps: difference inverts integrate
        small = 1e-3 * dq
        assert rel_err(any_model.difference(q0, any_model.integrate(q0, small)), small) < 1e-12


def test_integrate_difference_batched(any_model):
    rng = np.random.default_rng(4)
    Q = np.array([any_model.random_configuration(rng) for _ in range(4)])
    D = rng.normal(size=(4, any_model.nv))
    Qi = any_model.integrate(Q, D)
    assert Qi.shape == Q.shape
    for t in range(4):
        np.testing.assert_array_equal(Qi[t], any_model.integrate(Q[t], D[t]))
    np.testing.assert_array_equal(any_model.difference(Q, Qi)[2], any_model.difference(Q[2], Qi[2]))


def test_random_configuration_is_deterministic_and_valid(any_model):
    q1 = any_model.random_configuration(7)
    q2 = any_model.random_configuration(7)
    np.testing.assert_array_equal(q1, q2)
    assert pin.isNormalized(any_model.pin_model, q1, 1e-12)


def test_paper_benchmark_models():
    c = robots.serial_chain(10)
    t = robots.binary_tree(10)
    assert c.nv == t.nv == 10
    assert list(t.arrays.parent[1:]) == [k // 2 for k in range(1, 11)]
    assert list(c.arrays.parent[1:]) == list(range(10))


def _inertia(mass, rotational):
    I = pin.Inertia(1.0, np.zeros(3), np.eye(3))  # the constructor checks; the setters do not
    I.mass, I.inertia = mass, np.asarray(rotational, dtype=float)
    return I


def _one_body(joint, inertia):
    pm = pin.Model()
    j = pm.addJoint(0, joint, pin.SE3.Identity(), "j1")
    pm.appendBodyToJoint(j, inertia, pin.SE3.Identity())
    return pm


@pytest.mark.parametrize("joint, inertia, message", [
    (pin.JointModelRX(), _inertia(-1.0, np.eye(3)),
     r"body of joint 'j1' \(index 1\): expected a non-negative mass; got -1.0"),
    (pin.JointModelRX(), _inertia(1.0, np.diag([1.0, 1.0, -0.5])),
     r"body of joint 'j1' \(index 1\): expected a positive semi-definite rotational inertia"),
    (pin.JointModelRevoluteUnaligned(np.zeros(3)), _inertia(1.0, np.eye(3)),
     r"joint 'j1' \(index 1\): expected a non-zero axis"),
    (pin.JointModelRX(), _inertia(0.0, np.zeros((3, 3))),
     r"joint 'j1': its subtree has no mass and no inertia, so the mass matrix is singular"),
])
def test_a_physically_invalid_model_is_rejected_at_load(joint, inertia, message):
    """Negative masses, non-PSD inertias, zero axes and massless subtrees gave NaN or inf at the
    first solve (example-robot-data's romeo: massless fingers); now the load names them."""
    with pytest.raises(ValueError, match=message):
        dyn.RobotModel.from_pinocchio(_one_body(joint, inertia))


def test_a_massless_link_with_a_heavy_child_is_fine():
    """A 2-DoF hip as two joints: the first body has no mass, its child has (example-robot-
    data's human model)."""
    pm = pin.Model()
    j1 = pm.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "hip_z")
    pm.appendBodyToJoint(j1, _inertia(0.0, np.zeros((3, 3))), pin.SE3.Identity())
    j2 = pm.addJoint(j1, pin.JointModelRX(), pin.SE3.Identity(), "hip_x")
    pm.appendBodyToJoint(j2, pin.Inertia(2.0, np.array([0, 0, -0.3]), np.eye(3) * 0.1),
                         pin.SE3.Identity())
    m = dyn.RobotModel.from_pinocchio(pm)
    assert np.all(np.isfinite(dyn.aba(m, np.array([0.1, 0.2]), np.zeros(2), np.zeros(2))))


_URDF = """<robot name="bad">
  <link name="base"/>
  <link name="arm">
    <inertial><origin xyz="0 0 -0.5"/><mass value="{mass}"/>
      <inertia ixx="{ixx}" iyy="{iyy}" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="{axis}"/>
    <limit lower="-3" upper="3" effort="10" velocity="10"/>
  </joint>
</robot>"""


@pytest.mark.parametrize("mass, ixx, iyy, message", [
    (-2.0, 0.1, 0.1, r"body of joint 'shoulder' \(index 1\): expected a non-negative mass"),
    (2.0, -0.3, 0.1, r"body of joint 'shoulder' \(index 1\): expected a positive "
                     r"semi-definite rotational inertia"),
])
def test_an_invalid_urdf_is_rejected_at_load(tmp_path, mass, ixx, iyy, message):
    path = tmp_path / "bad.urdf"
    path.write_text(_URDF.format(mass=mass, ixx=ixx, iyy=iyy, axis="1 0 0"))
    with pytest.raises(ValueError, match=message):
        robots.load(str(path))
    good = tmp_path / "good.urdf"
    good.write_text(_URDF.format(mass=2.0, ixx=0.1, iyy=0.1, axis="1 0 0"))
    assert robots.load(str(good)).nv == 1
