"""Closed-loop receding-horizon scenarios: :class:`ddp.MPC` driving a MuJoCo plant
(:mod:`problems.plant`), never our own dynamics (``soddp mpc NAME``).

``solo12-trot-mpc``: Solo-12 (example-robot-data's, floating base) trots forward on flat
ground, a lateral push midway (4 N on the base for 0.1 s).  The controller: the quadruped gait
builder's trot (:class:`problems.gaits.QuadrupedGaits`, Crocoddyl's formulation; steps of 5 cm,
5 cm high, 13 swing knots and 3 of support of 20 ms: one cycle, T = 34 knots, 0.64 s), its
landings aimed at the ground, cyclic (:class:`ddp.MPC` with ``cyclic=True``: the schedule
moves on one time step per tick, past the impacts; the swing feet's and the centre of mass's
targets move on a stride as their knots wrap); one tick every 20 ms (50 Hz) and the feedback
policy at 1 kHz between ticks; the default "safeguarded" globalization.  MuJoCo decides the
contacts: a sphere on each foot, an elliptic friction cone, mu 1 (the controller's 0.7).  The
robot stands for 1 s under a PD first, as on hardware.  A fall: the base below 10 cm or tilted
past 60 degrees.

``ur5-reach-mpc``: the UR5 of example-robot-data tracks a target moving on a circle (radius
0.1 m, one turn in 4 s, in the plane x = const in front of its start) with ``tool0``; midway a
push (100 N along y on the wrist for 0.1 s).  The controller: T = 25 knots of dt = 0.02 s (a
0.5 s horizon), tool0's translation (weight 100 running, 1e3 terminal) to where the target will
be at each knot's time, the joint velocities (1), the controls minus gravity (1e-3); one tick
every 20 ms (50 Hz) on the measured state, the knots' targets set at each tick through the
costs' setters, and between ticks the tick's feedback policy u = us_0 + K_0 (x - xs_0) at
MuJoCo's 1 kHz.  DDP and iLQR both with the "shift" globalization (:data:`GLOBALIZATION`).

Writes ``results/mpc_NAME_METHOD.{csv,md,png}`` (the tracking error or the distance trotted
and whether it fell, the time per tick, the ticks over their 20 ms budget),
``mpc_NAME_METHOD_trajectory.csv`` and, with ``animate``,
``mpc_NAME_METHOD.html``.  :func:`run_crocoddyl_ur5_reach` runs the same loop with Crocoddyl's
FDDP as the controller, in its own environment.
"""

from __future__ import annotations

import time

import numpy as np
import pinocchio as pin

import ddp
from dynamics import AnalyticalDynamics, robots

from .gaits import QuadrupedGaits
from .output import duration, pyplot, results_dir, save_figure, write_table
from .plant import FOOT_RADIUS, Plant, mjcf
from .reference import crocoddyl_solvers

SCENARIOS = ("ur5-reach-mpc", "solo12-trot-mpc")
UR5_Q0 = np.array([0.0, -1.2, 1.6, -0.4, np.pi / 2, 0.0])
TICK = 0.02  # s: the MPC's period, and its problem's time step
PUSH = dict(body="wrist_3_joint", force=(0.0, 100.0, 0.0), duration=0.1)
#: the globalization of both methods: "shift" (a shift on Q_uu, the papers' DDP).  The default
#: "safeguarded" starts every solve with a Gauss-Newton iteration, so that with one iteration
#: per tick DDP would be iLQR
GLOBALIZATION = "shift"


def _tool(model, q, data=None, frame=None):
    pm = model.pin_model
    data = data or pm.createData()
    frame = pm.getFrameId("tool0") if frame is None else frame
    pin.framesForwardKinematics(pm, data, q)
    return data.oMf[frame].translation.copy()


