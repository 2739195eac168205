"""The fused evaluation of the analytical backend (:mod:`ddp.evaluation`) against the same
quantities taken phase by phase through the Dynamics protocol and the costs' own calls: every
derivative of every knot, and the closed-loop rollouts with their cost."""

import dataclasses
from collections import namedtuple

import numba
import numpy as np
import pinocchio as pin
import pytest
from helpers import Upright, rel_err, with_frame
from numba import njit, prange

import ddp
import dynamics as dyn
import problems
from dynamics import jit
from dynamics.jit import doors, linking
from dynamics import robots


def _problem(name):
    """UR3 (frames, fixed base), HyQ (free flyer: Lie-group blocks, underactuated), a random tree
    with every joint type (frame costs and a CasADi residual), and a problem whose frame cost is
    on another model than the dynamics' (evaluated on its own)."""
    if name == "tree":
        m = with_frame(robots.random_tree(8, joint_types=robots.JOINT_TYPES, floating_base=True,
                                          seed=3, branching=0.4))
    else:
        m = robots.load("hyq" if name == "hyq" else "ur3")
    dynamics_model = m
    if name == "other-model":  # the dynamics without gravity, the costs on the robot as loaded
        pm = pin.Model(m.pin_model)
        pm.gravity.setZero()
        dynamics_model = dyn.RobotModel(pm, m.name, m.urdf_path, m.floating_base)
    rng = np.random.default_rng(4)
    q0 = m.random_configuration(rng)
    x0 = np.concatenate([q0, 0.1 * rng.normal(size=m.nv)])
    frame = {"ur3": "tool0", "other-model": "tool0", "hyq": "lf_foot", "tree": "tip"}[name]
    target = pin.SE3(pin.exp3(np.array([0.3, -0.2, 0.5])), np.array([0.2, 0.1, 0.3]))
    run = [ddp.FramePlacement(m, frame, target, 1.0), ddp.StateRegularization(m, x0, 1e-1),
           ddp.FrameVelocity(m, frame, 0.1 * np.ones(6), 0.5, reference="world-aligned")]
    if name != "other-model":  # (bound to the dynamics' model, it cannot join the others)
        run.append(ddp.ControlRegularization(m.nv - 6 if name == "hyq" else m.nv, 1e-3))
    term = [ddp.FrameTranslation(m, frame, np.ones(3), 10.0), ddp.StateRegularization(m, x0, 1.0),
            ddp.FrameVelocity(m, frame, np.zeros(6), 2.0)]
    if name == "tree":
        run.append(Upright(m))
        term.append(Upright(m))
    B = np.eye(m.nv)[:, 6:] if name == "hyq" else None
    return ddp.ShootingProblem(dyn.AnalyticalDynamics(dynamics_model), x0, 6, 0.02, ddp.Sum(run),
                               ddp.Sum(term), actuation=B)


def _fields(x, prefix=""):
    if hasattr(x, "_fields"):  # a record (named tuple)
        for name in x._fields:
            yield from _fields(getattr(x, name), f"{prefix}{name}.")
    elif dataclasses.is_dataclass(x):
        for f in dataclasses.fields(x):
            yield from _fields(getattr(x, f.name), f"{prefix}{f.name}.")
    elif isinstance(x, tuple):
        for i, y in enumerate(x):
            yield from _fields(y, f"{prefix}{i}.")
    elif isinstance(x, np.ndarray):
        yield prefix, x


