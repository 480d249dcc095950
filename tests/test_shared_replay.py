"""The trace test's queue depths of one TRIM choice share their FTL's work (one FTL run feeding
the variants' timing models: ``SimTarget.replay_shared``), and each variant's figures are
exactly those of its own run: the whole summary and every series, against the same test with
each variant alone. Ctrl-C stops every variant of a shared replay, marked incomplete, and leaves
each drive usable; a drive whose FTL follows the clock runs its variants one after another."""
from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from ssdlab import profiles
from ssdlab.procedures import trace_replay
from ssdlab.targets.base import JobSpec, ReplayJob
from ssdlab.targets.null import NullTarget
from ssdlab.targets.sim import SimTarget

PARAMS = dict(file="jedec-like", qds=(32, 1, 4), passes=2, write_bytes=3 << 30, window_commands=5000,
              chunk_records=50_000)


def _profile(name: str = "default") -> profiles.Profile:
    return profiles.load_profile(name, ["capacity=2GiB"])


def _alone(monkeypatch) -> None:
    """Each variant on its own: no teams."""
    monkeypatch.setattr(trace_replay, "_teams", lambda target, groups: [[i] for i in range(len(groups))])


def _spy(monkeypatch) -> list[int]:
    """The followers of every shared replay, counted."""
    followers: list[int] = []
    real = SimTarget.replay_shared

    def spy(self, job, others, *args, **kwargs):
        followers.append(len(others))
        return real(self, job, others, *args, **kwargs)

    monkeypatch.setattr(SimTarget, "replay_shared", spy)
    return followers


def _run(tmp_path, name: str, profile: str = "default") -> dict:
    params = trace_replay.TraceRunParams(**PARAMS)
    summary = trace_replay.run(SimTarget(_profile(profile), seed=5), params, tmp_path / name, progress=False)
    summary.pop("started_utc")
    return summary


def _same_folders(a, b) -> None:
    series = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    assert len(series) >= 12
    for rel in series:
        assert pq.read_table(a / rel).equals(pq.read_table(b / rel)), rel


def test_shared_variants_give_the_figures_of_their_own_runs(tmp_path, monkeypatch):
    followers = _spy(monkeypatch)
    shared = _run(tmp_path, "shared")
    # Two TRIM choices, two passes each: four shared replays, each with two followers.
    assert [n for n in followers if n] == [2, 2, 2, 2]
    monkeypatch.undo()
    _alone(monkeypatch)
    followers = _spy(monkeypatch)
    alone = _run(tmp_path, "alone")
    assert not any(followers)
    assert shared == alone
    rows = {(r["variant"], r["pass"]): r for r in shared["variants"]}
    assert len(rows) == 12
    # The queue depths differ in time, not in what the FTL did.
    assert rows[("qd32-trim", 1)]["iops_mean"] != rows[("qd1-trim", 1)]["iops_mean"]
    assert rows[("qd32-trim", 2)]["write_amplification"] == rows[("qd1-trim", 2)]["write_amplification"]
    _same_folders(tmp_path / "shared", tmp_path / "alone")


def test_a_drive_whose_ftl_follows_the_clock_runs_its_variants_one_after_another(tmp_path, monkeypatch):
    """The SLC-cached TLC drive: its cache folds by time, so its queue depths make
    different FTL decisions, and the team's variants run each on its own."""
    prof = _profile("tlc-fold")
    assert not SimTarget(prof).shares_replays
    followers = _spy(monkeypatch)
    params = trace_replay.TraceRunParams(**{**PARAMS, "qds": (32, 1), "passes": 1, "trim": "with",
                                            "write_bytes": 1 << 30})
    summary = trace_replay.run(SimTarget(prof, seed=5), params, tmp_path / "out", progress=False)
    assert not any(followers)
    assert {r["variant"] for r in summary["variants"]} == {"qd32-trim", "qd1-trim"}


def _drive(t: SimTarget) -> dict:
    """The drive's counters (not the memory its tables hold)."""
    return {k: v for k, v in t.counters().items() if k != "state_bytes"}