def ur5_reach_controller(T=25, per_knot=True):
    """(problem, the reach costs of its T + 1 knots) of the controller: each knot tracks the
    target where it will be at that knot's time (set at every tick).  ``per_knot`` False: one
    running cost for every knot (reach costs: the running one and the terminal one), as
    Crocoddyl's builder takes it, giving each knot a model of its own."""
    m = robots.load("ur5")
    x0 = np.concatenate([UR5_Q0, np.zeros(6)])
    start = _tool(m, UR5_Q0)
    reach = [ddp.FrameTranslation(m, "tool0", start, 100.0) for _ in range(T if per_knot else 1)]
    reach.append(ddp.FrameTranslation(m, "tool0", start, 1e3))
    velocities = ddp.StateRegularization(m, x0, np.r_[np.zeros(6), np.ones(6)])
    gravity = ddp.ControlGravity(m, 1e-3)
    knots = [ddp.Sum([r, velocities, gravity]) for r in reach[:-1]]
    P = ddp.ShootingProblem(AnalyticalDynamics(m), x0, None, TICK, None,
                            ddp.Sum([reach[-1], velocities]),
                            phases=[ddp.Phase(T, cost=knots if per_knot else knots[0])])
    P.info = dict(robot="ur5", task="track a moving target with tool0 (closed loop, MuJoCo)")
    return P, reach


def _summary(method, iterations, seconds, t, err, tick_s, push_at):
    """The table row of a closed loop: errors (``err`` at the ticks' times ``t``) after the
    first second, or the first half of a shorter run (the arm starts at rest), and after the
    push (at tick ``push_at``); the ticks' times ``tick_s``."""
    tick_ms = 1e3 * np.asarray(tick_s)
    settle, after_push = t >= min(1.0, seconds / 2), t >= push_at * TICK
    return dict(scenario="ur5-reach-mpc", method=method, iterations=iterations,
                seconds=seconds, mean_error_mm=round(1e3 * float(err[settle].mean()), 2),
                max_error_mm=round(1e3 * float(err[settle].max()), 2),
                max_error_after_push_mm=round(1e3 * float(err[after_push].max()), 2),
                median_tick_ms=round(float(np.median(tick_ms)), 3),
                max_tick_ms=round(float(tick_ms.max()), 3),
                ticks_over_budget=int(np.sum(tick_ms > 1e3 * TICK)), ticks=len(t))


def _policy_steps(plant, mpc, k, steps, push):
    """The plant's ``steps`` steps after tick k under the tick's feedback policy
    u = us_0 + k_0 + K_0 (x (-) xs_0) (its first control when the tick's backward pass
    failed); ``push``: (its tick, its length in steps, the body, the force (3,)), applied from
    that tick's first step."""
    at, length, body, force = push
    integrator, policy = mpc.problem.integrator, mpc.policy
    release = at * steps + length - k * steps  # the push ends at this step of the tick
    for j in range(steps):
        if k == at and j == 0:
            plant.push(body, [*force, 0.0, 0.0, 0.0])
        if j == release:
            plant.push(body, np.zeros(6))
        xj = plant.state()
        u = (policy.control(0, integrator.difference(policy.xs[0], xj)) if policy is not None
             else mpc.solution.us[0])
        plant.step(u)


def _write_trajectory(path, header, columns):
    """A closed loop's per-tick record as CSV: ``header`` and the ``columns`` (arrays of one row
    per tick, (ticks,) or (ticks, k)) side by side."""
    table = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    with open(path, "w") as f:
        f.write(header + "\n")
        for row in table:
            f.write(",".join(f"{v:.9g}" for v in row) + "\n")


def _target(center, t):
    a = 2 * np.pi * t / 4.0
    return center + 0.1 * np.array([0.0, np.cos(a) - 1.0, np.sin(a)])


