"""The study engine: tasks, the results store, resuming, a worker killed mid-study on a local
Dask cluster, the report from the store alone, and bad input on the command line."""

import json
import math
import os
import signal
import subprocess
import sys

import pytest

from problems import engine, parts
from problems.cli import main
from problems.store import ResultsStore
from problems.tasks import blank_record, build_problem, run_task, task, task_key

#: the numbers a task must reproduce exactly wherever it runs
NUMBERS = ("status", "converged", "iterations", "cost", "grad_norms", "costs", "nv",
           "exact_iterations")


def _tasks(families=("pendulum", "ur3"), instances=3, methods=("ddp", "ilqr")):
    return [task(part="robustness", problem=f, seed=s, method=m, max_iter=60)
            for f in families for s in range(instances) for m in methods]


def _same_numbers(a, b):
    for k in NUMBERS:
        x, y = a[k], b[k]
        assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), (k, x, y)


def _serial_run_in_a_fresh_process(tasks, folder):
    """The tasks run in order in a new Python process; its records by key.  (Not in the test
    process: after other tests have called a kernel with other array layouts, numba's dispatcher
    may reuse that specialization, whose fastmath reductions round differently in the last bit,
    and a last-bit difference grows to 1e-3 in the gradient norms of the last iterations.)"""
    (folder / "tasks.json").write_text(json.dumps(tasks))
    code = ("import json, sys\nfrom problems import engine\nfrom problems.store import "
            "ResultsStore\nengine.run(json.load(open(sys.argv[1])), ResultsStore(sys.argv[2]), "
            "progress=False)\n")
    subprocess.run([sys.executable, "-c", code, str(folder / "tasks.json"),
                    str(folder / "serial.csv")], check=True, timeout=600)
    return {r["key"]: r for r in ResultsStore(folder / "serial.csv").records()}


def test_a_task_is_validated_and_named_by_its_description():
    t = task(part="robustness", problem="ur3", seed=4, method="ilqr")
    assert t["globalization"] == "safeguarded" and t["settings"] == {}
    assert task_key(t) == task_key(dict(t)) and len(task_key(t)) == 16
    assert task_key(t) != task_key(task(part="robustness", problem="ur3", seed=5, method="ilqr"))
    for bad, name in ((dict(problem="ur5"), "problem"), (dict(method="newton"), "method"),
                      (dict(settings={"tol": -1}), "tol"), (dict(settings={"foo": 1}), "foo"),
                      (dict(seed=-1), "seed"), (dict(shooting="double"), "shooting"),
                      (dict(settings={"method": "ddp"}), "method"), (dict(speed=2), "speed")):
        with pytest.raises(ValueError, match=name):
            task(**{**dict(part="robustness", problem="ur3", seed=0, method="ddp"), **bad})


def test_the_parts_build_only_the_tasks_asked_for():
    by_part = parts.tasks(["robustness", "globalization"], ["pendubot", "ur3"], instances=3,
                          crocoddyl=False)
    assert {t["problem"] for t in by_part["robustness"]} == {"ur3"}  # pendubot: no family
    assert len(by_part["robustness"]) == 3 * len(parts.COMBOS)
    with_crocoddyl = parts.tasks(["robustness"], ["ur3"], instances=3, crocoddyl=True)
    assert len(with_crocoddyl["robustness"]) == 3 * (len(parts.COMBOS) + 1)
    assert parts.tasks(["robustness"], ["pendubot"])["robustness"] == []
    only_ddp = parts.tasks(["globalization"], ["pendulum"], methods=("ddp",))["globalization"]
    assert {t["method"] for t in only_ddp if t["solver"] == "soddp"} == {"ddp"}


