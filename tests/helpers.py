"""Helpers shared by the tests: the named robots, random trees covering every joint type, seeded
random states and the relative error used throughout.  (Fixtures live in ``conftest.py``.)"""

import numpy as np
import pinocchio as pin
import pytest

import ddp
from dynamics import robots

ROBOTS = ("pendulum", "double_pendulum", "ur3", "hyq", "atlas", "talos")

#: (n_bodies, floating_base, seed): every supported joint type appears, fixed and floating;
#: every tree but seed 0's has rotor inertias (armature) on its DoFs
TREES = [(8, False, s) for s in range(6)] + [(8, True, s) for s in range(6)] + [(1, True, 0)]


def tree_id(spec):
    n, fb, s = spec
    return f"tree{n}-{'float' if fb else 'fixed'}-{s}"


def build(spec):
    """A model from a spec: a robot name, or (n_bodies, floating_base, seed) for a random tree."""
    if isinstance(spec, str):
        return robots.load(spec)
    n, fb, s = spec
    return robots.random_tree(n, floating_base=fb, seed=s, branching=0.4,
                              armature=0.0 if s == 0 else 0.5)


def spec_id(spec):
    return spec if isinstance(spec, str) else tree_id(spec)


def random_state(model, seed=0):
    """(q, v, a, tau) drawn with a fixed seed."""
    rng = np.random.default_rng(seed)
    q = model.random_configuration(rng)
    v, a, tau = rng.normal(size=(3, model.nv))
    return q, v, a, tau


def rel_err(x, ref):
    """max abs error / max(1, max |ref|)."""
    x, ref = np.asarray(x), np.asarray(ref)
    return float(np.max(np.abs(x - ref)) / max(1.0, float(np.max(np.abs(ref)))))


#: robots and trees for the second-order reference tests; ATLAS and Talos marked slow
SO_CASES = [pytest.param(s, marks=pytest.mark.slow) if s in ("atlas", "talos") else s
            for s in ROBOTS] + TREES


def with_frame(m, name="tip"):
    """The model with an operational frame at an arbitrary placement on its last joint."""
    if not m.pin_model.existFrame(name):
        M = pin.SE3(pin.exp3(np.array([0.3, 0.2, -0.4])), np.array([0.1, -0.2, 0.3]))
        m.pin_model.addFrame(pin.Frame(name, m.njoints - 1, M, pin.FrameType.OP_FRAME))
    return m


class Upright(ddp.ResidualCost):
    """A user residual written in CasADi: [sin, 1 - cos] of the first configuration coordinate."""

    def __init__(self, m):
        super().__init__(m.nq, m.nv, 0, 2.0, 2, "Upright")

    def residual(self, q, dq, v, u):
        import casadi

        th = q[0] + dq[0]
        return casadi.vertcat(casadi.sin(th), 1 - casadi.cos(th))
