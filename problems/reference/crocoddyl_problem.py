"""Solve one of our problems with Crocoddyl, from a JSON description written by
:func:`problems.reference.crocoddyl_solvers.spec` (same URDF, root joint, rotor inertias,
gravity, x0, horizon, dt, actuation, costs with their weights and references, initial guess).

Crocoddyl needs its own Pinocchio build, so this script runs in a separate environment and
imports nothing from soddp::

    $SODDP_CROCODDYL_PYTHON problems/reference/crocoddyl_problem.py SPEC.json OUT.json
    $SODDP_CROCODDYL_PYTHON problems/reference/crocoddyl_problem.py --serve

With ``--serve`` it solves one request per line of stdin (``SPEC.json<TAB>OUT.json``) and answers
each with one line on stdout, ``ok`` or ``error: <message>``, until stdin closes: a study's
worker keeps one such process instead of starting Python and importing Crocoddyl per task.

For each solver (FDDP, and DDP, which uses Gauss-Newton Hessians) it writes iterations, final
cost, convergence, the cost after every iteration and the wall time per solve: the minimum over
``repeats`` solves from the same start, after one untimed solve that records the costs; with
``repeats`` 0 (a study's task), the time of that recorded solve itself, after an untimed
one-iteration solve (as ours: the costs are recorded by a Python callback, a few microseconds
per iteration).
"""

import json
import os
import sys
import time

import numpy as np