def test_quick_caps_every_part_at_150_iterations_and_5_instances():
    """``soddp study --quick`` as its --help says: at most 150 iterations in every part (the full
    study: 500 in the backends part, 300 in the others) and 5 random instances per family."""
    quick = parts.tasks(problems=["ur3"], quick=True, crocoddyl=False)
    full = parts.tasks(problems=["ur3"], crocoddyl=False)
    for part in parts.PARTS:
        assert {t["max_iter"] for t in quick[part] if t["solver"] == "soddp"} == {150}, part
        assert {t["max_iter"] for t in full[part] if t["solver"] == "soddp"} == {
            500 if part == "backends" else 300}, part
    assert len(quick["robustness"]) == 5 * len(parts.COMBOS)


def test_a_random_instance_takes_the_backend_of_its_task():
    t = task(part="robustness", problem="ur3", seed=3, method="ddp", backend="casadi")
    P, Q = build_problem(t), build_problem(dict(t, backend="analytical"))
    assert type(P.dynamics).__name__ == "CasadiDynamics"
    assert type(Q.dynamics).__name__ == "AnalyticalDynamics" and (P.x0 == Q.x0).all()


def test_a_task_gives_the_same_numbers_twice_and_records_where_it_ran():
    t = task(part="robustness", problem="double_pendulum", seed=2, method="ddp", max_iter=40)
    a, b = run_task(t), run_task(t)
    _same_numbers(a, b)
    assert a["key"] == task_key(t) and a["versions"]["numba"] and a["host"] and a["pid"]
    assert a["time_s"] > 0 and a["t_derivatives"] > 0 and len(a["grad_norms"]) == a["iterations"] + 1


def test_a_solver_failure_is_a_record_not_an_exception(monkeypatch):
    t = task(part="robustness", problem="pendulum", seed=0, method="ddp", max_iter=2)
    r = run_task(t)
    assert r["status"] == "max-iterations" and not r["converged"] and r["iterations"] == 2

    def broken(t):
        raise RuntimeError("no such robot")

    monkeypatch.setattr("problems.tasks.build_problem", broken)
    r = run_task(t)
    assert r["status"] == "error: RuntimeError: no such robot" and r["iterations"] is None


def test_the_warm_up_also_runs_the_exact_model(monkeypatch):
    """The safeguarded default starts with a Gauss-Newton iteration, so a one-iteration warm-up
    as configured never reached DDP's exact terms and their kernels loaded inside the timed
    solve (UR3 DDP: 15 ms per iteration in the study instead of 2.5); the warm-up of a new
    configuration also runs one exact iteration, and the timed solve is as configured."""
    import ddp
    from problems import tasks

    calls = []
    solve = ddp.solve

    def recording(P, xs, us, **kw):
        calls.append((kw["max_iter"], kw["globalization"]))
        return solve(P, xs, us, **kw)

    monkeypatch.setattr(tasks.ddp, "solve", recording)
    monkeypatch.setattr(tasks, "_WARM", set())
    t = task(part="robustness", problem="pendulum", seed=0, method="ddp", max_iter=5)
    run_task(t)
    assert calls == [(1, "safeguarded"), (1, "state-shift"), (5, "safeguarded")]
    calls.clear()
    run_task(t)  # warmed up once per configuration and process
    assert calls == [(5, "safeguarded")]


def test_the_store_reads_back_bit_for_bit_and_drops_a_line_cut_short(tmp_path):
    store = ResultsStore(tmp_path / "s.csv")
    records = [run_task(t) for t in _tasks(("pendulum",), 2, ("ddp",))]
    for r in records:
        store.append(dict(r, worker="w"))
    back = store.records()
    assert [r["key"] for r in back] == [r["key"] for r in records]
    for a, b in zip(records, back):
        _same_numbers(a, b)
        assert a["settings"] == b["settings"] and a["seed"] == b["seed"]
    with open(store.path, "a") as f:  # a power cut in the middle of a record
        f.write(records[0]["key"] + ",robustness,pendu")
    again = ResultsStore(store.path)
    assert [r["key"] for r in again.records()] == [r["key"] for r in records]
    assert again.drop([records[0]["key"]]) == 1 and len(again.records()) == 1


