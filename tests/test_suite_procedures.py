"""``ssdlab sweep``, ``ssdlab recovery`` and ``ssdlab used`` end to end on a small simulated
drive (7 GiB user, 8 GiB NAND): results folders, summary keys and tables, the shapes the seeds
describe (torture slows writes, TRIM restores them; used below new, used-after-TRIM near new),
Ctrl-C, bad options."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ssdlab.procedures import sweep as sweep_mod
from ssdlab.profiles import load_profile
from ssdlab.results import read_series
from ssdlab.targets import open_target
from ssdlab.targets.base import run_phases_one_by_one
from ssdlab.targets.sim import SimTarget

from conftest import SMALL_DRIVE, interrupt_cli, journalled, run_cli, set_args

ZONES = 20
CAPACITY = 7 * 2**30
RUN_KEYS = ["test", "target", "profile", "geometry", "seed", "ssdlab_version", "command_line", "started_utc",
            "purge", "preconditioning", "tables", "plots", "complete"]


def summary_of(path) -> dict:
    return json.loads((path / "summary.json").read_text())


def check_table(table: dict, n_rows: int) -> None:
    assert isinstance(table["title"], str) and table["title"]
    assert len(table["rows"]) == n_rows
    for row in table["rows"]:
        assert len(row) == len(table["columns"])


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep") / "r"
    run_cli("sweep", *set_args(), "--zones", str(ZONES), "--seed", "2", "--out", str(out))
    return out


@pytest.fixture(scope="module")
def recovery_dir(tmp_path_factory):
    """Recovery on the default profile with sampled sweeps: its idle GC rebuilds free space
    (which a sampled sweep, writing ~3 % of the span, lives on) but does not sort data by LBA,
    so a full write pass after idle would not recover (that is the recovery profile's job:
    tests/test_recovery_shape.py)."""
    out = tmp_path_factory.mktemp("recovery") / "r"
    run_cli("recovery", *set_args(), "--zones", str(ZONES), "--zone-bytes", "sample", "--out", str(out))
    return out


@pytest.fixture(scope="module")
def used_dir(tmp_path_factory):
    # 10 s per state: a new 7 GiB drive at ~90K IOPS takes ~3.7 GB, half of it, and stays fresh;
    # after TRIM the drive needs ~1 s to finish the used state's backlog, a tenth of the run.
    out = tmp_path_factory.mktemp("used") / "r"
    run_cli("used", *set_args(), "--duration", "10", "--out", str(out))
    return out


# --------------------------------------------------------------------------- sweep

def test_sweep_results_folder_and_summary(sweep_dir):
    names = {p.name for p in sweep_dir.iterdir()}
    for n in ["summary.json", "sweep.parquet", "sweep.csv", "sweep.png", "sweep.svg"]:
        assert n in names, f"{n} missing from {sorted(names)}"
    assert "INCOMPLETE" not in names
    s = summary_of(sweep_dir)
    for k in RUN_KEYS + ["write_mbps_mean", "write_mbps_min", "write_mbps_max", "read_mbps_mean", "read_mbps_min",
                         "read_mbps_max", "zones", "zone_bytes", "bs_bytes", "qd", "sweep_write_bytes"]:
        assert k in s, k
    assert s["test"] == "sweep" and s["complete"] is True and s["seed"] == 2
    assert s["profile"]["blocks_per_plane"] == 64
    assert (s["zones"], s["bs_bytes"], s["qd"]) == (ZONES, 128 * 1024, 1)
    # The report's chart is the PNG's declaration: same title, axes and line labels.
    assert (s["plot"]["series"], s["plot"]["x"], s["plot"]["xlabel"]) == ("sweep", "position_pct",
                                                                        "position (% of capacity)")
    assert [(y["y"], y["label"]) for y in s["plot"]["y"]] == [("write_mbps", "write"), ("read_mbps", "read")]
    assert s["plot"]["title"].endswith(f"sequential 128 KiB QD1, {ZONES} zones")
    check_table(s["tables"][0], 1)
    assert s["tables"][0]["rows"][0][1] == pytest.approx(s["write_mbps_mean"], abs=0.05)


def test_sweep_zones_cover_the_span_and_speeds_are_positive(sweep_dir):
    s = summary_of(sweep_dir)
    series = read_series(sweep_dir / "sweep.parquet")
    assert list(series) == ["zone", "position_pct", "offset_bytes", "write_mbps", "read_mbps"]
    np.testing.assert_array_equal(series["zone"], np.arange(ZONES))
    off = series["offset_bytes"]
    assert off[0] == 0
    assert np.all(np.diff(off) == s["zone_size_bytes"])
    assert np.all(np.diff(series["position_pct"]) > 0)
    np.testing.assert_allclose(series["position_pct"], off / CAPACITY * 100)
    # The zones tile the span: the last one ends within one zone-rounding of its end.
    assert 0 <= s["span_bytes"] - (off[-1] + s["zone_size_bytes"]) < ZONES * s["bs_bytes"]
    assert s["span_bytes"] == CAPACITY
    for d in ("write", "read"):
        v = series[f"{d}_mbps"]
        assert np.all(np.isfinite(v)) and np.all(v > 0), d
        assert s[f"{d}_mbps_mean"] == pytest.approx(float(np.mean(v)))
        assert s[f"{d}_mbps_min"] == pytest.approx(float(np.min(v)))
        assert s[f"{d}_mbps_max"] == pytest.approx(float(np.max(v)))
    # A clean default-profile drive writes sequentially at its NAND rate (~380 MB/s), a little
    # faster where the 16 MiB write buffer absorbs the first samples, never above the link.
    assert 330 < float(np.median(series["write_mbps"])) < 450
    assert float(np.max(series["write_mbps"])) <= 550 * 1.001
    assert float(np.median(series["read_mbps"])) > 100


def test_sweep_writes_a_small_share_of_the_drive_by_default(sweep_dir):
    s = summary_of(sweep_dir)
    assert s["zone_bytes"] % s["bs_bytes"] == 0
    assert s["sweep_write_bytes"] == ZONES * s["zone_bytes"]
    assert s["sweep_write_bytes"] <= 0.03 * s["span_bytes"]
    # The simulator's own counter says the sweep wrote exactly that, nothing more.
    assert s["counters"]["host_write_bytes"] == s["sweep_write_bytes"]


def test_sweep_full_zones_write_only(tmp_path):
    out = tmp_path / "full"
    run_cli("sweep", *set_args(), "--zones", "4", "--zone-bytes", "full", "--no-read", "--out", str(out))
    s = summary_of(out)
    assert s["zone_bytes"] == s["zone_size_bytes"]
    assert s["counters"]["host_write_bytes"] == s["sweep_write_bytes"] == 4 * s["zone_size_bytes"]
    assert s["sweep_write_bytes"] > 0.99 * CAPACITY
    assert s["read_mbps_mean"] is None and s["write_mbps_mean"] > 0
    series = read_series(out / "sweep.parquet")
    assert np.all(np.isnan(series["read_mbps"])) and np.all(series["write_mbps"] > 0)
    assert [y["y"] for y in s["plot"]["y"]] == ["write_mbps"]


# --------------------------------------------------------------------------- recovery

STAGES = ["clean", "after_torture", "after_idle", "after_trim"]


def test_recovery_results_folder_and_summary(recovery_dir):
    names = {p.name for p in recovery_dir.iterdir()}
    for n in ["summary.json", "sweeps.parquet", "sweeps.csv", "fill.parquet", "torture.parquet", "refill.parquet",
              "retorture.parquet",
              "recovery_write.png", "recovery_write.svg", "recovery_read.png", "recovery_stages.png"]:
        assert n in names, f"{n} missing from {sorted(names)}"
    assert "INCOMPLETE" not in names
    s = summary_of(recovery_dir)
    for k in RUN_KEYS + ["stages", "plot", "torture", "fill", "refill", "retorture", "purge_before_idle", "idle",
                         "trim"] + [f"{st}_write_mbps" for st in STAGES]:
        assert k in s, k
    assert s["test"] == "recovery" and s["complete"] is True
    assert (s["torture_min"], s["idle_min"], s["torture_qd"], s["retorture_before_idle"]) == (20, 40, 32, True)
    assert list(s["stages"]) == STAGES
    assert [st["label"] for st in s["stages"].values()] == ["clean", "after torture", "after idle", "after TRIM"]
    # Each fill wrote the span once; each torture lasted its 20 simulated minutes.
    assert s["fill"]["host_write_bytes"] == s["refill"]["host_write_bytes"] == s["span_bytes"] == CAPACITY
    assert s["torture"]["duration_s"] == s["retorture"]["duration_s"] == pytest.approx(1200.0)
    assert s["idle"]["duration_s"] == pytest.approx(2400.0)
    assert s["torture"]["write_amplification"] > 1.5
    table = s["tables"][0]
    check_table(table, 4)
    assert table["columns"][0] == "stage" and "write avg (MB/s)" in table["columns"]
    col = table["columns"].index("write avg (MB/s)")
    for row, st in zip(table["rows"], STAGES):
        assert row[col] == pytest.approx(s["stages"][st]["write_mbps_mean"], abs=0.05)
        assert s[f"{st}_write_mbps"] == s["stages"][st]["write_mbps_mean"]
    series = read_series(recovery_dir / "sweeps.parquet")
    # One chart per direction, as the PNGs: a line per stage, labelled as the stages.
    assert [(c["series"], c["x"]) for c in s["plot"]] == [("sweeps", "position_pct")] * 2
    assert [[y["label"] for y in c["y"]] for c in s["plot"]] == [[s["stages"][st]["label"] for st in STAGES]] * 2
    ys = [y["y"] for c in s["plot"] for y in c["y"]]
    assert ys == [f"{d}_mbps_{st}" for d in ("write", "read") for st in STAGES]
    for col_name in ys:
        v = series[col_name]
        assert len(v) == ZONES and np.all(v > 0), col_name
        st = col_name.split("_mbps_")[1]
        assert s["stages"][st][col_name.split("_")[0] + "_mbps_min"] == pytest.approx(float(np.min(v)))
    torture = read_series(recovery_dir / "torture.parquet")
    assert len(torture["iops"]) == 1200


def test_recovery_table_shows_first_and_last_zones_and_the_trend(recovery_dir):
    s = summary_of(recovery_dir)
    n = s["edge_zones"]
    assert n == ZONES // 10
    table = s["tables"][1]
    check_table(table, 4)
    assert "first" in table["title"] and [r[0] for r in table["rows"]] == [st["label"] for st in s["stages"].values()]
    first, last = table["columns"].index(f"first {n} zones (MB/s)"), table["columns"].index(f"last {n} zones (MB/s)")
    trend = table["columns"].index("trend (Spearman)")
    series = read_series(recovery_dir / "sweeps.parquet")
    for row, st in zip(table["rows"], STAGES):
        v = series[f"write_mbps_{st}"]
        stage = s["stages"][st]
        assert stage["write_mbps_first_zones"] == pytest.approx(float(np.mean(v[:n])))
        assert stage["write_mbps_last_zones"] == pytest.approx(float(np.mean(v[-n:])))
        assert row[first] == pytest.approx(stage["write_mbps_first_zones"], abs=0.05)
        assert row[last] == pytest.approx(stage["write_mbps_last_zones"], abs=0.05)
        assert s[f"{st}_write_mbps_first_zones"] == stage["write_mbps_first_zones"]
        assert row[trend] is None or -1 <= row[trend] <= 1
        ratio = stage["write_mbps_last_zones"] / stage["write_mbps_first_zones"]
        assert row[table["columns"].index("last / first")] == pytest.approx(ratio, abs=0.006)
    assert "first" in table["note"]


def test_zone_shape_and_spearman():
    rising = np.array([10.0, 20, 15, 30, 40, 35, 50, 60, 55, 70])
    shape = sweep_mod.zone_shape(rising)
    assert shape["first_zones"] == 10 and shape["last_zones"] == 70
    assert 0.9 < shape["trend"] <= 1
    assert sweep_mod.zone_shape(rising[::-1])["trend"] == pytest.approx(-shape["trend"])
    assert sweep_mod.spearman(np.arange(4), np.array([1.0, 1, 2, 2])) == pytest.approx(0.894, abs=0.001)  # ties
    assert sweep_mod.spearman(np.arange(4), np.ones(4)) is None
    assert sweep_mod.zone_shape(np.array([np.nan, 5.0, np.nan]))["first_zones"] == 5
    assert sweep_mod.zone_shape(np.full(3, np.nan)) == {"first_zones": None, "last_zones": None, "trend": None}
    assert [sweep_mod.edge_zones(z) for z in (1, 4, 10, 20, 100, 101)] == [1, 1, 1, 2, 10, 10]


def test_recovery_torture_slows_writes_and_trim_restores_them(recovery_dir):
    st = summary_of(recovery_dir)["stages"]
    clean = st["clean"]["write_mbps_mean"]
    assert clean > 300
    # Seed 000: after the torture the average write drops (M3: 329 -> ~163 MB/s after 20 min,
    # ~50 after 60); the first zones are the worst hit.
    assert st["after_torture"]["write_mbps_mean"] < 0.5 * clean
    assert st["after_torture"]["write_mbps_min"] < 0.25 * clean
    assert st["after_torture"]["write_vs_clean_pct"] == pytest.approx(
        100 * st["after_torture"]["write_mbps_mean"] / clean)
    # After TRIM: as new.
    assert st["after_trim"]["write_mbps_mean"] > 0.85 * clean
    assert st["after_trim"]["write_mbps_mean"] > 2 * st["after_torture"]["write_mbps_mean"]


def test_recovery_idle_time_lets_the_drive_recover(recovery_dir):
    st = summary_of(recovery_dir)["stages"]
    clean = st["clean"]["write_mbps_mean"]
    tortured = st["after_torture"]["write_mbps_mean"]
    idle = st["after_idle"]["write_mbps_mean"]
    # Seed 000: after 40 min idle the M3 is within ~25 MB/s of clean (329 MB/s): > 90 %.
    assert idle > 0.8 * clean
    assert idle > tortured + 0.5 * (clean - tortured)
    assert summary_of(recovery_dir)["idle"]["nand_write_bytes"] > 0 or \
        summary_of(recovery_dir)["idle"]["erases"] > 0


@pytest.mark.realtime
def test_recovery_ctrl_c_keeps_the_stages_measured(tmp_path):
    out = tmp_path / "interrupted"
    _, stderr = interrupt_cli("recovery", *set_args(), "--zones", "10", "--torture-min", "10080", "--out", str(out),
                              ready=lambda: journalled(out, "torture", rows=11), settle_s=0.2)
    assert "partial results kept" in stderr and "Traceback" not in stderr
    assert (out / "INCOMPLETE").exists()
    s = summary_of(out)
    assert s["complete"] is False and s["test"] == "recovery"
    assert list(s["stages"]) == ["clean"]
    assert s["stages"]["clean"]["write_mbps_mean"] > 300
    assert s["torture"]["complete"] is False
    assert 10 < s["torture"]["duration_s"] < 1000000 * 60
    assert len(read_series(out / "torture.parquet")["iops"]) > 10
    assert read_series(out / "sweeps.parquet")["write_mbps_clean"].shape == (10,)
    assert (out / "recovery_write.png").exists()
    assert [r[0] for r in s["tables"][0]["rows"]] == ["clean"]


class _InterruptAfter:
    """A simulated drive whose user presses Ctrl-C after ``n`` phases."""

    def __init__(self, target: SimTarget, n: int):
        self._t, self._left = target, n
        self.name, self.capacity_bytes, self.simulated = target.name, target.capacity_bytes, True

    def run_phase(self, job, progress=None):
        if self._left == 0:
            raise KeyboardInterrupt
        self._left -= 1
        return self._t.run_phase(job, progress)

    def run_phases(self, jobs, progress=None):
        return run_phases_one_by_one(self, jobs, progress)

    def __getattr__(self, name):
        return getattr(self._t, name)


def test_sweep_interrupted_between_zones_keeps_the_zones_measured(tmp_path):
    target = _InterruptAfter(open_target("sim:default", sets=SMALL_DRIVE), 7)
    params = sweep_mod.SweepParams(zones=5)
    with pytest.raises(KeyboardInterrupt):
        sweep_mod.run(target, params, tmp_path / "r", argv=["ssdlab", "sweep"], progress=False)
    s = summary_of(tmp_path / "r")
    assert s["complete"] is False and (tmp_path / "r" / "INCOMPLETE").exists()
    series = read_series(tmp_path / "r" / "sweep.parquet")
    # 5 write zones, then 2 read zones, then Ctrl-C.
    assert np.all(series["write_mbps"] > 0)
    assert np.all(series["read_mbps"][:2] > 0) and np.all(np.isnan(series["read_mbps"][2:]))
    assert s["read_mbps_mean"] == pytest.approx(float(np.mean(series["read_mbps"][:2])))


# --------------------------------------------------------------------------- used

def test_used_results_folder_and_table(used_dir):
    names = {p.name for p in used_dir.iterdir()}
    for n in ["summary.json", "new.parquet", "used.parquet", "trimmed.parquet", "fill.parquet", "dirty.parquet",
              "used.png", "used.svg"]:
        assert n in names, f"{n} missing from {sorted(names)}"
    assert "INCOMPLETE" not in names
    s = summary_of(used_dir)
    for k in RUN_KEYS + ["new_mbps", "used_mbps", "trimmed_mbps", "new_iops", "used_iops", "trimmed_iops", "states",
                         "dirty_write_bytes"]:
        assert k in s, k
    assert s["test"] == "used" and s["complete"] is True
    assert s["dirty_write_bytes"] == s["span_bytes"] == CAPACITY  # default: one span of random writes
    assert s["dirty"]["host_write_bytes"] >= CAPACITY
    table = s["tables"][0]
    check_table(table, 3)
    assert table["columns"] == ["state", "MB/s", "IOPS", "vs new (%)"]
    assert [r[0] for r in table["rows"]] == ["new (purged)", "used (full, no TRIM)", "used after TRIM"]
    for row, key in zip(table["rows"], ["new", "used", "trimmed"]):
        assert row[1] == pytest.approx(s[f"{key}_mbps"], abs=0.01)
        assert s[f"{key}_mbps"] == pytest.approx(s[f"{key}_iops"] * 4096 / 1e6)
        series = read_series(used_dir / f"{key}.parquet")
        assert len(series["iops"]) == 10
        # The per-second series and the state's IOPS count the same completions.
        assert float(np.mean(series["iops"])) == pytest.approx(s[f"{key}_iops"], rel=0.01)


def test_used_and_recovery_series_take_the_interval(tmp_path):
    """--interval sets the measured random writes' series interval (used: each state; recovery:
    the torture); the other phases keep theirs."""
    out = tmp_path / "u"
    run_cli("used", *set_args(), "--duration", "2", "--interval", "0.25", "--dirty-writes", "0", "--out", str(out),
            "--no-progress")
    for state in ("new", "used", "trimmed"):
        t = read_series(out / state)["t_s"]
        assert len(t) == 8 and np.allclose(np.diff(t), 0.25), (state, t)
    from ssdlab.procedures import recovery

    target = SimTarget(load_profile("default", SMALL_DRIVE))
    ph = recovery.phases(target, recovery.RecoveryParams(interval_s=0.5))
    assert ph["torture"].interval_s == ph["retorture"].interval_s == 0.5 and ph["fill"].interval_s == 1.0


def test_used_is_clearly_below_new_and_trim_brings_it_back(used_dir):
    s = summary_of(used_dir)
    # Seed 002: 13.1 / 6.93 / 12.9 MB/s (used 53 % of new, after TRIM 98 %).
    assert s["new_mbps"] > 300  # fresh: the controller's ~90K IOPS
    assert s["used_mbps"] < 0.5 * s["new_mbps"]
    assert s["trimmed_mbps"] > 0.85 * s["new_mbps"]
    assert s["used_vs_new_pct"] == pytest.approx(100 * s["used_mbps"] / s["new_mbps"])
    assert s["states"]["used"]["write_amplification"] > s["states"]["trimmed"]["write_amplification"]


# --------------------------------------------------------------------------- options

@pytest.mark.parametrize("args, word", [
    (["sweep", "--zones", "0"], "--zones"),
    (["sweep", "--zones", "100000000"], "--zones"),
    (["sweep", "--zone-bytes", "100KiB"], "--zone-bytes"),
    (["sweep", "--zones", "20", "--zone-bytes", "1GiB"], "--zone-bytes"),
    (["sweep", "--zone-bytes", "lots"], "--zone-bytes"),
    (["sweep", "--no-read", "--no-write"], "--no-read"),
    (["sweep", "--bs", "1000"], "--bs"),
    (["sweep", "--qd", "0"], "--qd"),
    (["sweep", "--span", "0"], "--span"),
    (["recovery", "--torture-min", "0"], "--torture-min"),
    (["recovery", "--idle-min", "-1"], "--idle-min"),
    (["recovery", "--zones", "0"], "--zones"),
    (["used", "--duration", "0"], "--duration"),
    (["used", "--dirty-writes", "lots"], "--dirty-writes"),
    (["used", "--dirty-writes", "-1x"], "--dirty-writes"),
    (["used", "--qd", "0"], "--qd"),
    (["used", "--target", "nvme0"], "--target"),
])
def test_bad_options_are_clear_errors(tmp_path, args, word):
    sets = [] if "--target" in args else set_args()
    proc = run_cli(*args, *sets, "--out", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2, (args, proc.stderr)
    assert word in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = tmp_path / "x" / "summary.json"
    assert not summary.exists()


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    out = tmp_path / "dry"
    proc = run_cli("recovery", *set_args(), "--zones", "2", "--torture-min", "60", "--dry-run", "--out", str(out))
    phases = [line.split()[2].rstrip(":") for line in proc.stdout.splitlines() if line.startswith("# phase ")]
    sweep = ["write_000", "write_001", "read_000", "read_001"]
    assert phases == ([f"clean_{p}" for p in sweep] + ["fill", "torture"] + [f"after_torture_{p}" for p in sweep]
                      + ["refill", "retorture", "idle"] + [f"after_idle_{p}" for p in sweep] + ["trim"] + [f"after_trim_{p}" for p in sweep])
    assert "duration_s=3600.0" in proc.stdout
    assert not out.exists()


def test_help_states_units_and_defaults():
    for cmd, words in [("sweep", ["default: 100", "128 KiB", "default: 1", "MiB", "must be in [1, 10000]"]),
                       ("recovery", ["default: 20 min", "default: 40 min", "must be in (0, 10080] min",
                                     "or with a unit: 500ms, 90s, 10m, 1h"]),
                       ("used", ["default: 60 s", "must be in (0, 604800] s", "default: 32", "default: 1x"])]:
        out = " ".join(run_cli(cmd, "--help").stdout.split())  # as read, not as wrapped
        for w in words:
            assert w in out, (cmd, w)


# --------------------------------------------------------------------------- sweep GRID.toml

TINY_GRID = f"""\
[grid]
test = "consistency"
set = {json.dumps(SMALL_DRIVE)}
duration_s = 5

[axes]
span_pct = [100, 75]
"""


@pytest.mark.parametrize("args", [["GRID", "--out", "X"], ["GRID", "--dry-run"], ["GRID", "--zones", "5"]])
def test_sweep_is_the_lba_sweep_and_points_a_grid_to_ssdlab_grid(tmp_path, args):
    grid = tmp_path / "tiny.toml"
    grid.write_text(TINY_GRID)
    args = [str(grid) if a == "GRID" else str(tmp_path / "x") if a == "X" else a for a in args]
    proc = run_cli("sweep", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert f"`ssdlab grid {grid}`" in proc.stderr and "LBA sweep" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists() and not (tmp_path / "tiny-results").exists()
    help_text = run_cli("sweep", "--help").stdout
    assert "GRID.toml" not in help_text and "--workers" not in help_text


@pytest.mark.parametrize("args, word", [
    (["--workers", "2", "--out", "X"], "--workers"),
    (["--zones", "5"], "--out"),
])
def test_sweep_refuses_grid_options_and_needs_out(tmp_path, args, word):
    args = [str(tmp_path / "x") if a == "X" else a for a in args]
    proc = run_cli("sweep", *args, check=False)
    assert proc.returncode == 2, proc.stderr
    assert word in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists()
