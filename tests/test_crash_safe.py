"""Runs killed outright (SIGKILL: what a crash or a power loss leaves) stay readable: the
intervals finished before the kill are in the results folder's journal, and ``ssdlab report``
and ``ssdlab compare`` show the run marked incomplete with them. On the simulator they are
the very values an uninterrupted run with the same seed gives."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ssdlab.results import read_series

from conftest import run_cli, set_args


def _journal_rows(folder: Path, phase: str) -> int:
    """Whole interval rows in the journal of ``phase`` so far (0 if none yet)."""
    rows = 0
    for p in (folder / "journal").glob(f"*-{phase}.jsonl"):
        for line in p.read_text().split("\n")[1:-1]:
            rows += line.startswith("[")
    return rows


def _start_and_kill(args: list[str], out: Path, phase: str, rows: int, timeout_s: float = 120) -> int:
    """Starts ``ssdlab ARGS``, waits until the journal of ``phase`` holds at least ``rows``
    intervals, SIGKILLs it; returns the rows seen just before the kill."""
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline and proc.poll() is None:
            seen = _journal_rows(out, phase)
            if seen >= rows:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the run ended before it was killed:\n{proc.stderr.read()}"
        assert seen >= rows, f"no {phase} intervals in {out / 'journal'} after {timeout_s} s"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not (out / "summary.json").exists()
    return seen


def _check_readable(out: Path, tmp_path: Path) -> dict[str, np.ndarray]:
    """``ssdlab report`` and ``ssdlab compare`` succeed on the killed folder and say it is
    incomplete; returns the series they show."""
    rep = run_cli("report", str(out), "--out", str(tmp_path / "report.html"))
    html = (tmp_path / "report.html").read_text()
    assert "Incomplete run: killed" in html, html[:2000]
    assert "series rebuilt from the journal" in html
    cmp = run_cli("compare", str(out), "--out", str(tmp_path / "cmp"))
    assert f"{out}: incomplete: killed" in cmp.stdout, cmp.stdout
    assert "series rebuilt from the journal" in cmp.stdout
    assert "(incomplete)" in cmp.stdout
    assert "IOPS mean" in cmp.stdout
    assert rep.returncode == cmp.returncode == 0
    from ssdlab import report

    summary, series = report.read_run(out)
    assert summary["complete"] is False
    assert series is not None
    return series


def _same_prefix(got: dict, ref: dict, n: int) -> None:
    for col, want in ref.items():
        if col == "group":  # run's column naming the group, added when the groups are combined
            continue
        assert col in got, f"column {col} missing from the rebuilt series"
        assert np.array_equal(np.asarray(got[col][:n], dtype=np.float64), np.asarray(want[:n], dtype=np.float64),
                              equal_nan=True), col


def test_consistency_killed_mid_phase_reads_back_exactly(tmp_path):
    out = tmp_path / "killed"
    seen = _start_and_kill(["consistency", *set_args(), "--duration", "100000", "--seed", "7", "--out", str(out),
                            "--no-progress"], out, "randwrite", rows=2)
    series = _check_readable(out, tmp_path)
    assert len(series["t_s"]) >= seen
    # The same seed uninterrupted: the killed run's intervals are its first ones, bit for bit.
    ref_dir = tmp_path / "ref"
    run_cli("consistency", *set_args(), "--duration", "4000", "--seed", "7", "--out", str(ref_dir), "--no-progress")
    ref = read_series(ref_dir / "series")
    n = min(len(series["t_s"]), len(ref["t_s"]))
    assert n >= min(seen, len(ref["t_s"]))
    _same_prefix(series, ref, n)
    from ssdlab import journal, report

    summary, _ = report.read_run(out)
    assert summary["test"] == "consistency" and summary["seed"] == 7 and summary["target"] == "sim:default"
    # The fill had ended and was written as a series; its journal holds the same rows.
    fill = read_series(ref_dir / "fill")
    rebuilt = journal.rebuild(out)
    assert [p.name for p in rebuilt.phases] == ["fill", "randwrite"]
    _same_prefix(rebuilt.phases[0].series, fill, len(fill["t_s"]))
    assert rebuilt.phases[0].rows == len(fill["t_s"]) and rebuilt.phases[0].complete


def test_run_killed_mid_group_reads_back_exactly(tmp_path):
    out = tmp_path / "killed"
    job = ["--name=w", "--rw=randwrite", "--bs=4k", "--iodepth=32", "--time_based"]
    seen = _start_and_kill(["run", *job, "--runtime=100000", *set_args(), "--seed", "3", "--out", str(out),
                            "--no-progress"], out, "w", rows=2)
    series = _check_readable(out, tmp_path)
    assert len(series["t_s"]) >= seen
    ref_dir = tmp_path / "ref"
    run_cli("run", *job, "--runtime=3000", *set_args(), "--seed", "3", "--out", str(ref_dir), "--no-progress")
    ref = read_series(ref_dir / "series")
    n = min(len(series["t_s"]), len(ref["t_s"]))
    assert n >= min(seen, len(ref["t_s"]))
    _same_prefix(series, ref, n)


def _fio_pids(marker: str) -> list[int]:
    """fio processes whose command line names a file under ``marker`` (ours)."""
    pids = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(p / "cwd")
        except OSError:
            continue
        if cmd and os.path.basename(cmd[0].decode(errors="replace")) == "fio" and cwd.startswith(marker):
            pids.append(int(p.name))
    return pids


@pytest.mark.realtime
@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_file_target_killed_mid_phase_is_readable(tmp_path):
    data = tmp_path / "target.img"
    with open(data, "wb") as f:
        f.truncate(64 * 1024 * 1024)
    out = tmp_path / "killed"
    try:
        seen = _start_and_kill(["consistency", "--target", f"file:{data}", "--duration", "120", "--out", str(out),
                                "--no-progress"], out, "randwrite", rows=2, timeout_s=120)
        # fio is told of its parent's death (SIGTERM) and exits; wait for it, then make sure.
        deadline = time.monotonic() + 30
        while _fio_pids(str(out)) and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        for pid in _fio_pids(str(out)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    series = _check_readable(out, tmp_path)
    assert len(series["t_s"]) >= seen
    assert np.all(series["iops"] >= 0) and np.nanmax(series["iops"]) > 0
    assert "write_lat_p99_us" in series
    assert float(series["t_s"][-1]) < 120
    head = json.loads((out / "journal" / "head.json").read_text())
    assert head["test"] == "consistency" and head["target"] == f"file:{data}"
