"""mim-solvers' own constrained examples, solved by its CSQP as its ``examples/`` run them.

``ur5``: ``examples/ur5.py`` of mim-solvers 0.3.0: the UR5 of example-robot-data reaching
(0.4, 0.4, 0.4) with ``tool0`` kept in the box [-1, -1, -1]..[1, 0.4, 0.4] on knots 1..T (the
terminal knot included); T = 40, dt = 0.05; costs: state regularization (weight 0.1), control
minus gravity (``ResidualModelControlGrav``, 1e-4), the translation (4 on the running knots, 40
at the terminal one); CSQP from x0 at every knot and zero controls, termination tolerance 1e-4.

It runs in mim-solvers' environment (``../shared/tools/mim-solvers-reference/setup.sh`` prints
the command that runs its Python) and imports nothing from soddp::

    $SODDP_MIM_SOLVERS_PYTHON problems/reference/mim_solvers_examples.py ur5 \
        [--tol TOL] [--max-iter N] [--repeats R] [--cost-of TRAJECTORY.npz] [--targets JSON]

It prints one JSON line: cost, iterations, converged (CSQP's own test), the largest violation
of the box (m), CSQP's last KKT norm, mim-solvers' and Crocoddyl's versions, the trajectory
(xs, us) and the wall time of a solve (``wall_s``: the best of R timed solves after an untimed
one).  ``--cost-of``: instead, Crocoddyl's total cost of the trajectory in the file (arrays xs,
us), the check that a problem of ours is the same problem.  ``--targets``: instead, one JSON
line per target of the list (the example with another target: cost, iterations, converged,
violation, kkt).
"""

import argparse
import json
import time

import numpy as np

BOX_LOWER, BOX_UPPER = np.array([-1.0, -1.0, -1.0]), np.array([1.0, 0.4, 0.4])
TARGET = np.array([0.4, 0.4, 0.4])


def ur5_problem(target=TARGET):
    """(Crocoddyl's shooting problem, x0, robot model, tool0's frame id), as ``ur5.py``."""
    import crocoddyl
    import example_robot_data

    robot = example_robot_data.load("ur5")
    model = robot.model
    nv = model.nv
    x0 = np.zeros(model.nq + nv)
    state = crocoddyl.StateMultibody(model)
    actuation = crocoddyl.ActuationModelFull(state)
    u_cost = crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelControlGrav(state))
    x_cost = crocoddyl.CostModelResidual(state, crocoddyl.ResidualModelState(state, x0))
    tool = model.getFrameId("tool0")
    reach = crocoddyl.CostModelResidual(
        state, crocoddyl.ResidualModelFrameTranslation(state, tool, np.asarray(target)))
    box = crocoddyl.ConstraintModelResidual(
        state, crocoddyl.ResidualModelFrameTranslation(state, tool, np.zeros(3)), BOX_LOWER,
        BOX_UPPER)
    T, dt = 40, 5e-2
    models = []
    for t in range(T + 1):
        costs = crocoddyl.CostModelSum(state)
        costs.addCost("stateReg", x_cost, 1e-1)
        costs.addCost("ctrlRegGrav", u_cost, 1e-4)
        costs.addCost("translation", reach, 4 if t != T else 40)
        constraints = crocoddyl.ConstraintModelManager(state, nv)
        if t != 0:
            constraints.addConstraint("ee_bound", box)
        dam = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation, costs,
                                                                 constraints)
        models.append(crocoddyl.IntegratedActionModelEuler(dam, dt))
    return crocoddyl.ShootingProblem(x0, models[:-1], models[-1]), x0, model, tool


def box_violation(model, tool, xs):
    """The largest violation of the box by tool0 on knots 1..T (m)."""
    import pinocchio

    data = model.createData()
    worst = 0.0
    for x in xs[1:]:
        pinocchio.framesForwardKinematics(model, data, x[:model.nq])
        p = data.oMf[tool].translation
        worst = max(worst, float(np.max(np.maximum(p - BOX_UPPER, BOX_LOWER - p))))
    return max(worst, 0.0)


def main():
    import crocoddyl
    import mim_solvers

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("example", choices=["ur5"])
    ap.add_argument("--tol", type=float, default=1e-4, help="CSQP's termination_tolerance")
    ap.add_argument("--max-iter", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--cost-of", default=None)
    ap.add_argument("--targets", default=None)
    a = ap.parse_args()
    if a.targets:
        for target in json.loads(a.targets):
            problem, x0, model, tool = ur5_problem(target)
            solver = mim_solvers.SolverCSQP(problem)
            solver.termination_tolerance = a.tol
            converged = solver.solve([x0.copy() for _ in range(problem.T + 1)],
                                     [np.zeros(model.nv) for _ in range(problem.T)], a.max_iter)
            print(json.dumps(dict(cost=float(solver.cost), iterations=int(solver.iter),
                                  converged=bool(converged), kkt=float(solver.KKT),
                                  violation=box_violation(model, tool, np.array(solver.xs)))))
        return
    problem, x0, model, tool = ur5_problem()
    T = problem.T
    if a.cost_of:
        f = np.load(a.cost_of)
        xs, us = [np.array(x) for x in f["xs"]], [np.array(u) for u in f["us"]]
        print(json.dumps(dict(cost=float(problem.calc(xs, us)))))
        return
    xs0 = [x0.copy() for _ in range(T + 1)]
    us0 = [np.zeros(model.nv) for _ in range(T)]

    def solve():
        solver = mim_solvers.SolverCSQP(problem)
        solver.termination_tolerance = a.tol
        t0 = time.perf_counter()
        converged = solver.solve(xs0, us0, a.max_iter)
        return solver, converged, time.perf_counter() - t0

    solve()  # untimed
    best, out = np.inf, None
    for _ in range(max(1, a.repeats)):
        solver, converged, wall = solve()
        if wall < best:
            best, out = wall, (solver, converged)
    solver, converged = out
    xs, us = np.array(solver.xs), np.array(solver.us)
    print(json.dumps(dict(
        example=a.example, cost=float(solver.cost), iterations=int(solver.iter),
        converged=bool(converged), violation=box_violation(model, tool, xs),
        kkt=float(solver.KKT), tol=a.tol, wall_s=best, T=T,
        mim_solvers=getattr(mim_solvers, "__version__", "?"), crocoddyl=crocoddyl.__version__,
        xs=xs.tolist(), us=us.tolist())))


if __name__ == "__main__":
    main()