def run_ur5_reach(method="ddp", iterations=1, seconds=5.0, animate=False, log=print,
                  write=True, push=None):
    """The closed loop of ``ur5-reach-mpc`` (module docstring); returns its summary row.
    ``write``: its files (else only the row); ``push``: the push's force along y (N; None:
    PUSH's)."""
    push_force = np.array(PUSH["force"], dtype=float) if push is None else np.array(
        [0.0, float(push), 0.0])
    P, reach = ur5_reach_controller()
    m = P.dynamics.model
    x0 = P.x0.copy()
    center = _tool(m, UR5_Q0)
    plant = Plant(m, x0)
    mpc = ddp.MPC(P, iterations=iterations, method=method, globalization=GLOBALIZATION)
    # the first tick converges from rest (untimed: the kernels load), then the loop runs
    ddp.solve(P, shooting="multiple", max_iter=50)
    steps_per_tick = int(round(TICK / plant.dt))
    n_ticks = int(round(seconds / TICK))
    push_at = int(round(n_ticks / 2))
    push_steps = int(round(PUSH["duration"] / plant.dt))
    data, frame = m.pin_model.createData(), m.pin_model.getFrameId("tool0")
    rec_t, rec_p, rec_target, tick_s, states = [], [], [], [], []
    for k in range(n_ticks):
        t = k * TICK
        x = plant.state()
        target = _target(center, t)
        for i, r in enumerate(reach):  # each knot: the target at its time
            r.position = _target(center, t + i * TICK)
        t0 = time.perf_counter()
        mpc.step(x)
        tick_s.append(time.perf_counter() - t0)
        states.append(x)
        _policy_steps(plant, mpc, k, steps_per_tick, (push_at, push_steps, PUSH["body"],
                                                      push_force))
        rec_t.append(t)
        rec_p.append(_tool(m, x[:6], data, frame))
        rec_target.append(target)
    P.x0 = x0
    rec_t, rec_p, rec_target = np.array(rec_t), np.array(rec_p), np.array(rec_target)
    err = np.linalg.norm(rec_p - rec_target, axis=1)
    tick_ms = 1e3 * np.array(tick_s)
    row = _summary(method, iterations, seconds, rec_t, err, tick_s, push_at)
    if not write:
        return row
    stem = f"mpc_ur5-reach-mpc_{method}"
    out = results_dir()
    _write_trajectory(out / f"{stem}_trajectory.csv",
                      "t,tool_x,tool_y,tool_z,target_x,target_y,target_z,tick_ms",
                      (rec_t, rec_p, rec_target, tick_ms))
    plt = pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    for a, name in enumerate("yz"):
        axes[a].plot(rec_t, rec_target[:, a + 1], "k--", label="target")
        axes[a].plot(rec_t, rec_p[:, a + 1], label=f"tool0 ({method.upper()})")
        axes[a].set_ylabel(f"{name} (m)")
        axes[a].axvline(push_at * TICK, color="r", lw=0.8)
    axes[0].legend(loc="upper right")
    axes[2].plot(rec_t, 1e3 * err)
    axes[2].set_ylabel("error (mm)")
    axes[2].set_xlabel("time (s); red: the push")
    fig.suptitle(f"UR5 tracking in MuJoCo: {method.upper()}, {iterations} iteration(s) per "
                 f"50 Hz tick")
    save_figure(fig, stem)
    notes = [f"MuJoCo {plant.mujoco.__version__} plant at 1 kHz; the controller at 50 Hz on the "
             f"measured state, its feedback policy between ticks; the push: 100 N along y on "
             f"the wrist for 0.1 s at {push_at * TICK:.1f} s; globalization {GLOBALIZATION}.",
             "Errors after the first second (of a shorter run, its first half); a tick's budget "
             "is its 20 ms period."]
    write_table([row], stem, "UR5 tracking a moving target in MuJoCo (ddp.MPC)",
                [(k, k.replace("_", " ")) for k in row], notes, log)
    if animate:
        path = ddp.animate(P, np.array(states), out / f"{stem}.html")
        log(f"wrote {path}")
    log(f"{method}: mean error {row['mean_error_mm']} mm, median tick "
        f"{duration(row['median_tick_ms'] / 1e3)}")
    return row


