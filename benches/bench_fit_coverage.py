#!/usr/bin/env python3
"""Coverage of ``ssdlab fit``'s "pinned": planted drives, fitted at several scales.

Each planted drive is a small simulated drive (1 channel x 2 dies x 2 planes, 256 pages of
16 KiB per block, 1536 MiB of user capacity) with random spare area, program time, active-GC
watermark and write buffer, measured by ``ssdlab consistency`` (60 s, its default seed) and
fitted from that results folder alone, at each scale, by a search that starts from a
space-filling sample and a base profile holding none of the planted values. A key the fit
calls "pinned" is a claim that the planted value lies in the key's near-best range; the
coverage is the share of those claims that hold (target >= 90 %). Also printed: how many
keys were pinned per scale (a fit that never pins is trivially covered) and every claim
that failed.

    benches/bench_fit_coverage.py [--drives 20] [--scales 1,0.25,0.1,0.05] [--evals 150] [--workers 1]

``tests/test_fit_coverage.py`` runs a few drives with a smaller budget.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

#: The planted drives' layout: 4 planes of 4 MiB blocks (13 pages per block at --scale 0.05).
GEOMETRY = {"channels": 1, "dies_per_channel": 2, "planes_per_die": 2, "pages_per_block": 256,
            "page_size_bytes": 16384, "user_capacity_bytes": 1536 << 20}
#: The base profile's blocks per plane (12.5 % spare), the fit's starting geometry.
BASE_BLOCKS_PER_PLANE = 108
DURATION_S = 60
#: Searched keys and their ranges; the planted values lie inside them.
KEYS = ["spare_pct=5:40", "t_prog_us=300:4000:log", "gc_bg_start_free_blocks=0:16",
        "write_buffer_bytes=256KiB:64MiB:log"]
SCALES = (1.0, 0.25, 0.1, 0.05)


def base_profile(folder: Path) -> Path:
    """The fit's base: the built-in default drive on GEOMETRY (its own timings, watermarks
    and buffer, none of them a planted value)."""
    from ssdlab import profiles

    sets = [f"{k}={v}" for k, v in GEOMETRY.items()] + [f"blocks_per_plane={BASE_BLOCKS_PER_PLANE}"]
    values = {**profiles.load_profile("default", sets).values, "name": "coverage-base"}
    path = folder / "base.toml"
    path.write_text("".join(f"{k} = {_toml(v)}\n" for k, v in values.items()))
    return path


def _toml(v) -> str:
    return f'"{v}"' if isinstance(v, str) else str(v)


def plant(rng: np.random.Generator, active_gc: bool = False) -> dict:
    """A random drive within the searched ranges: spare 8-30 %, program time 500-3000 µs
    (log-uniform), active GC off (a fifth of the drives; never with ``active_gc``) or starting
    at 3-10 free blocks (stopping 2 above), a write buffer of 512 KiB-32 MiB (log-uniform).
    Returns the profile overrides and the true values of the searched keys (spare as the whole
    blocks realize it)."""
    planes = GEOMETRY["channels"] * GEOMETRY["dies_per_channel"] * GEOMETRY["planes_per_die"]
    block = GEOMETRY["pages_per_block"] * GEOMETRY["page_size_bytes"]
    cap = GEOMETRY["user_capacity_bytes"]
    bpp = round(cap * (1 + rng.uniform(8, 30) / 100) / (planes * block))
    tprog = float(np.exp(rng.uniform(np.log(500), np.log(3000))))
    gc = 0 if rng.random() < 0.2 and not active_gc else int(rng.integers(3, 11))
    buf = int(np.exp(rng.uniform(np.log(512 << 10), np.log(32 << 20)))) // 4096 * 4096
    sets = [f"blocks_per_plane={bpp}", f"t_prog_us={tprog!r}", f"gc_bg_start_free_blocks={gc}",
            f"gc_bg_stop_free_blocks={gc + 2 if gc else 0}", f"write_buffer_bytes={buf}"]
    truth = {"spare_pct": (bpp * planes * block / cap - 1) * 100, "t_prog_us": tprog,
             "gc_bg_start_free_blocks": gc, "write_buffer_bytes": buf}
    return {"sets": sets, "truth": truth}


def cli(*args: str) -> None:
    """``ssdlab ARGS`` in this process, its output discarded; raises on a non-zero exit."""
    from ssdlab.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(list(args))
    if code:
        raise RuntimeError(f"ssdlab {' '.join(args)} exited {code}: {err.getvalue()}")


def measure(drive: dict, base: Path, out: Path) -> Path:
    args = ["consistency", "--target", f"sim:{base}", "--duration", str(DURATION_S), "--out", str(out),
            "--no-progress"]
    for kv in drive["sets"]:
        args += ["--set", kv]
    cli(*args)
    return out


def fit(measured: Path, base: Path, out: Path, scale: float, evals: int, seed: int, workers: int) -> dict:
    from ssdlab.fit import run_fit

    with contextlib.redirect_stderr(io.StringIO()):
        return run_fit([str(measured)], out, keys=KEYS, base=str(base), evals=evals, seed=seed, scale=scale,
                       workers=workers, progress=False, argv=["bench_fit_coverage"])


def claims(summary: dict, truth: dict) -> list[dict]:
    """Every key the fit called pinned, with whether its near-best range holds the truth
    (a relative slack of 1e-9 for values that round-trip through the history)."""
    out = []
    for r in summary.get("identifiability") or []:
        if r["verdict"] != "pinned":
            continue
        t = truth[r["key"]]
        slack = 1e-9 * max(1.0, abs(t))
        out.append({"key": r["key"], "truth": t, "lo": r["near_min"], "hi": r["near_max"],
                    "fitted": r["fitted"], "holds": r["near_min"] - slack <= t <= r["near_max"] + slack})
    return out


def run(drives: int, scales, evals: int, seed: int, workers: int, log=print, active_gc: bool = False) -> list[dict]:
    """Plants ``drives`` drives (``active_gc``: none without active GC, whose 0-IOPS stalls
    the search rarely fits and which then pin nothing), fits each at every scale; one record
    per (drive, scale): drive, scale, truth, claims, verdicts, distance, checks, wall time."""
    rng = np.random.default_rng(seed)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = base_profile(work)
        for i in range(drives):
            drive = plant(rng, active_gc)
            measured = measure(drive, base, work / f"drive{i}")
            for scale in scales:
                t0 = time.perf_counter()
                s = fit(measured, base, work / f"fit{i}-{scale:g}", scale, evals, seed, workers)
                rec = {"drive": i, "scale": scale, "truth": drive["truth"], "claims": claims(s, drive["truth"]),
                       "verdicts": {r["key"]: r["verdict"] for r in s["identifiability"]},
                       "distance": s["distance"], "checks": s.get("checks") or {},
                       "wall_s": time.perf_counter() - t0}
                records.append(rec)
                log(_line(rec))
    return records


def _line(rec: dict) -> str:
    t = rec["truth"]
    head = (f"drive {rec['drive']:2d} (spare {t['spare_pct']:.1f} %, t_prog {t['t_prog_us']:.0f} µs, "
            f"gc {t['gc_bg_start_free_blocks']}, buffer {t['write_buffer_bytes'] >> 10} KiB) scale {rec['scale']:g}: "
            f"distance {rec['distance']:.3f}, tolerance {rec['checks'].get('tolerance', math.nan):.3f}, misfit "
            f"{rec['checks'].get('misfit') or 0:.3f}, {rec['wall_s']:.0f} s")
    marks = ", ".join(f"{c['key']} {'ok' if c['holds'] else 'MISS'} [{c['lo']:.4g}, {c['hi']:.4g}]"
                      for c in rec["claims"])
    return f"{head}; pinned: {marks or 'none'}"


def coverage(records: list[dict]) -> tuple[int, int]:
    """(claims that hold, claims) over every record."""
    cl = [c for r in records for c in r["claims"]]
    return sum(c["holds"] for c in cl), len(cl)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--drives", type=int, default=20)
    ap.add_argument("--scales", default=",".join(f"{s:g}" for s in SCALES))
    ap.add_argument("--evals", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=None)
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from records import Recorder, machine
    rec = Recorder("fit_coverage", vars(a))

    scales = [float(x) for x in a.scales.split(",")]
    print(f"# fit coverage: {a.drives} planted drives x scales {a.scales}, {a.evals} simulations per fit, "
          f"seed {a.seed}; {machine()}", flush=True)
    t0 = time.perf_counter()
    records = run(a.drives, scales, a.evals, a.seed, a.workers, log=lambda s: print(s, flush=True))
    print()
    print(f"{'scale':>6} {'fits':>5} {'pinned':>7} {'held':>5}  pinned per key")
    for scale in scales:
        rs = [r for r in records if r["scale"] == scale]
        held, n = coverage(rs)
        per_key = {}
        for r in rs:
            for c in r["claims"]:
                per_key[c["key"]] = per_key.get(c["key"], 0) + 1
        print(f"{scale:>6g} {len(rs):>5} {n:>7} {held:>5}  "
              + ", ".join(f"{k} {v}" for k, v in sorted(per_key.items())))
    held, n = coverage(records)
    pct = 100 * held / n if n else math.nan
    print(f"coverage: {held} of {n} pinned claims hold ({pct:.1f} %; target >= 90 %), "
          f"{time.perf_counter() - t0:.0f} s")
    rec.write({"pinned_claims": n, "claims_held": held, "coverage_pct": pct, "wall_s": time.perf_counter() - t0})


if __name__ == "__main__":
    main()