def test_an_interrupted_study_resumes_without_duplicates_or_gaps(tmp_path):
    tasks = _tasks(("pendulum",), 3)
    store = ResultsStore(tmp_path / "s.csv")
    seen = []

    def interrupt(record):
        seen.append(record)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        engine.run(tasks, store, on_record=interrupt, progress=False)
    assert len(store.records()) == 2
    ran, _ = engine.run(tasks, store, resume=True, progress=False)
    keys = [r["key"] for r in store.records()]
    assert ran == len(tasks) - 2
    assert sorted(keys) == sorted(task_key(t) for t in tasks)  # no duplicates, no gaps
    ran, _ = engine.run(tasks, store, resume=True, progress=False)
    assert ran == 0 and len(store.records()) == len(tasks)


@pytest.mark.slow
def test_a_worker_killed_mid_study_loses_nothing_and_changes_no_number(tmp_path):
    tasks = (_tasks(("hyq",), 2, ("ddp", "ilqr")) + _tasks(("ur3", "double_pendulum"), 3))
    client = engine.connect(workers=2)
    killed = {}
    try:
        pids = client.run(os.getpid)

        def kill_a_busy_worker(record):
            if killed:
                return
            busy = [w for w, keys in client.processing().items() if keys and w in pids]
            if busy:  # a worker with a task running (and maybe more queued)
                killed.update(worker=busy[0], pid=pids[busy[0]],
                              lost=set(client.processing()[busy[0]]))
                os.kill(pids[busy[0]], signal.SIGKILL)

        store = ResultsStore(tmp_path / "s.csv")
        engine.run(tasks, store, client, on_record=kill_a_busy_worker, progress=False)
    finally:
        engine.close(client)
    assert killed, "no worker was busy when the first records arrived"
    records = store.records()
    keys = [r["key"] for r in records]
    assert sorted(keys) == sorted(task_key(t) for t in tasks)  # each task exactly once
    lost = {k.removeprefix("soddp-task-") for k in killed["lost"]}
    assert lost and lost <= set(keys)
    assert all(r["status"] != engine.WORKER_DIED for r in records)
    assert not [r for r in records if r["key"] in lost and r["pid"] == killed["pid"]]
    serial = _serial_run_in_a_fresh_process(tasks, tmp_path)
    for r in records:
        _same_numbers(r, serial[r["key"]])


def test_report_from_the_store_alone(tmp_path, monkeypatch):
    monkeypatch.setattr("problems.output.RESULTS", tmp_path)
    store = ResultsStore(tmp_path / "s.csv")
    parts.study(parts.tasks(["robustness"], ["pendulum"], instances=2), store=store,
                log=lambda *a: None)
    first = (tmp_path / "robustness.csv").read_text()
    (tmp_path / "robustness.csv").unlink()
    assert main(["report", "--store", str(store.path), "--parts", "robustness"]) == 0
    assert (tmp_path / "robustness.csv").read_text() == first
    assert (tmp_path / "robustness.png").is_file()


