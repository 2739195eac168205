"""The layout: imports point one way (the compile layer <- kernels <- algorithms <- backends <- ddp
<- problems), no
project import hides inside a function, and every module imports in a fresh interpreter in
dependency order."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dynamics", "ddp", "problems")

#: layers, lowest first: a module may import only from its own layer or a lower one
LAYERS = [
    ("dynamics.jit",),
    ("dynamics.kernels",),
    ("dynamics.inputs", "dynamics.results", "dynamics.lie", "dynamics.model", "dynamics.robots"),
    ("dynamics.symbolic", "dynamics.algorithms"),
    ("dynamics.protocol", "dynamics.casadi_backend", "dynamics.finite_difference",
     "dynamics.accuracy", "dynamics"),
    ("ddp",),
    ("problems",),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for pkg in PACKAGES for p in sorted((ROOT / pkg).rglob("*.py"))}


def _layer(module: str) -> int:
    best, depth = None, -1
    for k, prefixes in enumerate(LAYERS):
        for pre in prefixes:
            if (module == pre or module.startswith(pre + ".")) and len(pre) > depth:
                best, depth = k, len(pre)
    assert best is not None, f"{module} is in no layer of LAYERS"
    return best


def _imports(module: str, path: Path):
    """(imported project module, line, inside a function?) for every import of ``module``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
              for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] in PACKAGES:
                yield t, node.lineno, id(node) in nested


def _graph():
    return {m: sorted({t for t, _, _ in _imports(m, p) if t != m}) for m, p in MODULES.items()}


def test_no_project_import_inside_a_function():
    hidden = [f"{m}:{line} imports {t}" for m, p in MODULES.items()
              for t, line, inside in _imports(m, p) if inside]
    assert not hidden, hidden


def test_imports_point_one_way():
    wrong = [f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})"
             for m, deps in _graph().items() for t in deps if _layer(t) > _layer(m)]
    assert not wrong, wrong


def _dependency_order():
    graph, order, state = _graph(), [], {}

    def visit(m, stack):
        if state.get(m) == "done":
            return
        assert state.get(m) != "open", "import cycle: " + " -> ".join(stack + [m])
        state[m] = "open"
        for d in graph[m]:
            visit(d, stack + [m])
        state[m] = "done"
        order.append(m)

    for m in sorted(graph):
        visit(m, [])
    return order


def test_every_module_imports_in_dependency_order_in_a_fresh_interpreter():
    order = _dependency_order()
    assert order.index("dynamics.jit") < order.index("dynamics.kernels.packed_model") < \
        order.index("dynamics.algorithms")
    code = "import importlib\nfor m in %r:\n    importlib.import_module(m)\n" % order
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("package,forbidden", [("dynamics", ("ddp", "problems")),
                                                ("ddp", ("problems",))])
