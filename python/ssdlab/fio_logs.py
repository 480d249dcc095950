"""Read fio's per-job log files (``write_iops_log``, ``write_bw_log``, ``write_lat_log``).

This is how ``ssdlab analyze`` turns runs users already have into the series that
:mod:`ssdlab.analysis` reads: one row per 1-second interval, ``t_s`` (interval start,
seconds from the first interval) and ``iops`` (IOs per second) or ``mbps`` (10**6 bytes
per second), the same names and units as a target's ``PhaseResult.series``.

File format (fio HOWTO, "Log File Formats"): one entry per line,
``time (ms), value, data direction, block size (bytes)[, offset (bytes)][, priority]...``
with data direction 0 = read, 1 = write, 2 = trim. The value is IOPS in an IOPS log,
KiB/s in a bandwidth log and nanoseconds in a latency log (fio >= 3.0; fio 2.x wrote
microseconds). Only the first four fields are used; anything after them (offset with
``log_offset=1``, command priority, issue time in newer fio) is ignored, so all fio
versions' layouts read the same. Not supported: ``log_max_value=2`` ("both"), which inserts
a second value before the direction; compressed ``.fz`` logs (inflate them with
``fio --inflate-log``). ``.gz`` files are read transparently. Blank lines and ``#``
comments are skipped.

File names: fio writes ``NAME_TYPE.N.log`` (``N`` = job index, 1..numjobs) or
``NAME_TYPE.log`` with ``per_job_logs=0``; TYPE is ``iops``, ``bw``, ``lat``, ``clat``,
``slat`` (or ``hist``, which is not read here). :func:`parse_log_name` and
:func:`find_logs` understand that naming; :func:`read_iops_logs` sums the jobs of a run.

Two logging modes are supported, told apart automatically (or by ``log_avg_msec``):

* **Windowed** (``log_avg_msec=W`` > 0): one row per direction per window of W ms, time
  stamp = end of the window, value = average over the window. Entry k covers
  ``[k*W, (k+1)*W)`` with ``k = floor(time_ms / W - 0.5)`` (tolerates the few ms of jitter
  fio's timer adds). fio writes *no row* for a window in which a direction did no IO, so
  missing windows are 0 IOPS -- which is exactly how a stall shows up. Rows that land in
  the same window (fio catching up after a stall) are averaged. Windows are re-binned to
  1-s intervals assuming the rate is uniform inside a window (exact when W = 1000 or W
  divides 1000). Detected when any IOPS value differs from 1 or every block size is 0
  (fio writes 0 for block size and offset in windowed rows). Caveat from fio itself: a
  windowed value averages fio's ``iopsavgtime`` sub-samples (default 500 ms) that saw IO,
  so a window that was half stalled is over-reported; run fio with
  ``iopsavgtime=1000 log_avg_msec=1000`` for exact 1-s values.
* **Per-IO** (``log_avg_msec=0``, fio's default): one row per completed IO (IOPS value 1,
  real block size). IOPS per second = number of rows whose time falls in that second;
  MB/s = sum of their block sizes. Exact, but the files are large (one line per IO).

Time stamps written with ``log_unix_epoch=1`` (values above 10**11 ms) are shifted so the
log starts at 0. The last 1-s interval may be partial (the job ended inside it).

Errors: a malformed line raises ``ValueError("FILE:LINE: expected ..., got '...'")``.
"""
from __future__ import annotations

import gzip
import io
import itertools
import math
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Iterable, Iterator, Sequence

import numpy as np

__all__ = [
    "DIRECTIONS",
    "LogName",
    "parse_log_name",
    "find_logs",
    "read_log",
    "detect_window_ms",
    "read_iops_log",
    "read_iops_logs",
    "read_bw_log",
    "read_lat_log",
    "latency_percentiles_us",
]

#: fio data direction codes.
DIRECTIONS: dict[int, str] = {0: "read", 1: "write", 2: "trim"}
_DIR_CODES = {v: k for k, v in DIRECTIONS.items()}

#: What one line must look like (used in error messages).
EXPECTED = "'time_ms, value, direction, bs[, offset][, priority]' (comma-separated numbers, direction 0/1/2)"

_LOG_TYPES = ("iops", "bw", "lat", "clat", "slat", "hist")
_NAME_RE = re.compile(r"^(?P<job>.+)_(?P<kind>iops|bw|lat|clat|slat|hist)(?:\.(?P<index>\d+))?\.log(?:\.gz)?$")

#: Time stamps above this many ms are Unix-epoch stamps (``log_unix_epoch=1``), not run time.
_EPOCH_MS = 10**11
#: Lines parsed per chunk (bounds memory for per-IO logs and the cost of a slow re-parse).
_CHUNK_LINES = 1 << 20


