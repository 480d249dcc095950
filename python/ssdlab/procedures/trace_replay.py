"""The TRIM trace test (seed 003): replay a consumer trace on a full drive, with and without
TRIM, at QD32 (NCQ) and QD1 (the reviewers' DMA case), IOPS averaged every 100,000 commands.

For each variant (queue depth × TRIM on/off): purge, sequential fill of the span (128 KiB,
QD32), then ``passes`` replays of the trace, back to back, as fast as the drive goes (trace
timestamps are ignored; the host keeps ``qd`` commands outstanding; on the simulator a flush
waits for every earlier command; real targets replay through fio, see
:meth:`ssdlab.targets.fio.FioTarget.replay` for how fio differs). Reads are dropped unless ``keep_reads``; in the "without TRIM" variants the
TRIM commands are dropped too. Records are aligned to 4 KiB (start down, end up) and must lie
in the span unless ``remap`` is ``wrap`` or ``scale``.

The trace is a file in any format :mod:`ssdlab.traces` reads, or ``jedec-like``: the
JEDEC-client-like generator, scaled to the span and generated on the fly (never written to
disk), by default writing 800/256 of the span per pass (the seed's ~800 GB on 256 GB).

Results: one series per variant and pass (``qd32-trim-pass1`` ...; windows of
``window_commands`` completions: ``commands``, ``t_s``, ``iops``, ``mbps`` and, on the
simulator, ``write_amplification``), one overlay series per queue depth for the report
(``qd32``: window number, IOPS with and without TRIM), a summary table (average IOPS,
MB/s, write amplification per variant and pass) and ``trace_qd32.png/.svg`` per queue depth.

Each variant starts with a purge, so on a target that can make independent copies of its drive
(``fork``: the simulator) the variants run side by side, one per CPU core (as many as the
memory holds); results are recorded in plan order and are those of a sequential run. A
simulation allowed two threads (``--sim-threads 2``) uses them when the variants leave a core
free for it: a test of one variant, or two variants on four cores. On a target that can share a
replay's FTL work between such copies (``shared_replay``: the simulator, where the drive's FTL
decides by command order alone), the queue depths of one TRIM choice run as a team: each
purged and filled on its own drive, then each pass read once and replayed on all of them, one
FTL run on a thread of its own feeding the queue depths' timing models, which run in turn on
another (:func:`_run_team`); their figures are those of separate runs.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .. import report, results, traces
from ..charts import Chart, Line
from ..errors import UserError
from ..progress import phase_bar
from ..targets.base import FORK, SHARED_REPLAY, JobSpec, ReplayJob, ReplayResult, Target
from .common import (FILL_BS_BYTES, base_summary, failure_of, Interrupted, mark_stopped, print_plan as print_header,
                    purge, raise_stopped, run_phase, span_bytes)
from ..units import MAX_SIZE_BYTES, human_size
from .declare import (MAX_QD, MAX_SPANS, Metric, Test, at_most, check, declared, headline_of, metrics_by_test, param,
                      size)

#: The seed's ratio of bytes written per pass to drive capacity (~800 GB per pass on 256 GB).
JEDEC_PASS_WRITE_RATIO = 800 / 256

GENERATED = "jedec-like"


@dataclass(frozen=True)
class TraceSource:
    """Where commands come from: a trace file (``path``, ``fmt`` or None to detect, reader
    options) or the JEDEC-client-like generator (``path == "jedec-like"``)."""

    path: str
    fmt: str | None = None
    events: str | None = None
    time_unit: str | None = None
    device: int | None = None
    skip_bad: bool = False
    #: Generator: bytes written per pass (None: JEDEC_PASS_WRITE_RATIO × span), skew, seed.
    write_bytes: int | None = None
    skew: str = "uniform"
    seed: int = 1

    @property
    def generated(self) -> bool:
        return self.path == GENERATED

    def describe(self, span: int) -> str:
        if self.generated:
            return (f"JEDEC-client-like generator (seed {self.seed}, skew {self.skew}), "
                    f"{human_size(self.pass_write_bytes(span))} written per pass over {human_size(span)}")
        return f"{self.path} ({self.fmt or 'format detected'})"

    def pass_write_bytes(self, span: int) -> int:
        return int(self.write_bytes if self.write_bytes else JEDEC_PASS_WRITE_RATIO * span) // 4096 * 4096

    def _reader_opts(self) -> dict:
        return {"events": self.events, "time_unit": self.time_unit, "device": self.device, "skip_bad": self.skip_bad}

    def info(self, span: int) -> dict:
        """Trace statistics (one streaming pass); for the generator, what it will emit."""
        if self.generated:
            return {"format": GENERATED, "span_bytes": span, "max_end_bytes": span,
                    "write_bytes_per_pass": self.pass_write_bytes(span)}
        return traces.info(self.path, self.fmt, **self._reader_opts())

    def open(self, span: int):
        """An object with ``read_chunk(n)`` -> (time, op, offset, len) byte buffers or None."""
        if self.generated:
            from .. import _native

            try:
                return _native.trace_generate_open(span, self.pass_write_bytes(span), seed=self.seed, skew=self.skew)
            except ValueError as e:
                raise UserError(f"trace {GENERATED}: {e}") from None
        return traces.open_trace(self.path, self.fmt, **self._reader_opts())._file


#: Trace formats, as declared once in the Rust crate.
FORMATS = tuple(traces.formats())


@dataclass(frozen=True)
class TraceReader:
    """How a trace file is read: the options of ``ssdlab trace info``, ``convert`` and ``run``."""

    file: str = param(dataclasses.MISSING, "FILE", "the trace file (trace run: or jedec-like, generated)",
                      positional=True)
    fmt: str | None = param(None, "--format", "trace format: " + ", ".join(FORMATS), choices=FORMATS, metavar="F",
                            default_text="detected from the content")
    time_unit: str | None = param(None, "--time-unit", "unit of the time column of disksim/mqsim traces",
                                  choices=("ns", "us", "ms", "s"), default_text="ms for disksim, ns for mqsim")
    events: str | None = param(None, "--events", "blkparse: read Q (queue: as the file system asked, before "
                               "merging) or D (dispatch: as the drive received them) lines",
                               choices=("queue", "dispatch"), default_text="dispatch")
    device: int | None = param(None, "--device", "disksim/mqsim/msr/spc: keep only requests of this device / disk / "
                               "ASU number", parse=int, low=0, high=2**32 - 1, default_text="every device")
    skip_bad: bool = param(False, "--skip-bad", "skip malformed lines and report how many (default: stop at the "
                           "first, naming file and line)", switch=True)


def parse_qds(text: str) -> tuple[int, ...]:
    """``--qd``: queue depths separated by commas, each in [1, :data:`~.declare.MAX_QD`]."""
    try:
        qds = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give queue depths as numbers separated by commas, e.g. 32,1") from None
    if not qds or not all(1 <= qd <= MAX_QD for qd in qds):
        raise argparse.ArgumentTypeError(f"{text!r}: queue depths must be in [1, {MAX_QD}]")
    return qds


#: ``--trim`` -> the variants it runs (True: TRIM commands sent, False: dropped).
TRIM_MODES = {"both": (True, False), "with": (True,), "without": (False,)}


@dataclass(frozen=True)
class TraceRunParams(TraceReader):
    passes: int = param(1, "--passes", "replays of the trace per variant, back to back", low=1,
                        high=1000)
    qds: tuple[int, ...] = param((32, 1), "--qd", "queue depths, comma-separated, each >= 1: 32 = NCQ, 1 = the "
                                 "reviewers' DMA case", parse=parse_qds, metavar="LIST", default_text="32,1")
    trim: str = param("both", "--trim", "replay with TRIM commands, without them, or both variants",
                      choices=tuple(TRIM_MODES))
    keep_reads: bool = param(False, "--keep-reads", "also replay the trace's reads (default: dropped, as the "
                             "reviewers did)", switch=True)
    window_commands: int = param(100_000, "--window", "average IOPS over every N completed commands",
                                 unit="commands", low=1, high=2**32)
    remap: str = param("error", "--remap", "records beyond the span: error, wrap (offset modulo the span) or scale "
                       "(offsets scaled by span / trace span)", choices=("error", "wrap", "scale"))
    span_pct: float = param(100.0, "--span", "percent of the capacity to fill and replay on", unit="%", low=0,
                            high=100, low_open=True, metavar="PCT")
    write_bytes: int | None = param(None, "--write-bytes", "jedec-like only: bytes written per pass", unit="bytes",
                                    parse=size, low=4096, high=MAX_SIZE_BYTES,
                                    default_text="800/256 x the span, as the seed")
    skew: str = param("uniform", "--skew", "jedec-like only: random-write placement: uniform, or jedec = 50% in "
                      "the first 5% of the span, 30% in the next 15%, 20% in the rest", choices=("uniform", "jedec"))
    seed: int = param(1, None, "random seed")
    #: Records per chunk handed to the target.
    chunk_records: int = 1 << 20

    @property
    def trim_modes(self) -> tuple[bool, ...]:
        """The variants to run: True = TRIM commands sent, False = dropped."""
        return TRIM_MODES[self.trim]

    @property
    def source(self) -> TraceSource:
        return TraceSource(self.file, self.fmt, events=self.events, time_unit=self.time_unit, device=self.device,
                           skip_bad=self.skip_bad, write_bytes=self.write_bytes, skew=self.skew, seed=self.seed)


def variant_name(qd: int, trim: bool) -> str:
    return f"qd{qd}-{'trim' if trim else 'notrim'}"


def _check(params: TraceRunParams) -> None:
    """What the command line checks too, for parameters made in code: ranges, choices."""
    check(params)
    if not params.qds or not all(1 <= qd <= MAX_QD for qd in params.qds):
        raise UserError(f"--qd {','.join(map(str, params.qds))}: queue depths must be in [1, {MAX_QD}]")
    for f, p in declared(type(params)):
        if p.choices and getattr(params, f.name) not in (None, *p.choices):
            raise UserError(f"{p.flag} {getattr(params, f.name)}: use {', '.join(p.choices)}")
    if not params.source.generated and (params.write_bytes is not None or params.skew != "uniform"):
        raise UserError(f"--write-bytes and --skew apply to the {GENERATED} generated trace only")


def plan(target: Target, params: TraceRunParams) -> list:
    """Per variant: the fill phase, then the replays (ReplayJob)."""
    _check(params)
    span = span_bytes(target.capacity_bytes, params.span_pct, FILL_BS_BYTES)
    if params.write_bytes is not None:
        at_most("--write-bytes", params.write_bytes, MAX_SPANS * span, f"{MAX_SPANS} times the span under test")
    if not params.source.generated and not Path(params.source.path).is_file():
        raise UserError(f"{params.source.path}: no such trace file (or use {GENERATED} for the generated workload)")
    steps: list = []
    for qd in params.qds:
        for trim in params.trim_modes:
            v = variant_name(qd, trim)
            steps.append(JobSpec(f"{v}-fill", "write", bs_bytes=FILL_BS_BYTES, qd=32, span_bytes=span))
            steps += [ReplayJob(f"{v}-pass{k}", qd=qd, window_commands=params.window_commands)
                      for k in range(1, params.passes + 1)]
    return steps


def print_plan(target: Target, params: TraceRunParams) -> None:
    steps = plan(target, params)
    span = steps[0].span_bytes
    _checked_info(params, span)
    print_header(target, steps[:1])
    print(f"# trace: {params.source.describe(span)}; reads {'kept' if params.keep_reads else 'dropped'}; "
          f"remap {params.remap}; IOPS averaged every {params.window_commands} commands")
    for s in steps:
        if isinstance(s, ReplayJob):
            print(f"# replay {s.name}: qd={s.qd}, trace timestamps ignored (as fast as the drive goes)")
        else:
            print(f"# purge, then phase {s.name}: sequential fill of {human_size(s.span_bytes)}, 128 KiB at QD32")


def _chunks(source_file, mapping: dict, on_records,
            stop: threading.Event | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Prepared command chunks from an open trace (records mapped onto the span); a set
    ``stop`` ends them as Ctrl-C would (the replay keeps what ran, marked incomplete)."""
    import numpy as np

    from .. import _native

    first = 0
    while True:
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt
        got = traces._call(source_file.read_chunk, mapping["chunk_records"])  # errors name file and line
        if got is None:
            return
        _, op, off, ln = got
        try:
            pop, poff, pln, dropped = _native.replay_prepare(
                op, off, ln, 0, mapping["span"], remap=mapping["remap"], trace_span_bytes=mapping["trace_span"],
                keep_reads=mapping["keep_reads"], keep_trims=mapping["keep_trims"], first_record=first)
        except ValueError as e:
            raise UserError(f"{mapping['name']}: {e}") from None
        first += len(op)
        on_records(len(op), int(dropped))
        yield (np.frombuffer(pop, dtype="u1"), np.frombuffer(poff, dtype="<u8"), np.frombuffer(pln, dtype="<u8"))


