"""The simulator's per-interval counters count work when it is carried out: host bytes when
the write completes, NAND bytes when a die programs them, GC copies and erases as the dies
do the GC work (spread over its die time, as ``gc_die_s``). A phase's intervals still add up
exactly to its totals: what the dies have left at the phase's end is in its last interval.

Two drives, sequential fill then 4 KiB random writes at QD32, the second half taken as
steady state:

* the default profile on the small drive (active GC, which relocates in step with the host's
  writes): its per-interval write amplification stays within 10 % of the steady state's for
  the middle 90 % of the intervals (measured: within 0.5 %; a victim's GC work is tens of ms
  of die time, far below the 1 s interval);
* ``recovery`` scaled to 128 blocks per plane (foreground GC only): every plane runs out of
  free blocks at about the same time and every die collects for seconds while the host
  waits, so most intervals have no host write completing at all and a per-interval write
  amplification is undefined there, whatever the booking. What is checked instead is what the
  booking decides: the NAND bytes of an interval are what the dies can program in it, and an
  interval in which the dies collect shows the copies they make. (Booked when the FTL decided
  them, a whole round of copies, 1.4 GB at full size, landed in one interval: 4x what the
  dies can program in a second, then intervals of all dies collecting with no NAND bytes.)
"""
from __future__ import annotations

import functools

import numpy as np
import pytest

from ssdlab import profiles
from ssdlab.targets.sim import SimTarget

from conftest import SMALL_DRIVE, fill_then_random_writes
from test_profile_shapes import scaled

DURATION_S = 240.0


def drive(name: str) -> profiles.Profile:
    if name == "default":
        return profiles.load_profile("default", SMALL_DRIVE)
    # The idle target scaled with the blocks (256 of 2048 at full size), as test_recovery_shape.
    return scaled("recovery", 128, ("gc_idle_free_blocks=16",))


@functools.lru_cache(maxsize=None)
def run(name: str):
    _, r = fill_then_random_writes(SimTarget(drive(name), seed=5), DURATION_S)
    return r


def steady(series: dict, key: str) -> np.ndarray:
    return np.asarray(series[key], dtype=np.float64)[int(DURATION_S) // 2:]


@pytest.mark.parametrize("name", ["default", "recovery"])
def test_interval_counters_add_up_to_the_phase_totals(name):
    r = run(name)
    for key in ("host_write_bytes", "nand_write_bytes", "gc_copied_bytes", "erases"):
        assert int(np.sum(r.series[key])) == r.totals[key], key
    assert r.totals["gc_copied_bytes"] > 0


def test_default_drive_write_amplification_per_interval_stays_near_the_steady_state():
    s = run("default").series
    host, nand = steady(s, "host_write_bytes"), steady(s, "nand_write_bytes")
    wa = nand.sum() / host.sum()
    assert wa > 2, "GC should be running"
    lo, hi = np.percentile(nand / host, [5, 95])
    assert wa / 1.1 <= lo and hi <= wa * 1.1, (lo, wa, hi)


@pytest.mark.parametrize("name", ["default", "recovery"])
def test_nand_bytes_per_interval_are_what_the_dies_can_program(name):
    p = drive(name)
    g, v = p.geometry, p.values
    per_s = g["dies"] * (g["planes"] // g["dies"]) * v["page_size_bytes"] / (v["t_prog_us"] * 1e-6)
    # All but the last interval (which takes what the dies still have to do at the end).
    nand = np.asarray(run(name).series["nand_write_bytes"])[:-1]
    assert nand.max() <= per_s * 1.05, (nand.max() / 1e6, per_s / 1e6)


@pytest.mark.parametrize("name", ["default", "recovery"])
def test_intervals_in_which_the_dies_collect_show_their_copies(name):
    s = run(name).series
    dies = drive(name).geometry["dies"]
    collecting = np.asarray(s["gc_die_s"]) >= dies / 2
    assert collecting.mean() > 0.25, "the drive should be collecting much of the time"
    assert (np.asarray(s["gc_copied_bytes"])[collecting] > 0).all()
    assert (np.asarray(s["nand_write_bytes"])[collecting] > 0).all()
