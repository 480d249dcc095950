"""``ssdlab trace``: block I/O traces for the trace-based TRIM test.

Sub-subcommands (each is one ``_add_*`` function in :data:`SUBCOMMANDS`):

* ``ssdlab trace info FILE``: counts, op mix, size histogram, span and duration of a trace
  (any supported format; ``--json`` for the raw numbers).
* ``ssdlab trace convert FILE --to fio|bin -o OUT``: to fio iolog v3 (replay on a real drive
  with fio's ``read_iolog``) or to ssdlab's compact binary form (fast repeated replay).
* ``ssdlab trace generate --capacity SIZE --write-bytes SIZE -o OUT``: a JEDEC-client-like
  workload (75 % random / 25 % sequential writes by bytes, flushes, TRIMs freeing 13 % of
  the span), since the JEDEC master trace is not public.
* ``ssdlab trace run FILE|jedec-like --target T``: the TRIM trace test (seed 003), see
  :mod:`ssdlab.procedures.trace_replay`.
"""
from __future__ import annotations

import argparse
import json
import sys

from .. import traces
from ..errors import UserError

UNITS = """units: offsets and sizes are bytes (SIZE arguments accept 4096, 4KiB, 1MiB, 256GiB; K/M/G/T are
powers of 1000, KiB/MiB/GiB/TiB powers of 1024); times are ns. Sector-based formats (blkparse,
disksim, mqsim, spc, jedec, vscsi) count 512 B sectors and are converted to bytes on reading."""


def _epilog() -> str:
    """Units, then every format with its layout and units (declared once, in the Rust crate)."""
    import textwrap

    lines = [UNITS, "", "formats (--format; detected from the content when omitted):"]
    for name, desc in traces.formats().items():
        lines += textwrap.wrap(desc, width=100, initial_indent=f"  {name:<9} ", subsequent_indent=" " * 12)
    return "\n".join(lines) + "\n\nDocs: README.md"





def _size(text: str) -> int:
    from ..cli import _size as parse_size

    return parse_size(text)


def _fraction(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"{text!r} is not between 0 and 1")
    return v


def _parser(sub, name: str, help: str, description: str) -> argparse.ArgumentParser:
    return sub.add_parser(name, help=help, description=description, epilog=_epilog(),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_reader_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="the trace file (trace run: or jedec-like, generated)")
    p.add_argument("--format", dest="fmt", metavar="F", choices=traces_formats_names(),
                   help="trace format: " + ", ".join(traces_formats_names()) + " (default: detected from the content)")
    p.add_argument("--time-unit", choices=["ns", "us", "ms", "s"], default=None,
                   help="unit of the time column of disksim/mqsim traces (default: ms for disksim, ns for mqsim)")
    p.add_argument("--events", choices=["queue", "dispatch"], default=None,
                   help="blkparse: read Q (queue: as the file system asked, before merging) or D (dispatch: as the "
                        "drive received them) lines (default: dispatch)")
    p.add_argument("--device", type=int, default=None, metavar="N",
                   help="disksim/mqsim/msr/spc: keep only requests of this device / disk / ASU number")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed lines and report how many (default: stop at the first, naming file and line)")


def traces_formats_names() -> list[str]:
    """The format names, as declared once in the Rust crate."""
    return list(traces.formats())


def _reader_opts(args) -> dict:
    return {"events": args.events, "time_unit": args.time_unit, "skip_bad": args.skip_bad, "device": args.device}


def _report_skipped(d: dict) -> None:
    if d.get("skipped_bad"):
        print(f"ssdlab: warning: skipped {d['skipped_bad']} malformed lines; first: {d['first_bad']}", file=sys.stderr)


# --- trace info -------------------------------------------------------------------------

