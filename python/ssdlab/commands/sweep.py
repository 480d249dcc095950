"""``ssdlab sweep`` is the LBA sweep only (its subcommand, options and run come from its
declaration, :mod:`ssdlab.procedures.sweep`). A grid of simulations is ``ssdlab grid
GRID.toml`` (:mod:`ssdlab.commands.grid`); this module refuses the sweep's old grid form
(``ssdlab sweep GRID.toml``) with a message that names the command to use."""
from __future__ import annotations

import argparse
import functools

from ..errors import UserError


def register(subparsers, add_target_args) -> None:  # noqa: ARG001 - the declaration added them
    s = subparsers.choices.get("sweep")
    if s is None:  # the command line names another command: the sweep test was not declared
        return
    s.add_argument("grid", nargs="?", metavar="GRID.toml", help=argparse.SUPPRESS)
    for action in s._actions:  # argparse has no public lookup; the refusal of a GRID.toml comes first
        if action.dest == "out":
            action.required = False
    s.set_defaults(func=functools.partial(cmd_sweep, s.get_default("func")))


def cmd_sweep(lba_sweep, args) -> int:
    """The declared LBA sweep (``lba_sweep(args)``); a GRID.toml is refused."""
    if args.grid is not None:
        raise UserError(f"ssdlab sweep {args.grid}: a grid of simulations is `ssdlab grid {args.grid}`; "
                        "`ssdlab sweep` is the LBA sweep of one target (see `ssdlab sweep --help`)")
    if not args.out and not args.dry_run:
        raise UserError("ssdlab sweep: --out DIR is required")
    return lba_sweep(args)
