"""Results folder: series round trips, summary.json strictness, overwrite refusal, atomicity."""
from __future__ import annotations

import csv
import datetime as dt
import json
import os
import shlex
from pathlib import Path

import numpy as np
import pytest

import ssdlab
from ssdlab import results
from ssdlab.results import (
    ResultsDir,
    ResultsDirError,
    atomic_write,
    incomplete_reason,
    is_results_dir,
    mark_incomplete,
    read_series,
    read_summary,
    run_metadata,
    to_jsonable,
    write_series,
    write_summary,
)


def _series(n: int = 50) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    iops = rng.normal(20000, 5000, n)
    iops[3] = 0.0
    frac = rng.random(n).astype(np.float32)
    frac[5] = np.nan
    return {
        "t_s": np.arange(n, dtype=np.float64),
        "iops": iops,  # float64 with values that need all 17 digits
        "mbps": iops * 4096 / 1e6,
        "free_blocks": rng.integers(0, 2**40, n, dtype=np.int64),
        "gc_copies": rng.integers(0, 2**31, n, dtype=np.uint32),
        "level": rng.integers(-100, 100, n, dtype=np.int8),
        "valid_frac": frac,
        "in_gc": rng.random(n) < 0.5,
        "tiny": np.array([1e-300, 5e-324, -0.0, np.inf, -np.inf] * (n // 5)),
    }


def _no_temp_files(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".")]


# --------------------------------------------------------------------------- series

def test_parquet_round_trip_is_exact_values_and_dtypes(tmp_path):
    s = _series()
    paths = write_series(tmp_path, "consistency", s)
    assert paths == {"parquet": tmp_path / "consistency.parquet", "csv": tmp_path / "consistency.csv"}
    back = read_series(paths["parquet"])
    assert list(back) == list(s)
    for col, arr in s.items():
        assert back[col].dtype == arr.dtype, col
        # byte-for-byte, so -0.0 vs 0.0 and NaN payloads count too
        assert back[col].tobytes() == arr.tobytes(), col


def test_series_files_are_what_pyarrows_own_conversion_writes(tmp_path):
    # write_series builds its Arrow arrays from the numpy buffers (pa.array looks for pandas);
    # the bytes must be those of pa.array's arrays, NaN as null in the CSV only.
    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    s = {**_series(), "strided": np.linspace(0.0, 1.0, 100)[::2], "empty_nan": np.full(50, np.nan)}
    write_series(tmp_path, "x", s)
    pq.write_table(pa.table({c: pa.array(a) for c, a in s.items()}), tmp_path / "want.parquet", compression="zstd")
    assert (tmp_path / "x.parquet").read_bytes() == (tmp_path / "want.parquet").read_bytes()
    pa_csv.write_csv(pa.table({c: pa.array(a, from_pandas=a.dtype.kind == "f") for c, a in s.items()}),
                     tmp_path / "want.csv", pa_csv.WriteOptions(include_header=False, quoting_style="needed"))
    assert (tmp_path / "x.csv").read_text().split("\n", 1)[1] == (tmp_path / "want.csv").read_text()


def test_csv_round_trip_values(tmp_path):
    s = _series()
    write_series(tmp_path, "consistency", s)
    back = read_series(tmp_path / "consistency.csv")
    assert list(back) == list(s)
    for col, arr in s.items():
        got = back[col]
        if arr.dtype.kind == "f":
            got = got.astype(arr.dtype)  # CSV has no float32; the shortest repr casts back exactly
        np.testing.assert_array_equal(got, arr, err_msg=col)
    assert back["free_blocks"].dtype == np.int64
    assert back["in_gc"].dtype == bool


def test_csv_is_plain_for_spreadsheets(tmp_path):
    s = {"t_s": np.array([0.0, 1.0, 2.0]), "iops": np.array([12345.0, np.nan, 0.1]), "n": np.array([1, 2, 3])}
    write_series(tmp_path, "x", s)
    text = (tmp_path / "x.csv").read_text()
    lines = text.splitlines()
    assert lines[0] == "t_s,iops,n"  # unquoted header
    assert lines[1:] == ["0,12345,1", "1,,2", "2,0.1,3"]  # NaN -> empty cell, shortest numbers
    rows = list(csv.DictReader(text.splitlines()))
    assert float(rows[2]["iops"]) == 0.1


def test_read_series_without_suffix_prefers_parquet(tmp_path):
    s = {"t_s": np.arange(3, dtype=np.float32), "iops": np.arange(3, dtype=np.int32)}
    write_series(tmp_path, "run", s)
    back = read_series(tmp_path / "run")
    assert back["t_s"].dtype == np.float32 and back["iops"].dtype == np.int32
    with pytest.raises(FileNotFoundError, match="nothere"):
        read_series(tmp_path / "nothere")


def test_unequal_lengths_name_the_column_and_write_nothing(tmp_path):
    s = {"t_s": np.arange(10.0), "iops": np.ones(10), "mbps": np.ones(9)}
    with pytest.raises(ValueError, match=r"'mbps' has 9 rows.*'t_s' has 10"):
        write_series(tmp_path, "bad", s)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "series, match",
    [
        ({"t_s": np.zeros((3, 2))}, "'t_s' must be 1-D"),
        ({"t_s": np.array(["a", "b"])}, "'t_s' has dtype"),
        ({3: np.zeros(3)}, "column name 3"),
    ],
)
def test_bad_columns_are_rejected(tmp_path, series, match):
    with pytest.raises(ValueError, match=match):
        write_series(tmp_path, "bad", series)


