"""``ssdlab review``: the whole review suite on one target, one results folder, one report
(the orchestration: :mod:`ssdlab.procedures.review`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import UserError

EPILOG = ("Targets: sim:PROFILE (default sim:default), /dev/NAME, file:PATH, loop:SIZE. "
          "Time on a real drive: each consistency part a fill plus --duration; recovery two fills, "
          "2 x --torture-min, --idle-min and four sweeps; used a fill, the dirty writes and 3 x --used-duration "
          "(hours in all; --quick shortens the timed phases). On the simulator: minutes. Docs: README.md")

#: --quick: shorter durations (explicit options still win).
QUICK = {"duration": 600.0, "torture_min": 5.0, "idle_min": 10.0, "used_duration": 20.0}
FULL = {"duration": 2000.0, "torture_min": 20.0, "idle_min": 40.0, "used_duration": 60.0}


def _parts_list(text: str) -> list[str]:
    from ..procedures.review import PARTS

    names = [t.strip() for t in text.split(",") if t.strip()]
    for n in names:
        if n not in PARTS:
            raise argparse.ArgumentTypeError(f"{n!r} is not a part: choose from {', '.join(PARTS)}")
    if not names:
        raise argparse.ArgumentTypeError(f"no part named: choose from {', '.join(PARTS)}")
    return names


def register(subparsers, add_target_args) -> None:
    from ..procedures.review import PART_TITLES, PARTS
    from ..procedures.sweep import WHOLE_ZONES
    from ..procedures.used import parse_dirty
    from ..procedures.sweep import FULL_DEFAULT, ZONE_BYTES_HELP, parse_zone_bytes

    parts_help = "; ".join(f"{n}: {t}" for n, t in PART_TITLES.items())
    r = subparsers.add_parser(
        "review", help="the whole suite on one target: consistency (default and 25%% spare), recovery "
                       "(LBA sweeps), used vs new; one folder, one report",
        description="Run the review suite on one target, in order: " + parts_help + ". Each part is a normal "
                    "results folder OUT/PART/ (as the single commands write) and starts with a purge; OUT gets "
                    "summary.json (the parts, their status and headline figures) and one report.html holding "
                    "all of them. A part that fails is reported and the next one runs (exit status 1). Ctrl-C or "
                    "SIGTERM stops the running part, keeps what it measured (marked incomplete), marks the "
                    "remaining parts 'not run' and still writes summary.json and report.html (exit status 130). "
                    "Times are simulated time on sim: targets.",
        epilog=EPILOG)
    add_target_args(r)
    g = r.add_argument_group("what to run")
    g.add_argument("--quick", action="store_true",
                   help="shorter durations: --duration 600, --torture-min 5, --idle-min 10, --used-duration 20 "
                        "(options given explicitly still apply)")
    g.add_argument("--only", action="append", type=_parts_list, default=[], metavar="PART[,PART]",
                   help=f"run only these parts (repeatable or comma-separated): {', '.join(PARTS)}")
    g.add_argument("--skip", action="append", type=_parts_list, default=[], metavar="PART[,PART]",
                   help="leave out these parts (repeatable or comma-separated)")
    c = r.add_argument_group("consistency parts (both)")
    c.add_argument("--duration", type=float, default=None, metavar="S",
                   help="seconds of 4 KiB random writes at QD32 after the fill, per part "
                        f"(default: {FULL['duration']:g}; --quick: {QUICK['duration']:g})")
    v = r.add_argument_group("recovery part")
    v.add_argument("--torture-min", type=float, default=None, metavar="MIN",
                   help="minutes of 4 KiB random writes at QD32 on the full drive, done twice (before the "
                        f"after-torture sweep and again before the idle time) (default: {FULL['torture_min']:g}; "
                        f"--quick: {QUICK['torture_min']:g}; the review's second variant: 60)")
    v.add_argument("--idle-min", type=float, default=None, metavar="MIN",
                   help=f"minutes without host I/O before the after-idle sweep (default: {FULL['idle_min']:g}; "
                        f"--quick: {QUICK['idle_min']:g})")
    v.add_argument("--zones", type=int, default=100, metavar="N",
                   help="zones per sweep, one measurement per zone and direction (default: %(default)s)")
    v.add_argument("--zone-bytes", type=parse_zone_bytes, default=WHOLE_ZONES, metavar="SIZE",
                   help=f"{ZONE_BYTES_HELP} (default: {FULL_DEFAULT})".replace("%", "%%"))
    u = r.add_argument_group("used part")
    u.add_argument("--used-duration", type=float, default=None, metavar="S",
                   help="seconds of 4 KiB random writes at QD32 per state: new, used, used after TRIM "
                        f"(default: {FULL['used_duration']:g}; --quick: {QUICK['used_duration']:g})")
    u.add_argument("--dirty-writes", type=parse_dirty, default={"dirty_spans": 1.0, "dirty_bytes": None}, metavar="SIZE|Nx",
                   help="random-write bytes after the fill that make the drive 'used': a size, or a multiple "
                        "of the span such as 2x (default: 1x, one span)")
    r.set_defaults(func=cmd_review)


def _value(args, name: str):
    v = getattr(args, name)
    if v is not None:
        return v
    return (QUICK if args.quick else FULL)[name]


def params_from_args(args):
    from ..procedures.review import PARTS, ReviewParams

    only = [n for group in args.only for n in group]
    skip = {n for group in args.skip for n in group}
    chosen = tuple(n for n in PARTS if (not only or n in only) and n not in skip)
    if args.zones < 1:
        raise UserError(f"--zones {args.zones}: must be >= 1")
    return ReviewParams(consistency_duration_s=_value(args, "duration"), torture_min=_value(args, "torture_min"),
                        idle_min=_value(args, "idle_min"), zones=args.zones, zone_bytes=args.zone_bytes,
                        used_duration_s=_value(args, "used_duration"),
                        **args.dirty_writes, seed=args.seed, parts=chosen)


def cmd_review(args) -> int:
    from ..cli import open_cli_target
    from ..procedures import review
    from ..results import ResultsDir

    params = params_from_args(args)
    params.check()
    if args.dry_run:
        target = open_cli_target(args)
        try:
            review.print_plan(target, params, args.out)
        finally:
            target.close()
        return 0
    rd = ResultsDir(args.out, overwrite=args.force)
    first = review.parts(params)[0].name
    try:
        target = open_cli_target(args, rd.path / first)
    except UserError as e:
        rd.mark_incomplete(f"not started: {e}")
        raise
    try:
        review.plan(target, params)  # every part's options, before the drive is touched
    except BaseException as e:
        target.close()
        rd.mark_incomplete(f"not started: {e}")
        raise

    def open_part(part_dir: Path):
        return open_cli_target(args, part_dir)

    summary = review.run(open_part, params, rd, argv=sys.argv, overwrite=args.force, progress=args.progress,
                         first_target=target)
    done = summary["parts_done"]
    ran = [e for e in summary["parts"] if e["status"] != "skipped"]
    print(f"{summary.get('target')}: {done} of {len(ran)} part{'s' if len(ran) != 1 else ''} done"
          + (f"; failed: {', '.join(summary['parts_failed'])}" if summary["parts_failed"] else ""))
    print(f"  results in {args.out}/ (one folder per part, summary.json, report.html)")
    return 0 if summary["complete"] else 1
