"""``ssdlab grid``: GRID.toml parsing and validation, point order, and the acceptance test of
issue 7 part 3: the same small grid on the local process pool, serially, and through a dask
``LocalCluster`` on 127.0.0.1 gives identical tables."""
from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import pytest

from ssdlab import grid
from ssdlab.errors import UserError

from conftest import SMALL_DRIVE, interrupt_cli, run_cli

GRID_TOML = f"""\
[grid]
test = "consistency"
title = "test grid"
set = {json.dumps(SMALL_DRIVE)}
duration_s = 60
seed = 7

[axes]
span_pct = [100, 75]
gc_policy = ["greedy", "fifo"]
"""
#: Columns that are not measurements of the drive (wall time differs run to run).
NOT_COMPARED = {"wall_s"}


def _write(tmp_path: Path, text: str, name: str = "grid.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _metric_rows(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in NOT_COMPARED} for r in sorted(rows, key=lambda r: r["point"])]


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("gridfile"), GRID_TOML)


@pytest.fixture(scope="module")
def pool_run(grid_file, tmp_path_factory) -> Path:
    """The grid through the command line on a local pool of 2 processes."""
    out = tmp_path_factory.mktemp("pool") / "out"
    proc = run_cli("grid", str(grid_file), "--out", str(out), "--workers", "2", "--no-progress")
    assert "4 of 4 points" in proc.stdout
    return out


# --------------------------------------------------------------------------- parsing

BAD_GRIDS = [
    # (TOML, words the message must contain besides the file name)
    ('[grid]\ntest = "consistency"\nbogus = 1\n[axes]\nspan_pct = [100]\n', ["bogus", "[grid]"]),
    ('[grid]\ntest = "nope"\n[axes]\nspan_pct = [100]\n', ["test", "nope"]),
    ('[grid]\ntest = "consistency"\n', ["[axes]"]),
    ('[grid]\ntest = "consistency"\n[axes]\nnand_magic = [1, 2]\n', ["nand_magic", "[axes]"]),
    ('[grid]\ntest = "consistency"\n[axes]\nspan_pct = []\n', ["span_pct", "empty"]),
    ('[grid]\ntest = "consistency"\n[axes]\ngc_policy = "fifo"\n', ["gc_policy", "list"]),
    ('[grid]\ntest = "consistency"\n[axes]\nspan_pct = [100, 0]\n', ["span_pct", "(0, 100]"]),
    ('[grid]\ntest = "consistency"\n[axes]\nbs_bytes = [4096, 0]\n', ["bs_bytes", "positive"]),
    ('[grid]\ntest = "consistency"\n[axes]\nqd = [1, 2.5]\n', ["qd"]),
    ('[grid]\ntest = "consistency"\n[axes]\nspan_pct = [100, 100]\n', ["span_pct", "twice"]),
    ('[grid]\ntest = "consistency"\n[axes]\ngc_policy = ["greedy", 3]\n', ["gc_policy", "mixes"]),
    ('[grid]\ntest = "consistency"\n[axes]\ngc_policy = [["greedy"]]\n', ["gc_policy"]),
    ('[grid]\ntest = "consistency"\n[axes]\nblocks_per_plane = [64, -3]\n', ["blocks_per_plane"]),
    ('[grid]\ntest = "consistency"\n[axes]\ngc_policy = ["greedy", "sideways"]\n', ["gc_policy", "sideways"]),
    ('[grid]\ntest = "consistency"\n[axes]\nprofile = ["default", "no-such-drive"]\n', ["no-such-drive"]),
    ('[grid]\ntest = "consistency"\n[axes]\ndirty_spans = [1, 2]\n', ["dirty_spans", "used"]),
    ('[grid]\ntest = "consistency"\nduration_s = 60\n[axes]\nduration_s = [30, 60]\n', ["duration_s", "one place"]),
    ('[grid]\ntest = "consistency"\nset = ["gc_policy=fifo"]\n[axes]\ngc_policy = ["greedy"]\n', ["gc_policy", "one place"]),
    ('[grid]\ntest = "consistency"\nset = ["nand_magic=3"]\n[axes]\nspan_pct = [100]\n', ["set", "nand_magic"]),
    ('[grid]\ntest = "consistency"\ntarget = "file:/tmp/ssdlab-grid-test.bin"\n[axes]\ngc_policy = ["greedy"]\n',
     ["gc_policy", "has no profile", "sim:PROFILE or emu:PROFILE"]),
    ('[grid]\ntest = "consistency"\ntarget = "file:/tmp/ssdlab-grid-test.bin"\nset = ["gc_policy=fifo"]\n'
     '[axes]\nspan_pct = [100]\n', ["set", "drive profile"]),
    ('[grid]\ntest = "consistency"\ntarget = "file:/tmp/ssdlab-grid-test.bin"\n[axes]\nprofile = ["default"]\n',
     ["profile"]),
    # Each value is fine alone; together they leave no spare area: found before anything runs.
    ('[grid]\ntest = "consistency"\nset = ["blocks_per_plane=64"]\n[axes]\nuser_capacity_bytes = ["7GiB", "9GiB"]\n',
     ["point 1", "user_capacity_bytes"]),
    ('[grid]\ntest = "consistency"\n[axes\nspan_pct = [100]\n', ["TOML"]),
    ('[grid]\ntest = "consistency"\ntarget = "nvme:0"\n[axes]\nspan_pct = [100]\n',
     ["target", "nvme:0", "sim:PROFILE", "loop:SIZE", "null:SIZE"]),
]


