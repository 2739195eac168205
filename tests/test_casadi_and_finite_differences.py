"""The CasADi AD backend and the finite-difference backend against the analytical kernels.

CasADi shares only the RobotModel arrays with the kernels (its RNEA / ABA are written separately for
SX and differentiated by AD), so agreement to 1e-9 checks both.  Finite differences agree to 1e-5.
"""

import functools
import subprocess
import time
from collections import OrderedDict

import numpy as np
import pytest

import ddp
import dynamics as dyn
from dynamics import casadi_backend
from dynamics.casadi_backend import CasadiDynamics, CodegenLimitError, CodegenLimits
from dynamics.finite_difference import FiniteDifferenceDynamics
from helpers import TREES, build, random_state, rel_err, spec_id
from problems.tasks import instance

CASES = ["ur3", "hyq"] + TREES
ID_FIELDS = list(dyn.IDDerivatives.__dataclass_fields__)
FD_FIELDS = list(dyn.FDDerivatives.__dataclass_fields__)


@functools.lru_cache(maxsize=None)
def _casadi(spec):
    m = build(spec)
    return m, CasadiDynamics(m)


def _compare(x, ref, fields, tol):
    errs = {k: rel_err(getattr(x, k), getattr(ref, k)) for k in fields}
    bad = {k: e for k, e in errs.items() if not e < tol}
    assert not bad, f"relative errors above {tol:g}: {bad}"


@pytest.mark.parametrize("spec", CASES, ids=spec_id)
def test_casadi_matches_analytical_on_every_field(spec):
    m, cd = _casadi(spec)
    assert isinstance(cd, dyn.Dynamics)
    q, v, a, tau = random_state(m, 3)
    lam = np.random.default_rng(4).normal(size=m.nv)
    assert rel_err(cd.rnea(q, v, a), dyn.rnea(m, q, v, a)) < 1e-9
    assert rel_err(cd.aba(q, v, tau), dyn.aba(m, q, v, tau)) < 1e-9
    _compare(cd.id_derivatives(q, v, a, order=2), dyn.id_second_derivatives(m, q, v, a),
             ID_FIELDS, 1e-9)
    _compare(cd.fd_derivatives(q, v, tau, order=2), dyn.fd_second_derivatives(m, q, v, tau),
             FD_FIELDS, 1e-9)
    _compare(cd.fd_derivatives(q, v, tau, order=2, lam=lam),
             dyn.fd_second_derivatives(m, q, v, tau, lam=lam), FD_FIELDS, 1e-9)
    first = cd.fd_derivatives(q, v, tau)
    assert first.d2a_dq2 is None
    _compare(first, dyn.fd_derivatives(m, q, v, tau), FD_FIELDS[:4], 1e-9)
    _compare(cd.id_derivatives(q, v, a), dyn.id_derivatives(m, q, v, a), ID_FIELDS[:4], 1e-9)


def test_casadi_batch_equals_pointwise():
    m, cd = _casadi("hyq")
    states = [random_state(m, s) for s in (0, 1, 2)]
    Q, V, A, TAU = (np.stack(x) for x in zip(*states))
    LAM = np.random.default_rng(0).normal(size=(3, m.nv))
    batch = cd.fd_derivatives(Q, V, TAU, order=2, lam=LAM)
    full = cd.fd_derivatives(Q, V, TAU, order=2)
    ib = cd.id_derivatives(Q, V, A, order=2)
    for t, (q, v, a, tau) in enumerate(states):
        one = cd.fd_derivatives(q, v, tau, order=2, lam=LAM[t])
        for k in FD_FIELDS:
            np.testing.assert_allclose(getattr(batch, k)[t], getattr(one, k), rtol=0, atol=1e-12)
        np.testing.assert_allclose(full.d2a_dq2[t],
                                   cd.fd_derivatives(q, v, tau, order=2).d2a_dq2, atol=1e-12)
        np.testing.assert_allclose(ib.dM_dq[t], cd.id_derivatives(q, v, a, order=2).dM_dq,
                                   atol=1e-12)
    assert cd.aba(Q, V, TAU).shape == (3, m.nv)