def replay_pass(target: Target, job: ReplayJob, params: TraceRunParams, span: int, trace_span: int, trim: bool,
                expected_commands: int | None, progress: bool | None,
                stop: threading.Event | None = None, followers: list | None = None):
    """One replay of the whole trace; returns the result and record counts (read, dropped).
    A set ``stop`` cuts it short between chunks. With ``followers`` ((target, job) pairs of a
    ``shared_replay`` target), the same replay on each of them too, and a list of results,
    ``target``'s first."""
    counts = {"records": 0, "dropped": 0}

    def on_records(n: int, dropped: int) -> None:
        counts["records"] += n
        counts["dropped"] += dropped

    mapping = {"span": span, "remap": params.remap, "trace_span": trace_span, "keep_reads": params.keep_reads,
               "keep_trims": trim, "chunk_records": params.chunk_records, "name": params.source.path}
    names = " + ".join(f"{j.name} (QD{j.qd})" for j in [job, *(j for _, j in followers or ())])
    label = f"replay {names}, TRIM {'on' if trim else 'off'}"
    source_file = params.source.open(span)
    with phase_bar(label, enabled=progress) as bar:
        chunks = _chunks(source_file, mapping, on_records, stop)
        if followers is None:
            result = target.replay(job, chunks, bar, total_commands=expected_commands)
        else:
            result = target.replay_shared(job, followers, chunks, bar,  # type: ignore[attr-defined]
                                          total_commands=expected_commands)
    stats = source_file.stats()
    counts["skipped_bad"] = int(stats.get("skipped_bad") or 0)
    counts["first_bad"] = stats.get("first_bad")
    return result, counts


