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
import functools
import json
import sys

from .. import traces
from ..procedures import declare
from ..procedures.declare import MAX_SPANS, at_most, number, size
from ..units import MAX_BS_BYTES, MAX_SIZE_BYTES

UNITS = """units: offsets and sizes are bytes (SIZE arguments accept 4096, 4KiB, 1MiB, 256GiB, 256GB; K/M/G/T and
KiB/MiB/GiB/TiB are powers of 1024, KB/MB/GB/TB powers of 1000); times are ns. Sector-based formats (blkparse,
disksim, mqsim, spc, jedec, vscsi) count 512 B sectors and are converted to bytes on reading."""


def _epilog() -> str:
    """Units, then every format with its layout and units (declared once, in the Rust crate)."""
    import textwrap

    lines = [UNITS, "", "formats (--format; detected from the content when omitted):"]
    for name, desc in traces.formats().items():
        lines += textwrap.wrap(desc, width=100, initial_indent=f"  {name:<9} ", subsequent_indent=" " * 12)
    return "\n".join(lines) + "\n\nDocs: README.md"


def _parser(sub, name: str, help: str, description: str) -> argparse.ArgumentParser:
    """A sub-subcommand whose epilog lists units and formats as written (its description wrapped)."""
    import textwrap

    return sub.add_parser(name, help=help, description=textwrap.fill(description, 100), epilog=_epilog(),
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_reader_args(p: argparse.ArgumentParser) -> None:
    """FILE and how to read it (declared once: :class:`ssdlab.procedures.trace_replay.TraceReader`)."""
    from ..procedures.trace_replay import TraceReader

    declare.add_arguments(p, TraceReader)


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
    p.add_argument("--capacity", type=number(size, 4096, MAX_SIZE_BYTES, unit="bytes"), required=True, metavar="SIZE", help="drive capacity = span written and trimmed (bytes)")
    p.add_argument("--write-bytes", type=number(size, 4096, MAX_SIZE_BYTES, unit="bytes"), required=True, metavar="SIZE",
                   help=f"total bytes written, a multiple of --align (e.g. 3 x capacity; at most {MAX_SPANS} x capacity)")
    p.add_argument("--seed", type=declare.seed, default=1, help="random seed (default: %(default)s)")
    p.add_argument("--random-fraction", type=number(float, 0, 1), default=0.75, metavar="F",
                   help="share of the written bytes that are random writes (default: %(default)s)")
    p.add_argument("--trim-fraction", type=number(float, 0, 1), default=0.13, metavar="F",
                   help="share of the span freed by TRIMs (default: %(default)s)")
    p.add_argument("--flush-every", type=declare.number(float, 0, 1e12), default=32.0, metavar="N",
                   help="mean writes per flush; 0 = no flushes (default: %(default)s)")
    p.add_argument("--align", type=number(size, 512, MAX_BS_BYTES, unit="bytes"), default=4096, metavar="SIZE",
                   help="alignment of offsets and sizes, a power of two >= 512 bytes (default: 4096)")
    p.add_argument("--skew", choices=["uniform", "jedec"], default="uniform",
                   help="random-write placement: uniform, or jedec = 50%% in the first 5%% of the span, 30%% in the "
                        "next 15%%, 20%% in the rest (default: %(default)s)")
    p.add_argument("--interarrival-ns", type=declare.number(int, 0, 10 ** 15, unit="ns"), default=0, metavar="NS",
                   help="time between consecutive requests in ns; 0 = no timing (default: %(default)s)")
    p.add_argument("--to", choices=traces.OUT_FORMATS, default=None,
                   help="output format (default: from the extension of OUT: .iolog/.fio/.log = fio, .bin = bin)")
    p.add_argument("-o", "--out", required=True, metavar="OUT", help="output file (overwritten)")
    p.add_argument("--fio-filename", default="/dev/null", metavar="NAME", help="file name written in a fio iolog (default: %(default)s)")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args) -> int:
    at_most("--write-bytes", args.write_bytes, MAX_SPANS * args.capacity, f"{MAX_SPANS} times --capacity")
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

def _add_run(sub, add_target_args) -> None:
    """``trace run``, built from its declaration (:mod:`ssdlab.procedures.trace_replay`) as the
    command line builds the other tests."""
    from ..cli import run_test
    from ..procedures import trace_replay

    test = trace_replay.TEST
    p = _parser(sub, test.name, test.help, test.description)
    add_target_args(p)
    declare.add_arguments(p, test.params)
    p.set_defaults(func=functools.partial(run_test, test), passthrough=test.passthrough)


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