@pytest.mark.parametrize("name", ["ur3", "hyq", "tree", "other-model"])
def test_fused_derivatives_equal_the_phase_by_phase_ones(name):
    P = _problem(name)
    E = P.evaluation
    assert isinstance(E, ddp.compiled.CompiledEvaluation)
    others = [c for c, knots in E.running_others]  # (cost, the knots it runs on)
    assert all(len(knots) == P.T for c, knots in E.running_others)
    if name == "other-model":  # the costs run on their own model, outside the kernels
        assert others == [P.running_cost] and E.terminal_others == [P.terminal_cost]
    else:
        assert others == [c for c in P.running_cost.costs if isinstance(c, Upright)]
    rng = np.random.default_rng(5)
    us = P.quasi_static() + rng.normal(size=(P.T, P.nu))
    xs = P.rollout(us)
    for so_mode in (0, 1, 2):
        for hessians in ("exact", "gauss-newton"):
            fused = P.calc_diff(xs, us, ddp.LocalModel(hessians, ddp.SecondOrderMode(so_mode)))
            ref = ddp.evaluation.KnotDerivatives(*P.cost_derivatives(xs, us, hessians),
                                                  *P.integrator.derivatives(xs[:-1], us, so_mode))
            got, want = dict(_fields(fused)), dict(_fields(ref))
            assert got.keys() == want.keys()
            assert len(got["second_order.tensors.d2a_dq2."] if so_mode == 1 else got) > 0
            for k in want:
                assert got[k].shape == want[k].shape, k
                if want[k].size:
                    assert rel_err(got[k], want[k]) < 1e-12, (so_mode, hessians, k)


@pytest.mark.parametrize("name", ["hyq", "tree"])
def test_fused_rollout_cost_equals_the_rollout_and_its_cost(name):
    P = _problem(name)
    rng = np.random.default_rng(6)
    us = P.quasi_static() + rng.normal(size=(P.T, P.nu))
    ref = P.rollout(us + 0.1)
    k, K = rng.normal(size=(P.T, P.nu)), 0.1 * rng.normal(size=(P.T, P.nu, P.ndx))
    gaps = 0.01 * rng.normal(size=(P.T + 1, P.ndx))
    for g in (None, gaps):
        xs, un, cost = P.closed_loop_cost(ref, us, k, K, 0.5, gaps=g)
        xs_ref, un_ref = P.closed_loop(ref, us, k, K, 0.5, gaps=g)
        np.testing.assert_array_equal(xs, xs_ref)
        np.testing.assert_array_equal(un, un_ref)
        assert cost == pytest.approx(P.cost(xs_ref, un_ref), rel=1e-13)
    # a diverging rollout: a non-finite cost, no exception
    xs, un, cost = P.closed_loop_cost(ref, us, 1e200 * np.ones_like(k), K, 1.0)
    assert not np.isfinite(cost) and not np.isfinite(P.cost(xs, un))


