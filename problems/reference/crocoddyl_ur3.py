"""The UR3 reaching problem of :func:`problems.examples.ur3`, written in Crocoddyl.

Crocoddyl needs its own Pinocchio build, so this script runs in a separate environment and
imports nothing from soddp::

    python3 -m venv /tmp/croc && /tmp/croc/bin/pip install crocoddyl
    /tmp/croc/bin/python problems/reference/crocoddyl_ur3.py PATH/TO/ur3_robot.urdf [--json out.json]

It prints (and optionally writes as JSON) iterations, final cost and wall time of Crocoddyl's FDDP
and DDP (a Gauss-Newton DDP) on the same problem: same URDF, x0, target, weights, dt, horizon.
"""

import argparse
import json
import time

import numpy as np


def build(urdf):
    import crocoddyl
    import pinocchio as pin

    model = pin.buildModelFromUrdf(urdf)
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    q0 = np.array([0.0, -np.pi / 2, np.pi / 2, -np.pi / 2, -np.pi / 2, 0.0])
    x0 = np.concatenate([q0, np.zeros(6)])
    data = model.createData()
    fid = model.getFrameId("tool0")
    pin.framesForwardKinematics(model, data, q0)
    target = pin.SE3(data.oMf[fid].rotation, np.array([0.2, 0.25, 0.25]))
    nu = actuation.nu

    def costs(w_place, w_state, w_control):
        c = crocoddyl.CostModelSum(state, nu)
        c.addCost("place", crocoddyl.CostModelResidual(
            state, crocoddyl.ResidualModelFramePlacement(state, fid, target, nu)), w_place)
        c.addCost("xreg", crocoddyl.CostModelResidual(
            state, crocoddyl.ResidualModelState(state, x0, nu)), w_state)
        if w_control:
            c.addCost("ureg", crocoddyl.CostModelResidual(
                state, crocoddyl.ResidualModelControl(state, nu)), w_control)
        return c

    dt, T = 0.01, 100
    run = crocoddyl.IntegratedActionModelEuler(
        crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs(1.0, 1e-1, 1e-3)), dt)
    term = crocoddyl.IntegratedActionModelEuler(
        crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs(1e3, 1e-1, 0.0)), 0.0)
    return crocoddyl.ShootingProblem(x0, [run] * T, term), x0, T


def main():
    import crocoddyl

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("urdf")
    p.add_argument("--json")
    p.add_argument("--max-iter", type=int, default=200)
    args = p.parse_args()
    out = {}
    for name, cls in (("Crocoddyl FDDP", crocoddyl.SolverFDDP), ("Crocoddyl DDP", crocoddyl.SolverDDP)):
        problem, x0, T = build(args.urdf)
        solver = cls(problem)
        solver.th_stop = 1e-12
        xs = [x0] * (T + 1)
        us = [np.zeros(6)] * T
        t0 = time.perf_counter()
        converged = solver.solve(xs, us, args.max_iter)
        wall = time.perf_counter() - t0
        out[name] = dict(iterations=solver.iter, cost=solver.cost, converged=bool(converged),
                         total_s=wall, version=crocoddyl.__version__)
        print(f"{name}: converged={converged} iterations={solver.iter} cost={solver.cost:.9g} "
              f"time={wall:.3f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
