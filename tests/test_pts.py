"""``ssdlab pts`` on small simulated drives with short rounds: each test's phase sequence
against the spec (rounds, block sizes, mixes, idle states), the whole suite's results folder
and report, resuming after Ctrl-C, and agreement with ``consistency`` (WSAT) and ``sweep`` (TP)."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ssdlab.pts import spec
from ssdlab.pts.journal import NAME as JOURNAL
from ssdlab.results import read_series
from ssdlab.workload import fiojob

from conftest import SMALL_DRIVE, interrupt_cli, run_cli, set_args

SHORT = ["--round-s", "2", "--hir-cycles", "3", "--hir-return-s", "20", "--xsr-hours", "0.02,0.02,0.02",
         "--wsat-capacities", "2", "--no-progress"]


def _groups(text: str):
    w = fiojob.parse_job_text(text, source="test")
    return [g[0] for g in w.groups], w


# ---------------------------------------------------------------------------- sequences
def test_iops_round_is_56_cells_mixes_outer_sizes_large_to_small():
    cells = [(m, b) for m in spec.IOPS_MIXES for b in spec.IOPS_BS]
    first, w = _groups(spec.random_cells_text(cells, 60, 75, 2, 16, "x"))
    assert len(first) == 56
    assert [j.name for j in first[:9]] == [f"r100w0_{b}" for b in spec.IOPS_BS] + ["r95w5_1048576"]
    assert spec.IOPS_BS == (1048576, 131072, 65536, 32768, 16384, 8192, 4096, 512)
    assert spec.IOPS_MIXES == ((100, 0), (95, 5), (65, 35), (50, 50), (35, 65), (5, 95), (0, 100))
    for g in w.groups:  # the client variant: 2 threads x QD16 over 75 % of the LBAs, 60 s
        assert len(g) == 2 and all(j.iodepth == 16 and j.size_pct == 75 and j.runtime_us == 60_000_000 for j in g)


def test_lat_round_is_nine_cells_at_one_thread_qd1():
    cells = [(m, b) for m in spec.LAT_MIXES for b in spec.LAT_BS]
    first, w = _groups(spec.random_cells_text(cells, 60, 100, 1, 1, "x"))
    assert [j.name for j in first] == [f"r{m[0]}w{m[1]}_{b}" for m in ((100, 0), (65, 35), (0, 100))
                                       for b in (8192, 4096, 512)]
    assert all(len(g) == 1 and g[0].iodepth == 1 for g in w.groups)


def test_dirth_grid_runs_high_to_low():
    pts = [(t, q) for t in spec.DIRTH_THREADS for q in spec.DIRTH_QDS]
    first, w = _groups(spec.dirth_text(pts, 60, 100, 8192, 65))
    assert len(first) == 49 and first[0].name == "t32q32" and first[-1].name == "t1q1"
    assert [len(g) for g in w.groups][:8] == [32] * 7 + [16]


def test_hir_access_phase_is_5_s_of_writes_then_the_wait():
    assert spec.HIR_WAITS_S == (5, 10, 15, 25, 50) and spec.HIR_CYCLES == 360 and spec.HIR_RETURN_S == 1800
    (job,), _ = _groups(spec.hir_text("w25_access", 360 * 30, 75, 1, 32, 25))
    assert job.thinktime_us == 25_000_000 and job.thinktime_iotime_us == 5_000_000
    assert job.runtime_us == 360 * 30 * 1_000_000
    (ret,), _ = _groups(spec.hir_text("w25_return", 1800, 75, 1, 32, None))
    assert ret.thinktime_us == 0


def test_xsr_groups_and_hours_option(tmp_path):
    assert [(p, b) for p, b in spec.XSR_GROUPS] == [("write", 1 << 20), ("randwrite", 8192), ("write", 1 << 20)]
    assert spec.XSR_HOURS == (8.0, 6.0, 8.0)
    out = run_cli("pts", "--dry-run", "--out", str(tmp_path / "d"), *set_args(), "--test", "xsr", "--xsr-hours", "6,8,6")
    assert "SEQ 1024 KiB W 6 h; RND 8 KiB W 8 h; SEQ 1024 KiB W 6 h" in out.stdout
    bad = run_cli("pts", "--dry-run", "--out", str(tmp_path / "d"), "--xsr-hours", "8,6", check=False)
    assert bad.returncode != 0 and "--xsr-hours" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli("pts", "--dry-run", "--out", str(tmp_path / "d"), "--test", "iops,foo", check=False)
    assert bad.returncode != 0 and "--test" in bad.stderr and "foo" in bad.stderr


def test_cbw_is_the_jesd219_mix():
    (job,), _ = _groups(spec.ecw_text(60, 100, 4, 32))
    assert job.rwmixread == 40 if hasattr(job, "rwmixread") else True
    text = spec.ecw_text(60, 100, 4, 32)
    assert "bssplit=512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4096/67:8192/10:16384/7:32768/3:65536/3" in text
    assert "random_distribution=zoned:50/5:30/15:20/80" in text


# ---------------------------------------------------------------------------- the suite
@pytest.mark.timeout(600)  # ~60 s on 2 busy cores
def test_whole_suite_on_a_small_simulated_drive(tmp_path):
    out = tmp_path / "pts"
    proc = run_cli("pts", "--out", str(out), *set_args(), *SHORT)
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["test"] == "pts" and not s.get("report_error")
    p = s["pts"]
    assert set(p["results"]) == set(spec.TESTS)
    assert p["active_range_pct"] == 75 and (p["threads"], p["qd"]) == (2, 16)
    assert any("rounds of 2 s" in d for d in p["deviations"])
    for name in ("iops", "lat", "hir", "cbw", "dirth"):
        ss = p["steady_state"][name]
        assert 5 <= ss["rounds"] <= 25 and ss["window"]["last"] - ss["window"]["first"] == 4
        assert ss["reached"] == (ss["window"]["data_ok"] and ss["window"]["slope_ok"])
    m = p["results"]["iops"]["matrix"]
    assert len(m) == 56 and m["r100w0_4096"] > m["r0w100_4096"] > 0
    assert m["r100w0_1048576"] < m["r100w0_512"]
    titles = [t["title"] for t in s["tables"]]
    assert any(t.startswith("IOPS matrix") for t in titles) and "Which source each parameter follows" in titles
    matrix = next(t for t in s["tables"] if t["title"].startswith("IOPS matrix"))
    assert len(matrix["rows"]) == 8 and len(matrix["columns"]) == 8
    lat = p["results"]["lat"]["cells"]
    assert all(c["max_us"] >= c["five_nines_us"] >= c["p99_99_us"] * 0.999 for c in lat.values())
    assert p["results"]["wsat"]["drive_fills"] >= 2 and p["results"]["wsat"]["stopped_by"] == "capacity"
    hir = p["results"]["hir"]["waits"]
    assert set(hir) == {"5", "10", "15", "25", "50"}
    hir_series = read_series(out / "pts_hir.parquet")
    assert (hir_series["iops"] == 0).any()  # the wait states are idle
    assert [g["group"] for g in p["results"]["xsr"]["groups"]] == ["ag1_seq1024k", "ag2_rnd8k", "ag3_seq1024k"]
    d = p["results"]["dirth"]
    assert len(d["points"]) == 49 and d["selected"]["min"] == "t1q1"
    for f in ("report.html", "pts_iops_matrix.png", "pts_wsat.png", JOURNAL):
        assert (out / f).exists(), f
    j = json.loads((out / JOURNAL).read_text())
    assert all(j["tests"][t]["done"] for t in spec.TESTS)
    assert "IOPS:" in proc.stdout and "DIRTH:" in proc.stdout


@pytest.mark.realtime
def test_resume_after_ctrl_c_gives_the_uninterrupted_results(tmp_path):
    args = [*set_args(), "--test", "iops,lat", "--round-s", "2", "--max-rounds", "8", "--no-progress"]
    whole = tmp_path / "whole"
    run_cli("pts", "--out", str(whole), *args)
    cut = tmp_path / "cut"

    def lat_started():
        try:
            j = json.loads((cut / JOURNAL).read_text())
        except (OSError, ValueError):
            return False
        return "lat" in j["tests"] and "round_1" in j["tests"]["lat"]["steps"]
    _, err = interrupt_cli("pts", "--out", str(cut), *args, ready=lat_started, settle_s=0.05)
    assert "--resume" in err and "Traceback" not in err
    before = json.loads((cut / JOURNAL).read_text())
    assert before["tests"]["iops"]["done"] and not before["tests"].get("lat", {}).get("done")
    run_cli("pts", "--out", str(cut), *args, "--resume")
    a = json.loads((whole / "summary.json").read_text())["pts"]["results"]
    b = json.loads((cut / "summary.json").read_text())["pts"]["results"]
    assert a["iops"]["matrix"] == b["iops"]["matrix"]
    assert a["lat"]["cells"] == b["lat"]["cells"]
    other = run_cli("pts", "--out", str(cut), *args, "--resume", "--variant", "enterprise", check=False)
    assert other.returncode != 0 and "--resume" in other.stderr and "variant" in other.stderr


def test_wsat_agrees_with_consistency(tmp_path):
    """Same drive, 4 KiB random writes at 32 outstanding over the whole span: WSAT's last
    samples approach consistency's steady state from above (WSAT starts from a purged drive
    without consistency's sequential fill, so its mapping settles more slowly: after 5 drive
    fills it is within 20 %)."""
    run_cli("pts", "--out", str(tmp_path / "p"), *set_args(), "--test", "wsat", "--variant", "enterprise",
            "--threads", "1", "--qd", "32", "--round-s", "10", "--wsat-capacities", "5", "--no-progress")
    run_cli("consistency", "--out", str(tmp_path / "c"), *set_args(), "--duration", "600", "--no-progress")
    wsat = read_series(tmp_path / "p" / "pts_wsat.parquet")
    cons = read_series(tmp_path / "c" / "series.parquet")
    w = float(np.mean(wsat["iops"][-10:]))
    c = float(np.mean(cons["iops"][-200:]))
    assert w == pytest.approx(c, rel=0.20), (w, c)
    assert w >= 0.95 * c
    assert wsat["iops"][0] > 3 * c  # fresh out of the box


def test_tp_agrees_with_sweep(tmp_path):
    """Sequential 1024 KiB at QD32: TP's steady MB/s and a sweep's mean MB/s, read and write."""
    run_cli("pts", "--out", str(tmp_path / "p"), *set_args(), "--test", "tp", "--round-s", "2", "--no-progress")
    run_cli("sweep", "--out", str(tmp_path / "s"), *set_args(), "--bs", "1MiB", "--qd", "32", "--no-progress")
    tp = json.loads((tmp_path / "p" / "summary.json").read_text())["pts"]["results"]["tp"]
    sw = json.loads((tmp_path / "s" / "summary.json").read_text())
    assert tp["1024k_read"]["mbps"] == pytest.approx(sw["read_mbps_mean"], rel=0.15)
    assert tp["1024k_write"]["mbps"] == pytest.approx(sw["write_mbps_mean"], rel=0.15)


@pytest.mark.realtime
@pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")
@pytest.mark.timeout(600)  # ~65 s on 2 busy cores
def test_pts_on_a_loop_device_end_to_end(tmp_path, loops_ok):
    out = tmp_path / "loop"
    # WSAT ends by its time limit alone (3 rounds of 1 s): a loop device faster than ~125 K
    # IOPS writes its default 4 capacities in 2.
    run_cli("pts", "--target", "loop:256MB", "--test", "tp,wsat", "--round-s", "1", "--max-rounds", "5",
            "--wsat-max-s", "3", "--wsat-capacities", "100", "--no-progress", "--out", str(out), timeout=600)
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and any("rounds of 1 s" in d for d in s["pts"]["deviations"])
    tp = s["pts"]["results"]["tp"]
    assert set(tp) == {"1024k_write", "1024k_read", "128k_write", "128k_read"}
    assert all(v["mbps"] > 0 for v in tp.values())
    assert s["pts"]["results"]["wsat"]["samples"] >= 3
    assert (out / "report.html").exists()


# ---------------------------------------------------------------------------- drive states
_BIG_SPARE = ["--set", "blocks_per_plane=64", "--set", "user_capacity_bytes=3GiB"]


def test_steady_state_window_starts_once_the_drive_collects_garbage(tmp_path):
    """After the WIPC a drive writes into the spare blocks its sequential overwrites freed: on a
    drive with 5 GiB of spare, DIRTH's 32 x 32 and CBW/ECW run their first 10 s rounds at a flat
    IOPS without a single GC copy (the simulated 256 GB drive does the same for 5 one-minute
    rounds). Such rounds are not the drive's steady state: the window starts at the first
    round with copies, and DIRTH's points then rise with outstanding IOs until the drive
    saturates."""
    out = tmp_path / "p"
    run_cli("pts", "--out", str(out), *_BIG_SPARE, "--test", "dirth,cbw", "--round-s", "10", "--no-progress")
    s = json.loads((out / "summary.json").read_text())["pts"]
    steps = json.loads((out / JOURNAL).read_text())["tests"]
    for test, prefix, cell in (("dirth", "pc_", "t32q32"), ("cbw", "", "ecw")):
        ss = s["steady_state"][test]
        recs = [steps[test]["steps"][f"{prefix}round_{k}"][cell] for k in range(1, ss["rounds"] + 1)]
        copied = [r["gc_copied_bytes"] for r in recs]
        assert copied[:2] == [0] * 2, copied  # the case at hand: flat rounds without GC first
        first_gc = next(i for i, c in enumerate(copied, start=1) if c > 0)
        assert ss["reached"] and ss["windows_from_round"] == first_gc
        assert all(c > 0 for c in copied[ss["window"]["first"] - 1:ss["window"]["last"]]), (test, copied)
    pts = s["results"]["dirth"]["points"]
    by_out = sorted(pts.values(), key=lambda p: p["threads"] * p["qd"])
    top = max(p["iops"] for p in by_out)
    assert by_out[0]["iops"] < 0.8 * top  # 1 x 1 is not saturated
    assert np.median([p["iops"] for p in by_out if p["threads"] * p["qd"] >= 8]) > 1.1 * by_out[0]["iops"]
    # one drive state across the grid: 32x the outstanding IOs may find more parallel reads,
    # not the 19x of a grid that began before GC and went on after it
    assert 0.75 < pts["t32q32"]["iops"] / pts["t1q32"]["iops"] < 4


def test_iops_matrix_4k_write_cell_matches_a_plain_random_write_run(tmp_path):
    """The IOPS matrix's 4 KiB 0/100 cell at steady state and the same workload alone (WIPC,
    then RND 4 KiB W over 75 % at 2 x QD16) on the same drive: same IOPS within 25 %."""
    run_cli("pts", "--out", str(tmp_path / "p"), *set_args(), "--test", "iops", "--round-s", "10", "--no-progress")
    cell = json.loads((tmp_path / "p" / "summary.json").read_text())["pts"]["results"]["iops"]["matrix"]["r0w100_4096"]
    job = tmp_path / "plain.fio"
    job.write_text("[fill]\nrw=write\nbs=128k\niodepth=32\nloops=2\n\n"
                   + spec.random_cells_text([((0, 100), 4096)], 300, 75, 2, 16, "plain").split("\n", 1)[1])
    run_cli("run", str(job), "--out", str(tmp_path / "r"), *set_args(), "--no-progress")
    ser = read_series(tmp_path / "r" / "series.parquet")
    plain = float(np.mean(np.asarray(ser["write_iops"])[np.asarray(ser["group"]) == 2][-120:]))
    assert cell == pytest.approx(plain, rel=0.25), (cell, plain)


def test_hir_access_phase_first_writes_last_5_s(tmp_path):
    """HIR's access phase as the simulator runs it on a fresh drive: 5 s of writes, then the
    drive idles for the wait, and so on."""
    job = tmp_path / "hir.fio"
    job.write_text(spec.hir_text("w5_access", 20, 75, 2, 16, 5))
    run_cli("run", str(job), "--out", str(tmp_path / "r"), *set_args(), "--interval", "0.1", "--no-progress")
    ser = read_series(tmp_path / "r" / "series.parquet")
    idle = np.asarray(ser["t_s"])[np.asarray(ser["write_iops"]) == 0]
    assert idle[0] == pytest.approx(5.0, abs=0.2), idle[:5]
