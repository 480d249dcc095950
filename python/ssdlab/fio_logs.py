"""Read fio's log files onto one regular grid of intervals: the one reader of fio logs.

Every place that turns fio's logs into series (fio targets, ``ssdlab analyze``, trace replay)
goes through this module, so a stall reads the same everywhere. The result is a
:class:`Grid`: per direction, the IOs (and bytes) completed in each interval of
``interval_s`` and, where the logs hold latencies, per-interval percentiles. Interval k
covers ``[k, k+1) x interval_s``; an interval in which nothing completed is 0 IOPS, never a
longer row.

Log formats (fio HOWTO, "Log File Formats"): one entry per line,
``time (ms), value, data direction, block size (bytes)[, offset][, priority][, issue time]``
with direction 0 = read, 1 = write, 2 = trim; the value is IOPS (iops logs), KiB/s (bw) or
nanoseconds (lat, clat, slat). ``log_window_value=both`` (``log_max_value=2``) adds a second
value before the direction; that layout is recognised. Histogram logs (``write_hist_log`` with
``log_hist_msec``) hold ``time, direction, block size`` and then the completion-latency
histogram of the IOs completed since the previous row of that direction: 1856 bins (fio >=
3.?, 29 groups of 64) or 1216 (older fio, 19 groups), halved ``log_hist_coarseness`` times.
``.gz`` files are read transparently; ``.fz`` (fio's own compression) is refused with the
command that inflates it. Blank lines and ``#`` comments are skipped. A last line cut short
(the file ends without a newline, as when fio was killed while writing) is dropped with a
note; any other malformed line is an error naming the file and line.

How rows become intervals. fio writes a log row at the *end* of what it covers, and only when
something completed:

* **Per-IO rows** (``log_avg_msec=0``): each row is one IO at its completion time: counted
  in the interval holding that time. Exact.
* **Windowed rows** (``log_avg_msec=W``; iops and bw logs): the value is a rate over the
  window ending at the row. After a gap (no IO for longer than W) fio's rate covers only its
  last sample period, so a row counts ``value x W`` and is placed at ``(t - W, t)``; a row
  less than 3/4 of a window after the previous one (fio catching up) counts ``value x gap``
  over ``(previous row, t)``. Missing windows are intervals with no IO: that is how a stall
  shows. Rows land in the interval holding the middle of what they cover when the interval
  is a whole number of windows (fio's few ms of timer jitter then never leak IOs into a
  neighbouring interval), otherwise they are split in proportion to the overlap.
* **Histogram rows** (``log_hist_msec=W``): fio closes a row at the first completion at or
  past the end of the row's window and puts in it every IO since the previous row. Its
  windows follow each other on a grid, W apart from the first completion: row i's window ends
  at ``first + (i + 1) x W``, and after a stall the first completions each close a row of
  their own (at the same ms) until the grid has caught up. So all IOs of a row but the one
  that closed it completed between the previous row and the end of the row's window, and the
  closing one at the row's time. The closing IO (the highest latency bin of the row: it waited
  longest, as after a stall) goes to the interval of the row's time; the others to the
  interval of the middle of ``(previous row, end of the window)``. With W the interval, a
  window is an interval shifted by ``first`` (a few ms), so a burst between two stalls stays
  in its interval and a stall's intervals stay at 0, with its long latencies in the interval
  where they completed. ``first`` is the least ``t_i - (i + 1) x W``. A log whose rows are
  never closer than W apart, which a grid's timer jitter makes them (older fio started each
  window at the previous row), or that has more rows than windows since time 0 (jobs sharing
  one log), is read with each window ending at ``min(row, previous row + W)``.

fio never logs the IOs after its last row (the job's final window). Where ssdlab wrote the
job it knows fio's totals and run time and adds them (:func:`Grid.add_tail`); for a foreign
log the grid ends with the last row.

Time stamps written with ``log_unix_epoch=1`` (values above 10**11 ms) are shifted so the log
starts at 0 (the first windowed row is taken to close the first window); stamps that look
like microseconds since the epoch (above 10**14) are refused.
"""
from __future__ import annotations

import gzip
import io
import itertools
import math
import re
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, IO, Iterator, Sequence

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .columns import DIRECTIONS as DIRECTION_NAMES, LATENCY_STATS, latency_column
from .units import parse_time_s

__all__ = [
    "DIRECTIONS",
    "LogName",
    "Grid",
    "parse_log_name",
    "find_logs",
    "read_log",
    "read_hist_log",
    "detect_window_ms",
    "grid_from_log",
    "grid_from_hist",
    "grid_from_files",
    "run_grid",
    "run_series",
    "run_end_s",
    "read_iops_log",
    "read_iops_logs",
    "read_bw_log",
    "read_lat_log",
    "latency_percentiles_us",
]

#: fio data direction codes.
DIRECTIONS: dict[int, str] = dict(enumerate(DIRECTION_NAMES))
_DIR_CODES = {v: k for k, v in DIRECTIONS.items()}

#: What one line must look like (used in error messages).
EXPECTED = "'time_ms, value, direction, bs[, offset][, priority]' (comma-separated numbers, direction 0/1/2)"

_LOG_TYPES = ("iops", "bw", "lat", "clat", "slat", "clat_hist", "hist")
_NAME_RE = re.compile(
    r"^(?P<job>.+?)_(?P<kind>iops|bw|lat|clat_hist|clat|slat|hist)(?:\.(?P<index>\d+))?\.log(?:\.gz)?$")

#: Time stamps above this many ms are Unix-epoch stamps (``log_unix_epoch=1``), not run time.
_EPOCH_MS = 10**11
#: Above this they would be microseconds since the epoch, which fio does not write.
_EPOCH_US = 10**14
#: Lines parsed per chunk (bounds memory for per-IO logs and the cost of a slow re-parse).
_CHUNK_LINES = 1 << 20
#: fio's latency histogram: 2**6 bins per power of two, 29 groups (19 before fio 3.?).
_PLAT_BITS = 6
_PLAT_GROUPS = (29, 19)
#: A histogram count above this is an unsigned wrap-around in fio (its stats were reset
#: mid-run, e.g. at the end of ramp_time), not a count.
_MAX_COUNT = 1 << 60


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class LogName:
    """Parts of a fio log file name: ``job`` (the write_*_log prefix), ``kind``, ``index``."""

    job: str
    kind: str
    index: int | None


def parse_log_name(path: str | Path) -> LogName | None:
    """``"run_iops.1.log"`` -> ``LogName("run", "iops", 1)``; ``run_clat_hist.1.log`` has
    kind ``"clat_hist"``; None if the name is not fio's."""
    m = _NAME_RE.match(Path(path).name)
    if not m:
        return None
    idx = m.group("index")
    return LogName(m.group("job"), m.group("kind"), int(idx) if idx is not None else None)


