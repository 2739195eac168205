"""Study tasks: one task is one solve, described by a flat dict, and :func:`run_task` is a pure
function of that description (the same task gives the same numbers on any worker, so that a
retried task, or a serial re-run, reproduces it exactly).

A task description (:func:`task` fills in the defaults, :func:`check_task` validates it)::

    part           "backends" | "globalization" | "robustness": the study it belongs to
    problem        an example problem (problems.PROBLEMS) or, with a seed, a family of FAMILIES
    seed           None (the example problem itself) or the random instance of the family
    solver         "soddp" (ours) or "crocoddyl" (Crocoddyl 3.2.1 in its own Python)
    method         soddp: "ddp" | "ilqr"; crocoddyl: "fddp" | "ddp" (Gauss-Newton)
    backend        the dynamics derivatives: "analytical" | "casadi" | "finite-diff"
    globalization  ddp.globalization.GLOBALIZATIONS
    shooting       "single" | "multiple" (default: the problem's, examples.default_start)
    start          "quasi-static" (the controls holding x0 and their rollout), "crocoddyl"
                   (x0 at every knot, the controls holding it: Crocoddyl's examples' start) or
                   "cold" (xs = x0 at every knot, us = 0); default: the problem's
    max_iter       iterations at most
    settings       more ddp.SolverSettings fields by name (a dict, default {})

:func:`task_key` names a task by a hash of its description: the results store and Dask use it,
so that a task is stored at most once and a resumed study skips what is done.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
import time
from importlib import metadata

import numpy as np

import ddp
from ddp.settings import METHODS
from dynamics.robots import TALOS_LEGS_HALF_SITTING

from .examples import (BACKENDS, PROBLEMS, STARTS, UR3_TARGET_POSITION, default_start, get,
                       initial_guess as start_guess)
from .gaits import BIPED_WALKING, GAITS, HYQ_STANDING
from .reference import crocoddyl_solvers

#: random instances: family -> what is random
FAMILIES = {
    "pendulum": "initial angle hanging +- 1 rad, velocity +- 1 rad/s",
    "double_pendulum": "initial angles hanging +- 0.5 rad, velocities +- 0.5 rad/s",
    "ur3": "target position +- 10 cm in each axis",
    "hyq": "final trunk yaw in +- 0.5 rad",
    "atlas": "final pelvis yaw in +- 0.3 rad",
    "hyq-walk": "start joint angles +- 0.05 rad (the footholds move with them), step length "
                "0.25 m +- 20%",
    "hyq-trot": "start joint angles +- 0.05 rad (the footholds move with them), step length "
                "0.15 m +- 20%",
    "talos-walk": "start leg joint angles +- 0.05 rad (the feet move with them), step length "
                  "0.6 m +- 20%",
}

PARTS = ("backends", "globalization", "robustness")
SOLVERS = {"soddp": METHODS, "crocoddyl": ("fddp", "ddp")}

#: the description fields, in order (the store's first columns)
TASK_FIELDS = ("part", "problem", "seed", "solver", "method", "backend", "globalization",
               "shooting", "start", "max_iter", "settings")
#: the study configuration a task belongs to (:func:`problems.parts.configuration`, as JSON;
#: not part of the task's key: a Crocoddyl task can serve two studies)
STUDY_FIELD = "study"
#: what a record adds: the outcome, then where and with what it ran
OUTCOME_FIELDS = ("status", "converged", "iterations", "cost", "time_s", "t_setup",
                  "t_derivatives", "t_backward", "t_forward", "tail", "exact_iterations", "nv",
                  "grad_norms", "costs")
WHERE_FIELDS = ("host", "pid", "worker", "versions", "started", "finished")
_DEFAULTS = dict(seed=None, solver="soddp", backend="analytical", globalization="safeguarded",
                 shooting=None, start=None, max_iter=300, settings={})

#: the status of a task that cannot run here (Crocoddyl not configured, or the problem not
#: writable in Crocoddyl): reports leave it out
UNAVAILABLE = "unavailable"

#: the software whose versions a record carries
_PACKAGES = ("soddp", "numpy", "numba", "pin", "casadi", "dask", "distributed")


def instance(family: str, seed: int, backend: str = "analytical"):
    """The random instance ``seed`` of a problem family with the dynamics ``backend`` (seed 0 of
    every family is random too; the example problem itself is :func:`problems.get`)."""
    rng = np.random.default_rng([seed, 7919])
    if family in ("pendulum", "double_pendulum"):
        x0 = get(family).x0.copy()
        n = x0.size // 2
        spread = 1.0 if n == 1 else 0.5
        x0[:n] += rng.uniform(-spread, spread, n)
        x0[n:] = rng.uniform(-spread, spread, n)
        return get(family, backend=backend, x0=x0)
    if family == "ur3":
        return get("ur3", backend=backend,
                   target=UR3_TARGET_POSITION + rng.uniform(-0.1, 0.1, 3))
    if family == "hyq":
        return get("hyq", backend=backend, angle=float(rng.uniform(-0.5, 0.5)))
    if family == "atlas":
        return get("atlas", backend=backend, angle=float(rng.uniform(-0.3, 0.3)))
    if family in ("hyq-walk", "hyq-trot"):
        q0 = HYQ_STANDING.copy()
        q0[7:] += rng.uniform(-0.05, 0.05, q0.size - 7)  # the joints; the base stays
        gait = "walking" if family == "hyq-walk" else "trotting"
        step = GAITS[gait]["step_length"] * float(rng.uniform(0.8, 1.2))
        return get(family, backend=backend, x0=np.concatenate([q0, np.zeros(q0.size - 1)]),
                   step_length=step)
    if family == "talos-walk":
        q0 = TALOS_LEGS_HALF_SITTING.copy()
        q0[7:] += rng.uniform(-0.05, 0.05, q0.size - 7)
        step = BIPED_WALKING["step_length"] * float(rng.uniform(0.8, 1.2))
        return get(family, backend=backend, x0=np.concatenate([q0, np.zeros(q0.size - 1)]),
                   step_length=step)
    raise ValueError(f"family: expected one of {', '.join(FAMILIES)}; got {family!r}")


def task(**fields) -> dict:
    """A complete task description: ``fields`` over the defaults, validated (ValueError naming
    the field and what it expects)."""
    unknown = set(fields) - set(TASK_FIELDS)
    if unknown:
        raise ValueError(f"{sorted(unknown)[0]}: not a task field (fields: "
                         f"{', '.join(TASK_FIELDS)})")
    t = {k: fields.get(k, _DEFAULTS.get(k)) for k in TASK_FIELDS}
    t["settings"] = dict(t["settings"] or {})
    start, shooting = default_start(t["problem"])
    t["start"] = start if t["start"] is None else t["start"]
    t["shooting"] = shooting if t["shooting"] is None else t["shooting"]
    check_task(t)
    return t


def _expect(name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{name}: expected one of {', '.join(map(str, allowed))}; got {value!r}")


def check_task(t: dict) -> None:
    """Raise ValueError (naming the field) unless ``t`` describes a task that can run."""
    for k in ("part", "problem", "method", "solver"):
        if t.get(k) is None:
            raise ValueError(f"{k}: missing from the task {t!r}")
    _expect("part", t["part"], PARTS)
    _expect("solver", t["solver"], tuple(SOLVERS))
    _expect("method", t["method"], SOLVERS[t["solver"]])
    if t["seed"] is None:
        _expect("problem", t["problem"], tuple(PROBLEMS))
    else:
        _expect("problem", t["problem"], tuple(FAMILIES))
        if isinstance(t["seed"], bool) or not isinstance(t["seed"], (int, np.integer)) \
                or t["seed"] < 0:
            raise ValueError(f"seed: expected None or a non-negative integer; got {t['seed']!r}")
    _expect("backend", t["backend"], BACKENDS)
    _expect("start", t["start"], STARTS)
    if t["solver"] == "crocoddyl" and (t["backend"] != "analytical" or t["settings"]):
        raise ValueError("settings: Crocoddyl tasks take no backend or solver settings")
    reserved = {"method", "globalization", "shooting", "max_iter", "verbose"} & set(t["settings"])
    if reserved:
        raise ValueError(f"settings: {sorted(reserved)[0]} is a task field, not an extra setting")
    # unknown settings, and globalization, shooting and max_iter: ddp.SolverSettings checks them
    settings = ddp.SolverSettings().updated(**t["settings"])
    settings.updated(method=t["method"] if t["solver"] == "soddp" else "ddp",
                     globalization=t["globalization"], shooting=t["shooting"],
                     max_iter=t["max_iter"])


def task_key(t: dict) -> str:
    """A stable name of the task: 16 hex digits of the SHA-1 of its canonical JSON."""
    text = json.dumps({k: t[k] for k in TASK_FIELDS}, sort_keys=True, default=_json_number)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _json_number(x):
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    raise TypeError(f"not JSON-able: {x!r}")


def build_problem(t: dict):
    """The ShootingProblem of a task (its example problem or its random instance)."""
    if t["seed"] is not None:
        return instance(t["problem"], int(t["seed"]), t["backend"])
    return get(t["problem"], backend=t["backend"])


def initial_guess(t: dict, P):
    """(xs, us) of the task's start (:func:`problems.examples.initial_guess`)."""
    return start_guess(P, t["start"])