def _data_ops(params: TraceRunParams, trim: bool) -> list[str]:
    """The data commands a replay sends (besides flushes): writes, TRIMs if ``trim``, reads if
    kept."""
    return ["write", *(["trim"] if trim else []), *(["read"] if params.keep_reads else [])]


def _expected_commands(info: dict, params: TraceRunParams, trim: bool) -> int | None:
    ops = info.get("ops")
    if not ops:
        return None
    return int(sum(ops[op]["count"] for op in ["flush", *_data_ops(params, trim)]))


def _check_something_to_replay(info: dict, params: TraceRunParams, replayed: list[str]) -> None:
    """Refuses, before any purge or fill, a trace with none of the data commands some variant
    replays (``replayed``: no writes, no TRIMs in a variant with TRIM, no reads kept): its
    test would fill the drive and measure nothing."""
    ops = info["ops"]
    count = {op: int(ops[op]["count"]) for op in ("read", "write", "trim", "flush")}
    if any(count[op] for op in replayed):
        return
    found = ", ".join(f"{name} {count[op]:,}" for op, name in (("read", "reads"), ("write", "writes"),
                                                                ("trim", "TRIMs"), ("flush", "flushes")))
    hint = []
    if count["read"] and not params.keep_reads:
        hint.append("--keep-reads replays its reads")
    if count["trim"]:
        hint.append("--trim with or both replays its TRIMs")
    if info.get("skipped_bad"):
        hint.append(f"{int(info['skipped_bad']):,} malformed lines were skipped (first: {info.get('first_bad')})")
    if not hint:
        hint.append("check --format, --device and --events" if info.get("lines") else "the file is empty")
    raise UserError(f"{params.source.path}: nothing to replay ({int(info.get('lines') or 0):,} lines: {found}); "
                    f"{'; '.join(hint)}")