def build(spec):
    import crocoddyl
    import pinocchio as pin

    if spec["floating_base"]:
        model = pin.buildModelFromUrdf(spec["urdf"], pin.JointModelFreeFlyer())
    else:
        model = pin.buildModelFromUrdf(spec["urdf"])
    if spec.get("first_joints"):  # the robot cut above a joint (example-robot-data's talos_legs)
        model = _cut(model, spec["first_joints"])
    if "armature" in spec:  # the rotor inertias (example-robot-data reads them from the SRDF)
        model.armature = np.array(spec["armature"], dtype=float)
    if not spec["gravity"]:
        model.gravity.setZero()
    state = crocoddyl.StateMultibody(model)
    if spec["actuation"] == "floating":
        actuation = crocoddyl.ActuationModelFloatingBase(state)
    elif spec["actuation"].startswith("double_pendulum_"):  # one joint of the double pendulum
        from crocoddyl.utils.pendulum import ActuationModelDoublePendulum

        actuation = ActuationModelDoublePendulum(state, int(spec["actuation"][-1]))
    else:
        actuation = crocoddyl.ActuationModelFull(state)
    nu = actuation.nu

    def residual(c, nu):
        kind = c["kind"]
        if kind == "state":
            return crocoddyl.ResidualModelState(state, np.array(c["x_ref"]), nu)
        if kind == "control":
            return crocoddyl.ResidualModelControl(state, np.array(c["u_ref"]))
        if kind == "control_grav":
            return crocoddyl.ResidualModelControlGrav(state, nu)
        if kind == "com":
            return crocoddyl.ResidualModelCoMPosition(state, np.array(c["position"]), nu)
        fid = model.getFrameId(c["frame"])
        if kind in ("friction_cone", "wrench_cone"):
            R, A = np.array(c["rotation"]), np.array(c["A"])
            if kind == "wrench_cone":
                cone = crocoddyl.WrenchCone(R, c["mu"], np.array(c["foot"]), len(A) - 13,
                                            c["inner"])
            else:
                cone = crocoddyl.FrictionCone(R, c["mu"], len(A) - 1, c["inner"])
            if not np.allclose(cone.A, A, atol=1e-12):
                raise ValueError(f"{kind}: our rows differ from Crocoddyl's")
            if kind == "wrench_cone":
                return crocoddyl.ResidualModelContactWrenchCone(state, fid, cone, nu, True)
            return crocoddyl.ResidualModelContactFrictionCone(state, fid, cone, nu, True)
        if kind == "contact_force":
            f = np.r_[c["force"], np.zeros(6)][:6]
            return crocoddyl.ResidualModelContactForce(state, fid, pin.Force(f[:3], f[3:]),
                                                       len(c["force"]), nu, True)
        if kind == "placement":
            M = pin.SE3(np.array(c["rotation"]), np.array(c["translation"]))
            return crocoddyl.ResidualModelFramePlacement(state, fid, M, nu)
        if kind == "translation":
            return crocoddyl.ResidualModelFrameTranslation(state, fid, np.array(c["translation"]),
                                                           nu)
        if kind == "rotation":
            return crocoddyl.ResidualModelFrameRotation(state, fid, np.array(c["rotation"]), nu)
        if kind == "velocity":
            ref = pin.LOCAL_WORLD_ALIGNED if c["world_aligned"] else pin.LOCAL
            return crocoddyl.ResidualModelFrameVelocity(state, fid, pin.Motion(
                np.array(c["velocity"])), ref, nu)
        raise ValueError(f"cost kind {kind!r}")

    def costs(items, nu=nu):
        s = crocoddyl.CostModelSum(state, nu)
        for k, c in enumerate(items):
            w = np.array(c["weights"])
            weight = 1.0
            if c.get("bounds") is not None:
                bounds = crocoddyl.ActivationBounds(*(np.array(b) for b in c["bounds"]))
                if np.all(w == w[0]):  # as Crocoddyl's examples write a barrier: cost weight w
                    act, weight = crocoddyl.ActivationModelQuadraticBarrier(bounds), float(w[0])
                else:  # its weights multiply the residual, not r^2 (but its Hessian takes
                    # them once, not squared: Crocoddyl 3.2.1's calcDiff; values are right)
                    act = crocoddyl.ActivationModelWeightedQuadraticBarrier(bounds, np.sqrt(w))
            else:
                act = crocoddyl.ActivationModelWeightedQuad(w)
            if c["kind"] == "double_pendulum":  # Crocoddyl's own cost of its pendulum example
                from crocoddyl.utils.pendulum import CostModelDoublePendulum

                cost = CostModelDoublePendulum(state, act, nu)
            else:
                cost = crocoddyl.CostModelResidual(state, act, residual(c, nu))
            s.addCost(f"{c['kind']}{k}", cost, weight)
        return s

    def knot_model(knot, cost_items, dt):
        """The action model of one knot: free flight, contacts, or an impact."""
        feet = [(model.getFrameId(c["frame"]), c) for c in knot["contacts"]]
        if knot["impact"]:
            impulses = crocoddyl.ImpulseModelMultiple(state)
            for fid, c in feet:
                impulse = (crocoddyl.ImpulseModel6D if c.get("size", 3) == 6
                           else crocoddyl.ImpulseModel3D)
                impulses.addImpulse(c["frame"], impulse(state, fid, pin.LOCAL_WORLD_ALIGNED))
            m = crocoddyl.ActionModelImpulseFwdDynamics(state, impulses, costs(cost_items, 0),
                                                        knot["restitution"], knot["damping"],
                                                        True)
            return m
        if not feet and (not phased or spec.get("free_knots")):
            dm = crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation,
                                                                  costs(cost_items))
        else:  # a flight phase of a gait has no contacts, as in Crocoddyl's gait examples: the
            # contact dynamics computes every kinematic term (the free one leaves the centre of
            # mass of the CoM cost stale)
            contacts = crocoddyl.ContactModelMultiple(state, nu)
            for fid, c in feet:
                if c.get("size", 3) == 6:
                    H = np.array(c["reference"])
                    contact = crocoddyl.ContactModel6D(
                        state, fid, pin.SE3(H[:3, :3], H[:3, 3]), pin.LOCAL_WORLD_ALIGNED, nu,
                        np.array(c["gains"]))
                else:
                    contact = crocoddyl.ContactModel3D(
                        state, fid, np.array(c["reference"]), pin.LOCAL_WORLD_ALIGNED, nu,
                        np.array(c["gains"]))
                contacts.addContact(c["frame"], contact)
            dm = crocoddyl.DifferentialActionModelContactFwdDynamics(
                state, actuation, contacts, costs(cost_items), knot["damping"], True)
        return crocoddyl.IntegratedActionModelEuler(dm, dt)

    dt, T = spec["dt"], spec["T"]
    phased = "knots" in spec
    if phased:  # a problem made of phases: one action model per knot
        made = {}
        running = []
        for t, knot in enumerate(spec["knots"]):
            key = json.dumps(knot, sort_keys=True)  # knots alike share one model
            if spec.get("distinct_knots"):  # a model of its own per knot (references set per knot)
                key += str(t)
            if key not in made:
                made[key] = knot_model(knot, spec["costs"][knot["cost"]], dt)
            running.append(made[key])
    else:
        running = [knot_model(dict(contacts=[], impact=False, damping=0.0), spec["running"],
                              dt)] * T
    term = (knot_model(dict(contacts=[], impact=False, damping=0.0), spec["terminal"], 0.0)
            if phased else crocoddyl.IntegratedActionModelEuler(
                crocoddyl.DifferentialActionModelFreeFwdDynamics(state, actuation,
                                                                 costs(spec["terminal"])), 0.0))
    return crocoddyl.ShootingProblem(np.array(spec["x0"]), running, term)