def _filled(prof) -> SimTarget:
    t = SimTarget(prof, seed=3)
    t.purge()
    t.run_phase(JobSpec("fill", "write", bs_bytes=131072, qd=32, span_bytes=t.capacity_bytes))
    return t


def _chunks(target: SimTarget, n: int, stop_after: int | None = None):
    """``n`` chunks of 20,000 random 4 KiB writes; Ctrl-C after ``stop_after`` of them."""
    rng = np.random.default_rng(1)
    units = target.capacity_bytes // 4096
    for k in range(n):
        if k == stop_after:
            raise KeyboardInterrupt
        off = rng.integers(0, units, 20_000, dtype=np.uint64) * 4096
        yield np.ones(20_000, np.uint8), off, np.full(20_000, 4096, np.uint64)


def test_ctrl_c_stops_every_drive_of_a_shared_replay_and_leaves_them_usable():
    prof = _profile()
    lead, follow, alone = _filled(prof), _filled(prof), _filled(prof)
    jobs = [ReplayJob("a", qd=32, window_commands=5000), ReplayJob("b", qd=1, window_commands=5000)]
    results = lead.replay_shared(jobs[0], [(follow, jobs[1])], _chunks(lead, 5, stop_after=3))
    assert [r.complete for r in results] == [False, False]
    assert all("interrupted after 60,000 commands" in r.notes[0] for r in results)
    # The follower caught up: its drive is the one its own replay leaves.
    own = alone.replay(jobs[1], _chunks(alone, 3))
    assert own.totals == results[1].totals
    assert _drive(follow) == _drive(alone) != {}
    after = [t.run_phase(JobSpec("more", "randwrite", bs_bytes=4096, qd=8, span_bytes=t.capacity_bytes,
                                 io_bytes=64 << 20)) for t in (follow, alone)]
    assert after[0].totals == after[1].totals


def test_a_refused_chunk_leaves_every_drive_usable():
    """A command outside the drive: the error names it, both replays end where it stopped."""
    prof = _profile()
    lead, follow = _filled(prof), _filled(prof)
    jobs = [ReplayJob("a", qd=32, window_commands=5000), ReplayJob("b", qd=4, window_commands=5000)]
    bad = (np.ones(3, np.uint8), np.array([0, lead.capacity_bytes, 4096], np.uint64), np.full(3, 4096, np.uint64))
    with pytest.raises(ValueError, match="command 1"):
        lead.replay_shared(jobs[0], [(follow, jobs[1])], iter([bad]))
    assert _drive(lead) == _drive(follow)
    lead.replay_shared(jobs[0], [(follow, jobs[1])], _chunks(lead, 1))
    assert _drive(lead) == _drive(follow)


def test_a_null_target_shares_replays_as_separate_ones(tmp_path):
    t = NullTarget(1 << 30, capabilities=("fork", "shared_replay"))
    params = trace_replay.TraceRunParams(file="jedec-like", qds=(32, 1), write_bytes=64 << 20, window_commands=1000)
    summary = trace_replay.run(t, params, tmp_path / "out", progress=False)
    rows = {r["variant"]: r for r in summary["variants"]}
    assert set(rows) == {"qd32-trim", "qd32-notrim", "qd1-trim", "qd1-notrim"}
    assert rows["qd32-trim"]["commands"] == rows["qd1-trim"]["commands"] > 0


def test_a_team_needs_memory_for_a_drive_per_variant(monkeypatch):
    t = NullTarget(1 << 30, capabilities=("fork", "shared_replay"))
    groups = trace_replay._variant_groups(trace_replay.plan(t, trace_replay.TraceRunParams(file="jedec-like")))
    monkeypatch.setattr(trace_replay, "_drives_memory_holds", lambda target: 2)
    assert trace_replay._teams(t, groups) == [[0, 2], [1, 3]]
    monkeypatch.setattr(trace_replay, "_drives_memory_holds", lambda target: 1)
    assert trace_replay._teams(t, groups) == [[0], [1], [2], [3]]