def test_target_kinds_come_from_the_registry(tmp_path, monkeypatch):
    """A kind registered in ssdlab.targets is accepted, resolved and described by grid with no
    edit of grid.py: its profile (if it takes one) made absolute, its devices one at a time."""
    from ssdlab import targets

    axes = '[axes]\nspan_pct = [100]\n'
    spec = grid.load_grid(_write(tmp_path, '[grid]\ntest = "used"\ntarget = "emu:default"\n'
                                 '[axes]\nprofile = ["default", "stalling"]\n'))
    assert spec.target.startswith("emu:") and spec.real
    assert {p["target"][:4] for p in grid.make_points(spec, tmp_path / "o")} == {"emu:"}
    null = grid.load_grid(_write(tmp_path, f'[grid]\ntest = "consistency"\ntarget = "null:1G"\n{axes}'))
    assert null.target == "null:1G" and not null.real
    with pytest.raises(UserError, match="null:1G has none"):
        grid.load_grid(_write(tmp_path, f'[grid]\ntest = "consistency"\ntarget = "null:1G"\nset = ["gc_policy=fifo"]\n{axes}'))
    monkeypatch.setattr(targets, "KINDS", [*targets.KINDS, targets.Kind("twin:", "twin:PROFILE", "", "twin:default",
                                                                          "sim", profile=True)])
    twin = grid.load_grid(_write(tmp_path, f'[grid]\ntest = "consistency"\ntarget = "twin:stalling"\n{axes}'))
    assert twin.target == "twin:stalling" and not twin.real
    with pytest.raises(UserError, match="twin:PROFILE") as e:
        grid.load_grid(_write(tmp_path, f'[grid]\ntest = "consistency"\ntarget = "file:/x"\n[axes]\nprofile = ["a"]\n'))
    assert "sim:PROFILE or emu:PROFILE or twin:PROFILE" in str(e.value)


@pytest.mark.parametrize("text,words", BAD_GRIDS, ids=[f"bad{i}" for i in range(len(BAD_GRIDS))])
def test_bad_grid_files_name_the_file_and_the_key(tmp_path, text, words):
    path = _write(tmp_path, text, "mygrid.toml")
    with pytest.raises(UserError) as e:
        grid.load_grid(path)
    msg = str(e.value)
    assert "mygrid.toml" in msg, msg
    for w in words:
        assert w in msg, (w, msg)


