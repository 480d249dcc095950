"""Endurance projection (``analysis.endurance_projection``): hand-computed cases, the
consistency summary's projection against the formula applied to its own figures, n/a when
write amplification or the rating is unknown, and the report's endurance section."""
from __future__ import annotations

import json

import pytest

from ssdlab import analysis, report
from ssdlab.procedures import common, consistency
from ssdlab.profiles import keys, load_profile

from conftest import run_cli, set_args


def test_hand_computation_256gb_3000_pe_wa_4_at_50_mbps():
    e = analysis.endurance_projection(host_write_bytes=50e6 * 1000, duration_s=1000, write_amplification=4.0,
                                      capacity_bytes=256e9, rated_pe_cycles=3000)
    # 50 MB/s × 86400 s = 4.32 TB a day; 4.32e12 / 256e9 = 16.875 drive writes a day.
    assert e["host_write_bytes_per_s"] == pytest.approx(50e6)
    assert e["host_bytes_per_day"] == pytest.approx(4.32e12)
    assert e["drive_writes_per_day"] == pytest.approx(16.875)
    # × WA 4: 17.28 TB of NAND writes a day.
    assert e["nand_bytes_per_day"] == pytest.approx(17.28e12)
    # No raw capacity given: the user 256 GB × 3000 / 4 = 192 TB of host writes ...
    assert e["pe_capacity_basis"] == "user capacity" and e["pe_capacity_bytes"] == 256_000_000_000
    assert e["rated_total_host_bytes"] == pytest.approx(192e12)
    # ... 192e12 / 4.32e12 = 44.44 days = 0.1217 years.
    assert e["days_until_rated_pe"] == pytest.approx(44.4444, rel=1e-5)
    assert e["years_until_rated_pe"] == pytest.approx(44.4444 / 365.25, rel=1e-5)
    assert e["unavailable"] is None
    assert "50 MB/s" in e["assumptions"] and "user capacity (256 GB)" in e["assumptions"]


def test_raw_nand_capacity_carries_the_rating_when_given():
    # 256 GiB of NAND = 274,877,906,944 bytes: × 3000 / 4 = 206.16 TB; / 4.32 TB a day = 47.72 days.
    e = analysis.endurance_projection(50e6, 1.0, 4.0, 256e9, 3000, raw_capacity_bytes=256 * 2**30)
    assert e["pe_capacity_basis"] == "raw NAND" and e["pe_capacity_bytes"] == 274_877_906_944
    assert e["rated_total_host_bytes"] == pytest.approx(206.158430208e12)
    assert e["days_until_rated_pe"] == pytest.approx(47.72186, rel=1e-6)
    # Drive writes per day stay per user capacity.
    assert e["drive_writes_per_day"] == pytest.approx(16.875)


def test_one_cycle_every_36_days_is_360000_days_for_10000_cycles():
    # A drive written once every 36 days without amplification spends one P/E cycle per
    # 36 days: 10,000 cycles last 360,000 days (986 years), not 36,000.
    cap = 80e9
    e = analysis.endurance_projection(cap, 36 * 86400, 1.0, cap, 10_000)
    assert e["days_until_rated_pe"] == pytest.approx(360_000)
    assert e["years_until_rated_pe"] == pytest.approx(985.6, abs=0.1)


def test_unknown_write_amplification_or_rating_leaves_the_days_na():
    no_wa = analysis.endurance_projection(50e6, 1.0, None, 256e9, 3000)
    assert no_wa["drive_writes_per_day"] == pytest.approx(16.875)
    for k in ("nand_bytes_per_day", "rated_total_host_bytes", "days_until_rated_pe", "years_until_rated_pe"):
        assert no_wa[k] is None, k
    assert "write amplification unknown" in no_wa["unavailable"]
    for pe in (None, 0):
        no_pe = analysis.endurance_projection(50e6, 1.0, 4.0, 256e9, pe)
        assert no_pe["nand_bytes_per_day"] == pytest.approx(17.28e12)
        assert no_pe["days_until_rated_pe"] is None and no_pe["rated_pe_cycles"] is None
        assert "rated P/E cycles unknown" in no_pe["unavailable"]
    idle = analysis.endurance_projection(0, 10.0, 4.0, 256e9, 3000)
    assert idle["days_until_rated_pe"] is None and idle["unavailable"] == "no host writes"
    for bad in ({"duration_s": 0}, {"capacity_bytes": -1}, {"write_amplification": 0.0},
                {"host_write_bytes": float("nan")}):
        args = {"host_write_bytes": 1e9, "duration_s": 1.0, "write_amplification": 2.0,
                "capacity_bytes": 1e9, "rated_pe_cycles": 3000, **bad}
        with pytest.raises(ValueError, match=next(iter(bad))):
            analysis.endurance_projection(**args)


