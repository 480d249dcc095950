"""``ssdlab sweep`` and ``ssdlab recovery``: the LBA sweep and the TRIM/idle recovery sequence
(SPEC tests 2-3; seed 000). ``used`` is declared in :mod:`ssdlab.procedures.used`."""
from __future__ import annotations

import argparse

from ..cli import run_procedure
from ..errors import UserError

EPILOG = "Targets: sim:PROFILE (default sim:default), /dev/NAME, file:PATH, loop:SIZE. Docs: README.md"
SIZES = "sizes: bytes or 4KiB, 128KiB, 64MiB, 8G (K/M/G powers of 1000, KiB/MiB/GiB powers of 1024)"


def _size(text: str) -> int:
    from ..cli import _size as parse_size

    return parse_size(text)


def _zone_bytes(text: str) -> int:
    """``--zone-bytes``: a size, ``full`` (WHOLE_ZONES) for the whole zone, or ``sample``
    (None) for the sweep's default sample."""
    from ..procedures.sweep import WHOLE_ZONES

    word = text.strip().lower()
    if word == "sample":
        return None
    return WHOLE_ZONES if word == "full" else _size(text)


def _add_span(p: argparse.ArgumentParser) -> None:
    p.add_argument("--span", type=float, default=100.0, metavar="PCT",
                   help="percent of the capacity to test; 75 emulates 25%% extra spare area (default: %(default)s)")


#: --zone-bytes help: the choice, then each command's default.
ZONE_BYTES_HELP = ("bytes transferred at the start of each zone, a multiple of --bs; 'full' for whole zones; "
                   "'sample' for min(64 MiB, zone size, 3%% of the span / zones), so that a sweep writes at most "
                   "~3%% of the span ")
SAMPLE_DEFAULT = "(default: sample: a sweep changes the drive it measures little; 'full' rewrites the whole span)"
FULL_DEFAULT = ("(default: full: each write pass rewrites the whole span, as HD Tach's write test, which is what "
                "shows a dirty drive cleaning itself across the pass; 'sample' writes ~3%% of the span and cannot)")


def _add_sweep_args(p: argparse.ArgumentParser, what: str, full: bool = False) -> None:
    """--zones, --zone-bytes (default: the sweep's sample, or whole zones if ``full``), --bs, --qd."""
    from ..procedures.sweep import WHOLE_ZONES

    g = p.add_argument_group(f"sweep ({what})")
    g.add_argument("--zones", type=int, default=100, metavar="N",
                   help="zones across the span, one measurement per zone and direction (default: %(default)s)")
    g.add_argument("--zone-bytes", type=_zone_bytes, default=WHOLE_ZONES if full else None, metavar="SIZE",
                   help=ZONE_BYTES_HELP + (FULL_DEFAULT if full else SAMPLE_DEFAULT))
    g.add_argument("--bs", dest="sweep_bs", type=_size, default=128 * 1024, metavar="SIZE",
                   help="sequential request size (default: 128KiB = 131072 bytes)")
    g.add_argument("--qd", dest="sweep_qd", type=int, default=1, metavar="N",
                   help="sequential queue depth (default: %(default)s, like HD Tach: one request at a time)")


SWEEP_DESCRIPTION = (
    "LBA sweep (HD Tach-like): purge, then in each of --zones zones across the span write --zone-bytes "
    "sequentially and measure MB/s (10^6 bytes/s), then read the same bytes back and measure read MB/s. The write "
    "pass writes the drive: it is itself a sequential write workload. Writes summary.json (average/min/max MB/s per "
    "direction), sweep.parquet/.csv (zone, position_pct, offset_bytes, write_mbps, read_mbps) and sweep.png/.svg. "
    + SIZES + ".")
GRID_SWEEP_DESCRIPTION = (
    "With GRID.toml: a parameter sweep instead, a grid of simulations (spare area x GC policy x workload x "
    "profile...), exactly as `ssdlab grid GRID.toml`: on a local process pool (default; --workers) or on a "
    "dask.distributed cluster (--scheduler tcp://HOST:PORT), one table (grid.parquet, grid.csv), summary.json "
    "and comparison plots in --out (default: ./NAME-results for NAME.toml). The grid names its target, profile "
    "overrides and options in the file: the LBA-sweep options (--target, --set, --seed, --span, --zones, "
    "--zone-bytes, --bs, --qd, --no-read, --no-write, --purge) do not apply and are refused; --workers, "
    "--scheduler and --connect-timeout apply only to a grid.")
