"""Traces from Python and the command line: ``ssdlab trace info|convert|generate``, round
trips, errors naming file and line, and the JEDEC-client-like generator's statistics.

The reader-level tests (every format, fuzzing, the parse benchmark) are in the Rust crate
``crates/ssdtrace``; these check the Python API and CLI on top, and re-check the shared real
traces against counts computed here with plain Python (independent of the Rust parsers).
Generator shares are by **bytes written** (random vs sequential), as the docs state.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED, run_cli
from ssdlab import traces
from ssdlab.errors import UserError

TRACES = SHARED / "traces"

needs_shared = pytest.mark.skipif(not TRACES.is_dir(), reason=f"shared traces folder {TRACES} is absent")


def _records(d: dict) -> list[tuple[int, int, int, int]]:
    return list(zip(d["time_ns"].tolist(), d["op"].tolist(), d["offset_bytes"].tolist(), d["len_bytes"].tolist()))


def _read(path, fmt=None, **opts):
    with traces.open_trace(path, fmt, **opts) as t:
        return t.read_all()


def _union_bytes(offsets: np.ndarray, lens: np.ndarray) -> int:
    """Distinct bytes covered by the ranges."""
    if len(offsets) == 0:
        return 0
    order = np.argsort(offsets, kind="stable")
    start, end = offsets[order].astype(np.int64), (offsets[order] + lens[order]).astype(np.int64)
    total, cur_s, cur_e = 0, int(start[0]), int(end[0])
    for s, e in zip(start[1:].tolist(), end[1:].tolist()):
        if s > cur_e:
            total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + cur_e - cur_s


# --- shared real traces, checked against plain-Python counts -------------------------------

@needs_shared
@pytest.mark.parametrize("rel,fmt,unit_ns", [("disksim/ascii-first5000.trace", "disksim", 10**6),
                                              ("mqsim/tpcc-small.trace", "mqsim", 1),
                                              ("mqsim/wsrch-small.trace", "mqsim", 1)])
def test_ascii_traces_match_plain_python(rel, fmt, unit_ns):
    path = TRACES / rel
    reads = writes = rbytes = wbytes = 0
    for line in path.read_text().splitlines():
        t, dev, blk, cnt, flags = line.split()[:5]
        if int(flags, 16) & 1:
            reads, rbytes = reads + 1, rbytes + int(cnt) * 512
        else:
            writes, wbytes = writes + 1, wbytes + int(cnt) * 512
    d = traces.info(path)
    assert d["format"] == fmt
    assert (d["ops"]["read"]["count"], d["ops"]["read"]["bytes"]) == (reads, rbytes)
    assert (d["ops"]["write"]["count"], d["ops"]["write"]["bytes"]) == (writes, wbytes)
    arr = _read(path)
    first = float(path.read_text().split(None, 1)[0])
    assert arr["time_ns"][0] == round(first * unit_ns)


@needs_shared
def test_blkparse_matches_plain_python_and_blkparse_summary():
    path = TRACES / "wiscsee" / "fio-blkparse-output.txt"
    counts = {"R": [0, 0], "W": [0, 0]}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 10 and f[5] == "D" and f[8] == "+":
            counts[f[6][0]][0] += 1
            counts[f[6][0]][1] += int(f[9]) * 512
    d = traces.info(path)
    assert d["format"] == "blkparse"
    assert [d["ops"]["read"]["count"], d["ops"]["read"]["bytes"]] == counts["R"] == [161, 644 * 1024]
    assert [d["ops"]["write"]["count"], d["ops"]["write"]["bytes"]] == counts["W"] == [512, 131072 * 1024]
    assert traces.info(path, events="queue")["records"] == 0


@needs_shared
def test_fio_and_vscsi_match_plain_python():
    path = TRACES / "fio_iolog" / "t0038.iolog"
    ios = [line.split() for line in path.read_text().splitlines()[1:] if len(line.split()) == 5]
    d = traces.info(path)
    for op in ("write", "trim"):
        sel = [int(f[4]) for f in ios if f[2] == op]
        assert (d["ops"][op]["count"], d["ops"][op]["bytes"]) == (len(sel), sum(sel))
    assert d["min_time_ns"] == int(ios[0][0]) * 1000

    raw = (TRACES / "cloudphysics" / "cloudPhysicsIO.vscsi").read_bytes()
    recs = [struct.unpack_from("<IIIHHQQ", raw, i) for i in range(0, len(raw), 32)]
    d = traces.info(TRACES / "cloudphysics" / "cloudPhysicsIO.vscsi")
    assert d["format"] == "vscsi"
    for op, cmd in (("read", 0x28), ("write", 0x2A)):
        sel = [r[1] for r in recs if r[3] == cmd]
        assert (d["ops"][op]["count"], d["ops"][op]["bytes"]) == (len(sel), sum(sel))


@needs_shared
def test_cli_info_on_a_shared_trace_prints_counts_and_json():
    path = TRACES / "mqsim" / "tpcc-small.trace"
    out = run_cli("trace", "info", str(path)).stdout
    assert "format mqsim: 6999 requests" in out and "read" in out and "span" in out and "duration" in out
    d = json.loads(run_cli("trace", "info", str(path), "--json", "--time-unit", "us").stdout)
    assert d["records"] == 6999 and d["min_time_ns"] == 938513000 * 1000


# --- round trips ---------------------------------------------------------------------------

SAMPLE = [(10_000, 1, 0, 4096), (10_000, 3, 0, 0), (25_000, 2, 1 << 20, 1 << 20), (26_000, 0, 512, 512),
          (30_000, 1, 4096, 8192)]


def _write_fio_v3(path: Path, recs) -> None:
    names = {0: "read", 1: "write", 2: "trim", 3: "sync"}
    lines = ["fio version 3 iolog", "0 /dev/sdx add", "0 /dev/sdx open"]
    lines += [f"{t // 1000} /dev/sdx {names[op]} {off} {ln}" for t, op, off, ln in recs]
    lines.append("31 /dev/sdx close")
    path.write_text("\n".join(lines) + "\n")


def test_fio_v3_round_trip_through_reader_and_convert(tmp_path):
    src = tmp_path / "in.iolog"
    _write_fio_v3(src, SAMPLE)
    assert _records(_read(src)) == SAMPLE
    # convert to fio and to bin and read both back: same records
    run_cli("trace", "convert", str(src), "--to", "fio", "-o", str(tmp_path / "out.iolog"))
    run_cli("trace", "convert", str(src), "-o", str(tmp_path / "out.bin"))
    assert _records(_read(tmp_path / "out.iolog")) == SAMPLE
    assert _records(_read(tmp_path / "out.bin", "bin")) == SAMPLE
    text = (tmp_path / "out.iolog").read_text().splitlines()
    assert text[:3] == ["fio version 3 iolog", "0 /dev/null add", "0 /dev/null open"]
    assert "10 /dev/null sync 0 0" in text


def test_binary_round_trip_and_numpy_layout(tmp_path):
    gen = tmp_path / "g.bin"
    traces.generate(gen, 256 << 20, 64 << 20, seed=3)
    a = _read(gen)
    traces.convert(gen, tmp_path / "g.iolog")
    traces.convert(tmp_path / "g.iolog", tmp_path / "g2.bin")
    assert (tmp_path / "g2.bin").read_bytes() == gen.read_bytes()
    # the documented layout, read with numpy alone
    raw = np.fromfile(gen, dtype=[("time_ns", "<u8"), ("offset_op", "<u8"), ("len_bytes", "<u8")], offset=16)
    assert gen.read_bytes()[:8] == b"SSDTRACE"
    assert np.array_equal(raw["offset_op"] >> 56, a["op"].astype("<u8"))
    assert np.array_equal(raw["offset_op"] & ((1 << 56) - 1), a["offset_bytes"])
    assert np.array_equal(raw["len_bytes"], a["len_bytes"])


def test_chunks_are_bounded_and_complete(tmp_path):
    gen = tmp_path / "g.bin"
    traces.generate(gen, 256 << 20, 32 << 20)
    whole = _read(gen)
    with traces.open_trace(gen) as t:
        sizes = [len(c["op"]) for c in t.chunks(1000)]
        assert t.stats()["lines"] == len(whole["op"])
    assert max(sizes) == 1000 and sum(sizes) == len(whole["op"])


# --- errors --------------------------------------------------------------------------------

BAD = {
    "disksim": ("1.5 0 8 8 1\n2.5 0 8 eight 1\n", 2, "sectors"),
    "mqsim": ("1000 0 8 8 1\n", None, None),
    "fio": ("fio version 3 iolog\n1 f write 0 4096\n2 f write 4096\n", 3, "OFFSET LENGTH"),
    "blkparse": ("  8,0 1 1 0.1 5 D W 100 + 8 [a]\n  8,0 1 2 0.2 5 D W 100 + x [a]\n", 2, "sector count"),
    "msr": ("128166372003061629,hm,0,Read,0,4096,1\n128166372003061630,hm,0,Erase,0,4096,1\n", 2, "Read or Write"),
    "spc": ("0,1,512,w,0.1\n0,1,512,q,0.2\n", 2, "opcode r or w"),
    "jedec": ("e 0 8\nh\nx 1 2\n", 3, "op letter e (write)"),
}


@pytest.mark.parametrize("fmt", [k for k, v in BAD.items() if v[1]])
def test_errors_name_file_and_line(tmp_path, fmt):
    text, line, what = BAD[fmt]
    path = tmp_path / f"bad.{fmt}"
    path.write_text(text)
    with pytest.raises(traces.TraceError) as e:
        traces.info(path, fmt)
    assert e.value.file == str(path) and e.value.line == line
    assert str(e.value).startswith(f"{path}:{line}: expected ") and what in str(e.value)
    assert isinstance(e.value, UserError)
    # the CLI: one clear line, exit status 2, no traceback
    p = run_cli("trace", "info", str(path), "--format", fmt, check=False)
    assert p.returncode == 2 and f"{path}:{line}: expected" in p.stderr and "Traceback" not in p.stderr
    # --skip-bad: reads on, reports how many
    p = run_cli("trace", "info", str(path), "--format", fmt, "--skip-bad")
    assert "1 skipped as malformed" in p.stdout and "skipped 1 malformed lines" in p.stderr


def test_options_a_format_lacks_and_bad_values_are_clear(tmp_path):
    path = tmp_path / "t.iolog"
    _write_fio_v3(path, SAMPLE)
    with pytest.raises(traces.TraceError, match="time-unit option applies to disksim and mqsim"):
        traces.info(path, time_unit="ms")
    with pytest.raises(UserError, match='format "nope": unknown'):
        traces.info(path, "nope")
    with pytest.raises(traces.TraceError, match="no such trace file"):
        traces.info(tmp_path / "missing.trace")
    (tmp_path / "junk.txt").write_text("hello world\n")
    with pytest.raises(traces.TraceError, match="cannot tell the trace format"):
        traces.info(tmp_path / "junk.txt")
    p = run_cli("trace", "convert", str(path), "-o", str(tmp_path / "out.xyz"), check=False)
    assert p.returncode == 2 and "cannot tell the output format" in p.stderr


def test_failed_conversion_leaves_no_partial_output(tmp_path):
    path = tmp_path / "bad.trace"
    path.write_text("1 0 8 8 1\n" * 100 + "1 0 8 x 1\n")
    with pytest.raises(traces.TraceError, match=":101: expected"):
        traces.convert(path, tmp_path / "out.bin", fmt="mqsim")
    assert not (tmp_path / "out.bin").exists()


# --- the generator -------------------------------------------------------------------------

def _generate(tmp_path, name, capacity, write_bytes, **kw):
    out = tmp_path / name
    summary = traces.generate(out, capacity, write_bytes, **kw)
    return out, summary, _read(out)


@pytest.mark.parametrize("capacity", [1 << 30, 3 << 30])
def test_generator_statistics_scale_with_capacity_and_bytes_written(tmp_path, capacity):
    write_bytes = 2 * capacity
    out, s, a = _generate(tmp_path, "g.bin", capacity, write_bytes, seed=5)
    op, off, ln = a["op"], a["offset_bytes"], a["len_bytes"]
    w, tr = op == traces.OP_WRITE, op == traces.OP_TRIM
    # scaled: exactly write_bytes written, everything inside [0, capacity), 4 KiB aligned
    assert int(ln[w].sum()) == write_bytes == s["write_bytes"]
    assert int((off + ln)[op != traces.OP_FLUSH].max()) <= capacity
    assert not np.any(off % 4096) and not np.any(ln % 4096)
    # 75 / 25 random / sequential by bytes written: the generator's own count, and an
    # independent measure (writes that start where the previous write ended)
    assert abs(s["random_write_bytes"] / write_bytes - 0.75) < 0.015
    wo, wl = off[w], ln[w]
    seq = np.concatenate([[False], wo[1:] == (wo[:-1] + wl[:-1])])
    assert abs(int(wl[seq].sum()) / write_bytes - 0.25) < 0.03
    # TRIMs free ~13 % of the span (distinct bytes), spread over the run
    assert abs(_union_bytes(off[tr], ln[tr]) / capacity - 0.13) < 0.002
    assert _union_bytes(off[tr], ln[tr]) == int(ln[tr].sum()) == s["trim_bytes"]
    idx = np.flatnonzero(tr)
    assert idx[0] < len(op) * 0.2 and idx[-1] > len(op) * 0.8
    # flushes: one per ~32 writes; realistic sizes: mean write near the JEDEC trace's ~22 KB
    assert 28 < w.sum() / (op == traces.OP_FLUSH).sum() < 36
    assert 19_000 < write_bytes / w.sum() < 25_000


def test_generator_is_deterministic_per_seed(tmp_path):
    a, _, _ = _generate(tmp_path, "a.bin", 512 << 20, 256 << 20, seed=9)
    b, _, _ = _generate(tmp_path, "b.bin", 512 << 20, 256 << 20, seed=9)
    c, _, _ = _generate(tmp_path, "c.bin", 512 << 20, 256 << 20, seed=10)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


def test_cli_generate_and_parameters(tmp_path):
    out = tmp_path / "g.iolog"
    p = run_cli("trace", "generate", "--capacity", "512MiB", "--write-bytes", "256MiB", "--seed", "4",
                "--trim-fraction", "0.2", "--random-fraction", "0.5", "--flush-every", "0", "-o", str(out))
    assert "wrote" in p.stdout and "20.0% of the" in p.stdout
    assert out.read_text().startswith("fio version 3 iolog\n")
    d = traces.info(out)
    assert d["ops"]["flush"]["count"] == 0 and d["ops"]["write"]["bytes"] == 256 << 20
    assert abs(d["ops"]["trim"]["bytes"] / (512 << 20) - 0.2) < 0.002
    p = run_cli("trace", "generate", "--capacity", "1000", "--write-bytes", "4096", "-o", str(tmp_path / "x.bin"), check=False)
    assert p.returncode == 2 and "--capacity: 1000: must be in [4096, " in p.stderr
    p = run_cli("trace", "generate", "--capacity", "1GiB", "--write-bytes", "1GiB", "--trim-fraction", "2",
                "-o", str(tmp_path / "x.bin"), check=False)
    assert p.returncode == 2 and "--trim-fraction: 2: must be in [0, 1]" in p.stderr


def test_help_explains_units():
    for args in (["trace", "--help"], ["trace", "info", "--help"], ["trace", "generate", "--help"]):
        out = run_cli(*args).stdout
        assert "bytes" in out and "512 B sectors" in out and "ns" in out


def test_output_into_a_closed_pipe_ends_quietly():
    """`ssdlab ... | head` must not print a BrokenPipeError traceback."""
    import os
    import subprocess
    import sys

    r, w = os.pipe()
    os.close(r)  # the reader is gone before ssdlab writes
    try:
        proc = subprocess.run([sys.executable, "-m", "ssdlab", "profiles", "--keys"], stdout=w,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(w)
    assert proc.returncode == 141
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
