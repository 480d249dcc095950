"""Skewed random writes through ``SimTarget.run_workload``: the distribution reaches the
simulator and moves steady-state write amplification the way ``crates/ssdsim/tests/skew_wa.rs``
explains, on a small drive with 25 % spare and no active or idle GC: under cost-benefit
(which tells hot from cold blocks by age) zipf 1.2 and zoned 80/20 write less NAND than
uniform traffic; under FIFO, which copies static data on every pass of its log, zipf 1.2
writes more."""
from __future__ import annotations

import pytest

from ssdlab.profiles import load_profile
from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

#: 8 planes × 512 blocks of 64 units (1 GiB of NAND), 25 % spare, GC only in the foreground.
DRIVE = ["channels=2", "dies_per_channel=2", "planes_per_die=2", "blocks_per_plane=512", "pages_per_block=16",
         f"user_capacity_bytes={int(8 * 512 * 64 / 1.25) * 4096}", "gc_bg_start_free_blocks=0",
         "gc_bg_stop_free_blocks=0", "gc_idle_free_blocks=0"]
DISTRIBUTIONS = {
    "uniform": {},
    "zipf": {"distribution": "zipf", "zipf_theta": 1.2},
    "zoned": {"distribution": "zoned", "zones": [(80, 20.0), (20, 80.0)]},
}


def steady_wa(policy: str, dist: dict) -> float:
    """WA of 4 KiB QD32 random writes after a sequential fill and 6 × the capacity of them."""
    target = SimTarget(load_profile("default", DRIVE + [f"gc_policy={policy}"]), seed=5)
    target.run_phase(JobSpec("fill", "write", bs_bytes=128 * 1024, qd=32))
    spec = {"name": "randwrite", "qd": 32, "io_bytes": 6 * target.capacity_bytes, "interval_s": 10.0, **dist}
    target.run_workload(spec)
    totals = target.run_workload(spec).totals
    return totals["nand_write_bytes"] / totals["host_write_bytes"]


@pytest.mark.parametrize("policy", ["cost-benefit", "fifo"])
def test_skew_moves_write_amplification_as_the_policy_predicts(policy):
    wa = {name: steady_wa(policy, dist) for name, dist in DISTRIBUTIONS.items()}
    if policy == "cost-benefit":  # measured 2.67 uniform, 1.51 zipf, 2.48 zoned
        assert wa["zipf"] < 0.7 * wa["uniform"] and wa["zoned"] < 0.95 * wa["uniform"], wa
    else:  # measured 2.75 uniform, 4.66 zipf (all-static limit 5.12), 3.09 zoned
        assert wa["zipf"] > 1.5 * wa["uniform"] and wa["zoned"] > 1.05 * wa["uniform"], wa