def test_a_report_shows_one_study_and_refuses_to_mix_them(tmp_path, monkeypatch, capsys):
    """Two studies in one store (a quick one, and the same with a tighter tol): the report
    refuses to mix them and names them; with --study it reports the one chosen, and its notes
    state the tol those records were solved with."""
    monkeypatch.setattr("problems.output.RESULTS", tmp_path)
    store = ResultsStore(tmp_path / "s.csv")
    quiet = dict(store=store, log=lambda *a: None)
    parts.study(parts.tasks(["robustness"], ["pendulum"], quick=True, instances=1), **quiet)
    parts.study(parts.tasks(["robustness"], ["pendulum"], quick=True, instances=1,
                            settings={"tol": 1e-8}), **quiet)
    assert parts.studies_in(store.records()).keys() == {
        "quick --problems pendulum --instances 1",
        "quick --problems pendulum --instances 1 --set tol=1e-08"}
    with pytest.raises(ValueError, match="holds 2 studies.*choose one with --study"):
        parts.report(["robustness"], store, log=lambda *a: None)
    argv = ["report", "--store", str(store.path), "--parts", "robustness"]
    assert main(argv) == 2 and "--study" in capsys.readouterr().err
    name = "quick --problems pendulum --instances 1"
    for name, tol in ((name, "1e-06"), (name + " --set tol=1e-08", "1e-08")):
        rows = parts.report(["robustness"], store, log=lambda *a: None, study=name)["robustness"]
        assert rows and all(r.get("instances", 1) == 1 for r in rows)
        notes = (tmp_path / "robustness.md").read_text()
        assert f"tol = {tol}" in notes, notes
    with pytest.raises(ValueError, match="no study 'full'"):
        parts.report(["robustness"], store, log=lambda *a: None, study="full")


@pytest.mark.parametrize("argv,expected", [
    (["study", "--problems", "ur5"], "invalid choice"),
    (["study", "--methods", "newton"], "invalid choice"),
    (["study", "--set", "foo=1", "--workers", "1"], "foo: not a solver setting"),
    (["study", "--set", "tol=-1", "--workers", "1"], "tol"),
    (["study", "--workers", "0"], "workers"),
    (["study", "--instances", "0", "--workers", "1"], "instances"),
    (["study", "--scheduler", "tcp://127.0.0.1:9"], "no Dask scheduler answers"),
    (["report", "--store", "/nonexistent/store.csv"], "no store"),
])
def test_bad_input_is_one_line_and_exit_2_before_any_work(argv, expected, capsys, tmp_path,
                                                          monkeypatch):
    monkeypatch.setattr("problems.output.RESULTS", tmp_path)
    # the scheduler that does not answer: given up after 1 s here instead of the default 10 s
    monkeypatch.setattr(engine.connect, "__defaults__", (None, None, 1.0))
    with pytest.raises(SystemExit) as e:
        raise SystemExit(main(argv))
    assert e.value.code == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1, err
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


def test_crocoddyl_runs_go_to_one_kept_process_that_answers_failures(monkeypatch):
    """The runs of a process go to one Crocoddyl process (crocoddyl_problem.py --serve); a failed
    run is its reply and the process keeps serving; a process that died is started again.  This
    Python has no crocoddyl (and the spec is empty): every run fails inside the script."""
    from problems.reference import crocoddyl_solvers as cs

    monkeypatch.setenv("SODDP_CROCODDYL_PYTHON", sys.executable)
    key = (sys.executable, False)
    logs = []
    try:
        assert cs.run({}, log=logs.append) == {}
        first = cs._SERVERS[key]
        assert cs.run({}, log=logs.append) == {} and cs._SERVERS[key] is first
        assert first.poll() is None
        first.kill()
        first.wait()
        assert cs.run({}, log=logs.append) == {}
        assert cs._SERVERS[key] is not first and cs._SERVERS[key].poll() is None
        assert len(logs) == 3 and all("Crocoddyl run failed: error: " in s for s in logs), logs
    finally:
        cs._stop_all()
    assert not cs._SERVERS


