"""The native simulator API refuses misuse with a ValueError naming the argument, never
a panic: arguments out of range (queue depths, sizes outside the drive, NaN or endless
times, times past the simulated clock's range), calls out of order (a command before its
phase or replay started, a phase while another runs), and leaves the drive usable."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from ssdlab import _native
from ssdlab.profiles import load_profile

from conftest import SMALL_DRIVE

CAPACITY_BYTES = 7 << 30  # SMALL_DRIVE's user capacity
NAN, INF = float("nan"), float("inf")


def sim() -> _native.Simulator:
    return _native.Simulator(list(load_profile("default", SMALL_DRIVE).pairs), 1)


def le(*words: int) -> bytes:
    return b"".join(w.to_bytes(8, "little") for w in words)


def phase() -> _native.Simulator:
    s = sim()
    s.start_phase("randwrite", 4096, 4, 0, 1 << 20, io_bytes=1 << 20)
    return s


def replay() -> _native.Simulator:
    s = sim()
    s.start_replay(4, 10)
    return s


def start(s=None, **kw):
    """`start_phase` of 4 KiB writes at QD 1 over the drive's first MiB, `kw` changed."""
    args = dict(pattern="write", bs_bytes=4096, qd=1, offset_bytes=0, span_bytes=1 << 20) | kw
    (s or sim()).start_phase(**args)


MISUSE = [
    ("idle NaN", lambda: sim().idle(NAN), "idle time"),
    ("idle forever", lambda: sim().idle(INF), "idle time"),
    ("idle backwards", lambda: sim().idle(-1.0), "idle time"),
    ("idle past the clock", lambda: sim().idle(1e10), "idle time"),
    ("idle during a phase", lambda: phase().idle(1.0), "finish it first"),
    ("no regions", lambda: sim().region_mixing(0), "regions"),
    ("queue depth 0", lambda: start(qd=0), "qd"),
    ("queue depth too deep", lambda: start(qd=2**32 - 1), "qd"),
    ("block size 0", lambda: start(bs_bytes=0), "bs_bytes"),
    ("block size unaligned", lambda: start(bs_bytes=1000), "bs_bytes"),
    ("unknown pattern", lambda: start(pattern="randrw"), "pattern"),
    ("span beyond the drive", lambda: start(span_bytes=CAPACITY_BYTES + 4096), "span_bytes"),
    ("offset beyond the drive", lambda: start(offset_bytes=2**64 - 4096, span_bytes=4096), "offset_bytes"),
    ("duration NaN", lambda: start(duration_s=NAN), "duration_s"),
    ("duration negative", lambda: start(duration_s=-1.0), "duration_s"),
    ("duration 0", lambda: start(duration_s=0.0), "duration_s"),
    ("duration endless", lambda: start(duration_s=INF, interval_s=1e9), "duration_s"),
    ("duration past the clock", lambda: start(duration_s=1e10, interval_s=1e9), "duration_s"),
    ("interval endless", lambda: start(interval_s=INF), "interval_s"),
    ("interval 0", lambda: start(interval_s=1e-12), "interval_s"),
    ("io_bytes 0", lambda: start(io_bytes=0), "io_bytes"),
    ("a phase already running", lambda: start(phase()), "already running"),
    ("a workload during a replay", lambda: replay().start_workload({}), "already running"),
    ("a workload past the clock", lambda: sim().start_workload({"duration_s": 1e10, "interval_s": 1e4}), "duration_s"),
    ("a job past the clock", lambda: sim().start_workload({"jobs": [{"number_ios": 5}, {"duration_s": 9.3e9}], "interval_s": 1e4}),
     r"jobs\[1\].duration_s"),
    ("no jobs", lambda: sim().start_workload({"jobs": []}), "jobs"),
    ("replay at queue depth 0", lambda: sim().start_replay(0, 10), "qd"),
    ("replay windows of 0", lambda: sim().start_replay(1, 0), "window_commands"),
    ("replay data of 200 %", lambda: sim().start_replay(1, 10, 200), "buffer_compress_pct"),
    ("a replay during a phase", lambda: phase().start_replay(1, 10), "already running"),
    ("advance before a phase", lambda: sim().advance(10), r"advance\(\)"),
    ("advance during a replay", lambda: replay().advance(10), r"advance\(\)"),
    ("phase figures before a phase", lambda: sim().phase_live(), r"phase_live\(\)"),
    ("intervals before a phase", lambda: sim().take_intervals(), r"take_intervals\(\)"),
    ("finish a phase never started", lambda: sim().finish_phase(), r"finish_phase\(\)"),
    ("finish a replay as a phase", lambda: replay().finish_phase(), r"finish_phase\(\)"),
    ("finish a replay never started", lambda: sim().finish_replay(), r"finish_replay\(\)"),
    ("commands before the replay", lambda: sim().replay_chunk(b"\x01", le(0), le(4096)), r"start_replay\(\)"),
    ("a command beyond the drive", lambda: replay().replay_chunk(b"\x01", le(CAPACITY_BYTES), le(4096)), "command 0"),
    ("a command past 2^64", lambda: replay().replay_chunk(b"\x01", le(2**64 - 4096), le(8192)), "command 0"),
    ("an empty command", lambda: replay().replay_chunk(b"\x01", le(0), le(0)), "command 0"),
    ("an unknown op", lambda: replay().replay_chunk(b"\x09", le(0), le(4096)), "command 0: unknown op code 9"),
    ("chunk arrays of other lengths", lambda: replay().replay_chunk(b"\x01\x01", le(0), le(4096)), "chunk arrays"),
    ("a replay span of 0", lambda: _native.replay_prepare(b"\x01", le(0), le(4096), 0, 0), "span"),
    ("a trace of no capacity", lambda: _native.trace_generate_open(0, 1 << 20), "capacity_bytes"),
]


@pytest.mark.parametrize("call, names", [(c, n) for _, c, n in MISUSE], ids=[m[0] for m in MISUSE])
def test_misuse_is_a_value_error_naming_the_argument(call, names):
    try:
        call()
    except ValueError as e:
        assert re.search(names, str(e)), str(e)
    except BaseException as e:  # pyo3's PanicException is a BaseException
        pytest.fail(f"{type(e).__name__} rather than a ValueError: {e}")
    else:
        pytest.fail("accepted")


def test_a_refused_call_leaves_the_drive_and_its_clock_as_they_were():
    s = sim()
    s.idle(1.0)
    for bad in (INF, 1e10):
        with pytest.raises(ValueError, match="idle time"):
            s.idle(bad)
    assert s.now_s == 1.0
    with pytest.raises(ValueError, match="qd"):
        start(s, qd=0)
    start(s, io_bytes=1 << 20)
    while not s.advance(1000)[0]:
        pass
    assert s.finish_phase()["directions"]["write"]["total_bytes"] == 1 << 20


def test_a_chunk_of_more_records_than_memory_holds_reads_what_there_is():
    """`read_chunk`'s limit is an upper bound, not an allocation (in a child: an abort on
    allocation would end the test session)."""
    code = ("from ssdlab import _native; t = _native.trace_generate_open(1 << 30, 1 << 20);"
            "c = t.read_chunk(2**62); print(len(c[1]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    assert int(out.stdout) > 0