def find_logs(where: str | Path, kind: str = "iops") -> list[Path]:
    """fio logs of one type, sorted by job index.

    ``where`` is a directory (every ``*_KIND[.N].log`` in it) or a ``write_*_log`` prefix
    such as ``results/run`` (``results/run_KIND.log`` and ``results/run_KIND.N.log``).
    Raises FileNotFoundError when nothing matches.
    """
    if kind not in _LOG_TYPES:
        raise ValueError(f"kind must be one of {_LOG_TYPES}, got {kind!r}")
    p = Path(where)
    if p.is_dir():
        cands = list(p.iterdir())
        want_job = None
    else:
        cands = list(p.parent.iterdir()) if p.parent.is_dir() else []
        want_job = p.name
    found = []
    for c in cands:
        ln = parse_log_name(c)
        if ln and ln.kind == kind and (want_job is None or ln.job == want_job) and c.is_file():
            found.append((ln.job, ln.index or 0, c))
    if not found:
        raise FileNotFoundError(f"no fio {kind} logs ('*_{kind}.N.log') found at {where}")
    return [c for _, _, c in sorted(found)]


# --------------------------------------------------------------------------- raw parsing


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".fz"):
        raise ValueError(f"{path}: compressed fio log (.fz); inflate it first with 'fio --inflate-log={path}'")
    if path.name.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _bad(path: Path, lineno: int, line: str, why: str | None = None, expected: str = EXPECTED) -> ValueError:
    shown = line.rstrip("\r\n")
    if len(shown) > 120:
        shown = shown[:117] + "..."
    msg = f"{path}:{lineno}: expected {expected}, got {shown!r}"
    if why:
        msg += f" ({why})"
    return ValueError(msg)


#: Times [ms] and block sizes [bytes] must be below this: whole numbers a float holds exactly
#: (and far beyond any fio log; a larger time would wrap around as an int64).
_MAX_EXACT = 2.0 ** 53


def _check_row(t: float, v: float, d: float, bs: float) -> str | None:
    """Why a parsed row is invalid, or None. Mirrors :func:`_check_rows`."""
    if not all(math.isfinite(z) for z in (t, v, d, bs)):
        return "numbers must be finite"
    if t < 0 or t >= _MAX_EXACT:
        return "time must be >= 0 and below 2^53 ms"
    if v < 0:
        return "value must be >= 0"
    if d not in (0.0, 1.0, 2.0):
        return f"direction must be 0 (read), 1 (write) or 2 (trim), got {d:g}"
    if bs < 0 or bs >= _MAX_EXACT or bs != int(bs):
        return "block size must be a whole number of bytes >= 0 and below 2^53"
    return None


def _check_rows(a: np.ndarray) -> bool:
    """True when every row of an (n, 4) array passes :func:`_check_row`."""
    import numpy as np

    if not np.isfinite(a).all():
        return False
    t, v, d, bs = a.T
    return bool(
        (t >= 0).all()
        and (t < _MAX_EXACT).all()
        and (v >= 0).all()
        and np.isin(d, (0.0, 1.0, 2.0)).all()
        and (bs >= 0).all()
        and (bs < _MAX_EXACT).all()
        and (bs == np.floor(bs)).all()
    )


def _fields(line: str) -> list[str]:
    return [f.strip() for f in line.split("#", 1)[0].split(",")]


def _parse_slow(path: Path, first_lineno: int, lines: Sequence[str], cols: tuple[int, int, int, int]) -> np.ndarray:
    """Line-by-line parse of one chunk; raises with the exact line number on the first bad line."""
    import numpy as np

    rows = []
    need = max(cols) + 1
    for lineno, line in enumerate(lines, start=first_lineno):
        if not line.split("#", 1)[0].strip():
            continue
        fields = _fields(line)
        if len(fields) < need:
            raise _bad(path, lineno, line, f"{len(fields)} field{'s' if len(fields) != 1 else ''}, need at least {need}")
        try:
            t, v, d, bs = (float(fields[c]) for c in cols)
        except ValueError:
            raise _bad(path, lineno, line, "the first four fields must be numbers") from None
        why = _check_row(t, v, d, bs)
        if why:
            if d not in (0.0, 1.0, 2.0) and len(fields) > need and fields[need].strip() in ("0", "1", "2"):
                why += ("; a log written with log_window_value=both (log_max_value=2) has the maximum "
                        "before the direction, and every line must then have that layout")
            raise _bad(path, lineno, line, why)
        rows.append((t, v, d, bs))
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def _read_lines(path: Path) -> Iterator[tuple[int, list[str]]]:
    """Chunks of (first line number, lines) of a log file."""
    with _open_text(path) as f:
        lineno = 1
        while True:
            try:
                lines = list(itertools.islice(f, _CHUNK_LINES))
            except (OSError, EOFError, zlib.error) as e:  # a damaged or cut .gz
                what = "a damaged or truncated gzip file" if path.name.endswith(".gz") else "unreadable"
                raise ValueError(f"{path}: {what} after line {lineno - 1} ({e}); copy the log again "
                                 "from the machine that ran fio") from None
            if not lines:
                return
            yield lineno, lines
            lineno += len(lines)


def _cut_last_line(lines: list[str], notes: list[str], path: Path, lineno: int, ok) -> list[str]:
    """Drops the file's last line when it ends without a newline and ``ok(line)`` is False:
    fio (or a copy) was stopped while writing it."""
    if lines and not lines[-1].endswith("\n") and not ok(lines[-1]):
        notes.append(f"{path.name}:{lineno + len(lines) - 1}: last line cut short (no newline); left out")
        return lines[:-1]
    return lines


def _layout(path: Path) -> tuple[int, int, int, int]:
    """Columns of (time, value, direction, block size): (0, 1, 2, 3), or (0, 1, 3, 4) for
    ``log_window_value=both`` logs (average and maximum before the direction). The layout is
    'both' when the first data line's third field is not a direction but its fourth is and its
    fifth is 0 (windowed rows write block size 0)."""
    for _, lines in _read_lines(path):
        for line in lines:
            if not line.split("#", 1)[0].strip():
                continue
            f = _fields(line)
            if len(f) >= 5 and f[2] not in ("0", "1", "2") and f[3] in ("0", "1", "2") and f[4] == "0":
                return (0, 1, 3, 4)
            return (0, 1, 2, 3)
    return (0, 1, 2, 3)


def read_log(path: str | Path, notes: list[str] | None = None) -> dict[str, np.ndarray]:
    """All entries of an iops/bw/lat/clat/slat log, unprocessed: ``t_ms`` (int64), ``value``
    (float64), ``ddir`` (int8: 0 read, 1 write, 2 trim), ``bs_bytes`` (int64), in file order.

    Raises FileNotFoundError, or ValueError naming the file and line of a malformed entry or
    saying the file holds no entries. What was left out (a cut last line) goes to ``notes``.
    """
    import numpy as np

    path = Path(path)
    notes = [] if notes is None else notes
    cols = _layout(path)
    need = max(cols) + 1
    parts = []
    chunks = list(_read_lines(path)) if path.stat().st_size < (64 << 20) else None
    for first, lines in (chunks if chunks is not None else _read_lines(path)):
        if len(lines) < _CHUNK_LINES:  # the file's last chunk
            lines = _cut_last_line(lines, notes, path, first, lambda line: _line_ok(line, cols, need))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "input contained no data" for blank chunks
                a = np.loadtxt(lines, delimiter=",", usecols=cols, ndmin=2, dtype=np.float64, comments="#")
            if a.size and not _check_rows(a):
                raise ValueError("row check failed")
        except ValueError:
            a = _parse_slow(path, first, lines, cols)  # raises with the line number
        parts.append(a.reshape(-1, 4))
    a = np.concatenate(parts) if parts else np.zeros((0, 4))
    if a.shape[0] == 0:
        raise ValueError(f"{path}: no log entries (expected lines like {EXPECTED}); fio writes its logs "
                         "when the job ends: was it killed before that?")
    if cols != (0, 1, 2, 3):
        notes.append(f"{path.name}: log_window_value=both layout; the average (second field) is read")
    return {
        "t_ms": a[:, 0].astype(np.int64),
        "value": a[:, 1],
        "ddir": a[:, 2].astype(np.int8),
        "bs_bytes": a[:, 3].astype(np.int64),
    }