def test_series_name_must_be_a_file_name(tmp_path):
    with pytest.raises(ValueError, match="plain file name"):
        write_series(tmp_path, "../escape", {"t_s": np.zeros(1)})


# --------------------------------------------------------------------------- summary

def test_summary_is_strict_json_with_numpy_and_nan_converted(tmp_path):
    summary = {
        "zeta": 1,  # insertion order must be kept, not sorted
        "metrics": {
            "iops_mean": np.float64(12345.5),
            "iops_p1": np.float32(0.5),
            "stall_s": np.int64(7),
            "steady": np.bool_(True),
            "cov": float("nan"),
            "consistency": np.float64("inf"),
            "neg": -np.inf,
            "hist": np.array([1.0, np.nan, 3.0]),
            "counts": np.arange(3, dtype=np.uint16),
        },
        "out": Path("/tmp/some run"),
        "alpha": (1, 2),
        5: "int key",
    }
    path = write_summary(tmp_path, summary)
    assert path == tmp_path / "summary.json"
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert text.startswith("{\n  ")  # pretty-printed

    def no_constants(name):
        raise AssertionError(f"non-strict JSON constant {name}")

    data = json.loads(text, parse_constant=no_constants)
    assert list(data) == ["zeta", "metrics", "out", "alpha", "5"]
    m = data["metrics"]
    assert m["iops_mean"] == 12345.5 and isinstance(m["iops_mean"], float)
    assert m["iops_p1"] == 0.5
    assert m["stall_s"] == 7 and isinstance(m["stall_s"], int)
    assert m["steady"] is True
    assert m["cov"] is None and m["consistency"] is None and m["neg"] is None
    assert m["hist"] == [1.0, None, 3.0]
    assert m["counts"] == [0, 1, 2]
    assert data["out"] == "/tmp/some run"
    assert data["alpha"] == [1, 2]
    assert read_summary(tmp_path) == data
    assert read_summary(path) == data


def test_summary_rejects_unknown_objects_and_says_where(tmp_path):
    with pytest.raises(TypeError, match=r"summary\['metrics'\]\['bad'\]"):
        write_summary(tmp_path, {"metrics": {"bad": object()}})
    assert not (tmp_path / "summary.json").exists()


def test_to_jsonable_handles_dataclasses():
    from ssdlab.targets.base import JobSpec

    job = JobSpec(name="rw", pattern="randwrite", duration_s=2000.0)
    out = to_jsonable({"job": job})
    assert out["job"]["name"] == "rw" and out["job"]["qd"] == 32 and out["job"]["span_bytes"] is None
    json.dumps(out, allow_nan=False)


def test_run_metadata():
    argv = ["ssdlab", "run", "consistency", "--target", "sim:default", "--out", "my results/run 1"]
    meta = run_metadata(argv)
    for key in ("ssdlab_version", "python_version", "platform", "hostname", "command_line", "started_utc"):
        assert meta[key], key
    assert meta["ssdlab_version"] == ssdlab.__version__
    assert shlex.split(meta["command_line"]) == argv
    started = dt.datetime.fromisoformat(meta["started_utc"])
    assert started.utcoffset() == dt.timedelta(0)
    assert abs((dt.datetime.now(dt.timezone.utc) - started).total_seconds()) < 60
    json.dumps(to_jsonable(meta), allow_nan=False)
    from importlib import metadata

    assert meta["libraries"] == {n: metadata.version(n) for n in ("numpy", "pyarrow", "matplotlib")}


