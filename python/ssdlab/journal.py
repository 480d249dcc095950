"""The series journal: what a run has measured so far, on disk while the run goes on.

A run writes its series (``<name>.parquet`` / ``.csv``) when a phase or the whole test ends.
So that a run killed outright (SIGKILL, a crash, power loss) still leaves the intervals it
had finished, every phase run on a target also appends its intervals to a journal in the
results folder while it runs::

    journal/head.json              the summary's head (test, target, seed, parameters,
                                   versions, command line) as the run started
    journal/NNN-<phase>.jsonl      one file per phase run, NNN = 001, 002... in run order

A phase file is JSON lines: the first line is the header ``{"journal": "ssdlab series
journal", "version": 1, "phase": ..., "source": ..., "columns": [...], "dtypes": [...]}``;
then one JSON array per interval, values in the header's column order (NaN and infinities
as ``NaN`` / ``Infinity``, the way Python's json module writes them, so every float comes
back bit for bit); the last line, once the phase is over, is ``{"end": true, "complete":
..., "rows": N}``. Lines are only ever appended, each batch followed by an fsync, so after
a crash the file holds whole lines up to the last batch and perhaps a torn last line, which
the reader ignores.

Cadence: the simulator appends the intervals it has finished about once a second of wall
time (:data:`CHECKPOINT_S`) and the rest when the phase ends; a fio target appends one row
per fio status report (``--status-interval``, every :data:`FIO_STATUS_S` s) and, when fio
has exited, replaces the file by the phase's final series (read from fio's logs).

:func:`rebuild` reads a folder's journal back; ``ssdlab report`` and ``ssdlab compare``
use it for a folder whose run stopped before writing its summary or series. A run that
ends normally deletes the journal (its series files are then the record).
"""
from __future__ import annotations

import json
import math
import os
import re
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .files import atomic_write, fsync_dir, to_jsonable, write_failed

__all__ = ["JOURNAL_DIR", "HEAD_NAME", "CHECKPOINT_S", "FIO_STATUS_S", "PhaseJournal", "Rebuilt", "rebuild",
           "read_phase", "run_state"]

JOURNAL_DIR = "journal"
HEAD_NAME = "head.json"
#: Wall time between the simulator's journal checkpoints [s].
CHECKPOINT_S = 1.0
#: fio's status report interval while a phase runs (``--status-interval``) [s].
FIO_STATUS_S = 1
_MAGIC = "ssdlab series journal"
_VERSION = 1
_PHASE_FILE = re.compile(r"^(\d{3,})-(.+)\.jsonl$")
_lock = threading.Lock()
#: Journal folders whose failure was reported on stderr (once each).
_warned: set[Path] = set()


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", name).strip("._") or "phase"


def _json_value(v: Any) -> Any:
    """A cell as JSON: floats as they are (NaN/inf included), integers, booleans."""
    if isinstance(v, (np.floating, float)):
        return float(v)
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    if isinstance(v, (np.integer, int)):
        return int(v)
    return v