def test_casadi_says_once_per_model_that_it_builds_second_derivatives(monkeypatch, capsys):
    """Building a second-derivative function can take seconds (a legged robot's contact set:
    about 4 s): the first such build of a model prints one line; first derivatives, further
    kinds and another instance of the same model print nothing."""
    monkeypatch.setattr(casadi_backend, "_BUILD_NOTICED", set())
    monkeypatch.setattr(casadi_backend, "_SHARED", OrderedDict())
    m = dyn.robots.load("pendulum")
    CasadiDynamics(m).function("aba_fo")
    assert capsys.readouterr().err == ""
    CasadiDynamics(m).function("aba_so")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "building CasADi's second-derivative functions of" in err
    CasadiDynamics(m).function("rnea_so")
    assert capsys.readouterr().err == ""


def test_casadi_builds_once_per_model_and_never_inside_a_timed_solve(monkeypatch):
    """A study solves many instances of one problem, each with a backend of its own: CasADi
    builds a model's functions once (the backends share them), and a problem on another model
    builds its own when the problem is prepared (``solve`` does it first, untimed), never inside the solve that the solution times."""
    monkeypatch.setattr(casadi_backend, "_SHARED", OrderedDict())
    builds = []
    real = casadi_backend.build_function

    def build(tree, kind, **kwargs):
        builds.append(kind)
        return real(tree, kind, **kwargs)

    monkeypatch.setattr(casadi_backend, "build_function", build)
    for family, seed in (("double_pendulum", 1), ("double_pendulum", 2), ("pendulum", 1)):
        P = instance(family, seed, "casadi")
        del builds[:]
        P.prepare()  # what solve() does first, untimed
        prepared = list(builds)
        del builds[:]
        sol = ddp.solve(P, max_iter=3)
        assert sol.iterations > 0
        assert builds == [], (family, seed, builds)  # nothing built inside the timed solve
        assert len(prepared) == len(set(prepared)) and bool(prepared) == (seed == 1), \
            (family, seed, prepared)


def test_casadi_results_are_not_overwritten_by_the_next_call():
    """Evaluations go through buffers that each call overwrites: what a call returned must
    stay as it was (one point and batches, every output)."""
    m, cd = _casadi("ur3")
    states = [random_state(m, s) for s in (0, 1, 2, 3)]
    Q, V, _, TAU = (np.stack(x) for x in zip(*states))
    for take in (slice(0, 1), slice(0, 3)):
        first = cd.fd_derivatives(Q[take], V[take], TAU[take], order=2)
        kept = {k: getattr(first, k).copy() for k in FD_FIELDS}
        second = cd.fd_derivatives(Q[take][::-1] + 0.1, -V[take], 2 * TAU[take], order=2)
        for k in FD_FIELDS:
            assert not np.allclose(getattr(second, k), kept[k]), k
            np.testing.assert_array_equal(getattr(first, k), kept[k], err_msg=k)


@pytest.mark.parametrize("method", ["finite-diff-1", "finite-diff-2"])
@pytest.mark.parametrize("spec", ["hyq", (8, True, 1), (8, False, 2)], ids=spec_id)
def test_finite_differences_match_analytical(spec, method):
    m = build(spec)
    fdd = FiniteDifferenceDynamics(m, method)
    assert isinstance(fdd, dyn.Dynamics)
    q, v, a, tau = random_state(m, 5)
    lam = np.random.default_rng(6).normal(size=m.nv)
    _compare(fdd.id_derivatives(q, v, a, order=2), dyn.id_second_derivatives(m, q, v, a),
             ID_FIELDS, 1e-5)
    _compare(fdd.fd_derivatives(q, v, tau, order=2), dyn.fd_second_derivatives(m, q, v, tau),
             FD_FIELDS, 1e-5)
    _compare(fdd.fd_derivatives(q, v, tau, order=2, lam=lam),
             dyn.fd_second_derivatives(m, q, v, tau, lam=lam), FD_FIELDS, 1e-5)
    _compare(fdd.fd_derivatives(q, v, tau), dyn.fd_derivatives(m, q, v, tau), FD_FIELDS[:4], 1e-5)
    batch = fdd.fd_derivatives(np.stack([q, q]), np.stack([v, v]), np.stack([tau, tau]), order=2)
    assert batch.d2a_dq2.shape == (2, m.nv, m.nv, m.nv)


