"""Block I/O traces: read, inspect, convert and generate them.

A thin wrapper over the Rust crate ``ssdtrace`` (through ``ssdlab._native``); the parsing,
statistics, writers and generator live there.

Units: every record has ``time_ns`` (ns, on the trace's own clock), ``op`` (0 read, 1 write,
2 trim, 3 flush), ``offset_bytes`` and ``len_bytes`` (bytes). Formats that count 512-byte
sectors (blkparse, DiskSim/MQSim, SPC, JEDEC, VSCSI) are converted on reading; a flush has
offset and length 0.

Formats (:data:`FORMATS` has the one-line descriptions): ``blkparse``, ``fio`` (iolog v2/v3),
``disksim`` and ``mqsim`` (ASCII; time unit ms / ns unless ``time_unit`` is given), ``msr``
(MSR Cambridge CSV), ``spc`` (SPC/UMass), ``jedec`` (master-trace text), ``vscsi``
(CloudPhysics binary) and ``bin`` (ssdlab's binary form). With ``fmt=None`` the format is
detected from the file's first bytes (then from its extension).

Reader options (each applies to some formats only; giving one to another format is an error):
``events`` ("queue" or "dispatch", blkparse), ``time_unit`` ("ns", "us", "ms", "s";
disksim/mqsim), ``device`` (one device/disk/ASU number; disksim, mqsim, msr, spc) and
``skip_bad`` (skip malformed lines and count them instead of stopping at the first).

Errors: a malformed trace raises :class:`TraceError` whose message reads
``FILE:LINE: expected ..., got "..."``.

Reading streams in chunks of numpy arrays, never one Python object per record::

    with open_trace("trace.blk") as t:
        for chunk in t.chunks(1 << 20):
            writes = chunk["op"] == OP_WRITE
            total += int(chunk["len_bytes"][writes].sum())
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .errors import UserError

#: Op codes in the ``op`` arrays.
OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH = 0, 1, 2, 3
OP_NAMES = ("read", "write", "trim", "flush")

#: Output formats of :func:`convert` and :func:`generate`.
OUT_FORMATS = ("fio", "bin")

#: Records per chunk when none is given (about 25 MB of arrays).
DEFAULT_CHUNK_RECORDS = 1 << 20

#: Format guessed from a file extension when the content does not tell.
_EXTENSIONS = {".iolog": "fio", ".fio": "fio", ".spc": "spc", ".vscsi": "vscsi", ".bin": "bin", ".ssdt": "bin",
               ".blktrace": "blkparse", ".blkparse": "blkparse", ".jedec": "jedec", ".disksim": "disksim",
               ".mqsim": "mqsim", ".csv": "msr"}

#: Output format from the output file's extension.
_OUT_EXTENSIONS = {".iolog": "fio", ".fio": "fio", ".log": "fio", ".bin": "bin", ".ssdt": "bin"}


class TraceError(UserError):
    """A malformed or unreadable trace; ``file`` and ``line`` say where (line 0: the whole
    file; for binary formats the line is the record number)."""

    def __init__(self, message: str, file: str | None = None, line: int = 0):
        super().__init__(message)
        self.file = file
        self.line = line


def _native():
    from . import _native as n

    return n


def _call(fn, *args, **kwargs):
    """Calls a native function, turning its errors into :class:`TraceError` / :class:`UserError`."""
    n = _native()
    try:
        return fn(*args, **kwargs)
    except n.TraceFormatError as e:
        msg, file, line = e.args if len(e.args) == 3 else (str(e), None, 0)
        raise TraceError(msg, file, line) from None
    except ValueError as e:
        raise UserError(str(e)) from None


def formats() -> dict[str, str]:
    """Format name -> one-line description with units."""
    return dict(_native().trace_formats())


def detect_format(path: str | Path) -> str:
    """The format of the trace at ``path``: from its content, else from its extension."""
    try:
        return _call(_native().trace_detect, str(path))
    except TraceError:
        ext = Path(path).suffix.lower()
        if ext in _EXTENSIONS and Path(path).is_file():
            return _EXTENSIONS[ext]
        raise


def _resolve(path, fmt):
    p = Path(path)
    if not p.is_file():
        raise TraceError(f"{path}: no such trace file", str(path), 0)
    return str(p), (fmt or detect_format(p))


def _opts(events=None, time_unit=None, skip_bad=False, device=None) -> dict:
    return {"events": events, "time_unit": time_unit, "skip_bad": bool(skip_bad), "device": device}


class Trace:
    """An open trace, read in chunks of numpy arrays. Use :func:`open_trace`."""

    def __init__(self, path: str | Path, fmt: str | None = None, *, events=None, time_unit=None,
                 skip_bad: bool = False, device: int | None = None):
        self.path, fmt = _resolve(path, fmt)
        self._file = _call(_native().trace_open, self.path, fmt, **_opts(events, time_unit, skip_bad, device))
        self.format: str = self._file.format

    def read_chunk(self, max_records: int = DEFAULT_CHUNK_RECORDS) -> dict[str, np.ndarray] | None:
        """The next up to ``max_records`` records as arrays ``time_ns`` (uint64), ``op``
        (uint8), ``offset_bytes`` (uint64), ``len_bytes`` (uint64); None at the end."""
        import numpy as np

        got = _call(self._file.read_chunk, int(max_records))
        if got is None:
            return None
        t, op, off, ln = got
        return {"time_ns": np.frombuffer(t, dtype="<u8"), "op": np.frombuffer(op, dtype="u1"),
                "offset_bytes": np.frombuffer(off, dtype="<u8"), "len_bytes": np.frombuffer(ln, dtype="<u8")}

    def chunks(self, max_records: int = DEFAULT_CHUNK_RECORDS) -> Iterator[dict[str, np.ndarray]]:
        """Chunks until the end of the trace."""
        while (c := self.read_chunk(max_records)) is not None:
            yield c

    __iter__ = chunks

    def read_all(self) -> dict[str, np.ndarray]:
        """The rest of the trace in one set of arrays (for traces that fit in memory)."""
        import numpy as np

        parts = list(self.chunks())
        keys = ("time_ns", "op", "offset_bytes", "len_bytes")
        if not parts:
            return {k: np.zeros(0, dtype="u1" if k == "op" else "<u8") for k in keys}
        return {k: np.concatenate([p[k] for p in parts]) for k in keys}

    def stats(self) -> dict:
        """Line counters so far: lines, ignored_lines, skipped_bad, first_bad."""
        return self._file.stats()

    def close(self) -> None:
        self._file = None

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def open_trace(path: str | Path, fmt: str | None = None, **opts) -> Trace:
    """Opens a trace for reading in chunks (see :class:`Trace`). ``opts``: events,
    time_unit, skip_bad, device (see the module docs)."""
    return Trace(path, fmt, **opts)


def info(path: str | Path, fmt: str | None = None, **opts) -> dict:
    """Statistics of the whole trace in one streaming pass: ``format``, ``records``,
    ``lines``/``ignored_lines``/``skipped_bad``/``first_bad``, ``ops`` (per op: ``count``,
    ``bytes``, ``size_hist`` as [(bucket upper bound in bytes, count)], ``max_end_bytes``
    the highest offset + length of a request with a length), ``span_bytes`` with
    ``min_offset_bytes``/``max_end_bytes``, ``duration_ns`` with the first/last/min/max times
    [ns], ``time_regressions``, ``sequential_writes``/``sequential_write_bytes`` (writes
    starting where the previous write ended)."""
    path, fmt = _resolve(path, fmt)
    return _call(_native().trace_info, path, fmt, **_opts(**opts))


def _out_format(out, to) -> str:
    if to:
        if to not in OUT_FORMATS:
            raise UserError(f"output format {to!r}: use one of {', '.join(OUT_FORMATS)}")
        return to
    ext = Path(out).suffix.lower()
    if ext not in _OUT_EXTENSIONS:
        raise UserError(f"{out}: cannot tell the output format from the extension; give it (fio or bin)")
    return _OUT_EXTENSIONS[ext]


def convert(path: str | Path, out: str | Path, to: str | None = None, fmt: str | None = None, *,
            fio_filename: str = "/dev/null", **opts) -> dict:
    """Converts a trace to fio iolog v3 (``to="fio"``, for fio's ``read_iolog``; times in µs,
    flushes as ``sync``; the file name in the log is ``fio_filename``, redirect it with fio's
    ``replay_redirect``) or to ssdlab's binary form (``to="bin"``); ``to=None`` takes it from
    the extension of ``out`` (.iolog/.fio/.log or .bin). Returns :func:`info` of the input."""
    path, fmt = _resolve(path, fmt)
    return _call(_native().trace_convert, path, str(out), _out_format(out, to), fmt,
                 fio_filename=fio_filename, **_opts(**opts))


def generate(out: str | Path, capacity_bytes: int, write_bytes: int, *, to: str | None = None, seed: int = 1,
             random_fraction: float = 0.75, trim_fraction: float = 0.13, flush_every_writes: float = 32.0,
             align_bytes: int = 4096, skew: str = "uniform", interarrival_ns: int = 0,
             fio_filename: str = "/dev/null") -> dict:
    """Writes a JEDEC-client-like trace to ``out`` (fio iolog v3 or binary, see
    :func:`convert`) and returns what was generated: span_bytes, writes, write_bytes,
    random_writes/_bytes, sequential_writes/_bytes, sequential_runs, trims, trim_bytes,
    flushes. The workload (documented in ``ssdtrace::generate``): writes over
    ``[0, capacity_bytes)`` totalling ``write_bytes``, ``random_fraction`` of the written
    bytes random (sizes 4-128 KiB) and the rest sequential runs (1-64 MiB of 64 KiB-1 MiB
    writes); a flush every ``flush_every_writes`` writes on average; TRIM bursts that free
    ``trim_fraction`` of the span (disjoint ranges); offsets and sizes aligned to
    ``align_bytes``; random writes uniform or ``skew="jedec"`` (50 % in the first 5 % of the
    span, 30 % in the next 15 %); record i at time ``i * interarrival_ns``. Deterministic for
    a seed."""
    return _call(_native().trace_generate, str(out), _out_format(out, to), int(capacity_bytes), int(write_bytes),
                 seed=int(seed), random_fraction=float(random_fraction), trim_fraction=float(trim_fraction),
                 flush_every_writes=float(flush_every_writes), align_bytes=int(align_bytes), skew=skew,
                 interarrival_ns=int(interarrival_ns), fio_filename=fio_filename)


def _human(n: float, unit: str = "B") -> str:
    for suffix in ("", "Ki", "Mi", "Gi", "Ti", "Pi"):
        if abs(n) < 1024 or suffix == "Pi":
            return f"{n:.0f} {unit}" if suffix == "" else f"{n:.1f} {suffix}{unit}"
        n /= 1024
    return f"{n} {unit}"


def _human_ns(ns: int) -> str:
    for div, unit in ((10**9, "s"), (10**6, "ms"), (10**3, "us")):
        if ns >= div:
            return f"{ns / div:.3f} {unit}"
    return f"{ns} ns"


def format_info(d: dict, name: str = "") -> str:
    """The text ``ssdlab trace info`` prints for an :func:`info` dict."""
    unit = "records" if d["format"] in ("vscsi", "bin") else "lines"
    out = [f"{name}  format {d['format']}: {d['records']} requests from {d['lines']} {unit} "
           f"({d['ignored_lines']} ignored, {d['skipped_bad']} skipped as malformed)"]
    if d["records"] == 0 and d["format"] == "blkparse":
        out.append("  no requests: the file has no lines of the chosen event; try the other --events choice")
    total = max(d["records"], 1)
    out.append(f"  {'op':<6} {'requests':>12} {'share':>7} {'bytes':>20}  {'':>10}")
    for op in OP_NAMES:
        s = d["ops"][op]
        out.append(f"  {op:<6} {s['count']:>12} {100 * s['count'] / total:>6.1f}% {s['bytes']:>20}  {_human(s['bytes']):>10}")
    if d["min_offset_bytes"] is not None:
        out.append(f"  span      {d['span_bytes']} bytes ({_human(d['span_bytes'])}): offsets {d['min_offset_bytes']} .. "
                   f"{d['max_end_bytes']} bytes")
    if d["records"]:
        out.append(f"  duration  {d['duration_ns']} ns ({_human_ns(d['duration_ns'])}): times {d['min_time_ns']} .. "
                   f"{d['max_time_ns']} ns; time went backwards {d['time_regressions']} times")
    w = d["ops"]["write"]
    if w["count"]:
        out.append(f"  sequential writes (start where the previous write ended): {d['sequential_writes']} of {w['count']}, "
                   f"{100 * d['sequential_write_bytes'] / max(w['bytes'], 1):.1f}% of the bytes written")
    buckets = sorted({b for op in OP_NAMES[:3] for b, _ in d["ops"][op]["size_hist"]})
    if buckets:
        out.append("  request sizes (count per size bucket, bucket = (upper/2, upper] bytes):")
        out.append(f"    {'upper':>10} {'read':>12} {'write':>12} {'trim':>12}")
        hist = {op: dict(d["ops"][op]["size_hist"]) for op in OP_NAMES[:3]}
        for b in buckets:
            out.append(f"    {_human(b):>10} " + " ".join(f"{hist[op].get(b, 0):>12}" for op in OP_NAMES[:3]))
    if d.get("first_bad"):
        out.append(f"  first malformed line skipped: {d['first_bad']}")
    return "\n".join(out)
