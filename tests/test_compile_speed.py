"""What makes a cold compile shorter leaves the kernels as they were: callees without a Python
entry (``njit(callee=True)``) and numba's inliner without its quadratic copies of a scope
(:mod:`dynamics.jit.inliner`)."""

import ast
import copy
import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core import ir

import ddp.kernels
import dynamics.jit
import dynamics.kernels
from dynamics.jit import CalleeDispatcher, njit
from dynamics.jit import inliner

ROOT = Path(__file__).resolve().parent.parent
_PACKAGES = (dynamics.jit, dynamics.kernels, ddp.kernels)


def _kernels():
    """{name: dispatcher} of every kernel module's own numba kernels."""
    from numba.core.registry import CPUDispatcher
    out = {}
    for pkg in _PACKAGES:
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            mod = importlib.import_module(info.name)
            for name, f in vars(mod).items():
                if isinstance(f, CPUDispatcher) and f.__module__ == mod.__name__:
                    out[name] = f
    return out


def _named_by_python() -> dict:
    """{name: [file:line, ...]} of the names that Python code (outside the bodies of njit
    functions, and not in imports) uses, in every source file of the repository."""
    def jitted(fn):
        for d in fn.decorator_list:
            d = d.func if isinstance(d, ast.Call) else d
            if getattr(d, "id", getattr(d, "attr", "")) == "njit":
                return True
        return False

    names = {}

    class Uses(ast.NodeVisitor):
        def __init__(self, where):
            self.where, self.depth = where, 0

        def visit_FunctionDef(self, node):
            for d in node.decorator_list:
                self.visit(d)
            j = jitted(node)
            self.depth += j
            for stmt in node.body:
                self.visit(stmt)
            self.depth -= j

        def visit_Import(self, node):
            pass

        visit_ImportFrom = visit_Import

        def _use(self, name, node):
            if not self.depth:
                names.setdefault(name, []).append(f"{self.where}:{node.lineno}")

        def visit_Name(self, node):
            self._use(node.id, node)

        def visit_Attribute(self, node):
            self._use(node.attr, node)
            self.generic_visit(node)

    for folder in ("dynamics", "ddp", "problems", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            Uses(path.relative_to(ROOT)).visit(ast.parse(path.read_text()))
    return names


def test_callees_are_the_kernels_python_never_names():
    """A kernel is a callee (no Python entry) exactly when no Python code names it: a callee
    called from Python would raise, and a kernel only other kernels call would have numba build,
    optimize and emit an entry that nothing uses.  Kernels that numba inlines itself
    (``inline="always"``) are never compiled alone and are left out."""
    named = _named_by_python()
    kernels = {n: f for n, f in _kernels().items() if f.targetoptions.get("inline") != "always"}
    assert len(kernels) > 200
    callees = {n for n, f in kernels.items() if isinstance(f, CalleeDispatcher)}
    called_from_python = {n: named[n][:3] for n in callees if n in named}
    assert not called_from_python, called_from_python
    unmarked = sorted(n for n in kernels if n not in named and n not in callees)
    assert not unmarked, f"mark these njit(callee=True): {unmarked}"
    assert len(callees) > 150


def test_a_callee_serves_kernels_and_refuses_python():
    def twice(x):
        return 2.0 * x

    double = njit(callee=True)(twice)

    @njit
    def caller(x):
        return double(x) + 1.0

    assert caller(3.0) == 7.0
    assert caller.signatures and not double.targetoptions.get("cache")
    with pytest.raises(TypeError, match=r"twice is called by compiled kernels only"):
        double(3.0)
    assert double.py_func(3.0) == 6.0
    with pytest.raises(ValueError, match="expected no signatures"):
        njit("float64(float64)", callee=True)(twice)


def test_inlined_scopes_are_copied_once_per_inlining():
    """Inside one inlining a scope copied again (by another block) gives its first copy, unless
    it or the copy changed since; outside, every copy is a new one, as numba makes them."""
    assert inliner.APPLIED
    scope = ir.Scope(None, ir.Loc("f.py", 1))
    x = scope.define("x", ir.Loc("f.py", 1))
    outside = copy.deepcopy(x).scope, copy.deepcopy(x).scope
    assert outside[0] is not outside[1] and outside[0] is not scope
    inliner._COPIES.append({})
    try:
        first, again = copy.deepcopy(x).scope, copy.deepcopy(x).scope
        assert first is again and first is not scope
        assert first.localvars._con.keys() == scope.localvars._con.keys()
        first.redefine("y", ir.Loc("f.py", 2))  # the inliner renames into its copy
        assert copy.deepcopy(x).scope is not first
        scope.define("z", ir.Loc("f.py", 3))
        assert "z" in copy.deepcopy(x).scope.localvars._con
    finally:
        inliner._COPIES.pop()


_LLVM = """
import sys, types
if sys.argv[1] == "numba":  # numba's own inliner: the repair never imported
    sys.modules["dynamics.jit.inliner"] = types.ModuleType("inliner")
from numba.core import types as nt
from dynamics.kernels import kinematics as k
i64, f8 = nt.int64, nt.float64
a1i, a1, a2 = nt.Array(i64, 1, "C"), nt.Array(f8, 1, "C"), nt.Array(f8, 2, "C")
sig = (a1i, a1, a2, a2, a2, i64, i64)
k.integrate_chunk.compile(sig)
print(k.integrate_chunk.inspect_llvm(sig))
"""


def test_the_repaired_inliner_gives_the_same_code(tmp_path):
    """The kernel that inlines the most (``integrate_point``: every joint type's exponential,
    with numba's inliner) compiles to the same LLVM IR with the repair and without it."""
    out = {}
    for which in ("numba", "repaired"):
        env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / which))
        out[which] = subprocess.run([sys.executable, "-c", _LLVM, which], env=env, check=True,
                                    capture_output=True, text=True).stdout
    assert len(out["numba"]) > 10_000
    assert out["repaired"] == out["numba"]


_PLAIN = """
import numpy as np
import dynamics
from dynamics.jit import CalleeDispatcher, inliner, numba_support
from dynamics.kernels import spatial
assert not numba_support.PATCHES and not inliner.APPLIED
assert not isinstance(spatial.dot6, CalleeDispatcher)  # a plain numba dispatcher
m = dynamics.robots.load("ur3")
rng = np.random.default_rng(0)
q = np.array([m.random_configuration(rng) for _ in range(3)])
v, a = rng.normal(size=(2, 3, m.nv))
np.save(__import__("sys").argv[1], dynamics.rnea(m, q, v, a))
"""


def test_the_kernels_run_without_the_patches_of_numba(tmp_path):
    """With ``SODDP_NUMBA_PATCHES=0`` (or under an untested numba) nothing of numba's internals
    is patched: every kernel is plain ``numba.njit`` (callees too), and the kernels give the
    same numbers (RNEA on UR3, whose call tree inlines with numba's own inliner)."""
    out = tmp_path / "tau.npy"
    env = dict(os.environ, PYTHONPATH=str(ROOT), NUMBA_CACHE_DIR=str(tmp_path / "cache"),
               SODDP_NUMBA_PATCHES="0")
    subprocess.run([sys.executable, "-c", _PLAIN, str(out)], env=env, check=True,
                   capture_output=True, text=True)
    import numpy as np

    import dynamics
    m = dynamics.robots.load("ur3")
    rng = np.random.default_rng(0)
    q = np.array([m.random_configuration(rng) for _ in range(3)])
    v, a = rng.normal(size=(2, 3, m.nv))
    np.testing.assert_allclose(np.load(out), dynamics.rnea(m, q, v, a), rtol=0, atol=1e-12)
