"""Crocoddyl's own gait examples, run as its ``examples/quadrupedal_gaits_fwddyn.py`` and
``examples/bipedal_gaits_fwddyn.py`` run them: the robot from example-robot-data, its SRDF's
reference configuration, ``crocoddyl.utils``' gait builders, FDDP from x0 at every knot with
quasi-static controls.  ``ROBOT`` is ``anymal`` or ``hyq`` (a quadruped) or ``talos_legs``.
It runs in Crocoddyl's environment and imports nothing from soddp::

    $SODDP_CROCODDYL_PYTHON problems/reference/crocoddyl_examples.py ROBOT GAIT 'PARAMETERS' \
        [TH_STOP [REPEATS]]

``PARAMETERS``: the JSON of the gait's parameters by our names (``problems.gaits``'
``CROCODDYL_EXAMPLES``).  With ``--against SPEC.json`` (a problem of ours written by
``crocoddyl_solvers.spec``, built by ``crocoddyl_problem.build``) it prints instead, as one
JSON line, the largest difference between the two problems' derivatives at the spec's start,
relative to their size, per quantity (Lx, Lu, Lxx, Luu, Lxu, Fx, Fu).  Otherwise it prints one
JSON line: cost, iterations, converged, T, x0, Crocoddyl's version, the cost
after every iteration (``costs``, the start's first) and the wall time of the solve
(``wall_s``: the best of REPEATS timed solves after an untimed one, default 1; th_stop
TH_STOP, default 1e-10; at most 500 iterations; the costs are recorded by another, untimed
solve).
"""

import json
import sys
import time

import numpy as np

FEET = {"anymal": ("LF_FOOT", "RF_FOOT", "LH_FOOT", "RH_FOOT"),
        "hyq": ("lf_foot", "rf_foot", "lh_foot", "rh_foot"),
        "talos_legs": ("right_sole_link", "left_sole_link")}


def problem(robot, gait, p):
    """(Crocoddyl's shooting problem, x0) of the example."""
    import example_robot_data
    from crocoddyl.utils.biped import SimpleBipedGaitProblem
    from crocoddyl.utils.quadruped import SimpleQuadrupedalGaitProblem

    r = example_robot_data.load(robot)
    if robot == "talos_legs":
        q0 = r.model.referenceConfigurations["half_sitting"].copy()
        builder = SimpleBipedGaitProblem(r.model, *FEET[robot])
    else:
        q0 = r.model.referenceConfigurations["standing"].copy()
        builder = SimpleQuadrupedalGaitProblem(r.model, *FEET[robot])
    x0 = np.concatenate([q0, np.zeros(r.model.nv)])
    if gait == "jumping":
        return builder.createJumpingProblem(x0, p["jump_height"], list(p["jump_length"]),
                                            p["dt"], p["ground_knots"], p["flying_knots"]), x0
    make = getattr(builder, f"create{gait.capitalize()}Problem")
    return make(x0, p["step_length"], p["step_height"], p["dt"], p["step_knots"],
                p["support_knots"]), x0


def against(robot, gait, params, spec_path):
    """{quantity: max |ours rebuilt - the example| / max(1, max |the example|)} at the spec's
    start, over the knots."""
    import os

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import crocoddyl_problem

    with open(spec_path) as f:
        spec = json.load(f)
    rebuilt = crocoddyl_problem.build(spec)
    example = problem(robot, gait, params)[0]
    xs = [np.array(x) for x in spec["xs"]]
    us = [np.array(u)[:m.nu] for u, m in zip(spec["us"], rebuilt.runningModels)]
    rebuilt.calc(xs, us)
    example.calc(xs, us)
    rebuilt.calcDiff(xs, us)
    example.calcDiff(xs, us)
    out = {}
    for name in ("Lx", "Lu", "Lxx", "Luu", "Lxu", "Fx", "Fu"):
        worst = 0.0
        for a, b in zip(rebuilt.runningDatas, example.runningDatas):
            x, y = np.asarray(getattr(a, name)), np.asarray(getattr(b, name))
            if y.size:
                worst = max(worst, float(np.abs(x - y).max() / max(1.0, np.abs(y).max())))
        out[name] = worst
    return out


def main(argv):
    import crocoddyl

    if "--against" in argv:
        k = argv.index("--against")
        robot, gait, params = argv[1], argv[2], json.loads(argv[3])
        print(json.dumps(against(robot, gait, params, argv[k + 1])))
        return
    robot, gait, params = argv[1], argv[2], json.loads(argv[3])
    th_stop = float(argv[4]) if len(argv) > 4 else 1e-10
    repeats = int(argv[5]) if len(argv) > 5 else 1
    shooting, x0 = problem(robot, gait, params)
    xs = [x0] * (shooting.T + 1)
    us = shooting.quasiStatic([x0] * shooting.T)
    wall = float("inf")
    for k in range(repeats + (repeats > 1)):
        solver = crocoddyl.SolverFDDP(shooting)
        solver.th_stop = th_stop
        t = time.perf_counter()
        converged = solver.solve(xs, us, 500, False)
        if k or repeats == 1:
            wall = min(wall, time.perf_counter() - t)
    logger = crocoddyl.CallbackLogger()
    again = crocoddyl.SolverFDDP(problem(robot, gait, params)[0])
    again.th_stop = th_stop
    again.setCallbacks([logger])
    again.solve(xs, us, 500, False)
    print(json.dumps(dict(cost=solver.cost, iterations=solver.iter, converged=bool(converged),
                          T=shooting.T, x0=x0.tolist(), wall_s=wall, version=crocoddyl.__version__,
                          costs=[float(c) for c in logger.costs])))


if __name__ == "__main__":
    main(sys.argv)
