"""Crocoddyl's FDDP and DDP on our problems, as reference rows for the comparisons and the solver
benchmark.

Crocoddyl needs its own Pinocchio build, so it runs in a separate Python, named by the environment
variable ``SODDP_CROCODDYL_PYTHON`` (``shared/tools/crocoddyl-reference/setup.sh`` makes one).
:func:`spec` writes a problem as JSON (URDF, root joint, gravity, x0, horizon, dt, actuation, the
costs with their weights and references, the initial guess) and the standalone script
``crocoddyl_problem.py`` beside this module builds the same problem in Crocoddyl and solves it.
(This module is not called ``crocoddyl.py``: a script run from this folder would import it
instead of the real package.)
"""

from __future__ import annotations

import atexit
import json
import os
import select
import subprocess
import tempfile
import threading
from pathlib import Path

import numpy as np

import ddp

SCRIPT = Path(__file__).with_name("crocoddyl_problem.py")
SOLVERS = ("Crocoddyl FDDP", "Crocoddyl DDP")


def python() -> str | None:
    """The Python with Crocoddyl (``SODDP_CROCODDYL_PYTHON``), or None when not configured."""
    return os.environ.get("SODDP_CROCODDYL_PYTHON") or None


def _bounds(c):
    """The JSON of a cost's activation bounds (None: 1/2 sum w r^2); +-inf as +-1e300."""
    if c.bounds is None:
        return None
    return [np.clip(b, -1e300, 1e300).tolist() for b in c.bounds]


def _cost_items(cost):
    """The JSON items of a cost (a Sum or one built-in cost); None if one cannot be written."""
    items = []
    for c in (cost.costs if isinstance(cost, ddp.Sum) else [cost]):
        w = [float(x) for x in c.weight]
        if isinstance(c, ddp.StateRegularization):
            items.append(dict(kind="state", x_ref=c.x_ref.tolist(), weights=w,
                              bounds=_bounds(c)))
        elif isinstance(c, ddp.ControlGravity):
            items.append(dict(kind="control_grav", weights=w, bounds=_bounds(c)))
        elif isinstance(c, ddp.ControlRegularization):
            items.append(dict(kind="control", u_ref=c.u_ref.tolist(), weights=w,
                              bounds=_bounds(c)))
        elif isinstance(c, ddp.CoMPosition):
            items.append(dict(kind="com", position=c.position.tolist(), weights=w,
                              bounds=_bounds(c)))
        elif isinstance(c, (ddp.FrictionCone, ddp.WrenchCone)):
            wrench = isinstance(c, ddp.WrenchCone)
            items.append(dict(kind="wrench_cone" if wrench else "friction_cone", frame=c.frame,
                              mu=c.mu, inner=c.inner, rotation=c.rotation.tolist(),
                              foot=c.foot.tolist() if wrench else None, weights=w,
                              A=c.A.tolist(), bounds=_bounds(c)))
        elif isinstance(c, ddp.ContactForce):
            items.append(dict(kind="contact_force", frame=c.frame, force=c.b.tolist(),
                              weights=w, bounds=_bounds(c)))
        elif isinstance(c, ddp.FramePlacement):
            items.append(dict(kind="placement", frame=c.frame_name, weights=w,
                              rotation=c.placement[:3, :3].tolist(),
                              translation=c.placement[:3, 3].tolist()))
        elif isinstance(c, ddp.FrameTranslation):
            items.append(dict(kind="translation", frame=c.frame_name, weights=w,
                              translation=c.position.tolist()))
        elif isinstance(c, ddp.FrameRotation):
            items.append(dict(kind="rotation", frame=c.frame_name, weights=w,
                              rotation=c.rotation.tolist()))
        elif isinstance(c, ddp.FrameVelocity):
            items.append(dict(kind="velocity", frame=c.frame_name, weights=w,
                              velocity=c.velocity.tolist(), world_aligned=c.world_aligned))
        elif hasattr(c, "crocoddyl_item"):  # a user residual that says how Crocoddyl writes it
            items.append(c.crocoddyl_item())
        else:
            return None
        if c.bounds is not None and items[-1].get("bounds") is None:
            return None  # a barrier on a cost Crocoddyl cannot write with one
        if getattr(c, "cone", None) is not None:
            return None  # a second-order cone: Crocoddyl has no such activation
    return items