def reportable(records) -> list:
    """The records a report shows: all but the tasks that could not run here."""
    return [r for r in records if not r["status"].startswith(UNAVAILABLE)]


def settings_note(records) -> str:
    """The solver settings the records of ours were solved with (a note under every report):
    the stopping tolerance and the settings other than the defaults."""
    ours = [r for r in records if r["solver"] == "soddp"]
    default = ddp.SolverSettings()
    tols = sorted({float(r["settings"].get("tol", default.tol)) for r in ours})
    extra = sorted({f"{k}={v}" for r in ours for k, v in r["settings"].items() if k != "tol"})
    text = "ours: converged when the gradient norm is below tol = " + " or ".join(
        f"{t:g}" for t in tols) if tols else "no solve of ours"
    return text + (f"; other settings: {', '.join(extra)}" if extra else "")


def provenance(records) -> str:
    """Where and with what the records were computed (a note under every report)."""
    procs = {(r["host"], r["pid"]) for r in records if r["pid"] is not None}
    hosts = sorted({h for h, _ in procs})
    workers = {r["worker"] for r in records if r["worker"]}
    v = next((r["versions"] for r in records if r["versions"]), {})
    soft = ", ".join(f"{k} {v[k]}" for k in ("soddp", "numba", "pin", "casadi", "dask") if v.get(k))
    mode = ("in one process" if workers <= {"in-process"} else
            f"on Dask, {len(procs)} worker processes (several tasks ran at once: times are "
            "measured beside other tasks)")
    return (f"{len(records)} task records from the study store, run {mode} on "
            f"{', '.join(hosts)}; {soft}")


