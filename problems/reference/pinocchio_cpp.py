"""The C++ Pinocchio timing reference (``shared/tools/pinocchio-cpp-reference``), as a yardstick.

It times Pinocchio's own C++ ``rnea``, ``aba``, ``computeRNEADerivatives``, ``computeABADerivatives``
and ``ComputeRNEASecondOrderDerivatives`` single-threaded on this machine.  The tool lives outside
the project (``../shared/tools`` beside the checkout, or ``$SODDP_PINOCCHIO_REF``); its binaries are
built into ``$SODDP_PINOCCHIO_REF_BUILD`` (default ``~/.cache/soddp/pinocchio-cpp-reference``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

_KEYS = ("rnea_us", "aba_us", "rnea_derivs_us", "aba_derivs_us", "rnea_so_derivs_us", "so_zero_us")


def tool_dir() -> Path | None:
    env = os.environ.get("SODDP_PINOCCHIO_REF")
    cands = [Path(env)] if env else []
    here = Path(__file__).resolve().parents[2]
    cands += [here.parent / "shared" / "tools" / "pinocchio-cpp-reference",
              here / "shared" / "tools" / "pinocchio-cpp-reference"]
    for c in cands:
        if (c / "reference.sh").is_file():
            return c
    return None


def build_dir() -> Path:
    env = os.environ.get("SODDP_PINOCCHIO_REF_BUILD")
    return Path(env) if env else Path.home() / ".cache" / "soddp" / "pinocchio-cpp-reference"


def is_built() -> bool:
    return (build_dir() / "bench").is_file() and (build_dir() / "urdf2model").is_file()


def build(log=print) -> bool:
    """Build the reference (a few minutes of C++ compiling).  Returns True on success."""
    tool = tool_dir()
    if tool is None:
        log("C++ reference: tool not found (expected ../shared/tools/pinocchio-cpp-reference or "
            "$SODDP_PINOCCHIO_REF)")
        return False
    build_dir().mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PY=sys.executable, BUILD_DIR=str(build_dir()))
    log(f"C++ reference: building into {build_dir()} (a few minutes)...")
    r = subprocess.run(["bash", str(tool / "build.sh")], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        log("C++ reference: build failed:\n" + r.stderr[-2000:])
        return False
    return True


def timings(urdf: str | Path, floating: bool, name: str, n: int = 1000) -> dict | None:
    """Mean microseconds per call of the C++ algorithms, or None if the reference is unavailable."""
    tool = tool_dir()
    if tool is None or not is_built():
        return None
    env = dict(os.environ, BUILD_DIR=str(build_dir()))
    r = subprocess.run(["bash", str(tool / "reference.sh"), str(urdf),
                        "floating" if floating else "fixed", name, str(n)],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        return None
    for line in r.stdout.splitlines():
        if line.startswith("TIMING"):
            fields = dict(kv.split("=", 1) for kv in line.split()[1:])
            return {k: float(fields[k]) for k in _KEYS if k in fields}
    return None
