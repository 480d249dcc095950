"""``ssdlab fit`` calls a key "pinned" only when the data pins it: planted drives, fitted at
full size and scaled, from searches that do not start at the planted values; every pinned
key's near-best range holds the planted value. Plus the rules behind the verdict, on
hand-made search histories (no simulation), and the coverage check itself catching a claim
that misses.

The planted drives and the fit are ``benches/bench_fit_coverage.py``'s (small drives of
4 MiB blocks, 60 s consistency runs, 1 process); here 3 drives with active GC (a drive without
stalls to 0 IOPS the search rarely fits, and then pins nothing), there 20 of every kind; 150
simulations per fit.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))
import bench_fit_coverage as cov  # noqa: E402

from ssdlab.fit import core, space  # noqa: E402

DRIVES, EVALS = 3, 150


@pytest.fixture(scope="module")
def records():
    return cov.run(DRIVES, cov.SCALES, EVALS, seed=1, workers=1, log=lambda s: None, active_gc=True)


def test_every_pinned_key_holds_the_planted_value(records):
    misses = [(r["drive"], r["scale"], c) for r in records for c in r["claims"] if not c["holds"]]
    assert not misses, "\n".join(cov._line(r) for r in records)
    held, n = cov.coverage(records)
    assert n >= 2, \
        "too few keys pinned to say anything:\n" + "\n".join(cov._line(r) for r in records)


def test_a_write_buffer_the_scale_cannot_shrink_is_never_pinned(records):
    """The buffer's searched range starts below what a 0.05x drive can hold (its floor)."""
    for r in records:
        if r["scale"] <= 0.1:
            assert r["verdicts"]["write_buffer_bytes"] == core.NOT_PRESERVED, r


def test_the_coverage_check_catches_a_miss():
    summary = {"identifiability": [
        {"key": "spare_pct", "verdict": "pinned", "near_min": 10.0, "near_max": 12.0, "fitted": 11.0},
        {"key": "t_prog_us", "verdict": "pinned", "near_min": 900.0, "near_max": 1000.0, "fitted": 950.0},
        {"key": "gc_bg_start_free_blocks", "verdict": "weakly identified", "near_min": 0, "near_max": 3,
         "fitted": 2}]}
    got = cov.claims(summary, {"spare_pct": 12.5, "t_prog_us": 1000.0, "gc_bg_start_free_blocks": 9})
    assert [(c["key"], c["holds"]) for c in got] == [("spare_pct", False), ("t_prog_us", True)]
    assert cov.coverage([{"claims": got}]) == (1, 2)


# --------------------------------------------------------------------------- the verdict's rules

KEY = space.Key("t_prog_us", 500.0, 1500.0, "lin", False, "µs")
OTHER = space.Key("controller_cmd_us", 1.0, 21.0, "lin", False, "µs")
BASE = {"channels": 1, "dies_per_channel": 2, "planes_per_die": 2, "pages_per_block": 256, "page_size_bytes": 16384}


def _run(rows, noise=0.002, deviation=0.0, checked=True, scale=1.0, keys=(KEY, OTHER)) -> core.FitRun:
    """A fit whose history is ``rows`` [(t_prog_us, controller_cmd_us, distance, step[,
    search])], best at the smallest distance, probed around it; sample and refine rows
    alternate between two searches unless they say which."""
    run = core.FitRun(measured=[], keys=list(keys), base=None, base_spec="", seed=1, scale=scale, evals=100,
                      refs=[], scalings=[space.Scaling.of(BASE, scale)], spare_default=10.0)
    for i, (a, b, d, step, *which) in enumerate(rows):
        search = (which[0] if which else i % 2) if step in core.JOINT_STEPS else None
        row = {"eval": i, "step": step, "search": search, "distance": d, KEY.name: a, OTHER.name: b}
        if len(keys) > 2:
            row[keys[2].name] = 1 << 20
        run.rows.append(row)
    best = min((r for r in run.rows if r["step"] != "probe"), key=lambda r: r["distance"])
    realized = {k.name: best[k.name] for k in keys}
    run.best = {"distance": best["distance"], "realized": realized, "eval": best["eval"]}
    run.probe_center = {"realized": realized, "distance": best["distance"]}
    if checked:
        run.checks = {"seeds": [], "noise": noise, "deviation": deviation}
    return run


