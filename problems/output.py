"""Where results go and how they are written: the results folder, the table writer (CSV plus
a markdown table with notes), the Matplotlib set-up shared by every figure and the progress bar
of long runs.

Every command writes to ``results/`` in the current directory, or to the folder of
``soddp --out DIR`` (:data:`RESULTS`); never inside the installed package.  Run from the
repository's root, a command writes to ``output/`` (which git ignores) instead, so that trying
it does not rewrite the committed tables; ``--out results`` regenerates them.
"""

from __future__ import annotations

import csv
import functools
import re
import sys
import time
from pathlib import Path

import numpy as np

#: the results folder (None: :func:`default_folder`, resolved at each use)
RESULTS: Path | None = None

#: the repository's root (where its committed ``results/`` are)
REPOSITORY = Path(__file__).resolve().parents[1]


def default_folder() -> Path:
    """``results/`` in the current directory, or ``output/`` (git-ignored) at the repository's
    root (module docstring)."""
    here = Path.cwd()
    return here / ("output" if here.resolve() == REPOSITORY else "results")


def results_dir() -> Path:
    """The results folder, created on first use."""
    out = Path(RESULTS) if RESULTS is not None else default_folder()
    out.mkdir(parents=True, exist_ok=True)
    return out


def duration(seconds: float) -> str:
    """A wall time with three significant digits in a unit that shows them: 0.8 ms, 42.1 ms,
    3.17 s (never "0.0 s")."""
    s = float(seconds)
    if not np.isfinite(s):
        return "n/a"
    if abs(s) < 1.0:
        return f"{1e3 * s:.3g} ms"
    return f"{s:.3g} s" if abs(s) < 100 else f"{s:.0f} s"


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


#: PlainLogFormatter's exponents: superscript sign and digits
_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
_MATHTEXT_LABEL = re.compile(r"\$\\mathdefault\{(.*)\}\$")
_MATHTEXT_POWER = re.compile(r"\^\{(-?\d+)\}")


@functools.cache
def _plain_log_formatter():
    """The class PlainLogFormatter (built on first use: matplotlib is imported only by the
    commands that draw)."""
    from matplotlib.ticker import LogFormatterSciNotation

    class PlainLogFormatter(LogFormatterSciNotation):
        """Matplotlib's log-axis labels (10^-3, 2 x 10^-3) written in plain Unicode text
        (10⁻³, 2×10⁻³) instead of mathtext: they look the same, and mathtext's parser took
        a third of the time of the study's figures."""

        def __call__(self, x, pos=None):
            label = super().__call__(x, pos)
            m = _MATHTEXT_LABEL.fullmatch(label)
            if m is None:
                return label
            body = m.group(1).replace(r"\times", "×")
            return _MATHTEXT_POWER.sub(lambda e: e.group(1).translate(_SUPERSCRIPT), body)

    return PlainLogFormatter


def plain_log_labels(fig) -> None:
    """Give every base-10 log axis of ``fig`` that has Matplotlib's default labels the same
    labels in plain text (see ``PlainLogFormatter`` above); other axes are left alone."""
    from matplotlib.ticker import LogFormatterSciNotation

    plain = _plain_log_formatter()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log" or axis.get_transform().base != 10:
                continue
            for fmt, set_fmt in ((axis.get_major_formatter(), axis.set_major_formatter),
                                 (axis.get_minor_formatter(), axis.set_minor_formatter)):
                if type(fmt) is LogFormatterSciNotation:
                    set_fmt(plain(10, labelOnlyBase=fmt.labelOnlyBase,
                                  minor_thresholds=fmt.minor_thresholds))


def tight_layout(fig, rect=None) -> None:
    """:func:`plain_log_labels`, then ``fig.tight_layout`` (in ``rect``, figure coordinates,
    default the whole figure): every figure's layout step."""
    plain_log_labels(fig)
    fig.tight_layout(rect=rect)


def save_figure(fig, name: str, dpi: int = 120) -> Path:
    """Write ``fig`` to ``results/<name>`` (with :func:`plain_log_labels`), close it and return
    the path."""
    plain_log_labels(fig)
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
