"""Today's drives: the built-in profiles with a pseudo-SLC cache reproduce the whole-drive fills
their descriptions cite (TechPowerUp: 1 MB sequential writes at QD1 on the erased drive,
throughput twice a second), within ±10 % on the cache size, each rate after it and the
fill's average.

The drives run at 1/32 of their size (capacity, pages per block and cache sizes scaled
alike, timings as they are) with the interval 1/32 of TechPowerUp's, so rates are those of
the full drive, sizes 1/32 of them and the series has as many intervals;
``benches/bench_todays_drives.py`` runs them at full size. Every other test runs on them too
(a consistency run here), and their series carry the cache's level and folding.
"""
from __future__ import annotations

import json

import pytest

from conftest import run_cli
from ssdlab.profiles import load_profile
from ssdlab.results import read_series

SCALE = 32

#: Profile -> (published phases: (end of phase [GB], MB/s), published fill average [MB/s]).
#: The end of the last phase is the drive's capacity (None), or not given (None too) where
#: the review says only that the rate rises from there on.
PUBLISHED = {
    # Samsung 980 Pro 1 TB: 4 GB/s until 113 GB, then 1.5 GB/s, "the fuller the drive gets,
    # the higher the write speed"; 1.9 GB/s on average.
    "tlc-direct": ([(113, 4000), (None, 1500)], 1900),
    # Kingston A2000 1 TB: 2 GB/s until 150 GB, 500 MB/s, 400 MB/s after 600 GB; 480 MB/s on average.
    "tlc-fold": ([(150, 2000), (600, 500), (None, 400)], 480),
    # HP FX700 2 TB: 5 GB/s until 54 GB, 3.5 GB/s until 460 GB, then 130 MB/s; 168 MB/s on average.
    "qlc": ([(54, 5000), (460, 3500), (None, 130)], 168),
}

def scaled(name: str) -> list[str]:
    """``--set`` arguments for the profile at 1/SCALE of its size."""
    v = load_profile(name).values
    args = ["--target", f"sim:{name}", "--set", f"pages_per_block={v['pages_per_block'] // SCALE}"]
    for key in ("user_capacity_bytes", "slc_static_bytes", "slc_dynamic_max_bytes", "slc_fast_bytes", "write_buffer_bytes"):
        args += ["--set", f"{key}={v[key] // SCALE // 4096 * 4096}"]
    return args


@pytest.fixture(scope="module", params=sorted(PUBLISHED))
def filled(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param) / "fill"
    run_cli("fill", *scaled(request.param), "--interval", str(0.5 / SCALE), "--pause", "5", "--out", str(out),
            "--no-progress")
    return request.param, json.loads((out / "summary.json").read_text()), out


def test_fill_reproduces_the_published_phases_and_average(filled):
    name, s, _ = filled
    phases, average = PUBLISHED[name]
    got = s["phases"]
    shown = f"{name}: {[(round(p['end_gb'] * SCALE), round(p['mbps'])) for p in got]}"
    rising = name == "tlc-direct"
    assert len(got) == len(phases) or rising and len(got) > len(phases), shown
    for a, b in zip(got[len(phases) - 1:], got[len(phases):]):
        assert b["mbps"] > a["mbps"], f"{shown}: the rate rises as the drive fills"
    for i, ((end_gb, mbps), p) in enumerate(zip(phases, got)):
        assert p["mbps"] == pytest.approx(mbps, rel=0.10), f"{name} phase {i + 1} rate"
        if end_gb is not None:
            assert p["end_gb"] * SCALE == pytest.approx(end_gb, rel=0.10), f"{name} phase {i + 1} end"
    assert s["cache_bytes"] * SCALE / 1e9 == pytest.approx(phases[0][0], rel=0.10), f"{name} cache size"
    assert s["fill_mbps_mean"] == pytest.approx(average, rel=0.10), f"{name} fill average"