def _cut(full, n):
    """The joints of ``full`` before index n, their bodies, limits and frames (as
    example-robot-data builds ``talos_legs``; the rotor inertias come with the spec)."""
    import pinocchio as pin

    model = pin.Model()
    for j in range(1, n):
        joint = model.addJoint(full.parents[j], full.joints[j], full.jointPlacements[j],
                               full.names[j])
        model.appendBodyToJoint(joint, full.inertias[j], pin.SE3.Identity())
    nq, nv = model.nq, model.nv
    model.lowerPositionLimit = full.lowerPositionLimit[:nq].copy()
    model.upperPositionLimit = full.upperPositionLimit[:nq].copy()
    model.velocityLimit = full.velocityLimit[:nv].copy()
    model.effortLimit = full.effortLimit[:nv].copy()
    for f in full.frames:
        if f.parentJoint < n and not model.existFrame(f.name):
            model.addFrame(f)
    return model


def _shifted(solver):
    """(xs, us): the solver's solution one knot on, its last state and control repeated (the
    warm start of a receding-horizon tick, as Crocoddyl's users write it)."""
    return (list(solver.xs[1:]) + [solver.xs[-1]], list(solver.us[1:]) + [solver.us[-1]])


def mpc(spec, log=print):
    """A receding-horizon loop as Crocoddyl's users write it, for the spec's ``mpc``
    (``ticks``, ``iterations`` per tick): FDDP solved to convergence from the spec's start
    (untimed), then each tick sets x0 to the last solution's second state, shifts the solution
    by one knot (the last repeated) and solves with ``maxiter`` = iterations from that warm
    start.  {"Crocoddyl FDDP": tick times in seconds (the whole tick), version}."""
    import crocoddyl

    problem = build(spec)
    solver = crocoddyl.SolverFDDP(problem)
    solver.th_stop = 1e-12
    solver.solve([np.array(x) for x in spec["xs"]], [np.array(u) for u in spec["us"]], 200,
                 False)
    ticks, iterations = spec["mpc"]["ticks"], spec["mpc"]["iterations"]
    times = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        problem.x0 = solver.xs[1].copy()
        solver.solve(*_shifted(solver), iterations, False)
        times.append(time.perf_counter() - t0)
    log(f"Crocoddyl FDDP MPC: {iterations} iteration(s) per tick, median "
        f"{1e3 * np.median(times):.3f} ms, best {1e3 * min(times):.3f} ms")
    return {"Crocoddyl FDDP": dict(tick_s=times, cost=solver.cost,
                                   version=crocoddyl.__version__)}


