"""The C++ Pinocchio timing reference (``shared/tools/pinocchio-cpp-reference``), as a yardstick.

It times Pinocchio's own C++ ``rnea``, ``aba``, ``computeRNEADerivatives``,
``computeABADerivatives`` and ``ComputeRNEASecondOrderDerivatives`` single-threaded on this
machine; and, with our ``pinocchio_contacts_bench.cpp`` beside this module (built next to the
tool's binaries, from the same headers), ``constraintDynamics`` then
``computeConstraintDynamicsDerivatives``.  The tool lives outside the project
(``../shared/tools`` beside the checkout, or ``$SODDP_PINOCCHIO_REF``); its binaries are built
into ``$SODDP_PINOCCHIO_REF_BUILD`` (default ``~/.cache/soddp/pinocchio-cpp-reference``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
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
    fields = _timing_fields(r.stdout)
    return None if fields is None else {k: float(fields[k]) for k in _KEYS if k in fields}


def _timing_fields(stdout: str) -> dict | None:
    """The ``key=value`` fields of the ``TIMING`` line that the C++ programs print, or None."""
    for line in stdout.splitlines():
        if line.startswith("TIMING"):
            return dict(kv.split("=", 1) for kv in line.split()[1:])
    return None


CONTACT_BENCH = Path(__file__).with_name("pinocchio_contacts_bench.cpp")


def _contact_binary(log=print) -> Path | None:
    """The contact timing program, compiled on first use (header-only Pinocchio, as the tool's
    ``bench``: about 2 minutes); None when it cannot be."""
    exe = build_dir() / "pinocchio_contacts_bench"
    if not CONTACT_BENCH.is_file():  # an install without the source
        return exe if exe.is_file() else None
    if exe.is_file() and exe.stat().st_mtime >= CONTACT_BENCH.stat().st_mtime:
        return exe
    prefix = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix"
    if not (prefix / "include" / "pinocchio").is_dir():
        return None
    build_dir().mkdir(parents=True, exist_ok=True)
    log("C++ reference: compiling the contact timing program (about 2 min)...")
    cmd = ["g++", "-O3", "-march=native", "-std=c++17", "-w", "-DNDEBUG",
           "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
           f"-I{prefix / 'include'}", f"-I{prefix / 'include' / 'pinocchio' / 'deprecated'}",
           f"-I{prefix / 'include' / 'eigen3'}", str(CONTACT_BENCH), "-o", str(exe),
           f"-L{prefix / 'lib'}", f"-Wl,-rpath,{prefix / 'lib'}", "-lboost_serialization"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        log("C++ reference: the contact timing program did not compile:\n" + r.stderr[-1500:])
        return None
    return exe


def contact_timing(urdf, frames, surfaces=(), n: int = 2000, log=print) -> float | None:
    """Mean microseconds of one ``constraintDynamics`` + ``computeConstraintDynamicsDerivatives``
    in C++ (single thread) for point contacts at ``frames`` (CONTACT_3D), flat ones for those
    in ``surfaces`` (CONTACT_6D), LOCAL_WORLD_ALIGNED, on the URDF's model with a free-flyer
    root; None when the reference is not built."""
    if not is_built():
        return None
    exe = _contact_binary(log)
    if exe is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "model.txt"
        r = subprocess.run([str(build_dir() / "urdf2model"), str(urdf), "floating",
                            str(archive)], capture_output=True, text=True)
        if r.returncode != 0:
            return None
        kinds = "".join("6" if f in surfaces else "3" for f in frames)
        r = subprocess.run([str(exe), str(archive), ",".join(frames), kinds, str(n)],
                           capture_output=True, text=True)
    fields = _timing_fields(r.stdout)
    return None if fields is None else float(fields["derivs_us"])