# --------------------------------------------------------------------------- names


@dataclass(frozen=True)
class LogName:
    """Parts of a fio log file name: ``job`` (the write_*_log prefix), ``kind``, ``index``."""

    job: str
    kind: str
    index: int | None


def parse_log_name(path: str | Path) -> LogName | None:
    """``"run_iops.1.log"`` -> ``LogName("run", "iops", 1)``; None if the name is not fio's."""
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


def _bad(path: Path, lineno: int, line: str, why: str | None = None) -> ValueError:
    shown = line.rstrip("\r\n")
    if len(shown) > 120:
        shown = shown[:117] + "..."
    msg = f"{path}:{lineno}: expected {EXPECTED}, got {shown!r}"
    if why:
        msg += f" ({why})"
    return ValueError(msg)


def _check_row(t: float, v: float, d: float, bs: float) -> str | None:
    """Why a parsed row is invalid, or None. Mirrors :func:`_check_rows`."""
    if not all(math.isfinite(z) for z in (t, v, d, bs)):
        return "numbers must be finite"
    if t < 0:
        return "time must be >= 0"
    if v < 0:
        return "value must be >= 0"
    if d not in (0.0, 1.0, 2.0):
        return f"direction must be 0 (read), 1 (write) or 2 (trim), got {d:g}"
    if bs < 0 or bs != int(bs):
        return "block size must be a whole number of bytes >= 0"
    return None


def _check_rows(a: np.ndarray) -> bool:
    """True when every row of an (n, 4) array passes :func:`_check_row`."""
    if not np.isfinite(a).all():
        return False
    t, v, d, bs = a.T
    return bool(
        (t >= 0).all()
        and (v >= 0).all()
        and np.isin(d, (0.0, 1.0, 2.0)).all()
        and (bs >= 0).all()
        and (bs == np.floor(bs)).all()
    )


def _parse_slow(path: Path, first_lineno: int, lines: Sequence[str]) -> np.ndarray:
    """Line-by-line parse of one chunk; raises with the exact line number on the first bad line."""
    rows = []
    for lineno, line in enumerate(lines, start=first_lineno):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        fields = [f.strip() for f in body.split(",")]
        if len(fields) < 4:
            raise _bad(path, lineno, line, f"{len(fields)} field{'s' if len(fields) != 1 else ''}, need at least 4")
        try:
            t, v, d, bs = (float(f) for f in fields[:4])
        except ValueError:
            raise _bad(path, lineno, line, "the first four fields must be numbers") from None
        why = _check_row(t, v, d, bs)
        if why:
            raise _bad(path, lineno, line, why)
        rows.append((t, v, d, bs))
    return np.array(rows, dtype=np.float64).reshape(-1, 4)


def _chunks(f: IO[str]) -> Iterator[tuple[int, list[str]]]:
    lineno = 1
    while True:
        lines = list(itertools.islice(f, _CHUNK_LINES))
        if not lines:
            return
        yield lineno, lines
        lineno += len(lines)


def read_log(path: str | Path) -> dict[str, np.ndarray]:
    """All entries of a fio log, unprocessed: ``t_ms`` (int64), ``value`` (float64),
    ``ddir`` (int8: 0 read, 1 write, 2 trim), ``bs_bytes`` (int64), in file order.

    Raises FileNotFoundError, or ValueError naming the file and line of a malformed entry
    or saying the file holds no entries.
    """
    path = Path(path)
    parts = []
    with _open_text(path) as f:
        for first, lines in _chunks(f):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # "input contained no data" for blank chunks
                    a = np.loadtxt(lines, delimiter=",", usecols=(0, 1, 2, 3), ndmin=2, dtype=np.float64)
                if a.size and not _check_rows(a):
                    raise ValueError("row check failed")
            except ValueError:
                a = _parse_slow(path, first, lines)  # raises with the line number
            parts.append(a.reshape(-1, 4))
    a = np.concatenate(parts) if parts else np.zeros((0, 4))
    if a.shape[0] == 0:
        raise ValueError(f"{path}: no log entries (expected lines like {EXPECTED})")
    return {
        "t_ms": a[:, 0].astype(np.int64),
        "value": a[:, 1],
        "ddir": a[:, 2].astype(np.int8),
        "bs_bytes": a[:, 3].astype(np.int64),
    }


# --------------------------------------------------------------------------- resampling