class PhaseJournal:
    """The journal file of one phase: :meth:`append` rows (flushed and fsynced per call),
    :meth:`replace` all rows, :meth:`close` with the phase's outcome. Never raises on I/O
    errors after it was opened: a journal that cannot be written costs the run nothing
    (``error`` says why it stopped, and a warning on stderr)."""

    def __init__(self, folder: Path, phase: str, source: str) -> None:
        self.folder = Path(folder)
        self.phase = phase
        self.source = source
        self.rows = 0
        self.columns: list[str] | None = None
        self.error: str | None = None
        #: Why the simulator stopped journalling while the phase runs (rows then come at its end).
        self.checkpoint_error: str | None = None
        self.closed = False
        with _lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            used = [int(m.group(1)) for p in self.folder.iterdir() if (m := _PHASE_FILE.match(p.name))]
            n = max(used, default=0) + 1
            self.path = self.folder / f"{n:03d}-{_safe(phase)}.jsonl"
            self.path.touch()
        self._dir_synced = False

    def _failed(self, e: Exception) -> None:
        """The journal stops here (``error`` says why); the first journal of a folder to fail
        says so on stderr, naming the file (and, on a full disk, the free space)."""

        self.error = f"{type(e).__name__}: {e}"
        if self.folder in _warned:
            return
        _warned.add(self.folder)
        what = write_failed(self.path, e) if isinstance(e, OSError) else f"cannot write {self.path}: {e}"
        print(f"ssdlab: warning: {what}. The run goes on without its journal: it writes its results when it "
              "ends, but a crash before then loses what it measured since.", file=sys.stderr, flush=True)

    def _header(self, series: Mapping[str, np.ndarray]) -> str:
        self.columns = list(series)
        dtypes = [str(np.asarray(series[c]).dtype) for c in self.columns]
        return json.dumps({"journal": _MAGIC, "version": _VERSION, "phase": self.phase, "source": self.source,
                           "columns": self.columns, "dtypes": dtypes})

    def _lines(self, series: Mapping[str, np.ndarray], start: int = 0) -> list[str]:
        cols = [np.asarray(series[c]) if c in series else None for c in self.columns or []]
        n = max((len(c) for c in cols if c is not None), default=0)
        if n <= start:
            return []
        # Whole columns to Python values at once (ndarray.tolist: floats, ints, bools), each
        # padded with NaN to the longest.
        values = [[] if c is None else c[start:].tolist() if c.dtype != object
                  else [_json_value(v) for v in c[start:]] for c in cols]
        values = [v + [math.nan] * (n - start - len(v)) for v in values]
        return [json.dumps(row) for row in map(list, zip(*values))]

    def _write(self, text: str, sync: bool = True) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        if sync and not self._dir_synced:  # the new file's name, durable once
            fsync_dir(self.folder)
            self._dir_synced = True

    def append(self, series: Mapping[str, Any], sync: bool = True) -> None:
        """Appends the rows of ``series`` (column -> array, all the same length); ``sync``:
        fsync them now (else with the next synced write, e.g. :meth:`close`)."""
        if self.closed or self.error is not None:
            return
        series = {c: np.asarray(v) for c, v in series.items()}
        try:
            lines = []
            if self.columns is None:
                lines.append(self._header(series))
            rows = self._lines(series)
            if not rows and not lines:
                return
            self._write("".join(line + "\n" for line in lines + rows), sync)
            self.rows += len(rows)
        except (OSError, TypeError, ValueError) as e:
            self._failed(e)

    def replace(self, series: Mapping[str, Any], source: str | None = None) -> None:
        """Replaces every row by those of ``series`` (atomically: a new file renamed over
        the old one), e.g. a fio phase's final series in place of its status reports."""
        if self.closed or self.error is not None:
            return
        if source is not None:
            self.source = source
        series = {c: np.asarray(v) for c, v in series.items()}
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            self.columns = None
            lines = [self._header(series)] + self._lines(series)
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.folder)
            self._dir_synced = True
            self.rows = len(lines) - 1
        except (OSError, TypeError, ValueError) as e:
            self._failed(e)
            try:
                tmp.unlink()
            except OSError:
                pass

    def close(self, complete: bool) -> None:
        """The phase is over (``complete``: it ran to its end)."""
        if self.closed:
            return
        if self.error is None:
            try:
                head = self._header({}) + "\n" if self.columns is None else ""  # a phase that measured nothing
                self._write(head + json.dumps({"end": True, "complete": bool(complete), "rows": self.rows}) + "\n")
            except OSError as e:
                self._failed(e)
        self.closed = True


# --------------------------------------------------------------------------- reading

@dataclass
class JournalPhase:
    """One phase read back: ``series`` (column -> array), ``rows``, whether the phase ended
    (``ended``; ``complete`` then says if it ran to its end), the header's ``source``."""

    name: str
    path: Path
    series: dict[str, np.ndarray]
    rows: int
    ended: bool = False
    complete: bool | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)


