"""The results folder: time series (Parquet + CSV), ``summary.json``, run metadata.

A run writes one folder (``--out``)::

    summary.json            metrics, target, profile, versions, seed, command line
    <phase>.parquet         one row per interval, column types preserved (re-analysis)
    <phase>.csv             the same numbers for spreadsheets (header row, plain numbers)
    *.png / *.svg           plots (``ssdlab.plots``)
    INCOMPLETE              present while a run is in progress, and kept (with the reason)
                            when it was interrupted or failed (a target's failure, a
                            results file that could not be written); ``summary.json`` then
                            says ``"complete": false``
    journal/                while a run goes on: the run's head and each phase's intervals
                            so far (:mod:`ssdlab.journal`), so that a run killed outright
                            (SIGKILL, power loss) leaves what it measured; deleted when the
                            run ends normally

Every file is written to a temporary file in the same folder and then renamed over the
final name (:func:`os.replace`), so Ctrl-C or a crash never leaves a half-written
``summary.json`` or series: a reader sees the old file or the new one, never a mix.
"""
from __future__ import annotations

import contextlib
import csv
import datetime as _dt
import io
import json
import os
import shlex
import shutil
import sys
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, IO, Any

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np
    import pyarrow as pa

from .files import (  # noqa: F401 - part of this module's interface
    NO_ROOM_ERRNOS, ResultsWriteError, atomic_write, free_bytes, fsync_dir, to_jsonable, write_failed,
)

__all__ = [
    "SUMMARY_NAME",
    "INCOMPLETE_NAME",
    "ResultsDir",
    "ResultsDirError",
    "ResultsWriteError",
    "NO_ROOM_ERRNOS",
    "free_bytes",
    "write_failed",
    "check_results_dir",
    "remove_new_folders",
    "write_series",
    "read_series",
    "write_summary",
    "read_summary",
    "to_jsonable",
    "run_metadata",
    "mark_incomplete",
    "incomplete_reason",
    "is_results_dir",
    "atomic_write",
    "current_dir",
    "open_phase_journal",
    "record_head",
    "describe_incomplete",
]

SUMMARY_NAME = "summary.json"
INCOMPLETE_NAME = "INCOMPLETE"
#: First line of the INCOMPLETE marker; lets us recognise our own folders.
_INCOMPLETE_HEADER = "ssdlab run incomplete"


def _atomic_write_text(path: Path, text: str) -> Path:
    data = text.encode("utf-8")
    return atomic_write(path, lambda f: f.write(data), len(data))


def _mkdir(path: Path) -> None:
    """``path`` and its parents made if missing; :class:`ResultsWriteError` if that fails."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ResultsDirError(f"results folder {path} exists and is not a folder; choose another --out") from None
    except OSError as e:
        raise write_failed(path, e) from e


# --------------------------------------------------------------------------- series

def _check_series(name: str, series: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Validate a series: str column names, 1-D arrays, all the same length."""
    import numpy as np

    if not isinstance(series, Mapping):
        raise TypeError(f"series {name!r}: expected a dict of column name -> array, got {type(series).__name__}")
    cols: dict[str, np.ndarray] = {}
    first: str | None = None
    for col, values in series.items():
        if not isinstance(col, str) or not col:
            raise ValueError(f"series {name!r}: column name {col!r} must be a non-empty string")
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise ValueError(f"series {name!r}: column {col!r} must be 1-D, got shape {arr.shape}")
        if arr.dtype.kind not in "biuf":
            raise ValueError(
                f"series {name!r}: column {col!r} has dtype {arr.dtype}; only bool, integer and "
                "float columns are supported"
            )
        if arr.dtype == np.float16:  # Parquet has no half floats
            arr = arr.astype(np.float32)
        if first is None:
            first = col
        elif len(arr) != len(cols[first]):
            raise ValueError(
                f"series {name!r}: column {col!r} has {len(arr)} rows but column {first!r} has "
                f"{len(cols[first])}; all columns must have one row per interval"
            )
        cols[col] = arr
    return cols