def _direction_codes(raw: dict[str, np.ndarray], direction: int | str | None, path: Path) -> list[int]:
    present = sorted(int(d) for d in np.unique(raw["ddir"]))
    if direction is None:
        return present
    if isinstance(direction, str):
        if direction not in _DIR_CODES:
            raise ValueError(f"direction must be one of {sorted(_DIR_CODES)} or 0/1/2, got {direction!r}")
        code = _DIR_CODES[direction]
    else:
        code = int(direction)
        if code not in DIRECTIONS:
            raise ValueError(f"direction must be 0 (read), 1 (write) or 2 (trim), got {direction!r}")
    if code not in present:
        found = ", ".join(DIRECTIONS[d] for d in present)
        raise ValueError(f"{path}: no entries for direction '{DIRECTIONS[code]}' (found: {found})")
    return [code]


def detect_window_ms(raw: dict[str, np.ndarray], kind: str = "iops") -> int:
    """The log's averaging window in ms (fio ``log_avg_msec``), 0 for a per-IO log.

    Windowed when every block size is 0 (what fio writes in windowed rows) or, for an IOPS
    log, when any value differs from 1 (a per-IO IOPS row is always 1); per-IO otherwise.
    Old fio versions wrote the block size into windowed rows: their bw and lat logs are
    taken for per-IO logs, so pass ``log_avg_msec`` explicitly for those. W is the median
    step between consecutive distinct time stamps of one direction, rounded to 10 ms (to
    1 ms below 100 ms).
    """
    v, bs, t, d = raw["value"], raw["bs_bytes"], raw["t_ms"], raw["ddir"]
    windowed = bool((kind == "iops" and (v != 1).any()) or (bs == 0).all())
    if not windowed:
        return 0
    steps = []
    for code in np.unique(d):
        td = np.sort(t[d == code])
        if td.size >= 2:
            steps.append(np.diff(td))
    step = np.concatenate(steps) if steps else np.zeros(0, dtype=np.int64)
    pos = step[step > 0]
    if pos.size == 0:
        return 1000  # a single window: assume fio's usual log_avg_msec=1000
    med = float(np.median(pos))
    w = int(round(med / 10.0) * 10) if med >= 100 else int(round(med))
    return max(w, 1)


def _epoch_shift(t_ms: np.ndarray, window_ms: int) -> np.ndarray:
    t0 = int(t_ms.min())
    if t0 > _EPOCH_MS:
        return t_ms - (t0 - window_ms if window_ms else t0)
    return t_ms


