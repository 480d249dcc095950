"""`ssdlab analyze` of what a run left behind gives the run's own series and metrics.

Two paths answer the same question: a test on a loop device turns fio's histogram logs and
JSON into its series and summary; `ssdlab analyze` reads the same logs afterwards. They must
agree exactly (every series column, every metric both have), for a consistency run (its fill
shorter than one log window and its timed random writes), a user's job file (`ssdlab run`),
and a simulated run's stored series. A log without its run's JSON must not grow an interval
of its own from fio's few ms of timer offset (which read as a stall at the end).

Needs root and /dev/loop-control (SSDLAB_NO_LOOP=1 skips).
"""
from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest

from conftest import require_loops, run_cli, set_args
from ssdlab import results

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

MAIN_METRICS = ("n_intervals", "iops_mean", "iops_median", "iops_p1", "iops_p99", "iops_min", "iops_max",
                "iops_cv", "mbps_mean", "zero_iops_seconds", "longest_stall_s", "fob_iops", "fob_duration_s",
                "steady_state_onset_s", "steady_state_iops_mean", "bimodal", "high_mode_share")

loop_only = pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")


def _same_series(a: dict, b: dict, what: str) -> None:
    assert set(a) == set(b), (what, sorted(a), sorted(b))
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k], float), np.asarray(b[k], float), err_msg=f"{what}: {k}")


def _same_metrics(run: dict, analyzed: dict, what: str) -> None:
    for k in MAIN_METRICS:
        assert k in run and k in analyzed, (what, k)
        assert run[k] == analyzed[k], (what, k, run[k], analyzed[k])


@loop_only
def test_analyze_of_a_loop_consistency_run_equals_the_run(tmp_path):
    require_loops(("fio",))
    out = tmp_path / "run"
    run_cli("consistency", "--target", "loop:256MiB", "--duration", "3", "--no-progress", "--out", str(out))
    run_summary = json.loads((out / "summary.json").read_text())
    fio_dir = out / "fio"
    randwrite = next(p.name.removesuffix(".json") for p in fio_dir.glob("*randwrite*.json"))
    fill = next(p.name.removesuffix(".json") for p in fio_dir.glob("*fill*.json"))

    # the results folder: one analysis per phase, each the phase's own series
    run_cli("analyze", str(out), "--out", str(tmp_path / "a"))
    _same_series(results.read_series(out / "series"), results.read_series(tmp_path / "a" / randwrite / "series"),
                 "random writes")
    _same_series(results.read_series(out / "fill"), results.read_series(tmp_path / "a" / fill / "series"), "fill")
    _same_metrics(run_summary, json.loads((tmp_path / "a" / randwrite / "summary.json").read_text()), "metrics")

    # one log named on its own reads its run's JSON beside it: the same answer, every IO counted
    r = run_cli("analyze", str(fio_dir / f"{randwrite}_clat_hist.1.log"), "--json")
    _same_metrics(run_summary, json.loads(r.stdout), "one log")
    ios = sum(float(v) for v in np.asarray(results.read_series(out / "series")["iops"])
              * np.asarray(results.read_series(out / "series")["dt_s"]))
    fio_json = json.loads((fio_dir / f"{randwrite}.json").read_text())
    assert round(ios) == fio_json["jobs"][0]["write"]["total_ios"]

    # without its JSON the log ends at its last row: no interval made of fio's timer offset
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(fio_dir / f"{randwrite}_clat_hist.1.log", bare)
    m = json.loads(run_cli("analyze", str(bare / f"{randwrite}_clat_hist.1.log"), "--json").stdout)
    # fio logs the final window only when the job outlived it by a timer tick
    assert m["n_intervals"] in (run_summary["n_intervals"] - 1, run_summary["n_intervals"])
    assert m["iops_min"] > 0.5 * run_summary["iops_min"], (m["iops_min"], run_summary["iops_min"])
    assert not m["bimodal"]


@loop_only
def test_analyze_of_a_job_file_run_on_a_loop_device_equals_the_run(tmp_path):
    require_loops(("fio",))
    out = tmp_path / "run"
    run_cli("run", "--name=mix", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=8", "--runtime=2",
            "--time_based", "--target", "loop:128MiB", "--no-progress", "--out", str(out))
    analyzed = tmp_path / "a"
    run_cli("analyze", str(out), "--out", str(analyzed))
    (folder,) = [p for p in analyzed.iterdir() if p.is_dir()] or [analyzed]
    mine = results.read_series(folder / "series")
    theirs = results.read_series(out / "series")
    for k in mine:
        np.testing.assert_array_equal(np.asarray(theirs[k], float), np.asarray(mine[k], float), err_msg=k)
    assert {"read_iops", "write_iops", "read_mbps", "write_mbps"} <= set(mine)


def test_analyze_of_a_simulated_run_recomputes_its_summary(tmp_path):
    out = tmp_path / "run"
    run_cli("consistency", *set_args(), "--duration", "20", "--no-progress", "--out", str(out))
    m = json.loads(run_cli("analyze", str(out), "--json").stdout)
    _same_metrics(json.loads((out / "summary.json").read_text()), m["series"], "simulated")
    assert m["fill"]["mbps_mean"] == pytest.approx(float(np.mean(results.read_series(out / "fill")["mbps"])))
