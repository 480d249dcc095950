"""The SNIA Solid State Storage Performance Test Specification (PTS 2.0.2): IOPS, TP, LAT,
WSAT, HIR, XSR, CBW/ECW and DIRTH on any target, the simulator included.

Every test starts with a purge and (but WSAT and XSR) the workload-independent
preconditioning (sequential 128 KiB writes of twice the user capacity); then 1-minute rounds
of the test's workload (--round-s: shorter rounds, which the report states) until the spec's
steady state holds: over the last 5 rounds the tracking variable's range is at most 20 % of
its average and the least-squares line changes by at most 10 % of it, at most 25 rounds
(--max-rounds); the report says when it was not reached. The measurement window's averages
are the results. --variant client (ActiveRange 75 %, 2 threads x QD16) or enterprise
(ActiveRange 100 %, 4 threads x QD32). Every finished step is written to pts_journal.json in
the results folder; after Ctrl-C, the same command with --resume continues from the last
finished round (on the simulator the unfinished test's finished rounds run again first: its
drive lives only in the process). The report holds the spec's tables and charts, and which
public source each parameter follows.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import plots, results
from ..errors import UserError
from ..pts import spec
from ..pts.journal import Journal
from ..targets.base import SIMULATED, JobSpec, Target
from ..workload import fiojob
from .common import declared_summary, end_run, figure
from ..units import MAX_BS_BYTES, human_size
from .declare import MAX_DURATION_S, MAX_QD, Metric, Test, headline_of, param, size

if TYPE_CHECKING:
    from ..pts import suite


def _test_list(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(t.strip().lower() for t in text.split(",") if t.strip()))
    bad = [n for n in names if n not in spec.TESTS]
    if bad or not names:
        raise argparse.ArgumentTypeError(f"{','.join(bad) or repr(text)}: not a PTS test; choose from "
                                         f"{','.join(spec.TESTS)}")
    return names


def _hours(text: str) -> tuple[float, ...]:
    try:
        v = tuple(float(x) for x in text.split(","))
    except ValueError:
        v = ()
    if len(v) != 3 or any(not (0 < h <= 100) for h in v):
        raise argparse.ArgumentTypeError(f"{text!r}: give three hours in (0, 100] for SEQ W, RND W, SEQ W, e.g. 8,6,8")
    return v


@dataclass(frozen=True)
class PtsParams:
    tests: tuple = param(spec.TESTS, "--test", "the PTS tests to run, comma separated", parse=_test_list,
                         default_text=",".join(spec.TESTS), metavar="LIST")
    variant: str = param("client", "--variant", "client: ActiveRange 75 %, 2 threads x QD16; enterprise: "
                         "ActiveRange 100 %, 4 threads x QD32", choices=tuple(spec.VARIANTS))
    round_s: float = param(60.0, "--round-s", "length of a round and of a WSAT sample (the spec's 1 minute; "
                           "shorter rounds are allowed and stated in the report)", unit="s", low=0, low_open=True,
                           high=3600)
    max_rounds: int = param(25, "--max-rounds", "rounds at most while waiting for steady state (the spec's 25)",
                            low=5, high=25)
    threads: int = param(0, "--threads", "threads of the random tests instead of the variant's (0: the "
                         "variant's); the report states the change", low=0, high=256)
    qd: int = param(0, "--qd", "queue depth per thread instead of the variant's (0: the variant's)", low=0,
                    high=MAX_QD)
    wsat_max_s: float = param(spec.WSAT_MAX_S, "--wsat-max-s", "WSAT time limit", unit="s", low=0, low_open=True,
                                high=MAX_DURATION_S)
    wsat_capacities: float = param(spec.WSAT_CAPACITIES, "--wsat-capacities", "WSAT ends after this many user "
                                   "capacities written", low=0, low_open=True, high=100)
    hir_cycles: int = param(spec.HIR_CYCLES, "--hir-cycles", "HIR: cycles of 5 s writes + wait per wait state "
                            "(the spec's 360)", low=1, high=100000)
    hir_return_s: float = param(spec.HIR_RETURN_S, "--hir-return-s", "HIR: continuous writes after each wait "
                                "state (the spec's 1800 s)", unit="s", low=0, low_open=True,
                                high=MAX_DURATION_S)
    xsr_hours: tuple = param(spec.XSR_HOURS, "--xsr-hours", "XSR: hours of SEQ 1024 KiB W, RND 8 KiB W, SEQ 1024 "
                             "KiB W (sources disagree: 8,6,8 or 6,8,6)", parse=_hours, default_text="8,6,8",
                             metavar="H,H,H")
    dirth_bs_bytes: int = param(8192, "--dirth-bs", "DIRTH random block size", unit="bytes", parse=size, low=512,
                                high=MAX_BS_BYTES, multiple_of=512)
    dirth_read_pct: int = param(65, "--dirth-read", "DIRTH share of reads", unit="%", low=0, high=100)
    dirth_art_limit_ms: float = param(spec.DIRTH_ART_LIMIT_MS, "--dirth-art-limit", "DIRTH maximum point: the "
                                      "highest IOPS with an average response time below this", unit="ms", low=0,
                                      low_open=True, high=60_000, metavar="MS")
    resume: bool = param(False, "--resume", "continue an interrupted run in the same --out folder from its last "
                         "finished round (same target and options)", switch=True)
    seed: int = param(1, None, "random seed")


def settings(target: Target, p: PtsParams) -> suite.Settings:
    from ..pts import suite  # the runner, with the steady-state analysis: only where PTS runs

    v = spec.VARIANTS[p.variant]
    return suite.Settings(variant=v, threads=p.threads or v.threads, qd=p.qd or v.qd, round_s=p.round_s,
                          max_rounds=p.max_rounds, wsat_max_s=p.wsat_max_s, wsat_capacities=p.wsat_capacities,
                          hir_cycles=p.hir_cycles, hir_return_s=p.hir_return_s, xsr_hours=tuple(p.xsr_hours),
                          dirth_bs_bytes=p.dirth_bs_bytes, dirth_read_pct=p.dirth_read_pct,
                          dirth_art_limit_ms=p.dirth_art_limit_ms, seed=p.seed)


def _round_texts(s: suite.Settings) -> dict[str, str]:
    """One round's (or step's) fio job text per test, for the dry run and the checks."""
    cells = [(m, b) for m in spec.IOPS_MIXES for b in spec.IOPS_BS]
    lat = [(m, b) for m in spec.LAT_MIXES for b in spec.LAT_BS]
    return {
        "iops": spec.random_cells_text(cells, s.round_s, s.ar, s.threads, s.qd, "PTS IOPS round: 7 mixes x 8 sizes"),
        "tp": spec.sequential_text("1024k_write", "write", 1024 * 1024, s.round_s, s.ar, spec.TP_THREADS, spec.TP_QD),
        "lat": spec.random_cells_text(lat, s.round_s, s.ar, 1, 1, "PTS LAT round: 1 thread x QD1"),
        "wsat": spec.random_cells_text([((0, 100), spec.WSAT_BS)], s.round_s, s.ar, s.threads, s.qd, "PTS WSAT sample"),
        "hir": spec.hir_text("w5_access", s.hir_cycles * (spec.HIR_ACCESS_S + 5), s.ar, s.threads, s.qd, 5),
        "xsr": spec.xsr_text("ag2_rnd8k", "randwrite", 8192, s.xsr_hours[1] * 3600, s.ar),
        "cbw": spec.ecw_text(s.round_s, s.ar, s.threads, s.qd),
        "dirth": spec.dirth_text([(t, q) for t in spec.DIRTH_THREADS for q in spec.DIRTH_QDS], s.round_s, s.ar,
                                 s.dirth_bs_bytes, s.dirth_read_pct),
    }


def plan(target: Target, params: PtsParams) -> list[JobSpec]:
    """The WIPC phase; every test's workloads are checked against the target before anything
    runs (an option the target cannot run is an error naming it)."""
    s = settings(target, params)
    for name, text in _round_texts(s).items():
        if name not in params.tests:
            continue
        try:
            target.plan_workload(fiojob.parse_job_text(text, source=f"<pts {name}>"), 1.0)
        except fiojob.WorkloadError as e:
            raise UserError(f"pts --test {name}: {e}") from None
    span = target.capacity_bytes // spec.WIPC_BS * spec.WIPC_BS
    return [JobSpec("wipc", "write", bs_bytes=spec.WIPC_BS, qd=spec.WIPC_QD, span_bytes=span,
                    io_bytes=spec.WIPC_CAPACITIES * span)]


_SEQUENCE = {
    "iops": "purge; WIPC; rounds of 56 one-round cells (mixes 100/0..0/100 outer, 1024..0.5 KiB inner) to steady "
            "state on 4 KiB 0/100 IOPS",
    "tp": "for 1024 and 128 KiB, write then read: purge; WIPC; rounds of SEQ at 1 x QD32 to steady state on MB/s",
    "lat": "purge; WIPC; rounds of 9 cells (100/0, 65/35, 0/100 x 8, 4, 0.5 KiB) at 1 x QD1 to steady state on "
           "4 KiB 0/100 ART",
    "wsat": "purge; RND 4 KiB W samples of one round each until {cap:g}x the user capacity or {t:g} s",
    "hir": "purge; WIPC; RND 4 KiB W rounds to steady state; for waits 5, 10, 15, 25, 50 s: {cyc} x (5 s W + wait), "
           "then {ret:g} s W",
    "xsr": "purge; SEQ 1024 KiB W {h[0]:g} h; RND 8 KiB W {h[1]:g} h; SEQ 1024 KiB W {h[2]:g} h; 1 x QD32",
    "cbw": "purge; WIPC; rounds of the JESD219 mix (40/60 R/W) to steady state on IOPS",
    "dirth": "purge; WIPC; rounds at 32 x 32 to steady state on IOPS; then 49 points, threads 32..1 x QD 32..1",
}


def print_plan(target: Target, params: PtsParams) -> None:
    """``--dry-run``: the sequence of each test and the fio job text of one of its rounds."""
    plan(target, params)
    s = settings(target, params)
    print(f"# dry run: PTS {s.variant.name} on {target.name} ({human_size(target.capacity_bytes)}); nothing is written")
    if target.refused:
        print(f"# WARNING: a real run would be refused: {target.refused}")
    print(f"# ActiveRange {s.ar} %, {s.threads} threads x QD{s.qd}, rounds of {s.round_s:g} s, at most "
          f"{s.max_rounds} rounds")
    texts = _round_texts(s)
    for name in params.tests:
        seq = _SEQUENCE[name].format(cap=s.wsat_capacities, t=s.wsat_max_s, cyc=s.hir_cycles, ret=s.hir_return_s,
                                     h=s.xsr_hours)
        print(f"\n# {spec.TEST_TITLES[name]}: {seq}\n# one round/step as fio runs it:")
        print(texts[name])


def _identity(target: Target, params: PtsParams) -> dict:
    p = dataclasses.asdict(params)
    p.pop("resume")
    return {"target": target.name, "capacity_bytes": target.capacity_bytes,
            **{k: list(v) if isinstance(v, tuple) else v for k, v in p.items()}}


def run(target: Target, params: PtsParams, out, *, argv=None, overwrite: bool = False, progress=None) -> dict:
    """Runs the chosen PTS tests into the results folder ``out``; returns the summary. Ctrl-C
    keeps every finished step (``--resume`` continues)."""
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    s = settings(target, params)
    journal = Journal.start(rd.path, _identity(target, params), params.resume)
    summary = declared_summary("pts", target, params, argv)
    summary["tests"] = list(params.tests)
    summary["variant"] = f"PTS {s.variant.name}"
    summary["pts"] = {"variant": s.variant.name, "active_range_pct": s.ar, "threads": s.threads, "qd": s.qd,
                      "write_cache": s.variant.write_cache, "round_s": s.round_s, "max_rounds": s.max_rounds,
                      "deviations": _deviations(target, s, params), "results": {}, "steady_state": {}}
    from ..pts import suite

    rn = suite.Runner(target, s, journal, rd, progress)
    outcomes: dict[str, suite.Outcome] = {}
    complete, error = True, None
    try:
        for name in params.tests:
            rn.begin(name)
            outcomes[name] = suite.RUNNERS[name](rn)
            journal.finish(name)
    except (suite.Stopped, KeyboardInterrupt) as e:
        complete, error = False, getattr(e, "error", None)
        summary["pts"]["resume"] = (f"stopped in {rn.test} after {journal.steps(rn.test)} finished steps; the same "
                                    "command with --resume continues")
        print(f"ssdlab: pts {summary['pts']['resume']}", file=sys.stderr, flush=True)
    _collect(rd, target, s, summary, outcomes)
    end_run(rd, summary, complete, error)
    return summary


def _deviations(target: Target, s: suite.Settings, params: PtsParams) -> list[str]:
    out = []
    if s.round_s != 60:
        out.append(f"rounds of {s.round_s:g} s instead of the spec's 60 s (--round-s)")
    if s.max_rounds != 25:
        out.append(f"at most {s.max_rounds} rounds instead of 25 (--max-rounds)")
    v = s.variant
    if (s.threads, s.qd) != (v.threads, v.qd):
        out.append(f"{s.threads} threads x QD{s.qd} instead of the {v.name} variant's {v.threads} x QD{v.qd}")
    if s.hir_cycles != spec.HIR_CYCLES or s.hir_return_s != spec.HIR_RETURN_S:
        out.append(f"HIR: {s.hir_cycles} cycles and {s.hir_return_s:g} s returns instead of 360 and 1800 s")
    if s.wsat_max_s != spec.WSAT_MAX_S or s.wsat_capacities != spec.WSAT_CAPACITIES:
        out.append(f"WSAT: until {s.wsat_capacities:g} capacities or {s.wsat_max_s:g} s (spec: 4 and 6 h)")
    if tuple(s.xsr_hours) not in (spec.XSR_HOURS, (6.0, 8.0, 6.0)):
        out.append(f"XSR: {'/'.join(f'{h:g}' for h in s.xsr_hours)} h access groups")
    if SIMULATED in target.capabilities:
        out.append(f"write cache: the simulator has no host switch for it (the {v.name} variant asks for it "
                   f"{v.write_cache})")
        out.append("steady state of IOPS, LAT, HIR pre-writes, CBW/ECW and DIRTH preconditioning: the 5-round window "
                   "starts no earlier than the first round in which the drive's garbage collection copied data (before "
                   "it the drive writes into the spare blocks the WIPC freed: flat rounds, not the state it keeps)")
        out.append("average response time by Little's law (outstanding IOs x time / IOs); five nines from the "
                   "simulator's per-interval maxima and quantiles (it exposes p1..p99.99 and max per phase, not "
                   "every IO); DIRTH 'histograms' are those quantiles")
    out.append("TP and XSR run 1 thread x QD32 (one sequential stream); ECW/CBW is rounds of the JESD219 mix to "
               "steady state at the variant's outstanding IOs, without a demand-intensity sweep of its own")
    return out


def _collect(rd, target: Target, s: suite.Settings, summary: dict, outcomes: dict) -> None:
    """Series, tables, charts and figures of the finished tests into the folder and summary."""
    import numpy as np

    pts = summary["pts"]
    tables = [{"title": "PTS test conditions", "columns": ["condition", "value"], "rows": [
        ["variant", s.variant.name], ["ActiveRange", f"{s.ar} %"], ["threads x QD (random tests)",
                                                                       f"{s.threads} x {s.qd}"],
        ["write cache", s.variant.write_cache], ["round length", f"{s.round_s:g} s" + (
            "" if s.round_s == 60 else " (shortened; the spec's rounds are 60 s)")],
        ["rounds at most", s.max_rounds], ["purge", "each test: " + str((target.purge.__doc__ or "").strip()
                                                                         .split("\n")[0] or "the target's purge")],
        ["deviations", "; ".join(pts["deviations"])]]},
        {"title": "Which source each parameter follows", "columns": ["parameter", "source", "note"],
         "rows": [list(r) for r in spec.SOURCES],
         "note": "PTS-1.x: SNIA PTS 1.x test definitions; CH: CloudHarmony block-storage (fio, PTS-E 1.1); "
                 "PTS-2.0-map: a public PTS 2.0.1 section 7.2 parameter mapping; JESD219: the JEDEC enterprise "
                 "workload; ssdlab: a choice made here"}]
    plot, pngs = [], []
    for name, o in outcomes.items():
        for sname, series in o.series.items():
            rd.write_series(sname, series)
        pts["results"][name] = o.figures
        if o.steady_state is not None:
            pts["steady_state"][name] = o.steady_state
        tables += o.tables
        plot += o.plot
    if "iops" in outcomes:
        m = outcomes["iops"].figures["matrix"]
        vals = np.array([[m[spec.cell_name(mx, b)] for mx in spec.IOPS_MIXES] for b in spec.IOPS_BS])
        pngs += [p.name for p in plots.heatmap_plot(
            rd / "pts_iops_matrix", vals, [spec.bs_label(b) for b in spec.IOPS_BS],
            [f"{a}/{b}" for a, b in spec.IOPS_MIXES], f"{target.name}: PTS {s.variant.name} IOPS (R/W mix x block "
            f"size)", "IOPS", formats=("png", "svg"))]
    for o in outcomes.values():
        pngs += [p.name for p in plots.chart_files(rd.path, o.charts, o.series)]
    summary["tables"] = tables
    summary["plot"] = plot
    summary["plots"] = pngs


def show(s: dict) -> None:
    """A few lines per test."""
    p = s.get("pts", {})
    print(f"{s['target']}  PTS {p.get('variant')}: ActiveRange {p.get('active_range_pct')} %, "
          f"{p.get('threads')} x QD{p.get('qd')}, rounds of {p.get('round_s', 0):g} s")
    res, sss = p.get("results", {}), p.get("steady_state", {})

    def st(name):
        d = sss.get(name) or {}
        if "reached" not in d:
            return ""
        return f" (steady state {'at round ' + str(d['round']) if d['reached'] else 'NOT reached'})"
    if "iops" in res:
        m = res["iops"]["matrix"]
        print(f"  IOPS: 4 KiB 0/100 {figure(m.get('r0w100_4096'))}, 4 KiB 100/0 {figure(m.get('r100w0_4096'))}"
              + st("iops"))
    if "tp" in res:
        print("  TP: " + ", ".join(f"{k} {figure(v['mbps'], ',.1f', 'MB/s')}" for k, v in res["tp"].items()))
    if "lat" in res:
        c = res["lat"]["cells"].get("r0w100_4096") or {}
        ms = {k: None if c.get(k) is None else c[k] / 1e3 for k in ("art_us", "five_nines_us", "max_us")}
        print(f"  LAT: 4 KiB 0/100 ART {figure(ms['art_us'], '.3f', 'ms')}, 5 nines "
              f"{figure(ms['five_nines_us'], '.3f', 'ms')}, max {figure(ms['max_us'], '.3f', 'ms')}" + st("lat"))
    if "wsat" in res:
        w = res["wsat"]
        print(f"  WSAT: {figure(w['fob_iops'], unit='IOPS')} fresh, {figure(w['final_iops'], unit='IOPS')} at the end, "
              f"{figure(w['drive_fills'], '.2f', 'drive fills')}")
    if "hir" in res:
        print(f"  HIR: baseline {figure(res['hir']['baseline_iops'], unit='IOPS')}; while writing: " + ", ".join(
            f"{k} s wait {figure(v.get('access_iops'))}" for k, v in res["hir"]["waits"].items()))
    if "xsr" in res:
        print("  XSR: " + ", ".join(f"{g['group']} {figure(g['mbps'], ',.1f', 'MB/s')}" for g in res["xsr"]["groups"]))
    if "cbw" in res:
        w = res["cbw"]["window"]
        print(f"  CBW/ECW: {figure(w['iops'], unit='IOPS')}, {figure(w['mbps'], ',.1f', 'MB/s')}" + st("cbw"))
    if "dirth" in res:
        d = res["dirth"]
        pts_ = d["points"]
        print("  DIRTH: " + ", ".join(f"{w} {k} {figure(pts_[k]['iops'], unit='IOPS')}"
                                      for w, k in d["selected"].items() if k))
    if p.get("resume"):
        print(f"  {p['resume']}")


def _pts(label: str, *path: str) -> Metric:
    return Metric(path[-1] if path[-2] != "wsat" else f"wsat_{path[-1]}", label, "IOPS",
                  path=("pts", "results", *path), headline=True)


#: The PTS figures a reader looks for first: 4 KiB random read, write and 65/35 IOPS of the IOPS
#: test's matrix and WSAT's fresh and final IOPS (of the tests that ran).
METRICS = (
    _pts("PTS IOPS: 4 KiB random read", "iops", "matrix", "r100w0_4096"),
    _pts("PTS IOPS: 4 KiB random write", "iops", "matrix", "r0w100_4096"),
    _pts("PTS IOPS: 4 KiB 65/35 read/write", "iops", "matrix", "r65w35_4096"),
    _pts("PTS WSAT fresh", "wsat", "fob_iops"),
    _pts("PTS WSAT final", "wsat", "final_iops"),
)
_figures = headline_of(METRICS)


def headline(s: dict, folder=None) -> list[tuple[str, str, object]]:
    """The declared figures of the tests that ran."""
    return [row for row in _figures(s) if row[2] is not None]


TEST = Test(
    name="pts",
    help="SNIA PTS 2.0.2: IOPS, TP, LAT, WSAT, HIR, XSR, CBW/ECW, DIRTH with purge, preconditioning and steady state",
    description=__doc__,
    params=PtsParams, plan=plan, run=run, show=show, headline=headline, print_plan=print_plan,
    metrics=METRICS)
