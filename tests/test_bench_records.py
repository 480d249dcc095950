"""Benchmark records (benches/records.py): what a run appends, what it is compared with, the
table BENCHMARKS.md is rendered with, and A/B runs that must not become records."""
from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

BENCHES = Path(__file__).resolve().parents[1] / "benches"


@pytest.fixture()
def records(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHES))
    mod = importlib.import_module("records")
    monkeypatch.setattr(mod, "RECORDS", tmp_path / "records")
    monkeypatch.delenv(mod.AB_FIGURES_ENV, raising=False)
    yield mod
    sys.modules.pop("records", None)


def test_a_run_is_recorded_and_compared_with_the_last_of_the_same_parameters(records, capsys):
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 4.0e6, "wa": 7.5})
    records.Recorder("demo", {"ios": 99}).write({"io_per_cpu_s": 1.0e6, "wa": 2.0})
    capsys.readouterr()
    rec = records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 5.0e6, "wa": 7.5})
    out = capsys.readouterr().out
    # compared with the first run (same parameters), not the second
    assert "ratio  1.250" in out and "ratio  1.000" in out
    rows = records.read("demo")
    assert len(rows) == 3 and rows[-1] == json.loads(json.dumps(rec))
    for key in ("commit", "date", "machine", "load_before", "load_after", "params", "figures"):
        assert key in rows[-1]
    assert rows[-1]["machine"]["nproc"] >= 1


def test_a_record_of_another_machine_is_not_compared(records, capsys, monkeypatch):
    """A ratio against another machine's figure compares machines, not builds."""
    here = records.machine_info()
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 4.0e6})
    monkeypatch.setattr(records, "machine_info", lambda: {**here, "cpu": "Another CPU", "nproc": 64})
    capsys.readouterr()
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 8.0e6})
    out = capsys.readouterr().out
    assert "nothing to compare" in out and "ratio" not in out and "Another CPU" in out
    # The first machine's next run is compared with its own record, not the other's.
    monkeypatch.setattr(records, "machine_info", lambda: here)
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 5.0e6})
    assert "ratio  1.250" in capsys.readouterr().out


def test_first_run_says_there_is_nothing_to_compare(records, capsys):
    records.Recorder("fresh", {}).write({"wall_s": 1.0})
    assert "nothing to compare" in capsys.readouterr().out


def test_render_writes_the_newest_record_per_parameter_set_between_markers(records, tmp_path):
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 4.0e6})
    records.Recorder("demo", {"ios": 10}).write({"io_per_cpu_s": 5.0e6})
    records.Recorder("demo", {"ios": 99}).write({"io_per_cpu_s": 1.0e6})
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\nprose that stays\n")
    text = records.render(md)
    assert text.count(records.BEGIN) == 1 and "prose that stays" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| demo")]
    assert len(rows) == 2
    assert any("5e+06" in r or "5,000,000" in r for r in rows) and not any("4e+06" in r for r in rows)
    # rendering again replaces the table instead of adding one
    md.write_text(text)
    assert records.render(md).count(records.BEGIN) == 1


def test_an_ab_run_writes_its_figures_to_the_file_and_no_record(records, tmp_path, monkeypatch):
    out = tmp_path / "figs.json"
    monkeypatch.setenv(records.AB_FIGURES_ENV, str(out))
    records.Recorder("demo", {}).write({"wall_s": 2.0})
    assert json.loads(out.read_text()) == {"wall_s": 2.0}
    assert records.read("demo") == []


def test_make_bench_runs_every_benchmark_in_benches():
    """`make bench` names every benches/bench_*.py and every cargo bench target, so a
    benchmark added without a line in the Makefile is caught here."""
    import re

    root = BENCHES.parent
    recipe = re.search(r"^bench: .*?\n((?:\t.*\n)+)", (root / "Makefile").read_text(), re.M).group(1)
    scripts = {p.name for p in BENCHES.glob("bench_*.py")}
    named = set(re.findall(r"benches/(bench_\w+\.py)", recipe))
    assert scripts - named == set(), "benchmarks missing from `make bench`"
    assert named - scripts == set(), "`make bench` names a benchmark that does not exist"
    cargo = {(p.parents[1].name, p.stem) for p in root.glob("crates/*/benches/*.rs")}
    assert cargo and cargo <= set(re.findall(r"benches/bench_cargo\.py (\w+) (\w+)", recipe))


@pytest.fixture()
def bench_cargo(records):
    mod = importlib.import_module("bench_cargo")
    yield mod
    sys.modules.pop("bench_cargo", None)


def test_a_cargo_benchmark_table_is_read_by_its_header_names(bench_cargo):
    text = ("steady-state 4 KiB random write QD32\n"
            "drive           median IO/s       min IO/s       max IO/s       IO/CPU-s       WA    setup s              check\n"
            "32G                 6417657        4216971        7253545        6422059     8.55        1.5   0123456789012345\n"
            "256G                5000000        4000000        6000000        5100000     7.54       30.0   e726d1b6c54299e4\n")
    got = bench_cargo.figures("steady_state", text)
    assert got["32G_io_per_cpu_s"] == 6422059 and got["256G_io_per_s"] == 5e6 and got["256G_wa"] == 7.54
    # a hash of digits only stays the hash, not a number
    assert got["32G_check"] == "0123456789012345" and "32G_min_io_s" not in got
    one = ("    commands    wall s     CPU s        cmd/s    cmd/CPU-s     WA              check\n"
           "    37400000     19.20     19.00      1947916      1968421   5.21   a5f8d842cd8f3dc5\n")
    assert bench_cargo.figures("replay", one) == {"commands": 37.4e6, "wall_s": 19.2, "cpu_s": 19.0,
                                                  "cmd_per_cpu_s": 1968421, "wa": 5.21, "check": "a5f8d842cd8f3dc5"}
    with pytest.raises(ValueError, match="parse: no table"):
        bench_cargo.figures("parse", text)


def test_the_cargo_benchmarks_print_the_columns_their_figures_are_read_from(bench_cargo):
    """A column renamed in a Rust benchmark's header would leave its figure unrecorded."""
    root = BENCHES.parent
    for path in root.glob("crates/*/benches/*.rs"):
        src = path.read_text()
        for name in bench_cargo.COLUMNS[path.stem]:
            assert f'"{name}"' in src, f"{path.name} prints no column {name!r}"


def test_each_baseline_tree_builds_its_rust_benchmarks_in_a_target_of_its_own(bench_cargo, tmp_path):
    """Cargo names a workspace's binaries alike in every checkout and judges them fresh by the
    sources' times: in one shared target directory a baseline tree would run the binary
    another tree built last."""
    envs = {}
    for name in ("aaaaaaaaaa", "bbbbbbbbbb"):
        (tmp_path / name / "python").mkdir(parents=True)
        tree, env = bench_cargo.build_tree({bench_cargo.AB_FIGURES_ENV: "/tmp/f.json",
                                            "PYTHONPATH": str(tmp_path / name / "python")})
        assert tree == tmp_path / name
        envs[name] = env["CARGO_TARGET_DIR"]
    assert envs["aaaaaaaaaa"] != envs["bbbbbbbbbb"]
    # this tree, measured as A, builds where it always does
    tree, env = bench_cargo.build_tree({"PYTHONPATH": "/elsewhere/python"})
    assert tree == bench_cargo.HERE.parent and "CARGO_TARGET_DIR" not in env
