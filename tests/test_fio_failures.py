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


def test_file_target_too_big_for_its_filesystem_is_refused_up_front(small_fs, tmp_path, capsys):
    target = small_fs / "t.img"
    subprocess.run(["truncate", "-s", "64M", str(target)], check=True)  # sparse: more than the fs holds
    code = cli.main(["consistency", "--target", f"file:{target}", "--duration", "2", "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert f"file:{target}: its filesystem has" in err and "free space there or use a smaller file" in err


def test_filesystem_filling_up_mid_phase_is_an_error_with_partial_results(small_fs, tmp_path, capsys,
                                                                           monkeypatch):
    target = small_fs / "t.img"
    subprocess.run(["truncate", "-s", "32M", str(target)], check=True)
    real_purge = fio_target.FioTarget.purge

    def purge_then_someone_fills_the_fs(self):
        out = real_purge(self)
        # another program takes all but 8 MiB after ssdlab checked: the 32 MiB fill cannot fit
        subprocess.run(["fallocate", "-l", str(_free_bytes(small_fs) - 8 * MiB), str(small_fs / "junk")],
                       check=True)
        return out

    monkeypatch.setattr(fio_target.FioTarget, "purge", purge_then_someone_fills_the_fs)
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