def _to_arrow(a: np.ndarray, nan_as_null: bool = False) -> pa.Array:
    """A 1-D bool, integer or float array as an Arrow array made from its buffers, NaN as null
    when ``nan_as_null``: what ``pa.array(a, from_pandas=nan_as_null)`` gives, without its
    look for pandas (importing it where it is installed costs a short run more than its
    simulation) and numpy.ma."""
    import numpy as np
    import pyarrow as pa

    a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("="))
    data = np.packbits(a, bitorder="little") if a.dtype == np.bool_ else a
    valid, nulls = None, 0
    if nan_as_null and a.dtype.kind == "f":
        missing = np.isnan(a)
        nulls = int(missing.sum())
        if nulls:
            valid = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(pa.from_numpy_dtype(a.dtype), len(a), [valid, pa.py_buffer(data)], null_count=nulls)


def _to_numpy(column: pa.ChunkedArray) -> np.ndarray:
    """A bool, integer or float column without nulls as numpy reads it from the column's
    buffers (a view of them, read-only; bools unpacked), without the look for pandas of
    ``to_numpy``; other columns by ``to_numpy``."""
    import numpy as np
    import pyarrow as pa

    arr = column.combine_chunks()
    if arr.null_count or not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)
                              or pa.types.is_boolean(arr.type)):
        return column.to_numpy()
    data = arr.buffers()[1]
    if data is None:  # no rows
        return column.to_numpy()
    if pa.types.is_boolean(arr.type):
        return np.unpackbits(np.frombuffer(data, np.uint8), count=arr.offset + len(arr),
                             bitorder="little")[arr.offset:].astype(bool)
    return np.frombuffer(data, arr.type.to_pandas_dtype())[arr.offset:arr.offset + len(arr)]


def _check_name(name: str) -> None:
    if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        raise ValueError(f"series name {name!r} must be a plain file name (no path separators)")


def write_series(out_dir: str | os.PathLike, name: str, series: Mapping[str, Any]) -> dict[str, Path]:
    """Write ``series`` as ``{name}.parquet`` and ``{name}.csv`` in ``out_dir``.

    ``series`` maps column name -> 1-D array (one row per interval, e.g. ``t_s``, ``iops``,
    ``mbps``). Parquet keeps each column's exact type (zstd-compressed); the CSV has a header
    row and plain numbers (shortest round-trip decimal form; NaN as an empty cell; booleans
    as true/false). Raises ValueError naming the offending column if the columns do not all
    have the same length. Returns ``{"parquet": path, "csv": path}``.
    """
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    _check_name(name)
    cols = _check_series(name, series)
    out = Path(out_dir)
    _mkdir(out)
    table = pa.table({c: _to_arrow(a) for c, a in cols.items()})

    parquet_path = atomic_write(
        out / f"{name}.parquet",
        lambda f: pq.write_table(table, f, compression="zstd" if pa.Codec.is_available("zstd") else "snappy"),
    )

    # CSV: NaN -> null -> empty cell (spreadsheets read "nan" as text); header written by the
    # csv module so it is only quoted when a name needs it.
    csv_table = pa.table({c: _to_arrow(a, nan_as_null=True) for c, a in cols.items()})

    def write_csv(f: IO[bytes]) -> None:
        header = io.StringIO()
        csv.writer(header, lineterminator="\n").writerow(list(cols))
        f.write(header.getvalue().encode("utf-8"))
        if csv_table.num_rows:
            pa_csv.write_csv(
                csv_table, f, pa_csv.WriteOptions(include_header=False, quoting_style="needed")
            )

    csv_path = atomic_write(out / f"{name}.csv", write_csv)
    return {"parquet": parquet_path, "csv": csv_path}


