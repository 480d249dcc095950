"""Trace replay through fio (:meth:`ssdlab.targets.fio.FioTarget.replay`): the replay files,
fio's per-IO completion log, and the per-window series.

**Why blktrace and not a text iolog.** fio replays a command stream with ``read_iolog=``,
which takes either a text iolog (v2/v3) or a *blktrace binary* file. fio 3.33 (Debian 12's)
rejects ``trim`` lines in a text iolog ("bad ddir: 2") and drops them (later versions accept
them), while its blktrace reader has replayed discards and flushes for years. So ssdlab writes
the commands as blktrace ``QUEUE`` events, 48 bytes each, written vectorised from the chunks:

=========  =============================================  ==========================
command    blktrace action                                fio replays it as
=========  =============================================  ==========================
read       ``__BLK_TA_QUEUE | TC_READ``                   a read
write      ``__BLK_TA_QUEUE | TC_WRITE``                  a write
TRIM       ``__BLK_TA_QUEUE | TC_WRITE | TC_DISCARD``     a trim (``BLKDISCARD``)
flush      ``__BLK_TA_QUEUE | TC_WRITE | TC_FLUSH``       a sync (``fsync``)
=========  =============================================  ==========================

``sector`` is the offset in 512-byte units, ``bytes`` the length (32 bits, so one command is at
most 4 GiB - 4 KiB), all times 0 (``replay_no_stall=1`` ignores them anyway), and ``device`` the target's
device number; the job file's ``replay_redirect=`` sends every command to the target whatever it
says. :func:`read_blktrace` decodes a file back into commands.

**Runs of at most** :data:`SEGMENT_COMMANDS` **commands.** fio loads a whole replay file into
memory (about 100 bytes per command; its ``read_iolog_chunked`` mode aborts on trims in fio
3.33) and keeps per-IO log entries in memory until the job ends, so a 37-million-command
trace would need several GB. ssdlab splits the stream into files of at most
``SEGMENT_COMMANDS`` commands and runs fio once per file, back to back; between runs the queue
drains while the next fio starts (well under a second per run; the total is in the notes).

**Completion times** come from the per-IO completion-latency log (``write_lat_log`` with
``log_avg_msec=0``, ``log_unix_epoch=1`` so runs share one clock): one line per completed read,
write or trim with its completion time in **milliseconds** (fio's log resolution). Three gaps
are filled, and said so in the notes:

- fio does not log the commands still in flight when a replay file runs out (up to QD-1 per
  run); their count comes from fio's JSON totals, their bytes from the replay file (or fio's
  totals after an interrupt), and they are placed at the run's end;
- fio neither logs flushes nor waits for earlier commands before its ``fsync`` (on a block
  device, a cache flush to the drive); a flush is placed at the completion of the data commands
  before it;
- replay start (t = 0) is the first command's issue time (first completion minus its latency).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .base import OP_FLUSH, OP_READ, OP_TRIM, OP_WRITE

__all__ = ["BLKTRACE_DTYPE", "SEGMENT_COMMANDS", "Segment", "SegmentWriter", "WindowAccumulator",
           "encode_blktrace", "fio_counts", "segment_completions", "read_blktrace"]

#: At most this many commands per fio run (see the module docstring).
SEGMENT_COMMANDS = 1_000_000

#: ``struct blk_io_trace`` (blktrace_api.h), little-endian, 48 bytes.
BLKTRACE_DTYPE = np.dtype([("magic", "<u4"), ("sequence", "<u4"), ("time", "<u8"), ("sector", "<u8"),
                           ("bytes", "<u4"), ("action", "<u4"), ("pid", "<u4"), ("device", "<u4"),
                           ("cpu", "<u4"), ("error", "<u2"), ("pdu_len", "<u2")])
_MAGIC = 0x65617400 | 0x07  # BLK_IO_TRACE_MAGIC | version 7
_TA_QUEUE = 1
_TC_READ, _TC_WRITE, _TC_FLUSH, _TC_DISCARD = (1 << 0) << 16, (1 << 1) << 16, (1 << 2) << 16, (1 << 13) << 16
#: blktrace action per op code (OP_READ, OP_WRITE, OP_TRIM, OP_FLUSH).
_ACTION = np.array([_TA_QUEUE | _TC_READ, _TA_QUEUE | _TC_WRITE, _TA_QUEUE | _TC_WRITE | _TC_DISCARD,
                    _TA_QUEUE | _TC_WRITE | _TC_FLUSH], dtype=np.uint32)
_OP_NAMES = ("read", "write", "trim", "flush")
_MAX_LEN = (1 << 32) - 4096  # blktrace's bytes field is 32 bits


def device_number(major: int, minor: int) -> int:
    """blktrace's 32-bit dev_t: major << 20 | minor."""
    return ((major & 0xFFF) << 20) | (minor & 0xFFFFF)