# --------------------------------------------------------------------------- results folder

def test_refuses_foreign_non_empty_folder(tmp_path):
    out = tmp_path / "photos"
    out.mkdir()
    (out / "holiday.jpg").write_bytes(b"precious")
    with pytest.raises(ResultsDirError) as e:
        ResultsDir(out)
    msg = str(e.value)
    assert str(out) in msg and "--force" in msg and "--out" in msg
    assert sorted(p.name for p in out.iterdir()) == ["holiday.jpg"]  # nothing written

    # overwrite=True writes into it but never deletes anything
    rd = ResultsDir(out, overwrite=True)
    rd.write_summary({"x": 1})
    assert (out / "holiday.jpg").read_bytes() == b"precious"


def test_refuses_summary_json_not_from_ssdlab(tmp_path):
    (tmp_path / "summary.json").write_text('{"quarter": "Q3"}')
    with pytest.raises(ResultsDirError):
        ResultsDir(tmp_path)


def test_a_summary_or_marker_that_is_not_utf8_is_named_or_shown_not_a_traceback(tmp_path, capsys):
    """Bytes that are not UTF-8 (a damaged disk, a file written over): summary.json is refused
    naming the file; an INCOMPLETE marker's reason is shown with the bad bytes replaced; the
    report and compare commands end with a message, never a traceback."""
    from ssdlab import cli

    (tmp_path / "summary.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(ValueError, match=r"summary\.json: not a valid summary\.json \('utf-8' codec"):
        read_summary(tmp_path)
    assert cli.main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 2
    assert f"{tmp_path}/summary.json: not a valid summary.json" in capsys.readouterr().err
    marked = tmp_path / "marked"
    marked.mkdir()
    (marked / "INCOMPLETE").write_bytes(b"\xff\xfe\x00 stopped\n")
    assert incomplete_reason(marked) == "\ufffd\ufffd\x00 stopped"


def test_refuses_a_file(tmp_path):
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(ResultsDirError, match="not a folder"):
        ResultsDir(f, overwrite=True)


def test_reuses_empty_new_and_previous_ssdlab_folders(tmp_path):
    ResultsDir(tmp_path / "new" / "nested")  # created with parents
    (tmp_path / "empty").mkdir()
    ResultsDir(tmp_path / "empty")

    prev = tmp_path / "prev"
    with ResultsDir(prev) as rd:
        rd.write_summary({"run": run_metadata(["ssdlab"]), "metrics": {}})
    assert is_results_dir(prev)
    ResultsDir(prev)  # a previous run's folder may be reused without --force

    crashed = tmp_path / "crashed"
    ResultsDir(crashed)  # marker written, never finished (process killed)
    (crashed / "consistency.csv").write_text("t_s\n0\n")
    assert incomplete_reason(crashed) == "in progress"
    ResultsDir(crashed)


def test_clean_exit_removes_marker(tmp_path):
    with ResultsDir(tmp_path / "r") as rd:
        assert (rd.path / "INCOMPLETE").exists()
        rd.write_summary({**run_metadata(["ssdlab"]), "complete": True})
    assert not (rd.path / "INCOMPLETE").exists()
    assert incomplete_reason(rd.path) is None
    assert read_summary(rd.path)["complete"] is True


def test_interrupt_marks_incomplete_and_keeps_partial_results(tmp_path):
    out = tmp_path / "r"
    with pytest.raises(KeyboardInterrupt):
        with ResultsDir(out) as rd:
            rd.write_series("consistency", {"t_s": np.arange(5.0), "iops": np.ones(5)})
            rd.write_summary({**run_metadata(["ssdlab"]), "complete": True})
            raise KeyboardInterrupt
    assert incomplete_reason(out) == "interrupted (Ctrl-C)"
    s = read_summary(out)
    assert s["complete"] is False and s["incomplete_reason"] == "interrupted (Ctrl-C)"
    assert len(read_series(out / "consistency.parquet")["iops"]) == 5
    assert _no_temp_files(out) == []


def test_marked_incomplete_summary_written_afterwards_says_so(tmp_path):
    with ResultsDir(tmp_path / "r") as rd:
        rd.mark_incomplete("SIGTERM after 812 s")
        rd.write_summary({"metrics": {}, "complete": True})
    assert incomplete_reason(rd.path) == "SIGTERM after 812 s"
    assert read_summary(rd.path)["complete"] is False


def test_mark_incomplete_function_updates_existing_summary(tmp_path):
    write_summary(tmp_path, {"a": 1})
    mark_incomplete(tmp_path, "fio died")
    assert read_summary(tmp_path) == {"a": 1, "complete": False, "incomplete_reason": "fio died"}
    assert incomplete_reason(tmp_path) == "fio died"


# --------------------------------------------------------------------------- atomicity

def test_writes_leave_no_temp_files(tmp_path):
    write_series(tmp_path, "a", _series())
    write_summary(tmp_path, {"a": 1})
    write_summary(tmp_path, {"a": 2})  # replace
    mark_incomplete(tmp_path, "x")
    assert _no_temp_files(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["INCOMPLETE", "a.csv", "a.parquet", "summary.json"]


def test_interrupted_write_keeps_old_file_and_no_temp(tmp_path):
    target = tmp_path / "summary.json"
    target.write_text('{"old": true}\n')

    def half_then_ctrl_c(f):
        f.write(b'{"new": tr')
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, half_then_ctrl_c)
    assert target.read_text() == '{"old": true}\n'
    assert _no_temp_files(tmp_path) == []


def test_interrupted_summary_rename_keeps_old_summary(tmp_path, monkeypatch):
    write_summary(tmp_path, {"run": 1})

    def boom(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(results.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        write_summary(tmp_path, {"run": 2})
    monkeypatch.undo()
    assert read_summary(tmp_path) == {"run": 1}
    assert _no_temp_files(tmp_path) == []


def test_written_files_respect_umask_not_0600(tmp_path):
    path = write_summary(tmp_path, {"a": 1})
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask


# --------------------------------------------------------------------------- the journal

@pytest.fixture
def no_run(monkeypatch):
    """No results folder of an earlier test counts as the run going on."""
    monkeypatch.setattr(results, "_ACTIVE", [])


def test_phase_journal_round_trips_values_and_ignores_a_torn_last_line(tmp_path, no_run):
    from ssdlab import journal

    with ResultsDir(tmp_path / "r") as rd:
        assert results.current_dir() is rd
        j = results.open_phase_journal("randwrite", "test")
        s = {"t_s": np.arange(3.0), "iops": np.array([1 / 3, np.nan, np.inf]), "n": np.array([1, 2, 3], np.int64)}
        j.append(s)
        j.append({c: v[:1] for c, v in s.items()})
        with open(j.path, "a") as f:
            f.write("[3.0, 0.25")  # the run died while writing this line
        got = journal.read_phase(j.path)
        assert got.rows == 4 and not got.ended and got.name == "randwrite"
        for c, v in s.items():
            want = np.concatenate([v, v[:1]])
            assert got.series[c].dtype == v.dtype
            assert np.array_equal(got.series[c], want, equal_nan=True), c
        assert any("cut off" in n for n in got.notes)
        rebuilt = journal.rebuild(rd.path)
        assert rebuilt.main.rows == 4 and "4 intervals of phase 'randwrite'" in rebuilt.describe()
    # A run that ends normally keeps only its final files.
    assert not (tmp_path / "r" / "journal").exists()
    assert results.current_dir() is None


def test_interrupted_run_keeps_its_journal(tmp_path, no_run):
    with pytest.raises(KeyboardInterrupt):
        with ResultsDir(tmp_path / "r"):
            results.record_head({"test": "consistency", "target": "sim:default"})
            results.open_phase_journal("fill", "test").append({"t_s": np.zeros(1)})
            raise KeyboardInterrupt
    assert json.loads((tmp_path / "r" / "journal" / "head.json").read_text())["test"] == "consistency"
    assert (tmp_path / "r" / "journal" / "001-fill.jsonl").exists()


def test_no_journal_without_a_run(tmp_path, no_run):
    assert results.current_dir() is None
    assert results.open_phase_journal("x", "test") is None


def test_in_progress_marker_of_a_dead_process_reads_as_killed(tmp_path):
    import subprocess
    import sys

    rd = ResultsDir(tmp_path / "r")
    assert "still running" in results.describe_incomplete(rd.path)
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    marker = rd.path / results.INCOMPLETE_NAME
    text = marker.read_text().replace(f"pid {os.getpid()} ", f"pid {proc.stdout.strip()} ")
    marker.write_text(text)
    assert results.describe_incomplete(rd.path).startswith("killed: ")
    assert results.incomplete_reason(rd.path) == "in progress"
    rd.finish()