def run_crocoddyl_ur5_reach(iterations=1, seconds=5.0, push=None, log=print):
    """The same closed loop with Crocoddyl's FDDP as the controller, in its own environment
    (``problems/reference/crocoddyl_problem.py``'s ``closed_loop``: the same MJCF, targets,
    ticks, push and policy); its summary row, or None without ``SODDP_CROCODDYL_PYTHON``."""
    P, reach = ur5_reach_controller(per_knot=False)
    x0, start = P.x0, reach[0].position
    xs = np.tile(x0, (P.T + 1, 1))
    spec = crocoddyl_solvers.spec(P, us=P.quasi_static(xs), xs=xs)
    if spec is None or crocoddyl_solvers.python() is None:
        return None
    spec["closed_loop"] = dict(
        mjcf=mjcf(P.dynamics.model), frame="tool0", cost="translation0", center=start.tolist(), radius=0.1,
        period=4.0, tick=TICK, seconds=seconds, iterations=iterations,
        push=float(PUSH["force"][1] if push is None else push), push_body=PUSH["body"],
        push_duration=PUSH["duration"])
    out = crocoddyl_solvers.run(spec, log).get("Crocoddyl FDDP")
    if not out:
        return None
    t = TICK * np.arange(len(out["tick_s"]))
    err = np.linalg.norm(np.array(out["tool"]) - np.array(out["target"]), axis=1)
    return _summary(f"Crocoddyl {out['version']} FDDP", iterations, seconds, t, err,
                    out["tick_s"], len(t) // 2)  # its script pushes at tick n // 2


# ----------------------------------------------------------------------------- solo12-trot-mpc
SOLO12_FEET = ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")
#: the trot of the controller (:meth:`problems.gaits.QuadrupedGaits.problem`)
SOLO12_TROT = dict(step_length=0.05, step_height=0.05, dt=TICK, step_knots=13, support_knots=3)
SOLO12_PUSH = dict(body="root_joint", force=(0.0, 4.0, 0.0), duration=0.1)
#: the fall: the base below this height (m), or tilted more than this (its z axis' z)
FALL_HEIGHT, FALL_TILT = 0.1, 0.5
#: the stand before the run: a PD on the joints around the standing torques (Plant.hold)
HOLD = dict(seconds=1.0, kp=5.0, kd=0.2)


def solo12_trot_controller():
    """(problem, stride): one cycle of the trot (module docstring) from Solo-12's SRDF
    "standing" with its feet's spheres on the floor, and the displacement (3,) of a cycle,
    which each swing and landing knot's targets move on by when the knot wraps around."""
    m = robots.load("solo12")
    q = np.array(m.reference_configurations["standing"], dtype=float)
    pm, data = m.pin_model, m.pin_model.createData()
    pin.framesForwardKinematics(pm, data, q)
    q[2] += FOOT_RADIUS - min(data.oMf[pm.getFrameId(f)].translation[2] for f in SOLO12_FEET)
    gaits = QuadrupedGaits(m, feet=SOLO12_FEET, standing=q)
    P = gaits.problem("trotting", x0=np.concatenate([q, np.zeros(m.nv)]), first_step=False,
                      ground_landing=True, **SOLO12_TROT)
    P.info = dict(robot="solo12", task="trot forward on flat ground (closed loop, MuJoCo)")
    return P, np.array([SOLO12_TROT["step_length"], 0.0, 0.0])


def _moved_on(stride):
    """The ``wrap`` of the trot's MPC: a wrapped knot's frame and centre-of-mass targets move
    on a stride."""
    def wrap(cost):
        for c in getattr(cost, "costs", [cost]):
            if "position" in type(c).SETTABLE:
                c.position = c.position + stride
    return wrap


def _fallen(x) -> bool:
    R = pin.Quaternion(x[6], *x[3:6]).normalized().toRotationMatrix()
    return bool(x[2] < FALL_HEIGHT or R[2, 2] < FALL_TILT)


def run_solo12_trot(method="ddp", iterations=1, seconds=5.0, animate=False, log=print,
                    write=True, push=None, globalization=None, budget_ms=None):
    """The closed loop of ``solo12-trot-mpc`` (module docstring); returns its summary row.
    ``write``: its files (else only the row); ``push``: the push's force along y (N; None:
    SOLO12_PUSH's); ``globalization``: the solver's (None: its default, "safeguarded");
    ``budget_ms``: a time budget per tick (``iterations`` then at most)."""
    push_force = (np.array(SOLO12_PUSH["force"], dtype=float) if push is None
                  else np.array([0.0, float(push), 0.0]))
    P, stride = solo12_trot_controller()
    m = P.dynamics.model
    plant = Plant(m, P.x0, feet=SOLO12_FEET)
    standing = P.quasi_static(np.tile(P.x0, (P.T + 1, 1)))
    plant.hold(P.x0, standing[0], **HOLD)
    # the first tick converges from the start (untimed: the kernels load), as Crocoddyl's
    # examples start: x0 at every knot, quasi-static controls
    first = ddp.solve(P, np.tile(P.x0, (P.T + 1, 1)), standing, shooting="multiple",
                      max_iter=100)
    options = {} if globalization is None else dict(globalization=globalization)
    mpc = ddp.MPC(P, iterations=iterations, budget_ms=budget_ms, method=method, cyclic=True,
                  wrap=_moved_on(stride), xs=first.xs, us=first.us, **options)
    steps_per_tick = int(round(TICK / plant.dt))
    n_ticks = int(round(seconds / TICK))
    push_at = int(round(n_ticks / 2))
    push_steps = int(round(SOLO12_PUSH["duration"] / plant.dt))
    cycle = float(np.sum(P.cost_weights[~P.impacts]))  # s: the time steps of one cycle
    rec_t, tick_s, states, fell = [], [], [], None
    for k in range(n_ticks):
        x = plant.state()
        if _fallen(x) or plant.unstable():  # (MuJoCo resets a diverged simulation)
            fell = k * TICK
            break
        states.append(x)
        rec_t.append(k * TICK)
        t0 = time.perf_counter()
        mpc.step(x)
        tick_s.append(time.perf_counter() - t0)
        _policy_steps(plant, mpc, k, steps_per_tick, (push_at, push_steps,
                                                      SOLO12_PUSH["body"], push_force))
    states, rec_t = np.array(states), np.array(rec_t)
    base = states[:, :3] - states[0, :3]
    commanded = stride[0] / cycle * rec_t
    tick_ms = 1e3 * np.array(tick_s)
    row = _solo12_row(method, globalization or ddp.SolverSettings().globalization, iterations,
                      budget_ms, seconds, push_force[1], base, commanded, tick_s, fell)
    if not write:
        return row
    stem = f"mpc_solo12-trot-mpc_{method}"
    out = results_dir()
    _write_trajectory(out / f"{stem}_trajectory.csv", "t,base_x,base_y,base_z,commanded_x,tick_ms",
                      (rec_t, states[:, :3], commanded, tick_ms))
    plt = pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(8, 7), sharex=True)
    axes[0].plot(rec_t, commanded, "k--", label="commanded (a stride per cycle)")
    axes[0].plot(rec_t, base[:, 0], label=f"base ({method.upper()})")
    axes[0].set_ylabel("x (m)")
    axes[0].legend(loc="upper left")
    axes[1].plot(rec_t, base[:, 1])
    axes[1].set_ylabel("y (m)")
    axes[2].plot(rec_t, states[:, 2])
    axes[2].set_ylabel("base height (m)")
    axes[2].set_xlabel("time (s); red: the push" + ("" if fell is None else "; it fell"))
    for a in axes:
        a.axvline(push_at * TICK, color="r", lw=0.8)
    fig.suptitle(f"Solo-12 trotting in MuJoCo: {method.upper()}, {iterations} iteration(s) per "
                 f"50 Hz tick")
    save_figure(fig, stem)
    notes = [f"MuJoCo {plant.mujoco.__version__} plant at 1 kHz (feet spheres, elliptic friction "
             f"cone, mu 1); the controller at 50 Hz on the measured state (T = {P.T} knots: one "
             f"trot cycle), its feedback policy between ticks; the push: "
             f"{push_force[1]:g} N along y on the base for 0.1 s at {push_at * TICK:.1f} s.",
             "A tick's budget is its 20 ms period; commanded: a stride (5 cm) per cycle "
             f"({cycle:.2f} s)."]
    write_table([row], stem, "Solo-12 trotting in MuJoCo (ddp.MPC, cyclic)",
                [(k, k.replace("_", " ")) for k in row], notes, log)
    if animate:
        path = ddp.animate(P, states, out / f"{stem}.html")
        log(f"wrote {path}")
    log(f"{method}: {'fell at ' + str(row['fell_at_s']) + ' s' if fell is not None else 'no fall'}"
        f", {row['distance_m']} m of {row['commanded_m']} m, median tick "
        f"{duration(row['median_tick_ms'] / 1e3)}")
    return row


