"""Run study tasks on Dask (``dask.distributed``): in-process, on a local cluster, or on an
existing cluster; each finished task's record goes to the results store at once.

* :func:`connect` gives a Dask ``Client``: ``scheduler`` connects to a running cluster
  (``dask scheduler`` plus ``dask worker``, dask-jobqueue on SLURM, Kubernetes); ``workers`` = N
  starts a ``LocalCluster`` of N worker processes with one thread each (and each task on one
  numba thread, so that workers do not fight over cores); N = 1 means no cluster (in-process,
  for debugging).
* :func:`run` submits the tasks not yet in the store, group by group in the order of their
  ``part`` in the list (so that a part finishes, and its report can be written, while the next
  one runs) and the largest robots first within a part (so that the long tasks do not straggle
  at the end), appends each record as it arrives and shows a progress bar.

Faults.  Tasks are pure functions of their description (:func:`problems.tasks.run_task`), so any
worker can run any task.  A worker that dies takes its tasks with it; Dask's scheduler
reschedules them on the other workers (and the nanny restarts the dead one) until a task has
been on ``RETRIES`` dead workers: then it is recorded with status "worker died", and ``--resume``
tries it again.  A task that fails in the solver returns its status (an exception is recorded as
"error: ..."): it is a record like any other and is not retried.  The store is written only by
this process, one line per record, so that an interrupted study loses no finished task.
"""

from __future__ import annotations

import logging
import os
import time

from dynamics import set_threads

from .output import Progress
from .store import ResultsStore
from .tasks import blank_record, run_task, task_key

#: a task is rescheduled after its worker died at most this many times (Dask's allowed-failures)
RETRIES = 3
#: tasks a worker holds per thread (one running, the next ready: no idle gap between tasks)
WORKER_SATURATION = 2.0
#: Dask settings of a local cluster (for a cluster of your own, put them in the Dask config of
#: the scheduler and the workers, e.g. as DASK_DISTRIBUTED__... environment variables):
#: * retries after a worker died, and tasks held per worker;
#: * no statistical profiler in the workers: it samples the running task every 10 ms and cost
#:   10% of the solve time on 40 UR3 and HyQ tasks;
#: * one OpenMP / BLAS thread per worker (as Dask's default) and glibc's malloc left alone:
#:   Dask's default MALLOC_TRIM_THRESHOLD_=65536 made the solves 20% slower (the solver
#:   allocates arrays of a few hundred kB per iteration; with a fixed threshold glibc maps and
#:   unmaps them every time).
WORKER_CONFIG = {"distributed.scheduler.allowed-failures": RETRIES,
                 "distributed.scheduler.worker-saturation": WORKER_SATURATION,
                 "distributed.worker.profile.enabled": False,
                 "distributed.nanny.pre-spawn-environ": {
                     "OMP_NUM_THREADS": 1, "MKL_NUM_THREADS": 1, "OPENBLAS_NUM_THREADS": 1}}
#: the status of a task whose workers died RETRIES times (resume runs it again)
WORKER_DIED = "worker died"
#: rough relative cost of a task's problem (priority: the long ones first)
_WEIGHT = {"pendulum": 1, "double_pendulum": 2, "pendubot": 2, "ur3": 6, "hyq": 18, "atlas": 36}


class SchedulerUnreachable(ConnectionError):
    """``--scheduler``: no Dask scheduler answers at the address."""


def connect(workers: int | None = None, scheduler: str | None = None, timeout: float = 10.0):
    """A ``distributed.Client`` for the study, or None to run in-process.

    ``scheduler``: the address of a running scheduler ("tcp://host:8786"); SchedulerUnreachable
    if none answers within ``timeout`` seconds.  Otherwise a local cluster of ``workers``
    processes (default: the number of cores); ``workers`` = 1 gives None."""
    from distributed import Client

    if scheduler:
        try:
            return Client(scheduler, timeout=timeout)
        except (OSError, TimeoutError) as e:
            raise SchedulerUnreachable(f"--scheduler: no Dask scheduler answers at {scheduler!r} "
                                       f"within {timeout:g} s ({type(e).__name__})") from None
    workers = os.cpu_count() if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers: expected a positive number; got {workers}")
    return None if workers == 1 else local_cluster(workers)


