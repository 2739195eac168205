"""A solved trajectory as a self-contained HTML animation: :func:`animate` (and
``soddp solve PROBLEM --animate``).

The robot's visual meshes (example-robot-data's, from its URDF) are loaded into a meshcat scene
by Pinocchio's ``MeshcatVisualizer``; every knot becomes one frame of a meshcat animation at the
problem's time step, and meshcat's static HTML export writes the scene, the meshes and the
viewer's JavaScript into one file that plays in any browser with no server.  A local meshcat
server runs only while the file is written.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path

import numpy as np
import pinocchio as pin

from dynamics import robots


def _visual_model(model):
    """Pinocchio's visual GeometryModel of a robot: the meshes of its URDF (found through
    example-robot-data's ``package://`` paths), or, for a robot built without one, a ball at
    each joint and at each body's centre of mass."""
    if model.urdf_path is None:
        import coal

        pm, geoms = model.pin_model, pin.GeometryModel()
        for j in range(1, pm.njoints):
            for kind, at in (("joint", np.zeros(3)), ("body", pm.inertias[j].lever)):
                geoms.addGeometryObject(pin.GeometryObject(
                    f"{pm.names[j]}_{kind}", j, pin.SE3(np.eye(3), at),
                    coal.Sphere(0.04 if kind == "joint" else 0.08)))
        return geoms
    share = robots.example_robot_data_dir().parent.parent
    dirs = [str(share), str(Path(model.urdf_path).parent)]
    cut = model.first_joints
    if cut is None:
        return pin.buildGeomFromUrdf(model.pin_model, str(model.urdf_path),
                                     pin.GeometryType.VISUAL, package_dirs=dirs)
    # a robot cut above a joint (robots.first_joints): the whole robot's meshes on the joints
    # kept, which have the same indices
    full = pin.buildModelFromUrdf(str(model.urdf_path), pin.JointModelFreeFlyer())
    geoms = pin.GeometryModel()
    for g in pin.buildGeomFromUrdf(full, str(model.urdf_path), pin.GeometryType.VISUAL,
                                   package_dirs=dirs).geometryObjects:
        if g.parentJoint < cut:
            g.parentFrame = model.pin_model.getFrameId(full.frames[g.parentFrame].name)
            geoms.addGeometryObject(g)
    return geoms


def animate(problem, trajectory, path, repetitions: int = 0) -> Path:
    """Write ``path`` (``.html`` appended if missing): the robot of ``problem`` moving along
    ``trajectory`` (a :class:`~ddp.solution.Solution` or its states xs (knots, nx)), one frame
    per knot at the problem's time step (an impact knot, which takes no time, shows for one
    frame too), looping (``repetitions`` = 0) or played that many times.  Returns the path."""
    with warnings.catch_warnings():  # meshcat 0.3 imports pyzmq's deprecated ioloop
        warnings.simplefilter("ignore", DeprecationWarning)
        import meshcat
        import meshcat.animation
        import meshcat.geometry
        from pinocchio.visualize import MeshcatVisualizer

    model = problem.dynamics.model
    if model is None:
        raise ValueError("problem: its dynamics carry no robot model to animate")
    xs = np.asarray(getattr(trajectory, "xs", trajectory), dtype=float)
    if xs.ndim != 2 or xs.shape[1] != problem.nx:
        raise ValueError(f"xs: expected shape (knots, {problem.nx}); got {xs.shape}")
    pm = model.pin_model
    with contextlib.redirect_stdout(io.StringIO()):  # its server's URL: not for this use
        viewer = meshcat.Visualizer()
    try:
        viz = MeshcatVisualizer(pm, pin.GeometryModel(), _visual_model(model))
        viz.initViewer(viewer=viewer)
        viz.loadViewerModel(rootNodeName=model.name)
        if model.has_free_flyer:  # the ground, at z = 0
            viewer["ground"].set_object(meshcat.geometry.Box([4.0, 4.0, 0.01]),
                                        meshcat.geometry.MeshLambertMaterial(color=0x9a9a9a))
            viewer["ground"].set_transform(
                pin.SE3(np.eye(3), np.array([0.0, 0.0, -0.005])).homogeneous)
            viewer["/Grid"].set_property("visible", False)
            viewer["/Axes"].set_property("visible", False)
        # a camera beside the robot, looking at it from its right front and above
        viewer["/Cameras/default"].set_transform(
            pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.3])).homogeneous)
        viewer["/Cameras/default/rotated/<object>"].set_property("position", [1.5, 1.2, 2.0])
        anim = meshcat.animation.Animation(default_framerate=max(1, round(1.0 / problem.dt)))
        for k, x in enumerate(xs):
            with anim.at_frame(viewer, k) as frame:
                viz.viewer = frame  # display() writes each mesh's placement into the frame
                viz.display(x[:problem.nq])
        viz.viewer = viewer
        viz.display(xs[0, :problem.nq])
        viewer.set_animation(anim, play=True, repetitions=repetitions)
        html = viewer.static_html()
    finally:  # stop its server (meshcat 0.3's Visualizer.close() does not)
        server = getattr(viewer.window, "server_proc", None)
        if server is not None:
            server.kill()
            server.wait()
    path = Path(path)
    if path.suffix != ".html":
        path = path.with_name(path.name + ".html")
    path.write_text(html)
    return path
