"""Crocoddyl's own gait examples (ANYmal's five gaits, Talos's legs walking) beside ours: the same
optimum from Crocoddyl's start.  Crocoddyl runs in its own environment
(``SODDP_CROCODDYL_PYTHON``); without it these tests are skipped."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ddp
from problems.gaits import CROCODDYL_EXAMPLES, crocoddyl_example
from problems.reference.crocoddyl_solvers import python

SCRIPT = Path(__file__).resolve().parents[1] / "problems" / "reference" / "crocoddyl_examples.py"


def crocoddyls(name):
    robot, gait, params = CROCODDYL_EXAMPLES[name]
    out = subprocess.run([python(), str(SCRIPT), robot, gait, json.dumps(params)],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(python() is None, reason="no Crocoddyl environment (SODDP_CROCODDYL_PYTHON)")
@pytest.mark.parametrize("name", list(CROCODDYL_EXAMPLES))
def test_our_gait_reaches_the_optimum_of_crocoddyls_own_example(name):
    """Crocoddyl's FDDP on its example, and our DDP (exact Hessians) on our builder's problem,
    both from Crocoddyl's start (x0 at every knot, quasi-static controls, multiple shooting):
    the same x0 and horizon, the same optimal cost to 1e-9 relative, and our DDP (default
    tolerance) in at most FDDP's iterations (th_stop 1e-10), but on ANYmal's walk, where the
    exact terms taken after partial Gauss-Newton steps cost it 2 more."""
    theirs = crocoddyls(name)
    P = crocoddyl_example(name)
    assert P.T == theirs["T"]
    np.testing.assert_allclose(P.x0, theirs["x0"], atol=1e-12)
    xs = np.tile(P.x0, (P.T + 1, 1))
    settings = ddp.SolverSettings(shooting="multiple", max_iter=300)
    sol = ddp.solve(P, xs=xs, us=P.quasi_static(xs), settings=settings)
    assert theirs["converged"] and sol.status == "converged", (theirs, sol.status)
    assert abs(sol.cost - theirs["cost"]) <= 1e-9 * abs(theirs["cost"]), (sol.cost, theirs)
    # at most FDDP's iterations, except ANYmal's walk: 14 against 12 (in the closing note)
    assert sol.iterations <= theirs["iterations"] + (2 if name == "anymal-walking" else 0), (
        sol.iterations, theirs["iterations"])
    print(f"{name}: ours {sol.cost!r} in {sol.iterations} it, Crocoddyl FDDP "
          f"{theirs['cost']!r} in {theirs['iterations']}", file=sys.stderr)


@pytest.mark.skipif(python() is None, reason="no Crocoddyl environment (SODDP_CROCODDYL_PYTHON)")
@pytest.mark.parametrize("name", ["hyq-walk", "talos-walk"])
def test_our_problem_rebuilt_in_crocoddyl_is_crocoddyls_example_to_its_derivatives(name, tmp_path):
    """The Crocoddyl rows of our benchmarks solve our problem rebuilt in Crocoddyl
    (``crocoddyl_solvers.spec``).  For a gait that is Crocoddyl's own example, the rebuilt
    problem's derivatives at the start equal the example's to 1e-9: a barrier written as
    Crocoddyl's ActivationModelWeightedQuadraticBarrier had a Hessian 1/sqrt(10) of the
    example's on every friction cone (that activation's calcDiff takes its weights once), and
    FDDP needed 64 iterations on HyQ walking instead of the example's 10."""
    from problems.bench.solver import OWN_EXAMPLES
    from problems.examples import get, initial_guess
    from problems.reference import crocoddyl_solvers

    P = get(name)
    xs, us = initial_guess(P, "crocoddyl")
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(crocoddyl_solvers.spec(P, us, 10, 0, xs)))
    robot, gait, params = OWN_EXAMPLES[name]
    out = subprocess.run([python(), str(SCRIPT), robot, gait, json.dumps(params), "--against",
                          str(spec)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    worst = json.loads(out.stdout.strip().splitlines()[-1])
    assert max(worst.values()) < 1e-9, worst
