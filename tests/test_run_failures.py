"""Every way a run fails is one error (exit status 2, no traceback) and a true results folder:
fio refusing to run (a mounted device) or completing no IO fails the phase, named with fio's
own line; a full disk under ``--out`` names the file, the free space and what was needed, and
the folder's INCOMPLETE marker says so (``ssdlab compare`` and ``ssdlab report`` show it); a
run refused before it starts leaves no results folder, and an earlier one as it was."""
from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from html import escape as html_escape
from pathlib import Path

import numpy as np
import pytest

from conftest import mounted, require_loops, run_cli, set_args, stand_in_fio
from ssdlab import cli, fio_logs, journal, results
from ssdlab.targets import fio as fio_target
from ssdlab.targets.base import JobSpec

MiB = 1 << 20


@pytest.fixture
def mounted_loop(tmp_path):
    """A 64 MiB loop device (``/dev/loopN``) that the mount table lists as mounted at
    tmp_path/mnt: a tmpfs whose source is named after the device. fio reads the mount table
    and refuses it; the kernel does not claim the device, so the run can hold it and reach
    fio once --destroy-data overrides the mount (a real mount is refused before fio runs:
    the device cannot be held, see test_a_really_mounted_device_cannot_be_held)."""
    require_loops(("fio", "losetup", "mount", "umount"))
    with _loop_device(tmp_path) as dev, mounted(["-t", "tmpfs", dev], tmp_path / "mnt"):
        yield dev


@contextlib.contextmanager
def _loop_device(tmp_path: Path):
    """A 64 MiB loop device over a sparse file in ``tmp_path``, detached afterwards."""
    img = tmp_path / "dev.img"
    with open(img, "wb") as f:
        f.truncate(64 * MiB)
    dev = subprocess.run(["losetup", "-f", "--show", str(img)], capture_output=True, text=True, check=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], capture_output=True)


@pytest.mark.realtime
def test_a_really_mounted_device_cannot_be_held(tmp_path):
    require_loops(("losetup", "mkfs.ext4", "mount", "umount"))
    with _loop_device(tmp_path) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True, capture_output=True)
        with mounted([dev], tmp_path / "mnt"):
            out = tmp_path / "out"
            proc = run_cli("consistency", "--target", dev, "--destroy-data", dev, "--purge", "none", "--duration", "1",
                           "--out", str(out), "--no-progress", check=False)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr
            assert f"refusing to write to {dev}: it cannot be held exclusively for the run" in proc.stderr
            assert not out.exists()


def small_tmpfs(tmp_path: Path, size: str):
    """A tmpfs of ``size`` (mount's units: 2m) at tmp_path/small-SIZE."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    return mounted(["-t", "tmpfs", "-o", f"size={size}", "tmpfs"], tmp_path / f"small-{size}")


def _fill(folder: Path) -> None:
    """Fills the filesystem of ``folder`` to the last byte."""
    with open(folder / "filler", "wb", buffering=0) as f:
        for chunk in (b"\0" * 65536, b"\0"):
            with contextlib.suppress(OSError):
                while f.write(chunk):
                    pass


def _shows_cause(out: Path, cause: str, tmp_path: Path) -> None:
    """``ssdlab compare`` and ``ssdlab report`` (page and terminal) name ``cause`` as why the
    run in ``out`` is incomplete, and neither calls it killed."""
    compare = run_cli("compare", str(out))
    assert f"{out}: incomplete: failed: " in compare.stdout and cause in compare.stdout, compare.stdout
    page = tmp_path / "report.html"
    report = run_cli("report", str(out), "--out", str(page))
    assert f"{out}: incomplete: failed: " in report.stdout and cause in report.stdout, report.stdout
    html = page.read_text()
    assert "Incomplete run: failed: " in html and html_escape(cause) in html
    assert "killed" not in compare.stdout + report.stdout


# ============================================================================ fio refuses


@pytest.mark.parametrize("test", [
    ["consistency", "--duration", "3"],
    ["sweep", "--zones", "2", "--zone-bytes", "1MiB"],
], ids=["consistency", "sweep"])
@pytest.mark.realtime
def test_fio_refusing_a_mounted_device_fails_the_phase(mounted_loop, tmp_path, test):
    """fio exits 0 after "appears mounted ... Aborting": the run fails at its first phase,
    which the journal keeps as not complete, and the message names phase, job file and fio's line."""
    out = tmp_path / "r"
    proc = run_cli(*test, "--target", mounted_loop, "--destroy-data", mounted_loop, "--purge", "none",
                   "--out", str(out), "--no-progress", check=False)
    err = proc.stderr
    assert proc.returncode == 2, err
    assert "Traceback" not in err
    phase = "fill" if test[0] == "consistency" else "sweep_write_000"
    # A sweep's zones run back to back in one fio run: its job file holds them all.
    job_file = "001_fill.fio" if test[0] == "consistency" else "001_sweep_write_000..sweep_read_001.fio"
    line = f"fio: {mounted_loop} appears mounted, and 'allow_mounted_write' isn't set. Aborting"
    assert f"fio failed on {mounted_loop} in phase '{phase}' (exit 0, it refused to run): {line}" in err
    assert job_file in err and f"Unmount {mounted_loop}" in err
    reason = results.incomplete_reason(out)
    assert reason.startswith(f"failed: fio failed on {mounted_loop} in phase '{phase}'") and line in reason
    phases = journal.rebuild(out).phases
    assert [p.name for p in phases] == [phase] and phases[0].ended and phases[0].complete is False
    assert results.read_summary(out)["complete"] is False
    _shows_cause(out, line, tmp_path)


