"""``ssdlab sweep GRID.toml``: the grid form of ``ssdlab sweep``. The LBA sweep's subcommand,
options and run come from its declaration (:mod:`ssdlab.procedures.sweep`); this module adds
the optional GRID.toml and the grid options to that subcommand, and runs a grid of
simulations instead when a GRID.toml is given, exactly as ``ssdlab grid GRID.toml``
(:mod:`ssdlab.commands.grid`). Each form refuses the other form's options."""
from __future__ import annotations

import argparse
import functools
import textwrap

from ..errors import UserError
from .grid import GRID_FORMAT, add_grid_arguments, run_grid_command

GRID_SWEEP_DESCRIPTION = (
    "With GRID.toml: a parameter sweep instead, a grid of simulations (spare area x GC policy x workload x "
    "profile...), exactly as `ssdlab grid GRID.toml`: on a local process pool (default; --workers) or on a "
    "dask.distributed cluster (--scheduler tcp://HOST:PORT), one table (grid.parquet, grid.csv), summary.json "
    "and comparison plots in --out (default: ./NAME-results for NAME.toml). The grid names its target, profile "
    "overrides and options in the file: the LBA-sweep options ({lba}) do not apply and are refused; --workers, "
    "--scheduler and --connect-timeout apply only to a grid.")
#: Target options an LBA sweep takes and a grid refuses (dest -> option, default).
_TARGET_OPTIONS = {"target": ("--target", "sim:default"), "sets": ("--set", []), "seed": ("--seed", 1),
                   "purge_method": ("--purge", "blkdiscard")}
#: Grid options that need a GRID.toml (dest -> option, default).
_GRID_ONLY = {"workers": ("--workers", None), "scheduler": ("--scheduler", None),
              "connect_timeout": ("--connect-timeout", 10.0)}


def _lba_only() -> dict[str, tuple[str, object]]:
    """The LBA sweep's options (dest -> option, default): the target's and the declared ones."""
    from ..procedures import declare, sweep

    return {**_TARGET_OPTIONS, **{f.name: (p.flag, f.default) for f, p in declare.declared(sweep.SweepParams)
                                  if p.flag is not None}}


def register(subparsers, add_target_args) -> None:  # noqa: ARG001 - the declaration added them
    s = subparsers.choices.get("sweep")
    if s is None:  # the command line names another command: the sweep test was not declared
        return
    lba = ", ".join(opt for opt, _ in _lba_only().values())
    s.usage = ("%(prog)s [options]              (LBA sweep of one target)\n"
               "       %(prog)s GRID.toml [--out DIR] [--workers N | --scheduler tcp://HOST:PORT] [--dry-run]\n"
               "                                          (a grid of simulations, as `ssdlab grid`)")
    s.description = "\n\n".join(textwrap.fill(t, 100) for t in (s.description, GRID_SWEEP_DESCRIPTION.format(lba=lba)))
    s.epilog = GRID_FORMAT + "\n\n" + s.epilog
    s.formatter_class = argparse.RawDescriptionHelpFormatter
    for action in s._actions:  # argparse has no public lookup; a grid has its own default folder
        if action.dest == "out":
            action.required = False
            action.help = ("results folder (created; an earlier ssdlab results folder is reused); required for "
                           "an LBA sweep; for a grid default ./NAME-results for NAME.toml")
    add_grid_arguments(s.add_argument_group("grid of simulations (with GRID.toml)"), grid_nargs="?")
    s.set_defaults(func=functools.partial(cmd_sweep, s.get_default("func")))


def _given(args, table: dict) -> list[str]:
    return [opt for dest, (opt, default) in table.items() if getattr(args, dest, default) != default]


def cmd_sweep(lba_sweep, args) -> int:
    """A grid with GRID.toml, else the declared LBA sweep (``lba_sweep(args)``)."""
    if args.grid is not None:
        wrong = _given(args, _lba_only())
        if wrong:
            raise UserError(f"{', '.join(wrong)}: LBA-sweep option{'s' if len(wrong) > 1 else ''}, not used with "
                            f"GRID.toml ({args.grid}); a grid names its target, profile overrides and options in "
                            "the file (see `ssdlab sweep --help`)")
        return run_grid_command(args)
    wrong = _given(args, _GRID_ONLY)
    if wrong:
        raise UserError(f"{', '.join(wrong)}: grid option{'s' if len(wrong) > 1 else ''}, needs a GRID.toml "
                        "(ssdlab sweep GRID.toml ...)")
    if not args.out and not args.dry_run:
        raise UserError("--out DIR is required for an LBA sweep (or give a GRID.toml to run a grid)")
    return lba_sweep(args)
