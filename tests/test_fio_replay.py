"""FioTarget.replay: trace replay through fio on loop devices and files, the replay files,
window series, dry run and Ctrl-C.

The loop-device tests need root, /dev/loop-control and fio. If loop devices cannot be made they
FAIL with the reason; set SSDLAB_NO_LOOP=1 to skip them. The whole file runs in ~40 s.
"""
from __future__ import annotations

import json
import signal
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ssdlab.targets.base import OP_FLUSH, OP_READ, OP_TRIM, OP_WRITE, ReplayJob, ReplayResult, window_series
from ssdlab.targets.fio import FioTarget, LoopTarget
from ssdlab.targets.fio_replay import (BLKTRACE_DTYPE, Segment, SegmentWriter, WindowAccumulator, check_chunk,
                                       read_blktrace, segment_completions)
from conftest import interrupt_fio_child, loops_backed_by, loops_backed_in

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

KiB, MiB = 1 << 10, 1 << 20


# loops_ok, need_fio (fixtures) and interrupt_fio_child: conftest.py


def mixed_commands(n: int, span: int, seed: int = 1, p=(0.1, 0.7, 0.1, 0.1)):
    """n random commands (read, write, trim, flush with probabilities p) of 4-64 KiB in [0, span)."""
    rng = np.random.default_rng(seed)
    op = rng.choice(4, size=n, p=p).astype(np.uint8)
    ln = (rng.integers(1, 17, size=n) * 4096).astype(np.uint64)
    off = (rng.integers(0, (span - 64 * KiB) // 4096, size=n) * 4096).astype(np.uint64)
    ln[op == OP_FLUSH] = 0
    off[op == OP_FLUSH] = 0
    return op, off, ln


def chunked(op, off, ln, size: int):
    for i in range(0, len(op), size):
        yield op[i:i + size], off[i:i + size], ln[i:i + size]


def expected_totals(op, ln) -> dict:
    return {"commands": len(op), "reads": int((op == OP_READ).sum()), "writes": int((op == OP_WRITE).sum()),
            "trims": int((op == OP_TRIM).sum()), "flushes": int((op == OP_FLUSH).sum()),
            "host_read_bytes": int(ln[op == OP_READ].sum()), "host_write_bytes": int(ln[op == OP_WRITE].sum()),
            "trim_bytes": int(ln[op == OP_TRIM].sum())}


def check_windows(r: ReplayResult, window: int) -> None:
    s = r.series
    assert set(s) >= {"window", "commands", "t_s", "dt_s", "iops", "mbps"}
    n = r.totals["commands"]
    assert s["commands"][-1] == n
    sizes = np.diff(np.concatenate([[0], s["commands"]]))
    assert (sizes[:-1] == window).all() and 0 < sizes[-1] <= window
    assert s["window"].tolist() == list(range(len(sizes)))
    assert (np.diff(s["t_s"]) >= 0).all() and s["t_s"][0] >= 0
    np.testing.assert_allclose(s["dt_s"], np.diff(np.concatenate([[0.0], s["t_s"]])))
    assert r.totals["duration_s"] == pytest.approx(s["t_s"][-1])
    assert r.totals["iops"] == pytest.approx(n / r.totals["duration_s"])
    assert np.nanmax(s["iops"]) > 0


# ============================================================================ pure functions


def test_window_series_known_answer():
    t = np.array([0.5, 0.1, 0.2, 0.9, 1.0])
    b = np.array([3e6, 1e6, 1e6, 0.0, 2e6])
    s = window_series(t, b, 2)
    assert s["window"].tolist() == [0, 1, 2]
    assert s["commands"].tolist() == [2, 4, 5]
    np.testing.assert_allclose(s["t_s"], [0.2, 0.9, 1.0])
    np.testing.assert_allclose(s["dt_s"], [0.2, 0.7, 0.1])
    np.testing.assert_allclose(s["iops"], [10.0, 2 / 0.7, 10.0])
    np.testing.assert_allclose(s["mbps"], [10.0, 3 / 0.7, 20.0])
    empty = window_series(np.zeros(0), np.zeros(0), 10)
    assert all(len(v) == 0 for v in empty.values())
    one = window_series(np.array([0.0, 0.0]), np.array([4096.0, 4096.0]), 5)  # dt 0: no rate
    assert one["commands"].tolist() == [2] and np.isnan(one["iops"][0])


@pytest.mark.parametrize("w", [1, 7, 100, 1000])
def test_window_accumulator_matches_window_series(w):
    rng = np.random.default_rng(w)
    t = np.sort(rng.random(2345) * 100)
    t[100:110] = t[100]  # ties
    b = rng.integers(0, 5, size=len(t)) * 4096.0
    acc = WindowAccumulator(w)
    cuts = np.sort(rng.choice(len(t), size=6, replace=False))
    for piece in np.split(np.arange(len(t)), cuts):
        acc.add(t[piece], b[piece])
    got, want = acc.series(), window_series(t, b, w)
    assert set(got) == set(want)
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-12, err_msg=k)
    assert all(len(v) == 0 for v in WindowAccumulator(w).series().values())


def test_check_chunk_names_the_bad_command():
    op = np.array([1, 1, 2], dtype=np.uint8)
    off = np.array([0, 4096, 8192], dtype=np.uint64)
    ln = np.array([4096, 4096, 4096], dtype=np.uint64)
    check_chunk(op, off, ln, 1 * MiB, 0)
    with pytest.raises(ValueError, match=r"replay command 11 \(write offset 4096, length 100\): .*multiples of 4096"):
        check_chunk(op, off, np.array([4096, 100, 4096], dtype=np.uint64), MiB, 10)
    with pytest.raises(ValueError, match=r"replay command 2 .*beyond the target's 8192 bytes"):
        check_chunk(op, off, ln, 8192, 0)
    with pytest.raises(ValueError, match=r"op code 7"):
        check_chunk(np.array([7], np.uint8), off[:1], ln[:1], MiB, 0)
    with pytest.raises(ValueError, match=r"at most 4 GiB"):
        check_chunk(op[:1], off[:1], np.array([8 << 30], np.uint64), 16 << 30, 0)


def test_segment_writer_splits_and_round_trips(tmp_path):
    op, off, ln = mixed_commands(2500, 64 * MiB, seed=3)
    w = SegmentWriter(tmp_path, "007_x", capacity_bytes=64 * MiB, device=5, segment_commands=1000)
    for c in chunked(op, off, ln, 333):
        w.add(*c)
    segs = w.close()
    assert [s.commands for s in segs] == [1000, 1000, 500] and [s.first for s in segs] == [0, 1000, 2000]
    assert [s.trace.name for s in segs] == ["007_x.p001.blktrace", "007_x.p002.blktrace", "007_x.p003.blktrace"]
    back = [read_blktrace(s.trace) for s in segs]
    for k in range(3):
        np.testing.assert_array_equal(np.concatenate([x[k] for x in back]), (op, off, ln)[k])
    rec = np.fromfile(segs[0].trace, dtype=BLKTRACE_DTYPE)
    assert rec.itemsize == 48 and (rec["magic"] == 0x65617407).all() and (rec["device"] == 5).all()
    for s in segs:  # flush_after = data commands before each flush in the segment
        o = op[s.first:s.first + s.commands]
        want = np.cumsum(o != OP_FLUSH)[o == OP_FLUSH]
        np.testing.assert_array_equal(s.flush_after, want)
        assert s.counts.tolist() == np.bincount(o, minlength=4).tolist()
    # one segment: no suffix; TRIMs dropped when asked
    w = SegmentWriter(tmp_path, "008_y", capacity_bytes=64 * MiB, device=5, drop_trims=True)
    w.add(op, off, ln)
    (seg,) = w.close()
    assert seg.trace.name == "008_y.blktrace" and seg.counts[OP_TRIM] == 0
    assert w.dropped_trims == int((op == OP_TRIM).sum()) and w.dropped_trim_bytes == int(ln[op == OP_TRIM].sum())


def test_segment_completions_fills_unlogged_commands_and_flushes():
    # file order: W W F W R F W ; fio logged 3 of the 5 data commands, the other two were in flight at the end
    seg = Segment(index=1, stem="s", trace=Path("s.blktrace"), commands=7)
    seg.counts = np.array([1, 4, 0, 2])
    seg.nbytes = np.array([8192, 4 * 4096, 0, 0])
    seg.flush_after = np.array([2, 4])
    log = {"t_ms": np.array([1000, 1002, 1005]), "value": np.array([1e6, 2e6, 1e6]),
           "ddir": np.array([1, 1, 0]), "bs_bytes": np.array([4096, 4096, 8192])}
    fio = {"counts": np.array([1, 4, 0, 2]), "nbytes": np.array([8192, 8192, 0, 0]), "runtime_ms": 10.0}
    t, b, counts, nbytes, start, end, tail = segment_completions(seg, log, fio, 0.0)
    assert start == pytest.approx(999.0) and end == pytest.approx(1009.0) and tail == 2
    assert counts.tolist() == [1, 4, 0, 2] and nbytes.tolist() == [8192, 16384, 0, 0]
    # data at 1000, 1002, 1005, 1009, 1009; flushes after the 2nd (1002) and 4th (1009) completion
    np.testing.assert_allclose(t, [1000, 1002, 1002, 1005, 1009, 1009, 1009])
    assert b.sum() == 8192 + 16384 and len(b) == 7


# ============================================================================ real replays


@pytest.mark.parametrize("segment", [None, 1200], ids=["one-fio-run", "three-fio-runs"])
def test_replay_mixed_trace_on_loop(loops_ok, tmp_path, segment):
    op, off, ln = mixed_commands(3000, 60 * MiB, seed=7)
    seen = []
    with LoopTarget("64MB", tmp_path) as t:
        if segment:
            t.replay_segment_commands = segment
        t.purge()
        r = t.replay(ReplayJob("trace", qd=16, window_commands=500), chunked(op, off, ln, 700),
                     progress=lambda f, s: seen.append((f, s)))
    assert isinstance(r, ReplayResult) and r.complete, r.notes
    want = expected_totals(op, ln)
    assert {k: r.totals[k] for k in want} == want
    assert r.totals["mbps"] == pytest.approx((want["host_read_bytes"] + want["host_write_bytes"])
                                             / r.totals["duration_s"] / 1e6)
    check_windows(r, 500)
    assert any("1 ms resolution" in n for n in r.notes)
    assert all(0 <= f <= 1 for f, _ in seen)
    stems = ["001_trace"] if not segment else [f"001_trace.p{k:03d}" for k in (1, 2, 3)]
    for stem in stems:
        for ext in (".blktrace", ".fio", ".json", "_clat.1.log"):
            assert (tmp_path / f"{stem}{ext}").exists(), stem + ext
    if segment:
        assert any("3 fio runs" in n for n in r.notes)
    text = (tmp_path / f"{stems[0]}.fio").read_text()
    for opt in ("read_iolog=", "replay_redirect=/dev/loop", "replay_no_stall=1", "iodepth=16", "direct=1",
                "ioengine=", "refill_buffers=1", "write_lat_log=", "log_avg_msec=0"):
        assert opt in text, opt


def test_replay_data_lands_and_trim_deallocates(loops_ok, tmp_path):
    """Writes reach the device, TRIMmed ranges read back as zeros and free the backing file."""
    a = [(OP_WRITE, o, 64 * KiB) for o in range(0, 4 * MiB, 64 * KiB)]  # region A, kept
    b = [(OP_WRITE, 8 * MiB + o, 128 * KiB) for o in range(0, 8 * MiB, 128 * KiB)]  # region B, trimmed later
    rng = np.random.default_rng(5)
    c = [(OP_WRITE, 32 * MiB + int(x) * 4096, 4096) for x in rng.integers(0, 512, 512)]  # filler between
    trims = [(OP_TRIM, 8 * MiB + o, MiB) for o in range(0, 8 * MiB, MiB)]
    reads = [(OP_READ, o, 256 * KiB) for o in range(0, 4 * MiB, 256 * KiB)]
    cmds = a + b + [(OP_FLUSH, 0, 0)] + c + [(OP_FLUSH, 0, 0)] + trims + reads + [(OP_FLUSH, 0, 0)]
    op = np.array([x[0] for x in cmds], np.uint8)
    off = np.array([x[1] for x in cmds], np.uint64)
    ln = np.array([x[2] for x in cmds], np.uint64)
    with LoopTarget("64MB", tmp_path) as t:
        t.purge()
        assert t.loop.allocated_bytes() < MiB
        r = t.replay(ReplayJob("data", qd=4, window_commands=100), [(op, off, ln)])
        assert r.complete, r.notes
        assert {k: r.totals[k] for k in ("writes", "trims", "reads", "flushes")} == {
            "writes": len(a) + len(b) + len(c), "trims": 8, "reads": 16, "flushes": 3}
        assert r.totals["host_read_bytes"] == 4 * MiB and r.totals["trim_bytes"] == 8 * MiB
        subprocess.run(["sync"], check=True)
        with open(t.loop.backing_fd_path, "rb") as f:
            region_a = np.frombuffer(f.read(4 * MiB), dtype=np.uint8).reshape(-1, 4096)
            f.seek(8 * MiB)
            region_b = np.frombuffer(f.read(8 * MiB), dtype=np.uint8)
        assert (region_a != 0).any(axis=1).all()  # every 4 KiB block of A holds written data
        assert not region_b.any()  # B was written, then TRIMmed: zeros (hole punched by loop discard)
        alloc = t.loop.allocated_bytes()
        assert 4 * MiB <= alloc <= 4 * MiB + 2 * MiB + MiB, alloc  # A + filler, not B


def test_replay_honours_queue_depth(loops_ok, tmp_path):
    n = 2000
    op = np.full(n, OP_WRITE, np.uint8)
    off = (np.random.default_rng(2).integers(0, 60 * MiB // 4096, n) * 4096).astype(np.uint64)
    ln = np.full(n, 4096, np.uint64)
    levels = {}
    with LoopTarget("64MB", tmp_path) as t:
        for qd in (1, 16):
            r = t.replay(ReplayJob(f"qd{qd}", qd=qd, window_commands=1000), [(op, off, ln)])
            assert r.complete and r.totals["writes"] == n
            stem = f"{t._counter:03d}_qd{qd}"
            assert f"iodepth={qd}" in (tmp_path / f"{stem}.fio").read_text()
            levels[qd] = json.loads((tmp_path / f"{stem}.json").read_text())["jobs"][0]["iodepth_level"]
    assert levels[1]["1"] > 99, levels[1]
    assert levels[16]["16"] > 50 and levels[16]["32"] == 0 and levels[16][">=64"] == 0, levels[16]


def test_replay_on_file_leaves_trims_out(need_fio, tmp_path):
    path = tmp_path / "drive.img"
    op, off, ln = mixed_commands(600, 16 * MiB, seed=11, p=(0.0, 0.8, 0.15, 0.05))
    t = FioTarget(f"file:{path}", tmp_path / "wd", size_bytes=16 * MiB)
    r = t.replay(ReplayJob("file", qd=8, window_commands=100), [(op, off, ln)])
    assert r.complete, r.notes
    keep = op != OP_TRIM
    want = expected_totals(op[keep], ln[keep])
    assert {k: r.totals[k] for k in want} == want and r.totals["trims"] == 0
    assert any("TRIM commands" in n and "regular file" in n for n in r.notes)
    check_windows(r, 100)
    assert path.stat().st_blocks * 512 >= MiB  # the writes landed


def test_replay_dry_run_writes_files_and_runs_nothing(tmp_path):
    loops = tmp_path / "loops"
    loops.mkdir()
    op, off, ln = mixed_commands(1500, 60 * MiB, seed=4)
    t = LoopTarget("64MB", tmp_path, dry_run=True, directory=loops)
    r = t.replay(ReplayJob("dry", qd=8, window_commands=100), chunked(op, off, ln, 400))
    assert not r.complete and r.notes[0] == "dry run: nothing was run" and r.totals == {}
    assert len(r.series["commands"]) == 0
    text = r.notes[-1]
    for opt in ("read_iolog=001_dry.blktrace", "replay_redirect=/dev/loopN", "iodepth=8", "replay_no_stall=1",
                "write_lat_log=001_dry", "log_avg_msec=0", "direct=1", "refill_buffers=1"):
        assert opt in text, opt
    assert (tmp_path / "001_dry.fio").read_text() == text
    back = read_blktrace(tmp_path / "001_dry.blktrace")
    for k in range(3):
        np.testing.assert_array_equal(back[k], (op, off, ln)[k])
    assert not list(tmp_path.glob("*.json")) and not list(tmp_path.glob("*.log"))  # fio never ran
    assert not loops_backed_in(loops) and not list(loops.iterdir())  # no loop device was made
    t.close()


# ============================================================================ interruption

_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    from ssdlab.targets.fio import LoopTarget
    from ssdlab.targets.base import ReplayJob
    t = LoopTarget("64MB", sys.argv[1])
    t.replay_segment_commands = 100_000
    rng = np.random.default_rng(3)
    n = 1_000_000
    op = np.where(rng.random(n) < 0.05, 3, 1).astype(np.uint8)
    off = (rng.integers(0, 60 * 256, n) * 4096).astype(np.uint64)
    ln = np.full(n, 4096, np.uint64)
    off[op == 3] = 0
    ln[op == 3] = 0
    said = []
    def progress(frac, text):
        if not said and "writing" not in text:
            print("RUNNING", t.path, t.loop.backing_file, flush=True)
            said.append(1)
    try:
        r = t.replay(ReplayJob("long", qd=32, window_commands=1000), [(op, off, ln)], progress=progress)
    finally:
        t.close()
    print(json.dumps({"complete": r.complete, "totals": r.totals, "commands": r.series["commands"].tolist(),
                      "notes": r.notes}), flush=True)
""")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_replay_interrupt_keeps_partial_results(loops_ok, tmp_path, sig):
    res, _, backing, stop_s = interrupt_fio_child(tmp_path, _CHILD, sig, start_timeout_s=60, stop_timeout_s=60)
    assert res["complete"] is False
    n = res["totals"]["commands"]
    assert 0 < n < 1_000_000, res["totals"]
    assert res["commands"] and res["commands"][-1] == n
    assert res["totals"]["writes"] > 0 and res["totals"]["host_write_bytes"] == 4096 * res["totals"]["writes"]
    assert any("interrupted" in x for x in res["notes"]), res["notes"]
    assert stop_s < 20
    assert (tmp_path / "wd" / "001_long.p001_clat.1.log").exists()  # fio wrote its log on exit
    assert not (tmp_path / "wd" / "001_long.p010.json").exists()  # later runs never started
    assert any("of 10 fio runs" in x for x in res["notes"]), res["notes"]
    assert not loops_backed_by(backing)  # the loop device was detached
