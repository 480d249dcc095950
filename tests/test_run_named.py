"""``ssdlab run NAME``: the built-in workloads through the run command, on the simulator and
(record) on a loop device; their options, tables and errors."""
from __future__ import annotations

import json
import os

import pytest

from conftest import run_cli, set_args
from ssdlab.workload import named, record

needs_loop = pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")


def test_list_names_every_workload():
    out = run_cli("run", "--list").stdout
    for name in named.NAMED:
        assert out.count(f"\n{name} ") + out.startswith(f"{name} ") == 1, out


def test_cdm_table(tmp_path):
    out = tmp_path / "cdm"
    proc = run_cli("run", "cdm", "--size", "64MiB", "--runtime", "1", "--interval-time", "0", "--ramp", "0",
                   *set_args(), "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    rows = {r["test"]: r for r in s["table"]}
    assert list(rows) == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    by_name = {g["name"]: g for g in s["groups"]}
    g = by_name["RND4K_Q32T1_read"]["directions"]["read"]
    assert rows["RND4K Q32T1"]["read_mbps"] == pytest.approx(g["mbps_mean"], rel=1e-9)
    # deeper queues are not slower, on a drive with parallel dies
    assert rows["RND4K Q32T1"]["read_iops"] > 2 * rows["RND4K Q1T1"]["read_iops"]
    assert "SEQ1M Q8T1" in proc.stdout


def test_named_workload_options_are_checked(tmp_path):
    proc = run_cli("run", "cdm", "--size", "-1", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "--size" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("run", "jesd219", "--bogus", "1", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "unknown option --bogus" in proc.stderr and "--small-writes" in proc.stderr


def test_jesd219_with_small_writes_as_4k(tmp_path):
    out = tmp_path / "j"
    run_cli("run", "jesd219", "--small-writes", "as-4k", "--runtime", "2", *set_args(), "--fill",
            "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    w = s["groups"][0]["directions"]["write"]
    assert w["ios"] > 0 and "read" not in s["groups"][0]["directions"]
    # the size mix's mean, 4 KiB for the 10 % below 4 KiB: bytes per IO matches the split
    split = dict(named.jesd219_split("as-4k"))
    mean = sum(b * pct for b, pct in split.items()) / sum(split.values())
    assert w["bytes"] / w["ios"] == pytest.approx(mean, rel=0.03)


def _record_args(target: str) -> list[str]:
    return ["run", "record", "--records", "16KiB,1MiB,4MiB", "--time-steps", "12", "--read-pct", "50",
            "--target", target]


def _check_record(s: dict) -> None:
    p = record.RecordParams(record_bytes=(16 * 1024, 1 << 20, 4 << 20), time_steps=12, read_pct=50)
    want = record.totals(p)
    d = s["groups"][0]["directions"]
    assert s["complete"] and s["commands"] == want["commands"]
    assert d["read"]["bytes"] == want["read_bytes"] and d["write"]["bytes"] == want["write_bytes"]


def test_record_on_the_simulator(tmp_path):
    out = tmp_path / "r"
    run_cli(*_record_args("sim:default"), *set_args(), "--out", str(out), "--no-progress")
    _check_record(json.loads((out / "summary.json").read_text()))


@pytest.mark.realtime
@needs_loop
def test_record_on_a_loop_device(tmp_path):
    out = tmp_path / "r"
    run_cli(*_record_args("loop:128MB"), "--out", str(out), "--no-progress")
    _check_record(json.loads((out / "summary.json").read_text()))


def test_record_layout_must_fit(tmp_path):
    proc = run_cli("run", "record", "--records", "100MiB", "--time-steps", "100", *set_args(),
                   "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2 and "layout needs" in proc.stderr


def test_jesd219_small_writes_cost_a_read_modify_write(tmp_path):
    """On a full drive each write below 4 KiB (4 KiB-aligned, as the workload aligns them)
    covers one mapping unit partly: one NAND read of that unit, then the whole unit is
    programmed. So RMW reads = sub-4 KiB writes, which are 10 % of the mix."""
    got = {}
    for mode in ("standard", "as-4k"):
        out = tmp_path / mode
        run_cli("run", "jesd219", "--small-writes", mode, "--runtime", "2", *set_args(), "--fill",
                "--out", str(out), "--no-progress")
        s = json.loads((out / "summary.json").read_text())
        got[mode] = (s["counters"]["rmw_reads"], s["groups"][0]["directions"]["write"]["ios"])
    rmw, ios = got["standard"]
    small = sum(pct for b, pct in named.jesd219_split("standard") if b < 4096) / 100
    assert rmw == pytest.approx(small * ios, rel=0.05)
    assert got["as-4k"][0] == 0


def test_record_compressible_vs_incompressible_on_a_compressing_drive(tmp_path):
    """A drive storing 4 KiB units in 1 KiB NAND slots (compression_ratio 4): a 4 KiB unit of
    random data takes 4 slots, one 75 % compressible (1 KiB of data left) takes 1. On a
    fresh drive (no GC) the NAND bytes of the records differ exactly by that, and writing
    fewer NAND pages is faster."""
    got = {}
    for pct in (0, 75):
        out = tmp_path / f"c{pct}"
        run_cli("run", "record", "--records", "16KiB,1MiB,4MiB", "--time-steps", "20", "--read-pct", "0",
                "--compress-pct", str(pct), *set_args(), "--set", "compression_ratio=4", "--out", str(out),
                "--no-progress")
        s = json.loads((out / "summary.json").read_text())
        got[pct] = (s["host_write_bytes"], s["nand_write_bytes"], s["groups"][0]["directions"]["write"]["mbps_mean"])
    (host0, nand0, mbps0), (host75, nand75, mbps75) = got[0], got[75]
    assert host0 == host75 and nand0 == host0
    assert nand75 == host75 // 4
    assert mbps75 > 1.3 * mbps0