def test_a_lower_package_loads_no_higher_one(package, forbidden):
    code = (f"import sys, {package}\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(forbidden)!r}))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "[]", (r.stdout, r.stderr[-2000:])


#: the modules of ddp that may reach into dynamics.kernels: its own compiled kernels and the
#: compiled evaluation (every other module goes through the Dynamics protocol)
COMPILED_DOOR = ("ddp.kernels", "ddp.compiled")


def test_ddp_reaches_the_dynamics_kernels_only_through_its_compiled_door():
    wrong = [f"{m}:{line} imports {t}" for m, p in MODULES.items()
             if m.startswith("ddp") and not any(m == d or m.startswith(d + ".")
                                                for d in COMPILED_DOOR)
             for t, line, _ in _imports(m, p) if t.startswith("dynamics.kernels")]
    assert not wrong, wrong


def test_ddp_asks_the_dynamics_protocol_instead_of_probing_backends():
    """ddp reads what the Dynamics protocol declares (model, compiled, check_configuration, and
    the :class:`~dynamics.protocol.Capabilities` resolved once on the problem) instead of
    testing a backend's class or probing its attributes: no getattr or hasattr in ddp names a
    backend attribute (the protocol's methods and sub-protocols')."""
    import typing

    import dynamics.protocol as protocol
    names = {"model", "compiled", "nq", "nv"}
    for proto in (protocol.Dynamics, protocol.HoldsContacts, protocol.StepsPhases,
                  protocol.GivesContactForces, protocol.RollsOut):
        names |= set(typing.get_type_hints(proto)) | {
            n for n in vars(proto) if not n.startswith("_")}
    probes = []
    for m, p in MODULES.items():
        if not m.startswith("ddp"):
            continue
        for node in ast.walk(ast.parse(p.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                continue
            args = node.args
            if node.func.id == "isinstance" and len(args) == 2 and "Dynamics" in ast.unparse(
                    args[1]):
                probes.append(f"{m}:{node.lineno} {ast.unparse(node)}")
            if node.func.id in ("getattr", "hasattr") and len(args) >= 2 and isinstance(
                    args[1], ast.Constant) and args[1].value in names:
                probes.append(f"{m}:{node.lineno} {ast.unparse(node)}")
    assert {"contacts", "with_contacts", "rollout_function", "contact_derivatives"} <= names
    assert not probes, probes


#: the solver's loop and passes: they name no compiling (the compile layer, the warm-up)
NOT_COMPILING = ("ddp.solver", "ddp.evaluation", "ddp.backward")


def test_the_solver_names_no_compiling():
    """ddp's loop, its evaluation through the protocol and its backward pass neither import the
    compile layer (:mod:`dynamics.jit`) or the warm-up nor name compiling or warming up (what
    is compiled, such as the problem's compiled passes, they may name)."""
    wrong = []
    for m in NOT_COMPILING:
        p = MODULES[m]
        wrong += [f"{m}:{line} imports {t}" for t, line, _ in _imports(m, p)
                  if t.startswith(("dynamics.jit", "ddp.warm_up", "ddp.compile_worker"))]
        for node in ast.walk(ast.parse(p.read_text())):
            name = node.id if isinstance(node, ast.Name) else (
                node.attr if isinstance(node, ast.Attribute) else "")
            low = name.lower()
            if ("compile" in low and "compiled" not in low) or "warm" in low:
                wrong.append(f"{m}:{node.lineno} names {name}")
    assert not wrong, wrong


#: the doors of the compiled solver and their parameters at most (records, not positional lists)
KERNEL_DOORS = {"ddp.kernels.passes": ("backward_pass", "rollout"),
                "ddp.kernels.evaluation": ("knot_derivatives", "derivatives_chunk",
                                           "rollout_cost"),
                "ddp.kernels.costs": ("cost_batch",)}


def test_the_compiled_solver_takes_records():
    import importlib
    import inspect

    wide = {}
    for module, names in KERNEL_DOORS.items():
        mod = importlib.import_module(module)
        for name in names:
            n = len(inspect.signature(getattr(mod, name).py_func).parameters)
            if n > 10:
                wide[f"{module}.{name}"] = n
    assert not wide, wide


#: the functions whose parameter lists are longer than :data:`MAX_PARAMETERS`, with their
#: length today: (file, function) -> parameters.  A list may shrink (then lower its entry, or
#: drop it below the cap); no function joins, and none grows.  Most are compiled kernels that
#: take work arrays one by one, which records are meant to replace.
MAX_PARAMETERS = 12
LONG_PARAMETER_LISTS = {
    ("ddp/kernels/contact_knots.py", "contact_step"): 14,
    ("ddp/kernels/linked.py", "knot_second_order"): 13,
    ("ddp/kernels/linked.py", "knot_tensors"): 14,
    ("dynamics/kernels/contact/batch.py", "constrained_derivatives_batch"): 18,
    ("dynamics/kernels/contact/batch.py", "constrained_derivatives_chunk"): 19,
    ("dynamics/kernels/contact/batch.py", "constrained_dynamics_chunk"): 13,
    ("dynamics/kernels/contact/batch.py", "constrained_so_batch"): 23,
    ("dynamics/kernels/contact/batch.py", "constrained_so_chunk"): 24,
    ("dynamics/kernels/contact/batch.py", "impulse_batch"): 20,
    ("dynamics/kernels/contact/batch.py", "impulse_chunk"): 21,
    ("dynamics/kernels/contact/derivatives.py", "constrained_derivatives_point"): 16,
    ("dynamics/kernels/contact/derivatives.py", "constrained_so_contracted_point"): 22,
    ("dynamics/kernels/contact/derivatives.py", "contact_hessian_blocks"): 16,
    ("dynamics/kernels/contact/derivatives.py", "contract_blocks"): 15,
    ("dynamics/kernels/contact/derivatives.py", "so_contracted_terms"): 20,
    ("dynamics/kernels/contact/impulse.py", "impulse_derivatives_point"): 14,
    ("dynamics/kernels/contact/impulse.py", "impulse_so_terms"): 17,
    ("dynamics/kernels/contact/point.py", "point_second_order"): 17,
    ("dynamics/kernels/contact/surface.py", "surface_position_gain"): 13,
    ("dynamics/kernels/contact/surface.py", "surface_residual"): 13,
    ("dynamics/kernels/contact/surface.py", "surface_second_order"): 17,
    ("dynamics/kernels/forward.py", "fdsva_core"): 18,
    ("dynamics/kernels/forward_so.py", "fdsva_so_lam_point"): 13,
    ("dynamics/kernels/forward_so.py", "fdsva_so_point"): 14,
    ("dynamics/kernels/inverse.py", "idsva_backward_sweep"): 13,
    ("dynamics/kernels/second_order.py", "_dof_terms"): 15,
    ("dynamics/kernels/second_order.py", "idsva_so_contracted_sweep"): 14,
    ("dynamics/kernels/step.py", "add_step_hessian"): 15,
    ("dynamics/kernels/step.py", "assemble_knot"): 14,
    ("dynamics/kernels/step.py", "assemble_step_chunk"): 14,
    ("dynamics/kernels/step.py", "assemble_step_derivatives"): 13,
    ("dynamics/kernels/step.py", "step_quadratic"): 17,
    # the public constructor: its options by keyword (the constraints keyword-only)
    ("ddp/problem.py", "__init__"): 13,
}


def test_no_parameter_list_grows_beyond_the_cap():
    """A ratchet on long parameter lists (typed records instead of long positional lists):
    every function of the packages with more than MAX_PARAMETERS parameters is one of
    LONG_PARAMETER_LISTS, with at most its recorded count."""
    found = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    a = node.args
                    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs)
                    if n > MAX_PARAMETERS:
                        found[(str(path.relative_to(ROOT)), node.name)] = n
    new = {k: n for k, n in found.items() if k not in LONG_PARAMETER_LISTS}
    grown = {k: (LONG_PARAMETER_LISTS[k], n) for k, n in found.items()
             if k in LONG_PARAMETER_LISTS and n > LONG_PARAMETER_LISTS[k]}
    assert not new, (f"new functions with more than {MAX_PARAMETERS} parameters (take a "
                     f"record): {new}")
    assert not grown, f"longer parameter lists (recorded, now): {grown}"