def test_missing_grid_file_and_cli_error_without_traceback(tmp_path):
    with pytest.raises(UserError, match="no such grid file"):
        grid.load_grid(tmp_path / "absent.toml")
    bad = _write(tmp_path, '[grid]\ntest = "consistency"\n[axes]\nspan_pct = []\n', "bad.toml")
    proc = run_cli("grid", str(bad), "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode == 2
    assert "bad.toml" in proc.stderr and "span_pct" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


def test_cartesian_product_order_and_point_folders(tmp_path):
    path = _write(tmp_path, f"""\
[grid]
test = "consistency"
set = {json.dumps(SMALL_DRIVE)}
[axes]
gc_policy = ["greedy", "fifo"]
span_pct = [100, 75, 50]
qd = [1, 32]
""")
    spec = grid.load_grid(path)
    assert [a.name for a in spec.axes] == ["gc_policy", "span_pct", "qd"]
    assert [a.kind for a in spec.axes] == ["key", "option", "option"]
    points = grid.make_points(spec, tmp_path / "out")
    assert len(points) == spec.n_points == 12
    combos = [(p["values"]["gc_policy"], p["values"]["span_pct"], p["values"]["qd"]) for p in points]
    assert combos == [(g, s, q) for g in ("greedy", "fifo") for s in (100, 75, 50) for q in (1, 32)]
    assert [p["index"] for p in points] == list(range(12))
    assert points[0]["dir"] == "points/000_gc_policy=greedy_span_pct=100_qd=1"
    assert points[11]["dir"] == "points/011_gc_policy=fifo_span_pct=50_qd=32"
    assert Path(points[5]["out"]) == (tmp_path / "out" / "points" / "005_gc_policy=greedy_span_pct=50_qd=32").resolve()
    # Profile keys go after the common overrides; run options go to the test's parameters.
    assert points[7]["sets"] == [*SMALL_DRIVE, "gc_policy=fifo"]
    assert points[7]["options"] == {"span_pct": 100, "qd": 32}
    assert points[7]["target"] == "sim:default"
    # Same file, same points.
    assert grid.make_points(grid.load_grid(path), tmp_path / "out") == points


def test_profile_axis_sizes_and_relative_profile_files(tmp_path):
    (tmp_path / "drives").mkdir()
    (tmp_path / "drives" / "mine.toml").write_text('name = "mine"\ngc_policy = "fifo"\n')
    path = _write(tmp_path, """\
[grid]
test = "consistency"
set = ["blocks_per_plane=64"]
bs_bytes = "8KiB"
[axes]
profile = ["default", "drives/mine.toml"]
user_capacity_bytes = ["6GiB", "7GiB"]
""")
    spec = grid.load_grid(path)
    assert spec.options == {"bs_bytes": 8192}
    points = grid.make_points(spec, tmp_path / "o")
    assert [p["target"] for p in points[::2]] == ["sim:default", f"sim:{(tmp_path / 'drives' / 'mine.toml').resolve()}"]
    # Byte sizes are resolved to numbers in the table (and the plots), given text in folder names.
    assert [p["values"]["user_capacity_bytes"] for p in points[:2]] == [6 * 2**30, 7 * 2**30]
    assert points[0]["dir"] == "points/000_profile=default_user_capacity_bytes=6GiB"
    assert points[2]["dir"].startswith("points/002_profile=mine_")


def test_a_block_size_off_the_4096_byte_unit_is_rounded_with_a_note(tmp_path, capsys):
    path = _write(tmp_path, '[grid]\ntest = "consistency"\nbs_bytes = "4k"\n[axes]\nspan_pct = [100]\n')
    assert grid.load_grid(path).options["bs_bytes"] == 4096  # 4k = 4096 bytes, as in a fio job file
    path = _write(tmp_path, '[grid]\ntest = "consistency"\nbs_bytes = "4KB"\n[axes]\nspan_pct = [100]\n')
    assert grid.load_grid(path).options["bs_bytes"] == 4096
    err = capsys.readouterr().err
    assert "`bs_bytes` = '4KB': 4000 bytes is not a multiple of 4096; using 4096 bytes" in err, err


# --------------------------------------------------------------------------- running

def test_local_pool_table_equals_serial_runs(pool_run, grid_file, tmp_path):
    spec = grid.load_grid(grid_file)
    serial = [grid.run_point(p) for p in grid.make_points(spec, tmp_path / "serial")]
    pooled = grid.read_table(pool_run)
    assert [r["point"] for r in pooled] == [0, 1, 2, 3]
    assert _metric_rows(pooled) == _metric_rows(serial)
    # The axes made a difference: 25 % extra spare area is faster and writes less NAND.
    by = {(r["span_pct"], r["gc_policy"]): r for r in pooled}
    assert by[(75, "greedy")]["iops_median"] > by[(100, "greedy")]["iops_median"]
    assert by[(75, "greedy")]["write_amplification"] < by[(100, "greedy")]["write_amplification"]
    assert all(r["complete"] for r in pooled)


def test_outputs(pool_run):
    names = {p.name for p in pool_run.iterdir()}
    for n in ["grid.parquet", "grid.csv", "summary.json", "points",
              "grid_iops_median_vs_span_pct.png", "grid_iops_median_vs_span_pct.svg",
              "grid_write_amplification_vs_span_pct.png", "grid_iops_median.png"]:
        assert n in names, (n, sorted(names))
    assert "INCOMPLETE" not in names
    s = json.loads((pool_run / "summary.json").read_text())
    assert s["test"] == "grid" and s["complete"] is True
    assert s["points"] == s["points_done"] == 4 and s["failed_points"] == []
    assert s["backend"] == {"kind": "local", "workers": 2, "in_process": False}
    assert s["grid"]["axes"][1] == {"name": "gc_policy", "kind": "key", "values": ["greedy", "fifo"]}
    assert "ssdlab_version" in s and "command_line" in s
    (table,) = s["tables"]
    assert set(table) >= {"title", "columns", "rows"} and table["title"] == "test grid"
    assert table["columns"][:3] == ["point", "span_pct", "gc_policy"]
    assert [r[:3] for r in table["rows"]] == [[0, 100, "greedy"], [1, 100, "fifo"], [2, 75, "greedy"], [3, 75, "fifo"]]
    assert all(n in names for n in s["plots"])
    csv_lines = (pool_run / "grid.csv").read_text().splitlines()
    assert csv_lines[0].startswith("point,span_pct,gc_policy,iops_mean,iops_median")
    assert len(csv_lines) == 5
    for r in grid.read_table(pool_run):
        point_dir = pool_run / r["dir"]
        ps = json.loads((point_dir / "summary.json").read_text())
        assert ps["complete"] is True and ps["seed"] == 7 and ps["duration_s"] == 60
        assert ps["profile"]["gc_policy"] == r["gc_policy"] and ps["span_pct"] == r["span_pct"]
        assert ps["iops_median"] == r["iops_median"]
        assert not (point_dir / "INCOMPLETE").exists()


def test_dask_local_cluster_gives_the_same_table(pool_run, grid_file, tmp_path):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    spec = grid.load_grid(grid_file)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        summary = grid.run_grid(spec, tmp_path / "dask", scheduler=cluster.scheduler_address, progress=False)
    assert summary["complete"] is True
    assert summary["backend"]["kind"] == "dask" and summary["backend"]["workers"] == 2
    dask_rows, pool_rows = grid.read_table(tmp_path / "dask"), grid.read_table(pool_run)
    assert list(dask_rows[0]) == list(pool_rows[0])  # same columns, same order
    assert _metric_rows(dask_rows) == _metric_rows(pool_rows)
    assert (tmp_path / "dask" / "grid.csv").exists()
    assert all((tmp_path / "dask" / r["dir"] / "summary.json").exists() for r in dask_rows)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_bad_scheduler_address_is_a_quick_clear_error(grid_file, tmp_path):
    pytest.importorskip("distributed")
    spec = grid.load_grid(grid_file)
    address = f"tcp://127.0.0.1:{_closed_port()}"
    t0 = time.monotonic()
    with pytest.raises(UserError) as e:
        grid.run_grid(spec, tmp_path / "never", scheduler=address, connect_timeout=2)
    assert time.monotonic() - t0 < 15
    assert address in str(e.value) and "scheduler" in str(e.value)
    assert not (tmp_path / "never").exists()
    proc = run_cli("grid", str(grid_file), "--out", str(tmp_path / "never2"), "--scheduler", address,
                   "--connect-timeout", "1", check=False, timeout=60)
    assert proc.returncode == 2 and address in proc.stderr and "Traceback" not in proc.stderr


def test_used_grid_and_dry_run(tmp_path):
    path = _write(tmp_path, f"""\
[grid]
test = "used"
set = {json.dumps(SMALL_DRIVE)}
duration_s = 10
[axes]
span_pct = [100, 50]
""")
    proc = run_cli("grid", str(path), "--out", str(tmp_path / "dry"), "--dry-run")
    assert "2 points" in proc.stdout and "points/000_span_pct=100" in proc.stdout
    assert not (tmp_path / "dry").exists()
    summary = grid.run_grid(grid.load_grid(path), tmp_path / "used", workers=1, progress=False)
    assert summary["complete"] and summary["backend"]["in_process"]
    rows = grid.read_table(tmp_path / "used")
    assert [r["span_pct"] for r in rows] == [100, 50]
    assert all(r["used_mbps"] < r["new_mbps"] for r in rows)
    assert (tmp_path / "used" / "grid_used_mbps_vs_span_pct.png").exists()


@pytest.mark.realtime
def test_ctrl_c_keeps_finished_rows_and_marks_the_grid_incomplete(tmp_path):
    path = _write(tmp_path, f"""\
[grid]
test = "consistency"
set = {json.dumps(SMALL_DRIVE)}
[axes]
duration_s = [30, 3000000, 4000000, 5000000]
""")
    out = tmp_path / "out"
    first = out / "points" / "000_duration_s=30"
    interrupt_cli("grid", str(path), "--out", str(out), "--workers", "2",
                  ready=lambda: (first / "summary.json").exists() and not (first / "INCOMPLETE").exists(),
                  settle_s=1.0,  # the long point is under way
                  preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False and s["points_done"] == 1
    assert [p["point"] for p in s["interrupted_points"]] == [1, 2]
    assert (out / "INCOMPLETE").exists()
    assert [r["point"] for r in grid.read_table(out)] == [0]
    # The interrupted points kept what they measured, marked incomplete; the last never started.
    for name in ("001_duration_s=3000000", "002_duration_s=4000000"):
        assert json.loads((out / "points" / name / "summary.json").read_text())["complete"] is False
        assert (out / "points" / name / "INCOMPLETE").exists()
    assert not (out / "points" / "003_duration_s=5000000").exists()


def test_example_grid_resolves():
    """The grid shipped in examples/ must stay valid (every key and profile resolves)."""
    from conftest import REPO, run_cli

    proc = run_cli("grid", str(REPO / "examples" / "spare-vs-policy.toml"), "--dry-run")
    assert "6 points" in proc.stdout and "gc_policy=cost-benefit" in proc.stdout
