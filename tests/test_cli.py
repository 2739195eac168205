"""The soddp command: help everywhere, one-line errors with exit code 2, a real (small) run."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ddp
import problems
from dynamics import robots
from problems import cli, output
from problems.bench import backends, compile_profile, derivatives, linearization

ROOT = Path(__file__).resolve().parent.parent


def _soddp(*args):
    return subprocess.run([sys.executable, "-m", "problems.cli", *args], capture_output=True,
                          text=True, cwd=ROOT)


@pytest.mark.parametrize("args", [["--help"], ["bench", "--help"], ["solve", "--help"],
                                  ["compare", "--help"], ["study", "--help"]])
def test_help(args):
    r = _soddp(*args)
    assert r.returncode == 0 and "usage: soddp" in r.stdout


def test_unknown_names_exit_2():
    r = _soddp("bench", "fo", "--robots", "ur6")
    assert r.returncode == 2 and "unknown robot 'ur6'" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _soddp("bench", "nonsense")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    for args in (["solve", "cartpole"], ["solve", "ur3", "--backend", "pinocchio"],
                 ["compare", "walker"], ["study", "--problems", "ur5"]):
        r = _soddp(*args)
        assert r.returncode == 2 and "invalid choice" in r.stderr, args
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("args,message", [
    (["solve", "ur3", "--max-iter", "-3"], "--max-iter: expected a non-negative integer; got '-3'"),
    (["compare", "ur3", "--max-iter", "x"], "--max-iter: expected a non-negative integer"),
    (["bench", "fo", "--batch", "0"], "--batch: expected a positive integer; got '0'"),
    (["bench", "fo", "--min-time", "nan"], "--min-time: expected a positive number; got 'nan'"),
    (["bench", "casadi", "--codegen-timeout", "-1"], "--codegen-timeout: expected a positive"),
    (["study", "--instances", "0"], "--instances: expected a positive integer"),
    (["study", "--workers", "1.5"], "--workers: expected a positive integer; got '1.5'")])
def test_bad_numbers_exit_2_naming_the_option(args, message, capsys):
    """Checked by the parser, before any work (they used to start a benchmark or end in a
    traceback)."""
    with pytest.raises(SystemExit) as e:
        cli.build_parser().parse_args(args)
    err = capsys.readouterr().err
    assert e.value.code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def _tree_state(root):
    """(path, size, mtime) of every file of the checkout that the commands could touch: the
    packages, results/, docs, tests (not their caches), README.md and pyproject.toml.  Not the
    top folder's other files, which something else may write meanwhile (a log of this run)."""
    keep = {"dynamics", "ddp", "problems", "results", "docs", "tests", "README.md",
            "pyproject.toml"}
    return sorted((str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
                  for p in root.rglob("*")
                  if p.relative_to(root).parts[0] in keep and "__pycache__" not in p.parts
                  and p.is_file())


def test_the_command_returns_mains_status_and_spares_the_collector_at_exit(monkeypatch):
    """The installed ``soddp`` runs :func:`problems.cli.run`: main's exit status, then
    ``gc.freeze`` (the garbage collector's passes over numba's objects while Python shuts down
    took 0.3-0.5 s of a warm run)."""
    import gc
    from importlib.metadata import entry_points

    (command,) = [e for e in entry_points(group="console_scripts") if e.name == "soddp"]
    assert command.value == "problems.cli:run"
    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    monkeypatch.setattr(sys, "argv", ["soddp", "higher-order", "--dt", "-1"])
    assert cli.run() == 2 and frozen == [True]


def test_commands_write_where_the_user_runs_and_never_into_the_package(tmp_path):
    """From another folder, a command writes results/ there (or to --out), and nothing in the
    checkout (the installed package, with pip install -e) changes."""
    before = _tree_state(ROOT)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(__import__("os").environ, PYTHONPATH=str(ROOT))
    run = [sys.executable, "-m", "problems.cli", "solve", "pendulum", "--max-iter", "3"]
    r = subprocess.run(run, capture_output=True, text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert (work / "results" / "solve_pendulum_ddp_analytical.png").is_file()
    assert (work / "results" / "solve_pendulum_ddp_analytical_trajectory.csv").is_file()
    r = subprocess.run(run + ["--out", str(tmp_path / "elsewhere")], capture_output=True,
                       text=True, cwd=work, env=env)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "elsewhere" / "solve_pendulum_ddp_analytical.png").is_file()
    assert _tree_state(ROOT) == before


def test_solve_writes_table_plot_and_trajectory(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    assert cli.main(["solve", "pendulum", "--max-iter", "50", "--plot"]) == 0
    out = capsys.readouterr().out
    assert "|grad|" in out and "converged" in out
    for f in ("solve_pendulum_ddp_analytical.png", "solve_pendulum_ddp_analytical_trajectory.csv",
              "solve_pendulum_ddp_analytical_trajectory.png"):
        assert (tmp_path / f).stat().st_size > 0
    rows = (tmp_path / "solve_pendulum_ddp_analytical_trajectory.csv").read_text().splitlines()
    assert rows[0] == "t,q_joint,v_joint,u_joint" and len(rows) == 102


def test_the_trajectory_of_a_gait_carries_its_contact_forces(tmp_path, monkeypatch):
    """On a problem with contacts the CSV has each foot's force (world axes; at an impact its
    impulse), empty where the foot is in the air.  Over the trot, which starts and ends at rest,
    the feet's vertical impulse carries the robot's weight: sum of f_z dt (impulses as they
    are) = m g T dt within 5%."""
    import csv

    monkeypatch.setattr(output, "RESULTS", tmp_path)
    assert cli.main(["solve", "hyq-trot"]) == 0  # 5 iterations
    with open(tmp_path / "solve_hyq-trot_ddp_analytical_trajectory.csv") as f:
        rows = list(csv.DictReader(f))
    feet = ("lf_foot", "rf_foot", "lh_foot", "rh_foot")
    assert all(f"f_{foot}_{a}" in rows[0] for foot in feet for a in "xyz")
    P = problems.get("hyq-trot")
    impacts = np.concatenate([np.full(p.knots, p.impact) for p in P.phases])
    impulse = sum(float(r[f"f_{foot}_z"]) * (1.0 if impacts[t] else P.dt)
                  for t, r in enumerate(rows[:-1]) for foot in feet if r[f"f_{foot}_z"])
    mass = sum(body.mass for body in robots.load("hyq").pin_model.inertias)
    assert abs(impulse / (mass * 9.81 * P.T * P.dt) - 1) < 0.05, (impulse, mass)
    swinging = [r for r in rows[:-1] if r["f_rf_foot_z"] == ""]
    assert swinging and all(r["f_lf_foot_z"] != "" for r in swinging)  # lf supports as rf swings


def test_animate_writes_one_self_contained_html_file(tmp_path, monkeypatch):
    """``--animate``: the viewer's JavaScript and the scene in one file, nothing fetched from
    elsewhere; a robot without a URDF (the pendulum) is drawn as balls; the HyQ gait carries its
    meshes (another megabyte)."""
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    assert cli.main(["solve", "pendulum", "--max-iter", "5", "--animate"]) == 0
    html = (tmp_path / "solve_pendulum_ddp_analytical_animation.html").read_text()
    assert "<script" in html and "meshcat" in html.lower()
    assert not re.search(r"<(script|link)[^>]*(src|href)=", html)
    P = problems.get("hyq-trot")
    path = ddp.animate(P, P.rollout(P.quasi_static())[:5], tmp_path / "hyq")
    assert path == tmp_path / "hyq.html" and path.stat().st_size > len(html) + 500_000
    with pytest.raises(ValueError, match=r"xs: expected shape \(knots, 37\)"):
        ddp.animate(P, np.zeros((5, 36)), tmp_path / "bad")


def _chromium():
    import shutil

    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser",
                                                        "google-chrome")) if p), None)


