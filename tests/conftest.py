"""Fixtures: the named robots, the random trees, and both together (helpers in ``helpers.py``);
the two groups of tests that the README's test command runs side by side."""

import pytest

from dynamics import robots
from helpers import ROBOTS, SO_CASES, TREES, build, spec_id, tree_id


@pytest.fixture(params=ROBOTS)
def robot(request):
    return robots.load(request.param)


@pytest.fixture(params=TREES, ids=tree_id)
def tree(request):
    return build(request.param)


@pytest.fixture(params=list(ROBOTS) + TREES, ids=spec_id)
def any_model(request):
    """Every named robot and every random tree."""
    return build(request.param)


@pytest.fixture(params=SO_CASES, ids=spec_id)
def so_model(request):
    """Every named robot (ATLAS and Talos marked slow) and every random tree."""
    return build(request.param)


#: test files that never run the solver.  The README's test command runs them in one process
#: and the rest in another (pytest-xdist, ``-n 2 --dist loadgroup``): on a cold cache each
#: process then compiles kernels that the other does not need (the dynamics' derivatives and
#: contacts here, the solver's passes there) instead of both compiling the same ones at once.
#: A test of these files that solves says so with ``@pytest.mark.xdist_group("solver")``.  The
#: CasADi and finite-difference backends' tests run with the solver's: they share the protocol
#: path's batched kernels, which the solver's first test compiles (``test_cache_guard.py``).
DYNAMICS_FILES = {
    "test_contacts.py", "test_first_order.py", "test_forward_second_order.py",
    "test_higher_order.py", "test_inputs.py", "test_integrators.py", "test_lie.py",
    "test_linearization.py", "test_model.py", "test_second_order.py",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items):
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = "dynamics" if item.path.name in DYNAMICS_FILES else "solver"
            item.add_marker(pytest.mark.xdist_group(group))
