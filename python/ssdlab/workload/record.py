"""The record workload of a scientific dataset ("seek, then access"): a header that indexes the
variables, then one record per variable and time step; each access looks the record up in the
header, then reads or writes the whole record.

The dataset is laid out as netCDF or HDF5 files of an environmental model are: the header
(``header_bytes``, the index) at the start of the span, then the records time-major, record
(v, t) at ``header_bytes + t x sum(record_bytes) + sum(record_bytes[:v])``. Record sizes are
per variable (typically 16 KiB to 100 MiB) and multiples of 4096 bytes.

One access of record (v, t) is, in order:

1. the lookup: a 4 KiB read of the header page holding the record's index entry (entries of
   :data:`INDEX_ENTRY_BYTES`, record (v, t) at byte ``(t x n_variables + v) x 64`` modulo
   ``header_bytes``);
2. the record, read or written, as commands of at most ``max_io_bytes`` in ascending order;
3. with ``header_update_every`` = N > 0, after every N-th record written: the whole header
   written again (the index updated), as commands of at most ``max_io_bytes``.

Which records are accessed: ``variables`` x ``steps`` (all by default), ``passes`` times, in
``order``: ``time-major`` (every variable of step t, then step t+1: how a simulation writes
its output), ``variable-major`` (one variable through every step: how an analysis reads a
variable's history) or ``random`` (a new random order every pass). Each access reads with
probability ``read_pct`` %, else writes (drawn from ``seed``, as the random order is).

The commands are chunks (:data:`~ssdlab.targets.base.CommandChunk`: op ``u1``, offset and
length ``<u8`` arrays, op codes of :mod:`ssdlab.traces`) for trace replay on any target
(``SimTarget.replay``, ``FioTarget.replay``). :func:`layout` gives the span the dataset needs,
:func:`totals` the counts and bytes without making the commands.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from ..errors import UserError
from ..params import declared, param, size
from ..traces import OP_READ, OP_WRITE
from ..units import MAX_BS_BYTES

#: Bytes of one record's entry in the header index.
INDEX_ENTRY_BYTES = 64
#: Bytes of the header read that looks a record up (one index page).
INDEX_READ_BYTES = 4096
#: Commands per chunk, at most.
CHUNK_COMMANDS = 1 << 16
ORDERS = ("time-major", "variable-major", "random")
_ALIGN = 4096
_KiB, _MiB = 1 << 10, 1 << 20


def _sizes(text: str) -> tuple[int, ...]:
    """``16KiB,1MiB,100MiB`` -> bytes per variable."""
    return tuple(size(t) for t in text.split(",") if t.strip())


def _indices(text: str) -> tuple[int, ...] | None:
    """``all`` -> None; ``0,3,5`` or ``0-4`` (inclusive) -> indices."""
    if text.strip() == "all":
        return None
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
    return tuple(out)


@dataclass(frozen=True)
class RecordParams:
    header_bytes: int = param(_MiB, "--header", "the header (the index) at the start of the span", unit="bytes",
                              parse=size, low=_ALIGN, multiple_of=_ALIGN)
    record_bytes: tuple[int, ...] = param((16 * _KiB, _MiB, 16 * _MiB, 100 * _MiB), "--records",
                                          "record size of each variable, comma-separated (multiples of 4096)",
                                          parse=_sizes, default_text="16KiB,1MiB,16MiB,100MiB", metavar="SIZES")
    time_steps: int = param(8, "--time-steps", "time steps in the dataset (records per variable)", low=1,
                            high=1_000_000)
    read_pct: int = param(50, "--read-pct", "share of accesses that read their record (the others write it)",
                          unit="%", low=0, high=100)
    order: str = param("time-major", "--order", "access order: time-major (a simulation writing), "
                       "variable-major (an analysis reading), random", choices=ORDERS)
    variables: tuple[int, ...] | None = param(None, "--variables", "the variables accessed (indices from 0: "
                                              "0,2,5 or 0-3)", parse=_indices, default_text="all", metavar="LIST")
    steps: tuple[int, ...] | None = param(None, "--steps", "the time steps accessed (indices from 0: 0,2,5 or "
                                          "0-3)", parse=_indices, default_text="all", metavar="LIST")
    passes: int = param(1, "--passes", "times the accesses are repeated", low=1, high=1000)
    header_update_every: int = param(0, "--header-update-every", "write the whole header again after every N "
                                     "records written (0: never)", low=0, high=2**32)
    max_io_bytes: int = param(_MiB, "--max-io", "largest command; a record is read or written as commands of at "
                              "most this size", unit="bytes", parse=size, low=_ALIGN, high=MAX_BS_BYTES,
                              multiple_of=_ALIGN)
    qd: int = param(1, "--qd", "commands kept outstanding (1: an application that seeks, then reads or writes, "
                    "one request at a time)", low=1, high=1024)
    buffer_compress_pct: int = param(0, "--compress-pct", "how compressible the written records are (fio's "
                                     "buffer_compress_percentage: 0 random data, 100 all zeroes)", unit="%",
                                     low=0, high=100)
    seed: int = param(1, None, "seed of the random order and of the read/write draws")


def _bad(field: str, why: str) -> UserError:
    """The error about parameter ``field``, named by its option (``--time-steps``)."""
    flag = next((p.flag for f, p in declared(RecordParams) if f.name == field), field)
    return UserError(f"record workload: {flag}: {why}")


def _check(p: RecordParams) -> None:
    """:class:`UserError` naming the parameter for anything the layout cannot take."""
    for name in ("header_bytes", "max_io_bytes"):
        v = getattr(p, name)
        if v < _ALIGN or v % _ALIGN:
            raise _bad(name, f"{v} bytes: must be a positive multiple of {_ALIGN}")
    if not p.record_bytes:
        raise _bad("record_bytes", "no variables: give one record size per variable")
    for i, r in enumerate(p.record_bytes):
        if r < _ALIGN or r % _ALIGN:
            raise _bad("record_bytes", f"variable {i}: {r} bytes is not a positive multiple of {_ALIGN}")
    if p.time_steps < 1:
        raise _bad("time_steps", f"{p.time_steps}: must be >= 1")
    if not 0 <= p.read_pct <= 100:
        raise _bad("read_pct", f"{p.read_pct}: must be in [0, 100]")
    if p.order not in ORDERS:
        raise _bad("order", f"{p.order!r}: must be one of {', '.join(ORDERS)}")
    if p.passes < 1:
        raise _bad("passes", f"{p.passes}: must be >= 1")
    if p.header_update_every < 0:
        raise _bad("header_update_every", f"{p.header_update_every}: must be >= 0")
    for name, n in (("variables", len(p.record_bytes)), ("steps", p.time_steps)):
        sel = getattr(p, name)
        if sel is None:
            continue
        if not sel:
            raise _bad(name, "empty: give at least one index, or all")
        bad = [i for i in sel if not 0 <= i < n]
        if bad:
            raise _bad(name, f"index {bad[0]} is outside 0..{n - 1}")


def layout(p: RecordParams) -> int:
    """Bytes of span the dataset needs: ``header_bytes + time_steps x sum(record_bytes)``."""
    _check(p)
    return p.header_bytes + p.time_steps * sum(p.record_bytes)


def _fits(p: RecordParams, span_bytes: int) -> None:
    need = layout(p)
    if need > span_bytes:
        raise _bad("time_steps", f"the dataset needs {need} bytes (header_bytes {p.header_bytes} + time_steps "
                                 f"{p.time_steps} x sum(record_bytes) {sum(p.record_bytes)}), more than the "
                                 f"{span_bytes}-byte span; lower time_steps, record_bytes or header_bytes")


@dataclass
class _Accesses:
    """One block of accesses: variable and step indices, read (else write), header rewrite after."""

    v: np.ndarray
    t: np.ndarray
    read: np.ndarray
    update: np.ndarray


def _accesses(p: RecordParams) -> Iterator[_Accesses]:
    """Every access in order, one block per pass (the draws in a fixed order: the pass's
    permutation for ``random``, then its read/write draws)."""
    import numpy as np

    vs = np.arange(len(p.record_bytes)) if p.variables is None else np.asarray(p.variables, np.int64)
    ts = np.arange(p.time_steps) if p.steps is None else np.asarray(p.steps, np.int64)
    if p.order == "variable-major":
        v, t = np.repeat(vs, len(ts)), np.tile(ts, len(vs))
    else:
        v, t = np.tile(vs, len(ts)), np.repeat(ts, len(vs))
    rng = np.random.default_rng(p.seed)
    written = 0
    for _ in range(p.passes):
        pv, pt = v, t
        if p.order == "random":
            perm = rng.permutation(len(v))
            pv, pt = v[perm], t[perm]
        read = rng.random(len(pv)) < p.read_pct / 100
        if p.header_update_every:
            count = written + np.cumsum(~read)
            update = ~read & (count % p.header_update_every == 0)
        else:
            update = np.zeros(len(pv), bool)
        written += int((~read).sum())
        yield _Accesses(pv, pt, read, update)


def _pieces(nbytes: np.ndarray | int, max_io: int) -> np.ndarray | int:
    return -(-nbytes // max_io)


def _expand(p: RecordParams, a: _Accesses) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The commands of a block of accesses: (op, offset, length) arrays."""
    import numpy as np

    rec = np.asarray(p.record_bytes, np.int64)
    prefix = np.concatenate(([0], np.cumsum(rec)[:-1]))
    step_bytes = int(rec.sum())
    m = p.max_io_bytes
    k = _pieces(rec[a.v], m)                                  # record commands per access
    h = np.where(a.update, _pieces(p.header_bytes, m), 0)     # header rewrite commands per access
    n = 1 + k + h
    acc = np.repeat(np.arange(len(n)), n)
    j = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)  # command index within its access
    kk = k[acc]
    op = np.full(len(j), OP_WRITE, np.uint8)
    off = np.empty(len(j), np.int64)
    ln = np.empty(len(j), np.int64)
    # 1. the lookup: the index page of record (v, t)
    look = j == 0
    entry = ((a.t * len(rec) + a.v) * INDEX_ENTRY_BYTES) % p.header_bytes
    off[look] = (entry - entry % INDEX_READ_BYTES)[acc[look]]
    ln[look] = INDEX_READ_BYTES
    op[look] = OP_READ
    # 2. the record, in pieces of at most max_io_bytes
    body = (j >= 1) & (j <= kk)
    piece = (j - 1)[body]
    ab = acc[body]
    start = p.header_bytes + a.t * step_bytes + prefix[a.v]
    off[body] = start[ab] + piece * m
    ln[body] = np.minimum(m, rec[a.v][ab] - piece * m)
    op[body] = np.where(a.read[ab], OP_READ, OP_WRITE)
    # 3. the header written again
    head = j > kk
    hp = (j - 1 - kk)[head]
    off[head] = hp * m
    ln[head] = np.minimum(m, p.header_bytes - hp * m)
    return op, off.astype("<u8"), ln.astype("<u8")


