"""Where results go and how they are written: the ``results/`` folder, the table writer (CSV plus
a markdown table with notes), the Matplotlib set-up shared by every figure and the progress bar
of long runs.

``SODDP_RESULTS`` overrides the folder (tests point it, or :data:`RESULTS`, at a temporary one).
"""

from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path

RESULTS = Path(os.environ.get("SODDP_RESULTS", Path(__file__).resolve().parent.parent / "results"))


def results_dir() -> Path:
    """The results folder, created on first use."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS


def _cell(x) -> str:
    if x is None or x == "":
        return ""
    if isinstance(x, float):
        return f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"
    return str(x)


def write_table(rows, stem, title, columns, notes=(), log=print):
    """Write ``results/<stem>.csv`` and ``results/<stem>.md`` (a markdown table plus notes).
    ``columns``: (key, header) pairs; ``rows``: dicts (missing keys are empty cells)."""
    out = results_dir()
    with open(out / f"{stem}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[c for c, _ in columns])
        w.writeheader()
        for r in rows:
            w.writerow({c: r.get(c, "") for c, _ in columns})
    lines = [f"# {title}", "", "| " + " | ".join(h for _, h in columns) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(columns))) + "|"]
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(c)) for c, _ in columns) + " |")
    lines += [""] + [f"- {n}" for n in notes]
    (out / f"{stem}.md").write_text("\n".join(lines) + "\n")
    log("\n".join(lines))
    log(f"wrote {out / (stem + '.csv')} and {out / (stem + '.md')}")


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (figures are only written to files)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, name: str, dpi: int = 120) -> Path:
    """Write ``fig`` to ``results/<name>``, close it and return the path."""
    path = results_dir() / name
    fig.savefig(path, dpi=dpi)
    pyplot().close(fig)
    return path


def log_n_axis(ax, ticks, label="number of links N"):
    """A log x axis labelled with plain numbers at ``ticks`` (no crowded minor labels)."""
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_xticks(ticks)
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(label)


class Progress:
    """A progress bar on stderr: tasks done of total, how many failed, elapsed time and the
    estimated time left (from the mean time per task so far).  ``note`` follows the label
    (e.g. how many tasks a resumed study skipped); ``show=False`` keeps it silent."""

    def __init__(self, total, label, note="", show=True):
        self.total, self.label, self.note, self.show = total, label, note, show
        self.done, self.failed, self.t0 = 0, 0, time.perf_counter()
        self._draw("")

    def step(self, what="", failed=False):
        self.done += 1
        self.failed += bool(failed)
        self._draw(what)

    def _draw(self, what):
        if not self.show:
            return
        el = time.perf_counter() - self.t0
        eta = f"{el / self.done * (self.total - self.done):4.0f} s left" if self.done else "  "
        bar = "#" * int(30 * self.done / max(self.total, 1))
        fail = f", {self.failed} failed" if self.failed else ""
        note = f" ({self.note})" if self.note else ""
        sys.stderr.write(f"\r{self.label}{note} [{bar:30s}] {self.done}/{self.total}{fail} "
                         f"{el:5.0f} s, {eta}  {what[:30]:30s}")
        sys.stderr.flush()

    def finish(self):
        """End the bar's line."""
        if self.show:
            sys.stderr.write("\n")
            sys.stderr.flush()
