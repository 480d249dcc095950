"""What keeps a long simulated run's memory flat.

- A phase's final intervals leave the simulator as it runs (``Simulator.take_intervals``,
  about once a second of wall time): the series, totals and journal are then exactly those
  of the same phase run without taking any (taking forced after every call, oracle: taking
  never), for a plain job and a multi-direction workload with several jobs.
- A test lets the drive's state go (``SimTarget.release``) once it has run its last phase:
  the series files, plots and report are written after it, so they never add to the peak
  that the drive's maps set; the summary still has the drive's counters.

The memory figures themselves (20x the capacity against 1x) are a benchmark:
``benches/bench_long_run.py``.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from ssdlab import results
from ssdlab.journal import read_phase
from ssdlab.procedures import consistency, run as run_test
from ssdlab.profiles import load_profile
from ssdlab.targets import sim as simmod
from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

from conftest import SMALL_DRIVE

MIX = {"name": "mix", "interval_s": 0.05, "jobs": [
    {"name": "rw", "read_fraction": 0.5, "trim_fraction": 0.1, "qd": 8, "duration_s": 3.0},
    {"name": "w", "qd": 16, "duration_s": 2.0, "startdelay_s": 0.3}]}


def _filled(seed: int) -> SimTarget:
    t = SimTarget(load_profile("default", SMALL_DRIVE), seed=seed)
    t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    return t


def _phase(monkeypatch, take_every_call: bool, kind: str):
    """The phase run once, taking intervals after every ``advance`` call or never."""
    monkeypatch.setattr(simmod, "CHECKPOINT_S", 0.0 if take_every_call else 1e9)
    calls = []
    sim = simmod._native.Simulator
    take, advance = sim.take_intervals, sim.advance
    t = _filled(5)
    monkeypatch.setattr(sim, "take_intervals", lambda s: calls.append(1) or take(s))
    # Short calls (a slower machine's), so that intervals are taken many times in a phase.
    monkeypatch.setattr(sim, "advance", lambda s, max_ios: advance(s, min(max_ios, 2_000)))
    if kind == "job":
        r = t.run_phase(JobSpec("rand", "randwrite", bs_bytes=4096, qd=32, duration_s=6.0, interval_s=0.02))
    else:
        r = t.run_workload(MIX)
    monkeypatch.undo()
    return r, len(calls)


@pytest.mark.parametrize("kind", ["job", "workload"])
def test_intervals_taken_while_running_give_the_same_series_and_totals(monkeypatch, kind):
    whole, n_whole = _phase(monkeypatch, False, kind)
    taken, n_taken = _phase(monkeypatch, True, kind)
    assert n_whole == 0 and n_taken >= 20, "the oracle run took none, the other took many batches"
    assert list(taken.series) == list(whole.series)
    assert len(whole.series["t_s"]) >= 60
    for c in whole.series:
        np.testing.assert_array_equal(taken.series[c], whole.series[c], err_msg=c)
    assert taken.totals == whole.totals
    assert taken.latency_us == whole.latency_us


def test_the_journal_holds_the_taken_rows_as_the_final_series(monkeypatch, tmp_path):
    monkeypatch.setattr(simmod, "CHECKPOINT_S", 0.0)
    t = _filled(6)
    with results.ResultsDir(tmp_path / "out"):
        r = t.run_workload(MIX)
        [path] = sorted((tmp_path / "out" / "journal").glob("*.jsonl"))
        phase = read_phase(path)
        lines = path.read_text().splitlines()
    assert len(lines) > 3 + 2, "rows were appended in several batches, not only at the end"
    assert phase.ended and phase.complete
    for c in r.series:
        np.testing.assert_array_equal(phase.series[c], r.series[c], err_msg=c)


def test_a_test_lets_the_drive_go_before_it_writes_its_results(monkeypatch, tmp_path):
    """Series, plots and report come after the drive's state was let go."""
    released_when_written = []
    real_write = results.ResultsDir.write_series

    def write_series(self, name, series):
        released_when_written.append(target._released)
        return real_write(self, name, series)

    monkeypatch.setattr(results.ResultsDir, "write_series", write_series)
    target = SimTarget(load_profile("default", SMALL_DRIVE), seed=2)
    params = consistency.ConsistencyParams(duration_s=20.0)
    with results.ResultsDir(tmp_path / "c") as rd:
        summary = consistency.run(target, params, rd, progress=False)
    # The fill's series is written as soon as it ran; the test's own series after the release.
    assert released_when_written == [False, True]
    assert summary["counters"]["host_write_bytes"] > 0
    with pytest.raises(RuntimeError, match="released"):
        target.run_phase(JobSpec("more", "randwrite", duration_s=1.0))
    target.purge()  # a fresh drive
    assert target.run_phase(JobSpec("more", "randwrite", duration_s=1.0)).totals["ios"] > 0

    released_when_written.clear()
    target = SimTarget(load_profile("default", SMALL_DRIVE), seed=2)
    params = run_test.RunParams(fio_args=("--name=w", "--rw=randwrite", "--runtime=5", "--time_based"))
    with results.ResultsDir(tmp_path / "r") as rd:
        run_test.run(target, params, rd, progress=False)
    assert released_when_written == [True]
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["counters"]["host_write_bytes"] > 0
