"""What a new user waits for (``soddp bench first-run``): the README's main command on an empty
numba cache and again with the cache it left, a HyQ solve on an empty cache, and the README's
examples of derivatives (rigid bodies, then contacts) on an empty cache ->
``results/first_run.{csv,md}``.

Each command runs in a fresh process, in a temporary folder (its results go there), with
``NUMBA_CACHE_DIR`` pointing at a new empty folder: the cold runs compile every kernel they
call, as on a new machine.  Python's bytecode is that of a fresh install with pip's
``--no-compile`` (the README's commands): ``PYTHONPYCACHEPREFIX`` is a new empty folder too, so
that a cold run compiles every module it imports to bytecode and writes it, and the warm run
reads it, whatever the caller's environment (``PYTHONDONTWRITEBYTECODE`` is dropped: with it,
every run compiled numba's, matplotlib's and numpy's modules again, and a warm
``soddp compare ur3`` took 3.4-3.7 s instead of 2.0 s).  The targets are those of the first-run issue: the main command
cold in at most 60 s and warm in at most 3 s, ``soddp solve hyq`` cold in at most 90 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..output import write_table

#: (label, soddp arguments or ("readme", a name the README's code block calls), cache: "cold" or
#: the label of an earlier run whose cache it reuses, target in s or None)
RUNS = (("soddp compare ur3 (README main command), cold", ["compare", "ur3"], "cold", 60.0),
        ("soddp compare ur3, warm", ["compare", "ur3"], "soddp compare ur3 (README main "
         "command), cold", 3.0),
        ("soddp solve hyq, cold", ["solve", "hyq"], "cold", 90.0),
        ("README's derivative example (ATLAS: IDSVA-SO, FDSVA-SO, FDSVA), cold",
         ("readme", "fd_second_derivatives"), "cold", None),
        ("README's contact example (HyQ: contact dynamics, derivatives, impact), cold",
         ("readme", "constrained_second_derivatives"), "cold", None))

#: what the README's code blocks take from the one before (its first block imports them)
_README_IMPORTS = "import numpy as np, pinocchio as pin\nimport ddp, dynamics as dyn\n" \
                  "from dynamics import robots\n"


def _command(args):
    """The command line of a run: soddp's, or Python on the README's code block that calls
    ``args[1]`` (None when the README is not beside the package: an installed copy)."""
    if args[0] != "readme":
        return [sys.executable, "-m", "problems.cli", *args]
    readme = Path(__file__).resolve().parents[2] / "README.md"
    if not readme.is_file():
        return None
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), re.S)
    code = [b for b in blocks if f"{args[1]}(" in b][0]
    return [sys.executable, "-c", _README_IMPORTS + code]


COLUMNS = [("run", "run"), ("seconds", "wall time [s]"), ("target", "target [s]"),
           ("met", "met"), ("status", "exit code")]


def run_first_run(log=print, runs=RUNS):
    rows, caches = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, args, cache, target in runs:
            command = _command(args)
            if command is None:
                log(f"first run: {label}: no README beside the package, left out")
                continue
            if cache == "cold":
                cache_dir = Path(tmp) / f"cache{len(caches)}"
                (cache_dir / "bytecode").mkdir(parents=True)
            else:
                cache_dir = caches[cache]
            caches[label] = cache_dir
            work = Path(tmp) / f"work{len(rows)}"
            work.mkdir()
            env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir / "numba"),
                       PYTHONPYCACHEPREFIX=str(cache_dir / "bytecode"))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            log(f"first run: {label} ...")
            t0 = time.perf_counter()
            r = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
            wall = time.perf_counter() - t0
            met = "" if target is None else \
                "yes" if wall <= target and r.returncode == 0 else "no"
            rows.append(dict(run=label, seconds=wall, target=target, met=met,
                             status=r.returncode))
            log(f"  {wall:.1f} s" + ("" if target is None else f" (target {target:g} s)")
                + f", exit code {r.returncode}")
    notes = ["each run in a fresh process and folder; cold: NUMBA_CACHE_DIR a new empty folder "
             "(every kernel the command calls compiles) and Python's bytecode as after pip's "
             "--no-compile (PYTHONPYCACHEPREFIX a new empty folder: every module imported is "
             "compiled and written); warm: the caches the cold run left",
             f"{os.cpu_count()} cores; the time includes starting Python and importing the "
             "packages (about 2 s)",
             "on two cores or more a second process compiles the solver's passes while the "
             "command compiles the knots' derivatives, the closed-loop rollout with its cost "
             "and, for compare, the CasADi and finite-difference backends' kernels "
             "(ddp.warm_up)"]
    write_table(rows, "first_run", "What a new user waits for: first and second runs", COLUMNS,
                notes, log)
    return rows
