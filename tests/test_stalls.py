"""A drive that stops answering: its seconds are counted, on fio targets and by ``analyze``.

fio is paused (SIGSTOP / SIGCONT on its processes) in the middle of the random-write phase of
a real consistency run on a loop device: a stand-in for a drive that completes nothing for a
while. The run's series and ``ssdlab analyze`` of the same run's logs must both show those
seconds as 0-IOPS intervals on a regular grid, with the same stall figures.
"""
import json
import os
import signal
import time

import numpy as np
import pytest

from conftest import run_cli, signal_fio_of_phase
from ssdlab import results

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

PAUSE_S = 5.0


def _pause(pids: list[int]) -> None:
    for p in pids:
        os.kill(p, signal.SIGSTOP)
    time.sleep(PAUSE_S)
    for p in pids:
        os.kill(p, signal.SIGCONT)


def test_paused_fio_counts_as_zero_iops_seconds(tmp_path):
    out = tmp_path / "stall"
    code, stdout, stderr = signal_fio_of_phase(["consistency", "--target", "loop:1GB", "--duration", "20",
                                                "--out", str(out)], "002_randwrite.fio", _pause, wait_s=4.0)
    assert code == 0, stderr

    summary = results.read_summary(out)
    series = results.read_series(out / "series.parquet")
    t = series["t_s"]
    assert np.array_equal(t, np.arange(t.size, dtype=float)), t  # a regular 1-s grid
    assert 19 <= t.size <= 21
    iops = series["iops"]
    zero = np.flatnonzero(iops == 0)
    # A 5 s pause holds at least 4 whole seconds; the ones at its edges completed some IOs.
    assert 4 <= zero.size <= 5, iops
    assert np.array_equal(zero, np.arange(zero[0], zero[0] + zero.size)), zero  # one run
    assert summary["zero_iops_seconds"] == zero.size
    assert summary["longest_stall_s"] == zero.size
    assert iops[zero[0] - 1] > 0 and iops[zero[-1] + 1] > 0
    # The IOs in flight during the pause completed after it, with ~5 s latencies, in the
    # interval where they completed.
    mx = series["write_lat_max_us"]
    assert np.isnan(mx[zero]).all()
    assert np.nanmax(mx) >= 0.8 * PAUSE_S * 1e6
    assert int(np.nanargmax(mx)) == zero[-1] + 1
    assert "Traceback" not in stderr and "zero-IOPS seconds" in stdout

    # The same run's fio logs, read by analyze: the same grid and the same stall.
    log = out / "fio" / "002_randwrite_clat_hist.1.log"
    a = run_cli("analyze", str(log), "--json", "--out", str(tmp_path / "analyzed"))
    m = json.loads(a.stdout)
    assert m["interval_s"] == 1.0 and m["log_window_ms"] == 1000
    assert m["zero_iops_seconds"] == summary["zero_iops_seconds"]
    assert m["longest_stall_s"] == summary["longest_stall_s"]
    aseries = results.read_series(tmp_path / "analyzed" / "series.parquet")
    assert np.array_equal(aseries["t_s"], np.arange(aseries["t_s"].size, dtype=float))
    n = aseries["t_s"].size
    assert np.array_equal(aseries["iops"][zero], np.zeros(zero.size))
    # Every interval reads the same except where the target added fio's unlogged final window
    # (from fio's JSON totals, which analyze does not have): the IOs after the last log row
    # land in the window after it, which may start in the last interval but one.
    assert np.allclose(aseries["iops"][: n - 2], iops[: n - 2])
    assert np.allclose(aseries["write_lat_p99_us"][: n - 2], series["write_lat_p99_us"][: n - 2], equal_nan=True)
    assert iops[n - 2] >= aseries["iops"][n - 2]