def test_series_show_the_cache_filling_and_folding(filled):
    name, s, out = filled
    series = read_series(out / "fill")
    held = series["slc_cache_bytes"]
    cache_gb = s["cache_bytes"] / 1e9
    # While the first phase runs, everything written is in the cache.
    written = series["written_gb"]
    first = written < cache_gb * 0.9
    assert (abs(held[first] / 1e9 - written[first]) < 0.05 * cache_gb + 0.1).all(), name
    # Folding starts once the cache is full (or, in the QLC drive's second tier, shrinks).
    assert series["fold_bytes"][first].sum() == 0
    assert series["fold_bytes"].sum() > 0
    # The report charts the cache and folding against GB written, as the fill's MB/s.
    assert [p["label"] for p in s["plot"]] == ["MB/s vs written", "SLC cache", "folding"]
    # The burst after the pause: a rate, not bytes over no time.
    assert 0 < s["burst_mbps_mean"] <= s["cache_mbps"] * 1.1
    # Write amplification counts each unit folded as a second NAND write.
    total_host = series["host_write_bytes"].sum()
    assert series["nand_write_bytes"].sum() == pytest.approx(total_host + series["fold_bytes"].sum(), rel=1e-9)


@pytest.mark.parametrize("name", sorted(PUBLISHED) + ["dramless-hmb"])
def test_todays_drives_fit_their_nand_with_their_static_slc_cache(name):
    """Each static cache takes whole blocks of every plane in SLC mode, 1/cell_bits of a
    block's bytes each, out of the NAND beside the user capacity."""
    p = load_profile(name)
    v, g = p.values, p.geometry
    block_bytes = v["pages_per_block"] * v["page_size_bytes"]
    slc_blocks = -(-v["slc_static_bytes"] // (block_bytes // v["cell_bits"]))  # rounded up
    per_plane = -(-slc_blocks // g["planes"])
    assert g["slc_static_nand_bytes"] == per_plane * g["planes"] * block_bytes
    assert g["physical_bytes"] + g["slc_static_nand_bytes"] == v["blocks_per_plane"] * g["planes"] * block_bytes
    assert v["slc_static_bytes"] <= g["slc_static_max_bytes"]


def test_a_static_cache_the_nand_cannot_hold_is_refused_naming_the_largest_that_fits(tmp_path):
    """280 GB of static SLC on the 1 TB TLC drive (1 TiB of NAND) would take 3 × 280 GB of
    TLC. Beside the user capacity's 932 blocks per plane and the FTL's reserve of 5, 87 of
    each of the 64 planes' 1024 blocks are left: 87 × 64 × (16 MiB / 3, 1365 units of 4 KiB)."""
    r = run_cli("consistency", "--target", "sim:tlc-direct", "--set", "slc_static_bytes=280GB", "--out",
                str(tmp_path / "c"), "--no-progress", check=False)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ssdlab: error: --set slc_static_bytes=280GB"), r.stderr
    assert "at most 31130910720 bytes (31.1 GB) of static SLC cache fit" in lines[0], lines[0]
    assert "which holds 1099511627776 bytes" in lines[0], lines[0]
    # The largest that fits is accepted.
    assert load_profile("tlc-direct", ["slc_static_bytes=31130910720"]).geometry["slc_static_max_bytes"] == 31130910720


def test_other_tests_run_on_todays_drives(tmp_path):
    """consistency on a cached drive (random 4 KiB writes fill the cache, which then folds),
    sweep on the QLC drive, and a run of the fio language with --fill on the DRAM-less one
    (a sequential 128 KiB QD32 fill: folding is spread over the dies, so no plane gets more
    than its share of the data and runs out of room)."""
    out = tmp_path / "c"
    run_cli("consistency", *scaled("tlc-direct"), "--duration", "10", "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["iops_mean"] > 0
    assert s["counters"]["slc_written_bytes"] > 0 and s["counters"]["fold_bytes"] >= 0
    assert "slc_cache_bytes" in read_series(out / "series")
    out = tmp_path / "s"
    run_cli("sweep", *scaled("qlc"), "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["write_mbps_mean"] > s["read_mbps_mean"] > 0  # writes land in the SLC cache
    out = tmp_path / "r"
    run_cli("run", *scaled("dramless-hmb"), "--name=rr", "--rw=randread", "--bs=4k", "--iodepth=32", "--size=8g",
            "--runtime=2", "--time_based", "--fill", "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["read_iops_mean"] > 0
    assert "map_misses" in read_series(out / "series")


#: ASCII.jp's measurement of the Toshiba BG4 1 TB (TxBENCH, 4 KiB random reads at QD32 over a
#: growing span): full speed while the span is under ~32 GB with the default 61 MB host memory
#: buffer (~48 GB with 64 MB); with HMB off it already falls beyond 1-2 GB, to just over 300 MB/s.
HMB_FLOOR_MBPS = 300


def _span_rates(sets: list[str], spans_gib: list[float]) -> dict[float, float]:
    """4 KiB random reads at QD32 for 2 s (after 1 s to warm up) over the first SPAN GiB of
    the dramless-hmb drive (at 1/8 of its capacity: the spans measured fit), filled first:
    MB/s per span."""
    from ssdlab.targets.base import JobSpec
    from ssdlab.targets.sim import SimTarget

    t = SimTarget(load_profile("dramless-hmb", ["user_capacity_bytes=124999999488", "blocks_per_plane=256", *sets]))
    t.run_phase(JobSpec("fill", "write", bs_bytes=1 << 20, qd=32))
    out = {}
    for gib in spans_gib:
        span = int(gib * 2**30) // 4096 * 4096
        for seconds in (1.0, 2.0):  # the first warms the cache, as a 30 s average mostly is
            r = t.run_phase(JobSpec(f"span {gib}", "randread", bs_bytes=4096, qd=32, span_bytes=span,
                                    duration_s=seconds))
        out[gib] = r.totals["host_read_bytes"] / r.totals["duration_s"] / 1e6
    return out


@pytest.mark.parametrize("cache, cover_gib", [("32MiB", 32), ("48MiB", 48)])
def test_dramless_drive_reads_at_full_speed_within_the_span_its_hmb_covers_then_at_the_hmb_off_speed(
        cache, cover_gib):
    r = _span_rates([f"map_cache_bytes={cache}"], [1, cover_gib * 0.5, cover_gib * 0.95, cover_gib * 1.15, 64, 100])
    full = r[1]
    assert r[cover_gib * 0.5] == pytest.approx(full, rel=0.03)
    assert r[cover_gib * 0.95] == pytest.approx(full, rel=0.05)
    assert HMB_FLOOR_MBPS * 1.1 < r[cover_gib * 1.15] < 0.97 * full, "slower just beyond the cover"
    # The review: down to the HMB-off speed by 64 GB with either HMB size.
    assert r[64] == pytest.approx(HMB_FLOOR_MBPS, rel=0.10), r
    assert r[100] == pytest.approx(HMB_FLOOR_MBPS, rel=0.10), r


def test_without_the_bypass_policy_the_hmb_would_keep_the_rate_well_above_the_review_s_floor():
    """The reason for ``map_bypass_hit_pct``: a demand cache alone hits cover/span."""
    r = _span_rates(["map_bypass_hit_pct=0"], [64])
    assert r[64] > 1.5 * HMB_FLOOR_MBPS, r


def test_dramless_drive_without_hmb_falls_beyond_one_gib_to_the_published_floor():
    r = _span_rates(["map_cache_bytes=1MiB"], [0.9, 2, 16, 64])
    assert r[2] < 0.7 * r[0.9], r
    assert r[16] == pytest.approx(HMB_FLOOR_MBPS, rel=0.10)
    assert r[64] == pytest.approx(HMB_FLOOR_MBPS, rel=0.10)