def _knots(problem):
    """The JSON of each knot's dynamics and cost (an index into the list of distinct costs),
    and that list; None if a cost cannot be written."""
    costs, index, knots, t = [], {}, [], 0
    for p in problem.phases:
        for k in range(p.knots):
            cost = problem.knot_costs.costs[t]
            if id(cost) not in index:
                items = _cost_items(cost)
                if items is None:
                    return None
                index[id(cost)] = len(costs)
                costs.append(items)
            knots.append(dict(contacts=[dict(frame=c.frame, size=c.size,
                                             reference=np.array(c.reference).tolist(),
                                             gains=list(c.gains)) for c in p.contacts],
                              impact=p.impact, damping=p.damping, restitution=p.restitution,
                              cost=index[id(cost)]))
            t += 1
    return knots, costs


def spec(problem, us=None, max_iter=200, repeats=3, xs=None, solvers=SOLVERS, th_stop=1e-12):
    """The JSON-able description of ``problem`` for ``crocoddyl_problem.py``, starting both
    solvers from ``us`` (default: the quasi-static controls) and ``xs`` (default: their
    rollout, as our single shooting starts), stopping at ``th_stop`` (Crocoddyl's default is
    1e-9; 1e-12 runs to the optimum's rounding);
    None when the problem cannot be written in Crocoddyl (no URDF, an actuation other than full
    or floating-base, a cost that is not built in, hard constraints)."""
    model = getattr(problem.dynamics, "model", None)
    if model is None or model.urdf_path is None:
        return None
    B, n = problem.integrator.B, problem.nv
    if B.shape == (n, n) and np.array_equal(B, np.eye(n)):
        actuation = "full"
    elif model.has_free_flyer and np.array_equal(B, np.eye(n)[:, 6:]):
        actuation = "floating"
    elif n == 2 and B.shape == (2, 1) and sorted(B.ravel()) == [0.0, 1.0]:
        actuation = f"double_pendulum_{int(np.argmax(B[:, 0])) + 1}"  # one joint actuated
    else:
        return None
    if problem.constraints:  # Crocoddyl's solvers do not enforce constraints
        return None
    knots, terminal = _knots(problem), _cost_items(problem.terminal_cost)
    if knots is None or terminal is None or problem.bounded:
        return None
    us = problem.quasi_static() if us is None else np.asarray(us, dtype=float)
    xs = problem.rollout(us) if xs is None else np.asarray(xs, dtype=float)
    return dict(urdf=str(model.urdf_path), floating_base=bool(model.floating_base),
                first_joints=model.first_joints, armature=model.armature.tolist(),
                gravity=bool(np.any(model.arrays.gravity != 0)), actuation=actuation,
                x0=problem.x0.tolist(), T=problem.T, dt=problem.dt, knots=knots[0],
                costs=knots[1], terminal=terminal, xs=xs.tolist(), us=us.tolist(),
                max_iter=max_iter, repeats=repeats, th_stop=th_stop, solvers=list(solvers))


def solve(problem, us=None, max_iter=200, repeats=3, log=print, xs=None, solvers=SOLVERS,
          shared_machine=False, th_stop=1e-12):
    """Crocoddyl's results on ``problem``: {"Crocoddyl FDDP": {...}, "Crocoddyl DDP": {...}} (the
    ``solvers`` asked for) with iterations, cost, converged, total_s (the best of ``repeats``
    timed solves), costs (per iteration) and version; {} when not configured or not writable in
    Crocoddyl.  ``shared_machine``: other processes keep cores busy (see :func:`run`)."""
    s = spec(problem, us, max_iter, repeats, xs, solvers, th_stop) if python() else None
    return {} if s is None else run(s, log, shared_machine)