def read_phase(path: str | os.PathLike) -> JournalPhase:
    """Reads one phase file; a torn last line (the run died writing it) is left out, and a
    line that is not JSON ends the rows read (a note says so). Raises ValueError naming the
    file if its first line is not a journal header."""
    path = Path(path)
    m = _PHASE_FILE.match(path.name)
    name = m.group(2) if m else path.stem
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    lines = text.split("\n")
    torn = lines.pop() if lines else ""  # after the last newline: "" or a torn line
    notes = []
    if torn.strip():
        notes.append(f"{path.name}: its last line was cut off (the run stopped while writing it); left out")
    if not lines or not lines[0].strip():
        return JournalPhase(name, path, {}, 0, notes=notes)
    try:
        head = json.loads(lines[0])
    except json.JSONDecodeError:
        head = None
    if not isinstance(head, dict) or head.get("journal") != _MAGIC:
        raise ValueError(f"{path}: not an ssdlab series journal (first line is not its header)")
    name = str(head.get("phase") or name)
    columns = [str(c) for c in head.get("columns") or []]
    dtypes = list(head.get("dtypes") or []) + ["float64"] * len(columns)
    rows: list[list] = []
    ended, complete = False, None
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except json.JSONDecodeError:
            notes.append(f"{path.name} line {lineno}: not JSON; the rows after it are left out")
            break
        if isinstance(v, dict) and v.get("end"):
            ended, complete = True, bool(v.get("complete"))
            break
        if not isinstance(v, list) or len(v) != len(columns):
            notes.append(f"{path.name} line {lineno}: expected {len(columns)} values; the rows after it are left out")
            break
        rows.append(v)
    series: dict[str, np.ndarray] = {}
    by_column = list(zip(*rows)) if rows else [()] * len(columns)
    for c, dt, vals in zip(columns, dtypes, by_column):
        try:
            series[c] = np.array(vals, dtype=np.dtype(dt))
        except (TypeError, ValueError):
            series[c] = np.array([np.nan if x is None else x for x in vals], dtype=np.float64)
    return JournalPhase(name, path, series, len(rows), ended, complete, str(head.get("source") or ""), notes)


@dataclass
class Rebuilt:
    """A folder's journal read back: ``head`` (the summary's head, or None), ``phases`` in
    run order, ``main``: the last phase holding intervals (the one running when the run
    stopped, or the last one it finished), and ``notes`` (problems met while reading)."""

    head: dict | None
    phases: list[JournalPhase]
    notes: list[str]

    @property
    def main(self) -> JournalPhase | None:
        with_rows = [p for p in self.phases if p.rows]
        return with_rows[-1] if with_rows else None

    def describe(self) -> str:
        """One sentence for the user: which phase the series comes from, how many intervals."""
        m = self.main
        if m is None:
            return "the journal holds no finished interval"
        state = ("ran to its end" if m.complete else "was cut short") if m.ended else "was running when the run stopped"
        return (f"series rebuilt from the journal {JOURNAL_DIR}/{m.path.name}: {m.rows} interval"
                f"{'s' if m.rows != 1 else ''} of phase {m.name!r}, which {state}")


def rebuild(folder: str | os.PathLike) -> Rebuilt | None:
    """The journal of results folder ``folder`` read back, or None if it has none."""
    jdir = Path(folder) / JOURNAL_DIR
    if not jdir.is_dir():
        return None
    notes: list[str] = []
    head = None
    try:
        head = json.loads((jdir / HEAD_NAME).read_text(encoding="utf-8"))
        if not isinstance(head, dict):
            notes.append(f"{jdir / HEAD_NAME}: not a JSON object; left out")
            head = None
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as e:
        notes.append(f"{jdir / HEAD_NAME}: cannot be read ({e}); left out")
    files = sorted((int(m.group(1)), p) for p in jdir.iterdir() if (m := _PHASE_FILE.match(p.name)))
    phases = []
    for _, p in files:
        try:
            ph = read_phase(p)
        except (OSError, ValueError) as e:
            notes.append(f"{p}: cannot be read ({e}); left out")
            continue
        notes += ph.notes
        phases.append(ph)
    return Rebuilt(head, phases, notes)


def write_head(folder: str | os.PathLike, head: Mapping[str, Any]) -> None:
    """Writes ``journal/head.json`` (atomically); errors are ignored (the run goes on)."""

    jdir = Path(folder) / JOURNAL_DIR
    try:
        jdir.mkdir(parents=True, exist_ok=True)
        text = json.dumps(to_jsonable(head), indent=1, ensure_ascii=False) + "\n"
        atomic_write(jdir / HEAD_NAME, lambda f: f.write(text.encode("utf-8")))
    except (OSError, TypeError, ValueError):
        pass


def owner_line() -> str:
    """The INCOMPLETE marker's line naming the process that runs the test."""
    return f"pid {os.getpid()} on {socket.gethostname()}"


def run_state(marker_text: str) -> str | None:
    """From an ``INCOMPLETE`` marker in progress: "running" if the process it names runs on
    this host, "stopped" if it does not, None if unknown (another host, no pid)."""
    m = re.search(r"^pid (\d+) on (\S+)$", marker_text, re.M)
    if not m or m.group(2) != socket.gethostname():
        return None
    pid = int(m.group(1))
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "stopped"
    except PermissionError:
        return "running"
    except OSError:
        return None
    # A zombie (killed, not yet reaped by its parent) has stopped too.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return "stopped"
    except (OSError, IndexError):
        pass
    return "running"