def closed_loop(spec, log=print):
    """Crocoddyl's FDDP driving a MuJoCo plant, as ``problems/mpc_scenarios.py`` drives ours:
    the spec's ``closed_loop`` holds the plant's MJCF, the target's circle (centre, radius,
    period), the tick, the seconds, the iterations per tick and the push (body, force along y,
    duration).  FDDP solves from the spec's start (50 iterations, untimed), then each tick: x0
    the measured state, each knot's translation reference where the target will be at that
    knot's time, the last solution shifted one knot, ``solve(xs, us, iterations, False)``; and
    between ticks its feedback policy u = us_0 - K_0 (x (-) xs_0) at MuJoCo's rate.  Returns
    {"Crocoddyl FDDP": times (s), tool0 and target positions per tick}."""
    import crocoddyl
    import mujoco
    import pinocchio as pin

    c = spec["closed_loop"]
    problem = build(dict(spec, distinct_knots=True, free_knots=True))
    mj = mujoco.MjModel.from_xml_string(c["mjcf"])
    data = mujoco.MjData(mj)
    nq = mj.nq
    x0 = np.array(spec["x0"])
    data.qpos[:], data.qvel[:] = x0[:nq], x0[nq:]
    mujoco.mj_forward(mj, data)
    solver = crocoddyl.SolverFDDP(problem)
    solver.solve([np.array(x) for x in spec["xs"]], [np.array(u) for u in spec["us"]], 50, False)
    model = problem.runningModels[0].state.pinocchio
    pdata, frame = model.createData(), model.getFrameId(c["frame"])
    center = np.array(c["center"])
    state = problem.runningModels[0].state

    def target(t):
        a = 2 * np.pi * t / c["period"]
        return center + c["radius"] * np.array([0.0, np.cos(a) - 1.0, np.sin(a)])

    def references(t):
        for k, m in enumerate(problem.runningModels):
            m.differential.costs.costs[c["cost"]].cost.residual.reference = target(
                t + k * c["tick"])
        problem.terminalModel.differential.costs.costs[c["cost"]].cost.residual.reference = \
            target(t + len(problem.runningModels) * c["tick"])

    steps = int(round(c["tick"] / mj.opt.timestep))
    n_ticks = int(round(c["seconds"] / c["tick"]))
    push_at, push_steps = n_ticks // 2, int(round(c["push_duration"] / mj.opt.timestep))
    body = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, c["push_body"])
    ticks, tool, targets = [], [], []
    for k in range(n_ticks):
        t = k * c["tick"]
        x = np.concatenate([data.qpos, data.qvel])
        references(t)
        t0 = time.perf_counter()
        problem.x0 = x
        solver.solve(*_shifted(solver), c["iterations"], False)
        ticks.append(time.perf_counter() - t0)
        pin.framesForwardKinematics(model, pdata, x[:nq])
        tool.append(pdata.oMf[frame].translation.tolist())
        targets.append(target(t).tolist())
        _policy_steps(mj, data, solver, state, k, steps, (push_at, push_steps, body, c["push"]),
                      False)
    log(f"Crocoddyl FDDP closed loop: median tick {1e3 * np.median(ticks):.3f} ms")
    return {"Crocoddyl FDDP": dict(tick_s=ticks, tool=tool, target=targets,
                                   version=crocoddyl.__version__)}


def _policy_steps(mj, data, solver, state, k, steps, push, free):
    """MuJoCo's ``steps`` steps after tick k under the solver's feedback policy
    u = us_0 - K_0 (x (-) xs_0); ``push``: (its tick, its length in steps, the body, the force
    along y), applied from that tick's first step; ``free``: a free-flyer root."""
    import mujoco

    at, length, body, force = push
    u0, K0, xs0 = np.array(solver.us[0]), np.array(solver.K[0]), np.array(solver.xs[0])
    for j in range(steps):
        if k == at and j == 0:
            data.xfrc_applied[body] = [0.0, force, 0.0, 0.0, 0.0, 0.0]
        if k * steps + j == at * steps + length:
            data.xfrc_applied[body] = 0.0
        xj = _pinocchio_state(data.qpos, data.qvel, free)
        data.ctrl[:] = u0 - K0 @ state.diff(xs0, xj)
        mujoco.mj_step(mj, data)


def _mujoco_state(x, nq, free):
    """MuJoCo's (qpos, qvel) of a state x in Pinocchio's convention (a free flyer's quaternion
    w first, its linear velocity in the world's axes)."""
    import pinocchio as pin

    q, v = np.array(x[:nq], dtype=float), np.array(x[nq:], dtype=float)
    if free:
        R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
        q[3:7] = [q[6], *q[3:6]]
        v[:3] = R @ v[:3]
    return q, v


