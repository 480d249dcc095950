"""``ssdlab sweep``: the LBA sweep (SPEC test 2; seed 000), or with GRID.toml a grid of
simulations. ``recovery`` and ``used`` are declared in their :mod:`ssdlab.procedures` modules."""
from __future__ import annotations

import argparse

from ..cli import run_procedure
from ..errors import UserError

EPILOG = "Targets: sim:PROFILE (default sim:default), /dev/NAME, file:PATH, loop:SIZE. Docs: README.md"
SIZES = "sizes: bytes or 4KiB, 128KiB, 64MiB, 8G (K/M/G powers of 1000, KiB/MiB/GiB powers of 1024)"


def _size(text: str) -> int:
    from ..cli import _size as parse_size

    return parse_size(text)


def _add_span(p: argparse.ArgumentParser) -> None:
    p.add_argument("--span", type=float, default=100.0, metavar="PCT",
                   help="percent of the capacity to test; 75 emulates 25%% extra spare area (default: %(default)s)")


def zone_bytes_help(default: str) -> str:
    """``--zone-bytes`` help for argparse, with the command's default."""
    from ..procedures.sweep import ZONE_BYTES_HELP

    return f"{ZONE_BYTES_HELP} (default: {default})".replace("%", "%%")


def _add_sweep_args(p: argparse.ArgumentParser, what: str, full: bool = False) -> None:
    """--zones, --zone-bytes (default: the sweep's sample, or whole zones if ``full``), --bs, --qd."""
    from ..procedures.sweep import FULL_DEFAULT, SAMPLE_DEFAULT, WHOLE_ZONES, parse_zone_bytes

    g = p.add_argument_group(f"sweep ({what})")
    g.add_argument("--zones", type=int, default=100, metavar="N",
                   help="zones across the span, one measurement per zone and direction (default: %(default)s)")
    g.add_argument("--zone-bytes", type=parse_zone_bytes, default=WHOLE_ZONES if full else None, metavar="SIZE",
                   help=zone_bytes_help(FULL_DEFAULT if full else SAMPLE_DEFAULT))
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