#: the environment of a Crocoddyl run beside other busy processes (a study's tasks): Crocoddyl
#: runs its OpenMP threads whatever OMP_NUM_THREADS says (``ShootingProblem.nthreads`` cannot go
#: below its build's value), and with OpenMP's default spin-waiting they starve on a loaded
#: machine (HyQ: 16 ms per iteration beside another task instead of 2.7 ms alone); passive
#: waiting gives 3.8 ms
SHARED_MACHINE_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}


#: the Crocoddyl processes of this process, serving specs (``crocoddyl_problem.py --serve``), by
#: (python, shared_machine): started on first use, kept for the next run (a study's worker runs
#: many tasks: starting Python and importing Crocoddyl cost 0.2-0.5 s a task), closed at exit
_SERVERS: dict = {}
_LOCK = threading.Lock()
#: the longest a run may take before its Crocoddyl process is stopped [s]
TIMEOUT_S = 1800


def better_run(a, b, seconds="total_s"):
    """The better of two Crocoddyl runs (either may be None): the converged one, then the lower
    cost (beyond 1e-6 relative), then the shorter time (the key ``seconds``)."""
    if a is None or b is None:
        return a or b
    if a["converged"] != b["converged"]:
        return a if a["converged"] else b
    if abs(a["cost"] - b["cost"]) > 1e-6 * max(abs(a["cost"]), abs(b["cost"]), 1e-300):
        return a if a["cost"] < b["cost"] else b
    return a if a[seconds] <= b[seconds] else b


def run(s: dict, log=print, shared_machine: bool = False) -> dict:
    """Solve the problem of a :func:`spec` in Crocoddyl's Python (as :func:`solve`); {} when not
    configured or when the run fails.  ``shared_machine``: other processes are busy on the
    cores (:data:`SHARED_MACHINE_ENV`).  The runs of a process go to one Crocoddyl process
    (:data:`_SERVERS`), started again if it died."""
    py = python()
    if py is None:
        return {}
    with _LOCK, tempfile.TemporaryDirectory() as d:
        inp, out = Path(d) / "spec.json", Path(d) / "out.json"
        inp.write_text(json.dumps(s))
        reply = _request(py, shared_machine, f"{inp}\t{out}")
        if reply != "ok" or not out.is_file():
            log(f"  (Crocoddyl run failed: {reply})")
            return {}
        return json.loads(out.read_text())


def _request(py, shared_machine, line) -> str:
    """Send one request line to the Crocoddyl process and return its reply line (or what went
    wrong); a process that died or timed out is stopped and forgotten."""
    key = (py, shared_machine)
    proc = _SERVERS.get(key)
    if proc is None or proc.poll() is not None:
        env = dict(os.environ, **SHARED_MACHINE_ENV) if shared_machine else None
        proc = subprocess.Popen([py, str(SCRIPT), "--serve"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                env=env)
        _SERVERS[key] = proc
    try:
        proc.stdin.write(line + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], TIMEOUT_S)
        reply = proc.stdout.readline().strip() if ready else f"no answer in {TIMEOUT_S} s"
    except OSError as e:  # a broken pipe: the process died
        reply = f"{type(e).__name__}: {e}"
    if not reply or not (reply == "ok" or reply.startswith("error: ")):
        _stop(_SERVERS.pop(key))
        reply = reply or f"the Crocoddyl process exited with code {proc.poll()}"
    return reply


def _stop(proc):
    try:
        proc.stdin.close()
        proc.wait(timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()


@atexit.register
def _stop_all():
    while _SERVERS:
        _stop(_SERVERS.popitem()[1])