def _pinocchio_state(qpos, qvel, free):
    """The state in Pinocchio's convention of MuJoCo's (qpos, qvel)."""
    import pinocchio as pin

    q, v = np.array(qpos), np.array(qvel)
    if free:
        q[3:7] = [*q[4:7], q[3]]
        R = pin.Quaternion(q[6], *q[3:6]).normalized().toRotationMatrix()
        v[:3] = R.T @ v[:3]
    return np.concatenate([q, v])


def gait_closed_loop(spec, log=print):
    """Crocoddyl's FDDP driving a floating-base MuJoCo plant through a cyclic gait, as
    ``problems/mpc_scenarios.py`` drives ours (``solo12-trot-mpc``): the spec's
    ``closed_loop`` holds the plant's MJCF, the stride of a cycle, the standing torques and PD
    gains of the hold before the run, the tick, the seconds, the iterations per tick, the
    push (body, force along y, duration) and the fall's height and tilt.  FDDP solves from the
    spec's start (100 iterations, untimed); each tick: x0 the measured state, the problem's
    first running model moved to the end (``circularAppend``; past the impulse models, which
    take no time), the wrapped models' translation and CoM references moved on a stride, the
    last solution shifted as many knots with the wrapped knots' taken from a cycle earlier (the
    base moved on), ``solve(xs, us, iterations, False)``; between ticks its feedback policy
    u = us_0 - K_0 (x (-) xs_0).  Returns {"Crocoddyl FDDP": times (s), base positions per
    tick, the fall's time or None}."""
    import crocoddyl
    import mujoco

    c = spec["closed_loop"]
    problem = build(dict(spec, distinct_knots=True))
    mj = mujoco.MjModel.from_xml_string(c["mjcf"])
    data = mujoco.MjData(mj)
    nq, free = mj.nq, spec["floating_base"]
    state = problem.runningModels[0].state
    x0 = np.array(spec["x0"])
    data.qpos[:], data.qvel[:] = _mujoco_state(x0, nq, free)
    mujoco.mj_forward(mj, data)
    tau, (kp, kd) = np.array(c["hold_tau"]), c["hold_gains"]
    na = mj.nu
    for _ in range(int(round(c["hold_seconds"] / mj.opt.timestep))):
        data.ctrl[:] = tau + kp * (x0[nq - na:nq] - data.qpos[nq - na:nq]) - kd * data.qvel[-na:]
        mujoco.mj_step(mj, data)
    solver = crocoddyl.SolverFDDP(problem)
    solver.solve([np.array(x) for x in spec["xs"]],  # an impulse model has no control
                 [np.array(u)[:m.nu] for u, m in zip(spec["us"], problem.runningModels)], 100,
                 False)
    stride = np.array(c["stride"])

    def move_on():
        n = 0
        while n == 0 or isinstance(problem.runningModels[0],
                                   crocoddyl.ActionModelImpulseFwdDynamics):
            m, d = problem.runningModels[0], problem.runningDatas[0]
            problem.circularAppend(m, d)
            costs = m.differential.costs if hasattr(m, "differential") else m.costs
            for name, item in costs.costs.todict().items():
                if name.startswith(("translation", "com")):
                    item.cost.residual.reference = item.cost.residual.reference + stride
            n += 1
        return n

    steps = int(round(c["tick"] / mj.opt.timestep))
    n_ticks = int(round(c["seconds"] / c["tick"]))
    push_at, push_steps = n_ticks // 2, int(round(c["push_duration"] / mj.opt.timestep))
    body = mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_BODY, c["push_body"])
    ticks, base, fell = [], [], None
    for k in range(n_ticks):
        x = _pinocchio_state(data.qpos, data.qvel, free)
        R = pin_rotation(x)
        if (x[2] < c["fall_height"] or R[2, 2] < c["fall_tilt"]
                or data.warning[mujoco.mjtWarning.mjWARN_BADQACC].number > 0):
            fell = k * c["tick"]
            break
        base.append(x[:3].tolist())
        t0 = time.perf_counter()
        if k > 0:
            n = move_on()
            xs, us = list(solver.xs), list(solver.us)
            tail = [np.array(xk) for xk in xs[1:n + 1]]
            for xk in tail:
                xk[:3] += xs[-1][:3] - xs[0][:3]
            xs, us = xs[n:] + tail, us[n:] + us[:n]
        else:
            xs, us = list(solver.xs), list(solver.us)
        problem.x0 = x
        solver.solve(xs, us, c["iterations"], False)
        ticks.append(time.perf_counter() - t0)
        _policy_steps(mj, data, solver, state, k, steps, (push_at, push_steps, body, c["push"]),
                      free)
    log(f"Crocoddyl FDDP gait closed loop: median tick {1e3 * np.median(ticks):.3f} ms"
        + (f", fell at {fell:.2f} s" if fell is not None else ""))
    return {"Crocoddyl FDDP": dict(tick_s=ticks, base=base, fell=fell,
                                   version=crocoddyl.__version__)}