def _check_fits_span(info: dict, params: TraceRunParams, replayed: list[str], span: int) -> None:
    """With ``--remap error``, refuses before any purge or fill a trace whose ``replayed``
    records end beyond the span, as its replay would once it reached them."""
    if params.remap != "error":
        return
    ops = info["ops"]
    end, op = max((int(ops[o].get("max_end_bytes") or 0), o) for o in replayed)
    if end > span:
        raise UserError(f"{params.source.path}: a {op} record ends at byte {end:,}, beyond the target span of {span:,} "
                        "bytes; use --remap wrap or --remap scale, or a larger span")


def _checked_info(params: TraceRunParams, span: int) -> dict:
    """The trace's statistics (one pass over a file), once it is known to replay something
    that fits ``span`` [bytes]: what a run and its dry run refuse before any purge or fill."""
    info = params.source.info(span)
    if info.get("ops"):  # a file's statistics (the generator's have none: it writes within the span)
        replayed = _data_ops(params, True in params.trim_modes)  # by some variant
        _check_something_to_replay(info, params, replayed)
        _check_fits_span(info, params, replayed, span)
    return info


def run(target: Target, params: TraceRunParams, out: str | Path | results.ResultsDir, *,
        argv: list[str] | None = None, overwrite: bool = False, progress: bool | None = None) -> dict:
    """Runs every variant and pass on ``target`` into the results folder ``out``; returns the
    summary. On Ctrl-C what was measured is written, marked incomplete, and KeyboardInterrupt
    is re-raised."""
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    steps = plan(target, params)
    span = steps[0].span_bytes
    info = _checked_info(params, span)
    trace_span = int(info.get("max_end_bytes") or 0)
    trace_info = {k: v for k, v in info.items() if k != "ops"}
    if "ops" in info:
        trace_info["ops"] = {op: {"count": s["count"], "bytes": s["bytes"]} for op, s in info["ops"].items()}
    summary = base_summary("trace", target, params.seed, argv, span_pct=params.span_pct, span_bytes=span,
                           trace=params.source.describe(span), trace_info=trace_info, passes=params.passes,
                           qds=list(params.qds), keep_reads=params.keep_reads, remap=params.remap,
                           window_commands=params.window_commands)
    summary["preconditioning"] = (f"purge, then sequential fill of {human_size(span)} with 128 KiB writes at QD32, "
                                  "before each variant")
    rows: list[dict] = []
    per_variant: dict[str, list[ReplayResult]] = {}
    summary["variants"] = rows
    complete, error = True, None

    def record(step: ReplayJob, result: ReplayResult, counts: dict) -> None:
        v, _, pass_name = step.name.rpartition("-")
        rd.write_series(step.name, result.series)
        per_variant.setdefault(v, []).append(result)
        rows.append(_row(v, int(pass_name[4:]), step.qd, _with_trim(v), result, counts))
        if not result.complete:
            raise Interrupted(result)  # type: ignore[arg-type]

    groups = _variant_groups(steps)
    teams = _teams(target, groups)
    workers = _parallel_variants(target, len(teams), max(len(t) for t in teams))
    try:
        if workers > 1 or len(teams) < len(groups):
            with _threads_beside(target, workers):
                _run_parallel(target, groups, teams, workers, params, span, trace_span, info, progress, record)
        else:
            stop = threading.Event()
            for group in groups:
                for step, result, counts in _run_variant(target, group, params, span, trace_span, info, progress, stop):
                    record(step, result, counts)
    except (Interrupted, KeyboardInterrupt) as e:
        complete, error = False, failure_of(e)
        mark_stopped(rd, summary, error)
    _finish(rd, target, summary, params, per_variant, complete)
    if not complete:
        raise_stopped(error)
    return summary