@pytest.mark.skipif(_chromium() is None, reason="no Chromium (.ci/run installs Debian's)")
def test_the_animation_renders_the_robot_in_a_real_browser(tmp_path, monkeypatch):
    """Headless Chromium opens the HTML file (WebGL in software) and a frame shows HyQ's green
    trunk over the grey ground."""
    import matplotlib.image

    monkeypatch.setattr(output, "RESULTS", tmp_path)
    P = problems.get("hyq-trot")
    page = ddp.animate(P, P.rollout(P.quasi_static())[:10], tmp_path / "hyq.html")
    shot = tmp_path / "frame.png"
    subprocess.run([_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--use-gl=swiftshader", "--enable-unsafe-swiftshader",
                    "--window-size=640,400", "--virtual-time-budget=1000",
                    f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=120)
    rgb = matplotlib.image.imread(shot)[..., :3]
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    green = np.mean((g > 0.4) & (g > 2 * r) & (g > 2 * b))
    grey = np.mean((np.abs(r - g) < 0.03) & (np.abs(g - b) < 0.03) & (r > 0.4) & (r < 0.8))
    assert green > 0.003 and grey > 0.1, (green, grey)


def test_log_axes_are_labelled_in_plain_text():
    plt = output.pyplot()
    fig, (a1, a2, a3) = plt.subplots(1, 3)
    a1.semilogy([1e-3, 2e2])
    a2.semilogy([2e-3, 5e-3])  # less than a decade: matplotlib labels minor ticks as well
    a3.set_xscale("log", base=2)
    a3.plot([1, 8], [1, 2])
    output.tight_layout(fig)
    fmt = a1.yaxis.get_major_formatter()
    assert [fmt(x) for x in (1e-3, 1.0, 100.0)] == ["10⁻³", "10⁰", "10²"]
    minor = {t.get_text() for t in a2.yaxis.get_minorticklabels()}
    assert {"2×10⁻³", "3×10⁻³"} <= minor and not any("$" in t for t in minor), minor
    assert a3.xaxis.get_major_formatter()(4.0).startswith("$")  # base 2 keeps its labels
    plt.close(fig)


def test_compare_runs_every_backend(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    assert cli.main(["compare", "pendulum", "--max-iter", "100"]) == 0
    text = (tmp_path / "compare_pendulum.md").read_text()
    for run in ("DDP, analytical", "iLQR, analytical", "DDP, CasADi AD", "DDP, finite differences"):
        assert f"| pendulum | 1 | {run} | converged |" in text
    assert (tmp_path / "compare_pendulum.png").stat().st_size > 0


def test_bench_first_order_small(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    monkeypatch.setattr(derivatives, "compile_times", lambda **k: [])
    assert cli.main(["bench", "fo", "--robots", "ur3", "--batch", "4", "--min-time", "0.01"]) == 0
    text = (tmp_path / "derivatives_fo.md").read_text()
    assert "| ur3 | 6 | fd_derivatives (FDSVA) |" in text
    assert len((tmp_path / "derivatives_fo.csv").read_text().splitlines()) == 5  # header + 4 rows


def test_first_run_starts_cold_caches_and_warm_runs_reuse_them(tmp_path, monkeypatch):
    """``soddp bench first-run``: a cold run gets new empty folders for numba's cache and for
    Python's bytecode (as after a fresh install with ``--no-compile``), a warm run those its cold
    run left, and the caller's ``PYTHONDONTWRITEBYTECODE`` never reaches them."""
    from problems.bench import first_run

    monkeypatch.setattr(output, "RESULTS", tmp_path)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    seen = []

    def run(command, cwd, env, **kwargs):
        folders = env["NUMBA_CACHE_DIR"], env["PYTHONPYCACHEPREFIX"]
        seen.append((folders, "PYTHONDONTWRITEBYTECODE" in env,
                     [any(Path(f).rglob("*")) for f in folders]))
        Path(folders[1], "written.pyc").write_bytes(b"")
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(first_run.subprocess, "run", run)
    runs = (("a, cold", ["solve", "--help"], "cold", None),
            ("a, warm", ["solve", "--help"], "a, cold", 3.0),
            ("b, cold", ["compare", "--help"], "cold", None))
    rows = first_run.run_first_run(log=lambda *a: None, runs=runs)
    assert [r["status"] for r in rows] == [0, 0, 0] and rows[1]["met"] == "yes"
    (a, a_env, a_full), (w, w_env, w_full), (b, b_env, b_full) = seen
    assert w == a and b != a and len({*a, *b}) == 4
    assert not (a_env or w_env or b_env)
    assert a_full == [False, False] and w_full == [False, True] and b_full == [False, False]
    assert "PYTHONPYCACHEPREFIX" in (tmp_path / "first_run.md").read_text()


def test_compile_profile_splits_own_and_callee_time():
    """``soddp bench compile``'s listeners on a chain f -> g compiled here: g's compile counts
    in f's inclusive time and not in its own, the two own times add up to f's inclusive time,
    and each function's LLVM time is a part of its own time."""
    from numba import njit

    @njit(cache=False)
    def g(x):
        return 2.0 * x + 1.0

    @njit(cache=False)
    def f(x):
        return g(x) - 1.0

    times = compile_profile.CompileTimes()
    with times.listening():
        assert f(1.5) == 3.0
    g(2.0)  # compiled already: no event, and none recorded after the listeners are removed
    rec = times.record(1.0)
    by = {r["name"].rsplit(".", 1)[-1]: r for r in rec["functions"]}
    assert set(by) == {"f", "g"} and by["f"]["compiles"] == by["g"]["compiles"] == 1
    F, G = by["f"], by["g"]
    assert G["own_s"] == pytest.approx(G["inclusive_s"])
    assert F["own_s"] + G["inclusive_s"] == pytest.approx(F["inclusive_s"])
    assert F["own_s"] < F["inclusive_s"]
    for r in (F, G):
        assert 0 < r["llvm_s"] < r["own_s"]
    assert rec["llvm_s"] == pytest.approx(F["llvm_s"] + G["llvm_s"])


def test_compile_profile_runs_the_command_in_a_fresh_process(tmp_path, monkeypatch):
    """The profile's plumbing, on commands that compile nothing: the child runs soddp with the
    listeners and hands back its times (none here), the table names the command, and a
    command that fails is an error naming its exit code."""
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    rows = compile_profile.run_compile_profile(("solve", "--help"), log=lambda *a: None)
    assert rows == []
    text = (tmp_path / "compile_profile.md").read_text()
    assert "soddp solve --help, empty NUMBA_CACHE_DIR" in text and "in 0 functions" in text
    with pytest.raises(RuntimeError, match="exit code 2"):
        compile_profile.run_compile_profile(("solve", "--no-such-option"), log=lambda *a: None)


def test_bench_linearization_small(tmp_path, monkeypatch):
    """Every column is timed, and the like-for-like ratios pair the kernel called from Python
    with Pinocchio's binding and the kernel's compiled loop with C++ (absent on a clean
    machine: its ratios are then blank, not wrong)."""
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    cpp = {}
    monkeypatch.setattr(linearization, "cpp_timings", lambda *a, **k: cpp)
    for c in ({}, {"aba_derivs_us": 10.0}):
        cpp = c
        (row,) = linearization.run_linearization(("hyq",), T=3, min_time=0.001, turns=1,
                                                 log=lambda *a: None)
        timed = [k for k, _ in linearization.COLUMNS if k.endswith("_us") and k != "pin_cpp_us"]
        assert all(row[k] > 0 for k in timed)
        assert row["kernel_vs_py"] == pytest.approx(row["geo_kernel_us"] / row["pin_py_us"])
        if c:
            assert row["loop_vs_cpp"] == pytest.approx(row["geo_kernel_loop_us"] / 10.0)
        else:
            assert row["loop_vs_cpp"] is None and row["kernel_vs_cpp"] is None
    assert "kernel loop / C++" in (tmp_path / "linearization_speed.md").read_text()


def test_casadi_and_accuracy_benchmarks_small(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "RESULTS", tmp_path)
    rows = backends.run_casadi(["double_pendulum"], T=2, min_time=0.01, codegen=False,
                                     log=lambda *a: None)
    assert {r["backend"] for r in rows} == {"analytical (ours)", "CasADi SX (no codegen)"}
    # (a function that another test of this process built is shared: "ok (built earlier ...)")
    assert all(r["status"].startswith("ok") and r["single_us"] > 0 for r in rows)
    assert "| double_pendulum | 2 | FD-SO, full | CasADi SX" in (tmp_path / "casadi_baseline.md").read_text()
    rows = backends.run_accuracy(sizes=(2, 3), log=lambda *a: None)
    ours = [r for r in rows if r["method"] == "IDSVA-SO (ours)"]
    assert len(ours) == 4 and all(r["MRE"] < 1e-12 for r in ours)
    assert all(r["MRE"] > 1e-12 for r in rows if r["method"] == "Finite-Diff-1")
    assert (tmp_path / "accuracy_so.png").stat().st_size > 0


def test_at_the_repository_root_commands_write_to_a_folder_git_ignores(monkeypatch, tmp_path):
    """Run from the repository's root, the default folder is output/ (in .gitignore), so that
    trying a command does not rewrite the committed results/; elsewhere results/."""
    from problems import output

    monkeypatch.setattr(output, "RESULTS", None)
    monkeypatch.chdir(output.REPOSITORY)
    assert output.default_folder() == output.REPOSITORY / "output"
    assert "/output/" in (output.REPOSITORY / ".gitignore").read_text().split()
    monkeypatch.chdir(tmp_path)
    assert output.default_folder() == tmp_path / "results"