def pin_rotation(x):
    """The rotation of a free flyer's quaternion (x, y, z, w) in x[3:7]."""
    import pinocchio as pin

    return pin.Quaternion(x[6], *x[3:6]).normalized().toRotationMatrix()


def solve(spec, log=print):
    """{solver name: its results} for a spec (see the module docstring); with ``mpc`` in the
    spec, the receding-horizon loop of :func:`mpc`; with ``closed_loop``, :func:`closed_loop`
    (:func:`gait_closed_loop` for a gait's)."""
    import crocoddyl

    if "mpc" in spec:
        return mpc(spec, log)
    if "closed_loop" in spec:
        if spec["closed_loop"].get("kind") == "gait":
            return gait_closed_loop(spec, log)
        return closed_loop(spec, log)
    out = {}
    for name, cls in (("Crocoddyl FDDP", crocoddyl.SolverFDDP),
                      ("Crocoddyl DDP", crocoddyl.SolverDDP)):
        if name not in spec.get("solvers", [name]):
            continue
        problem = build(spec)
        xs0 = [np.array(x) for x in spec["xs"]]
        # an impact has no control (nu = 0): its knot's entry of our guess is dropped
        us0 = [np.array(u)[:m.nu] for u, m in zip(spec["us"], problem.runningModels)]
        best, solver, walls = float("inf"), None, []
        repeats = spec.get("repeats", 3)
        if repeats == 0:
            cls(problem).solve(xs0, us0, 1, False)
        for rep in range(1 + repeats):
            solver = cls(problem)
            solver.th_stop = spec.get("th_stop", 1e-12)
            costs = []

            class Record(crocoddyl.CallbackAbstract):
                def __call__(self, s, *args):
                    costs.append(s.cost)

            if rep:
                solver.setCallbacks([])
            else:
                solver.setCallbacks([Record()])
            t0 = time.perf_counter()
            converged = solver.solve(xs0, us0, spec["max_iter"], False)
            wall = time.perf_counter() - t0
            if rep == 0:
                history = list(costs)
            if rep or not repeats:
                best = min(best, wall)
                walls.append(wall)
        out[name] = dict(iterations=solver.iter, cost=solver.cost, converged=bool(converged),
                         total_s=best, median_s=float(np.median(walls)), costs=history,
                         version=crocoddyl.__version__, nthreads=int(problem.nthreads))
        log(f"{name}: converged={converged} iterations={solver.iter} cost={solver.cost:.9g} "
            f"time={best * 1e3:.2f} ms ({best * 1e3 / max(solver.iter, 1):.3f} ms/iteration)")
    return out


def _write(out, path):
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


def serve():
    """Answer the requests of stdin, one per line, until it closes (module docstring).  The
    replies keep stdout to themselves: what the libraries print goes to stderr."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for line in sys.stdin:
        try:
            spec_path, out_path = line.rstrip("\n").split("\t")
            with open(spec_path) as f:
                spec = json.load(f)
            _write(solve(spec), out_path)  # its log lines go to stderr
            reply = "ok"
        except Exception as e:  # the reply names it; the process keeps serving
            reply = "error: " + " ".join(f"{type(e).__name__}: {e}".split())[:500]
        replies.write(reply + "\n")
        replies.flush()


def main():
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    _write(solve(spec), sys.argv[2])


if __name__ == "__main__":
    main()