def tail_ratio(grad_norms) -> float:
    """The last ratio of successive gradient norms (small: a quadratic tail; about constant over
    the last iterations: linear)."""
    g = np.asarray(grad_norms, dtype=float)
    return float(g[-1] / g[-2]) if g.size >= 2 and g[-2] > 0 else float("nan")


_WARM = set()  # the configurations this process has warmed up (compiled kernels loaded)


def run_task(t: dict, verbose: bool = False) -> dict:
    """Solve one task; returns its record: the description, ``key``, the outcome (status,
    converged, iterations, cost, time_s of the solve, t_derivatives / t_backward / t_forward
    summed over iterations, t_setup for building the problem and the warm-up, tail,
    exact_iterations, nv, grad_norms and costs per iteration) and where and with what it ran
    (host, pid, versions, started and finished as Unix times).  A solver failure is a status;
    an exception is recorded as status "error: ..." (the same task would fail again).

    The first task of a configuration (problem, method, backend, globalization, shooting) in a
    process is preceded by two untimed one-iteration solves, one as configured and one with the
    exact model from the first iteration ("state-shift"): they load the compiled kernels of
    both the Gauss-Newton and the exact iterations (numba caches them on disk, so a worker loads
    them once and never recompiles) and build the CasADi functions, so that ``time_s`` measures
    iterations only."""
    started = time.time()
    t = {k: t[k] for k in (*TASK_FIELDS, STUDY_FIELD) if k in t}
    try:
        record = blank_record(t, "")
        record.update(_solve(t, verbose))
    except Exception as e:  # recorded, not raised: a retry would give the same error
        record = blank_record(t, f"error: {type(e).__name__}: {e}"[:300])
    v = versions()
    if "crocoddyl" in record:
        v["crocoddyl"] = record.pop("crocoddyl")
    record.update(host=socket.gethostname(), pid=os.getpid(), versions=v, started=started,
                  finished=time.time())
    return record


