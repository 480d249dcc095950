"""``--target emu:PROFILE``: the real-drive path (fio, the safety gate, fio's logs, purge by
discard, drive counters) run against a simulated drive served as a block device, checked
against the same test run by the simulator itself. Two paths, one drive: where they agree,
the real-drive path measures what the drive does. Needs root, /dev/fuse, loop devices, fio."""
from __future__ import annotations

import dataclasses
import json
import os

import numpy as np
import pyarrow.parquet as pq
import pytest

from conftest import require_loops

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

#: The default drive at 1.75 GiB: 30 s of 4 KiB random writes after the fill reach the
#: drive's garbage-collecting floor (about 3.7K IOPS) well inside the run, at a rate this
#: host's emulator keeps up with.
DRIVE = ["--set", "blocks_per_plane=64", "--set", "pages_per_block=64", "--set", "user_capacity_bytes=1792MiB"]

#: cleanup-later on 2 GiB with 4 planes (2 channels, 1 die each) of 137 blocks: a fill of ~45 s
#: and stalls of ~10 s from the tenth second of random writes.
STALL_DRIVE = ["channels=2", "dies_per_channel=1", "planes_per_die=2", "blocks_per_plane=137",
               "user_capacity_bytes=2GiB"]


@pytest.fixture(autouse=True)
def _host_ok(tmp_path, monkeypatch):
    require_loops(("fio",))
    if not os.path.exists("/dev/fuse"):
        pytest.fail("/dev/fuse is missing: these tests need FUSE (modprobe fuse)")
    monkeypatch.setenv("SSDLAB_RUN_DIR", str(tmp_path / "run"))


def _consistency(target: str, out, duration_s: int, drive=DRIVE) -> tuple[dict, np.ndarray]:
    from ssdlab import cli

    assert cli.main(["consistency", "--target", target, *drive, "--duration", str(duration_s), "--out", str(out),
                     "--no-progress"]) == 0
    return json.loads((out / "summary.json").read_text()), np.asarray(pq.read_table(out / "series.parquet")["iops"])


def test_consistency_on_the_emulated_drive_agrees_with_the_simulator(tmp_path):
    duration = 30
    sim, sim_iops = _consistency("sim:default", tmp_path / "sim", duration)
    emu, emu_iops = _consistency("emu:default", tmp_path / "emu", duration)
    assert len(emu_iops) == len(sim_iops) == duration
    # After the first seconds (the fresh drive's burst, faster than the emulator's ceiling on a
    # loaded host: its replies are late there) the drive collects garbage at its floor.
    floor = slice(8, duration)
    sim_floor, emu_floor = np.median(sim_iops[floor]), np.median(emu_iops[floor])
    # 5 % where the emulator vouches for its figures; where its replies were late enough to
    # flag the phase (a busy host), it says so and the figures may stray further.
    flagged = {u["phase"] for u in emu["target_info"]["emulator"].get("unreliable_phases", [])}
    assert abs(emu_floor / sim_floor - 1) < (0.10 if "randwrite" in flagged else 0.05), (sim_floor, emu_floor, flagged)
    assert np.median(np.abs(emu_iops[floor] / sim_iops[floor] - 1)) < 0.06
    assert emu["zero_iops_seconds"] == sim["zero_iops_seconds"]
    # WA read from the emulated drive's counters, as from a real drive's SMART log (10.24 against
    # the simulator's 10.40 here): the emulated drive also collects in the idle gap fio leaves
    # between the fill and the random writes, work its counters count before the phase.
    assert "ssdlab-emu" in emu["write_amplification_source"]
    assert abs(emu["write_amplification"] / sim["write_amplification"] - 1) < 0.03, (
        sim["write_amplification"], emu["write_amplification"])
    info = emu["target_info"]
    assert info["kind"] == "emu" and info["purge_method"] == "blkdiscard"
    assert info["emulator"]["lateness"]["replies"] > duration * sim_floor
    # How late the emulator replied, per interval: a share of the interval's replies.
    late = np.asarray(pq.read_table(tmp_path / "emu" / "series.parquet")["late_share"])
    assert len(late) == duration and np.all((late >= 0) & (late <= 1))
    assert ("warning" in info["emulator"]) == bool(info["emulator"].get("unreliable_phases"))
    assert os.listdir(tmp_path / "run") == [], "the emulated drive was torn down"


