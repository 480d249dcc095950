"""The ``ssdlab`` command: one subcommand per test, plus profile and analysis tools.

Every test writes a results folder (``--out``): summary.json, series (Parquet + CSV),
PNG/SVG plots. Units on the command line: sizes as :data:`ssdlab.units.SIZE_RULE` says (GNU
coreutils' rule: K, M, G, T and KiB... powers of 1024, KB, MB, GB, TB powers of 1000), times
in seconds, spans in percent of the target's capacity.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import sys
from pathlib import Path

from . import __version__, stop
from .errors import UserError
from .params import Parser
from .procedures import declare
from .targets import DEFAULT_TARGET, open_target, usage as target_kinds
from .units import SIZE_RULE, parse_size

#: Modules that add subcommands, with the commands each adds or completes: each has
#: ``register(subparsers, add_target_args)`` and sets ``func`` on its parsers (a callable taking
#: the parsed args, returning an exit status). A command line that names one of these commands
#: imports only its module (importing them all costs a short run a tenth of its time).
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "ssdlab.commands.sweep": ("sweep",), "ssdlab.commands.report": ("report", "analyze", "compare"),
    "ssdlab.commands.trace": ("trace",), "ssdlab.commands.grid": ("grid",), "ssdlab.commands.fit": ("fit",),
    "ssdlab.commands.emulate": ("emulate",),
}

EPILOG = (f"Targets (default {DEFAULT_TARGET}): {target_kinds()}. "
          f"{SIZE_RULE[0].upper()}{SIZE_RULE[1:]}; a size that must be a multiple of a unit is rounded to one, with a note. "
          "Docs: README.md")


def _add_target_args(p: argparse.ArgumentParser, out_required: bool = True) -> None:
    p.add_argument("--target", default=DEFAULT_TARGET, metavar="TARGET",
                   help=f"what to test: {target_kinds(about=False)} (default: %(default)s, a simulated 256 GB client drive)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override one simulator profile key for this run (repeatable; also an emu: target's slowdown=K, "
                        "a null: target's figures and capabilities), e.g. --set gc_policy=fifo; "
                        "--set capacity=16GiB is the same drive at 16 GiB (its spare fraction kept), where "
                        "user_capacity_bytes only changes what the host addresses; `ssdlab profiles --keys` lists "
                        "keys and units")
    p.add_argument("--seed", type=declare.seed, default=1, metavar="N",
                   help="random seed in [0, 2^63-1]; same seed, same simulated results (default: %(default)s)")
    p.add_argument("--sim-threads", dest="sim_threads", type=int, choices=[1, 2], default=1, metavar="N",
                   help="threads one simulation may use, 1 or 2 (default: %(default)s). With 2, a phase or a "
                        "trace replay may run the FTL's work (map, GC) on a second core, ahead of the timing model, "
                        "where the drive's FTL follows command order alone (striped die allocation; no SLC or map "
                        "cache, zones, FDP or compression; no idle time within the phase), and does so while that "
                        "is the faster way, measured as it runs: the same results, sooner where reads mix with "
                        "writes (a 70/30 mix on the 256 GB default drive: 1.6x ended by an IO count, 1.35x by its "
                        "duration; a trace replay 1.2x), as fast for only writes or only reads. The trace test's "
                        "variants side by side take the cores first (its queue depths of one TRIM choice share "
                        "one FTL run on two threads, whatever this says). Real targets ignore it")
    p.add_argument("--out", required=out_required, metavar="DIR",
                   help="results folder (created; an earlier ssdlab results folder is reused)")
    p.add_argument("--force", action="store_true", help="write into --out even if it holds files that are not ssdlab results")
    p.add_argument("--no-progress", dest="progress", action="store_false", default=None,
                   help="print no progress on stderr (a bar per phase on a terminal; else a line every 30 s, "
                        "or every SSDLAB_PROGRESS_EVERY_S seconds)")
    real = p.add_argument_group("real targets (fio)")
    real.add_argument("--destroy-data", dest="destroy", metavar="DEVICE",
                      help="allow writing to DEVICE although the safety gate found data, partitions, signatures "
                           "or a mount on it; must name the exact device given to --target. ALL DATA ON IT IS LOST")
    real.add_argument("--dry-run", action="store_true",
                      help="print the plan and the fio job files; touch nothing")
    real.add_argument("--file-size", dest="file_size", metavar="SIZE",
                      help="size of a file:PATH target, created sparse if missing, resized if different (a size "
                           "as below, e.g. 8G or 8GB; rounded down to 4096 bytes; default: the existing file's size)")
    real.add_argument("--purge", dest="purge_method", default="blkdiscard",
                      choices=["blkdiscard", "nvme-format", "ata-secure-erase", "none"],
                      help="how a real device is returned to fresh-out-of-box before a test (default: %(default)s; "
                           "a file:PATH is truncated instead, unless none)")


def open_cli_target(args, out_dir=None):
    """The target named by ``--target`` with the options of ``_add_target_args``; fio job
    files and logs go to ``OUT/fio`` (or a temp folder for a dry run)."""
    workdir = None if out_dir is None or args.dry_run else Path(out_dir) / "fio"
    size = None
    if getattr(args, "file_size", None) is not None:
        try:
            size = parse_size(args.file_size)
        except ValueError as e:
            raise UserError(f"--file-size {e}") from None
    target = open_target(args.target, sets=args.sets, seed=args.seed, threads=getattr(args, "sim_threads", 1),
                         workdir=workdir, destroy=args.destroy, dry_run=args.dry_run,
                         purge_method=args.purge_method, size_bytes=size)
    print_profile_warnings(target.profile)
    return target


def print_profile_warnings(profile) -> None:
    """The notes (sizes rounded) and warnings (spare area out of the ordinary) on a
    simulated drive's profile on stderr, one line each; nothing for a real target (None)."""
    for kind, lines in (("note", getattr(profile, "notes", ())), ("warning", getattr(profile, "warnings", ()))):
        for line in lines:
            print(f"ssdlab: {kind}: {line}", file=sys.stderr)