def local_cluster(workers: int):
    """A client of a new ``LocalCluster``: ``workers`` processes, one thread each, configured
    by :data:`WORKER_CONFIG`, no dashboard.  (Each task runs its kernels on one numba thread,
    :func:`execute`; the solver already uses one BLAS thread.  Setting NUMBA_NUM_THREADS in the
    workers' environment does not work: the nanny sets it after numba is imported, and numba
    refuses the change at its next compilation.)"""
    import dask
    from distributed import Client, LocalCluster

    with dask.config.set(WORKER_CONFIG):
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        return Client(cluster)


def close(client) -> None:
    """Close a client from :func:`connect` and the local cluster it started (if any)."""
    if client is None:
        return
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def execute(t: dict) -> dict:
    """The worker side of a task: :func:`run_task` on one numba thread, plus the worker's
    address."""
    from distributed import get_worker

    set_threads(1)
    record = run_task(t)
    record["worker"] = get_worker().address
    return record


def pending(tasks, store: ResultsStore, resume: bool):
    """The tasks to run: all of them (their old records dropped) or, with ``resume``, those
    without a record (a record "worker died" is dropped and its task runs again)."""
    by_key = {}
    for t in tasks:
        by_key.setdefault(task_key(t), t)
    if resume:
        records = store.records()
        died = {r["key"] for r in records if r["status"] == WORKER_DIED}
        store.drop(died)
        done = {r["key"] for r in records} - died
        return [t for k, t in by_key.items() if k not in done]
    store.drop(by_key)
    return list(by_key.values())


def run(tasks, store: ResultsStore, client=None, resume=False, label="study", on_record=None,
        progress=True, on_start=None):
    """Run ``tasks`` (dicts of :func:`problems.tasks.task`) and append their records to
    ``store``; returns (tasks run, wall time in s).  ``client``: from :func:`connect` (None:
    in-process, in order).  ``on_start(todo)`` is called with the tasks to run (see
    :func:`pending`) before any runs, ``on_record(record)`` after each record is stored."""
    todo = pending(tasks, store, resume)
    if on_start:
        on_start(todo)
    skipped = len(set(map(task_key, tasks))) - len(todo)
    bar = Progress(len(todo), label, note=f"{skipped} already in the store" if skipped else "",
                   show=progress)
    t0 = time.perf_counter()
    for record in (_serial(todo) if client is None else _distributed(todo, client)):
        store.append(record)
        bar.step(f"{record['problem']} {record['method']}", failed=_failed(record))
        if on_record:
            on_record(record)
    bar.finish()
    return len(todo), time.perf_counter() - t0


def _failed(record) -> bool:
    return record["status"] == WORKER_DIED or record["status"].startswith("error")


def _serial(todo):
    for t in todo:
        yield dict(run_task(t), worker="in-process")


def _priorities(todo) -> list:
    """Dask priorities (higher first) of the tasks: by part, in the order the parts first
    appear in ``todo``, then by :data:`_WEIGHT` (ten times for the slower backends)."""
    rank = {}
    for t in todo:
        rank.setdefault(t["part"], len(rank))
    top = 10 * max(_WEIGHT.values()) + 1  # above any task's weight
    return [(len(rank) - rank[t["part"]]) * top
            + _WEIGHT.get(t["problem"], 1) * (10 if t["backend"] != "analytical" else 1)
            for t in todo]


def _distributed(todo, client):
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    futures = {client.submit(execute, t, key=f"soddp-task-{task_key(t)}", priority=p): t
               for t, p in zip(todo, _priorities(todo))}
    try:
        for future in as_completed(futures):
            t = futures[future]
            try:
                record = future.result()
            except KilledWorker:
                record = blank_record(t, WORKER_DIED)
            future.release()
            yield record
    finally:  # Ctrl-C or an error in the caller: stop the remaining tasks
        client.cancel([f for f in futures if not f.done()])
