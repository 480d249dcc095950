"""fio failing is an error with a message, not a crash: exit status 2, no traceback, what was
measured kept and marked incomplete. The filesystem under a ``file:`` target filling up is the
real case: it is checked up front, and a filesystem filled by someone else after the check
makes fio fail mid-phase."""
import os
import subprocess

import pytest

from conftest import mounted, require_loops, signal_fio_of_phase
from ssdlab import cli, results
from ssdlab.targets import fio as fio_target

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

MiB = 1 << 20


@pytest.fixture
def small_fs(tmp_path):
    """A 48 MiB ext4 filesystem on a loop device, mounted at tmp_path/mnt."""
    require_loops(("fio", "mkfs.ext4", "mount", "umount", "fallocate"))
    img = tmp_path / "fs.img"
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["truncate", "-s", "48M", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(img)], check=True, capture_output=True)
    with mounted(["-o", "loop", str(img)], mnt):
        yield mnt


def _free_bytes(path) -> int:
    st = os.statvfs(path)
    return st.f_bfree * st.f_frsize


def _filled_after_purge(fs, monkeypatch, leave_bytes: int):
    """A 32 MiB sparse file in ``fs`` whose purge is followed by another program taking all
    but ``leave_bytes`` of the filesystem; returns its path."""
    target = fs / "t.img"
    subprocess.run(["truncate", "-s", "32M", str(target)], check=True)
    real_purge = fio_target.FioTarget.purge

    def purge_then_someone_fills_the_fs(self):
        out = real_purge(self)
        subprocess.run(["fallocate", "-l", str(_free_bytes(fs) - leave_bytes), str(fs / "junk")], check=True)
        return out

    monkeypatch.setattr(fio_target.FioTarget, "purge", purge_then_someone_fills_the_fs)
    return target


def test_file_target_too_big_for_its_filesystem_is_refused_up_front(small_fs, tmp_path, capsys):
    target = small_fs / "t.img"
    subprocess.run(["truncate", "-s", "64M", str(target)], check=True)  # sparse: more than the fs holds
    code = cli.main(["consistency", "--target", f"file:{target}", "--duration", "2", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"file:{target}: its filesystem has" in err and "free space there or use a smaller file" in err


def test_filesystem_filling_up_mid_phase_is_an_error_with_partial_results(small_fs, tmp_path, capsys,
                                                                           monkeypatch):
    # another program takes all but 8 MiB after ssdlab checked: the 32 MiB fill cannot fit
    target = _filled_after_purge(small_fs, monkeypatch, 8 * MiB)
    out = tmp_path / "r"
    code = cli.main(["consistency", "--target", f"file:{target}", "--duration", "5", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"fio failed on file:{target} in phase 'fill'" in err
    assert "No space left on device" in err and "is full" in err
    assert "001_fill.fio" in err  # the job file to rerun by hand
    reason = results.incomplete_reason(out)
    assert reason is not None and reason.startswith("failed: fio failed")
    summary = results.read_summary(out)
    assert summary["complete"] is False and "No space left" in summary["error"]
    fill = results.read_series(out / "fill.parquet")  # what was written before the disk filled
    assert len(fill["t_s"]) >= 1 and float(sum(fill["iops"] * fill["dt_s"])) > 0
    assert (out / "report.html").exists()


def test_fio_killed_mid_phase_is_an_error_naming_the_phase(tmp_path):
    """fio killed outright (SIGKILL: no logs, no JSON) in the random-write phase: exit 2, one
    message naming the target, phase and job file, the fill kept, the run marked failed."""
    import signal

    def kill(pids: list[int]) -> None:
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass

    out = tmp_path / "r"
    code, _, err = signal_fio_of_phase(["consistency", "--target", "loop:256MiB", "--duration", "30", "--out", str(out)],
                                       "002_randwrite.fio", kill, wait_s=2.0)
    assert code == 2, err
    assert "Traceback" not in err
    assert "fio failed on loop:256MiB in phase 'randwrite' (killed by SIGKILL" in err
    assert "002_randwrite.fio" in err
    assert results.incomplete_reason(out).startswith("failed: fio failed on loop:256MiB")
    summary = results.read_summary(out)
    assert summary["complete"] is False and summary["fill"]["host_write_bytes"] == 256 * MiB
    assert (out / "fill.parquet").exists() and (out / "report.html").exists()


def test_filesystem_filling_up_mid_sweep_fails_the_zone_and_keeps_those_before(small_fs, tmp_path, capsys,
                                                                                monkeypatch):
    """A sweep's write pass runs as one fio job; the filesystem under the file filling up
    (ENOSPC) in its third zone fails that zone, by name, and keeps the two before it."""
    # another program leaves 10 MiB: two 4 MiB zones fit, the third does not
    target = _filled_after_purge(small_fs, monkeypatch, 10 * MiB)
    out = tmp_path / "r"
    code = cli.main(["sweep", "--target", f"file:{target}", "--zones", "8", "--zone-bytes", "full", "--out", str(out),
                     "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    assert f"fio failed on file:{target} in phase 'sweep_write_002'" in err and "No space left on device" in err
    assert "001_sweep_write_000..sweep_read_007.fio" in err  # the job file to rerun by hand
    write = results.read_series(out / "sweep.parquet")["write_mbps"]
    assert (write[:2] > 0).all() and not (write[2:] > 0).any()
