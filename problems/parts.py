"""``soddp study`` and ``soddp report``: the study's parts, each a list of tasks and a report
computed from their records alone.

=============  =====================================================  ========================
part           tasks                                                  report
=============  =====================================================  ========================
backends       DDP / iLQR, analytical / CasADi / finite differences,  ``results/study.*``,
               on every example problem (Crocoddyl beside)            ``compare_*.png``
globalization  every globalization, single and multiple shooting,     ``globalization.*``
               quasi-static and cold starts (Crocoddyl beside)
robustness     random instances of eight families, DDP, iLQR, FDDP   ``robustness.*``
=============  =====================================================  ========================

:func:`tasks` builds every task first (so that a wrong name fails before any work),
:func:`study` runs them with :mod:`problems.engine` into the results store
(:mod:`problems.store`), then reports from the store; :func:`report` only reports.

A study's *configuration* (:func:`configuration`: quick or full, instances, our methods, extra
settings, a subset of problems) is stamped on each of its records.  One store may hold several
studies (a quick one beside the full one); a report shows one, chosen by its name
(``soddp report --study quick``), and refuses to mix them.
"""

from __future__ import annotations

import json

from . import engine
from .examples import PROBLEMS
from .output import results_dir
from .robustness import (COMBOS, globalization_report, globalization_tasks, robustness_report,
                         robustness_tasks)
from .store import ResultsStore
from .studies import COMPARED, QUICK_BACKEND_PROBLEMS, backends_report, backends_tasks
from .tasks import FAMILIES, SOLVERS, STUDY_FIELD, task_key

PARTS = ("backends", "globalization", "robustness")
REPORTS = {"backends": backends_report, "globalization": globalization_report,
           "robustness": robustness_report}
#: the store's file in results/
STORE_NAME = "study_store.csv"


def default_store() -> ResultsStore:
    return ResultsStore(results_dir() / STORE_NAME)


def configuration(problems=None, quick=False, instances=None, methods=SOLVERS["soddp"],
                  settings=None) -> dict:
    """A study's configuration (the arguments of :func:`tasks` but the parts), canonical."""
    return dict(problems=sorted(problems) if problems else None, quick=bool(quick),
                instances=instances, methods=sorted(methods), settings=dict(settings or {}))


def configuration_name(config: dict) -> str:
    """The name of a configuration, as the ``soddp study`` options that make it: ``full``,
    ``quick``, ``quick --set tol=1e-08``, ..."""
    words = ["quick" if config["quick"] else "full"]
    if config["problems"]:
        words.append("--problems " + " ".join(config["problems"]))
    if config["instances"] is not None:
        words.append(f"--instances {config['instances']}")
    if sorted(config["methods"]) != sorted(SOLVERS["soddp"]):
        words.append("--methods " + " ".join(config["methods"]))
    if config["settings"]:
        words.append("--set " + " ".join(f"{k}={v}" for k, v in sorted(config["settings"].items())))
    return " ".join(words)


#: the configuration of records written before configurations were stamped: the full study
_UNSTAMPED = configuration()


def _configuration_of(record) -> dict:
    text = record.get(STUDY_FIELD)
    return json.loads(text) if text else _UNSTAMPED


def tasks(parts=PARTS, problems=None, quick=False, instances=None, methods=SOLVERS["soddp"],
          settings=None, crocoddyl=None) -> dict:
    """The tasks of each part: {part: [task, ...]}.  ``problems``: a subset of the example
    problems (and families); ``quick``: fewer iterations, backends and instances;
    ``instances``: random instances per family (default 20, quick 5); ``methods``: ours to run;
    ``settings``: more solver settings for every task of ours; ``crocoddyl``: whether Crocoddyl's
    tasks are included (None: when it is configured).  ValueError on a wrong name.  Each task
    carries its study's :func:`configuration` (JSON)."""
    stamp = json.dumps(configuration(problems, quick, instances, methods, settings),
                       sort_keys=True)
    out = {}
    for part in parts:
        if part not in PARTS:
            raise ValueError(f"parts: expected some of {', '.join(PARTS)}; got {part!r}")
    if "backends" in parts:
        runs_of = ({n: COMPARED if n in QUICK_BACKEND_PROBLEMS else COMPARED[:2]
                    for n in (problems or PROBLEMS)} if quick else None)
        out["backends"] = backends_tasks(problems, 150 if quick else 500, runs_of, methods,
                                         settings, crocoddyl)
    if "globalization" in parts:
        out["globalization"] = globalization_tasks(problems, 150 if quick else 300, methods,
                                                   settings, crocoddyl)
    if "robustness" in parts:
        n = instances if instances is not None else (5 if quick else 20)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"instances: expected a positive integer; got {n!r}")
        families = [f for f in (problems or FAMILIES) if f in FAMILIES]
        out["robustness"] = robustness_tasks(n, families, 150 if quick else 300, methods,
                                             settings, crocoddyl)
    for ts in out.values():
        for t in ts:
            t[STUDY_FIELD] = stamp
    return out