FAKE_FIO = r'''#!{python}
"""A stand-in for fio: answers the io_uring probe, then runs every job file as fio would if
the device completed nothing: a JSON report of 0 IOs and exit status 0."""
import json, sys
args = sys.argv[1:]
if "--version" in args:
    print("fio-3.33")
    sys.exit(0)
report = {{"fio version": "fio-3.33", "jobs": [{{"jobname": "j", "error": 0, "job_runtime": 1000,
          "read": {{"total_ios": 0, "io_bytes": 0}}, "write": {{"total_ios": 0, "io_bytes": 0}},
          "trim": {{"total_ios": 0, "io_bytes": 0}}}}]}}
out = [a.split("=", 1)[1] for a in args if a.startswith("--output=")]
if out:
    open(out[0], "w").write(json.dumps(report))
else:
    print(json.dumps(report))
'''


@pytest.mark.realtime
def test_a_phase_that_completes_no_io_fails(tmp_path):
    t = stand_in_fio(tmp_path, FAKE_FIO)
    data = tmp_path / "t.img"
    r = t.run_phase(JobSpec("w", "randwrite", bs_bytes=4096, qd=1, duration_s=1.0))
    assert not r.complete
    assert r.error.startswith(f"fio failed on file:{data} in phase 'w' (exit 0, it completed no IO)")
    assert "001_w.fio" in r.error


def test_fio_error_lines_are_told_from_its_warnings():
    """The checker of fio's messages: refusals and errors count, warnings and fio's word on a
    signal do not."""
    errors = ["fio: /dev/loop3 appears mounted, and 'allow_mounted_write' isn't set. Aborting.",
              "fio: pid=123, err=5/file:io_u.c:1889, func=io_u error, error=Input/output error",
              "fio: io_u error on file /dev/sdx: No space left on device: write offset=0, buflen=4096",
              "fio: looks like your file system does not support direct=1/buffered=0",
              "fio: failed parsing bs=4q"]
    warnings = ["fio: terminating on signal 2", "fio: fadvise hint failed",
                "fio: Switching to tausworthe64. Use the random_generator= option to get rid of this warning.",
                "fio: only root may flush block devices. Cache flush bypassed!",
                "fio: file /x failed allocating random map. Running job without.",
                "Run status group 0 (all jobs):", "  WRITE: bw=1MiB/s"]
    text = "\n".join(warnings[:3] + errors + [errors[0]] + warnings[3:])
    assert fio_target.fio_error_lines(text) == errors
    assert fio_target.fio_error_lines("\n".join(warnings)) == []


def test_a_phase_done_within_a_millisecond_has_its_ios():
    """fio says job_runtime 0 for a job done within a ms (its direction's runtime says 1):
    the phase lasts that ms and its IOs are in its one interval (a 1 MiB zone of a sweep
    read back from a page cache-fast device)."""
    data = {"jobs": [{"job_runtime": 0, "read": {"runtime": 1, "total_ios": 8, "io_bytes": MiB}}]}
    totals, _, _ = fio_target._summarize(data)
    assert totals["duration_s"] == 0.001 and totals["ios"] == 8
    grid = fio_logs.Grid(interval_s=1.0, window_ms=1000)
    grid.add_tail("read", 8, 0.0, 131072)  # and from a log-less job with no runtime at all
    series = grid.series(131072)
    assert series["iops"] * series["dt_s"] == pytest.approx([8.0])


# ============================================================================ a full disk


def test_a_full_disk_under_out_is_an_error_naming_the_file(tmp_path):
    with small_tmpfs(tmp_path, "2m") as small:
        out = small / "r"
        proc = run_cli("consistency", *set_args(), "--duration", "30", "--interval", "0.01", "--out", str(out),
                       "--no-progress", check=False)
        err = proc.stderr
        assert proc.returncode == 2, err
        assert "Traceback" not in err
        assert f"ssdlab: error: cannot write {out}/" in err and "No space left on device" in err
        assert f"MiB free on the filesystem of {out}" in err and "it needs " in err
        reason = results.incomplete_reason(out)
        if reason == "in progress":  # allowed only if the error says the marker could not be written
            assert "INCOMPLETE marker could not be updated" in err
        else:
            assert reason.startswith(f"failed: cannot write {out}/") and "No space left on device" in reason
            _shows_cause(out, "No space left on device", tmp_path)


