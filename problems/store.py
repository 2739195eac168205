"""The results store of the studies: one CSV file, one line per finished task, appended the
moment the task finishes.

Why CSV and not Parquet: a record must be on disk as soon as its task ends, so that nothing done
is lost to Ctrl-C, a power cut or a lost node.  A CSV line is appended with one ``write`` on a
file opened for appending, then flushed to disk (``fsync``); a Parquet file cannot be appended to
(it would take one file per task or a rewrite per task) and needs pyarrow.  The CSV file opens in
any tool.  Lists and dicts (gradient norms and costs per iteration, settings, versions) are JSON
in their cell; floats are written with ``repr``, so they read back bit for bit.

A line cut short by a crash is dropped when the store is opened (it was never a finished
record), so ``--resume`` re-runs that task.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

from .tasks import OUTCOME_FIELDS, STUDY_FIELD, TASK_FIELDS, WHERE_FIELDS

#: the store's columns, in order
COLUMNS = ("key",) + TASK_FIELDS + (STUDY_FIELD,) + OUTCOME_FIELDS + WHERE_FIELDS

_JSON = {"settings", "grad_norms", "costs", "versions"}
_INT = {"seed", "max_iter", "iterations", "exact_iterations", "nv", "pid"}
_FLOAT = {"cost", "time_s", "t_setup", "t_derivatives", "t_backward", "t_forward", "tail",
          "started", "finished"}


def _encode(column, value):
    if value is None:
        return ""
    if column in _JSON:
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _decode(column, text):
    if text == "":
        return [] if column in ("grad_norms", "costs") else None
    if column in _JSON:
        return json.loads(text)
    if column in _INT:
        return int(text)
    if column in _FLOAT:
        return float(text)
    if column == "converged":
        return text == "True"
    return text


class ResultsStore:
    """The records of a study in ``path`` (a CSV file, created with its header on first use).

    ``append(record)`` writes one record to disk at once; ``records()`` reads them all;
    ``keys()`` names the tasks done; ``drop(keys)`` removes the records of some tasks (a study
    run without ``--resume`` re-runs its tasks)."""

    def __init__(self, path):
        self.path = Path(path)
        self._repair()
        self._migrated = False

    def _migrate(self):
        """Before the first append: rewrite a store written with other columns (an older
        version) with today's, so that appended lines match its header; a column it lacked is
        empty in its records.  (Reading needs no migration.)"""
        self._migrated = True
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with open(self.path, newline="") as f:
            header = next(csv.reader(f), [])
        if tuple(header) == COLUMNS:
            return
        tmp = self.path.with_suffix(".tmp")
        _write(tmp, _format(self.records(), header=True), os.O_CREAT | os.O_TRUNC)
        os.replace(tmp, self.path)

    def _repair(self):
        """Drop a last line without its newline (a record cut short by a crash)."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            with open(self.path, "r+b") as f:
                f.truncate(data.rfind(b"\n") + 1)

    def append(self, record: dict) -> None:
        """Append one record (missing columns are empty) and flush it to disk."""
        if not self._migrated:
            self._migrate()
        new = not self.path.is_file() or self.path.stat().st_size == 0
        if new:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        _write(self.path, _format([record], header=new), os.O_APPEND | os.O_CREAT)

    def records(self) -> list[dict]:
        """Every record, in the order they were written."""
        if not self.path.is_file():
            return []
        with open(self.path, newline="") as f:
            rows = list(csv.DictReader(f))
        return [{c: _decode(c, r.get(c) or "") for c in COLUMNS} for r in rows]

    def keys(self) -> set[str]:
        return {r["key"] for r in self.records()}

    def drop(self, keys) -> int:
        """Remove the records of the tasks ``keys`` (rewritten atomically); returns how many."""
        keys = set(keys)
        records = self.records()
        kept = [r for r in records if r["key"] not in keys]
        if len(kept) == len(records):
            return 0
        tmp = self.path.with_suffix(".tmp")
        _write(tmp, _format(kept, header=True), os.O_CREAT | os.O_TRUNC)
        os.replace(tmp, self.path)
        return len(records) - len(kept)


def _format(records, header: bool) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow(COLUMNS)
    for r in records:
        w.writerow([_encode(c, r.get(c)) for c in COLUMNS])
    return buf.getvalue()


def _write(path, text: str, flags: int) -> None:
    """One write of ``text`` to ``path``, flushed to disk before returning."""
    fd = os.open(path, os.O_WRONLY | flags, 0o644)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