def study(by_part: dict, client=None, store=None, resume=False, log=print) -> dict:
    """Run the tasks of :func:`tasks` ({part: [task, ...]}; ``client``: see
    :func:`engine.connect`, None: in-process) into ``store`` (default
    ``results/study_store.csv``) and write each part's report from the store; ``resume``: skip
    the tasks already stored.  Returns {part: report rows}.

    The parts run one after the other (:func:`engine.run`), and a part's tables and figures are
    written as soon as its last task has run, while the workers run the next part's tasks (a
    quick study's figures take 2-3 s); what the reports print comes after the progress bar."""
    store = store or default_store()
    keys = {part: {task_key(t) for t in ts} for part, ts in by_part.items()}
    left = {}  # part -> keys still running (a part is reported once all of its tasks ran)
    written = {}  # part -> (report rows, its log lines), for the parts reported during the run

    def report_part(part, records, log_to):
        mine = [r for r in records if r["key"] in keys[part]]
        return REPORTS[part](mine, log_to) if mine else None

    def on_start(todo):
        for t in todo:
            left.setdefault(t["part"], set()).add(task_key(t))

    def on_record(record):  # the part's figures drawn while the next part runs on the workers
        part = record["part"]
        if part in left and record["key"] in left[part]:
            left[part].discard(record["key"])
            if not left[part]:
                lines = []
                try:
                    written[part] = report_part(part, store.records(), lines.append), lines
                except Exception:  # not now, so that the other parts' tasks go on: the
                    pass           # report is made again after the run, and raises there

    engine.run([t for ts in by_part.values() for t in ts], store, client, resume,
               on_record=on_record, on_start=on_start)
    records = store.records() if set(by_part) - set(written) else []  # read once for the rest
    out = {}
    for part in by_part:
        rows, lines = written[part] if part in written else (report_part(part, records, log), ())
        for line in lines:  # printed after the progress bar, as if written now
            log(line)
        if rows is None:
            log(f"{part}: no tasks for these problems")
        else:
            out[part] = rows
    return out


def studies_in(records) -> dict:
    """{name: configuration} of the studies that wrote ``records``."""
    out = {}
    for r in records:
        config = _configuration_of(r)
        out.setdefault(configuration_name(config), config)
    return out


def report(parts=PARTS, store=None, log=print, study=None) -> dict:
    """Every part's tables and figures from the records in ``store`` alone (no solving), for
    the study named ``study`` (:func:`configuration_name`; None: the store's only study);
    parts without records are skipped.  Returns {part: report rows}.  ValueError when the store
    holds several studies and none is chosen, or the one chosen is not there."""
    store = store or default_store()
    records = store.records()
    found = studies_in(records)
    if study is None and len(found) > 1:
        raise ValueError(f"the store {store.path} holds {len(found)} studies ("
                         + "; ".join(repr(n) for n in sorted(found))
                         + "): choose one with --study NAME")
    if study is not None and study not in found:
        raise ValueError(f"--study: no study {study!r} in {store.path} (it holds "
                         + "; ".join(repr(n) for n in sorted(found)) + ")")
    config = found[study] if study is not None else next(iter(found.values()), _UNSTAMPED)
    wanted = tasks(parts, crocoddyl=True, **config)
    keys = {task_key(t) for ts in wanted.values() for t in ts}
    records = [r for r in records if r["key"] in keys]
    out = {}
    for part in parts:
        mine = [r for r in records if r["part"] == part]
        if mine:
            out[part] = REPORTS[part](mine, log)
        else:
            log(f"{part}: no records in {store.path}")
    return out


__all__ = ["study", "report", "tasks", "configuration", "configuration_name", "studies_in",
           "PARTS", "COMBOS", "default_store"]