def _add_info(sub, add_target_args) -> None:  # noqa: ARG001 - no target
    p = _parser(sub, "info", "counts, op mix, size histogram, span and duration of a trace",
                "Read a trace once (streaming) and print: requests per op (read, write, trim, flush) with bytes, "
                "the request-size histogram, the address span (bytes), the duration (ns) and how many writes are "
                "sequential.")
    _add_reader_args(p)
    p.add_argument("--json", action="store_true", help="print the statistics as JSON (sizes in bytes, times in ns)")
    p.set_defaults(func=cmd_info)


def cmd_info(args) -> int:
    d = traces.info(args.file, args.fmt, **_reader_opts(args))
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        print(traces.format_info(d, args.file))
    _report_skipped(d)
    return 0


# --- trace convert ----------------------------------------------------------------------

def _add_convert(sub, add_target_args) -> None:  # noqa: ARG001 - no target
    p = _parser(sub, "convert", "convert a trace to fio iolog v3 or ssdlab's binary form",
                "Convert a trace (any supported format) to fio iolog v3 (--to fio: replay it on a real drive with "
                "fio --read_iolog=OUT --replay_redirect=/dev/XXX; times become us, flushes 'sync', requests over "
                "4 GiB are split) or to ssdlab's compact binary form (--to bin: 24 bytes per request, read at tens "
                "of millions of requests per second).")
    _add_reader_args(p)
    p.add_argument("--to", choices=traces.OUT_FORMATS, default=None,
                   help="output format (default: from the extension of OUT: .iolog/.fio/.log = fio, .bin = bin)")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output file (overwritten)")
    p.add_argument("--fio-filename", default="/dev/null", metavar="NAME",
                   help="file name written in a fio iolog (default: %(default)s, so a mistaken replay touches nothing)")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args) -> int:
    d = traces.convert(args.file, args.out, args.to, args.fmt, fio_filename=args.fio_filename, **_reader_opts(args))
    to = traces._out_format(args.out, args.to)
    print(f"wrote {args.out} ({'fio iolog v3' if to == 'fio' else 'ssdlab binary'}): {d['records']} requests from "
          f"{args.file} ({d['format']}, {d['lines']} lines)")
    _report_skipped(d)
    return 0


# --- trace generate ---------------------------------------------------------------------

def _add_generate(sub, add_target_args) -> None:  # noqa: ARG001 - no target
    p = _parser(sub, "generate", "write a JEDEC-client-like workload trace (writes, flushes, TRIMs)",
                "Generate a JEDEC-client-like trace, since the JESD219A master trace is not public: writes over "
                "[0, capacity) totalling --write-bytes, --random-fraction of the written BYTES random (4-128 KiB, "
                "mean 16.5 KiB) and the rest sequential runs (1-64 MiB of 64 KiB-1 MiB writes) - mean write about "
                "22 KB, as the real trace (~800 GB in ~37 M writes per pass on 256 GB); a flush every "
                "--flush-every writes on average; TRIM bursts spread over the run that free --trim-fraction of the "
                "span (disjoint ranges, so exactly that share of distinct bytes). No reads, no times (replay "
                "closed-loop). Same seed, same trace. Example for the Tom's Hardware setup: "
                "--capacity 256GB --write-bytes 800GB.")
    p.add_argument("--capacity", type=_size, required=True, metavar="SIZE", help="drive capacity = span written and trimmed (bytes)")
    p.add_argument("--write-bytes", type=_size, required=True, metavar="SIZE",
                   help="total bytes written, a multiple of --align (e.g. 3 x capacity)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default: %(default)s)")
    p.add_argument("--random-fraction", type=_fraction, default=0.75, metavar="F",
                   help="share of the written bytes that are random writes (default: %(default)s)")
    p.add_argument("--trim-fraction", type=_fraction, default=0.13, metavar="F",
                   help="share of the span freed by TRIMs (default: %(default)s)")
    p.add_argument("--flush-every", type=float, default=32.0, metavar="N",
                   help="mean writes per flush; 0 = no flushes (default: %(default)s)")
    p.add_argument("--align", type=_size, default=4096, metavar="SIZE",
                   help="alignment of offsets and sizes, a power of two >= 512 bytes (default: 4096)")
    p.add_argument("--skew", choices=["uniform", "jedec"], default="uniform",
                   help="random-write placement: uniform, or jedec = 50%% in the first 5%% of the span, 30%% in the "
                        "next 15%%, 20%% in the rest (default: %(default)s)")
    p.add_argument("--interarrival-ns", type=int, default=0, metavar="NS",
                   help="time between consecutive requests in ns; 0 = no timing (default: %(default)s)")
    p.add_argument("--to", choices=traces.OUT_FORMATS, default=None,
                   help="output format (default: from the extension of OUT: .iolog/.fio/.log = fio, .bin = bin)")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output file (overwritten)")
    p.add_argument("--fio-filename", default="/dev/null", metavar="NAME", help="file name written in a fio iolog (default: %(default)s)")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args) -> int:
    if args.interarrival_ns < 0:
        raise UserError(f"--interarrival-ns {args.interarrival_ns}: must be >= 0")
    s = traces.generate(args.out, args.capacity, args.write_bytes, to=args.to, seed=args.seed,
                        random_fraction=args.random_fraction, trim_fraction=args.trim_fraction,
                        flush_every_writes=args.flush_every, align_bytes=args.align, skew=args.skew,
                        interarrival_ns=args.interarrival_ns, fio_filename=args.fio_filename)
    wb = max(s["write_bytes"], 1)
    print(f"wrote {args.out}: {s['writes']} writes ({s['write_bytes']} bytes; random {100 * s['random_write_bytes'] / wb:.1f}% "
          f"/ sequential {100 * s['sequential_write_bytes'] / wb:.1f}% of bytes, {s['sequential_runs']} runs), "
          f"{s['flushes']} flushes, {s['trims']} trims freeing {s['trim_bytes']} bytes "
          f"({100 * s['trim_bytes'] / max(s['span_bytes'], 1):.1f}% of the {s['span_bytes']}-byte span)")
    return 0


