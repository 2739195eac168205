"""The result of a solve (:class:`Solution`), and its file: :meth:`Solution.save` and
:func:`load_solution` write and read one ``.npz`` holding the trajectory, the feedback policy,
the iteration history, the solver settings and a description of the problem (JSON inside the
archive: readable without this package)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .backward import Policy
from .callbacks import Iteration
from .settings import SolverSettings

#: the file format's version (a file of another version is refused, not misread)
FORMAT = 1


@dataclass
class Solution:
    """The result of :func:`ddp.solve`: trajectory, cost, status and the history of iterations.
    ``policy`` holds the feedback gains (k, K) of the last backward pass about (xs, us) of that
    iteration (None if no backward pass succeeded); ``settings`` the solver settings and
    ``problem`` a description of the problem (its class, sizes, horizon, time step and
    ``info``)."""

    xs: np.ndarray
    us: np.ndarray
    cost: float
    iterations: int
    converged: bool
    status: str
    message: str = ""
    history: list = field(default_factory=list)
    method: str = "ddp"
    policy: Policy | None = None
    settings: SolverSettings | None = None
    problem: dict = field(default_factory=dict)
    #: hard constraints: the multipliers of every constrained entry (flat, in the order of
    #: ``problem.constraints``; per knot: ``problem.constraints.split(multipliers)``), a warm
    #: start for the next solve (``ddp.solve(..., multipliers=)``); None without constraints
    multipliers: np.ndarray | None = None
    #: hard constraints: the largest violation (max abs) of the trajectory; 0 without
    violation: float = 0.0
    #: hard constraints: the augmented Lagrangian's last penalty
    penalty: float = 0.0

    @property
    def grad_norms(self):
        return np.array([h.grad_norm for h in self.history])

    @property
    def costs(self):
        return np.array([h.cost for h in self.history])

    def save(self, path) -> Path:
        """Write the solution to ``path`` (``.npz`` appended if missing); returns the path."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        arrays = dict(xs=np.asarray(self.xs), us=np.asarray(self.us))
        if self.multipliers is not None:
            arrays["multipliers"] = np.asarray(self.multipliers)
        if self.policy is not None:
            for k, v in dataclasses.asdict(self.policy).items():
                if isinstance(v, np.ndarray):
                    arrays[f"policy_{k}"] = v
        meta = dict(format=FORMAT, cost=float(self.cost), iterations=int(self.iterations),
                    converged=bool(self.converged), status=self.status, message=self.message,
                    method=self.method, problem=_jsonable(self.problem),
                    violation=float(self.violation), penalty=float(self.penalty),
                    settings=None if self.settings is None
                    else _jsonable(dataclasses.asdict(self.settings)),
                    history=[_jsonable(dataclasses.asdict(h)) for h in self.history],
                    policy=None if self.policy is None else
                    {k: _jsonable(v) for k, v in dataclasses.asdict(self.policy).items()
                     if not isinstance(v, np.ndarray)})
        np.savez(path, meta=np.array(json.dumps(meta)), **arrays)
        return path


def load_solution(path) -> Solution:
    """The :class:`Solution` saved at ``path`` by :meth:`Solution.save`."""
    with np.load(Path(path), allow_pickle=False) as f:
        meta = json.loads(str(f["meta"]))
        if meta.get("format") != FORMAT:
            raise ValueError(f"path: expected a solution file of format {FORMAT}; got "
                             f"{meta.get('format')!r}")
        arrays = {k: f[k] for k in f.files if k != "meta"}
    policy = None
    if meta["policy"] is not None:
        fields = {k[len("policy_"):]: v for k, v in arrays.items() if k.startswith("policy_")}
        policy = Policy(**fields, **meta["policy"])
    settings = None if meta["settings"] is None else SolverSettings(**meta["settings"])
    return Solution(arrays["xs"], arrays["us"], meta["cost"], meta["iterations"],
                    meta["converged"], meta["status"], meta["message"],
                    [Iteration(**h) for h in meta["history"]], meta["method"], policy, settings,
                    meta["problem"], arrays.get("multipliers"), meta.get("violation", 0.0),
                    meta.get("penalty", 0.0))


def _jsonable(x):
    """Plain JSON values: numpy scalars and arrays become numbers and lists, NaN and inf stay
    (Python's json writes them)."""
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return repr(x)