def test_the_emulated_drive_stalls_when_and_as_long_as_the_simulated_one(tmp_path):
    """cleanup-later defers garbage collection until its free blocks run out, then collects
    for seconds with the host waiting: on 2 GiB over 4 planes of 137 blocks, after ~10 s of
    random writes, stalls of about 10 s. The real-drive path (fio's per-second log of the
    emulated device) must see the same stalls the simulator reports, to the interval."""
    drive = [a for kv in STALL_DRIVE for a in ("--set", kv)]
    sim, sim_iops = _consistency("sim:cleanup-later", tmp_path / "sim", 30, drive)
    emu, emu_iops = _consistency("emu:cleanup-later", tmp_path / "emu", 30, drive)
    assert sim["zero_iops_seconds"] >= 10 and sim["longest_stall_s"] >= 5, "the simulated drive stalls"
    assert abs(emu["zero_iops_seconds"] - sim["zero_iops_seconds"]) <= 1, (sim_iops, emu_iops)
    assert abs(emu["longest_stall_s"] - sim["longest_stall_s"]) <= 1, (sim_iops, emu_iops)
    first_stall = [int(np.argmax(iops[2:] == 0)) + 2 for iops in (sim_iops, emu_iops)]
    assert abs(first_stall[0] - first_stall[1]) <= 1, first_stall
    # The GC the drive decides in a stall runs on after the phase: the emulated drive's counters
    # count it as decided, as the simulator's phase totals do (5.65 both here).
    assert abs(emu["write_amplification"] / sim["write_amplification"] - 1) < 0.02, (
        sim["write_amplification"], emu["write_amplification"])


@pytest.mark.parametrize("setting, named", [("t_prog_us=1e15", "t_prog_us"), ("slowdown=0.5", "slowdown=0.5"),
                                            ("slowdown=x", "slowdown=x")])
def test_an_emulated_target_refuses_what_the_simulator_refuses_and_a_bad_slowdown(tmp_path, capsys, setting, named):
    from ssdlab import cli

    status = cli.main(["consistency", "--target", "emu:default", "--set", setting, "--duration", "5",
                       "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert status == 2 and named in err and "Traceback" not in err, err
    assert not (tmp_path / "run").exists() or os.listdir(tmp_path / "run") == []


#: A gap the host left the emulated drive counts as fio's start-up, replayed on the simulator,
#: when it is longer than this [ns]: far above a busy host's descheduling of fio mid-run.
STARTUP_GAP_NS = 100_000_000


def _sweep_after_torture(spec: str, torture_s: float, workdir, gaps_s: tuple[float, float] = (0.0, 0.0),
                         seed: int = 1) -> tuple[np.ndarray, set, tuple[float, float]]:
    """Write MB/s of each zone of a sampled 10-zone sweep run right after a fill and
    ``torture_s`` of 4 KiB random writes QD32 on ``spec`` (the DRIVE geometry, the target's
    ``seed``; fio's files in ``workdir``), the phases whose figures an emulator flagged
    unreliable (its replies were late: a busy host; zones by number, else by name), and the
    drive time the host left an emulated drive idle before the torture and before the sweep in
    a gap above STARTUP_GAP_NS [s] (fio's start-up, one per fio run: longer on a busy host;
    asserted to be the only one). On the simulator, ``gaps_s`` are idled there instead (an
    emulated run's gaps)."""
    from ssdlab.procedures import sweep
    from ssdlab.targets import emu as emu_drive, open_target
    from ssdlab.targets.base import JobSpec
    from ssdlab.targets.emulated import EmuTarget

    t = open_target(spec, sets=tuple(DRIVE[1::2]), workdir=workdir, seed=seed)
    drive = t.drive if isinstance(t, EmuTarget) else None
    took = []

    def gap_then(k: int, run):
        if drive is None and gaps_s[k] > 0:
            assert t.run_phase(JobSpec("startup", "idle", duration_s=gaps_s[k])).complete
        before = drive.counters() if drive else None
        out = run()
        if drive:
            idle = emu_drive.idleness(drive.counters(), before, STARTUP_GAP_NS)
            # One fio run, one start-up: more long gaps are zones that gave the drive time to
            # recover in between.
            assert idle["stalls"] <= 1, idle
            took.append(idle["stall_s"])
        return out

    try:
        t.purge()
        assert t.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32)).complete
        assert gap_then(0, lambda: t.run_phase(JobSpec("torture", "randwrite", qd=32, duration_s=torture_s))).complete
        layout = sweep.zone_layout(t.capacity_bytes, 10)
        mbps = gap_then(1, lambda: sweep.sweep(t, layout, read=False, progress=False))["write_mbps"]
        flagged = t.describe().get("emulator", {}).get("unreliable_phases", [])
        phases = {int(u["phase"].rsplit("_", 1)[1]) if u["phase"].startswith("sweep_write_") else u["phase"]
                  for u in flagged}
        return mbps, phases, tuple(took) or gaps_s
    finally:
        t.close()


#: Simulator seeds the emulated sweep is compared with: each torture's random offsets are one
#: draw (fio draws a new pattern each run, randrepeat=0), and the tortured zones' speed varies
#: between draws (40 seeds: 5 % standard deviation, 15.6 to 17.3 MB/s in the lower quartile).
SWEEP_SEEDS = range(1, 17)


def _tortured_mbps(mbps: np.ndarray) -> float:
    """The tortured drive writes ~17 MB/s up to a zone and faster after it (by 20-90 %); from
    which zone on varies between runs. The lower quartile is the tortured speed every run
    reaches; a median of eight zones straddles the step."""
    return float(np.percentile(mbps, 25))