# --- trace run ---------------------------------------------------------------------------

def _qd_list(text: str) -> tuple[int, ...]:
    try:
        qds = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give queue depths as numbers separated by commas, e.g. 32,1") from None
    if not qds or min(qds) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: queue depths must be >= 1")
    return qds


def _add_run(sub, add_target_args) -> None:
    p = _parser(sub, "run", "the TRIM trace test: fill, replay a trace with and without TRIM at QD32 and QD1",
                "The Tom's Hardware JEDEC TRIM test (seed 003). For each queue depth and each TRIM mode: purge the "
                "target, fill the span sequentially (128 KiB, QD32), then replay the trace --passes times as fast as "
                "the drive goes (timestamps ignored, QD commands outstanding; on the simulator a flush waits for all "
                "earlier commands, through fio it is an fsync that does not drain the queue, as noted in the results). Reads are dropped unless --keep-reads; 'without TRIM' drops the TRIM commands. IOPS are "
                "averaged every --window commands; the simulator also reports write amplification. Records are "
                "aligned to 4 KiB (start down, end up). Writes per variant and pass a series (window: commands, "
                "t_s, iops, mbps), a table, trace_qdN.png/.svg and report.html. FILE may be jedec-like: the "
                "JEDEC-client-like generator scaled to the span (no file; --write-bytes per pass).")
    add_target_args(p)
    _add_reader_args(p)
    p.add_argument("--passes", type=int, default=1, metavar="N", help="replays of the trace per variant, back to back (default: %(default)s)")
    p.add_argument("--qd", dest="qds", type=_qd_list, default=(32, 1), metavar="LIST",
                   help="queue depths, comma-separated: 32 = NCQ, 1 = the reviewers' DMA case (default: 32,1)")
    p.add_argument("--trim", choices=["both", "with", "without"], default="both",
                   help="replay with TRIM commands, without them, or both variants (default: %(default)s)")
    p.add_argument("--keep-reads", action="store_true", help="also replay the trace's reads (default: dropped, as the reviewers did)")
    p.add_argument("--window", type=int, default=100_000, metavar="N",
                   help="average IOPS over every N completed commands (default: %(default)s)")
    p.add_argument("--remap", choices=["error", "wrap", "scale"], default="error",
                   help="records beyond the span: error (default), wrap (offset modulo the span) or scale (offsets "
                        "scaled by span / trace span)")
    p.add_argument("--span", type=float, default=100.0, metavar="PCT",
                   help="percent of the capacity to fill and replay on (default: %(default)s)")
    p.add_argument("--write-bytes", type=_size, default=None, metavar="SIZE",
                   help="jedec-like only: bytes written per pass (default: 800/256 x the span, as the seed)")
    p.add_argument("--skew", choices=["uniform", "jedec"], default="uniform",
                   help="jedec-like only: random-write placement (see `ssdlab trace generate --help`) (default: %(default)s)")
    p.set_defaults(func=cmd_run)