def check_chunk(op, off, ln, capacity_bytes: int, first: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk as (uint8, uint64, uint64) arrays, or ValueError naming the first bad command
    (numbered from 0 over the whole stream: ``first`` is this chunk's first index)."""
    op = np.asarray(op)
    off = np.asarray(off)
    ln = np.asarray(ln)
    if not (op.ndim == off.ndim == ln.ndim == 1 and len(op) == len(off) == len(ln)):
        raise ValueError(f"replay chunk at command {first}: op, offset and length must be 1-D arrays of equal "
                         f"length, got shapes {op.shape}, {off.shape}, {ln.shape}")
    for name, a in (("op", op), ("offset", off), ("length", ln)):
        if len(a) and a.dtype.kind not in "ui":
            raise ValueError(f"replay chunk at command {first}: {name} must be integers, got {a.dtype}")
        if len(a) and a.dtype.kind == "i" and int(a.min()) < 0:
            k = int(np.argmax(a < 0))
            raise ValueError(f"replay command {first + k}: negative {name} {int(a[k])}")
    op = op.astype(np.uint8, copy=False)
    off = off.astype(np.uint64, copy=False)
    ln = ln.astype(np.uint64, copy=False)
    if not len(op):
        return op, off, ln
    bad = op > OP_FLUSH
    if bad.any():
        k = int(np.argmax(bad))
        raise ValueError(f"replay command {first + k}: op code {int(op[k])} is not one of 0 read, 1 write, 2 trim, 3 flush")
    data = op != OP_FLUSH
    checks = (
        (data & ((off % 4096 != 0) | (ln % 4096 != 0)), "offset and length must be multiples of 4096"),
        (data & (ln == 0), "length must be > 0"),
        (data & (ln > _MAX_LEN), f"length above {_MAX_LEN} bytes (fio replays at most 4 GiB - 4 KiB per command)"),
        (data & (off + ln > np.uint64(capacity_bytes)), f"ends beyond the target's {capacity_bytes} bytes"),
    )
    for mask, why in checks:
        if mask.any():
            k = int(np.argmax(mask))
            raise ValueError(f"replay command {first + k} ({_OP_NAMES[int(op[k])]} offset {int(off[k])}, "
                             f"length {int(ln[k])}): {why}")
    return op, off, ln


def encode_blktrace(op: np.ndarray, off: np.ndarray, ln: np.ndarray, device: int, seq0: int = 0) -> np.ndarray:
    """blktrace QUEUE records for checked commands (flushes get offset and length 0)."""
    rec = np.zeros(len(op), dtype=BLKTRACE_DTYPE)
    flush = op == OP_FLUSH
    rec["magic"] = _MAGIC
    rec["sequence"] = (np.arange(len(op), dtype=np.uint64) + np.uint64(seq0)).astype(np.uint32)
    rec["sector"] = np.where(flush, np.uint64(0), off // np.uint64(512))
    rec["bytes"] = np.where(flush, np.uint64(0), ln).astype(np.uint32)
    rec["action"] = _ACTION[op]
    rec["device"] = device
    return rec


def read_blktrace(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Inverse of :func:`encode_blktrace` for files ssdlab wrote: (op, offset, length)."""
    rec = np.fromfile(path, dtype=BLKTRACE_DTYPE)
    act = rec["action"]
    op = np.full(len(rec), OP_READ, dtype=np.uint8)
    op[(act & _TC_WRITE) != 0] = OP_WRITE
    op[(act & _TC_DISCARD) != 0] = OP_TRIM
    op[(act & _TC_FLUSH) != 0] = OP_FLUSH
    return op, rec["sector"].astype(np.uint64) * np.uint64(512), rec["bytes"].astype(np.uint64)


@dataclass
class Segment:
    """One replay file (one fio run) and what it holds."""

    index: int  # 1, 2, ...
    stem: str  # file stem: NNN_name or NNN_name.pKKK
    trace: Path
    first: int = 0  # index of its first command in the (kept) stream
    commands: int = 0
    #: commands and bytes per op code (read, write, trim, flush)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))
    nbytes: np.ndarray = field(default_factory=lambda: np.zeros(4, dtype=np.int64))
    #: for each flush, the number of reads/writes/trims before it in this segment
    flush_after: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    jobfile: Path | None = None
    _parts: list = field(default_factory=list, repr=False)

    @property
    def io_bytes(self) -> int:
        return int(self.nbytes[:3].sum())


class SegmentWriter:
    """Writes the command stream as blktrace files of at most ``segment_commands`` commands:
    ``WORKDIR/STEM.blktrace`` when one file holds everything, else ``STEM.p001.blktrace``, ...
    ``drop_trims`` leaves TRIMs out (counted in ``dropped_trims``/``dropped_trim_bytes``)."""

    def __init__(self, workdir: Path, stem: str, *, capacity_bytes: int, device: int,
                 segment_commands: int = SEGMENT_COMMANDS, drop_trims: bool = False):
        if segment_commands < 1:
            raise ValueError(f"segment_commands={segment_commands} must be >= 1")
        self.workdir, self.stem = Path(workdir), stem
        self.capacity_bytes, self.device = int(capacity_bytes), int(device)
        self.segment_commands, self.drop_trims = int(segment_commands), drop_trims
        self.segments: list[Segment] = []
        self.seen = 0  # commands read from the chunks (before dropping)
        self.dropped_trims = 0
        self.dropped_trim_bytes = 0
        self._fh = None
        for old in list(self.workdir.glob(f"{stem}.blktrace")) + list(self.workdir.glob(f"{stem}.p[0-9][0-9][0-9]*.blktrace")):
            old.unlink()

    def _open_next(self) -> Segment:
        if self._fh is not None:
            self._fh.close()
        k = len(self.segments) + 1
        stem = f"{self.stem}.p{k:03d}"
        first = self.segments[-1].first + self.segments[-1].commands if self.segments else 0
        seg = Segment(index=k, stem=stem, trace=self.workdir / f"{stem}.blktrace", first=first)
        self.segments.append(seg)
        self._fh = open(seg.trace, "wb")
        return seg

    def add(self, op, off, ln) -> None:
        op, off, ln = check_chunk(op, off, ln, self.capacity_bytes, self.seen)
        self.seen += len(op)
        if self.drop_trims and len(op):
            trim = op == OP_TRIM
            if trim.any():
                self.dropped_trims += int(trim.sum())
                self.dropped_trim_bytes += int(ln[trim].sum())
                keep = ~trim
                op, off, ln = op[keep], off[keep], ln[keep]
        pos = 0
        while pos < len(op):
            seg = self.segments[-1] if self.segments else None
            if seg is None or seg.commands >= self.segment_commands:
                seg = self._open_next()
            take = min(len(op) - pos, self.segment_commands - seg.commands)
            o, f, n = op[pos:pos + take], off[pos:pos + take], ln[pos:pos + take]
            self._fh.write(encode_blktrace(o, f, n, self.device, seg.commands).tobytes())
            is_flush = o == OP_FLUSH
            if is_flush.any():
                base = seg.commands - int(seg.counts[OP_FLUSH])  # data commands in the segment before this piece
                is_data = (~is_flush).astype(np.int64)
                data_before = np.cumsum(is_data) - is_data  # data commands before each, within this piece
                seg._parts.append(data_before[is_flush] + base)
            seg.counts += np.bincount(o, minlength=4)[:4]
            seg.nbytes += np.bincount(o, weights=n.astype(np.float64), minlength=4)[:4].astype(np.int64)
            seg.commands += take
            pos += take

    def close(self) -> list[Segment]:
        """Finish the files; a single file loses its ``.p001`` suffix. Returns the segments."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        for seg in self.segments:
            seg.flush_after = np.concatenate(seg._parts) if seg._parts else np.zeros(0, dtype=np.int64)
            seg._parts = []
        if len(self.segments) == 1:
            seg = self.segments[0]
            plain = self.workdir / f"{self.stem}.blktrace"
            os.replace(seg.trace, plain)
            seg.trace, seg.stem = plain, self.stem
        return self.segments

    def abort(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


# ============================================================================ fio output


def fio_counts(data: dict | None) -> dict | None:
    """Per-op completed commands and bytes, runtime and error from fio's JSON (all jobs summed)."""
    if not data:
        return None
    out = {"counts": np.zeros(4, dtype=np.int64), "nbytes": np.zeros(4, dtype=np.int64), "runtime_ms": 0.0,
           "error": 0, "iodepth_level": None}
    for j in data.get("jobs") or []:
        out["error"] = out["error"] or int(j.get("error", 0) or 0)
        out["runtime_ms"] = max(out["runtime_ms"], float(j.get("job_runtime", 0) or 0))
        for k, name in enumerate(_OP_NAMES):
            d = j.get("sync" if name == "flush" else name) or {}
            out["counts"][k] += int(d.get("total_ios", 0) or 0)
            out["nbytes"][k] += int(d.get("io_bytes", 0) or 0)
        out["iodepth_level"] = out["iodepth_level"] or j.get("iodepth_level")
    return out


def segment_completions(seg: Segment, log: dict | None, fio: dict | None, fallback_start_ms: float):
    """Completion times and data bytes of one fio run's commands.

    ``log`` is :func:`ssdlab.fio_logs.read_log` of its completion-latency log (``t_ms`` absolute
    with ``log_unix_epoch``, ``value`` = latency in ns, ``ddir``, ``bs_bytes``) or None; ``fio``
    is :func:`fio_counts` of its JSON or None. Returns ``(t_ms, nbytes, counts, nbytes_per_op,
    start_ms, end_ms, unlogged)``: absolute completion times [ms] sorted, data bytes per
    command (0 for TRIM and flush), completed commands and bytes per op, the run's first issue
    and last completion [ms], and how many reads/writes/trims were not in the log.
    """
    if log is not None and len(log["t_ms"]):
        t = log["t_ms"].astype(np.float64)
        ddir = log["ddir"].astype(np.int64)
        bs = log["bs_bytes"].astype(np.float64)
        lat_ms = np.asarray(log["value"], dtype=np.float64) / 1e6
        start_ms = float(np.min(t - lat_ms))
    else:
        t = np.zeros(0)
        ddir = np.zeros(0, dtype=np.int64)
        bs = np.zeros(0)
        start_ms = float(fallback_start_ms)
    logged_n = np.bincount(ddir, minlength=3)[:3] if len(ddir) else np.zeros(3, dtype=np.int64)
    logged_b = np.bincount(ddir, weights=bs, minlength=3)[:3] if len(ddir) else np.zeros(3)
    if fio is not None:
        done = np.maximum(fio["counts"][:3], logged_n)
        if np.array_equal(fio["counts"], seg.counts):
            # every command completed: the bytes are the file's (fio's JSON leaves the unlogged
            # commands' bytes out of io_bytes while counting them in total_ios)
            done_b = np.maximum(seg.nbytes[:3].astype(np.float64), logged_b)
        else:
            done_b = np.maximum(fio["nbytes"][:3].astype(np.float64), logged_b)
        flushes = int(min(fio["counts"][OP_FLUSH], len(seg.flush_after)))
        end_ms = max(float(t.max()) if len(t) else start_ms, start_ms + fio["runtime_ms"])
    else:
        done, done_b = logged_n.astype(np.int64), logged_b
        flushes = int(np.searchsorted(seg.flush_after, int(logged_n.sum()), side="right"))
        end_ms = float(t.max()) if len(t) else start_ms
    # the commands in flight when the replay file ran out: at the run's end, bytes shared evenly
    tail_n = (done - logged_n).astype(np.int64)
    tail_t, tail_b = [t], [np.where(ddir == OP_TRIM, 0.0, bs)]
    for k in range(3):
        if tail_n[k] > 0:
            tail_t.append(np.full(tail_n[k], end_ms))
            per = 0.0 if k == OP_TRIM else (done_b[k] - logged_b[k]) / tail_n[k]
            tail_b.append(np.full(tail_n[k], per))
    dt = np.concatenate(tail_t)
    db = np.concatenate(tail_b)
    order = np.argsort(dt, kind="stable")
    dt, db = dt[order], db[order]
    # flushes: at the completion of the data commands issued before them
    m = seg.flush_after[:flushes]
    if len(dt):
        ft = np.where(m > 0, dt[np.clip(m - 1, 0, len(dt) - 1)], start_ms)
    else:
        ft = np.full(len(m), start_ms)
    all_t = np.concatenate([dt, ft])
    all_b = np.concatenate([db, np.zeros(len(ft))])
    order = np.argsort(all_t, kind="stable")
    counts = np.concatenate([done, [flushes]]).astype(np.int64)
    nbytes = np.concatenate([np.round(done_b).astype(np.int64), [0]])
    return all_t[order], all_b[order], counts, nbytes, start_ms, end_ms, int(tail_n.sum())


# ============================================================================ windows


class WindowAccumulator:
    """:func:`ssdlab.targets.base.window_series` over a stream of completion times that arrive
    in order, piece by piece (each piece sorted, none earlier than the previous one), without
    holding every command: only one row per full window and the unfinished window are kept."""

    def __init__(self, window_commands: int):
        self.w = int(window_commands)
        self._t_end: list[np.ndarray] = []
        self._bytes: list[np.ndarray] = []
        self._carry_t = np.zeros(0)
        self._carry_b = np.zeros(0)
        self.n = 0
        self.last_t = 0.0

    def add(self, t_s: np.ndarray, nbytes: np.ndarray) -> None:
        t_s = np.asarray(t_s, dtype=np.float64)
        if not len(t_s):
            return
        t_s = np.maximum(t_s, self.last_t)  # runs are sequential; guard against clock estimates
        self.last_t = float(t_s[-1])
        self.n += len(t_s)
        t = np.concatenate([self._carry_t, t_s])
        b = np.concatenate([self._carry_b, np.asarray(nbytes, dtype=np.float64)])
        full = len(t) // self.w
        if full:
            cut = full * self.w
            self._t_end.append(t[self.w - 1:cut:self.w])
            self._bytes.append(b[:cut].reshape(full, self.w).sum(axis=1))
        self._carry_t = t[full * self.w:]
        self._carry_b = b[full * self.w:]

    def series(self) -> dict[str, np.ndarray]:
        t_end = np.concatenate(self._t_end + ([self._carry_t[-1:]] if len(self._carry_t) else []) + [np.zeros(0)])
        wb = np.concatenate(self._bytes + ([np.array([self._carry_b.sum()])] if len(self._carry_t) else []) + [np.zeros(0)])
        count = np.full(len(t_end), float(self.w))
        if len(self._carry_t):
            count[-1] = len(self._carry_t)
        t_start = np.concatenate([[0.0], t_end[:-1]]) if len(t_end) else np.zeros(0)
        dt = t_end - t_start
        with np.errstate(divide="ignore", invalid="ignore"):
            iops = np.where(dt > 0, count / dt, np.nan)
            mbps = np.where(dt > 0, wb / dt / 1e6, np.nan)
        return {"window": np.arange(len(t_end), dtype=np.float64), "commands": np.cumsum(count),
                "t_s": t_end, "dt_s": dt, "iops": iops, "mbps": mbps}