def _line_ok(line: str, cols: tuple[int, ...], need: int) -> bool:
    f = _fields(line)
    if len(f) < need:
        return False
    try:
        return _check_row(*(float(f[c]) for c in cols)) is None
    except ValueError:
        return False


@dataclass
class HistLog:
    """A fio completion-latency histogram log: one row per (window, direction)."""

    t_ms: np.ndarray        #: row time [ms since job start, or Unix epoch]
    ddir: np.ndarray        #: 0 read, 1 write, 2 trim
    bs_bytes: np.ndarray    #: block size of the IO that closed the row [bytes]
    counts: np.ndarray      #: (rows, bins) IOs completed since the direction's previous row
    bin_ns: np.ndarray      #: each bin's latency [ns]: the middle of its range, as fio reports
    bin_lower_ns: np.ndarray  #: each bin's lower edge [ns]


def hist_bins_ns(nbins: int) -> tuple[np.ndarray, np.ndarray]:
    """(lower edge, value) [ns] of each bin of a histogram log row with ``nbins`` bins: a bin
    merges ``2**coarseness`` of fio's latency buckets; its value is the middle of their range
    (fio's ``plat_idx_to_val``; exact below 128 ns, where buckets are 1 ns wide)."""
    import numpy as np

    for groups in _PLAT_GROUPS:
        full = groups << _PLAT_BITS
        stride = full // nbins if full % nbins == 0 else 0
        if stride and stride & (stride - 1) == 0 and stride <= 64:
            break
    else:
        raise ValueError(f"{nbins} bins is not a fio latency histogram (1856 or 1216 bins, halved by "
                         "log_hist_coarseness 0..6)")
    idx = np.arange(full + 1, dtype=np.int64)
    eb = np.maximum((idx >> _PLAT_BITS) - 1, 0)
    lower = np.where(idx < (2 << _PLAT_BITS), idx,
                     (1 << (eb + _PLAT_BITS)) + (idx % (1 << _PLAT_BITS)) * (1 << eb)).astype(np.float64)
    lo = lower[0:full:stride]
    hi = lower[stride::stride]
    return lo, np.where(hi - lo <= 1, lo, (lo + hi) / 2.0)


def read_hist_log(path: str | Path, notes: list[str] | None = None) -> HistLog:
    """A fio histogram log (``write_hist_log`` + ``log_hist_msec``), see the module docstring.
    Raises ValueError naming the file and line of a malformed row."""
    import numpy as np

    path = Path(path)
    notes = [] if notes is None else notes
    rows: list[np.ndarray] = []
    nfields = None
    expected = "'time_ms, direction, bs, bin0, bin1, ...' (a fio write_hist_log row)"
    for first, lines in _read_lines(path):
        if len(lines) < _CHUNK_LINES:
            lines = _cut_last_line(lines, notes, path, first,
                                   lambda line: nfields is None or len(_fields(line)) == nfields)
        for lineno, line in enumerate(lines, start=first):
            if not line.split("#", 1)[0].strip():
                continue
            f = _fields(line)
            if nfields is None:
                nfields = len(f)
                if nfields < 4:
                    raise _bad(path, lineno, line, "too few fields for a histogram row", expected)
            if len(f) != nfields:
                raise _bad(path, lineno, line, f"{len(f)} fields where the first row has {nfields}", expected)
            try:
                r = np.array(f, dtype=np.float64)
            except ValueError:
                raise _bad(path, lineno, line, "every field must be a number", expected) from None
            if not np.isfinite(r).all() or (r < 0).any() or r[1] not in (0.0, 1.0, 2.0):
                raise _bad(path, lineno, line, "numbers must be finite and >= 0, direction 0/1/2", expected)
            if (r[3:] >= _MAX_COUNT).any():
                raise _bad(path, lineno, line, "a bin count wrapped around: fio reset its statistics during the "
                           "job (ramp_time?); histogram logs of such jobs cannot be read", expected)
            rows.append(r)
    if not rows:
        raise ValueError(f"{path}: no histogram rows (fio writes them with write_hist_log and log_hist_msec > 0, "
                         "when the job ends: was it killed before that?)")
    a = np.vstack(rows)
    try:
        lower, values = hist_bins_ns(a.shape[1] - 3)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
    return HistLog(t_ms=a[:, 0].astype(np.int64), ddir=a[:, 1].astype(np.int8), bs_bytes=a[:, 2].astype(np.int64),
                   counts=a[:, 3:], bin_ns=values, bin_lower_ns=lower)


# --------------------------------------------------------------------------- detection


def detect_window_ms(raw: dict[str, np.ndarray], kind: str = "iops") -> int:
    """The log's averaging window in ms (fio ``log_avg_msec``), 0 for a per-IO log.

    Windowed when every block size is 0 (what fio writes in windowed rows) or, for an IOPS
    log, when any value differs from 1 (a per-IO IOPS row is always 1); per-IO otherwise.
    Old fio versions wrote the block size into windowed rows: their bw and lat logs are
    taken for per-IO logs, so pass ``log_avg_msec`` explicitly for those. W is the most common
    step between consecutive time stamps of one direction (steps after a stall are longer,
    catch-up steps shorter), rounded to 10 ms (to 1 ms below 100 ms).
    """
    v, bs, t, d = raw["value"], raw["bs_bytes"], raw["t_ms"], raw["ddir"]
    windowed = bool((kind == "iops" and (v != 1).any()) or (bs == 0).all())
    if not windowed:
        return 0
    return _window_of(t, d)


def _window_of(t: np.ndarray, d: np.ndarray) -> int:
    import numpy as np

    steps = [np.diff(np.sort(t[d == code])) for code in np.unique(d)]
    step = np.concatenate(steps) if steps else np.zeros(0, dtype=np.int64)
    pos = step[step > 0]
    if pos.size == 0:
        return 1000  # a single window: assume fio's usual log_avg_msec=1000
    rounded = np.where(pos >= 100, np.round(pos / 10.0) * 10, pos).astype(np.int64)
    vals, counts = np.unique(rounded, return_counts=True)
    return max(int(vals[np.argmax(counts)]), 1)


def _epoch_start_ms(t_ms: np.ndarray, window_ms: int, what: Path) -> int:
    """Time zero of a log: 0, or for Unix-epoch stamps the start of its first window."""
    t0 = int(t_ms.min()) if t_ms.size else 0
    if t0 > _EPOCH_US:
        raise ValueError(f"{what}: time stamps like {t0} look like microseconds since the Unix epoch; fio writes "
                         "milliseconds: divide the first field by 1000")
    if t0 > _EPOCH_MS:
        return t0 - window_ms
    return 0


# --------------------------------------------------------------------------- the grid