def _variant_groups(steps: list) -> list[list]:
    """The plan's steps per variant: its fill, then its replay passes."""
    groups: list[list] = []
    for step in steps:
        if isinstance(step, JobSpec):
            groups.append([])
        groups[-1].append(step)
    return groups


def _run_variant(target: Target, group: list, params: TraceRunParams, span: int, trace_span: int, info: dict,
                 progress: bool | None, stop: threading.Event) -> Iterator[tuple[ReplayJob, ReplayResult, dict]]:
    """Runs one variant (purge, fill, passes) on ``target``; yields each pass's result. Stops
    after the step under way once ``stop`` is set."""
    for step in group:
        if stop.is_set():
            raise KeyboardInterrupt
        if isinstance(step, JobSpec):
            purge(target)
            run_phase(target, step, f"{step.name} (sequential fill)", progress)
            continue
        trim = _with_trim(step.name.rpartition("-")[0])
        yield (step, *replay_pass(target, step, params, span, trace_span, trim, _expected_commands(info, params, trim),
                                  progress, stop))


def _teams(target: Target, groups: list[list]) -> list[list[int]]:
    """The variants (indices in ``groups``) that run together: on a target that can share a
    replay's FTL work between copies of its drive (``shared_replay``), the queue depths of
    one TRIM choice (the same commands, so the same FTL decisions on a drive whose FTL goes
    by command order: :func:`_run_team`), when the memory holds a drive for each; else each
    variant alone."""
    alone = [[i] for i in range(len(groups))]
    if SHARED_REPLAY not in target.capabilities or FORK not in target.capabilities:
        return alone
    by_trim: dict[bool, list[int]] = {}
    for i, g in enumerate(groups):
        by_trim.setdefault(_with_trim(g[0].name.removesuffix("-fill")), []).append(i)
    teams = list(by_trim.values())
    fit = _drives_memory_holds(target)
    # A team holds a drive per variant at once.
    return alone if fit is not None and fit < max(len(t) for t in teams) else teams