def test_finite_difference_arguments_are_checked():
    m = build("ur3")
    with pytest.raises(ValueError, match="method: expected 'finite-diff-1' or 'finite-diff-2'; "
                                         "got 'fd3'"):
        FiniteDifferenceDynamics(m, "fd3")
    with pytest.raises(ValueError, match="h: expected a positive finite step"):
        FiniteDifferenceDynamics(m, "finite-diff-2", h=-1.0)
    # the earlier spellings remain aliases
    assert FiniteDifferenceDynamics(m, "fd1").method == "finite-diff-1"


def test_codegen_compiles_caches_and_matches(tmp_path):
    m = build("double_pendulum")
    q, v, a, tau = random_state(m, 0)
    cg = CasadiDynamics(m, codegen=True, cflags=("-O1",), cache_dir=tmp_path)
    ref = CasadiDynamics(m)
    _compare(cg.id_derivatives(q, v, a, order=2), ref.id_derivatives(q, v, a, order=2),
             ID_FIELDS, 1e-12)
    rep = cg.reports["rnea_so"]
    assert not rep.cached and rep.c_bytes > 0 and rep.so_bytes > 0 and rep.compile_s > 0
    again = CasadiDynamics(m, codegen=True, cflags=("-O1",), cache_dir=tmp_path)
    _compare(again.id_derivatives(q, v, a, order=2), ref.id_derivatives(q, v, a, order=2),
             ID_FIELDS, 1e-12)
    assert again.reports["rnea_so"].cached


def test_an_interrupted_codegen_stops_the_compiler(tmp_path, monkeypatch):
    """Ctrl-C while the C compiler runs: the compiler (in its own session, so that a time-out
    can stop the whole group) is stopped too, not left compiling alone."""
    m = build("ur3")
    cg = CasadiDynamics(m, codegen=True, cache_dir=tmp_path)

    def interrupted(self, *args, **kwargs):
        time.sleep(1.0)  # the compiler proper (cc1) has started
        raise KeyboardInterrupt

    monkeypatch.setattr(subprocess.Popen, "communicate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cg.function("aba_so")
    monkeypatch.undo()  # (subprocess.run communicates too)
    left = subprocess.run(["pgrep", "-f", f"cc1 .*{tmp_path}"], capture_output=True)
    assert left.stdout == b""
    assert not list(tmp_path.rglob("*.so"))


def test_codegen_limits_fail_with_a_clear_message(tmp_path):
    m = build("ur3")
    small = CasadiDynamics(m, codegen=True, cache_dir=tmp_path,
                           limits=CodegenLimits(max_instructions=1000))
    with pytest.raises(CodegenLimitError, match=r"instructions, above limits.max_instructions"):
        small.function("aba_so")
    slow = CasadiDynamics(m, codegen=True, cache_dir=tmp_path,
                          limits=CodegenLimits(max_compile_s=0.05))
    with pytest.raises(CodegenLimitError, match=r"exceeded limits.max_compile_s = 0.05 s"):
        slow.function("aba_so")
    # the compiler proper (cc1, a grandchild of the driver) was stopped too
    left = subprocess.run(["pgrep", "-f", f"cc1 .*{tmp_path}"], capture_output=True)
    assert left.stdout == b""
    # the failure is remembered: the same limit fails at once, a larger one retries
    again = CasadiDynamics(m, codegen=True, cache_dir=tmp_path,
                           limits=CodegenLimits(max_compile_s=0.05))
    with pytest.raises(CodegenLimitError, match="recorded earlier"):
        again.function("aba_so")
    tiny = CasadiDynamics(m, codegen=True, cache_dir=tmp_path, limits=CodegenLimits(max_code_mb=0.01))
    with pytest.raises(CodegenLimitError, match=r"above limits.max_code_mb = 0.01 MB"):
        tiny.function("rnea_fo")
    with pytest.raises(ValueError, match="kind: expected one of"):
        small.function("hessian")
    assert not list(tmp_path.rglob("*.so"))