def _history(left=0.2, right=0.2):
    """Six candidates near (1000, 11) at distance ~0.01, others far, and the probe: t_prog_us
    +/- 100 µs (10 % of its range) at distances ``left`` / ``right``, controller +/- 2 µs."""
    near = [(1000.0, 11.0, 0.010, "refine"), (990.0, 11.4, 0.012, "refine"), (1010.0, 10.8, 0.013, "refine"),
            (995.0, 10.5, 0.014, "refine"), (1005.0, 11.6, 0.015, "refine"), (1003.0, 11.1, 0.016, "refine")]
    far = [(600.0, 3.0, 0.9, "sample"), (1400.0, 19.0, 0.7, "sample"), (800.0, 15.0, 0.4, "sample")]
    probe = [(1100.0, 11.0, right, "probe"), (900.0, 11.0, left, "probe"),
             (1000.0, 13.0, 0.3, "probe"), (1000.0, 9.0, 0.3, "probe")]
    return near + far + probe


def _verdict(run, key=KEY.name) -> dict:
    return {r["key"]: r for r in core.identifiability(run)}[key]


def test_pinned_needs_the_evidence():
    got = _verdict(_run(_history()))
    assert got["verdict"] == core.PINNED, got
    assert got["near_candidates"] == 6 and got["sampled_min"] == 990.0 and got["sampled_max"] == 1010.0
    # the near-best range: the sampled span widened by NEAR_PAD of the range on each side
    assert got["near_min"] == pytest.approx(990.0 - 1000 * core.NEAR_PAD)
    assert got["near_max"] == pytest.approx(1010.0 + 1000 * core.NEAR_PAD)


def test_no_checks_no_pin():
    got = _verdict(_run(_history(), checked=False))
    assert got["verdict"] == core.WEAK and "no checks" in got["why"]


def test_a_flat_side_is_not_pinned():
    """Moving t_prog_us up by 10 % of its range keeps the distance within the tolerance."""
    got = _verdict(_run(_history(right=0.03)))
    assert got["verdict"] == core.WEAK and "both sides" in got["why"], got
    assert got["near_max"] >= 1100.0  # the probe point is a near-best candidate too


def test_searches_that_end_apart_pin_nothing():
    """The second search ends in another valley, 0.1 worse: the first search's valley may not
    be the only one that fits."""
    rows = [(*r[:4], 0) for r in _history()[:6]] + [(1400.0, 3.0, 0.11, "refine", 1)] + _history()[6:]
    got = _verdict(_run(rows))
    assert got["verdict"] == core.WEAK and "search 2's best is 0.100 above" in got["why"], got
    one = [(*r[:4], 0) for r in _history()[:9]] + _history()[9:]
    assert "1 refine search" in _verdict(_run(one))["why"]


def test_noise_widens_the_tolerance():
    """Noise of 0.1 between seeds: everything within 0.2 of the best fits about as well."""
    run = _run(_history(), noise=0.1)
    assert core.near_tolerance(run)["tolerance"] == pytest.approx(core.NOISE_FACTOR * 0.1)
    got = _verdict(run)
    assert got["verdict"] != core.PINNED and got["near_candidates"] >= 7


def test_too_few_near_candidates():
    rows = _history()[:1] + _history()[6:]  # the best alone near it
    got = _verdict(_run(rows))
    assert got["near_candidates"] < core.MIN_NEAR and got["verdict"] == core.WEAK and "move every key" in got["why"]


def test_probes_alone_do_not_pin():
    """Five candidates near the best, but four of them the probe of the other key: they all
    share the best's t_prog_us and say nothing of where else it could fit."""
    rows = _history()[:1] + _history()[6:] + [(1000.0, 11.0 + dx, 0.011, "probe") for dx in (0.5, -0.5, 1, -1)]
    got = _verdict(_run(rows))
    assert got["near_candidates"] >= core.MIN_NEAR and got["near_joint_candidates"] == 1
    assert got["verdict"] == core.WEAK and "move every key" in got["why"]


