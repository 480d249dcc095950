"""``ssdlab fit RESULTS... --out DIR``: a fitted simulated twin of a measured drive
(:mod:`ssdlab.fit`)."""
from __future__ import annotations

import argparse
import sys

from ..fit.measured import CSV_FORMAT, CsvOptions
from ..procedures.declare import number, seed, size
from ..units import MAX_BS_BYTES, MAX_SIZE_BYTES

DESCRIPTION = """\
Search simulator profile keys for the simulated drive whose series best match measured
results: the results folders of a consistency, fill or run test (of a real drive through
fio, or of a simulated one), or a fill or consistency curve from elsewhere as a CSV file
(below), one or several of the same drive. Each candidate drive repeats
the measured tests on the simulator (same test, span, duration, queue depth, block size,
interval and the drive's capacity) and is scored by a distance on the series' shape: a
weighted mean of normalized log errors, reported per term. Writes fitted.toml (a profile:
--target sim:OUT/fitted.toml), fit.png/.svg (measured | fitted), history.parquet/.csv,
summary.json (terms, keys, identifiability) and report.html."""

EPILOG = """\
distance terms (each |ln((fitted + floor) / (measured + floor))|; weight in brackets):
  consistency  fob_level [1], fob_length [1] (time to the first sustained drop),
               steady_p10 [1] / steady_p50 [2] / steady_p90 [1] (IOPS over the last 30 %),
               curve [2] (median IOPS in 40 slices of the run), and when the measured
               steady state is bimodal high_mode_share [1] and burst_period [1]
  fill         fill_average [2], fill_curve [2] (MB/s in 20 slices of the bytes written),
               cache_size [1], phase_rates [2] (median MB/s in each phase's share of the span,
               the phases of both fills), burst_average [1] (after the pause), latency_p50 [1]
  run          per group and direction: gN.DIR.iops [2], gN.DIR.lat_p50 [1], gN.DIR.lat_p99 [1]

keys searched by default (--key replaces them; --key defaults adds them back):
  consistency  spare_pct 3:50 %, t_prog_us 300:4000 µs (log), controller_cmd_us 3:60 µs (log),
               gc_bg_start_free_blocks 0:16 blocks
  fill         t_prog_us, channel_mbps 100:2000 MB/s (log), host_link_mbps 200:8000 MB/s (log),
               write_buffer_bytes 1MiB:1GiB (log)
  run          spare_pct, t_prog_us, t_read_us 20:200 µs (log), controller_cmd_us
spare_pct is the spare area in % of the user capacity ((NAND - user) / user; the default
256 GB drive: 7.4 %); the user capacity is the measured drive's, so the spare area is set
through blocks_per_plane (one block per plane is its resolution). Other keys: `ssdlab
profiles --keys` lists them with units; give a range for those without a default.

checks: the search starts from a space-filling sample (never from --base's values, which may
be the measured drive's own) and ends by simulating the best candidate again with two other
seeds (the distance's noise, and how far two runs of one drive are) and, when --scale < 1,
at full size (fitted.toml itself: how far the scaled copy is from it). The candidates that
fit about as well as the best are those within 2 x noise + that deviation + the misfit (the
best's distance above two runs' of one drive) of it, at least 0.02 and half the best
distance: their range of each key is its "near-best" range.

identifiability: per key, "pinned" (a claim that the drive's value lies in its near-best
range) when the checks ran, the misfit is at most 0.05, the two refine searches (started
apart) both end near the best, at least 5 candidates of the sample and refine steps are near
it, their values spread over <= 15 % of the key's range, moving the key alone by up to 15 %
of its range takes the distance beyond the tolerance on both sides, and it does not trade
off with another key (|r| >= 0.8 among the near-best candidates); "not preserved at this
scale" (--scale changes what the key does: a write buffer smaller than the scaled drive can
hold); "not identified" (spread > 40 % or no rise: other values fit as well; the fitted
value is then arbitrary); else "weakly identified" (the output says what pinning lacks).
Two refine searches take --evals of at least 10 x max(6, 2 x keys + 2) + 2 x keys + 3 (67
for 2 keys, 111 for 4); with fewer there is one search and no key is pinned.

--scale F simulates a copy of each candidate F times its size: blocks of F times the pages
(rounded; at least 8), every count of blocks and planes kept, the erase time, write buffer,
pseudo-SLC and map cache sizes and idle delay times F, the test F times as long with F times
the interval. Blocks of fewer pages make greedy GC choosier (the default drive at 0.05:
~13 % less write amplification in steady state); the full-size check measures that.

CSV curves:
""" + CSV_FORMAT + """

examples:
  ssdlab consistency --target /dev/sdb --destroy-data /dev/sdb --out m1
  ssdlab fit m1 --scale 0.25 --evals 200 --out twin
  ssdlab consistency --target sim:twin/fitted.toml --out check
  ssdlab fit examples/fill-neo-forza-nfp075-1tb.csv --capacity 1TB --base tlc-direct --scale 0.03125 \\
      --key slc_dynamic_max_bytes=4GB:100GB:log --key slc_t_prog_us=100:600:log \\
      --key t_prog_us=500:2000:log --key slc_fold_units_per_write=0:0.5 --evals 100 --out nfp075"""


