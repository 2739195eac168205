"""How the study engine scales (``soddp bench dask``): one 40-task study (random UR3 and HyQ
instances, DDP and iLQR, default and pure globalization) run in this process on one thread, on a
local Dask cluster of 1 worker and of 2 workers, each into a fresh store.

It measures, in one run:

* wall time of the study (cluster start-up apart) and the speed-up of 2 workers over 1;
* the scheduling overhead per task: on each worker, the idle gap between the end of one task and
  the start of the next (serialization, scheduler round trip, result hand-back), beside the
  median solve time of the UR3 tasks;
* the parallel efficiency: the time spent in tasks over workers x wall time.

From the robustness records of the study store (if any) it estimates the wall time of the full
robustness study (1000 instances per family) on 1, 8 and 64 cores.  Writes
``results/dask_scaling.{csv,md}``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numba
import numpy as np

from .. import engine, parts
from ..output import write_table
from ..robustness import COMBOS, robustness_tasks
from ..store import ResultsStore

#: the 40 tasks: 5 instances x 4 (method, globalization) x these families
FAMILIES = ("ur3", "hyq")
INSTANCES = 5
#: the full robustness study that the estimate is for
FULL_INSTANCES = 1000
CORES = (1, 8, 64)

COLUMNS = [("run", "run"), ("workers", "workers"), ("tasks", "tasks"),
           ("start_s", "cluster start [s]"), ("wall_s", "study wall time [s]"),
           ("speedup", "speed-up over 1 worker"), ("efficiency", "parallel efficiency"),
           ("gap_ms", "scheduling gap per task [ms]: median"),
           ("ur3_ms", "UR3 solve [ms]: median"), ("overhead_pct", "gap / UR3 solve [%]")]


def _gaps(records):
    """Idle gaps between consecutive tasks of the same worker process (s)."""
    gaps = []
    for pid in {r["pid"] for r in records}:
        mine = sorted((r for r in records if r["pid"] == pid), key=lambda r: r["started"])
        gaps += [b["started"] - a["finished"] for a, b in zip(mine, mine[1:])]
    return np.array(gaps)


def _measure(tasks, workers, in_process, folder: Path, log):
    """One run of ``tasks`` into a fresh store: in this process, or on a new local cluster of
    ``workers`` processes; returns (table row, records)."""
    label = "in-process" if in_process else "local cluster"
    store = ResultsStore(folder / f"{label}-{workers}.csv")
    t0 = time.perf_counter()
    client = None if in_process else engine.local_cluster(workers)
    start = time.perf_counter() - t0
    try:
        _, wall = engine.run(tasks, store, client, label=label)
    finally:
        engine.close(client)
    records = store.records()
    busy = sum(r["finished"] - r["started"] for r in records)
    gaps = _gaps(records)
    ur3 = np.median([r["time_s"] for r in records if r["problem"] == "ur3"])
    row = dict(run=label, workers=workers, tasks=len(records),
               start_s=None if client is None else start, wall_s=wall,
               efficiency=busy / (workers * wall),
               gap_ms=1e3 * float(np.median(gaps)) if gaps.size else float("nan"),
               ur3_ms=1e3 * ur3)
    row["overhead_pct"] = 100 * row["gap_ms"] / row["ur3_ms"]
    log(f"{label}: {wall:.1f} s ({start:.1f} s start-up)")
    return row, records


def estimate(records, speedup, cores=CORES, instances=FULL_INSTANCES):
    """Wall-time estimates of the full robustness study from robustness ``records``: the serial
    time scaled to ``instances`` per family, divided by cores x the per-worker efficiency that
    the 2-worker speed-up shows, and never below the longest single task.  Returns rows."""
    rows = []
    if not records:
        return rows
    per_family = {}
    for r in records:
        per_family.setdefault(r["problem"], []).append(r["finished"] - r["started"])
    seeds = {f: len({r["seed"] for r in records if r["problem"] == f}) for f in per_family}
    serial = sum(sum(d) * instances / seeds[f] for f, d in per_family.items())
    longest = max(max(d) for d in per_family.values())
    efficiency = min(speedup / 2, 1.0)
    for c in cores:
        wall = serial if c == 1 else max(serial / (c * efficiency), longest)
        rows.append(dict(cores=c, tasks=instances * len(per_family) * len(COMBOS),
                         hours=wall / 3600, bound="longest task" if wall == longest else
                         ("serial sum" if c == 1 else f"sum / (cores x {efficiency:.2f})")))
    return rows


def run_dask_scaling(log=print):
    tasks = robustness_tasks(INSTANCES, FAMILIES, crocoddyl=False)
    assert len(tasks) == 40
    rows = []
    with tempfile.TemporaryDirectory() as d:
        numba.set_num_threads(1)  # the in-process baseline: one worker, one thread
        try:
            rows.append(_measure(tasks, 1, True, Path(d), log)[0])
        finally:
            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        rows.append(_measure(tasks, 1, False, Path(d), log)[0])
        rows.append(_measure(tasks, 2, False, Path(d), log)[0])
    base = {r["workers"]: r["wall_s"] for r in rows if r["run"] == "local cluster"}
    for r in rows:
        r["speedup"] = rows[0]["wall_s"] / r["wall_s"]
    s2 = rows[-1]["speedup"]
    robust = [r for r in parts.default_store().records() if r["part"] == "robustness"
              and r["started"] is not None]
    est = estimate(robust, s2)
    notes = [f"one study of {len(tasks)} tasks: random instances 0-{INSTANCES - 1} of "
             f"{' and '.join(FAMILIES)}, DDP and iLQR with the default and the pure (shift) "
             "globalization, max_iter 300; each run into a fresh store, one after the other",
             "speed-up: the in-process run (one numba thread, as a worker has) over each run; "
             f"2 workers over a 1-worker cluster: {base[1] / base[2]:.2f}x",
             "cluster start: starting the local cluster and its worker processes (not in the "
             "wall time); each worker loads the compiled kernels from numba's cache on its first "
             "task of a configuration and warms that configuration up once (untimed in the "
             "solve time, counted in the wall time)",
             "scheduling gap: on each worker, start of a task minus end of the previous one "
             f"(median); each worker holds {engine.WORKER_SATURATION:g} tasks, so the next one "
             "is waiting when a task ends",
             f"machine: {os.cpu_count()} cores; times vary up to 2x between hours, the ratios "
             "are from one run"]
    if est:
        notes.append(f"estimate of the full robustness study ({FULL_INSTANCES} instances per "
                     f"family, {est[0]['tasks']} tasks), from the task times of the "
                     f"{len(robust)} robustness records in results/{parts.STORE_NAME} and the "
                     f"2-worker efficiency {min(s2 / 2, 1):.2f}: "
                     + "; ".join(f"{e['cores']} core{'s' * (e['cores'] > 1)} "
                                 f"{e['hours']:.2g} h ({e['bound']})" for e in est)
                     + " (the task times were measured with 2 workers busy at once, a few percent "
                     "slower than alone; the bound on many cores is the total solve time, not the "
                     "scheduler: about 1 ms per task, 20 s for 20000 tasks, nor the longest task, "
                     f"{max(r['finished'] - r['started'] for r in robust):.0f} s)")
    write_table(rows, "dask_scaling", "The study engine on Dask: speed-up and overhead",
                COLUMNS, notes, log)
    return rows, est
