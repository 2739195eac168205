"""What a new user waits for (``soddp bench first-run``): the README's main command on an empty
numba cache and again with the cache it left, and a HyQ solve on an empty cache ->
``results/first_run.{csv,md}``.

Each command runs in a fresh process, in a temporary folder (its results go there), with
``NUMBA_CACHE_DIR`` pointing at a new empty folder: the cold runs compile every kernel they
call, as on a new machine.  The targets are those of the first-run issue: the main command
cold in at most 60 s and warm in at most 3 s, ``soddp solve hyq`` cold in at most 90 s.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..output import write_table

#: (label, soddp arguments, cache: "cold" or the label of an earlier run whose cache it reuses,
#: target in s)
RUNS = (("soddp compare ur3 (README main command), cold", ["compare", "ur3"], "cold", 60.0),
        ("soddp compare ur3, warm", ["compare", "ur3"], "soddp compare ur3 (README main "
         "command), cold", 3.0),
        ("soddp solve hyq, cold", ["solve", "hyq"], "cold", 90.0))

COLUMNS = [("run", "run"), ("seconds", "wall time [s]"), ("target", "target [s]"),
           ("met", "met"), ("status", "exit code")]


def run_first_run(log=print, runs=RUNS):
    rows, caches = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, args, cache, target in runs:
            if cache == "cold":
                cache_dir = Path(tmp) / f"cache{len(caches)}"
                cache_dir.mkdir()
            else:
                cache_dir = caches[cache]
            caches[label] = cache_dir
            work = Path(tmp) / f"work{len(rows)}"
            work.mkdir()
            env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
            log(f"first run: {label} ...")
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "problems.cli", *args], cwd=work, env=env,
                               capture_output=True, text=True)
            wall = time.perf_counter() - t0
            rows.append(dict(run=label, seconds=wall, target=target,
                             met="yes" if wall <= target and r.returncode == 0 else "no",
                             status=r.returncode))
            log(f"  {wall:.1f} s (target {target:g} s), exit code {r.returncode}")
    notes = ["each run in a fresh process and folder; cold: NUMBA_CACHE_DIR a new empty folder "
             "(every kernel the command calls compiles); warm: the cache the cold run left",
             f"{os.cpu_count()} cores; the time includes starting Python and importing the "
             "packages (about 2 s)",
             "on two cores or more a second process compiles the solver's passes while the "
             "command compiles the knots' derivatives, the closed-loop rollout with its cost "
             "and, for compare, the CasADi and finite-difference backends' kernels "
             "(ddp.compile_aside)"]
    write_table(rows, "first_run", "What a new user waits for: first and second runs", COLUMNS,
                notes, log)
    return rows