def test_a_sweep_after_torture_on_the_emulated_drive_agrees_with_the_simulator(tmp_path):
    """The default drive collects garbage when idle: a sweep whose zones each ran in a fio run
    of their own gave it the start-up gaps to recover in (zones 3 to 10: median 94 MB/s on
    emu: against 16.9 MB/s on sim:). Run back to back, the zones measure the tortured drive as
    the simulator does. The sweep's fio run starts a few hundred ms after the torture's ended
    (over a second on a busy host, and from one second the drive's idle GC runs: zones 5 to 10
    then 20-35 % faster): the simulator idles the same gaps before the torture and the sweep,
    and the first two zones, the ones the drive cleans blocks for in that time (up to 375 MB/s),
    are left out. At QD1 each late reply delays the next request, an idle moment the drive
    uses, so on a busy host a zone may read up to 80 % faster; the emulator flags such zones
    unreliable. fio's random offsets are one draw of the torture, the simulator's seed another:
    the emulated zones the emulator vouches for lie, in their lower quartile, within the range
    of SWEEP_SEEDS' simulated sweeps widened by 8 % for the emulator's own timing (of 17 runs,
    8 quiet and 9 under three busy loops on the 2 cores, two fell outside the range itself: by
    0.02 % below, and, quiet, 6.9 % above; a sweep the emulator held back 1 s, so that idle GC
    ran before it, reads ~15 % above); with fewer than three of those, all eight within the
    range widened by 30 %."""
    emu, flagged, gaps_s = _sweep_after_torture("emu:default", 20, tmp_path / "emu")
    sims = [_sweep_after_torture("sim:default", 20, tmp_path / f"sim{k}", gaps_s, seed=k)[0] for k in SWEEP_SEEDS]
    assert np.all(np.isfinite(sims)) and np.all(np.isfinite(emu))
    vouched = [i for i in range(2, 10) if i not in flagged]
    zones, margin = (vouched, 0.08) if len(vouched) >= 3 else (list(range(2, 10)), 0.30)
    drawn = [_tortured_mbps(s[zones]) for s in sims]
    lo, hi = min(drawn) * (1 - margin), max(drawn) * (1 + margin)
    assert lo <= _tortured_mbps(emu[zones]) <= hi, (emu, sims[0], lo, hi, flagged, gaps_s)


@pytest.mark.parametrize("idle_gc", [True, False])
def test_a_phase_after_the_drive_was_left_idle_past_its_idle_delay_says_so(tmp_path, idle_gc):
    """1.6 s between two phases, past the default drive's 1 s idle delay: the second phase's
    notes say the drive worked while idle, which a back-to-back sim: run does not; on the same
    drive without idle GC (and no SLC cache) it has nothing to say."""
    import time

    from ssdlab.targets import open_target
    from ssdlab.targets.base import JobSpec

    sets = tuple(DRIVE[1::2]) + (() if idle_gc else ("gc_idle_free_blocks=0",))
    t = open_target("emu:default", sets=sets, workdir=tmp_path / "w")
    try:
        t.purge()
        job = JobSpec("burst", "randwrite", qd=32, duration_s=1)
        assert t.run_phase(job).complete
        time.sleep(1.6)
        after = t.run_phase(dataclasses.replace(job, name="after_idle"))
        facts = t.describe()["emulator"]
    finally:
        t.close()
    noted = [n for n in after.notes if "longer than its idle delay" in n]
    if idle_gc:
        assert after.totals["idle_work_gaps"] == 1 and len(noted) == 1, after.notes
        assert "gc_idle_delay_ms = 1000" in noted[0]
        phases = {p["phase"]: p for p in facts["idle_work_phases"]}
        assert 1.6 <= phases["after_idle"]["idle_s"] < 10, phases
    else:
        assert "idle_work_gaps" not in after.totals and not noted and "idle_work_phases" not in facts


def test_an_emulated_drive_run_slower_gives_the_same_figures_in_drive_time(tmp_path):
    """At --set slowdown=2 every simulated time runs twice as long on the wall clock; the
    results are rescaled to the drive's own time, so the same test gives the same figures:
    as many one-second intervals, the same floor IOPS (within 8 %), the same WA (within 3 %)."""
    duration = 16
    one, one_iops = _consistency("emu:default", tmp_path / "k1", duration)
    two, two_iops = _consistency("emu:default", tmp_path / "k2", duration, DRIVE + ["--set", "slowdown=2"])
    assert len(one_iops) == len(two_iops) == duration
    floor = slice(8, duration)
    assert abs(np.median(two_iops[floor]) / np.median(one_iops[floor]) - 1) < 0.08, (one_iops, two_iops)
    assert abs(two["write_amplification"] / one["write_amplification"] - 1) < 0.03
    emulator = two["target_info"]["emulator"]
    assert emulator["slowdown"] == 2 and "emulated at slowdown 2" in emulator["time"] and "rescaled" in emulator["time"]
    assert "slowdown" not in one["target_info"]["emulator"]["time"]