def test_a_one_knot_rollout_cost_first_in_a_process():
    """A fresh process whose first compiled call is the rollout's cost of a 1-knot problem (one
    chunk: the door calls its costs by their address on its own thread) gives that cost.  It
    crashed with a segmentation fault (four runs in a row, the numba cache warm from the suite)
    until the doors launched numba's threading layer first; launching it by hand before the
    call avoided the crash in the same cache state.  After the cache was rebuilt the crash did
    not come back without the fix either, so this test guards the path, not that state."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import numpy as np, ddp\n"
        "from dynamics import AnalyticalDynamics, robots\n"
        "m = robots.load('ur5')\n"
        "x0 = np.r_[np.array([0.0, -1.2, 1.6, -0.4, 1.5, 0.0]), np.zeros(6)]\n"
        "P = ddp.ShootingProblem(AnalyticalDynamics(m), x0, 1, 0.02,\n"
        "                        ddp.ControlRegularization(6, 1e-3),\n"
        "                        ddp.StateRegularization(m, x0, 1.0))\n"
        "us = np.full((1, 6), 0.5)\n"
        "xs, un, cost = P.rollout_cost(us)\n"
        "print(repr(cost), repr(P.cost(xs, un)))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).resolve().parents[1], timeout=600)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    cost, ref = (float(v) for v in out.stdout.split())
    assert cost == pytest.approx(ref, rel=1e-13) and cost > 0


def test_the_fused_derivatives_check_the_shapes_they_are_given():
    P = _problem("ur3")
    xs, us = np.tile(P.x0, (P.T + 1, 1)), np.zeros((P.T, P.nu))
    with pytest.raises(ValueError, match=r"xs: expected shape \(7, 12\)"):
        P.calc_diff(xs[:3], us)
    with pytest.raises(ValueError, match=r"us: expected shape \(6, 6\)"):
        P.calc_diff(xs, us[:2])
    with pytest.raises(ValueError, match="hessians"):
        P.calc_diff(xs, us, ddp.LocalModel(hessians="newton"))


@pytest.mark.parametrize("name", ["hyq", "tree", "hyq-jump"])
def test_the_derivatives_are_the_same_in_one_chunk_and_in_parallel(name):
    """One chunk runs ``derivatives_chunk`` on this thread; two run it through the parallel door
    and the chunk's address (:func:`dynamics.jit.run_in_chunks`).  The jump has
    contacts, an impact and costs on forces: every record of the door is filled."""
    P = problems.get(name) if name == "hyq-jump" else _problem(name)
    us = P.quasi_static() + np.random.default_rng(7).normal(size=(P.T, P.nu))
    xs = P.rollout(us)
    model = ddp.LocalModel("exact", ddp.SecondOrderMode(2))
    try:
        dyn.set_threads(1)
        one = dict(_fields(P.calc_diff(xs, us, model)))
        dyn.set_threads(2)
        two = dict(_fields(P.calc_diff(xs, us, model)))
    finally:
        dyn.set_threads("auto")
    assert one.keys() == two.keys()
    for k in one:
        np.testing.assert_array_equal(one[k], two[k], err_msg=k)


def test_the_rollout_cost_calls_the_costs_through_their_address(monkeypatch):
    """The closed-loop rollout's door calls every cost through the address that its Python
    caller looked up for the types of the costs' arguments: the same total as the costs alone,
    in one chunk and in parallel; a stale address is looked up again, and an address that stays
    stale is an error, not a wrong cost.  The jump has contacts, an impact and costs on forces
    and frames."""
    from ddp.kernels import evaluation as kev

    P = problems.get("hyq-jump")
    us = P.quasi_static() + np.random.default_rng(3).normal(size=(P.T, P.nu))
    xs = P.rollout(us)
    want = P.cost(xs, us)
    try:
        for threads in (1, 2):
            dyn.set_threads(threads)
            got_xs, _, got = P.rollout_cost(us)
            np.testing.assert_array_equal(got_xs, xs)
            assert abs(got - want) <= 1e-12 * abs(want), (threads, got, want)
    finally:
        dyn.set_threads("auto")
    address, key, library = doors._CHUNKS[kev.cost_values_chunk]
    doors._CHUNKS[kev.cost_values_chunk] = (address, key + 1, library)  # another types' key
    assert abs(P.rollout_cost(us)[2] - want) <= 1e-12 * abs(want)
    assert doors._CHUNKS[kev.cost_values_chunk][1] == key

    def stale(kernel, args, nchunks, fresh=False):
        return address, key + 1, nchunks

    monkeypatch.setattr(doors, "chunk_address", stale)
    with pytest.raises(doors.StaleChunk, match="rollout_cost passes cost_values_chunk"):
        P.rollout_cost(us)


_Pair = namedtuple("_Pair", "x out")


@njit
def _row_sums(pair, chunk, nchunks):
    if pair.out.shape[0] != pair.x.shape[0]:
        raise ValueError("out: expected one row per row of x")
    t0, t1 = doors.chunk_range(pair.x.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        pair.out[t] = pair.x[t].sum() + chunk  # which chunk did it, too


@njit(parallel=True)
def _row_sums_door(pair, chunks):
    """A door whose chunk takes a record: taken apart here, rebuilt inside the parallel loop."""
    x, out = pair
    nchunks = chunks[2]
    ran = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        ran[c] = doors.call_chunk(chunks, (_Pair(x, out), np.int64(c), nchunks))
    return ran.max()


@njit
def _plain_row_sums(x, out, chunk, nchunks):
    t0, t1 = doors.chunk_range(x.shape[0], chunk, nchunks)
    for t in range(t0, t1):
        out[t] = x[t].sum() + chunk


@njit
def _plain_door(x, out, chunks):
    return jit.in_parallel((x, out), chunks)


@njit
def _thread_of_chunk(threads, chunk, nchunks):
    threads[chunk] = numba.get_thread_id()


@njit
def _thread_door(threads, chunks):
    return jit.in_parallel((threads,), chunks)


@njit(parallel=True)
def _wrong_door(pair, chunks):
    ran = np.zeros(chunks[2], np.int64)
    for c in prange(chunks[2]):
        ran[c] = doors.call_chunk(chunks, (pair, np.int64(c)))
    return ran.max()


def test_run_in_chunks_calls_the_chunk_by_its_address_for_the_argument_types():
    x = np.arange(12.0).reshape(6, 2)
    want = x.sum(axis=1) + np.repeat([0, 1], 3)
    addresses = set()
    for dtype in (np.float64, np.float32, np.float64):  # new types: a new address, same answer
        pair = _Pair(x.astype(dtype), np.zeros(6))
        jit.run_in_chunks(_row_sums_door, _row_sums, (pair,), 2)
        np.testing.assert_array_equal(pair.out, want)
        addresses.add(doors._CHUNKS[_row_sums][0])
    assert len(addresses) == 2
    pair = _Pair(x, np.zeros(6))
    jit.run_in_chunks(_row_sums_door, _row_sums, (pair,), 1)  # on this thread
    np.testing.assert_array_equal(pair.out, x.sum(axis=1))
    # an exception in the chunk reaches the caller through the door
    with pytest.raises(ValueError, match="one row per row"):
        jit.run_in_chunks(_row_sums_door, _row_sums, (_Pair(x, np.zeros(5)),), 2)
    # the door of a chunk of arrays: in_parallel, whose one parallel function runs the chunks
    # on numba's threads, one each
    out = np.zeros(6)
    jit.run_in_chunks(_plain_door, _plain_row_sums, (x, out), 2)
    np.testing.assert_array_equal(out, want)
    threads = np.full(2, -1)
    try:
        dyn.set_threads(2)
        jit.run_in_chunks(_thread_door, _thread_of_chunk, (threads,), 2)
    finally:
        dyn.set_threads("auto")
    assert sorted(threads) == [0, 1], threads
    # a door that passes other types than the chunk was compiled for never calls the address
    with pytest.raises(doors.StaleChunk, match="_wrong_door passes _row_sums other argument"):
        jit.run_in_chunks(_wrong_door, _row_sums, (pair,), 2)


@njit
def _copies(a, b, c, k):
    """Three copies of copy_into from compiled code: a row, a block of columns, a 3-D view."""
    jit.copy_into(a[1], a[0])
    jit.copy_into(b[:, k:], b[:, :k])
    jit.copy_into(c[1, :2], c[0, 1:])


def test_copy_into_copies_views_and_names_a_shape_mismatch():
    """:func:`dynamics.kernels.jit.copy_into` (the kernels' array copy) writes exactly the
    destination view from any view of the same shape, 1 to 3 dimensions and any dtype, and raises
    a ValueError naming itself when the shapes differ."""
    rng = np.random.default_rng(0)
    a, b, c = rng.normal(size=(2, 5)), rng.normal(size=(4, 6)), rng.normal(size=(2, 3, 4, 2))
    want_a, want_b, want_c = a.copy(), b.copy(), c.copy()
    want_a[1] = a[0]
    want_b[:, 3:] = b[:, :3]
    want_c[1, :2] = c[0, 1:]
    _copies(a, b, c, 3)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)
    np.testing.assert_array_equal(c, want_c)
    n = np.arange(6).reshape(2, 3)
    jit.copy_into(n[1, ::-1], n[0])  # integers, a negative stride
    np.testing.assert_array_equal(n, [[0, 1, 2], [2, 1, 0]])
    with pytest.raises(ValueError, match="copy_into: the source and the destination differ"):
        jit.copy_into(b[:, :2], b[:, :3])
    np.testing.assert_array_equal(b, want_b)


@njit
def _scaled_row(x, t, s):
    for i in range(x.shape[1]):
        x[t, i] *= s
    return np.int64(t + 100)


_TOY_SLOT = jit.LINKED_SLOTS - 1  # a slot no kernel of the solver uses


@njit
def _scale_rows_linked(x, s):
    got = np.empty(x.shape[0], np.int64)
    for t in range(x.shape[0]):
        got[t] = jit.call_linked(_TOY_SLOT, (x, np.int64(t), s))
    return got


def test_a_linked_kernel_is_called_only_for_the_types_it_was_linked_for():
    """:func:`dynamics.kernels.jit.call_linked` calls the kernel that :func:`~dynamics.kernels.
    jit.link` put in its slot and returns its value; with nothing linked there, or a kernel
    linked for other argument types, it calls nothing and returns NOT_LINKED."""
    from numba import typeof

    x = np.ones((3, 2))
    linking._TABLE[2 * _TOY_SLOT + 1] = 0  # an empty slot (whatever an earlier test linked)
    linking._LINKED.pop(_TOY_SLOT, None)
    np.testing.assert_array_equal(_scale_rows_linked(x, 2.0), [jit.NOT_LINKED] * 3)
    np.testing.assert_array_equal(x, 1.0)
    jit.link(_TOY_SLOT, _scaled_row, (typeof(x), typeof(np.int64(0)), typeof(2.0)))
    assert _TOY_SLOT in linking._LINKED
    np.testing.assert_array_equal(_scale_rows_linked(x, 2.0), [100, 101, 102])
    np.testing.assert_array_equal(x, 2.0)
    jit.link(_TOY_SLOT, _scaled_row, (typeof(x), typeof(np.int64(0)), typeof(np.float32(2))))
    np.testing.assert_array_equal(_scale_rows_linked(x, 2.0), [jit.NOT_LINKED] * 3)
    np.testing.assert_array_equal(x, 2.0)


def test_the_contact_knots_link_one_signature_which_the_process_aside_compiles():
    """A problem with contacts links each kernel of its contact knots
    (:mod:`ddp.kernels.contact_knots`) for one set of argument types, and the process aside's
    ``contacts`` group (on a small problem of its own) compiles that same one: otherwise it
    would compile code that no solve loads."""
    from ddp import compile_worker
    from ddp.kernels import contact_knots

    ddp.solve(problems.get("hyq-jump"), method="ddp", max_iter=1)
    compile_worker.compile_contacts()
    for kernel in (contact_knots.contact_step, contact_knots.contact_knot_derivatives,
                   contact_knots.contact_second_order):
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)


def test_the_free_knots_link_the_second_order_kernel_of_each_mode_with_one_signature():
    """DDP's second-order terms on UR3 in either mode come from the free knots' linked kernel of
    that mode (:mod:`ddp.kernels.linked`: the full tensors in the derivative call, contracted in
    the backward pass, or the contracted terms called there), each linked for one set of
    argument types, and both give the same Fxx, Fxu, Fuu at every knot."""
    from ddp.kernels import linked
    from ddp.kernels.records import LINKED_FREE_SECOND_ORDER, LINKED_TENSORS

    P = problems.get("ur3", T=6)
    rng = np.random.default_rng(2)
    us = P.quasi_static() + 0.3 * rng.normal(size=(P.T, P.nu))
    xs = P.rollout(us)
    lam = rng.normal(size=(P.T, P.ndx))
    terms = []
    for mode in (ddp.SecondOrderMode.TENSORS, ddp.SecondOrderMode.CONTRACTED):
        d = P.calc_diff(xs, us, ddp.LocalModel("exact", mode))
        terms.append([P.step_hessians(t, lam[t], d.step, d.second_order)
                      for t in range(P.T)])
    for t in range(P.T):  # Fuu is zero (a is linear in tau): the scale is Fxx's
        scale = np.abs(terms[0][t][0]).max()
        assert scale > 1e-8
        for a, b in zip(*(tt[t] for tt in terms)):
            assert np.abs(a - b).max() <= 1e-9 * scale
    for slot, kernel in ((LINKED_TENSORS, linked.knot_tensors),
                         (LINKED_FREE_SECOND_ORDER, linked.knot_second_order)):
        assert linking._LINKED[slot][0] is kernel
        assert len(kernel.signatures) == 1, (kernel.__name__, kernel.signatures)


def test_every_batched_kernel_runs_its_parallel_door_as_its_points():
    """Every batched API of the dynamics kernels, on two threads (two chunks, so through its
    parallel door whatever the machine's load), gives at each knot what it gives for that knot
    alone (a batch of one: one chunk, on this thread): the same machine code, so the same bits.  Under "auto"
    threads a busy machine runs one chunk and the doors never compile."""
    from dynamics import higher_order, linearization

    m, rng, T = robots.load("hyq"), np.random.default_rng(5), 3
    Q = np.array([m.random_configuration(rng) for _ in range(T)])
    V, A, TAU, LAM = (rng.normal(size=(T, m.nv)) for _ in range(4))
    feet = [dyn.Contact3D(f, gains=(1.0, 5.0)) for f in ("lf_foot", "rf_foot", "lh_foot")]
    MU = rng.normal(size=(T, m.nv + 9))
    VD = rng.normal(size=(T, 3, m.nv))
    TD = rng.normal(size=(T, 2, m.nv))
    calls = {
        "rnea": lambda *k: dyn.rnea(m, Q[k], V[k], A[k]),
        "aba": lambda *k: dyn.aba(m, Q[k], V[k], TAU[k]),
        "mass_matrix": lambda *k: dyn.mass_matrix(m, Q[k]),
        "inverse_mass_matrix": lambda *k: dyn.inverse_mass_matrix(m, Q[k]),
        "id_derivatives": lambda *k: dyn.id_derivatives(m, Q[k], V[k], A[k]),
        "fd_derivatives": lambda *k: dyn.fd_derivatives(m, Q[k], V[k], TAU[k]),
        "id_second": lambda *k: dyn.id_second_derivatives(m, Q[k], V[k], A[k]),
        "fd_second": lambda *k: dyn.fd_second_derivatives(m, Q[k], V[k], TAU[k]),
        "fd_second_lam": lambda *k: dyn.fd_second_derivatives(m, Q[k], V[k], TAU[k], lam=LAM[k]),
        "integrate": lambda *k: m.integrate(Q[k], V[k]),
        "difference": lambda *k: m.difference(Q[k], m.integrate(Q[k], V[k])),
        "linearize": lambda *k: linearization.linearize(m, Q[k], V[k], TAU[k]),
        "linearize_dt": lambda *k: linearization.linearize(m, Q[k], V[k], TAU[k], dt=0.01),
        "linearize_inertial": lambda *k: linearization.linearize(m, Q[k], V[k], TAU[k],
                                                                 base_twist="inertial"),
        "linearize_fdsva": lambda *k: linearization.linearize(m, Q[k], V[k], TAU[k],
                                                              method="fdsva"),
        "eidamb": lambda *k: linearization.eidamb(m, Q[k], V[k], A[k]),
        "eidamb_derivatives": lambda *k: linearization.eidamb_derivatives(m, Q[k], V[k], A[k]),
        "immamb": lambda *k: linearization.immamb(m, Q[k]),
        "higher_rnea": lambda *k: higher_order.rnea(m, Q[k], VD[k]),
        "higher_aba": lambda *k: higher_order.aba(m, Q[k], V[k], TD[k]),
        "closed_form": lambda *k: higher_order.closed_form(m, Q[k], V[k]),
        "contact": lambda *k: dyn.constrained_dynamics(m, feet, Q[k], V[k], TAU[k]),
        "contact_derivatives": lambda *k: dyn.constrained_derivatives(m, feet, Q[k], V[k],
                                                                      TAU[k]),
        "contact_second": lambda *k: dyn.constrained_second_derivatives(m, feet, Q[k], V[k],
                                                                        TAU[k], mu=MU[k]),
        "impact": lambda *k: dyn.impulse_dynamics(m, feet, Q[k], V[k], order=2),
    }
    try:
        dyn.set_threads(2)
        batches = {name: dict(_fields(f(slice(None)))) for name, f in calls.items()}
    finally:
        dyn.set_threads("auto")
    for name, f in calls.items():
        for t in range(T):  # knot t alone: a batch of one, one chunk
            alone = dict(_fields(f(slice(t, t + 1))))
            assert alone.keys() == batches[name].keys() and alone, name
            for field, want in alone.items():
                np.testing.assert_array_equal(batches[name][field][t], want[0],
                                              err_msg=f"{name}, {field} knot {t}")