def _solo12_row(method, globalization, iterations, budget_ms, seconds, push, base, commanded,
                tick_s, fell):
    """The table row of a Solo-12 closed loop: the base's displacement (ticks, 3) against the
    commanded distance (ticks,) until the end or the fall, the ticks' times ``tick_s``."""
    tick_ms = 1e3 * np.asarray(tick_s)
    return dict(scenario="solo12-trot-mpc", method=method, globalization=globalization,
                iterations=iterations, budget_ms="" if budget_ms is None else budget_ms,
                seconds=seconds, push_N=float(push),
                fell_at_s="" if fell is None else round(fell, 2),
                distance_m=round(float(base[-1, 0]), 3),
                commanded_m=round(float(commanded[-1]), 3),
                max_lateral_m=round(float(np.max(np.abs(base[:, 1]))), 3),
                median_tick_ms=round(float(np.median(tick_ms)), 3),
                max_tick_ms=round(float(tick_ms.max()), 3),
                ticks_over_budget=int(np.sum(tick_ms > 1e3 * TICK)), ticks=len(tick_s))


def run_crocoddyl_solo12_trot(iterations=1, seconds=5.0, push=None, log=print):
    """The same Solo-12 loop with Crocoddyl's FDDP as the controller, in its own environment
    (``problems/reference/crocoddyl_problem.py``'s ``gait_closed_loop``: the same MJCF, trot,
    hold, ticks, cycling, strides, push and feedback policy); its summary row, or None without
    ``SODDP_CROCODDYL_PYTHON``."""
    push_force = SOLO12_PUSH["force"][1] if push is None else float(push)
    P, stride = solo12_trot_controller()
    xs = np.tile(P.x0, (P.T + 1, 1))
    standing = P.quasi_static(xs)
    spec = crocoddyl_solvers.spec(P, us=standing, xs=xs)
    if spec is None or crocoddyl_solvers.python() is None:
        return None
    spec["closed_loop"] = dict(
        kind="gait", mjcf=mjcf(P.dynamics.model, feet=SOLO12_FEET), stride=stride.tolist(),
        hold_tau=standing[0].tolist(), hold_gains=[HOLD["kp"], HOLD["kd"]],
        hold_seconds=HOLD["seconds"], tick=TICK,
        seconds=seconds, iterations=iterations, push=float(push_force),
        push_body=SOLO12_PUSH["body"], push_duration=SOLO12_PUSH["duration"],
        fall_height=FALL_HEIGHT, fall_tilt=FALL_TILT)
    out = crocoddyl_solvers.run(spec, log).get("Crocoddyl FDDP")
    if not out:
        return None
    base = np.array(out["base"])
    t = TICK * np.arange(len(base))
    cycle = float(np.sum(P.cost_weights[~P.impacts]))
    return _solo12_row(f"Crocoddyl {out['version']} FDDP", "FDDP", iterations, None, seconds,
                       push_force, base - base[0], stride[0] / cycle * t, out["tick_s"],
                       out["fell"])


def run(name, method="ddp", iterations=1, seconds=5.0, animate=False, log=print):
    if name not in SCENARIOS:
        raise ValueError(f"scenario: expected one of {', '.join(SCENARIOS)}; got {name!r}")
    if name == "solo12-trot-mpc":
        return run_solo12_trot(method, iterations, seconds, animate, log)
    return run_ur5_reach(method, iterations, seconds, animate, log)