#: LBA-sweep options that a grid run refuses when given (dest -> option), with their defaults.
_LBA_ONLY = {"target": ("--target", "sim:default"), "sets": ("--set", []), "seed": ("--seed", 1),
             "span": ("--span", 100.0), "zones": ("--zones", 100), "zone_bytes": ("--zone-bytes", None),
             "sweep_bs": ("--bs", 128 * 1024), "sweep_qd": ("--qd", 1), "read": ("--no-read", True),
             "write": ("--no-write", True), "purge_method": ("--purge", "blkdiscard")}
#: Grid options that need a GRID.toml (dest -> option, default).
_GRID_ONLY = {"workers": ("--workers", None), "scheduler": ("--scheduler", None),
              "connect_timeout": ("--connect-timeout", 10.0)}


def register(subparsers, add_target_args) -> None:
    import textwrap

    from .grid import GRID_FORMAT, add_grid_arguments

    s = subparsers.add_parser(
        "sweep", help="HD Tach-like sequential write and read MB/s in zones across the LBA space; "
                      "with GRID.toml: a grid of simulations (as `ssdlab grid`)",
        usage="%(prog)s [options]              (LBA sweep of one target)\n"
              "       %(prog)s GRID.toml [--out DIR] [--workers N | --scheduler tcp://HOST:PORT] [--dry-run]\n"
              "                                          (a grid of simulations, as `ssdlab grid`)",
        description="\n\n".join(textwrap.fill(t, 100) for t in (SWEEP_DESCRIPTION, GRID_SWEEP_DESCRIPTION)),
        epilog=GRID_FORMAT + "\n\n" + EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_args(s)
    for action in s._actions:  # argparse has no public lookup; a grid has its own default folder
        if action.dest == "out":
            action.required = False
            action.help = ("results folder (created; an earlier ssdlab results folder is reused); required for "
                           "an LBA sweep; for a grid default ./NAME-results for NAME.toml")
    _add_span(s)
    _add_sweep_args(s, "HD Tach-like")
    s.add_argument("--no-read", dest="read", action="store_false", help="skip the read pass")
    s.add_argument("--no-write", dest="write", action="store_false",
                   help="skip the write pass (the read pass then reads what the drive holds; on a purged drive "
                        "that is unwritten LBAs, which drives answer without reading NAND)")
    grid = s.add_argument_group("grid of simulations (with GRID.toml)")
    add_grid_arguments(grid, grid_nargs="?")
    s.set_defaults(func=cmd_sweep)

    r = subparsers.add_parser(
        "recovery", help="TRIM and idle recovery (Plextor M3 sequence): sweeps clean / after torture / idle / TRIM",
        description="The Plextor M3 sequence: purge; clean sweep; sequential fill of the span (128 KiB, QD32) and "
                    "4 KiB random writes at QD32 over the span for --torture-min minutes; sweep; purge, fill and "
                    "torture again (as the review did, so the idle sweep does not rewrite the previous sweep's "
                    "zones); --idle-min minutes without I/O; sweep; TRIM of the span; sweep. Each sweep's write pass "
                    "rewrites the whole span by default, as HD Tach's (--zone-bytes). Times are simulated time on sim: targets. "
                    "Writes summary.json (stages: average/min/max MB/s per sweep; tables), sweeps.parquet/.csv "
                    "(one column per stage and direction), fill/torture series, the overlay plots "
                    "recovery_write/recovery_read (MB/s vs position, one line per stage) and recovery_stages. "
                    + SIZES + ".",
        epilog=EPILOG)
    add_target_args(r)
    _add_span(r)
    r.add_argument("--torture-min", type=float, default=20.0, metavar="MIN",
                   help="minutes of 4 KiB random writes at QD32 on the full drive (default: %(default)s; the review's "
                        "second variant: 60)")
    r.add_argument("--idle-min", type=float, default=40.0, metavar="MIN",
                   help="minutes without host I/O before the third sweep (default: %(default)s)")
    r.add_argument("--no-retorture", dest="retorture", action="store_false",
                   help="idle right after the after-torture sweep instead of purging, filling and torturing again "
                        "first as the review did (saves a fill and --torture-min; but the after-idle sweep then "
                        "rewrites what the previous sweep wrote, which a drive frees cheaply, and overstates "
                        "idle recovery)")
    _add_sweep_args(r, "each of the four", full=True)
    r.add_argument("--no-read", dest="read", action="store_false", help="sweeps measure writes only")
    r.set_defaults(func=cmd_recovery)



def _check_sweep_args(args) -> None:
    """What the sweep layout does not check itself (it checks --zones, --zone-bytes, --bs)."""
    if args.sweep_qd < 1:
        raise UserError(f"--qd {args.sweep_qd}: must be >= 1")


def _mb(v) -> str:
    return "n/a" if v is None else f"{v:,.1f}"


def _given(args, table: dict) -> list[str]:
    return [opt for dest, (opt, default) in table.items() if getattr(args, dest, default) != default]


def cmd_sweep(args) -> int:
    from ..procedures import sweep

    if args.grid is not None:
        from .grid import run_grid_command

        wrong = _given(args, _LBA_ONLY)
        if wrong:
            raise UserError(f"{', '.join(wrong)}: LBA-sweep option{'s' if len(wrong) > 1 else ''}, not used with "
                            f"GRID.toml ({args.grid}); a grid names its target, profile overrides and options in "
                            "the file (see `ssdlab sweep --help`)")
        return run_grid_command(args)
    wrong = _given(args, _GRID_ONLY)
    if wrong:
        raise UserError(f"{', '.join(wrong)}: grid option{'s' if len(wrong) > 1 else ''}, needs a GRID.toml "
                        "(ssdlab sweep GRID.toml ...)")
    if not args.out:
        raise UserError("--out DIR is required for an LBA sweep (or give a GRID.toml to run a grid)")
    _check_sweep_args(args)
    params = sweep.SweepParams(span_pct=args.span, zones=args.zones, zone_bytes=args.zone_bytes, bs_bytes=args.sweep_bs,
                               qd=args.sweep_qd, write=args.write, read=args.read, seed=args.seed)

    def show(s: dict) -> None:
        print(f"{s['target']}  sweep of {s['zones']} zones, {s['zone_bytes']} bytes each, "
              f"{s['bs_bytes'] // 1024} KiB QD{s['qd']}")
        for d in ("write", "read"):
            if s[f"{d}_mbps_mean"] is not None:
                print(f"  {d:<5} MB/s  avg {_mb(s[f'{d}_mbps_mean'])}  min {_mb(s[f'{d}_mbps_min'])}  "
                      f"max {_mb(s[f'{d}_mbps_max'])}")

    return run_procedure(args, sweep, params, show)


def cmd_recovery(args) -> int:
    from ..procedures import recovery

    _check_sweep_args(args)
    if not args.torture_min > 0:
        raise UserError(f"--torture-min {args.torture_min}: must be > 0 minutes")
    if not args.idle_min >= 0:
        raise UserError(f"--idle-min {args.idle_min}: must be >= 0 minutes")
    params = recovery.RecoveryParams(span_pct=args.span, torture_min=args.torture_min, idle_min=args.idle_min,
                                     zones=args.zones, zone_bytes=args.zone_bytes, sweep_bs_bytes=args.sweep_bs,
                                     sweep_qd=args.sweep_qd, read=args.read, retorture=args.retorture,
                                     seed=args.seed)

    def show(s: dict) -> None:
        n = s.get("edge_zones", 1)
        print(f"{s['target']}  recovery: {s['torture_min']:g} min torture, {s['idle_min']:g} min idle; "
              f"sequential write MB/s per stage (avg / min / % of clean / first {n} zones -> last {n} zones)")
        for st in s["stages"].values():
            pct = st.get("write_vs_clean_pct")
            print(f"  {st['label']:<16} {_mb(st['write_mbps_mean']):>8} / {_mb(st['write_mbps_min']):>8}"
                  + ("         " if pct is None else f"  {pct:5.1f} %")
                  + f"  {_mb(st.get('write_mbps_first_zones')):>8} -> {_mb(st.get('write_mbps_last_zones'))}")

    return run_procedure(args, recovery, params, show)
