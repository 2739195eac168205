"""Crocoddyl's FDDP and DDP on our example problems, as reference rows for the comparisons.

Crocoddyl needs its own Pinocchio build, so the problems are written in Crocoddyl in standalone
scripts beside this module (they import nothing from soddp) and run by the Python named in the
environment variable ``SODDP_CROCODDYL_PYTHON``.  (This module is not called ``crocoddyl.py``:
a script run from this folder would import it instead of the real package.)
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

from dynamics import robots

#: problem name -> the script that writes it in Crocoddyl
SCRIPTS = {"ur3": Path(__file__).with_name("crocoddyl_ur3.py")}


def python() -> str | None:
    """The Python with Crocoddyl (``SODDP_CROCODDYL_PYTHON``), or None when not configured."""
    return os.environ.get("SODDP_CROCODDYL_PYTHON") or None


def rows(name, log=print):
    """Table rows of Crocoddyl's FDDP and DDP on problem ``name``: [] when no script writes that
    problem in Crocoddyl or no Crocoddyl Python is configured."""
    py = python()
    if name not in SCRIPTS or not py:
        return []
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "croc.json"
        r = subprocess.run([py, str(SCRIPTS[name]), str(robots.load(name).urdf_path), "--json",
                            str(out)], capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or not out.is_file():
            log(f"  (Crocoddyl run failed: {r.stderr.strip()[-300:]})")
            return []
        res = json.loads(out.read_text())
    table = []
    for label, x in res.items():
        table.append(dict(problem=name, nv=robots.load(name).nv, run=f"{label} {x['version']}",
                          status="converged" if x["converged"] else "not converged",
                          iterations=x["iterations"], cost=x["cost"],
                          ms_per_iter=1e3 * x["total_s"] / max(x["iterations"], 1),
                          total_s=x["total_s"]))
        log(f"  {label:26s} {table[-1]['status']:18s} {x['iterations']:4d} it  cost "
            f"{x['cost']:.9g}  {x['total_s']:7.2f} s")
    return table