def test_keys_that_trade_off_are_not_pinned():
    """The near-best candidates lie along a valley: a slower program time with a faster
    controller fits as well; each key is bracketed on its own, yet only their combination is
    pinned."""
    valley = [(1000.0 + 4 * i, 11.0 - 0.3 * i, 0.010 + 0.001 * abs(i), "refine") for i in range(-3, 4)]
    got = {r["key"]: r for r in core.identifiability(_run(valley + _history()[6:]))}
    assert got[KEY.name]["trades_off_with"] and got[KEY.name]["trades_off_with"][0]["key"] == OTHER.name
    assert got[KEY.name]["verdict"] == core.WEAK and "trades off with controller_cmd_us" in got[KEY.name]["why"]


def test_the_scaled_drive_deviation_counts_and_unpreserved_keys_are_named():
    run = _run(_history(), deviation=0.25)
    assert core.near_tolerance(run)["tolerance"] >= 0.25 and _verdict(run)["verdict"] != core.PINNED
    buffer = space.Key("write_buffer_bytes", float(256 << 10), float(64 << 20), "log", True, "bytes")
    run = _run(_history(), scale=0.05, keys=(KEY, OTHER, buffer))
    got = _verdict(run, "write_buffer_bytes")
    assert got["verdict"] == core.NOT_PRESERVED and "--scale" in got["scale_note"]
    assert _verdict(run)["verdict"] == core.PINNED  # the other keys are judged as ever


def test_scaling_keeps_every_block_count_and_shrinks_the_blocks():
    from ssdlab import profiles

    base = profiles.load_profile("default")
    sc = space.Scaling.of(base.values, 0.05)
    assert sc.pages_per_block == 13 and sc.factor == pytest.approx(13 / 256)
    keys = [space.parse_key("spare_pct"), space.parse_key("gc_bg_start_free_blocks")]
    full, _ = space.candidate_sets(keys, {"spare_pct": 7.37, "gc_bg_start_free_blocks": 5}, base.values,
                                   256_000_000_000, 7.37)
    small, _ = space.candidate_sets(keys, {"spare_pct": 7.37, "gc_bg_start_free_blocks": 5}, base.values,
                                    256_000_000_000, 7.37, sc)
    f, s = dict(kv.split("=") for kv in full), dict(kv.split("=") for kv in small)
    assert s["blocks_per_plane"] == f["blocks_per_plane"] and s["gc_bg_start_free_blocks"] == "5"
    pf, ps = profiles.load_profile("default", full), profiles.load_profile("default", small)
    spare = [p.geometry["physical_bytes"] / p.geometry["user_bytes"] - 1 for p in (pf, ps)]
    assert spare[1] == pytest.approx(spare[0], rel=1e-6)
    assert ps.user_bytes == pytest.approx(pf.user_bytes * sc.factor, abs=4096)
    assert float(s["t_erase_us"]) == pytest.approx(3500 * sc.factor)
    assert int(s["write_buffer_bytes"]) == sc.buffer_floor_bytes  # 16 MiB x 0.05 is below the floor
    assert not math.isclose(sc.buffer_floor_bytes, 16 * (1 << 20) * sc.factor)
    with pytest.raises(Exception, match="pages per block"):
        space.check_scale(base.values, 0.01, "m1")


def test_the_search_does_not_start_from_the_measured_drive(tmp_path):
    """A drive measured on the fit's own base profile: no candidate the search proposes is
    that profile's values (a search that starts on the answer says nothing about finding it)."""
    base = cov.base_profile(tmp_path)
    measured = tmp_path / "m"
    cov.cli("consistency", "--target", f"sim:{base}", "--duration", "10", "--out", str(measured), "--no-progress")
    run = core.prepare([str(measured)], cov.KEYS, base=str(base), evals=24)
    base_values = {k.name: (run.spare_default if k.name == space.SPARE_KEY else run.base.values[k.name])
                   for k in run.keys}

    class Refuse:  # records the candidates, simulates none
        def map(self, tasks, done):
            for t in tasks:
                done({"index": t["index"], "ok": False, "outputs": None, "error": "not simulated", "wall_s": 0.0})

    core.search_fit(run, Refuse())
    assert len(run.rows) >= 10
    for r in run.rows:
        assert any(not math.isclose(r[k], v, rel_tol=1e-3) for k, v in base_values.items()), r
