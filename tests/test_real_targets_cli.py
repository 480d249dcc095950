"""The consistency command on real block devices (loop devices, through fio), as a user runs
it: results folder, fio job files kept, dry run, safety gate on the command line.
Needs root and loop devices; fails (not skips) without them unless SSDLAB_NO_LOOP=1."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from ssdlab.results import read_series

from conftest import loops_backed_in, run_cli

pytestmark = [pytest.mark.realtime,
              pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")]


def _scratch(tmp_path) -> tuple[Path, dict]:
    """A directory of the run's own for its loop devices' backing files and temporary files,
    and the environment that points the command there."""
    d = tmp_path / "scratch"
    d.mkdir()
    return d, {"SSDLAB_LOOP_DIR": str(d), "TMPDIR": str(d)}


def test_consistency_on_a_loop_device_end_to_end(tmp_path):
    scratch, env = _scratch(tmp_path)
    out = tmp_path / "loop"
    run_cli("consistency", "--target", "loop:128MB", "--duration", "3", "--out", str(out), "--no-progress", env=env)
    s = json.loads((out / "summary.json").read_text())
    assert s["target"] == "loop:128MB" and s["complete"] is True
    assert s["purge"]["method"] == "blkdiscard"
    series = read_series(out / "series.parquet")
    assert len(series["iops"]) == 3 and min(series["iops"]) > 0
    assert s["iops_mean"] > 1000
    assert s["write_amplification"] is None  # a loop device has no NAND counters
    kept = {p.name for p in (out / "fio").iterdir()}
    assert any(n.endswith(".fio") for n in kept) and any(n.endswith(".json") for n in kept)
    # the engine fio ran the phases with, as their job files say
    engines = {m for p in (out / "fio").glob("*.fio") for m in re.findall(r"^ioengine=(\w+)", p.read_text(), re.M)}
    assert len(engines) == 1 and s["target_info"]["ioengine"] == engines.pop()
    assert not loops_backed_in(scratch), "the loop device must be removed after the run"
    assert not list(scratch.iterdir())


def test_dry_run_prints_fio_jobs_and_creates_nothing(tmp_path):
    scratch, env = _scratch(tmp_path)
    proc = run_cli("consistency", "--target", "loop:64MB", "--duration", "3", "--out", str(tmp_path / "d"), "--dry-run",
                   env=env)
    assert "rw=randwrite" in proc.stdout and "iodepth=32" in proc.stdout and "direct=1" in proc.stdout
    assert not (tmp_path / "d").exists()
    assert not loops_backed_in(scratch) and not list(scratch.iterdir())  # not even an empty temporary folder


def test_gate_refuses_a_device_with_a_filesystem_unless_named_in_destroy_flag(tmp_path):
    img = tmp_path / "fs.img"
    with open(img, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True, check=True).stdout.strip()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        refused = run_cli("consistency", "--target", dev, "--duration", "1", "--out", str(tmp_path / "r"), check=False)
        assert refused.returncode == 2
        assert dev in refused.stderr and "--destroy-data" in refused.stderr and "ext4" in refused.stderr
        wrong = run_cli("consistency", "--target", dev, "--destroy-data", "/dev/loop999", "--duration", "1",
                        "--out", str(tmp_path / "w"), check=False)
        assert wrong.returncode == 2
        run_cli("consistency", "--target", dev, "--destroy-data", dev, "--duration", "1", "--out", str(tmp_path / "ok"),
                "--no-progress")
        assert json.loads((tmp_path / "ok" / "summary.json").read_text())["complete"] is True
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
