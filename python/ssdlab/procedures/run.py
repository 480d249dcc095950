"""``ssdlab run``: a workload written in fio's language, on any target.

The workload is a fio job file (``ssdlab run job.fio``), a named built-in workload
(``ssdlab run --list``), or fio's own options on the command line (``ssdlab run
--name=mix --rw=randrw --rwmixread=70 --bs=4k --iodepth=32 --runtime=60 --time_based``).
Its groups (fio's ``stonewall``) run one after another; the jobs of a group run together.

* On the simulator ssdlab runs the jobs itself (:mod:`ssdlab.workload.tosim`); options that
  only steer how fio submits I/O from a host are listed in the summary as not applicable.
* On a block device, file or loop device the job goes to fio as written, after the safety
  gate, writing to the target (:mod:`ssdlab.workload.tofio`).

Results: ``series`` (every group back to back: ``t_s`` from the start of the run, ``group``,
per direction ``{dir}_iops``, ``{dir}_mbps`` and the latency columns), ``job.fio`` (the
workload as ssdlab understood it), the summary with per-group and per-direction figures
(IOPS, MB/s, latency percentiles; on the simulator write amplification and GC work; no
endurance projection: a run judges no steady state) and report.html; PNG and SVG charts with
``--plots``.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path


from .. import plots, report, results
from ..charts import Chart, Line
from ..errors import UserError
from ..params import Parser
from ..progress import phase_bar
from ..targets.base import DIRECTIONS, SIMULATED, JobSpec, PhaseResult, ReplayJob, Target
from ..units import human_size
from ..workload import fiojob
from .common import (FILL_BS_BYTES, add_endurance, declared_summary, done_with_drive, end_run, failure_of, figure,
                     show_endurance)
from ..workload.engine import combine, direction_figures, group_summary, run_group
from . import declare
from .declare import Metric, Test, headline_of, param

@dataclass(frozen=True)
class RunParams:
    job: str | None = param(None, "JOB", "a fio job file (with --section=NAME, repeatable: only those sections, "
                            "as fio's --section), or the name of a built-in workload (see --list); "
                            "or give fio's options instead, as --name=value (fio's names and units)",
                            positional=True)
    list_named: bool = param(False, "--list", "list the built-in workloads and exit", switch=True)
    print_job: bool = param(False, "--print-job", "print the workload as the fio job file ssdlab runs, and exit",
                            switch=True)
    fill: bool = param(False, "--fill", "first fill the whole drive sequentially (128 KiB writes at QD32) so the "
                       "workload meets a full drive, as after the other tests' preconditioning", switch=True)
    interval_s: float = param(1.0, "--interval", "series interval", unit="s", low=0.001, high=3600)
    plot_files: bool = param(False, "--plots", "also draw the charts as PNG and SVG files (IOPS, MB/s, latency); "
                        "report.html has them either way, and a run without them starts and ends at once",
                        switch=True)
    seed: int = param(1, None, "random seed")
    #: fio's options given on the command line (``--rw=randrw``...), in order.
    fio_args: tuple = ()


@dataclass
class Loaded:
    """The workload the command line names: fio jobs (``workload``) or a generated command
    stream (``named`` with its ``named_params``), and where it came from."""

    source: str
    workload: fiojob.Workload | None = None
    named: object | None = None
    named_params: object | None = None


def _named_params(named, args: tuple[str, ...]):
    """A built-in workload's parameters from the options after its name (its declared flags)."""
    parser = Parser(prog=f"ssdlab run {named.name}", add_help=False, allow_abbrev=False, exit_on_error=False)
    declare.add_arguments(parser, named.params)
    try:
        ns, extra = parser.parse_known_args(list(args))
    except argparse.ArgumentError as e:
        raise UserError(f"run {named.name}: {e}") from None
    if extra:
        flags = [p.flag for _, p in declare.declared(named.params) if p.flag]
        raise UserError(f"run {named.name}: unknown option {extra[0]}; its options are {', '.join(flags)} "
                        f"(ssdlab run --list shows them with their defaults)")
    values = {}
    for f, p in declare.declared(named.params):
        if p.flag is not None:
            v = getattr(ns, f.name)
            values.update(v if isinstance(v, dict) else {f.name: v})
    return named.make_params(**values)


