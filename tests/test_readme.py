"""The README's Python examples run as written, in order, in one namespace (as a reader pastes
them), and what they print is what the README's comments say."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _blocks():
    return re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


def _printed_claims(code):
    """The comments after print(...) lines: what the README says they print."""
    return [m.group(1).split() for m in re.finditer(r"^print\(.*\)\s+#\s*(.+)$", code, re.M)]


def _matches(printed, claimed):
    """Each claimed token equals the printed one, numbers to the digits the README shows."""
    if len(printed) != len(claimed):
        return False
    for p, c in zip(printed, claimed):
        try:
            digits = len(c.split(".")[1]) if "." in c else 0
            if round(float(p), digits) != float(c):
                return False
        except ValueError:
            if p != c:
                return False
    return True


def test_the_readme_examples_run_and_print_what_they_say(tmp_path):
    code = "\n".join(_blocks())
    assert len(_blocks()) >= 4 and "ddp.solve" in code
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = [line.split() for line in run.stdout.splitlines() if line.strip()]
    for claim in _printed_claims(code):
        assert any(_matches(p, claim) for p in printed), (claim, run.stdout[-2000:])
    assert not any(tmp_path.iterdir()) or (tmp_path / "results").is_dir()