@dataclass
class Grid:
    """A regular series of ``interval_s`` intervals, per direction: IOs and bytes completed and
    (where the logs had latencies) latency percentiles [us]. ``end_s`` is how much time the
    grid covers (the last interval may be partial)."""

    interval_s: float
    ios: dict[str, np.ndarray] = field(default_factory=dict)
    bytes: dict[str, np.ndarray] = field(default_factory=dict)
    latency_us: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    end_s: float = 0.0
    window_ms: int = 0
    notes: list[str] = field(default_factory=list)
    #: The log files read.
    sources: list[Path] = field(default_factory=list)
    #: Per direction: time of the last row [ms], for :meth:`add_tail`.
    _last_ms: dict[str, float] = field(default_factory=dict)
    #: Per direction: the per-interval latency histograms of a histogram log (intervals x
    #: bins) and the bins' (lower edge, value) [ns], so the tail can be added exactly.
    _hist: dict[str, np.ndarray] = field(default_factory=dict)
    _bins_ns: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n(self) -> int:
        return int(math.ceil(self.end_s / self.interval_s - 1e-9)) if self.end_s > 0 else 0

    def resize(self, n: int) -> None:
        """Pads (with zero IOs / NaN latency) or truncates every column to ``n`` intervals."""
        import numpy as np

        for d in list(self.ios):
            self.ios[d] = _fit(self.ios[d], n, 0.0)
            if d in self.bytes:
                self.bytes[d] = _fit(self.bytes[d], n, 0.0)
        for d, stats in self.latency_us.items():
            for k in stats:
                stats[k] = _fit(stats[k], n, np.nan)

    def add_tail(self, direction: str, total_ios: float, end_s: float, bs_bytes: int | None = None,
                 latency_bins: dict[float, float] | None = None) -> str | None:
        """Adds the IOs fio completed after its last log row (fio does not log a job's final
        window): ``total_ios`` (fio's own count) minus what the grid holds, placed like a
        histogram row's IOs in the window after the last row, within ``end_s`` (the job's
        run time [s]). ``latency_bins`` is fio's whole-job completion-latency histogram
        (``clat_ns.bins`` of ``--output-format=json+``: latency [ns] -> IOs); the tail's
        latencies are that minus what the histogram log holds. Without it an interval made
        mostly of the tail gets no latency statistics. Returns a note, or None if nothing
        was missing."""
        import numpy as np

        have = float(self.ios[direction].sum()) if direction in self.ios else 0.0
        missing = float(total_ios) - have
        if missing >= 0.5:  # IOs completed: the job ran at least fio's 1 ms resolution
            end_s = max(float(end_s), 1e-3)
        self.end_s = max(self.end_s, float(end_s))
        n = self.n
        if direction not in self.ios:
            self.ios[direction] = np.zeros(n)
        self.resize(n)
        if missing < 0.5:
            return None
        last = self._last_ms.get(direction, 0.0)
        w = self.window_ms or self.interval_s * 1000.0
        a, b = last, min(last + w, end_s * 1000.0)
        k = min(int(((a + max(a, b)) / 2.0) // (self.interval_s * 1000.0)), max(n - 1, 0))
        logged = float(self.ios[direction][k])
        self.ios[direction][k] += missing
        if direction in self.bytes and bs_bytes:
            self.bytes[direction][k] += missing * bs_bytes
        h = self._hist.get(direction)
        if h is not None and self._bins_ns is not None:
            h = self._hist[direction] = np.vstack([h, np.zeros((max(n - h.shape[0], 0), h.shape[1]))])[:n]
            if latency_bins:
                lower, values = self._bins_ns
                whole = np.zeros(h.shape[1])
                at = np.clip(np.searchsorted(lower, np.fromiter(latency_bins, float), side="right") - 1, 0, None)
                np.add.at(whole, at, np.fromiter(latency_bins.values(), float))
                h[k] += np.maximum(whole - h.sum(axis=0), 0.0)
                for label, v in _hist_percentiles(h[k:k + 1], values).items():
                    self.latency_us[direction][label][k] = v[0]
            elif missing > logged and direction in self.latency_us:
                for v in self.latency_us[direction].values():
                    v[k] = np.nan
        return (f"{missing:.0f} {direction} IOs completed after fio's last log row ({last / 1000:.3f} s) are "
                f"counted in the interval at {k * self.interval_s:g} s, from fio's own total (fio does not "
                "log a job's final window)")

    def series(self, bs_bytes: int | None = None) -> dict[str, np.ndarray]:
        """The grid as a target series: ``t_s`` (k x interval), ``dt_s``, ``iops`` and ``mbps``
        (all directions), ``{dir}_iops`` when more than one direction ran, and the latency
        columns of :func:`ssdlab.columns.latency_column`. Without byte counts, ``mbps`` is
        ``iops x bs_bytes`` (NaN if ``bs_bytes`` is None)."""
        import numpy as np

        n = self.n
        self.resize(n)
        t = np.arange(n, dtype=np.float64) * self.interval_s
        dt = np.full(n, self.interval_s)
        if n:
            dt[-1] = self.end_s - t[-1]
        ios = np.zeros(n)
        for v in self.ios.values():
            ios += v
        with np.errstate(divide="ignore", invalid="ignore"):
            iops = np.where(dt > 0, ios / dt, 0.0)
            if self.bytes and set(self.bytes) == set(self.ios):
                mbps = np.where(dt > 0, sum(self.bytes.values()) / dt / 1e6, 0.0)
            else:
                mbps = iops * bs_bytes / 1e6 if bs_bytes else np.full(n, np.nan)
        out = {"t_s": t, "dt_s": dt, "iops": iops, "mbps": mbps}
        if len(self.ios) > 1:
            for d, v in self.ios.items():
                with np.errstate(divide="ignore", invalid="ignore"):
                    out[f"{d}_iops"] = np.where(dt > 0, v / dt, 0.0)
        for d, stats in self.latency_us.items():
            for label, _ in LATENCY_STATS:
                out[latency_column(d, label)] = stats[label]
        return out


def _fit(a: np.ndarray, n: int, fill: float) -> np.ndarray:
    import numpy as np

    if a.size >= n:
        return a[:n]
    return np.concatenate([a, np.full(n - a.size, fill)])


def _placement(t_ms: np.ndarray, a_ms: np.ndarray, b_ms: np.ndarray, interval_ms: float, window_ms: float,
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Where rows covering ``(a, b)`` go: (first interval, second interval, share of the first).
    Midpoint placement when the interval is a whole number of windows, else split by overlap
    (a span never exceeds one window, so at most two intervals)."""
    import numpy as np

    ratio = interval_ms / window_ms if window_ms else 1.0
    mid = (a_ms + np.maximum(a_ms, b_ms)) / 2.0
    if window_ms == 0 or abs(ratio - round(ratio)) < 1e-6:
        k = np.floor(mid / interval_ms).astype(np.int64)
        return k, k, np.ones(k.size)
    k1 = np.floor(a_ms / interval_ms).astype(np.int64)
    k2 = np.floor(np.maximum(b_ms - 1e-9, a_ms) / interval_ms).astype(np.int64)
    span = np.maximum(b_ms - a_ms, 1e-9)
    share = np.where(k1 == k2, 1.0, np.clip(((k1 + 1) * interval_ms - a_ms) / span, 0.0, 1.0))
    return k1, k2, share


def _check_interval(interval_s: float, window_ms: int, what: str) -> float:
    if not (interval_s > 0 and math.isfinite(interval_s)):
        raise ValueError(f"interval {interval_s!r} s: must be > 0")
    if window_ms and interval_s * 1000.0 < window_ms - 1e-6:
        raise ValueError(f"{what}: its rows average over {window_ms} ms, so the interval cannot be shorter: "
                         f"use an interval of at least {window_ms / 1000:g} s")
    return float(interval_s)


def _prev_times(t: np.ndarray, window_ms: float) -> np.ndarray:
    """Each row's previous row time; the first row's is one window before it (its window is
    taken to be a regular one)."""
    import numpy as np

    prev = np.empty_like(t)
    if t.size:
        prev[0] = max(0.0, t[0] - window_ms)
        prev[1:] = t[:-1]
    return prev


def _window_ends(t: np.ndarray, prev: np.ndarray, window_ms: float) -> np.ndarray:
    """Where the windows of histogram rows at ``t`` [ms] (after rows at ``prev``) ended [ms]:
    on fio's grid where the rows follow one, else ``previous row + W`` (module docstring)."""
    import numpy as np

    fallback = np.minimum(t, prev + window_ms)
    if t.size < 2 or not (np.diff(t) < window_ms).any():
        return fallback
    grid = np.arange(1, t.size + 1) * float(window_ms)
    first = float((t - grid).min())
    if first < -window_ms / 2:  # more rows than windows since time 0: not one grid
        return fallback
    return np.clip(first + grid, prev, t)


def _dir_codes(present: np.ndarray, direction: int | str | None, path) -> list[int]:
    import numpy as np

    codes = sorted(int(d) for d in np.unique(present))
    if direction is None:
        return codes
    if isinstance(direction, str):
        if direction not in _DIR_CODES:
            raise ValueError(f"direction must be one of {sorted(_DIR_CODES)} or 0/1/2, got {direction!r}")
        code = _DIR_CODES[direction]
    else:
        code = int(direction)
        if code not in DIRECTIONS:
            raise ValueError(f"direction must be 0 (read), 1 (write) or 2 (trim), got {direction!r}")
    if code not in codes:
        found = ", ".join(DIRECTIONS[d] for d in codes)
        raise ValueError(f"{path}: no entries for direction '{DIRECTIONS[code]}' (found: {found})")
    return [code]


#: The most intervals a series read from a log may have: 46 days at 1 s. A series of per-IO
#: latencies (IOs, bytes and four percentiles a direction, both directions) takes about 150
#: bytes an interval at its peak while it is computed, 0.6 GB here.
MAX_INTERVALS = 4_000_000
#: The most cells (intervals x latency bins) the per-interval histograms of a histogram log
#: may hold: 1 GiB of counts (fio's 1,216 bins: 110,000 intervals, 30 hours at 1 s).
MAX_HIST_CELLS = 1 << 27


def _intervals(path: str | Path, n: int, interval_s: float, bins: int = 0) -> int:
    """``n``, the number of intervals the log's times span, if at most :data:`MAX_INTERVALS`
    and, with ``bins`` latency bins an interval, at most :data:`MAX_HIST_CELLS` cells."""
    most = min(MAX_INTERVALS, MAX_HIST_CELLS // bins) if bins > 0 else MAX_INTERVALS
    if n > most:
        per = f" of {bins:,} latency bins" if bins > 0 else ""
        raise ValueError(f"{path}: its times span {n * interval_s:,.0f} s, {n:,} intervals{per} of {interval_s:g} s "
                         f"(at most {most:,}); a time far beyond the others is likely damage, "
                         "else read it with a longer interval")
    return n


def grid_from_log(raw: dict[str, np.ndarray], path: str | Path, kind: str, *, interval_s: float | None = None,
                  log_avg_msec: int | None = None, direction: int | str | None = None,
                  notes: list[str] | None = None) -> Grid:
    """A :class:`Grid` from an iops, bw or lat/clat/slat log read by :func:`read_log`.

    ``kind``: "iops" (IOs), "bw" (bytes) or "lat"/"clat"/"slat" (per-IO latencies: IOs, bytes
    and per-interval percentiles; windowed latency logs are refused, since averages give no
    percentiles). ``interval_s`` defaults to the log's window (1 s for per-IO logs).
    ``log_avg_msec`` None detects the window. Raises ValueError naming the file.
    """
    import numpy as np

    path = Path(path)
    base_kind = "lat" if kind in ("lat", "clat", "slat") else kind
    w = detect_window_ms(raw, kind) if log_avg_msec is None else int(log_avg_msec)
    if w < 0:
        raise ValueError(f"log_avg_msec must be >= 0, got {log_avg_msec}")
    if base_kind == "lat" and w:
        raise ValueError(f"{path}: windowed latency log (log_avg_msec={w}): averages give no percentiles; per-IO "
                         "latencies need fio's default log_avg_msec=0 (or use write_hist_log with log_hist_msec)")
    interval_s = _check_interval(interval_s if interval_s is not None else (w / 1000.0 if w else 1.0), w, str(path))
    grid = Grid(interval_s=interval_s, window_ms=w, notes=list(notes or []))
    start = _epoch_start_ms(raw["t_ms"], w, path)
    if start:
        grid.notes.append(f"{path.name}: Unix-epoch time stamps; time 0 is {start} ms")
    i_ms = interval_s * 1000.0
    for code in _dir_codes(raw["ddir"], direction, path):
        m = raw["ddir"] == code
        t = (raw["t_ms"][m] - start).astype(np.float64)
        name = DIRECTIONS[code]
        if w == 0:  # per-IO rows
            order = np.argsort(t, kind="stable")
            t = t[order]
            k = np.floor(t / i_ms).astype(np.int64)
            n = _intervals(path, int(k.max()) + 1 if k.size else 0, interval_s)
            grid.ios[name] = np.bincount(k, minlength=n).astype(np.float64)
            grid.bytes[name] = np.bincount(k, weights=raw["bs_bytes"][m][order].astype(np.float64), minlength=n)
            if base_kind == "lat":
                grid.latency_us[name] = percentiles_by_interval(k, raw["value"][m][order], n)
            grid.end_s = max(grid.end_s, n * interval_s)
            grid._last_ms[name] = float(t[-1]) if t.size else 0.0
            continue
        order = np.argsort(t, kind="stable")
        t = t[order]
        v = raw["value"][m][order]
        prev = _prev_times(t, w)
        gap = t - prev
        span = np.where(gap >= 0.75 * w, float(w), gap)  # a window (timer jitter aside), or a catch-up row
        amount = v * span / 1000.0 * (1024.0 if base_kind == "bw" else 1.0)  # IOs, or bytes (KiB/s rows)
        k1, k2, share = _placement(t, t - span, t, i_ms, w)
        n = _intervals(path, int(max(k1.max(), k2.max())) + 1 if t.size else 0, interval_s)
        col = np.bincount(k1, weights=amount * share, minlength=n) + np.bincount(k2, weights=amount * (1 - share),
                                                                                 minlength=n)
        (grid.bytes if base_kind == "bw" else grid.ios)[name] = col
        grid.end_s = max(grid.end_s, n * interval_s)
        grid._last_ms[name] = float(t[-1]) if t.size else 0.0
    grid.resize(grid.n)
    if base_kind == "bw":  # a bw log alone: bytes only; IOs unknown
        grid.ios = {d: np.full(grid.n, np.nan) for d in grid.bytes}
    return grid


def _hist_percentiles(h: np.ndarray, values_ns: np.ndarray, rows: int = 4096) -> dict[str, np.ndarray]:
    """Per-row latency statistics [us] of histograms ``h`` (rows x bins, counts per bin of
    latency ``values_ns``): the bin holding the nearest-rank percentile; ``max`` is the
    highest non-empty bin. NaN for an empty row. Works in blocks of ``rows`` rows."""
    import numpy as np

    n, nb = h.shape
    out = {label: np.full(n, np.nan) for label, _ in LATENCY_STATS}
    for s in range(0, n, rows):
        block = h[s:s + rows]
        total = block.sum(axis=1)
        cum = np.cumsum(block, axis=1)
        has = total > 0
        for label, q in LATENCY_STATS:
            if q >= 100.0:
                idx = (nb - 1) - np.argmax((block > 0)[:, ::-1], axis=1)
            else:
                rank = np.ceil(q / 100.0 * total - 1e-9)
                idx = np.argmax(cum >= np.maximum(rank, 1e-9)[:, None] - 1e-9, axis=1)
            out[label][s:s + rows] = np.where(has, values_ns[idx] / 1000.0, np.nan)
    return out


def percentiles_by_interval(k: np.ndarray, lat_ns: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Exact latency statistics [us] of per-IO samples ``lat_ns`` [ns] in each of ``n``
    intervals (nearest rank); ``k`` is each sample's interval, 0 to n - 1."""
    import numpy as np

    out = {label: np.full(n, np.nan) for label, _ in LATENCY_STATS}
    if not k.size:
        return out
    order = np.lexsort((lat_ns, k))
    ks, vs = k[order], lat_ns[order] / 1000.0
    starts = np.searchsorted(ks, np.arange(n), side="left")
    ends = np.searchsorted(ks, np.arange(n), side="right")
    cnt = ends - starts
    has = cnt > 0
    for label, q in LATENCY_STATS:
        pos = starts + np.maximum(np.ceil(q / 100.0 * cnt - 1e-9).astype(np.int64), 1) - 1
        out[label][has] = vs[np.minimum(pos[has], ends[has] - 1)]
    return out


def grid_from_hist(hist: HistLog, path: str | Path, *, interval_s: float | None = None,
                   window_ms: int | None = None, direction: int | str | None = None,
                   notes: list[str] | None = None, end_s: float | None = None) -> Grid:
    """A :class:`Grid` (IOs, and latency percentiles from the histograms) from a histogram log.
    ``window_ms`` is fio's ``log_hist_msec`` (None: detected from the rows' spacing);
    ``interval_s`` defaults to it. ``end_s``: the job's run time [s] where known; rows a few
    ms past it (fio's clock starts before the job's) count in the last interval. See the
    module docstring for where each row's IOs go."""
    import numpy as np

    path = Path(path)
    w = int(window_ms) if window_ms else _window_of(hist.t_ms, hist.ddir)
    interval_s = _check_interval(interval_s if interval_s is not None else w / 1000.0, w, str(path))
    grid = Grid(interval_s=interval_s, window_ms=w, notes=list(notes or []))
    start = _epoch_start_ms(hist.t_ms, w, path)
    if start:
        grid.notes.append(f"{path.name}: Unix-epoch time stamps; time 0 is {start} ms")
    i_ms = interval_s * 1000.0
    nb = hist.counts.shape[1]
    if end_s is None and hist.t_ms.size:
        end_s = _last_row_end_s(float(hist.t_ms.max() - start), w, i_ms)
    parts = []
    for code in _dir_codes(hist.ddir, direction, path):
        m = hist.ddir == code
        t = (hist.t_ms[m] - start).astype(np.float64)
        order = np.argsort(t, kind="stable")
        t, counts = t[order], hist.counts[m][order]
        prev = _prev_times(t, w)
        k1, k2, share = _placement(t, prev, _window_ends(t, prev, w), i_ms, w)
        kc = np.floor(t / i_ms).astype(np.int64)  # the closing IO's interval
        if end_s is not None:
            last = max(int(math.ceil(end_s / interval_s - 1e-9)) - 1, 0)
            k1, k2, kc = np.minimum(k1, last), np.minimum(k2, last), np.minimum(kc, last)
        n = _intervals(path, int(max(k1.max(), k2.max(), kc.max())) + 1 if t.size else 0, interval_s, nb)
        nonzero = counts > 0
        top = (nb - 1) - np.argmax(nonzero[:, ::-1], axis=1)  # highest non-empty bin: the closing IO
        has = nonzero.any(axis=1)
        rest = counts.copy()
        rest[np.flatnonzero(has), top[has]] -= 1
        h = np.zeros((n, nb))
        np.add.at(h, k1, rest * share[:, None])
        if (share < 1).any():
            np.add.at(h, k2, rest * (1 - share)[:, None])
        np.add.at(h, (kc[has], top[has]), 1.0)
        parts.append((DIRECTIONS[code], h, t))
    n = max((h.shape[0] for _, h, _ in parts), default=0)
    grid.end_s = n * interval_s if end_s is None else max(float(end_s), (n - 1) * interval_s)
    n = _intervals(path, grid.n, interval_s, nb)
    grid._bins_ns = (hist.bin_lower_ns, hist.bin_ns)
    for name, h, t in parts:
        h = np.vstack([h, np.zeros((n - h.shape[0], nb))]) if h.shape[0] < n else h
        grid.ios[name] = h.sum(axis=1)
        grid.latency_us[name] = _hist_percentiles(h, hist.bin_ns)
        grid._hist[name] = h
        grid._last_ms[name] = float(t[-1]) if t.size else 0.0
    return grid


def _last_row_end_s(t_last_ms: float, window_ms: float, interval_ms: float) -> float:
    """Where a histogram log without its run's JSON ends [s]: at its last row, or, when that
    row closed a window a few ms past an interval boundary (fio's clock starts before the
    job's), at that boundary: the ms past it are timer offset, not an interval of their own
    (which would read as a near-zero "stall" at the end)."""
    boundary = math.floor(t_last_ms / interval_ms) * interval_ms
    if boundary > 0 and t_last_ms - boundary <= 0.1 * window_ms:
        return boundary / 1000.0
    return t_last_ms / 1000.0


def merge_grids(acc: Grid | None, g: Grid) -> Grid:
    """Sums the IOs and bytes of jobs' grids (``numjobs``, jobs running together). Latency
    percentiles are those of the summed histograms where every grid came from a histogram
    log with the same bins; other logs' percentiles cannot be added up and are dropped."""
    import numpy as np

    if acc is None:
        return g
    if abs(acc.interval_s - g.interval_s) > 1e-9:
        raise ValueError("the logs give different intervals; pass one interval for all of them")
    n = max(acc.n, g.n)
    acc.end_s = max(acc.end_s, g.end_s)
    acc.resize(n)
    g.resize(n)
    same_bins = (acc._bins_ns is not None and g._bins_ns is not None
                 and np.array_equal(acc._bins_ns[1], g._bins_ns[1]))
    for d, v in g.ios.items():
        acc.ios[d] = acc.ios.get(d, np.zeros(n)) + v
    for d, v in g.bytes.items():
        acc.bytes[d] = acc.bytes.get(d, np.zeros(n)) + v
    if same_bins:
        nb = len(acc._bins_ns[1])
        for d in set(acc._hist) | set(g._hist):
            a, b = (_fit_rows(x.get(d), n, nb) for x in (acc._hist, g._hist))
            acc._hist[d] = a + b
            acc.latency_us[d] = _hist_percentiles(acc._hist[d], acc._bins_ns[1])
            acc._last_ms[d] = max(acc._last_ms.get(d, 0.0), g._last_ms.get(d, 0.0))
    elif acc.latency_us or g.latency_us:
        acc.latency_us = {}
        note = "latency percentiles of several jobs cannot be added up: the series has none (read one job's log)"
        if note not in acc.notes:
            acc.notes.append(note)
    acc.notes += [x for x in g.notes if x not in acc.notes]
    return acc


def _fit_rows(h: np.ndarray | None, n: int, nb: int) -> np.ndarray:
    """Histogram rows ``h`` (or none) padded with empty rows or cut to ``n``."""
    import numpy as np

    if h is None:
        return np.zeros((n, nb))
    return np.vstack([h, np.zeros((max(n - h.shape[0], 0), nb))])[:n]


def bins_percentiles_us(bins: dict[float, float]) -> dict[str, float]:
    """Percentiles ``p50``, ``p99``, ``p99.9`` and ``max`` [us] of a latency histogram given as
    {latency [ns]: IOs} (fio's ``clat_ns.bins``), nearest rank; {} when it is empty."""
    import numpy as np

    if not bins:
        return {}
    lat = np.fromiter(sorted(bins), float)
    h = np.array([[bins[k] for k in sorted(bins)]])
    return {label: float(v[0]) for label, v in _hist_percentiles(h, lat).items() if np.isfinite(v[0])}


def grid_from_files(files: Sequence[str | Path], *, interval_s: float | None = None,
                    log_avg_msec: int | None = None, direction: int | str | None = None) -> Grid:
    """One :class:`Grid` from the logs of one run: every file is one job's log of one kind
    (told by its name, see :func:`parse_log_name`; a name fio would not write is read as an
    IOPS log). Jobs are summed. One kind is read, by preference: histogram logs (IOs and
    latency), else per-IO latency logs (IOs, bytes, latency), else IOPS logs (IOs), else
    bandwidth logs (bytes only); the others are named in a note. ``interval_s`` defaults to
    the logs' window (1 s for per-IO logs)."""
    by_kind: dict[str, list[Path]] = {}
    for f in files:
        ln = parse_log_name(f)
        kind = "hist" if ln and ln.kind in ("hist", "clat_hist") else (ln.kind if ln else "iops")
        by_kind.setdefault(kind, []).append(Path(f))
    if not by_kind:
        raise ValueError("no fio logs given")
    primary = next((k for k in ("hist", "clat", "lat", "iops", "slat", "bw") if k in by_kind))
    grid: Grid | None = None
    for f in by_kind[primary]:
        notes: list[str] = []
        if primary == "hist":
            g = grid_from_hist(read_hist_log(f, notes), f, interval_s=interval_s, window_ms=log_avg_msec or None,
                               direction=direction, notes=notes)
        else:
            g = grid_from_log(read_log(f, notes), f, primary, interval_s=interval_s, log_avg_msec=log_avg_msec,
                              direction=direction, notes=notes)
        interval_s = g.interval_s
        grid = merge_grids(grid, g)
    assert grid is not None
    grid.sources = list(by_kind[primary])
    left = sorted(k for k in by_kind if k != primary)
    if left:
        grid.notes.append(f"read the {primary} logs; the {', '.join(left)} logs given too were not needed")
    return grid


# --------------------------------------------------------------------------- a whole fio run

def _fio_seconds(text) -> float | None:
    """Seconds of a fio time option as fio's JSON echoes it (``"5000ms"``, ``"60"``), or None."""
    try:
        return parse_time_s(str(text))
    except ValueError:
        return None


def run_time_s(fio_json: dict) -> float:
    """How long a fio run's jobs ran [s] by its JSON: the longest ``job_runtime``, or a
    direction's ``runtime`` where that is longer (a job done within a ms has job_runtime 0
    where its direction's runtime says 1 ms)."""
    ms = 0.0
    for j in fio_json.get("jobs") or []:
        ms = max(ms, float(j.get("job_runtime", 0) or 0),
                 *(float((j.get(d) or {}).get("runtime", 0) or 0) for d in DIRECTION_NAMES))
    return ms / 1000.0


def run_end_s(fio_json: dict) -> float | None:
    """Where a fio run's series ends [s]: :func:`run_time_s`, capped by the ``runtime`` the
    jobs were given (a timed job's run time overshoots it by a few ms, whose IOs count in the
    last interval). None without jobs."""
    jobs = fio_json.get("jobs") or []
    if not jobs:
        return None
    end = run_time_s(fio_json)
    runtimes = [_fio_seconds({**(fio_json.get("global options") or {}), **(j.get("job options") or {})}
                             .get("runtime", "")) for j in jobs]
    if all(r is not None and r > 0 for r in runtimes):
        end = min(end, max(runtimes))
    return end


def _json_hist_msec(fio_json: dict) -> int | None:
    """``log_hist_msec`` of a fio run's JSON (its global or first job's options), or None."""
    jobs = fio_json.get("jobs") or [{}]
    opts = {**(fio_json.get("global options") or {}), **(jobs[0].get("job options") or {})}
    v = str(opts.get("log_hist_msec", ""))
    return int(v) if v.isdigit() and int(v) > 0 else None


def run_grid(logs: Sequence[str | Path], fio_json: dict | None, *, interval_s: float | None = None,
             window_ms: int | None = None, end_s: float | None = None) -> Grid:
    """The grid of one fio run from its jobs' histogram logs (``logs``: job 1, 2, ... in the
    order of ``fio_json["jobs"]``), summed: each job's final window, which fio never logs, is
    added from the run's JSON (``--output-format=json+``: ``total_ios`` and ``clat_ns.bins``),
    and the grid ends at the run's end (``end_s``, default :func:`run_end_s`). A missing log or
    one without rows (a job shorter than one window) is all tail. This is how a fio target
    turns a phase into its series and how ``ssdlab analyze`` reads the logs of such a run, so
    the two agree exactly. Raises ValueError for a malformed log."""
    fio_json = fio_json or {}
    jobs = fio_json.get("jobs") or []
    if end_s is None:
        end_s = run_end_s(fio_json)
    window_ms = window_ms or _json_hist_msec(fio_json)
    grid: Grid | None = None
    for n, path in enumerate(map(Path, logs), start=1):
        notes: list[str] = []
        try:
            g = grid_from_hist(read_hist_log(path, notes), path, interval_s=interval_s, window_ms=window_ms,
                               end_s=end_s, notes=notes)
        except FileNotFoundError:
            g = None
            notes.append(f"fio wrote no log {path.name}")
        except ValueError as e:
            if "no histogram rows" not in str(e):
                raise
            g = None
            notes.append(f"fio's log {path.name} is empty (nothing completed in the first interval, or fio was "
                         "killed before writing it)")
        if g is None:
            w = window_ms or int(round((interval_s or 1.0) * 1000))
            g = Grid(interval_s=interval_s or w / 1000.0, window_ms=w, notes=notes)
        interval_s = g.interval_s
        jd = jobs[n - 1] if n <= len(jobs) else {}
        for d in DIRECTION_NAMES:
            dd = jd.get(d) or {}
            if dd.get("total_ios"):
                bins = {float(k): float(v) for k, v in ((dd.get("clat_ns") or {}).get("bins") or {}).items()}
                if note := g.add_tail(d, dd["total_ios"], end_s if end_s is not None else g.end_s, None, bins):
                    g.notes.append(note)
        grid = merge_grids(grid, g)
    if grid is None:
        raise ValueError("no fio logs given")
    grid.sources = [Path(p) for p in logs]
    return grid


def run_io_bytes(fio_json: dict | None) -> dict[str, tuple[int, int]]:
    """Per direction that ran: (IOs, bytes) over every job of a fio run's JSON."""
    out: dict[str, tuple[int, int]] = {}
    for j in (fio_json or {}).get("jobs") or []:
        for d in DIRECTION_NAMES:
            dd = j.get(d) or {}
            n, b = int(dd.get("total_ios", 0) or 0), int(dd.get("io_bytes", 0) or 0)
            if n:
                ios, nbytes = out.get(d, (0, 0))
                out[d] = (ios + n, nbytes + b)
    return out


def run_series(grid: Grid, fio_json: dict | None, *, per_direction: bool, bs_bytes: int | None = None
               ) -> dict[str, np.ndarray]:
    """The series of a fio run's grid (:func:`run_grid`). ``per_direction``: ``{dir}_iops`` and
    ``{dir}_mbps`` for every direction that ran and ``mbps`` their sum, each direction's MB/s
    from its mean IO size in the JSON; otherwise :meth:`Grid.series` with ``bs_bytes``
    (default: the run's mean IO size when one direction ran)."""
    import numpy as np

    sizes = run_io_bytes(fio_json)
    if not per_direction:
        if bs_bytes is None and len(sizes) == 1:
            ios, nbytes = next(iter(sizes.values()))
            bs_bytes = nbytes / ios
        return grid.series(bs_bytes)
    series = grid.series(None)
    mbps = np.zeros(len(series["t_s"]))
    for d in DIRECTION_NAMES:
        if d in grid.ios and d in sizes:
            ios, nbytes = sizes[d]
            iops = series.get(f"{d}_iops", series["iops"] if len(grid.ios) == 1 else None)
            series[f"{d}_iops"] = iops
            series[f"{d}_mbps"] = iops * (nbytes / ios) / 1e6
            mbps = mbps + series[f"{d}_mbps"]
    series["mbps"] = mbps
    return series


# --------------------------------------------------------------------------- 1-D readers


def read_iops_log(path: str | Path, direction: int | str | None = None, *, log_avg_msec: int | None = None,
                  interval_s: float = 1.0) -> dict[str, np.ndarray]:
    """One fio IOPS log as a series of ``interval_s`` (default 1 s): ``{"t_s", "iops"}``.

    ``direction``: 0/1/2 or "read"/"write"/"trim"; None = every direction in the file,
    summed. ``log_avg_msec``: None to detect the logging mode, 0 for a per-IO log, W > 0 for
    a windowed log of W ms. Raises ValueError for a malformed file (naming file and line) or a
    direction the file does not hold.
    """
    import numpy as np

    path = Path(path)
    g = grid_from_log(read_log(path), path, "iops", interval_s=interval_s, log_avg_msec=log_avg_msec,
                      direction=direction)
    s = g.series()
    return {"t_s": s["t_s"], "iops": sum(g.ios.values()) / g.interval_s if g.ios else np.zeros(0)}


def read_iops_logs(paths: str | Path | Sequence[str | Path], direction: int | str | None = None, *,
                   log_avg_msec: int | None = None, interval_s: float = 1.0) -> dict[str, np.ndarray]:
    """Total IOPS of several jobs (``numjobs``), interval by interval. ``paths`` is a list of
    files, or a directory / ``write_iops_log`` prefix for :func:`find_logs`."""
    if isinstance(paths, (str, Path)):
        p = Path(paths)
        files = [p] if p.is_file() else find_logs(p, "iops")
    else:
        files = [Path(p) for p in paths]
    if not files:
        raise ValueError("no fio IOPS logs given")
    g = None
    for f in files:
        g = merge_grids(g, grid_from_log(read_log(f), f, "iops", interval_s=interval_s, log_avg_msec=log_avg_msec,
                                         direction=direction))
    return {"t_s": g.series()["t_s"], "iops": sum(g.ios.values()) / g.interval_s}


def read_bw_log(path: str | Path, direction: int | str | None = None, *, log_avg_msec: int | None = None,
                interval_s: float = 1.0) -> dict[str, np.ndarray]:
    """One fio bandwidth log as a series: ``{"t_s", "mbps"}`` (MB/s, 10**6 bytes/s).
    Windowed rows hold KiB/s (1024 bytes); per-IO rows are summed by block size."""
    path = Path(path)
    g = grid_from_log(read_log(path), path, "bw", interval_s=interval_s, log_avg_msec=log_avg_msec,
                      direction=direction)
    return {"t_s": g.series()["t_s"], "mbps": sum(g.bytes.values()) / g.interval_s / 1e6}


def read_lat_log(path: str | Path, direction: int | str | None = None) -> dict[str, np.ndarray]:
    """A per-IO fio latency log (``_lat``, ``_clat`` or ``_slat``): ``t_s`` (completion time, s)
    and ``lat_ns`` per row. A windowed log is refused: percentiles of window averages are not
    latency percentiles. Values are read as nanoseconds (fio >= 3.0)."""
    import numpy as np

    path = Path(path)
    raw = read_log(path)
    codes = _dir_codes(raw["ddir"], direction, path)
    w = detect_window_ms(raw, "lat")
    if w:
        raise ValueError(f"{path}: windowed latency log (log_avg_msec={w}); per-IO latencies need fio's "
                         "default log_avg_msec=0 (or use write_hist_log)")
    m = np.isin(raw["ddir"], codes)
    start = _epoch_start_ms(raw["t_ms"][m], 0, path)
    return {"t_s": (raw["t_ms"][m] - start) / 1000.0, "lat_ns": raw["value"][m]}


def latency_percentiles_us(lat_ns: np.ndarray | Sequence[float],
                           percentiles: Sequence[float] = (50.0, 99.0, 99.9, 99.99)) -> dict[str, float]:
    """Latency percentiles in microseconds, keyed like ``PhaseResult.latency_us``:
    ``"p50"``, ``"p99"``, ``"p99.9"``, ..., plus ``"max"``. Linear interpolation."""
    import numpy as np

    a = np.asarray(lat_ns, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("no latency samples")
    vals = np.percentile(a, list(percentiles)) / 1000.0
    out = {f"p{p:g}": float(v) for p, v in zip(percentiles, vals)}
    out["max"] = float(a.max() / 1000.0)
    return out