def _command_word(argv: list[str] | None) -> str | None:
    """The command the command line names (its first word that is not an option), if it is a
    declared test or a command of :data:`COMMAND_MODULES`; None for the overall help, or for a
    word that names no command (argparse's message then lists them all)."""
    import pkgutil

    from . import procedures

    words = [a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")]
    if not words:
        return None
    known = {i.name for i in pkgutil.iter_modules(procedures.__path__)}.union(*COMMAND_MODULES.values(), ["profiles"])
    return words[0] if words[0] in known else None


def _declared_tests(word: str | None) -> list:
    """The declared tests (:mod:`ssdlab.procedures.declare`) the command line needs: only the
    one it names (importing a test module costs ~0.5 s), none for another command, all for the
    overall help (``word`` None)."""
    return declare.tests(only=word) if word is not None else declare.tests()


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    parser = Parser(
        prog="ssdlab",
        description="How does an SSD behave once it is full, dirty and busy? Review-grade torture tests "
                    "on real drives (fio) and on a simulated NAND/FTL drive.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"ssdlab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    word = _command_word(argv)

    for test in _declared_tests(word):
        t = sub.add_parser(test.name, help=test.help.replace("%", "%%"), description=test.description,
                           epilog=EPILOG, allow_abbrev=not test.passthrough)
        _add_target_args(t, out_required=test.early is None and test.needs_out)
        if not test.purges:  # no --purge on a test that never purges (argparse has no public removal)
            t._handle_conflict_resolve(None, [("--purge", t._option_string_actions["--purge"])])
            t.set_defaults(purge_method="none")
        declare.add_arguments(t, test.params)
        t.set_defaults(func=functools.partial(run_test, test), passthrough=test.passthrough)

    p = sub.add_parser("profiles", help="list built-in simulator profiles, or show one, or list profile keys",
                       description="Built-in simulator profiles and the keys a profile can set (with units).")
    p.add_argument("name", nargs="?", help="show this profile resolved (built-in name or .toml path)")
    p.add_argument("--keys", action="store_true", help="list every profile key with its type, unit and meaning")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="override a key when showing a profile")
    p.set_defaults(func=cmd_profiles)
    for module, commands in COMMAND_MODULES.items():
        if word is None or word in commands:
            importlib.import_module(module).register(sub, _add_target_args)
    if word is not None and word not in sub.choices:  # a module of ssdlab.procedures that declares no test
        return build_parser([])
    return parser


def _failed_run(rd, e: Exception) -> UserError:
    """The error that ends a run in results folder ``rd`` that failed with ``e`` (a UserError,
    or a disk full), once ``rd``'s INCOMPLETE marker says why (best effort: if even that
    cannot be written, the error says so)."""
    from . import results

    if isinstance(e, OSError) and not isinstance(e, UserError):
        e = results.write_failed(e.filename or rd.path, e)
    if rd.incomplete is not None:  # the procedure marked it: a failed phase, then its results could not be written
        return e if str(e) in rd.incomplete else UserError(f"{e}. The run had stopped before: {rd.incomplete}")
    try:
        rd.mark_incomplete(f"failed: {e}")
    except OSError as me:
        return UserError(f"{e}. Its INCOMPLETE marker could not be updated either ({me}): it still says the run is "
                         "in progress, so `ssdlab report` and `ssdlab compare` will take the run for killed")
    return e


def run_procedure(args, module, params, printer) -> int:
    """Runs a test procedure ``module`` (with ``plan`` and ``run``) as the command line asked:
    ``--dry-run`` prints the plan; otherwise it runs into ``--out`` and prints a short result
    with ``printer(summary)``. A run refused before it starts (an unusable ``--out``, the
    target's safety gate, option errors found by ``plan``) writes nothing: the results folder
    is made only once the target is open and the plan accepted (the fio target's working
    folder ``OUT/fio``, made when it opens, is removed again if the run is refused). A
    failure once it runs, a results file that cannot be written included, is one
    :class:`~ssdlab.errors.UserError` and the folder's INCOMPLETE marker says what it was."""
    from . import progress, results
    from .procedures.common import print_plan
    from .results import ResultsDir

    progress.configure(args.progress)
    if args.dry_run:
        target = open_cli_target(args)
        try:
            if getattr(module, "print_plan", None) is not None:
                module.print_plan(target, params)
            else:
                print_plan(target, module.plan(target, params))
        finally:
            target.close()
        return 0
    results.check_results_dir(args.out, overwrite=args.force)
    # A line every progress.every_s() seconds when stderr is not a terminal, whatever runs:
    # the innermost step (setting the target up, a phase, the results), else the whole run.
    with progress.step(f"{module.name} on {args.target}"):
        with results.remove_new_folders(Path(args.out) / "fio"):
            with progress.step(f"setting up {args.target}"):
                target = open_cli_target(args, args.out)
            try:
                module.plan(target, params)
                rd = ResultsDir(args.out, overwrite=True)  # checked above, before the target made OUT/fio
            except BaseException:
                _close(target)
                raise
        try:
            summary = module.run(target, params, rd, argv=sys.argv, progress=args.progress)
        except (UserError, OSError) as e:  # the target failed, or a results file could not be written
            if isinstance(e, OSError) and not isinstance(e, UserError) and e.errno not in results.NO_ROOM_ERRNOS:
                raise
            err = _failed_run(rd, e)
            if err is e:
                raise
            raise err from e
        finally:
            _close(target)
    printer(summary)
    if warning := ((summary.get("target_info") or {}).get("emulator") or {}).get("warning"):
        print(f"  warning: {warning}")
    print(f"  results in {args.out}/: open {Path(args.out) / 'report.html'} (charts, tables, the run's settings)")
    return 0


def _close(target) -> None:
    """Lets go of the target (a loop device is detached and its backing file freed), with
    progress lines while that lasts."""
    from . import progress

    with progress.step(f"releasing {target.name}"):
        target.close()


def run_test(test, args) -> int:
    """A declared test as the command line asked for it (see :func:`run_procedure`)."""
    given = {"seed": args.seed}
    if test.passthrough:
        given[test.passthrough] = tuple(getattr(args, "extra", ()))
    params = declare.from_args(test.params, args, **given)
    if test.early is not None:
        status = test.early(params)
        if status is not None:
            return status
    if not args.out and not args.dry_run:
        raise UserError(f"{test.name}: --out DIR is required (the results folder)")
    return run_procedure(args, test, params, test.show)


def cmd_profiles(args) -> int:
    from . import profiles

    if args.keys:
        keys = profiles.keys()
        width = max(len(name) for name, _, _ in keys)
        for name, kind, doc in keys:
            print(f"{name:<{width}} {kind:<6} {doc}")
        return 0
    if args.name:
        prof = profiles.load_profile(args.name, args.sets)
        print_profile_warnings(prof)
        print(f"# {prof.name} ({prof.source})")
        for k, v in prof.values.items():
            print(f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}")
        print("# derived: " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in prof.geometry.items()))
        return 0
    for name, desc in profiles.list_profiles():
        print(f"{name:<16} {desc}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv)
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "passthrough", None):
        parser.parse_args(argv)  # argparse's own message for an unknown argument (exits 2)
    args.extra = extra
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    # SIGTERM and SIGHUP behave like Ctrl-C: stop, keep what was measured, mark it incomplete
    # (a request held since the entry point started is raised here).
    stop.install()
    try:
        status = args.func(args)
        sys.stdout.flush()  # inside the try: a closed pipe is reported here, not at exit
        return status
    except (UserError, FileExistsError) as e:
        print(f"ssdlab: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ssdlab: interrupted; partial results kept and marked incomplete", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` or similar, which stopped reading: end quietly (Python would
        # otherwise print a traceback, and another one when it flushes stdout at exit).
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as e:
        from . import results

        if e.errno not in results.NO_ROOM_ERRNOS:
            raise
        # a disk filled while writing something outside the results files' own writers
        print(f"ssdlab: error: {results.write_failed(e.filename or '.', e)}", file=sys.stderr)
        return 2