def _run_team(targets: list, team: list[list], params: TraceRunParams, span: int, trace_span: int, info: dict,
              progress: bool | None, stop: threading.Event) -> Iterator[tuple[ReplayJob, ReplayResult, dict]]:
    """Runs variants of one TRIM choice at different queue depths (``team``: their steps),
    each on its own drive (``targets``): each purged and filled, then each pass read once
    and replayed on every drive at once, the first drive's FTL doing the work for all
    (``replay_shared``): each variant's figures are those of its own run. A drive whose FTL
    decides by time, not by command order alone, runs its variants one after another.
    Yields each pass's result per variant."""
    if not targets[0].shares_replays:
        for t, group in zip(targets, team):
            yield from _run_variant(t, group, params, span, trace_span, info, progress, stop)
        return
    for t, group in zip(targets, team):
        if stop.is_set():
            raise KeyboardInterrupt
        purge(t)
        run_phase(t, group[0], f"{group[0].name} (sequential fill)", progress)
    trim = _with_trim(team[0][0].name.removesuffix("-fill"))
    for k in range(1, len(team[0])):
        if stop.is_set():
            raise KeyboardInterrupt
        jobs = [group[k] for group in team]
        results, counts = replay_pass(targets[0], jobs[0], params, span, trace_span, trim,
                                      _expected_commands(info, params, trim), progress, stop,
                                      followers=list(zip(targets[1:], jobs[1:])))
        for job, result in zip(jobs, results):
            yield job, result, counts


def _start_order(groups: list[list]) -> list[int]:
    """The order variants start in when they run side by side: those without TRIM first (their
    drive keeps more data valid, so GC copies more and they take longest), each kind in plan
    order. Started longest first, two workers finish four variants in about the time of one
    with and one without TRIM, rather than two without."""
    return sorted(range(len(groups)), key=lambda i: _with_trim(groups[i][0].name.removesuffix("-fill")))


def _with_trim(variant: str) -> bool:
    """Whether the variant named ``variant`` (:func:`variant_name`) keeps the trace's TRIMs."""
    return variant.endswith("-trim")


