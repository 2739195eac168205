"""Compiled kernels (numba, ``cache=True``).

Cache guard: numba keys a cached function on the timestamp of its *own* source file only, so a
kernel that calls (and inlines) a function from another file keeps stale machine code when only
that other file changes — a silent wrong answer after an edit or an upgrade.  On import we hash
all kernel sources and, when the hash differs from the one recorded beside the cache, delete this
package's cache files so that everything is recompiled consistently.  :func:`guard_cache` does the
same for another compiled package that calls these kernels (``ddp.kernels``): its hash covers its
own sources and these.
"""

import hashlib
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_STAMP = "soddp-kernels.sha256"


def _source_hash(*folders) -> str:
    h = hashlib.sha256()
    for folder in (_HERE, *folders):
        for f in sorted(Path(folder).glob("*.py")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()


def _cache_dirs(here=_HERE):
    """Every directory numba may use for this package's cache files."""
    try:
        from numba.core import caching
    except ImportError:  # pragma: no cover
        return []

    def probe():  # only its code object is used by the locators
        pass

    dirs = []
    src = str(next(iter(sorted(Path(here).glob("*.py")))))
    for name in ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator"):
        cls = getattr(caching, name, None)
        try:
            loc = cls.from_function(probe, src) if cls is not None else None
        except Exception:  # noqa: BLE001 - a locator that does not apply here
            loc = None
        if loc is not None:
            dirs.append(Path(loc.get_cache_path()))
    return dirs


def guard_cache(here=_HERE):
    """Drop the numba cache files of the compiled package in folder ``here`` when its sources or
    these kernels' sources changed since they were cached (see module docstring)."""
    here = Path(here).resolve()
    digest = _source_hash() if here == _HERE else _source_hash(here)
    modules = {f.stem for f in here.glob("*.py")}
    for d in _cache_dirs(here):
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
    file exists); True under another numba, where this cannot be told."""
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


if os.environ.get("SODDP_NO_CACHE_GUARD") != "1":
    guard_cache()
