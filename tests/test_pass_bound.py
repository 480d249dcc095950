"""A sequential write pass over a full drive: an upper bound on greedy GC's relocations.

When a pass has rewritten a fraction ``x`` of a full drive's LBAs, the blocks that do not
hold the pass's own data hold the other ``(1 - x) * U`` valid units (U = user units) in the
rest of the NAND, about ``P - x * U`` (P = physical units less the free and open blocks).
Their average valid fraction is ``(1 - x) / (1 + s - x)`` with ``s = P / U - 1``, so a victim
no fuller than average costs at most ``v / (1 - v) = (1 - x) / s`` relocations per unit it
frees, that is per host unit written. From ``x0`` to the end of the pass, greedy GC relocates
at most ``U * (1 - x0)**2 / (2 * s)``: over the last tenth, 0.05 / s per unit written (0.7
on the built-in ``recovery`` drive, s = 7.2 % once its kept free and open blocks are set aside).

This is why that drive's after-torture pass always speeds up towards the last LBAs: at its
measured cost per relocation (1.87 host-unit times at QD1, 128 KiB: 79 MB/s at 1.7
relocations per unit, 51 MB/s at 2.96) its last tenth runs at no less than about
331 / (1 + 0.7 * 1.87) = 143 MB/s. A drive that stays at ~50 MB/s to the end of a full pass
(seed 000 after 60 min of torture) must collect blocks fuller than average there, as FIFO
does when it reaches the data the pass relocated; the test checks both sides.
"""
from __future__ import annotations

import functools

import numpy as np

from ssdlab.targets.base import JobSpec
from ssdlab.targets.sim import SimTarget

from conftest import fill_then_random_writes
from test_profile_shapes import scaled

BLOCKS_PER_PLANE = 512
TORTURE_S = 600.0
#: Pass positions from which the relocations are summed.
FROM_X = (0.5, 0.6, 0.7, 0.8, 0.9)


@functools.lru_cache(maxsize=None)
def relocations_over_bound(policy: str) -> dict[float, float]:
    """Sequential fill, TORTURE_S of 4 KiB random writes at QD32, then one sequential pass
    (128 KiB, QD1, as the sweep's write pass); for each x0 in FROM_X, the units relocated
    from pass position x0 to the end divided by the bound."""
    p = scaled("recovery", BLOCKS_PER_PLANE, (f"gc_policy={policy}",))
    t = SimTarget(p, seed=3)
    span, _ = fill_then_random_writes(t, TORTURE_S)
    r = t.run_phase(JobSpec("pass", "write", bs_bytes=131072, qd=1, span_bytes=span, interval_s=0.05))
    host = np.asarray(r.series["host_write_bytes"], dtype=np.float64)
    copied = np.asarray(r.series["gc_copied_bytes"], dtype=np.float64)
    g = p.geometry
    # Free blocks the FTL keeps (foreground threshold) and its two open blocks, per plane.
    kept_bytes = g["planes"] * (p.values["gc_fg_free_blocks"] + 2) * g["units_per_block"] * 4096
    s = (g["physical_bytes"] - kept_bytes) / span - 1
    x = np.cumsum(host) / span
    assert abs(x[-1] - 1) < 1e-9, x[-1]
    return {x0: copied[x > x0].sum() / (span * (1 - x0) ** 2 / (2 * s)) for x0 in FROM_X}


def test_greedy_relocates_no_more_than_the_average_victim_bound_across_a_pass():
    ratios = relocations_over_bound("greedy")
    assert max(ratios.values()) <= 1.0, ratios


def test_cost_benefit_stays_within_the_bound_too():
    ratios = relocations_over_bound("cost-benefit")
    assert max(ratios.values()) <= 1.0, ratios


def test_fifo_breaks_the_bound_so_the_check_catches_a_policy_taking_fuller_blocks():
    ratios = relocations_over_bound("fifo")
    assert max(ratios.values()) > 1.0, ratios