def test_a_part_is_reported_when_its_last_task_ran_and_prints_after_the_run(tmp_path,
                                                                            monkeypatch):
    events = []

    def fake_task(t):
        events.append(("task", t["part"]))
        return dict(blank_record(t, "converged"), host="here", pid=1)

    def fake_report(part):
        def report(records, log):
            events.append(("report", part, len(records)))
            log(f"{part} table")
            return [part]
        return report

    def log(line):
        events.append(("print", line))

    monkeypatch.setattr(engine, "run_task", fake_task)
    monkeypatch.setattr(parts, "REPORTS", {p: fake_report(p) for p in parts.PARTS})
    by_part = parts.tasks(["globalization", "robustness"], ["pendulum"], instances=1)
    n_glob, n_rob = len(by_part["globalization"]), len(by_part["robustness"])
    store = ResultsStore(tmp_path / "s.csv")
    out = parts.study(by_part, store=store, log=log)
    assert out == {"globalization": ["globalization"], "robustness": ["robustness"]}
    # in-process the parts run in order, each reported right after its last task; what the
    # reports print comes after the run
    assert events == ([("task", "globalization")] * n_glob + [("report", "globalization", n_glob)]
                      + [("task", "robustness")] * n_rob + [("report", "robustness", n_rob)]
                      + [("print", "globalization table"), ("print", "robustness table")])
    # resumed with nothing left to run: every part is reported after the (empty) run
    events.clear()
    parts.study(by_part, store=store, resume=True, log=log)
    assert events == [("report", "globalization", n_glob), ("print", "globalization table"),
                      ("report", "robustness", n_rob), ("print", "robustness table")]


def test_a_report_that_fails_stops_no_task_and_raises_after_the_run(tmp_path, monkeypatch):
    ran = []

    def broken(records, log):
        raise RuntimeError("a bug in the report")

    monkeypatch.setattr(engine, "run_task",
                        lambda t: ran.append(t) or dict(blank_record(t, "converged"), pid=1))
    monkeypatch.setattr(parts, "REPORTS", dict(parts.REPORTS, globalization=broken))
    by_part = parts.tasks(["globalization", "robustness"], ["pendulum"], instances=1)
    store = ResultsStore(tmp_path / "s.csv")
    monkeypatch.setattr("problems.output.RESULTS", tmp_path)
    with pytest.raises(RuntimeError, match="a bug in the report"):
        parts.study(by_part, store=store, log=lambda *a: None)
    assert len(ran) == len(store.records()) == sum(map(len, by_part.values()))


def test_on_a_cluster_the_parts_run_in_order_and_the_long_tasks_first_within_each():
    todo = [task(part="robustness", problem="pendulum", seed=0, method="ddp"),
            task(part="backends", problem="pendulum", method="ddp"),
            task(part="backends", problem="atlas", method="ddp"),
            task(part="backends", problem="ur3", method="ddp", backend="casadi"),
            task(part="robustness", problem="atlas", seed=0, method="ddp")]
    p = engine._priorities(todo)
    # robustness appears first, so it runs first; within a part: casadi UR3, ATLAS, pendulum
    assert p[4] > p[0] > p[3] > p[2] > p[1]


def test_the_table_keeps_crocoddyls_better_start():
    """Crocoddyl runs from both starts; the comparison keeps each solver's better run (converged,
    then the lower cost, then the shorter time) and names its start."""
    from problems.studies import _better_crocoddyl_runs, _run_label

    def run(start, method, converged, cost, time_s):
        return dict(problem="hyq-jump", solver="crocoddyl", method=method, start=start,
                    converged=converged, cost=cost, time_s=time_s, iterations=10,
                    versions={"crocoddyl": "3.2.1"})

    ours = dict(problem="hyq-jump", solver="soddp", method="ddp", iterations=9)
    rollout, x0 = run("quasi-static", "fddp", True, 88330.2, 1.7), run("crocoddyl", "fddp", True,
                                                                         4657.6, 0.5)
    slow, fast = run("quasi-static", "ddp", True, 4657.6, 0.9), run("crocoddyl", "ddp", True,
                                                                      4657.6 * (1 + 1e-9), 0.4)
    failed = run("crocoddyl", "fddp", False, 1.0, 0.1)
    kept = _better_crocoddyl_runs([ours, rollout, x0, slow, fast, failed])
    assert kept == [ours, x0, fast]
    assert _run_label(x0) == "Crocoddyl FDDP 3.2.1 (from x0)"
    assert _run_label(rollout) == "Crocoddyl FDDP 3.2.1 (from quasi-static)"
