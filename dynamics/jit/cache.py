"""numba's cache of the compiled packages: a guard against stale machine code, and whether a
kernel is cached (for the one line a first run prints before it compiles).

Cache guard: numba keys a cached function on the timestamp of its *own* source file only, so a
kernel that calls (and inlines) a function from another file keeps stale machine code when only
that other file changes: a silent wrong answer after an edit or an upgrade.  On import, each
compiled package (:mod:`dynamics.jit`, :mod:`dynamics.kernels`, :mod:`ddp.kernels`) hashes its
sources and those of the packages it compiles in (its subpackages included) and, when the hash
differs from the one recorded beside its cache, deletes its cache files, so that everything is
recompiled consistently.  ``SODDP_NO_CACHE_GUARD=1`` turns the guard off.
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

_STAMP = "soddp-kernels.sha256"


def _packages(folder: Path) -> list:
    """``folder`` and its subfolders that hold Python modules (the package and its
    subpackages), sorted."""
    return sorted({p.parent for p in folder.rglob("*.py") if "__pycache__" not in p.parts})


def source_hash(*folders) -> str:
    """A hash of every Python source under ``folders`` (their relative paths and contents)."""
    h = hashlib.sha256()
    for folder in folders:
        folder = Path(folder).resolve()
        for f in sorted(folder.rglob("*.py")):
            if "__pycache__" in f.parts:
                continue
            h.update(str(f.relative_to(folder)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def cache_dirs(package: Path) -> list:
    """Every directory numba may use for the cache files of the modules in folder
    ``package``."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover
        return []

    def probe():  # only its code object is used by the locators
        pass

    dirs = []
    src = str(next(iter(sorted(Path(package).glob("*.py")))))
    for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"):
        cls = getattr(caching, name, None)
        try:
            loc = cls.from_function(probe, src) if cls is not None else None
        except Exception:  # noqa: BLE001 - a locator that does not apply here
            loc = None
        if loc is not None:
            dirs.append(Path(loc.get_cache_path()))
    return dirs


def guard_cache(folder, *compiled_in) -> None:
    """Drop the numba cache files of the compiled package in ``folder`` (and its subpackages)
    when its sources or those of the packages ``compiled_in`` (folders whose kernels it calls
    and inlines) changed since they were cached (module docstring)."""
    if os.environ.get("SODDP_NO_CACHE_GUARD") == "1":
        return
    folder = Path(folder).resolve()
    digest = source_hash(*compiled_in, folder)
    for package in _packages(folder):
        modules = {f.stem for f in package.glob("*.py")}
        for d in cache_dirs(package):
            stamp = d / _STAMP
            try:
                if stamp.is_file() and stamp.read_text().strip() == digest:
                    continue
                if d.is_dir():
                    for f in d.iterdir():
                        if f.suffix in (".nbi", ".nbc") and f.name.split(".", 1)[0] in modules:
                            f.unlink()
                d.mkdir(parents=True, exist_ok=True)
                stamp.write_text(digest + "\n")
            except OSError:  # read-only location: numba will not cache there either
                pass


_NOTICED = set()  # what a first-compile notice was printed for in this process


def is_cached(dispatcher) -> bool:
    """Whether ``dispatcher`` (a compiled kernel) has machine code in numba's cache (its index
    file exists); True under a numba whose cache this cannot read."""
    try:
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:  # another numba
        return True


def _duration(seconds: float) -> str:
    """``seconds`` to the nearest 10 s, or above 90 s to the nearest half minute."""
    if seconds < 90:
        return f"{max(10, round(seconds, -1)):.0f} s"
    return f"{round(seconds / 30) / 2:g} min"


def compile_notice(dispatcher, what: str, seconds: float) -> bool:
    """Print one line to stderr when ``dispatcher`` (a compiled kernel) has no machine code in
    numba's cache yet, so that its first call will compile it: what compiles and about how long
    it takes (``seconds``, measured on 2 cores).  Once per ``what`` and process; True when it
    printed."""
    if what in _NOTICED:
        return False
    _NOTICED.add(what)
    cold = not is_cached(dispatcher)
    if cold:
        print(f"compiling {what} for the first run on this machine (about "
              f"{_duration(seconds)} on 2 cores; numba caches the machine code, so later runs "
              "start in about a second)", file=sys.stderr, flush=True)
    return cold
