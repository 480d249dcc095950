"""``ssdlab fit``: a planted drive is measured with ``ssdlab consistency``, then fitted from its
results folder alone.

The drive: 2 dies x 2 planes, 1 MiB blocks, 1536 MiB user capacity; its 4 planes program
4 x 16 KiB per t_prog, so its fresh-out-of-box phase is slow enough (~8.5K IOPS) to last
~12 s of a 60 s run, and spare area moves in steps of 4 MiB (0.26 % of the capacity). The
planted drive has 25 % spare area and 1800 µs program time; the base profile the fit starts
from has 33 % and 1300 µs. The fit simulates with its own seed (as it would a real drive):
the planted profile itself then scores 0.02-0.04 (the noise floor of the distance), a
profile with the wrong spare area or program time above 0.15. Tolerances (stated here,
checked below): with 60 simulations the fit's distance is <= 0.08 (a mean log error of
about 8 %), spare area within 10 % of the planted 25 % and program time within 10 % of the
planted 1800 µs, and the fitted profile, run through
``ssdlab consistency`` itself, repeats the measured steady state within 10 % and the end of
the fresh-out-of-box phase within 3 s. Figures are relative to the planted drive's own run,
not hard-coded IOPS: the simulator may change.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import interrupt_cli, run_cli
from ssdlab import profiles, results
from ssdlab.errors import UserError

PLANTED = {"spare_pct": 25.0, "t_prog_us": 1800.0}
#: Base geometry: blocks_per_plane 512 = 33.3 % spare at 1536 MiB; the planted drive has 480 (25 %).
GEOMETRY = ["channels=1", "dies_per_channel=2", "planes_per_die=2", "pages_per_block=64",
            "blocks_per_plane=512", "user_capacity_bytes=1536MiB"]
DURATION_S = "60"
KEYS = ["--key", "spare_pct=10:50", "--key", "t_prog_us=500:4000"]


def _toml(values: dict) -> str:
    return "".join(f"{k} = {json.dumps(v) if isinstance(v, str) else v}\n" for k, v in values.items())


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fit")


@pytest.fixture(scope="module")
def base(work) -> Path:
    """The starting profile: every key of `default`, on the small geometry (33 % spare)."""
    path = work / "base.toml"
    path.write_text(_toml({**profiles.load_profile("default", GEOMETRY).values, "name": "small-base"}))
    return path


@pytest.fixture(scope="module")
def planted(work, base) -> Path:
    """The 'measured' drive: the base with 25 % spare and slower programs, run by the real CLI."""
    out = work / "planted"
    run_cli("consistency", "--target", f"sim:{base}", "--set", "blocks_per_plane=480", "--set", "t_prog_us=1800",
            "--duration", DURATION_S, "--out", str(out), "--no-progress")
    return out


@pytest.fixture(scope="module")
def fitted(work, base, planted):
    out = work / "twin"
    proc = run_cli("fit", str(planted), "--base", str(base), *KEYS, "--evals", "60", "--seed", "3", "--workers", "2",
                   "--out", str(out), "--no-progress")
    return out, proc


def test_fit_recovers_the_planted_drive(fitted, planted):
    out, proc = fitted
    s = results.read_summary(out)
    assert s["test"] == "fit" and s["complete"] is True
    assert s["distance"] <= 0.08, s["terms"]
    spare, tprog = s["fitted"]["spare_pct"], s["fitted"]["t_prog_us"]
    assert abs(spare - PLANTED["spare_pct"]) <= 0.10 * PLANTED["spare_pct"], spare
    assert abs(tprog - PLANTED["t_prog_us"]) <= 0.10 * PLANTED["t_prog_us"], tprog
    assert s["search"]["evals_simulated"] <= 60
    # the terminal table: every term, the keys and what the data says about them
    for word in ("fob_level", "fob_length", "steady_p50", "curve", "spare_pct", "t_prog_us", "identifiability"):
        assert word in proc.stdout, proc.stdout
    ident = {r["key"]: r for r in s["identifiability"]}
    assert set(ident) == {"spare_pct", "t_prog_us"}
    assert ident["spare_pct"]["verdict"] in ("pinned", "weakly identified"), ident
    assert ident["spare_pct"]["near_min"] <= spare <= ident["spare_pct"]["near_max"]
    # outputs
    for name in ("fitted.toml", "fit.png", "fit.svg", "history.parquet", "history.csv", "report.html"):
        assert (out / name).exists(), name
    assert not (out / results.INCOMPLETE_NAME).exists()
    import pyarrow.parquet as pq

    hist = pq.read_table(out / "history.parquet").to_pylist()
    simulated = [r for r in hist if r["eval"] is not None]
    assert len(simulated) == s["search"]["evals_simulated"]
    searched = [r for r in simulated if not r["step"].startswith("check")]
    assert min(r["distance"] for r in searched if r["distance"] is not None) == pytest.approx(s["distance"])
    # the checks: the best again with two other seeds (no full-size one: the fit ran at full size)
    assert [r["step"] for r in simulated if r["step"].startswith("check")] == ["check-seed", "check-seed"]
    assert s["checks"]["checked"] and s["checks"]["noise"] >= 0
    assert "term:steady_p50" in hist[0]
    html = (out / "report.html").read_text()
    assert "distance terms" in html and "identifiability" in html


def test_fitted_profile_loads_and_reproduces_the_series(fitted, planted, work):
    out, _ = fitted
    prof = profiles.load_profile(str(out / "fitted.toml"))
    measured = results.read_summary(planted)
    assert prof.user_bytes == measured["capacity_bytes"]
    s = results.read_summary(out)
    assert (prof.geometry["physical_bytes"] / prof.geometry["user_bytes"] - 1) * 100 == \
        pytest.approx(s["fitted"]["spare_pct"], abs=0.01)
    again = work / "again"
    run_cli("consistency", "--target", f"sim:{out / 'fitted.toml'}", "--duration", DURATION_S, "--out", str(again),
            "--no-progress")
    m = results.read_series(planted / "series")["iops"]
    f = results.read_series(again / "series")["iops"]
    tail = slice(int(0.7 * len(m)), None)
    assert np.median(f[tail]) == pytest.approx(np.median(m[tail]), rel=0.10)
    a, b = results.read_summary(planted), results.read_summary(again)
    assert a["fob_duration_s"] is not None and b["fob_duration_s"] is not None
    assert abs(a["fob_duration_s"] - b["fob_duration_s"]) <= 3.0
    assert b["fob_iops"] == pytest.approx(a["fob_iops"], rel=0.10)


def _fit_in_process(planted, base, out, seed, workers):
    from ssdlab.fit import run_fit

    return run_fit([str(planted)], out, keys=KEYS[1::2], base=str(base), evals=10, seed=seed, workers=workers,
                   progress=False, argv=["ssdlab", "fit"])


def _history(out: Path) -> list[tuple]:
    import pyarrow.parquet as pq

    return [(r["eval"], r["step"], r["distance"], r["spare_pct"], r["t_prog_us"])
            for r in pq.read_table(out / "history.parquet").to_pylist()]


def _profile_lines(out: Path) -> list[str]:
    return [ln for ln in (out / "fitted.toml").read_text().splitlines() if ln and not ln.startswith("#")]


def test_same_seed_same_fit_whatever_runs_it(planted, base, work):
    a = _fit_in_process(planted, base, work / "seed-a", seed=7, workers=1)  # in this process
    b = _fit_in_process(planted, base, work / "seed-b", seed=7, workers=2)  # on a process pool
    assert _history(work / "seed-a") == _history(work / "seed-b")
    assert _profile_lines(work / "seed-a") == _profile_lines(work / "seed-b")
    assert a["distance"] == b["distance"] and a["fitted"] == b["fitted"]
    # the checks (run in parallel on the pool) and what they make of the keys
    assert a["checks"]["checked"] and a["checks"] == b["checks"] and a["identifiability"] == b["identifiability"]
    c = _fit_in_process(planted, base, work / "seed-c", seed=8, workers=1)
    assert _history(work / "seed-c") != _history(work / "seed-a")
    assert c["seed"] == 8


def test_distance_catches_a_wrong_profile(planted, base):
    """The checker can fail: the planted drive itself scores ~0 (same seed as the measurement)
    or its noise floor (another seed), a drive with the wrong spare area or the wrong program
    time scores far worse."""
    from ssdlab.fit import core, distance, simulate

    def score(spare, tprog, seed=1):
        run = core.prepare([str(planted)], KEYS[1::2], base=str(base))
        sets, _ = run.sets_for({"spare_pct": spare, "t_prog_us": tprog})
        res = simulate.evaluate(core.task_for(run, 0, sets, seed=seed))
        assert res["ok"], res["error"]
        terms = run.score(res["outputs"])
        return distance.distance(terms), terms

    same, terms = score(25.0, 1800.0)
    assert same < 0.01, terms
    floor, terms = score(25.0, 1800.0, seed=3)
    assert floor < 0.06, terms
    wrong_spare, terms = score(33.3, 1800.0, seed=3)
    assert wrong_spare > max(0.15, 3 * floor), terms
    wrong_prog, terms = score(25.0, 1300.0, seed=3)
    assert wrong_prog > max(0.15, 3 * floor), terms
    by = {t["term"]: t for t in terms}
    assert by["steady_p50"]["error"] > 0.1  # the steady state is what gives it away


def test_fill_and_run_results_fit(work, base):
    fill = work / "fill"
    run_cli("fill", "--target", f"sim:{base}", "--set", "t_prog_us=1800", "--pause", "2", "--out", str(fill),
            "--no-progress")
    proc = run_cli("fit", str(fill), "--base", str(base), "--key", "t_prog_us", "--evals", "12", "--workers", "1",
                   "--out", str(work / "fill-twin"), "--no-progress")
    s = results.read_summary(work / "fill-twin")
    assert {t["term"] for t in s["terms"]} >= {"fill_average", "fill_curve", "cache_size"}
    assert abs(s["fitted"]["t_prog_us"] - 1800) <= 0.15 * 1800, s["fitted"]
    assert "fill_average" in proc.stdout
    mix = work / "mix"
    run_cli("run", "--name=mix", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=8", "--runtime=5",
            "--time_based", "--target", f"sim:{base}", "--out", str(mix), "--no-progress")
    run_cli("fit", str(mix), "--base", str(base), "--key", "t_read_us", "--evals", "4", "--workers", "1",
            "--out", str(work / "mix-twin"), "--no-progress")
    s = results.read_summary(work / "mix-twin")
    assert {"g1.read.iops", "g1.write.iops", "g1.read.lat_p99"} <= {t["term"] for t in s["terms"]}
    assert np.isfinite(s["distance"])


def test_errors_name_the_folder_file_or_key(work, planted, base, tmp_path):
    def fails(*args, want: str):
        proc = run_cli("fit", *args, "--out", str(tmp_path / "o"), check=False)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert want in proc.stderr, proc.stderr

    fails(str(tmp_path), want=f"{tmp_path}: not an ssdlab results folder")
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "summary.json").write_text(json.dumps({"test": "sweep", "ssdlab_version": "0", "capacity_bytes": 1}))
    fails(str(sweep), want="'sweep' results folder")
    fails(str(planted), "--key", "nosuch=1:2", want="'nosuch' is not a profile key")
    fails(str(planted), "--key", "t_prog_us=900:100", want="LO must be below HI")
    fails(str(planted), "--key", "user_capacity_bytes=1GB:2GB", want="user_capacity_bytes cannot be searched")
    fails(str(planted), "--key", "gc_d_choices", want="gc_d_choices has no default range")
    fails(str(planted), "--scale", "0", want="--scale")
    fails(str(planted), "--base", str(tmp_path / "none.toml"), want="none.toml")
    no_series = tmp_path / "no-series"
    no_series.mkdir()
    (no_series / "summary.json").write_text((planted / "summary.json").read_text())
    fails(str(no_series), want=f"{no_series}: no series.parquet or series.csv")


def test_an_incomplete_run_is_fitted_with_a_warning(planted, base, tmp_path):
    import shutil

    inc = tmp_path / "incomplete"
    shutil.copytree(planted, inc)
    results.mark_incomplete(inc, results.INTERRUPTED_REASON)
    proc = run_cli("fit", str(inc), "--base", str(base), "--key", "spare_pct=20:30", "--evals", "3",
                   "--workers", "1", "--out", str(tmp_path / "t"), "--no-progress")
    assert "warning" in proc.stderr and "incomplete run" in proc.stderr and str(inc) in proc.stderr
    with pytest.raises(UserError, match="too few|at least"):
        from ssdlab.fit.measured import load_measured

        short = tmp_path / "short"
        shutil.copytree(planted, short)
        s = results.read_series(short / "series")
        results.write_series(short, "series", {k: v[:3] for k, v in s.items()})
        load_measured(short)


@pytest.mark.realtime
@pytest.mark.timeout(600)  # ~65 s on 2 busy cores
def test_ctrl_c_keeps_the_history(planted, base, tmp_path):
    out = tmp_path / "stopped"
    interrupt_cli("fit", str(planted), "--base", str(base), *KEYS, "--evals", "400", "--workers", "2",
                  "--out", str(out), "--no-progress", ready=lambda: (out / "history.csv").exists(), settle_s=1.0)
    assert (out / "history.csv").exists() and (out / "history.parquet").exists()
    assert results.incomplete_reason(out) == results.INTERRUPTED_REASON
    s = results.read_summary(out)
    assert s["complete"] is False and s["search"]["evals_simulated"] < 400
    assert (out / "fitted.toml").exists()  # the best so far
    profiles.load_profile(str(out / "fitted.toml"))


def test_fit_does_not_import_the_command_line():
    import ssdlab
    from test_layers import COMMAND_LINE, imported_modules

    pkg = Path(ssdlab.__file__).parent / "fit"
    wrong = [f"{p.name}:{line} imports {m}" for p in sorted(pkg.glob("*.py")) for line, m in imported_modules(p)
             if any(m == c or m.startswith(c + ".") for c in COMMAND_LINE)]
    assert not wrong, wrong
