"""ssdlab.workload.record: the record ("seek, then access") workload against hand counts and
the layout's own arithmetic: record (v, t) at header + t x sum(sizes) + sum(sizes[:v])."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from ssdlab.errors import UserError
from ssdlab.traces import OP_READ, OP_WRITE
from ssdlab.workload import record
from ssdlab.workload.record import RecordParams

KiB, MiB = 1 << 10, 1 << 20
SPAN = 1 << 40


def _all(p: RecordParams, span: int = SPAN):
    chunks = list(record.commands(p, span))
    op = np.concatenate([c[0] for c in chunks])
    off = np.concatenate([c[1] for c in chunks])
    ln = np.concatenate([c[2] for c in chunks])
    return chunks, op, off, ln


def _small(**kw) -> RecordParams:
    base = dict(header_bytes=8 * KiB, record_bytes=(4 * KiB, 12 * KiB), time_steps=3, read_pct=0,
                max_io_bytes=8 * KiB, header_update_every=2)
    return RecordParams(**{**base, **kw})


def test_totals_match_a_hand_count():
    p = _small()
    # 2 variables x 3 steps = 6 accesses, all writes; v0 = 1 command, v1 = 8 KiB + 4 KiB = 2;
    # each access a 4 KiB lookup; the 8 KiB header rewritten (1 command) after records 2, 4, 6.
    want = {"span_bytes": 8 * KiB + 3 * 16 * KiB, "accesses": 6, "record_reads": 0, "record_writes": 6,
            "header_reads": 6, "header_writes": 3, "read_bytes": 6 * 4 * KiB,
            "write_bytes": 3 * 4 * KiB + 3 * 12 * KiB + 3 * 8 * KiB, "read_commands": 6,
            "write_commands": 3 * 1 + 3 * 2 + 3, "commands": 18}
    assert record.totals(p) == want
    assert record.layout(p) == want["span_bytes"]
    _, op, off, ln = _all(p)
    # the exact stream, in order: (op, offset, length)
    R, W, H = OP_READ, OP_WRITE, 8 * KiB
    s = 16 * KiB      # one time step
    page = lambda t, v: ((t * 2 + v) * 64) % H // 4096 * 4096  # noqa: E731
    want_stream = []
    for t in range(3):
        want_stream += [(R, page(t, 0), 4096), (W, H + t * s, 4096)]
        want_stream += [(R, page(t, 1), 4096), (W, H + t * s + 4 * KiB, 8 * KiB), (W, H + t * s + 12 * KiB, 4 * KiB),
                        (W, 0, 8 * KiB)]
    assert list(zip(op.tolist(), off.tolist(), ln.tolist())) == want_stream


def test_totals_agree_with_the_commands_for_a_mixed_random_run():
    p = RecordParams(header_bytes=64 * KiB, record_bytes=(16 * KiB, 1 * MiB, 3 * MiB + 4 * KiB), time_steps=40,
                     read_pct=30, order="random", passes=3, header_update_every=5, max_io_bytes=256 * KiB, seed=7)
    t = record.totals(p)
    _, op, off, ln = _all(p)
    assert t["commands"] == len(op)
    assert t["read_commands"] == int((op == OP_READ).sum())
    assert t["write_bytes"] == int(ln[op == OP_WRITE].sum())
    assert t["read_bytes"] == int(ln[op == OP_READ].sum())
    assert int((off + ln).max()) <= t["span_bytes"]
    assert not (off % 4096).any() and not (ln % 4096).any() and (ln > 0).all()
    assert 0.2 < t["record_reads"] / t["accesses"] < 0.4


def test_chunks_are_numpy_and_at_most_64k_commands():
    p = RecordParams(header_bytes=4 * KiB, record_bytes=(100 * MiB,), time_steps=3, max_io_bytes=4 * KiB,
                     read_pct=0)
    chunks, op, _, _ = _all(p)
    assert len(op) == 3 * (1 + 100 * MiB // (4 * KiB))
    assert all(len(c[0]) <= 1 << 16 for c in chunks) and len(chunks) > 1
    for o, f, n in chunks:
        assert (o.dtype, f.dtype, n.dtype) == (np.dtype("u1"), np.dtype("<u8"), np.dtype("<u8"))
        assert len(o) == len(f) == len(n)


def test_time_major_writes_ascend_within_a_time_step():
    sizes = (16 * KiB, 2 * MiB, 100 * MiB, 64 * KiB)
    p = RecordParams(header_bytes=1 * MiB, record_bytes=sizes, time_steps=4, read_pct=0, order="time-major")
    _, op, off, ln = _all(p)
    w = op == OP_WRITE
    offs, lens = off[w], ln[w]
    step = sum(sizes)
    for t in range(4):
        lo, hi = MiB + t * step, MiB + (t + 1) * step
        inside = (offs >= lo) & (offs < hi)
        o, n = offs[inside], lens[inside]
        assert (np.diff(o.astype(np.int64)) > 0).all()
        # contiguous: each command starts where the last ended, covering the whole step
        assert o[0] == lo and (o[1:] == o[:-1] + n[:-1]).all() and int(o[-1] + n[-1]) == hi
    # and the steps follow each other
    assert (np.diff(offs.astype(np.int64)) > 0).all()


def test_variable_major_reads_hit_the_layout_strides():
    sizes = (16 * KiB, 2 * MiB, 12 * KiB, 100 * MiB)
    header = 256 * KiB
    p = RecordParams(header_bytes=header, record_bytes=sizes, time_steps=6, read_pct=100, order="variable-major",
                     variables=(2,), max_io_bytes=MiB)
    _, op, off, ln = _all(p)
    assert (op == OP_READ).all()
    body = off >= header
    want = [header + t * sum(sizes) + sizes[0] + sizes[1] for t in range(6)]
    assert off[body].tolist() == want
    assert ln[body].tolist() == [12 * KiB] * 6
    # every record read follows its lookup in the header
    assert (off[~body] < header).all() and (ln[~body] == 4096).all()
    assert np.flatnonzero(~body).tolist() == list(range(0, 12, 2))


def test_variable_major_order_of_several_variables():
    sizes = (8 * KiB, 4 * KiB, 4 * KiB)
    p = RecordParams(header_bytes=4 * KiB, record_bytes=sizes, time_steps=3, read_pct=100, order="variable-major",
                     variables=(2, 0), steps=(1, 2), max_io_bytes=4 * KiB)
    _, op, off, ln = _all(p)
    body = off[off >= 4 * KiB].tolist()
    rec = lambda v, t: 4 * KiB + t * 16 * KiB + sum(sizes[:v])  # noqa: E731
    assert body == [rec(2, 1), rec(2, 2), rec(0, 1), rec(0, 1) + 4 * KiB, rec(0, 2), rec(0, 2) + 4 * KiB]


def test_random_order_covers_every_record_once_per_pass_and_is_seeded():
    sizes = (4 * KiB, 8 * KiB, 12 * KiB)
    p = RecordParams(header_bytes=4 * KiB, record_bytes=sizes, time_steps=20, read_pct=50, order="random", passes=2,
                     max_io_bytes=64 * KiB, seed=3)
    _, op, off, ln = _all(p)
    body = off >= 4 * KiB
    starts = off[body].tolist()
    want = [4 * KiB + t * 24 * KiB + sum(sizes[:v]) for t in range(20) for v in range(3)]
    assert Counter(starts) == Counter(want * 2)
    first, second = starts[:60], starts[60:]
    assert sorted(first) == sorted(want) and first != want and first != second
    again = _all(p)[1:]
    assert all((a == b).all() for a, b in zip(again, (op, off, ln)))
    other = _all(RecordParams(**{**p.__dict__, "seed": 4}))[2]
    assert other.tolist() != off.tolist()


def test_header_updates_count_only_written_records():
    p = _small(read_pct=100, header_update_every=1)
    assert record.totals(p)["header_writes"] == 0
    p = _small(read_pct=0, header_update_every=1, passes=2)
    assert record.totals(p)["header_writes"] == 12
    assert record.totals(_small(header_update_every=0))["header_writes"] == 0


def test_span_check_refuses_a_layout_that_does_not_fit():
    p = _small()
    need = record.layout(p)
    assert sum(len(c[0]) for c in record.commands(p, need)) == 18
    with pytest.raises(UserError, match="time_steps") as e:
        record.commands(p, need - 4096)
    assert str(need) in str(e.value)


@pytest.mark.parametrize("kw,field", [
    ({"record_bytes": (16 * KiB, 5000)}, "record_bytes"),
    ({"record_bytes": ()}, "record_bytes"),
    ({"header_bytes": 1000}, "header_bytes"),
    ({"max_io_bytes": 6000}, "max_io_bytes"),
    ({"variables": (0, 2)}, "variables"),
    ({"steps": (3,)}, "steps"),
    ({"order": "diagonal"}, "order"),
    ({"read_pct": 101}, "read_pct"),
    ({"passes": 0}, "passes"),
])
def test_bad_parameters_are_named(kw, field):
    """By the option that sets them (``--records`` for record_bytes)."""
    from ssdlab.procedures.declare import declared

    flag = next(p.flag for f, p in declared(record.RecordParams) if f.name == field)
    with pytest.raises(UserError, match=f"record workload: {flag}: "):
        record.totals(_small(**kw))
    with pytest.raises(UserError, match=f"record workload: {flag}: "):
        record.commands(_small(**kw), SPAN)


def test_command_line_lists():
    assert record._sizes("16KiB,1MiB,100MiB") == (16 * KiB, MiB, 100 * MiB)
    assert record._indices("0-3,7") == (0, 1, 2, 3, 7)
    assert record._indices("all") is None


def test_replays_on_the_simulator_as_counted():
    from ssdlab.profiles import load_profile
    from ssdlab.targets.base import ReplayJob
    from ssdlab.targets.sim import SimTarget

    target = SimTarget(load_profile("default", ["blocks_per_plane=64", "user_capacity_bytes=7GiB"]))
    p = RecordParams(header_bytes=64 * KiB, record_bytes=(16 * KiB, MiB, 8 * MiB), time_steps=4,
                     header_update_every=3, read_pct=40)
    want = record.totals(p)
    got = target.replay(ReplayJob("record", qd=8, window_commands=100), record.commands(p, target.capacity_bytes),
                        total_commands=want["commands"]).totals
    assert (got["commands"], got["reads"], got["writes"]) == (want["commands"], want["read_commands"],
                                                              want["write_commands"])
    assert (got["host_read_bytes"], got["host_write_bytes"]) == (want["read_bytes"], want["write_bytes"])