def _windowed_to_seconds(t_ms: np.ndarray, rate: np.ndarray, window_ms: int, n_windows: int | None = None) -> np.ndarray:
    """Per-second mean rate from windowed rows (rate = average over the window ending at t_ms)."""
    k = np.floor(t_ms / window_ms - 0.5).astype(np.int64)
    k = np.maximum(k, 0)
    nk = int(k.max()) + 1 if n_windows is None else n_windows
    tot = np.bincount(k, weights=rate, minlength=nk)
    cnt = np.bincount(k, minlength=nk)
    per_window = np.where(cnt > 0, tot / np.maximum(cnt, 1), 0.0)  # missing window = no IO
    if window_ms == 1000:
        return per_window
    # Cumulative amount at window boundaries, read off at whole seconds (uniform within a window).
    cum = np.concatenate(([0.0], np.cumsum(per_window * (window_ms / 1000.0))))
    edges_ms = np.arange(nk + 1, dtype=np.float64) * window_ms
    n_s = max(1, int(nk * window_ms // 1000))
    sec_edges = np.arange(n_s + 1, dtype=np.float64) * 1000.0
    return np.diff(np.interp(sec_edges, edges_ms, cum))


def _per_io_to_seconds(t_ms: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    sec = (t_ms // 1000).astype(np.int64)
    return np.bincount(sec, weights=weight, minlength=int(sec.max()) + 1).astype(np.float64)


def _sum_aligned(parts: Iterable[np.ndarray]) -> np.ndarray:
    parts = list(parts)
    n = max(p.size for p in parts)
    out = np.zeros(n)
    for p in parts:
        out[: p.size] += p
    return out


def _series(raw: dict[str, np.ndarray], path: Path, kind: str, direction: int | str | None,
            log_avg_msec: int | None) -> tuple[np.ndarray, int]:
    """Per-second values (IOPS or bytes/s) summed over the selected directions, and the window."""
    codes = _direction_codes(raw, direction, path)
    w = detect_window_ms(raw, kind) if log_avg_msec is None else int(log_avg_msec)
    if w < 0:
        raise ValueError(f"log_avg_msec must be >= 0, got {log_avg_msec}")
    t = _epoch_shift(raw["t_ms"], w)
    parts = []
    for code in codes:
        m = raw["ddir"] == code
        if w:
            rate = raw["value"][m]
            if kind == "bw":
                rate = rate * 1024.0  # KiB/s -> bytes/s
            parts.append(_windowed_to_seconds(t[m], rate, w))
        else:
            weight = None if kind == "iops" else raw["bs_bytes"][m].astype(np.float64)
            parts.append(_per_io_to_seconds(t[m], weight))
    return _sum_aligned(parts), w


# --------------------------------------------------------------------------- public readers


def read_iops_log(path: str | Path, direction: int | str | None = None, *,
                  log_avg_msec: int | None = None) -> dict[str, np.ndarray]:
    """One fio IOPS log as a 1-s series: ``{"t_s": [0, 1, ...], "iops": [...]}``.

    ``direction``: 0/1/2 or "read"/"write"/"trim"; None = every direction in the file,
    summed (a plain write log holds only writes). ``log_avg_msec``: None to detect the
    logging mode (see the module docstring), 0 for a per-IO log, W > 0 for a windowed log
    of W ms. Raises ValueError for a malformed file (naming file and line) or a direction
    the file does not hold.
    """
    path = Path(path)
    raw = read_log(path)
    iops, _ = _series(raw, path, "iops", direction, log_avg_msec)
    return {"t_s": np.arange(iops.size, dtype=np.float64), "iops": iops}


def read_iops_logs(paths: str | Path | Sequence[str | Path], direction: int | str | None = None, *,
                   log_avg_msec: int | None = None) -> dict[str, np.ndarray]:
    """Total IOPS of several jobs (``numjobs``): the per-job 1-s series summed second by second.

    ``paths`` is a list of files, or a directory / ``write_iops_log`` prefix for
    :func:`find_logs`. A job whose log ends earlier contributes 0 afterwards.
    """
    if isinstance(paths, (str, Path)):
        p = Path(paths)
        files = [p] if p.is_file() else find_logs(p, "iops")
    else:
        files = [Path(p) for p in paths]
    if not files:
        raise ValueError("no fio IOPS logs given")
    total = _sum_aligned(read_iops_log(f, direction, log_avg_msec=log_avg_msec)["iops"] for f in files)
    return {"t_s": np.arange(total.size, dtype=np.float64), "iops": total}


def read_bw_log(path: str | Path, direction: int | str | None = None, *,
                log_avg_msec: int | None = None) -> dict[str, np.ndarray]:
    """One fio bandwidth log as a 1-s series: ``{"t_s", "mbps"}`` (MB/s, 10**6 bytes/s).

    Windowed rows hold KiB/s (1024 bytes); per-IO rows are summed by block size.
    """
    path = Path(path)
    raw = read_log(path)
    bps, _ = _series(raw, path, "bw", direction, log_avg_msec)
    return {"t_s": np.arange(bps.size, dtype=np.float64), "mbps": bps / 1e6}


def read_lat_log(path: str | Path, direction: int | str | None = None, *,
                 per_io: bool = True) -> dict[str, np.ndarray]:
    """A fio latency log (``_lat``, ``_clat`` or ``_slat``): ``t_s`` (completion time, s) and
    ``lat_ns`` per row.

    With ``per_io=True`` (default) a windowed log is refused: percentiles of window
    averages are not latency percentiles. Values are read as nanoseconds (fio >= 3.0).
    """
    path = Path(path)
    raw = read_log(path)
    codes = _direction_codes(raw, direction, path)
    if per_io:
        w = detect_window_ms(raw, "lat")
        if w:
            raise ValueError(
                f"{path}: windowed latency log (log_avg_msec={w}); per-IO latencies need fio's "
                "default log_avg_msec=0 (or use write_hist_log)"
            )
    m = np.isin(raw["ddir"], codes)
    t = _epoch_shift(raw["t_ms"][m], 0)
    return {"t_s": t / 1000.0, "lat_ns": raw["value"][m]}


def latency_percentiles_us(lat_ns: np.ndarray | Sequence[float],
                           percentiles: Sequence[float] = (50.0, 99.0, 99.9, 99.99)) -> dict[str, float]:
    """Latency percentiles in microseconds, keyed like ``PhaseResult.latency_us``:
    ``"p50"``, ``"p99"``, ``"p99.9"``, ..., plus ``"max"``. Linear interpolation."""
    a = np.asarray(lat_ns, dtype=np.float64)
    a = a[np.isfinite(a)]
    if a.size == 0:
        raise ValueError("no latency samples")
    vals = np.percentile(a, list(percentiles)) / 1000.0
    out = {f"p{p:g}": float(v) for p, v in zip(percentiles, vals)}
    out["max"] = float(a.max() / 1000.0)
    return out