def read_series(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Read a series written by :func:`write_series` back into ``{column: numpy array}``.

    ``path`` may be the ``.parquet`` or ``.csv`` file, or the path without suffix (Parquet is
    preferred). Parquet gives back the exact column types; CSV gives int64 / float64 / bool
    (empty cells become NaN).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    p = Path(path)
    if p.suffix not in (".parquet", ".csv"):
        for suffix in (".parquet", ".csv"):
            candidate = p.with_name(p.name + suffix)
            if candidate.exists():
                p = candidate
                break
        else:
            raise FileNotFoundError(f"no series at {p} (looked for {p.name}.parquet and {p.name}.csv)")
    if p.suffix == ".parquet":
        table = pq.ParquetFile(p).read()  # not read_table: that imports pyarrow.dataset (~70 ms)
    else:
        table = pa_csv.read_csv(p)
    out: dict[str, np.ndarray] = {}
    for col in table.column_names:
        chunked = table.column(col)
        if pa.types.is_null(chunked.type):  # an all-empty CSV column
            out[col] = np.full(len(chunked), np.nan)
            continue
        arr = _to_numpy(chunked)
        if arr.dtype == object:  # integers with missing cells
            arr = chunked.cast(pa.float64()).to_numpy()
        out[col] = arr
    return out


# --------------------------------------------------------------------------- summary

def write_summary(out_dir: str | os.PathLike, summary: Mapping[str, Any]) -> Path:
    """Write ``summary`` as ``out_dir/summary.json`` (strict JSON, 2-space indent, key order kept).

    Values are converted with :func:`to_jsonable` (NaN/inf become ``null``). The file is
    replaced atomically.
    """
    out = Path(out_dir)
    _mkdir(out)
    data = to_jsonable(summary)
    if not isinstance(data, dict):
        raise TypeError(f"summary must be a dict, got {type(summary).__name__}")
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return _atomic_write_text(out / SUMMARY_NAME, text)


def read_summary(path_or_dir: str | os.PathLike) -> dict[str, Any]:
    """Read ``summary.json`` (give the file or the results folder)."""
    p = Path(path_or_dir)
    if p.is_dir():
        p = p / SUMMARY_NAME
    with open(p, encoding="utf-8") as f:
        try:
            return json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(f"{p}: not a valid summary.json ({e})") from None


# --------------------------------------------------------------------------- metadata

def _dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, None if it is not installed: the
    ``Version`` of the first ``NAME-*.dist-info`` folder on ``sys.path`` (what pip installs),
    else :mod:`importlib.metadata` (which costs a short run ~30 ms to import)."""
    for entry in sys.path:
        for info in sorted(Path(entry or ".").glob(f"{name}-*.dist-info")):
            try:
                with open(info / "METADATA", encoding="utf-8") as f:
                    for line in f:
                        if line.startswith("Version:"):
                            return line.partition(":")[2].strip()
                        if not line.strip():  # the end of the headers
                            break
            except OSError:
                continue
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def run_metadata(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Facts about this run for ``summary.json``.

    ``command_line`` is ``argv`` (default ``sys.argv``) joined with shell quoting so it can be
    pasted back into a shell. ``started_utc`` is an ISO 8601 timestamp (seconds, UTC).
    """
    import platform
    import socket

    from ssdlab import __version__

    if argv is None:
        argv = sys.argv
    argv = [os.fspath(a) for a in argv]
    return {
        "ssdlab_version": __version__,
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "hostname": socket.gethostname(),
        "command_line": shlex.join(argv),
        "started_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "libraries": {name: _dist_version(name) for name in ("numpy", "pyarrow", "matplotlib")},
    }


# --------------------------------------------------------------------------- incomplete runs

#: The reason recorded when a run is stopped by Ctrl-C or SIGTERM.
INTERRUPTED_REASON = "interrupted (Ctrl-C or SIGTERM)"

def mark_incomplete(out_dir: str | os.PathLike, reason: str) -> Path:
    """Record that the run in ``out_dir`` did not finish, and why.

    Writes the ``INCOMPLETE`` marker (reason and UTC time) and, if ``summary.json`` exists,
    sets ``"complete": false`` and ``"incomplete_reason"`` in it. Returns the marker path.
    On a full disk, where no new file fits, the marker already there is overwritten in
    place (the room it holds is enough: its reason is what readers go by) and the summary
    is left as it is; :class:`ResultsWriteError` if even that fails.
    """
    out = Path(out_dir)
    _mkdir(out)
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    text = f"{_INCOMPLETE_HEADER}: {reason}\nat {now}\n"
    marker = out / INCOMPLETE_NAME
    try:
        _atomic_write_text(marker, text)
    except ResultsWriteError as e:
        if e.errno not in NO_ROOM_ERRNOS or not _overwrite_in_place(marker, text.encode("utf-8")):
            raise
        return marker
    summary_path = out / SUMMARY_NAME
    if summary_path.exists():
        try:
            summary = read_summary(summary_path)
        except ValueError:
            summary = None
        if isinstance(summary, dict):
            summary["complete"] = False
            summary["incomplete_reason"] = reason
            try:
                write_summary(out, summary)
            except ResultsWriteError as e:
                if e.errno not in NO_ROOM_ERRNOS:
                    raise  # on a full disk the marker written above is the record
    return marker


def _overwrite_in_place(path: Path, data: bytes) -> bool:
    """Overwrites the file ``path`` with ``data`` without a new file (not atomic): a file's
    blocks are kept when it is rewritten, so this fits on a full disk when ``data`` is no
    longer than the blocks the file holds. True if done."""
    try:
        with open(path, "r+b") as f:
            f.write(data)
            f.truncate()
            f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        return False


def incomplete_reason(out_dir: str | os.PathLike) -> str | None:
    """The reason recorded by :func:`mark_incomplete`, or None if the run is complete."""
    marker = Path(out_dir) / INCOMPLETE_NAME
    try:
        first = marker.read_text(encoding="utf-8", errors="replace").splitlines()[0]
    except (FileNotFoundError, IndexError):
        return None if not marker.exists() else "unknown"
    prefix = _INCOMPLETE_HEADER + ": "
    return first[len(prefix):] if first.startswith(prefix) else first


def describe_incomplete(out_dir: str | os.PathLike) -> str | None:
    """:func:`incomplete_reason` for a reader: a marker still saying "in progress" whose
    process no longer runs (on this host) becomes "killed or crashed"; one whose process
    still runs says so. None if the run is complete."""
    from . import journal

    reason = incomplete_reason(out_dir)
    if reason != "in progress":
        return reason
    try:
        text = (Path(out_dir) / INCOMPLETE_NAME).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        text = ""
    state = journal.run_state(text)
    since = next((line[6:] for line in text.splitlines() if line.startswith("since ")), None)
    when = f" (started {since})" if since else ""
    if state == "stopped":
        return f"killed: the run{when} stopped without finishing (SIGKILL, a crash or a power loss)"
    if state == "running":
        return f"in progress: the run{when} is still running"
    return f"in progress or killed: the run{when} did not finish writing its results"


def is_results_dir(path: str | os.PathLike) -> bool:
    """True if ``path`` holds an ssdlab results folder.

    That is: a ``summary.json`` written by ssdlab (it has ``ssdlab_version``, at the top
    level or one level down, as :func:`run_metadata` provides), or an ``INCOMPLETE`` marker
    written by ssdlab (a run that stopped before writing its summary).
    """
    p = Path(path)
    try:
        summary = read_summary(p / SUMMARY_NAME)
    except (OSError, ValueError):
        summary = None
    if isinstance(summary, dict):
        if "ssdlab_version" in summary:
            return True
        if any(isinstance(v, dict) and "ssdlab_version" in v for v in summary.values()):
            return True
    try:
        with open(p / INCOMPLETE_NAME, encoding="utf-8") as f:
            return f.readline().startswith(_INCOMPLETE_HEADER)
    except (OSError, UnicodeDecodeError):
        return False


class ResultsDirError(FileExistsError):
    """The chosen results folder cannot be used (it holds other files)."""


def check_results_dir(path: str | os.PathLike, *, overwrite: bool = False) -> None:
    """Refuses (:class:`ResultsDirError`) a results folder :class:`ResultsDir` would refuse:
    ``path`` is not a folder, or holds files that are not ssdlab results (unless
    ``overwrite``). Creates nothing."""
    path = Path(path)
    if path.exists():
        if not path.is_dir():
            raise ResultsDirError(f"results folder {path} exists and is not a folder; choose another --out")
        if not overwrite and any(path.iterdir()) and not is_results_dir(path):
            raise ResultsDirError(
                f"results folder {path} is not empty and does not hold ssdlab results; "
                "pass --force to write into it anyway, or choose another --out"
            )


@contextlib.contextmanager
def remove_new_folders(path: str | os.PathLike):
    """Inside, folders may be made at ``path`` and its parents; if the block raises, those
    that did not exist before and are still empty are removed again (a folder that holds
    anything is never touched), so a run refused before it starts leaves nothing behind."""
    p = Path(os.path.abspath(path))
    new = []
    while not p.exists() and p != p.parent:
        new.append(p)
        p = p.parent
    try:
        yield
    except BaseException:
        for folder in new:  # deepest first
            try:
                folder.rmdir()
            except OSError:
                break
        raise


class ResultsDir:
    """One run's results folder.

    Creating it makes the folder if needed and refuses a folder that is not empty and is not
    an ssdlab results folder (see :func:`is_results_dir`) unless ``overwrite=True``. Nothing
    is ever deleted: files of the same name are replaced, others are left alone.

    Until :meth:`finish` is called, the folder carries an ``INCOMPLETE`` marker ("in
    progress"), so a run killed outright is still recognisable as unfinished. Used as a
    context manager, an exception (KeyboardInterrupt, SIGTERM turned into an exception...)
    marks the run incomplete with the exception as reason; a clean exit calls :meth:`finish`.
    The exception is never swallowed.

        with ResultsDir(args.out, overwrite=args.force) as rd:
            rd.write_series("consistency", result.series)
            rd.write_summary(summary)
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self._incomplete: str | None = None
        check_results_dir(self.path, overwrite=overwrite)
        _mkdir(self.path)
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        from .journal import owner_line

        _atomic_write_text(self.path / INCOMPLETE_NAME,
                           f"{_INCOMPLETE_HEADER}: in progress\nsince {now}\n{owner_line()}\n")
        fsync_dir(self.path)
        self._closed = False
        _ACTIVE.append(weakref.ref(self))

    def __repr__(self) -> str:
        return f"ResultsDir({str(self.path)!r})"

    def __fspath__(self) -> str:
        return str(self.path)

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def write_series(self, name: str, series: Mapping[str, Any]) -> dict[str, Path]:
        return write_series(self.path, name, series)

    def write_summary(self, summary: Mapping[str, Any]) -> Path:
        """Write summary.json; if the run was marked incomplete, the summary says so too."""
        if self._incomplete is not None:
            summary = dict(summary)
            summary["complete"] = False
            summary["incomplete_reason"] = self._incomplete
        return write_summary(self.path, summary)

    def mark_incomplete(self, reason: str) -> None:
        self._incomplete = reason
        mark_incomplete(self.path, reason)

    @property
    def incomplete(self) -> str | None:
        """Reason given to :meth:`mark_incomplete`, or None."""
        return self._incomplete

    def finish(self) -> None:
        """The run is over: drop the in-progress marker and the journal unless the run was
        marked incomplete (then the journal stays, next to the series written)."""
        self._closed = True
        if self._incomplete is None:
            try:
                (self.path / INCOMPLETE_NAME).unlink()
            except FileNotFoundError:
                pass
            from .journal import JOURNAL_DIR

            shutil.rmtree(self.path / JOURNAL_DIR, ignore_errors=True)

    def open_phase_journal(self, phase: str, source: str):
        """A :class:`ssdlab.journal.PhaseJournal` for a phase starting now."""
        from .journal import JOURNAL_DIR, PhaseJournal

        return PhaseJournal(self.path / JOURNAL_DIR, phase, source)

    def __enter__(self) -> "ResultsDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._closed = True
        if exc_type is None:
            self.finish()
        elif self._incomplete is None:
            what = exc_type.__name__ if not str(exc) else f"{exc_type.__name__}: {exc}"
            if exc_type is KeyboardInterrupt:
                what = "interrupted (Ctrl-C)"
            self.mark_incomplete(what)


# --------------------------------------------------------------------------- the running run

#: The results folders of this process, newest last (weak: a folder nobody holds is gone).
_ACTIVE: list[weakref.ref] = []


def current_dir() -> ResultsDir | None:
    """The results folder of the run going on in this process: the newest
    :class:`ResultsDir` not yet finished nor marked incomplete (a review's part while the
    part runs), or None."""
    while _ACTIVE:
        rd = _ACTIVE[-1]()
        if rd is not None and not rd._closed and rd._incomplete is None:
            return rd
        _ACTIVE.pop()
    return None


@contextlib.contextmanager
def outside_any_run():
    """Code inside is not part of this process's run: :func:`current_dir` is None there, so
    phases simulated inside (a fit's candidates) are not journalled into the run's folder.
    Folders opened inside are kept after it, newest last."""
    active = list(_ACTIVE)
    _ACTIVE.clear()
    try:
        yield
    finally:
        _ACTIVE[:] = active + _ACTIVE


def open_phase_journal(phase: str, source: str):
    """The journal (:class:`ssdlab.journal.PhaseJournal`) of a phase starting now in the
    current run's folder, or None when no run is going on (a target used on its own) or the
    journal cannot be created there."""
    rd = current_dir()
    if rd is None:
        return None
    try:
        return rd.open_phase_journal(phase, source)
    except OSError:
        return None


def record_head(summary: Mapping[str, Any]) -> None:
    """Keeps the head of the current run's summary (test, target, parameters, versions) in
    its journal, for a reader of a run killed before it wrote ``summary.json``."""
    rd = current_dir()
    if rd is not None:
        from .journal import write_head

        write_head(rd.path, summary)