def _parallel_variants(target: Target, variants: int, drives_each: int = 1) -> int:
    """How many variants (or teams of ``drives_each`` variants: :func:`_teams`) run at once:
    each starts with a purge, so on a target that can make independent copies of its drive
    (``fork``: the simulator) they may run side by side, one per CPU core (a team too, on its
    two threads: two teams on two cores take 1.15x sooner than one after the other, at 1.07x
    the CPU time, on the 256 GB default drive), as many as the memory holds (each copy needs
    the drive's state)."""
    if variants < 2 or FORK not in target.capabilities:
        return 1
    workers = min(variants, os.cpu_count() or 1)
    fit = _drives_memory_holds(target)
    if fit is not None:
        workers = min(workers, max(1, fit // drives_each))
    return workers


def _drives_memory_holds(target: Target) -> int | None:
    """How many copies of ``target``'s drive 70 % of the free memory holds (``state_bytes``
    each); None when either is unknown."""
    state_bytes = target.state_bytes
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        avail = 0
    return int(avail * 0.7 // state_bytes) if state_bytes and avail else None


def threads_per_variant(threads: int, workers: int, cores: int) -> int:
    """Threads each of ``workers`` variants side by side may use when a simulation may use
    ``threads``: that many while they fit the ``cores`` together, else one. Variants side by
    side use the cores better than a variant on two threads (the 256 GB default drive's trace
    test: 1.95x against 1.2x)."""
    return threads if workers * threads <= cores else 1


@contextlib.contextmanager
def _threads_beside(target: Target, workers: int):
    """``target`` (and the copies made of it meanwhile) on :func:`threads_per_variant`
    threads while ``workers`` variants run side by side."""
    threads = target.threads  # type: ignore[attr-defined]  # a FORK target's
    target.set_threads(threads_per_variant(threads, workers, os.cpu_count() or 1))  # type: ignore[attr-defined]
    try:
        yield
    finally:
        target.set_threads(threads)  # type: ignore[attr-defined]


def _run_parallel(target: Target, groups: list[list], teams: list[list[int]], workers: int, params: TraceRunParams,
                  span: int, trace_span: int, info: dict, progress: bool | None, record) -> None:
    """Runs the ``teams`` of variants (:func:`_teams`) ``workers`` at a time, in
    :func:`_start_order`, each variant on its own copy of the drive, one variant of the team
    started last on ``target`` itself (a copy's drive is freed when its team ends, the
    target's is kept: started last, it never sits beside ``workers`` running ones); the
    simulator releases the GIL while it replays a chunk. Results are recorded in plan order,
    so the folder and the summary are those of a sequential run. Ctrl-C or a failure stops
    every variant after the step under way."""
    stop = threading.Event()
    order = _start_order([groups[team[0]] for team in teams])
    last = teams[order[-1]][0]
    targets: list = [target if i == last else target.fork() for i in range(len(groups))]

    def work(k: int) -> list:
        team = teams[k]
        done: list = []
        try:
            if len(team) == 1:
                items = _run_variant(targets[team[0]], groups[team[0]], params, span, trace_span, info, progress,
                                     stop)
            else:
                items = _run_team([targets[i] for i in team], [groups[i] for i in team], params, span, trace_span,
                                  info, progress, stop)
            for item in items:
                done.append(item)
        except KeyboardInterrupt:  # stopped: what ran is kept
            pass
        finally:
            for i in team:
                if targets[i] is not target:
                    targets[i] = None  # a copy's drive is freed as soon as its team ends
        return done

    from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="trace-variant")
    futures: list = [None] * len(teams)
    for k in order:
        futures[k] = pool.submit(work, k)
    interrupted = False
    try:
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        if any(f.exception() is not None for f in done):
            stop.set()
    except KeyboardInterrupt:
        interrupted = True
        stop.set()
    finally:
        pool.shutdown(wait=True)
    # A variant that failed: the others were stopped for it; its error is what the run reports.
    failed = next((f.exception() for f in futures if f.exception() is not None), None)
    plan_order = {step.name: n for n, step in enumerate(s for g in groups for s in g)}
    items = [item for f in futures if f.exception() is None for item in f.result()]
    for step, result, counts in sorted(items, key=lambda item: plan_order[item[0].name]):
        if failed is None or result.complete:
            record(step, result, counts)
    if failed is not None:
        raise failed
    if interrupted:
        raise KeyboardInterrupt


def _row(variant: str, pass_no: int, qd: int, trim: bool, r: ReplayResult, counts: dict) -> dict:
    t = r.totals
    return {"variant": variant, "pass": pass_no, "qd": qd, "trim": trim, "complete": r.complete,
            "commands": t["commands"], "writes": t["writes"], "trims": t["trims"], "flushes": t["flushes"],
            "reads": t["reads"], "records_read": counts["records"], "records_dropped": counts["dropped"],
            "skipped_bad_lines": counts["skipped_bad"], "first_bad_line": counts["first_bad"],
            "host_write_bytes": t["host_write_bytes"], "trim_bytes": t["trim_bytes"], "duration_s": t["duration_s"],
            "iops_mean": t["iops"], "mbps_mean": t["mbps"],
            "window_iops_min": _nanmin(r.series["iops"]), "window_iops_max": _nanmax(r.series["iops"]),
            "write_amplification": t.get("write_amplification"), "latency_us": t.get("latency_us"),
            "notes": r.notes}


def _nanmin(a) -> float | None:
    import numpy as np

    a = np.asarray(a, dtype=float)
    return float(np.nanmin(a)) if np.isfinite(a).any() else None


def _nanmax(a) -> float | None:
    import numpy as np

    a = np.asarray(a, dtype=float)
    return float(np.nanmax(a)) if np.isfinite(a).any() else None


def overlay_series(per_variant: dict[str, list[ReplayResult]], qd: int) -> dict[str, np.ndarray] | None:
    """Window IOPS of every pass back to back, with and without TRIM side by side (NaN where
    one variant has fewer windows)."""
    import numpy as np

    cols = {}
    for trim in (True, False):
        passes = per_variant.get(variant_name(qd, trim))
        if passes:
            cols["iops_with_trim" if trim else "iops_without_trim"] = np.concatenate([p.series["iops"] for p in passes])
    if not cols:
        return None
    n = max(len(c) for c in cols.values())
    out = {"window": np.arange(n, dtype=np.float64)}
    for k, c in cols.items():
        out[k] = np.concatenate([c, np.full(n - len(c), np.nan)])
    return out


def _finish(rd, target: Target, summary: dict, params: TraceRunParams, per_variant: dict, complete: bool) -> None:
    rows = summary["variants"]
    charts = []
    overlays = {}
    for qd in params.qds:
        s = overlay_series(per_variant, qd)
        if s is None:
            continue
        overlays[f"qd{qd}"] = s
        rd.write_series(f"qd{qd}", s)
        charts.append(Chart(
            f"qd{qd}", "window",
            tuple(Line(c, "with TRIM" if c == "iops_with_trim" else "without TRIM", "IOPS") for c in s if c != "window"),
            f"{target.name}: trace replay at QD{qd}, IOPS averaged every {params.window_commands:,} commands",
            f"window ({params.window_commands:,} commands each; passes back to back)", "IOPS (average over the window)",
            label=f"QD{qd}", file=f"trace_qd{qd}"))
    summary["plot"] = [c.hint() for c in charts]
    summary["tables"] = [{
        "title": f"{target.name}: trace replay, {params.passes} pass(es) per variant",
        "columns": ["variant", "pass", "commands", "IOPS (avg)", "MB/s", "min window IOPS", "max window IOPS",
                    "write amplification", "duration s"],
        "rows": [[r["variant"], r["pass"], r["commands"], r["iops_mean"], r["mbps_mean"], r["window_iops_min"],
                  r["window_iops_max"], r["write_amplification"], r["duration_s"]] for r in rows],
        "note": "IOPS (avg) = commands / replay time; windows hold the stated number of completions. "
                "Write amplification = NAND bytes / host bytes written (simulator only).",
    }]
    summary["trim_effect"] = trim_effect(rows)
    summary["complete"] = complete
    if overlays:
        from .. import plots

        summary["plots"] = [p.name for p in plots.chart_files(rd.path, charts, overlays)]
    rd.write_summary(summary)
    report.write_report([rd.path], rd.path / "report.html", metrics=metrics_by_test())
    if complete:
        rd.finish()


def trim_effect(rows: list[dict]) -> list[dict]:
    """Per queue depth and pass: average IOPS and write amplification with vs without TRIM."""
    out = []
    by = {(r["qd"], r["pass"], r["trim"]): r for r in rows}
    for (qd, p, trim), r in sorted(by.items()):
        other = by.get((qd, p, False))
        if not trim or other is None:
            continue
        ratio = (r["iops_mean"] / other["iops_mean"]) if r["iops_mean"] and other["iops_mean"] else None
        out.append({"qd": qd, "pass": p, "iops_with_trim": r["iops_mean"], "iops_without_trim": other["iops_mean"],
                    "iops_ratio": ratio, "wa_with_trim": r["write_amplification"],
                    "wa_without_trim": other["write_amplification"]})
    return out


def show(s: dict) -> None:
    """The lines printed at the end of a run: one per variant and pass."""
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


#: Each variant's figures (QD, with or without TRIM; an entry of the summary's ``variants``):
#: mean IOPS, lowest window, write amplification.
VARIANT_METRICS = (
    Metric("iops_mean", "IOPS mean", "IOPS", headline=True),
    Metric("window_iops_min", "lowest window", "IOPS", headline=True),
    Metric("write_amplification", "write amplification", headline=True),
)
_variant_figures = headline_of(VARIANT_METRICS)


def headline(s: dict, folder=None) -> list[tuple[str, str, object]]:
    """Per variant, its declared figures labelled with the variant."""
    return [(f"{v.get('variant', '?')} {label}", unit, value) for v in s.get("variants") or []
            for label, unit, value in _variant_figures(v)]


TEST = Test(
    name="run",
    parent="trace",
    help="the TRIM trace test: fill, replay a trace with and without TRIM at QD32 and QD1",
    description="The Tom's Hardware JEDEC TRIM test (seed 003). For each queue depth and each TRIM mode: purge the "
                "target, fill the span sequentially (128 KiB, QD32), then replay the trace --passes times as fast "
                "as the drive goes (timestamps ignored, QD commands outstanding; on the simulator a flush waits for "
                "all earlier commands, through fio it is an fsync that does not drain the queue, as noted in the "
                "results). Reads are dropped unless --keep-reads; 'without TRIM' drops the TRIM commands. IOPS are "
                "averaged every --window commands; the simulator also reports write amplification. Records are "
                "aligned to 4 KiB (start down, end up). Writes per variant and pass a series (window: commands, "
                "t_s, iops, mbps), a table, trace_qdN.png/.svg and report.html. FILE may be jedec-like: the "
                "JEDEC-client-like generator scaled to the span (no file; --write-bytes per pass).",
    params=TraceRunParams, plan=plan, run=run, show=show, headline=headline, print_plan=print_plan)
