"""Bad input never crashes the process: tests/fuzz_cases.py feeds wrong shapes, dtypes, NaN,
inf and non-contiguous arrays through the public entry points (dynamics functions, contact
dynamics, problems, solve, rollouts, costs, derivatives) and a user's Dynamics hook, in a
subprocess (a crash in compiled code fails this test instead of killing pytest)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
MUST_RAISE = ("short", "3d", "complex", "object", "str", "empty")


@pytest.fixture(scope="module")
def results():
    run = subprocess.run([sys.executable, str(HERE / "fuzz_cases.py")], capture_output=True,
                         text=True, timeout=900, cwd=HERE)
    assert run.returncode == 0, f"the process died (exit code {run.returncode}):\n" \
                                f"{run.stderr[-3000:]}"
    return json.loads(run.stdout)


def _kind(name):
    return name.rsplit("[", 1)[1].rstrip("]").split(":")[-1]


def test_every_case_ends_in_a_named_error_or_a_result(results):
    assert len(results) > 300
    other = {k: v for k, v in results.items() if not v.startswith(
        ("ok", "builtins.ValueError", "builtins.TypeError"))}
    assert not other, other


def test_wrong_shapes_and_dtypes_are_refused_and_name_the_argument(results):
    accepted = [k for k, v in results.items() if _kind(k) in MUST_RAISE and v.startswith("ok")]
    assert not accepted, accepted
    for k, v in results.items():
        if _kind(k) in MUST_RAISE and not k.startswith("user."):
            arg = k.split("[")[1].split(":")[0]
            named = {"us": "us", "xs": "xs", "x0": "x0", "q": "q", "0": "q", "1": "v"}.get(arg)
            assert named is None or v.split(": ", 1)[1].startswith(named) or arg == "2", (k, v)


def test_strided_arrays_and_lists_are_accepted(results):
    refused = [k for k, v in results.items()
               if _kind(k) in ("strided", "list") and not k.startswith("user.")
               and not v.startswith("ok")]
    assert not refused, refused


def test_non_finite_values_give_a_status_or_a_named_error(results):
    for k, v in results.items():
        if _kind(k) not in ("nan", "inf"):
            continue
        if k.startswith("solve[") or (k.startswith("user.") and ".a[" not in k):
            assert v in ("ok: diverged",) or v.startswith("builtins.ValueError"), (k, v)
        elif not k.startswith(("rollout", "cost", "calc_diff", "user.")):
            assert "expected finite values" in v, (k, v)
