"""The numba cache guard drops stale cache files when any kernel source changes."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_stale_cache_is_dropped(tmp_path):
    code = ("import dynamics.kernels as k; d = k._cache_dirs()[0]; "
            "print(d); print((d / k._STAMP).read_text().strip() == k._source_hash())")
    d, ok = _run(code, tmp_path).split()
    assert ok == "True"
    d = Path(d)
    fake = d / "second_order.idsva_so_point-1.py311.nbi"
    fake.write_text("stale")
    other = d / "someone_else.f-1.py311.nbi"
    other.write_text("not ours")
    (d / "soddp-kernels.sha256").write_text("an old hash\n")
    assert _run(code, tmp_path).split()[1] == "True"
    assert not fake.exists() and other.exists()