def load(params: RunParams, zone_size_bytes: int = 0) -> Loaded:
    """The workload the command line names (a job file, a built-in workload with its options,
    or fio's options), for a drive with zones of ``zone_size_bytes`` (0: none or unknown)."""
    named_mod = None
    if params.job is not None:  # a job file or a built-in workload: only then the built-in workloads' table
        from ..workload import named as named_mod

    args = tuple(params.fio_args)
    # fio's --section=NAME (repeatable): only those sections of the job file run.
    sections = [a.partition("=")[2] for a in args if a.startswith("--section=")]
    args = tuple(a for a in args if not a.startswith("--section"))
    if sections and (params.job is None or not Path(params.job).is_file()):
        raise UserError("run: --section=NAME picks sections of a job file (as fio's --section): give the job file")
    if params.job is not None and params.job in named_mod.NAMED and not Path(params.job).exists():
        named = named_mod.get(params.job)
        p = _named_params(named, args)
        source = f"built-in workload {named.name}" + (f" ({' '.join(args)})" if args else "")
        if named.generated:
            return Loaded(source, named=named, named_params=p)
        text = named.text(p)
        return Loaded(source, workload=fiojob.parse_job_text(text, source=f"<built-in workload {named.name}>"),
                      named=named, named_params=p)
    if any(a == "--purge" or a.startswith("--purge=") for a in args):
        raise UserError("run: --purge: run never purges the drive, the workload meets it as it is (--fill fills it "
                        "first); purge it with a test that does, or with blkdiscard, before the run")
    bad = [a for a in args if not a.startswith("--")]
    if bad:
        raise UserError(f"run: {bad[0]!r}: fio options are given as --name=value (e.g. --rw=randrw --bs=4k)")
    if params.job is not None and args:
        if Path(params.job).exists():
            raise UserError(f"run: give a job file ({params.job}) or fio options ({' '.join(args)}), not both; put "
                            "the options into the job file")
        if "=" not in args[-1]:  # `--rw randwrite`: the value was taken for the job file
            raise UserError(f"run: fio options are given as --name=value, e.g. {args[-1]}={params.job} "
                            f"(got {args[-1]} {params.job})")
    if params.job is None:
        if not args:
            raise UserError("run: give a fio job file, a built-in workload (ssdlab run --list) or fio's options, "
                            "e.g. ssdlab run --name=mix --rw=randrw --rwmixread=70 --bs=4k --iodepth=32 "
                            "--runtime=60 --time_based --out DIR")
        return Loaded("command line: " + " ".join(args), workload=fiojob.parse_command_line(list(args)))
    path = Path(params.job)
    if not path.exists():
        raise UserError(f"run: {params.job}: no such job file, and not a built-in workload (ssdlab run --list "
                        f"names them: {', '.join(named_mod.NAMED)})")
    if path.is_dir():
        raise UserError(f"run: {path} is a folder; give a fio job file")
    workload = fiojob.parse_job_file(path, sections=sections or None, device_zone_bytes=zone_size_bytes)
    return Loaded(f"job file {path}" + "".join(f" --section={x}" for x in sections), workload=workload)


def early(params: RunParams) -> int | None:
    """``--list`` and ``--print-job``: print and end, before any target is opened."""
    if params.list_named:
        from ..workload import named

        for line in named.listing():
            print(line)
        return 0
    if params.print_job:
        loaded = load(params)
        if loaded.workload is None:
            raise UserError(f"run: {loaded.named.name} is a generated command stream, not a fio job; on fio targets "
                            "it runs as a replay (--dry-run shows it)")
        print(fiojob.format_job_file(loaded.workload), end="")
        return 0
    return None