def blank_record(t: dict, status: str) -> dict:
    """The record of a task that produced no numbers: its description, key and ``status``."""
    record = dict({k: t[k] for k in TASK_FIELDS}, key=task_key(t), study=t.get(STUDY_FIELD),
                  **dict.fromkeys(OUTCOME_FIELDS + WHERE_FIELDS))
    record.update(grad_norms=[], costs=[], status=status, converged=False)
    return record


def _solve(t, verbose):
    t0 = time.perf_counter()
    P = build_problem(t)
    xs, us = initial_guess(t, P)
    if t["solver"] == "crocoddyl":
        return _solve_crocoddyl(t, P, xs, us, time.perf_counter() - t0)
    settings = dict(t["settings"], method=t["method"], globalization=t["globalization"],
                    shooting=t["shooting"])
    # the globalization changes only the values passed to the compiled kernels, not which
    # kernels run: one warm-up serves them all (it was 11% of a quick study's work)
    config = (t["problem"], t["backend"], t["method"], t["shooting"],
              tuple(sorted(t["settings"].items())))
    if config not in _WARM:
        # one iteration as configured, and one with the exact model from the start: a
        # safeguarded solve's first iteration is Gauss-Newton, so the kernels of its later exact
        # iterations (FD-SO, the contracted backward pass) would load inside the timed solve
        for warm in ({}, {"globalization": "state-shift"}):
            w = ddp.solve(P, xs, us, max_iter=1, **dict(settings, **warm))
        # and the cost derivatives alone, which the safeguard evaluates when an exact pass fails
        P.cost_derivatives(w.xs, w.us, "gauss-newton", P.calc_diff(w.xs, w.us).step.forces)
        _WARM.add(config)
    setup = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = ddp.solve(P, xs, us, max_iter=t["max_iter"], verbose=verbose, **settings)
    wall = time.perf_counter() - t0
    h = sol.history
    return dict(nv=P.nv, status=sol.status, converged=bool(sol.converged),
                iterations=int(sol.iterations), cost=float(sol.cost), time_s=wall,
                t_setup=setup, t_derivatives=sum(x.t_derivatives for x in h),
                t_backward=sum(x.t_backward for x in h), t_forward=sum(x.t_forward for x in h),
                tail=tail_ratio(sol.grad_norms), exact_iterations=int(sum(x.exact for x in h)),
                grad_norms=[float(g) for g in sol.grad_norms],
                costs=[float(c) for c in sol.costs])


def _solve_crocoddyl(t, P, xs, us, setup):
    if crocoddyl_solvers.python() is None:
        return dict(nv=P.nv, status=f"{UNAVAILABLE}: SODDP_CROCODDYL_PYTHON is not set",
                    converged=False)
    label = f"Crocoddyl {t['method'].upper()}"
    # as ours: an untimed one-iteration solve, then one solve, recorded and timed
    s = crocoddyl_solvers.spec(P, us, t["max_iter"], repeats=0, xs=xs, solvers=(label,))
    if s is None:
        return dict(nv=P.nv, status=f"{UNAVAILABLE}: not writable in Crocoddyl", converged=False)
    out = crocoddyl_solvers.run(s, log=lambda *a: None, shared_machine=True)
    if label not in out:
        return dict(nv=P.nv, status="error: Crocoddyl could not build or solve it",
                    converged=False)
    x = out[label]
    return dict(nv=P.nv, status="converged" if x["converged"] else "not converged",
                converged=bool(x["converged"]), iterations=int(x["iterations"]),
                cost=float(x["cost"]), time_s=float(x["total_s"]), t_setup=setup,
                costs=[float(c) for c in x["costs"]], crocoddyl=x["version"])


_VERSIONS = {}


def versions() -> dict:
    """The versions of Python, the platform and the packages a result depends on."""
    if not _VERSIONS:
        _VERSIONS.update(python=platform.python_version(), platform=platform.platform())
        for p in _PACKAGES:
            try:
                _VERSIONS[p] = metadata.version(p)
            except metadata.PackageNotFoundError:
                _VERSIONS[p] = ""
    return dict(_VERSIONS)