def cmd_run(args) -> int:
    from ..cli import run_procedure
    from ..procedures import trace_replay

    if args.window < 1:
        raise UserError(f"--window {args.window}: must be >= 1 command")
    if args.passes < 1:
        raise UserError(f"--passes {args.passes}: must be >= 1")
    generated = args.file == trace_replay.GENERATED
    if not generated and (args.write_bytes is not None or args.skew != "uniform"):
        raise UserError("--write-bytes and --skew apply to the jedec-like generated trace only")
    source = trace_replay.TraceSource(args.file, args.fmt, events=args.events, time_unit=args.time_unit,
                                      device=args.device, skip_bad=args.skip_bad, write_bytes=args.write_bytes,
                                      skew=args.skew, seed=args.seed)
    modes = {"both": (True, False), "with": (True,), "without": (False,)}[args.trim]
    params = trace_replay.TraceRunParams(source=source, passes=args.passes, qds=args.qds, trim_modes=modes,
                                         keep_reads=args.keep_reads, window_commands=args.window, remap=args.remap,
                                         span_pct=args.span, seed=args.seed)
    return run_procedure(args, trace_replay, params, _print_run)


def _print_run(s: dict) -> None:
    print(f"{s['target']}: {s['trace']}")
    skipped = max((r["skipped_bad_lines"] for r in s["variants"]), default=0)
    if skipped:
        first = s["variants"][0]["first_bad_line"]
        print(f"ssdlab: warning: skipped {skipped} malformed lines per pass (--skip-bad); first: {first}", file=sys.stderr)
    print(f"  {'variant':<14} {'pass':>4} {'commands':>12} {'IOPS avg':>10} {'MB/s':>8} {'WA':>6} {'time s':>10}")
    for r in s["variants"]:
        wa = "n/a" if r["write_amplification"] is None else f"{r['write_amplification']:.2f}"
        print(f"  {r['variant']:<14} {r['pass']:>4} {r['commands']:>12,} {r['iops_mean'] or 0:>10,.0f} "
              f"{r['mbps_mean'] or 0:>8.1f} {wa:>6} {r['duration_s']:>10,.1f}")


#: ``ssdlab trace`` sub-subcommands, in help order: ``add(subparsers, add_target_args)``.
SUBCOMMANDS = [_add_info, _add_convert, _add_generate, _add_run]


def register(subparsers, add_target_args) -> None:
    p = subparsers.add_parser(
        "trace", help="block I/O traces: info, convert (fio iolog v3, binary), generate a JEDEC-client-like workload",
        description="Block I/O traces for the trace-based TRIM test (Tom's Hardware JEDEC 218A method): read real "
                    "traces (blkparse, fio iolog, DiskSim/MQSim, MSR Cambridge, SPC/UMass, JEDEC master-trace text, "
                    "VSCSI), show their statistics, convert them, or generate a JEDEC-client-like workload.",
        epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="trace_command", metavar="SUBCOMMAND")

    def usage(args) -> int:  # `ssdlab trace` alone
        p.print_help()
        return 2

    p.set_defaults(func=usage)
    for add in SUBCOMMANDS:
        add(sub, add_target_args)