def _fill_job(target: Target, params: RunParams) -> JobSpec:
    return JobSpec("fill", "write", bs_bytes=FILL_BS_BYTES, qd=32,
                   span_bytes=target.capacity_bytes // FILL_BS_BYTES * FILL_BS_BYTES)


def _generated_span(loaded: Loaded, target: Target) -> int:
    """Bytes of the drive a generated workload lays out, checked against the target."""
    span = loaded.named.layout(loaded.named_params)
    if span > target.capacity_bytes:
        raise UserError(f"run {loaded.named.name}: its layout needs {span:,} bytes, more than {target.name}'s "
                        f"{target.capacity_bytes:,}; lower --time-steps, --records or --header")
    return span


def _replay_job(loaded: Loaded) -> ReplayJob:
    p = loaded.named_params
    commands = loaded.named.totals(p)["commands"]
    return ReplayJob(name=loaded.named.name, qd=getattr(p, "qd", 1), window_commands=max(1, commands // 500),
                     buffer_compress_pct=getattr(p, "buffer_compress_pct", None))


def plan(target: Target, params: RunParams) -> list:
    """The steps (checked: an option the simulator cannot run, or a job writing elsewhere
    than the target, is an error before the drive is touched)."""
    loaded = load(params, target.zone_size_bytes)
    if loaded.workload is None:
        _generated_span(loaded, target)
        return [_replay_job(loaded)]
    return target.plan_workload(loaded.workload, params.interval_s)


def print_plan(target: Target, params: RunParams) -> None:
    """``--dry-run``: the workload as ssdlab understood it, then per group what runs: the
    simulator's workload keys, or fio's job file."""
    loaded = load(params, target.zone_size_bytes)
    print(f"# dry run: {loaded.source} on {target.name} ({human_size(target.capacity_bytes)}); nothing is written")
    if target.refused:
        print(f"# WARNING: a real run would be refused: {target.refused}")
    if loaded.workload is None:
        span = _generated_span(loaded, target)
        print(f"# a generated command stream over the first {human_size(span)}, replayed in order at "
              f"QD{_replay_job(loaded).qd}:")
        for k, v in loaded.named.totals(loaded.named_params).items():
            print(f"#   {k} = {v:,}" if isinstance(v, int) else f"#   {k} = {v}")
        return
    workload = loaded.workload
    steps = target.plan_workload(workload, params.interval_s)
    if params.fill:
        print(f"# first: sequential fill of {human_size(_fill_job(target, params).span_bytes)}, 128 KiB at QD32")
    print(fiojob.format_job_file(workload))
    for note in workload_notes(workload):
        print(f"# note: {note}")
    for text in target.dry_run_text(workload, steps):
        print(text)


def run(target: Target, params: RunParams, out, *, argv: list[str] | None = None, overwrite: bool = False,
        progress: bool | None = None) -> dict:
    """Runs the workload on ``target`` into the results folder ``out``; returns the summary.
    Ctrl-C or a failing group keeps what was measured, marked incomplete."""
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    loaded = load(params, target.zone_size_bytes)
    summary = declared_summary("run", target, params, argv)
    summary["workload_source"] = loaded.source
    if loaded.named is not None:
        summary["workload_params"] = dataclasses.asdict(loaded.named_params)
    if loaded.workload is None:
        return _run_generated(target, loaded, summary, rd, params, progress)
    workload = loaded.workload
    steps = target.plan_workload(workload, params.interval_s)
    summary["groups_planned"] = len(steps)
    (rd / "job.fio").write_text(fiojob.format_job_file(workload))
    summary["workload_notes"] = workload_notes(workload)
    summary.update(target.workload_notes(workload, steps))
    summary["purge"] = {"method": "none: the workload runs on the drive as it is"}
    results_: list[tuple[object, PhaseResult]] = []
    complete, error = True, None
    try:
        if params.fill:
            with phase_bar("sequential fill", enabled=progress) as bar:
                fill = target.run_phase(_fill_job(target, params), bar)
            summary["fill"] = fill.totals
            if not fill.complete:
                raise _Stopped(fill.error)
        for step in steps:
            r = run_group(target, workload, step, progress)
            results_.append((step, r))
            if not r.complete:
                raise _Stopped(r.error)
    except (_Stopped, KeyboardInterrupt) as e:
        complete, error = False, failure_of(e)
    _finish(rd, target, summary, results_, params)
    table = getattr(loaded.named, "table", None)
    if table is not None:  # a built-in workload's own results table (CrystalDiskMark's)
        summary["table"] = table(summary["groups"])
        summary["table_text"] = loaded.named.table_text(summary["table"])
        rd.write_summary(summary)
    end_run(rd, summary, complete, error)
    return summary


def _run_generated(target: Target, loaded: Loaded, summary: dict, rd: results.ResultsDir, params: RunParams,
                   progress) -> dict:
    """A generated command stream (the record workload), replayed in order on the target as
    a trace is (through a generated replay file on fio targets)."""
    named, p = loaded.named, loaded.named_params
    span = _generated_span(loaded, target)
    job = _replay_job(loaded)
    planned = named.totals(p)
    summary.update(span_bytes=span, planned=planned, purge={"method": "none: the workload runs on the drive as it is"})
    complete, error = True, None
    with phase_bar(f"{named.name} workload", enabled=progress) as bar:
        r = target.replay(job, named.commands(p, span), bar, total_commands=planned["commands"])
    if not r.complete:
        complete, error = False, r.error
    done_with_drive(target, summary)
    rd.write_series("series", r.series)
    t = r.totals
    duration = float(t.get("duration_s") or 0.0)
    totals = {"read_ios": t.get("reads"), "read_bytes": t.get("host_read_bytes"),
              "write_ios": t.get("writes"), "write_bytes": t.get("host_write_bytes")}
    group = {"name": named.name, "complete": r.complete, "duration_s": duration,
             "directions": direction_figures(totals, duration), "latency_us": {}, "notes": r.notes}
    for k in ("host_write_bytes", "host_read_bytes", "nand_write_bytes", "write_amplification"):
        if t.get(k) is not None:
            group[k] = t[k]
    summary.update(groups=[group], duration_s=duration, host_write_bytes=t.get("host_write_bytes") or 0,
                   commands=t.get("commands"))
    _headline(summary, [group])
    if SIMULATED in target.capabilities:
        summary["nand_write_bytes"] = t.get("nand_write_bytes")
        summary["write_amplification"] = t.get("write_amplification")
        add_endurance(summary, target.capacity_bytes, test="run")
    if len(r.series.get("t_s", ())):
        chart = Chart("series", "t_s", (Line("mbps", "MB/s", "MB/s"),),
                      f"{target.name} — {loaded.source}: MB/s per window of {job.window_commands} commands",
                      "time (s)", "MB/s", label="MB/s", file="mbps")
        if params.plot_files:
            summary["plots"] = [x.name for x in plots.chart_files(rd.path, [chart], {"series": r.series})]
        summary["plot"] = [chart.hint()]
    end_run(rd, summary, complete, error)
    return summary


class _Stopped(Exception):
    def __init__(self, error: str | None):
        super().__init__(error or "interrupted")
        self.error = error


def _headline(summary: dict, groups: list[dict]) -> None:
    """Whole-run figures per direction, for ``compare`` and the report's table:
    ``{dir}_iops_mean`` and ``{dir}_mbps_mean`` (IOs and bytes of every group over the run's
    time), ``{dir}_latency_us`` (percentiles; only for a run of one group: percentiles of
    several groups do not add up)."""
    for d in DIRECTIONS:
        ios = sum(g["directions"].get(d, {}).get("ios", 0) for g in groups)
        nbytes = sum(g["directions"].get(d, {}).get("bytes", 0) for g in groups)
        if not ios or not summary["duration_s"]:
            continue
        summary[f"{d}_iops_mean"] = ios / summary["duration_s"]
        summary[f"{d}_mbps_mean"] = nbytes / summary["duration_s"] / 1e6
        if len(groups) == 1:
            summary[f"{d}_latency_us"] = groups[0]["directions"][d]["latency_us"]


def _finish(rd: results.ResultsDir, target: Target, summary: dict, done: list, params: RunParams) -> None:
    done_with_drive(target, summary)
    series = combine([(step.name, r.series) for step, r in done])
    rd.write_series("series", series)
    groups = [group_summary(step, r) for step, r in done]
    summary["groups"] = groups
    summary["duration_s"] = sum(g["duration_s"] for g in groups)
    _headline(summary, groups)
    host = sum(g.get("host_write_bytes") or 0 for g in groups)
    summary["host_write_bytes"] = host
    if SIMULATED in target.capabilities:
        nand = sum(g.get("nand_write_bytes") or 0 for g in groups)
        summary["nand_write_bytes"] = nand
        summary["write_amplification"] = nand / host if host else None
        add_endurance(summary, target.capacity_bytes, test="run")
    title = f"{target.name} — {summary['workload_source']}"
    charts = _charts(series, title, params.interval_s)
    if params.plot_files:
        summary["plots"] = [p.name for p in plots.chart_files(rd.path, charts, {"series": series})]
        if len(series["t_s"]) and report.latency_columns(series):
            summary["plots"] += [p.name for p in plots.latency_plot(rd / "latency", series,
                                                                    title=f"{title}: latency", formats=("png", "svg"))]
    rest = report.time_series_hints([("series", "run", series)], title) if len(series["t_s"]) else []
    summary["plot"] = [c.hint() for c in charts] + [h for h in rest if h.get("label") != "IOPS"]
    rd.write_summary(summary)


def _charts(series: dict, title: str, interval_s: float) -> list[Chart]:
    """IOPS (also drawn as files) and MB/s per direction against time."""
    if not len(series["t_s"]):
        return []
    charts = []
    for what, unit in (("iops", "IOPS"), ("mbps", "MB/s")):
        lines = tuple(Line(f"{d}_{what}", d, unit) for d in DIRECTIONS if f"{d}_{what}" in series)
        if what == "iops" and not lines:
            lines = (Line("iops", "all", unit),)
        if lines:
            charts.append(Chart("series", "t_s", lines, f"{title}: {unit} per {interval_s:g} s, by direction",
                                "time (s)", unit, label=f"{unit} by direction", kind="scatter", logy=what == "iops",
                                file="iops" if what == "iops" else None))
    return charts


def workload_notes(workload) -> list[str]:
    """What fio would do with the jobs on a real target that their pattern does not say
    (:attr:`ssdlab.workload.fiojob.Job.host_notes`), once per job section."""
    return list(dict.fromkeys(n for j in workload.jobs if j.clone == 0 for n in j.host_notes))


def show(s: dict) -> None:
    """Per group and direction: IOPS, MB/s, p99 latency; write amplification on the simulator."""
    print(f"{s['target']}  {s['workload_source']}")
    for i, g in enumerate(s.get("groups", []), start=1):
        print(f"  group {i} {g['name']}: {g['duration_s']:.1f} s" + ("" if g["complete"] else " (incomplete)"))
        for d, f in g["directions"].items():
            lat = f["latency_us"]
            iops, mbps = figure(f['iops_mean'], ',.0f', 'IOPS'), figure(f['mbps_mean'], ',.1f', 'MB/s')
            print(f"    {d:<5} {iops:>15} {mbps:>14}"
                  + (f"  p50 {figure(lat.get('p50'), ',.0f', 'µs')}  p99 {figure(lat.get('p99'), ',.0f', 'µs')}  "
                     f"max {figure(lat.get('max'), ',.0f', 'µs')}" if lat else ""))
        if g.get("write_amplification") is not None:
            print(f"    write amplification {g['write_amplification']:.2f}")
    if s.get("table_text"):
        print(s["table_text"])
    show_endurance(s.get("endurance"), s.get("endurance_unavailable"))
    for note in s.get("workload_notes", []):
        print(f"  note: {note}", file=sys.stderr)
    options = list(dict.fromkeys(n.split(": ", 1)[1].split(" (", 1)[0] for n in s.get("not_applicable", [])))
    if options:
        print(f"  not applicable to the simulator (see summary.json): {', '.join(options)}", file=sys.stderr)


#: The whole run's figures per direction, and on the simulator its write amplification.
METRICS = (
    Metric("read_iops_mean", "read IOPS mean", "IOPS", headline=True),
    Metric("write_iops_mean", "write IOPS mean", "IOPS", headline=True),
    Metric("read_mbps_mean", "read MB/s mean", "MB/s", headline=True),
    Metric("write_mbps_mean", "write MB/s mean", "MB/s", headline=True),
    Metric("read_latency_us.p99", "read latency p99", "µs", headline=True),
    Metric("write_latency_us.p99", "write latency p99", "µs", headline=True),
    Metric("write_amplification", "write amplification", headline=True),
)
_figures = headline_of(METRICS)


def headline(s: dict, folder=None) -> list[tuple[str, str, object]]:
    """Per direction: IOPS, MB/s and p99 latency over the run, and on the simulator the
    write amplification; with several groups, each group's IOPS and MB/s too."""
    out = _figures(s)
    groups = s.get("groups") or []
    if len(groups) < 2:
        return out
    for i, g in enumerate(groups, start=1):
        name = f"group {i} {g.get('name')}"
        for d, f in (g.get("directions") or {}).items():
            out += [(f"{name} {d} IOPS", "IOPS", f.get("iops_mean")), (f"{name} {d} MB/s", "MB/s", f.get("mbps_mean"))]
        if g.get("write_amplification") is not None:
            out.append((f"{name} write amplification", "", g["write_amplification"]))
    return out


TEST = Test(
    name="run",
    help="run a workload written in fio's language (job file, built-in workload or fio options) on any target",
    description=(
        "Runs a workload written in fio's language on any target: a fio job file (ssdlab run job.fio), a built-in "
        "workload (ssdlab run --list names them with their options) or fio's options as "
        "--name=value (ssdlab run --name=mix --rw=randrw --rwmixread=70 --bs=4k --iodepth=32 --runtime=60 "
        "--time_based --out DIR). Groups (stonewall) run one after another, the jobs of a group together. On the "
        "simulator ssdlab runs the jobs itself; options about how fio submits I/O (ioengine, direct...) are listed "
        "as not applicable, an option it cannot simulate is an error naming it. On a device, file or loop device "
        "the job goes to fio as written, after the safety gate, writing to the target. The drive is not purged: the "
        "workload meets it as it is (--fill fills it first; the simulator starts fresh). Writes series (per "
        "direction IOPS, MB/s, latency per interval), job.fio (the workload as understood), summary.json (per "
        "group and direction; on the simulator write amplification) and report.html with its charts "
        "(--plots: also as PNG and SVG files). "
        "Sizes and times in fio's units (4k = 4096 bytes; runtime in s)."),
    params=RunParams, plan=plan, run=run, show=show, headline=headline, metrics=METRICS, passthrough="fio_args",
    early=early, print_plan=print_plan, purges=False)
