"""The numba cache guard drops stale cache files when any kernel source changes."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(code, cache):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout


def test_stale_cache_is_dropped(tmp_path):
    code = ("import dynamics.kernels as k, dynamics.jit.cache as c; from pathlib import Path; "
            "here = Path(k.__file__).parent; d = c.cache_dirs(here)[0]; print(d); "
            "print((d / c._STAMP).read_text().strip() == c.source_hash(here.parent / 'jit', here))")
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



#: kernels that must compile once: the chunks of the batched kernels (called on two paths, serial
#: and parallel) and the large callees that several kernels share
_ONCE = ("cost_knots", "fdsva_core", "_integrate_hessian_block", "so3_log_expansion")
#: callees that call sites reach with other argument types unless they take care (a view's 'A'
#: layout, a literal int such as ``order=2``): one signature each when compiled (3 of
#: surface_position_gain and 2 of the SE(3) logarithm's had cost about 10 s of a cold test run)
_ONE_SIGNATURE = ("surface_position_gain", "se3_log_expansion", "se3_log_jacobian",
                  "se3_log_hessian_contracted", "tangent_ad_point", "_to_child_slots")
#: the doors of the compiled solver and the protocol path's batched kernels
_DOORS = ("derivatives_chunk", "knot_derivatives", "backward_pass", "rollout", "rollout_cost",
          "cost_batch", "gradient_norm", "integrate_expansion_batch", "rnea_batch", "fdsva_batch",
          "fdsva_so_batch")


@pytest.mark.last
def test_the_solver_compiles_each_kernel_once():
    """After a UR3 solve (DDP and iLQR) and derivatives at one point and at a batch, the numba
    cache holds one compiled signature of every chunk of a batched kernel and of each shared
    callee of ``_ONCE``.  numba compiles a jitted callee again for each new set of argument
    types, and a literal argument (``_chunk(..., 0, 1)``) or prange's unsigned index is a type
    of its own: that had the chunks compiled three times and the cost program four (a cold
    first solve took 326 s instead of 256 s).  The cache index counts every signature compiled
    with the current sources (by any earlier test too); a callee loaded with its caller from
    the cache shows none in ``signatures``, hence the index.  Runs in a fresh interpreter.

    On a cold cache the process aside (:data:`ddp.warm_up.ASIDE`) compiles the passes and the
    protocol path on a small random tree while this one compiles UR3's derivatives; then the
    worker's problems run here too.  Each door of the compiled solver must have the same one
    signature for both problems (on the analytical and the finite-difference backends), or the
    process aside would compile code that no solve loads.  None of these problems has contacts:
    the kernels of the contact knots are never linked (:mod:`ddp.kernels.contact_knots`); nor
    are the full FD-SO tensors of the free knots, which no solve here asks for (UR3's DDP takes
    the contracted terms: :mod:`ddp.kernels.linked`).

    It runs after the other tests (``last``): the kernels they compiled are then in the cache
    (its index also counts their signatures, so every test's calls are held to one signature),
    instead of compiling the solver a second time beside them."""
    code = """
import importlib, pkgutil
import numpy as np
from numba.core.registry import CPUDispatcher
import ddp, problems, dynamics.jit, dynamics.kernels, ddp.kernels
from ddp import compile_worker, warm_up
warm_up.ASIDE.start(("passes", "protocol", "lie"))
P = problems.get("ur3", T=4)
for method in ("ddp", "ilqr"):
    ddp.solve(P, method=method, max_iter=2)
ddp.solve(problems.get("ur3", T=4, backend="finite-diff"), max_iter=2)
compile_worker.compile_passes()
compile_worker.compile_protocol()
compile_worker.compile_lie()
D, rng = P.dynamics, np.random.default_rng(0)
q = np.array([D.model.random_configuration() for _ in range(3)])
v, tau = rng.standard_normal((3, D.nv)), rng.standard_normal((3, D.nv))
for order in (1, 2):
    D.fd_derivatives(q, v, tau, order=order)
    D.fd_derivatives(q[0], v[0], tau[0], order=order)
for pkg in (dynamics.jit, dynamics.kernels, ddp.kernels):
    for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
        mod = importlib.import_module(info.name)
        for name, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and f.__module__ == mod.__name__ and f._cache:
                print(name, len(f._cache._cache_file._load_index()))
for slot, (kernel, _, _) in dynamics.jit.linking._LINKED.items():
    print("linked:" + kernel.__name__, slot)
"""
    # two threads fixed: on a busy machine ``threads.available()`` would give one chunk, and the
    # parallel doors would not run (nor compile)
    env = dict(os.environ, PYTHONPATH=str(ROOT), SODDP_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    counts = {name: int(n) for name, n in (line.split() for line in out.splitlines())}
    linked = {name.split(":")[1] for name in counts if name.startswith("linked:")}
    checked = {k: n for k, n in counts.items()
               if (k.endswith("_chunk") or k in _ONCE or k in _DOORS or k in _ONE_SIGNATURE)
               and n}
    assert len(checked) >= 8 and set(_ONCE) | set(_DOORS) <= set(checked), counts
    assert all(n == 1 for n in checked.values()), {k: n for k, n in checked.items() if n > 1}
    # problems without contacts never link (nor compile) the kernels of the contact knots; UR3's
    # DDP (contracted second order) links the free knots' contracted terms, not their tensors;
    # the worker's group "lie" links the expansion of (+); every evaluation of the costs links
    # the cost program
    assert linked == {"knot_second_order", "knot_lie_expansion", "cost_knots"}, linked


def test_a_first_compile_says_so_once(tmp_path, capsys):
    """On a cold cache the first call of a kernel prints one line (what compiles, about how
    long); not again in the process, and not when the cache holds the machine code."""
    from numba import njit

    from dynamics.jit import compile_notice

    src = tmp_path / "tiny.py"
    src.write_text("def f(x):\n    return x + 1\n")
    ns = {}
    exec(compile(src.read_text(), str(src), "exec"), ns)
    f = njit(cache=True)(ns["f"])
    f._cache._cache_file._cache_path = str(tmp_path)  # keep the test's cache in tmp_path
    f._cache._cache_file._index_path = str(tmp_path / "tiny.f.nbi")
    assert compile_notice(f, "the tiny kernel", 148)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling the tiny kernel" in err and "about 2.5 min" in err
    assert not compile_notice(f, "the tiny kernel", 148)  # once per process
    assert compile_notice(f, "the small kernel", 12)  # under 90 s: in seconds
    assert "about 10 s on 2 cores" in capsys.readouterr().err
    (tmp_path / "tiny.f.nbi").write_text("")
    assert not compile_notice(f, "the tiny kernel, cached", 2)
    assert capsys.readouterr().err == ""


def test_the_process_aside_reports_its_groups_and_a_failed_one_does_not_block(monkeypatch):
    """dynamics.jit.CompileAside with ddp's worker: the worker prints each group's name once its
    kernels are cached (the parent reads them to know when to load) and exits 0; a worker that
    fails ends the wait instead of blocking it.  start() names a wrong group, and launches
    nothing when switched off or when every group is cached.  (Not ``last``: early, its worker
    compiles the passes in a process of its own, which the other tests can then load.)"""
    from dynamics.jit import CompileAside
    from ddp import warm_up

    aside = CompileAside(warm_up.ASIDE.worker, warm_up.ASIDE.groups, ROOT)
    with pytest.raises(ValueError, match=r"groups: expected names of \['contacts', 'contracted', "
                                         r"'costs', 'lie', 'passes', 'protocol'\]; got \['nope'\]"):
        aside.start(("nope",))
    monkeypatch.setenv("SODDP_COMPILE_ASIDE", "0")
    assert not aside.start(("passes",))
    monkeypatch.delenv("SODDP_COMPILE_ASIDE")
    env = dict(os.environ, PYTHONPATH=str(ROOT), SODDP_COMPILE_ASIDE="0")
    groups = ("costs", "passes", "contracted", "protocol", "lie")
    r = subprocess.run([sys.executable, "-m", "ddp.compile_worker", *groups], env=env,
                       capture_output=True, text=True, check=True)
    assert r.stdout.split() == list(groups)
    assert not aside.start(groups)  # all cached now
    failing = CompileAside(warm_up.ASIDE.worker, {"no-such-group": warm_up.ASIDE.groups["costs"]},
                           ROOT)
    failing.groups["no-such-group"] = _never_cached()
    assert failing.start(("no-such-group",))
    failing.wait()
    assert failing._process.process.wait() != 0 and failing._process.done == {"no-such-group"}
    assert not failing.compiles("no-such-group")


def _never_cached():
    """A dispatcher whose cache index never exists (is_cached says False)."""
    class Cache:
        class _cache_file:
            _index_path = "/nonexistent/index.nbi"

    class Dispatcher:
        _cache = Cache()

    return Dispatcher()


def test_wait_all_but_waits_for_every_other_group():
    """CompileAside.wait_all_but returns once the process aside has reported every group it was
    given but those named (a solve loads them while the process aside compiles the protocol
    path's)."""
    from dynamics.jit import CompileAside

    class Process:
        groups, waited = ("lie", "passes", "contracted", "protocol"), []

        def wait(self, group=None):
            self.waited.append(group)

    aside = CompileAside("nowhere", {}, ROOT)
    aside.wait_all_but("protocol")  # none running: at once
    aside._process = Process()
    aside.wait_all_but("protocol")
    assert sorted(Process.waited) == ["contracted", "lie", "passes"]


_KERNEL = '''
from dynamics.jit import njit


@njit(cache=True)
def f(x):
    return x + 1.0


@njit(cache=True)
def broken(x):
    return x.no_such_attribute
'''


def _lock_path(src):
    """The lock file of ``f`` in the module ``src`` (``_KERNEL``), as the kernels compute it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"kernel_{abs(hash(str(src)))}", src)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, module.f._cache._cache_file._index_path + ".lock"


def test_a_process_waits_for_the_compile_of_another_then_loads_it(tmp_path):
    """dynamics.jit.dispatch: on a cache miss a kernel waits while another process holds
    its lock (compiling it), then loads what that process saved instead of compiling again."""
    import fcntl
    import time

    (tmp_path / "kernel.py").write_text(_KERNEL)
    _, lock = _lock_path(tmp_path / "kernel.py")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    call = ("import kernel; kernel.f(1.0); s = kernel.f.stats; "
            "print(sum(s.cache_hits.values()), sum(s.cache_misses.values()))")
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another process compiles f
        waiting = subprocess.Popen([sys.executable, "-c", call], env=env, text=True,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(3.0)
        assert waiting.poll() is None  # it waits
        # the other process saves f: plain numba, the same function and so the same cache entry
        save = ("import numba, kernel; g = numba.njit(cache=True)(kernel.f.py_func); g(1.0); "
                "print(sum(g.stats.cache_misses.values()))")
        r = subprocess.run([sys.executable, "-c", save], env=env, capture_output=True, text=True,
                           check=True)
        assert r.stdout.split() == ["1"]
    out, err = waiting.communicate(timeout=120)
    # loaded, not compiled: what the other process saved after this one had started waiting
    assert out.split() == ["1", "0"], err


def test_a_failed_compile_releases_its_lock(tmp_path):
    """A compile that raises saves nothing: its lock is free at once, for the next process."""
    import fcntl

    from numba.core.errors import TypingError

    (tmp_path / "kernel.py").write_text(_KERNEL)
    module, _ = _lock_path(tmp_path / "kernel.py")
    with pytest.raises(TypingError):
        module.broken(1.0)
    lock = module.broken._cache._cache_file._index_path + ".lock"
    assert os.path.exists(lock) and module.broken._cache._held is None
    with open(lock, "w") as other:
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held
    module.f(1.0)  # a compile that succeeds releases its lock too
    assert module.f._cache._held is None