def test_report_onto_a_full_disk_is_an_error(tmp_path):
    run = tmp_path / "run"
    run_cli("consistency", *set_args(), "--duration", "2", "--out", str(run), "--no-progress")
    with small_tmpfs(tmp_path, "256k") as small:
        page = small / "sub" / "report.html"
        _fill(small)
        proc = run_cli("report", str(run), "--out", str(page), check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert f"ssdlab: error: cannot write {page}: No space left on device (" in proc.stderr
        assert "MiB free" in proc.stderr and "it needs about" in proc.stderr
        assert not page.exists() and not list(page.parent.glob(".report.html.*"))  # no half-written page


def test_on_a_full_disk_the_marker_still_gets_the_cause(tmp_path):
    """No new file fits: the INCOMPLETE marker is rewritten in place and the summary is left."""
    with small_tmpfs(tmp_path, "64k") as small:
        rd = results.ResultsDir(small / "r")
        results.write_summary(rd.path, {"test": "x", "ssdlab_version": "0"})
        _fill(small)
        rd.mark_incomplete("failed: the drive vanished")
        assert results.incomplete_reason(rd.path) == "failed: the drive vanished"
        assert "complete" not in results.read_summary(rd.path)


def test_a_journal_that_cannot_be_written_warns_once(tmp_path, capsys):
    with small_tmpfs(tmp_path, "64k") as small:
        j1 = journal.PhaseJournal(small / "journal", "fill", "test")
        j2 = journal.PhaseJournal(small / "journal", "rw", "test")
        _fill(small)
        rows = {"t_s": np.arange(5000.0), "iops": np.ones(5000)}
        j1.append(rows)
        j2.append(rows)
        assert "No space left on device" in j1.error and "No space left on device" in j2.error
        err = capsys.readouterr().err
        assert err.count("ssdlab: warning: cannot write") == 1 and str(j1.path) in err and "MiB free" in err


def test_a_marker_that_cannot_be_written_either_is_said(tmp_path, monkeypatch, capsys):
    """The series cannot be written, nor then the INCOMPLETE marker: the error says the marker
    still says "in progress"."""
    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "somewhere")

    monkeypatch.setattr(results.ResultsDir, "write_series", full)
    monkeypatch.setattr(results, "mark_incomplete", full)
    out = tmp_path / "r"
    code = cli.main(["consistency", *set_args(), "--duration", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("ssdlab: error: cannot write somewhere: No space left on device")
    assert "Its INCOMPLETE marker could not be updated either" in err and "in progress" in err
    assert results.incomplete_reason(out) == "in progress"


# ============================================================================ refused runs


def _tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and folder under ``folder``: contents (files) and modification time [ns]."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*"))}


def test_a_run_refused_by_its_plan_writes_nothing(tmp_path):
    out = tmp_path / "a" / "r"
    proc = run_cli("consistency", *set_args(), "--span", "0.000001", "--duration", "2", "--out", str(out), check=False)
    assert proc.returncode == 2 and "--span 1e-06: leaves less than" in proc.stderr
    assert not (tmp_path / "a").exists()


@pytest.mark.realtime
def test_a_rerun_refused_leaves_the_earlier_results_as_they_were(tmp_path):
    out = tmp_path / "r"
    run_cli("consistency", *set_args(), "--duration", "2", "--out", str(out), "--no-progress")
    before = _tree(out)
    proc = run_cli("consistency", *set_args(), "--span", "0.000001", "--duration", "2", "--out", str(out), check=False)
    assert proc.returncode == 2
    assert _tree(out) == before
    assert results.incomplete_reason(out) is None
    require_loops()
    # a real target opens (it makes OUT/fio for its job files) before the plan refuses
    proc = run_cli("consistency", "--target", "loop:64MiB", "--span", "0.0001", "--duration", "2", "--out", str(out),
                   check=False)
    assert proc.returncode == 2 and "--span 0.0001: leaves less than" in proc.stderr, proc.stderr
    assert _tree(out) == before


@pytest.mark.realtime
def test_a_device_the_safety_gate_refuses_leaves_no_folder(mounted_loop, tmp_path):
    out = tmp_path / "r"
    proc = run_cli("consistency", "--target", mounted_loop, "--duration", "2", "--out", str(out), check=False)
    assert proc.returncode == 2 and f"refusing to write to {mounted_loop}" in proc.stderr, proc.stderr
    assert not out.exists()