def commands(p: RecordParams, span_bytes: int) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The workload's commands on a span of ``span_bytes``, in order, as chunks of at most
    :data:`CHUNK_COMMANDS` (op ``u1``, offset_bytes ``<u8``, length_bytes ``<u8``).
    :class:`UserError` naming the parameter when the dataset does not fit the span or a
    parameter is out of range (checked before the first chunk)."""
    _fits(p, span_bytes)
    return _chunks(p)


def _chunks(p: RecordParams) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    import numpy as np

    rec = np.asarray(p.record_bytes, np.int64)
    per_update = int(_pieces(p.header_bytes, p.max_io_bytes))
    block_commands = 1 << 18
    held: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    held_n = 0
    for a in _accesses(p):
        n = 1 + _pieces(rec[a.v], p.max_io_bytes) + np.where(a.update, per_update, 0)
        ends = np.cumsum(n)
        i = 0
        while i < len(n):
            base = int(ends[i - 1]) if i else 0
            stop = max(int(np.searchsorted(ends, base + block_commands, side="right")), i + 1)
            sub = _Accesses(a.v[i:stop], a.t[i:stop], a.read[i:stop], a.update[i:stop])
            held.append(_expand(p, sub))
            held_n += int(ends[stop - 1]) - base
            i = stop
            if held_n >= CHUNK_COMMANDS:
                op, off, ln = (np.concatenate(x) for x in zip(*held))
                full = len(op) - len(op) % CHUNK_COMMANDS
                for s in range(0, full, CHUNK_COMMANDS):
                    yield op[s:s + CHUNK_COMMANDS], off[s:s + CHUNK_COMMANDS], ln[s:s + CHUNK_COMMANDS]
                held = [(op[full:], off[full:], ln[full:])] if full < len(op) else []
                held_n = len(op) - full
    if held_n:
        yield tuple(np.concatenate(x) for x in zip(*held))


def totals(p: RecordParams) -> dict[str, int]:
    """What :func:`commands` issues, counted without making the commands: ``span_bytes``
    (:func:`layout`), ``accesses``, ``record_reads``, ``record_writes``, ``header_reads`` (one
    lookup per access), ``header_writes`` (whole-header rewrites), ``read_bytes``,
    ``write_bytes``, ``read_commands``, ``write_commands``, ``commands``."""
    import numpy as np

    span = layout(p)
    rec = np.asarray(p.record_bytes, np.int64)
    per_update = int(_pieces(p.header_bytes, p.max_io_bytes))
    out = dict.fromkeys(("accesses", "record_reads", "record_writes", "header_reads", "header_writes",
                         "read_bytes", "write_bytes", "read_commands", "write_commands"), 0)
    for a in _accesses(p):
        size_ = rec[a.v]
        k = _pieces(size_, p.max_io_bytes)
        ups = int(a.update.sum())
        out["accesses"] += len(a.v)
        out["record_reads"] += int(a.read.sum())
        out["record_writes"] += int((~a.read).sum())
        out["header_reads"] += len(a.v)
        out["header_writes"] += ups
        out["read_bytes"] += int(size_[a.read].sum()) + INDEX_READ_BYTES * len(a.v)
        out["write_bytes"] += int(size_[~a.read].sum()) + p.header_bytes * ups
        out["read_commands"] += int(k[a.read].sum()) + len(a.v)
        out["write_commands"] += int(k[~a.read].sum()) + per_update * ups
    out["commands"] = out["read_commands"] + out["write_commands"]
    return {"span_bytes": span, **out}