def _key_arg(text: str) -> str:
    from ..errors import UserError
    from ..fit import space

    if text.strip() == "defaults":
        return text
    try:
        space.parse_key(text)
    except UserError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix(f"--key {text}: ")) from None
    return text


def register(subparsers, add_target_args) -> None:  # noqa: ARG001 - a fit's target is the simulator
    p = subparsers.add_parser("fit", help="fit a simulated twin: search profile keys so that the simulator "
                                          "reproduces measured consistency, fill or run results",
                              description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="measured results folders (consistency, fill or run) or CSV curves (below); several of the "
                        "same drive are fitted together")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (created; an earlier ssdlab results "
                                                                "folder is reused)")
    p.add_argument("--key", dest="keys", action="append", default=[], metavar="NAME=LO:HI[:log]", type=_key_arg,
                   help="search this profile key over [LO, HI] in its unit (repeatable; sizes may say 1MiB; :log "
                        "for a logarithmic scale); NAME alone uses its default range; replaces the default set of "
                        "keys, `--key defaults` adds it back (see below)")
    p.add_argument("--base", default="default", metavar="PROFILE",
                   help="profile the candidates start from and take every other key from, e.g. its geometry "
                        "(built-in name or .toml path; default: %(default)s)")
    p.add_argument("--evals", type=number(int, low=1, high=100_000), default=100, metavar="N",
                   help="simulation budget: candidate drives simulated (default: %(default)s; must be in "
                        "[1, 100000]). Candidates the simulator refuses and repeats cost nothing")
    p.add_argument("--seed", type=seed, default=1,
                   help="seed of the search and of every simulation: same seed, same fit (default: %(default)s)")
    p.add_argument("--scale", type=number(float, low=0, high=1, low_open=True), default=1.0, metavar="F",
                   help="simulate consistency and fill results on a copy of each candidate F times its size (blocks "
                        "of F times the pages; see below), the test F times as long at F times the interval; levels "
                        "and shares of the run are kept, simulated times are divided by F; a full-size check "
                        "measures what the copy changes; fitted.toml has the measured capacity (default: "
                        "%(default)g; must be in (0, 1])")
    p.add_argument("--workers", type=number(int, low=1, high=4096), default=None, metavar="N",
                   help="local worker processes (default: the CPU count; 1 simulates in this process; must be in "
                        "[1, 4096]). Ignored with --scheduler")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", default=None,
                   help="simulate on this dask.distributed scheduler's workers (pip install 'ssdlab[cluster]'): "
                        "they need the same ssdlab, and a --base .toml file at the same path; the tasks carry "
                        "everything else they simulate")
    p.add_argument("--connect-timeout", type=number(float, low=0, low_open=True, high=3600), default=10.0,
                   metavar="S", help="seconds to wait for the scheduler and its first worker (default: %(default)g s; "
                                     "must be in (0, 3600] s)")
    csv = p.add_argument_group("CSV curves", "what a CSV file does not say (the format: below)")
    csv.add_argument("--capacity", type=number(size, 1 << 20, MAX_SIZE_BYTES, unit="bytes"), metavar="SIZE",
                     default=None,
                     help="the drive's user capacity, e.g. 1TB, 512GB or 480103981056 (required with a CSV)")
    csv.add_argument("--test", choices=("fill", "consistency"), default=None,
                     help="the test the curve is (default: as its header says; an error if they differ)")
    csv.add_argument("--bs", type=number(size, 512, MAX_BS_BYTES, unit="bytes"), metavar="SIZE", default=None,
                     help="write size of the test (default: the test's own: fill 1 MiB, consistency 4 KiB)")
    csv.add_argument("--qd", type=number(int, low=1, high=1024), metavar="N", default=None,
                     help="queue depth of the test (default: fill 1, consistency 32; must be in [1, 1024])")
    csv.add_argument("--span", type=number(float, low=0, high=100, low_open=True), metavar="PCT", default=None,
                     help="percent of the capacity the test wrote over (default: 100; must be in (0, 100])")
    csv.add_argument("--interval", type=number(float, low=0.001, high=60), metavar="S", default=None,
                     help="a fill curve is read as a fill measured every S seconds (default: 0.5 s, as TechPowerUp; "
                          "must be in [0.001, 60] s)")
    p.add_argument("--force", action="store_true", help="write into --out even if it holds files that are not ssdlab "
                                                        "results")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                   help="no progress bar (shown when stderr is a terminal)")
    p.set_defaults(func=run_fit_command)


def run_fit_command(args) -> int:
    from ..fit import run_fit
    from ..fit.output import show

    csv = CsvOptions(capacity_bytes=args.capacity, test=args.test, bs_bytes=args.bs, qd=args.qd, span_pct=args.span,
                     interval_s=args.interval)
    summary = run_fit(args.results, args.out, keys=args.keys, base=args.base, evals=args.evals, seed=args.seed,
                      scale=args.scale, workers=args.workers, scheduler=args.scheduler,
                      connect_timeout=args.connect_timeout, progress=args.progress, argv=sys.argv, force=args.force,
                      csv=csv)
    show(summary, args.out)
    return 0