def test_rated_pe_cycles_is_a_profile_key_every_builtin_profile_sets():
    key = {name: doc for name, _, doc in keys()}["rated_pe_cycles"]
    assert "[cycles]" in key and "never by the simulation" in key
    assert load_profile("default").values["rated_pe_cycles"] == 3000
    assert load_profile("default", ["rated_pe_cycles=5000"]).values["rated_pe_cycles"] == 5000


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("endurance") / "r"
    run_cli("consistency", *set_args(), "--duration", "400", "--seed", "3", "--out", str(out), "--no-progress")
    return out


def test_consistency_summary_projects_from_its_own_figures(run_dir):
    s = json.loads((run_dir / "summary.json").read_text())
    e = s["endurance"]
    wa = s["steady_state_write_amplification"]
    assert wa is not None and e["write_amplification"] == wa
    assert e["write_amplification_basis"] == f"steady state from {s['steady_state_onset_s']:.0f} s"
    per_day = s["host_write_bytes"] / s["duration_s"] * 86400
    raw = s["geometry"]["physical_bytes"]
    assert e["pe_capacity_basis"] == "raw NAND" and e["pe_capacity_bytes"] == raw
    assert e["host_bytes_per_day"] == pytest.approx(per_day)
    assert e["drive_writes_per_day"] == pytest.approx(per_day / (7 * 2**30))
    assert e["nand_bytes_per_day"] == pytest.approx(per_day * wa)
    assert e["days_until_rated_pe"] == pytest.approx(raw * s["profile"]["rated_pe_cycles"] / (per_day * wa))
    html = (run_dir / "report.html").read_text()
    assert '<section id="endurance-section">' in html and "time to the rated P/E count (days)" in html


def test_real_drive_without_counters_has_no_days(capsys):
    # A real drive's summary: no profile, no geometry, no write amplification.
    summary = {"host_write_bytes": 3.6e12, "duration_s": 3600.0, "write_amplification": None,
               "steady_state_write_amplification": None, "steady_state_onset_s": 600.0}
    e = common.endurance(summary, 256_000_000_000)
    assert e["days_until_rated_pe"] is None and e["nand_bytes_per_day"] is None
    assert e["write_amplification_basis"] is None
    assert "write amplification unknown" in e["unavailable"] and "rated P/E cycles unknown" in e["unavailable"]
    assert e["drive_writes_per_day"] == pytest.approx(3.6e12 / 3600 * 86400 / 256e9)
    consistency.show({"target": "loop:64MB", "span_pct": 100.0, "duration_s": 3600.0, "qd": 32, "iops_mean": 1,
                      "iops_median": 1, "iops_p1": 1, "iops_p99": 1, "iops_min": 1, "zero_iops_seconds": 0,
                      "longest_stall_s": 0, "steady_state_onset_s": 600, "endurance": e})
    assert "days to the rated P/E count n/a: write amplification unknown" in capsys.readouterr().out
    # The report shows the section with n/a cells and says why.
    section = report._endurance_section([{"summary": {"endurance": e}, "id": "run0", "dir": "x", "drive": "loop",
                                          "variant": "Default"}])
    assert "n/a because" in section and "write amplification unknown" in section


def test_report_has_no_endurance_section_without_a_projection():
    assert report._endurance_section([{"summary": {"iops_mean": 1.0}, "id": "run0", "dir": "x", "drive": "d",
                                       "variant": "Default"}]) == ""
