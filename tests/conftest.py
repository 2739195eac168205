"""Fixtures: the named robots, the random trees, and both together (helpers in ``helpers.py``)."""

import pytest

from dynamics import robots
from helpers import ROBOTS, SO_CASES, TREES, build, spec_id, tree_id


def pytest_collection_modifyitems(items):
    """Tests marked ``last`` run after the others (with pytest-xdist: are handed out last)."""
    items.sort(key=lambda item: item.get_closest_marker("last") is not None)


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
