"""`ssdlab trace run`: the TRIM trace test (seed 003) on the simulator."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import SHARED, interrupt_cli, run_cli, set_args
from ssdlab import results
from ssdlab.errors import UserError
from ssdlab.procedures import trace_replay
from ssdlab.profiles import load_profile
from ssdlab.targets.sim import SimTarget

TPCC = SHARED / "traces" / "mqsim" / "tpcc-small.trace"


def _need(path):
    if not path.exists():
        pytest.skip(f"{path} is absent (the shared traces live in ../shared beside the repository)")


@pytest.fixture(scope="module")
def cleanup_later_run(tmp_path_factory):
    """JEDEC-like replay on a scaled-down 'clean up later' drive, both TRIM modes, QD32."""
    out = tmp_path_factory.mktemp("trace") / "run"
    run_cli("trace", "run", "jedec-like", "--target", "sim:cleanup-later", *set_args(), "--qd", "32",
            "--write-bytes", "14GiB", "--window", "20000", "--out", str(out), "--no-progress")
    return out


def summary_of(out):
    return json.loads((out / "summary.json").read_text())


def test_trim_raises_iops_and_lowers_write_amplification(cleanup_later_run):
    """Acceptance (seed 003): with TRIM the replay is faster and writes less NAND."""
    s = summary_of(cleanup_later_run)
    (effect,) = s["trim_effect"]
    assert effect["iops_with_trim"] > 1.1 * effect["iops_without_trim"], effect
    assert effect["wa_with_trim"] < 0.95 * effect["wa_without_trim"], effect
    rows = {r["variant"]: r for r in s["variants"]}
    # Same trace: the same writes and flushes; only the TRIM variant sends TRIMs.
    assert rows["qd32-trim"]["writes"] == rows["qd32-notrim"]["writes"] > 0
    assert rows["qd32-trim"]["flushes"] == rows["qd32-notrim"]["flushes"] > 0
    assert rows["qd32-notrim"]["trims"] == 0 < rows["qd32-trim"]["trims"]
    # The generator frees 13 % of the span with TRIM.
    assert rows["qd32-trim"]["trim_bytes"] == pytest.approx(0.13 * s["span_bytes"], rel=0.01)
    assert rows["qd32-trim"]["host_write_bytes"] == 14 * 2**30


def test_windows_cover_every_command(cleanup_later_run):
    s = summary_of(cleanup_later_run)
    for r in s["variants"]:
        series = results.read_series(cleanup_later_run / f"{r['variant']}-pass1")
        counts = np.diff(np.concatenate([[0], series["commands"]]))
        assert series["commands"][-1] == r["commands"]
        assert (counts[:-1] == 20000).all() and 0 < counts[-1] <= 20000
        # IOPS per window = commands / window time, and the windows tile the replay.
        assert np.allclose(series["iops"], counts / series["dt_s"])
        assert series["t_s"][-1] == pytest.approx(r["duration_s"])
        assert r["iops_mean"] == pytest.approx(r["commands"] / r["duration_s"])
        waf = np.nansum(series["nand_write_bytes"]) / np.nansum(series["host_write_bytes"])
        assert waf == pytest.approx(r["write_amplification"], rel=1e-6)
    overlay = results.read_series(cleanup_later_run / "qd32")
    assert set(overlay) == {"window", "iops_with_trim", "iops_without_trim"}
    for name in ("trace_qd32.png", "trace_qd32.svg", "report.html"):
        assert (cleanup_later_run / name).stat().st_size > 1000
    html = (cleanup_later_run / "report.html").read_text()
    assert "iops_with_trim" in html and "trace replay" in html


def test_replay_is_deterministic(tmp_path):
    def run(out):
        run_cli("trace", "run", "jedec-like", "--target", "sim:default", *set_args(), "--qd", "4", "--trim", "with",
                "--write-bytes", "1GiB", "--window", "5000", "--out", str(out), "--no-progress")
        return results.read_series(out / "qd4-trim-pass1")

    a, b = run(tmp_path / "a"), run(tmp_path / "b")
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


READS_AND_A_TRIM = ("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n0 /dev/x read 0 4096\n"
                    "10 /dev/x read 4096 4096\n20 /dev/x trim 0 4096\n")


def _drive_steps(monkeypatch) -> list[str]:
    """Records every purge and phase a SimTarget starts."""
    steps: list[str] = []
    for name in ("purge", "run_phase"):
        real = getattr(SimTarget, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            steps.append(_name)
            return _real(self, *args, **kwargs)
        monkeypatch.setattr(SimTarget, name, spy)
    return steps


@pytest.mark.parametrize("text, options, says", [
    ("", {}, ["nothing to replay", "0 lines", "the file is empty"]),
    (READS_AND_A_TRIM, {"trim": "without"},
     ["nothing to replay", "6 lines: reads 2, writes 0, TRIMs 1, flushes 0", "--keep-reads", "--trim with"]),
])
def test_a_trace_with_nothing_to_replay_is_refused_before_the_drive_is_touched(tmp_path, monkeypatch, text, options,
                                                                               says):
    """A trace that replays no data command in any variant would only fill the drive (hours
    on a real one): refused, naming the file and what it holds, before any purge or fill."""
    trace = tmp_path / "t.fio"
    trace.write_text(text)
    steps = _drive_steps(monkeypatch)
    params = trace_replay.TraceRunParams(file=str(trace), qds=(4,), **options)
    target = SimTarget(load_profile("default", ["capacity=2GiB"]), seed=1)
    with pytest.raises(UserError) as e:
        trace_replay.run(target, params, tmp_path / "out", progress=False)
    assert str(trace) in str(e.value)
    for s in says:
        assert s in str(e.value)
    assert steps == []
    with pytest.raises(UserError, match="nothing to replay"):  # the dry run says so too
        trace_replay.print_plan(target, params)


def test_a_trace_of_reads_runs_when_its_reads_are_kept(tmp_path, monkeypatch):
    """The same reads, kept, are something to replay: the check does not refuse them."""
    trace = tmp_path / "t.fio"
    trace.write_text(READS_AND_A_TRIM)
    steps = _drive_steps(monkeypatch)
    params = trace_replay.TraceRunParams(file=str(trace), qds=(4,), trim="without", keep_reads=True)
    summary = trace_replay.run(SimTarget(load_profile("default", ["capacity=2GiB"]), seed=1), params,
                               tmp_path / "out", progress=False)
    assert [r["reads"] for r in summary["variants"]] == [2]
    assert steps[:2] == ["purge", "run_phase"]


FAR_READ = ("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n0 /dev/x write 0 8192\n"
            "10 /dev/x read 1099511627776 4096\n20 /dev/x write 8192 4096\n")


@pytest.mark.parametrize("keep_reads", [False, True])
def test_records_beyond_the_span_are_refused_before_the_drive_is_touched_only_if_replayed(tmp_path, monkeypatch,
                                                                                          keep_reads):
    """A read at 1 TiB on a 2 GiB drive: with reads dropped the trace replays (its writes fit);
    with reads kept it is refused, naming the file, the op and its end, before any purge or
    fill (on a real drive the fill alone takes hours)."""
    trace = tmp_path / "t.fio"
    trace.write_text(FAR_READ)
    steps = _drive_steps(monkeypatch)
    params = trace_replay.TraceRunParams(file=str(trace), qds=(4,), trim="without", keep_reads=keep_reads)
    target = SimTarget(load_profile("default", ["capacity=2GiB"]), seed=1)
    if not keep_reads:
        summary = trace_replay.run(target, params, tmp_path / "out", progress=False)
        assert [(r["writes"], r["reads"]) for r in summary["variants"]] == [(2, 0)]
        return
    with pytest.raises(UserError) as e:
        trace_replay.run(target, params, tmp_path / "out", progress=False)
    assert f"{trace}: a read record ends at byte 1,099,511,631,872, beyond the target span" in str(e.value)
    assert "--remap" in str(e.value)
    assert steps == []
    with pytest.raises(UserError, match="beyond the target span"):  # the dry run says so too
        trace_replay.print_plan(target, params)


def test_real_trace_beyond_the_span_is_an_error_naming_file_and_record(tmp_path):
    _need(TPCC)
    proc = run_cli("trace", "run", str(TPCC), *set_args(), "--out", str(tmp_path / "x"), "--no-progress", check=False)
    assert proc.returncode == 2, proc.stderr
    assert str(TPCC) in proc.stderr and "record " in proc.stderr and "--remap" in proc.stderr


def test_real_trace_with_reads_and_scale_remap(tmp_path):
    """The MQSim TPC-C trace (216 GiB span) scaled onto a 7 GiB drive, reads kept: every
    record is replayed, with the op counts `trace info` reports."""
    _need(TPCC)
    out = tmp_path / "tpcc"
    run_cli("trace", "run", str(TPCC), *set_args(), "--remap", "scale", "--keep-reads", "--qd", "32,1",
            "--trim", "without", "--passes", "2", "--window", "1000", "--out", str(out), "--no-progress")
    s = summary_of(out)
    assert [(r["variant"], r["pass"]) for r in s["variants"]] == [("qd32-notrim", 1), ("qd32-notrim", 2),
                                                                  ("qd1-notrim", 1), ("qd1-notrim", 2)]
    for r in s["variants"]:
        assert (r["reads"], r["writes"], r["commands"]) == (4381, 2618, 6999)
        assert r["records_read"] == 6999 and r["records_dropped"] == 0
    qd32, qd1 = s["variants"][0], s["variants"][2]
    assert qd32["iops_mean"] > 1.2 * qd1["iops_mean"], "commands overlap at QD32, not at QD1"


def test_remap_wrap_and_scale_keep_commands_inside_the_span():
    prof = load_profile("default", ["blocks_per_plane=64", "user_capacity_bytes=7GiB"])
    target = SimTarget(prof)
    from ssdlab import _native

    span = 1 << 30
    op = np.array([1, 1, 3, 2], dtype="u1")
    off = np.array([5 * span + 4096, span - 512, 0, 3 * span], dtype="<u8")
    ln = np.array([512, 1024, 0, 8192], dtype="<u8")
    pop, poff, pln, dropped = _native.replay_prepare(op.tobytes(), off.tobytes(), ln.tobytes(), 0, span, remap="wrap")
    poff, pln = np.frombuffer(poff, "<u8"), np.frombuffer(pln, "<u8")
    assert dropped == 0 and list(np.frombuffer(pop, "u1")) == [1, 1, 3, 2]
    assert list(poff) == [4096, span - 8192, 0, 0] and list(pln) == [4096, 8192, 0, 8192]
    with pytest.raises(ValueError, match="record 10: write at offset"):
        _native.replay_prepare(op.tobytes(), off.tobytes(), ln.tobytes(), 0, span, first_record=10)
    _, soff, _, _ = _native.replay_prepare(op.tobytes(), off.tobytes(), ln.tobytes(), 0, span, remap="scale",
                                           trace_span_bytes=8 * span)
    assert list(np.frombuffer(soff, "<u8")) == [5 * span // 8, span // 8 - 4096, 0, 3 * span // 8]
    assert target.capacity_bytes == 7 * 2**30


@pytest.mark.realtime
def test_ctrl_c_keeps_what_was_replayed(tmp_path):
    out = tmp_path / "int"
    interrupt_cli("trace", "run", "jedec-like", *set_args(), "--write-bytes", "600GiB", "--qd", "32", "--trim", "with",
                  "--window", "10000", "--out", str(out), "--no-progress",
                  settle_s=8.0, exit_timeout_s=120)  # past the fill (about a second), into the replay
    s = summary_of(out)
    assert s["complete"] is False and (out / "INCOMPLETE").exists()
    (row,) = s["variants"]
    assert row["complete"] is False and row["commands"] > 10000
    series = results.read_series(out / "qd32-trim-pass1")
    assert series["commands"][-1] == row["commands"]


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path):
    proc = run_cli("trace", "run", "jedec-like", *set_args(), "--passes", "2", "--dry-run", "--out", str(tmp_path / "d"))
    text = proc.stdout
    assert "replay qd32-trim-pass2" in text and "replay qd1-notrim-pass1" in text
    assert "JEDEC-client-like" in text
    assert not (tmp_path / "d").exists()


def test_side_by_side_the_variants_without_trim_start_first_and_are_recorded_in_plan_order(monkeypatch):
    """They take longest (GC copies more): started first, two workers end about when one of
    each kind would, not after two without TRIM one after the other."""
    prof = load_profile("default", ["blocks_per_plane=64", "user_capacity_bytes=7GiB"])
    target = SimTarget(prof)
    params = trace_replay.TraceRunParams(file="jedec-like", passes=2)
    groups = trace_replay._variant_groups(trace_replay.plan(target, params))
    started, recorded = [], []

    def fake_variant(t, group, *args):
        started.append((group[0].name, t is target))
        for step in group[1:]:
            yield step, None, {}

    monkeypatch.setattr(trace_replay, "_run_variant", fake_variant)
    # one worker starts them one after the other, in the order they are handed out
    trace_replay._run_parallel(target, groups, [[i] for i in range(len(groups))], 1, params, 0, 0, {}, False,
                               lambda step, result, counts: recorded.append(step.name))
    # the last started runs on the target itself: its drive is kept, the copies' are freed
    assert started == [("qd32-notrim-fill", False), ("qd1-notrim-fill", False), ("qd32-trim-fill", False),
                       ("qd1-trim-fill", True)]
    assert recorded == [s.name for g in groups for s in g[1:]]
    assert recorded[:3] == ["qd32-trim-pass1", "qd32-trim-pass2", "qd32-notrim-pass1"]


def test_plan_checks_options():
    prof = load_profile("default", ["blocks_per_plane=64", "user_capacity_bytes=7GiB"])
    for params, message in [(dict(remap="fold"), "--remap fold: use error, wrap, scale"),
                             (dict(passes=0), r"--passes 0: must be in \[1, 1000\]"),
                             (dict(window_commands=0), r"--window 0: must be in \[1, \d+\] commands"),
                             (dict(span_pct=0), r"--span 0: must be in \(0, 100\] %"),
                             (dict(qds=()), "--qd"),
                             (dict(file="/nonexistent"), "no such trace file"),
                             (dict(file="/nonexistent", skew="jedec"), "--skew apply to the jedec-like")]:
        with pytest.raises(UserError, match=message):
            trace_replay.plan(SimTarget(prof), trace_replay.TraceRunParams(**{"file": "jedec-like", **params}))


@pytest.mark.parametrize("args, message", [
    (["--passes", "0"], "--passes 0: must be in [1, 1000]"),
    (["--window", "0"], "--window 0: must be in [1, 4294967296] commands"),
    (["--qd", "32,0"], "queue depths must be in [1, 1024]"),
    (["--write-bytes", "1000"], "--write-bytes 1000: must be in [4096, "),
    (["--device", "-1"], "--device -1: must be in [0, 4294967295]"),
])
def test_bad_options_name_the_option_and_its_range(tmp_path, args, message):
    proc = run_cli("trace", "run", "jedec-like", *set_args(), *args, "--out", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "x" / "summary.json").exists()


def test_skip_bad_replays_the_good_lines_and_reports_the_bad(tmp_path):
    trace = tmp_path / "t.iolog"
    lines = ["fio version 3 iolog", "0 /dev/x add", "0 /dev/x open"]
    lines += [f"{i} /dev/x write {i * 8192} 4096" for i in range(300)]
    lines.insert(50, "12 /dev/x write notanumber 4096")
    trace.write_text("\n".join(lines) + "\n")
    bad = run_cli("trace", "run", str(trace), *set_args(), "--qd", "1", "--trim", "with", "--out", str(tmp_path / "a"),
                  "--no-progress", check=False)
    assert bad.returncode == 2 and f"{trace}:51" in bad.stderr, bad.stderr
    ok = run_cli("trace", "run", str(trace), "--skip-bad", *set_args(), "--qd", "1", "--trim", "with",
                 "--out", str(tmp_path / "b"), "--no-progress")
    assert "skipped 1 malformed lines" in ok.stderr
    (row,) = summary_of(tmp_path / "b")["variants"]
    assert row["writes"] == 300 and row["skipped_bad_lines"] == 1
