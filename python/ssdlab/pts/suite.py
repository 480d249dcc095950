"""The PTS tests on any target, built on :mod:`ssdlab.workload.engine`: each test a function
of a :class:`Runner` returning a :class:`Outcome` (figures, steady state, tables, charts,
series). Every step (purge, WIPC, round, access group, DIRTH point) goes through
:meth:`Runner.step`, which journals it; a resumed run gets finished steps from the journal
(on the simulator, whose drive does not outlive the process, the unfinished test's finished
steps are run again first: the same phases from the same seed rebuild the same drive).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import results
from ..charts import Chart, Line
from ..targets.base import SIMULATED, JobSpec, latency_column
from ..workload import engine
from ..workload import fiojob
from . import spec, steady
from .journal import Journal


class Stopped(Exception):
    """A step was cut short (Ctrl-C, or the target failed: ``error``)."""

    def __init__(self, error: str | None):
        super().__init__(error or "interrupted")
        self.error = error


@dataclass(frozen=True)
class Settings:
    variant: spec.Variant
    threads: int
    qd: int
    round_s: float
    max_rounds: int
    wsat_max_s: float
    wsat_capacities: float
    hir_cycles: int
    hir_return_s: float
    xsr_hours: tuple
    dirth_bs_bytes: int
    dirth_read_pct: int
    dirth_art_limit_ms: float
    seed: int = 1

    @property
    def ar(self) -> int:
        return self.variant.active_range_pct


@dataclass
class Outcome:
    figures: dict
    steady_state: dict | None = None
    tables: list = field(default_factory=list)
    plot: list = field(default_factory=list)
    plots: list = field(default_factory=list)
    series: dict = field(default_factory=dict)
    #: Charts drawn as files too (their hints are in ``plot``).
    charts: list = field(default_factory=list)


class Runner:
    def __init__(self, target, settings: Settings, journal: Journal, rd, progress=None):
        self.target, self.s, self.journal, self.rd, self.progress = target, settings, journal, rd, progress
        self.test = ""

    # -- steps ----------------------------------------------------------------------------
    def begin(self, test: str) -> None:
        self.test = test

    @property
    def _replaying(self) -> bool:
        return SIMULATED in self.target.capabilities and not self.journal.test(self.test)["done"]

    def step(self, key: str, fn, series_name: str | None = None):
        """The step's record: from the journal when finished before (run again on the
        simulator inside an unfinished test), else ``fn()`` run and journaled. A step that
        makes a series (``series_name``) has ``fn`` return (record, series); the series is
        written as ``series_name`` and read back for a finished step."""
        rec = self.journal.get(self.test, key)
        if rec is not None:
            if self._replaying:
                fn()
            if series_name is not None:
                return rec, results.read_series(self.rd.path / f"{series_name}.parquet")
            return rec
        out = fn()
        if series_name is not None:
            rec, series = out
            self.rd.write_series(series_name, series)
            self.journal.put(self.test, key, rec)
            return rec, series
        self.journal.put(self.test, key, out)
        return out

    def purge(self, prefix: str = "") -> dict:
        return self.step(prefix + "purge", self.target.purge)

    def wipc(self, prefix: str = "") -> dict:
        """Workload-independent preconditioning: SEQ 128 KiB writes of 2x the user capacity."""
        cap = self.target.capacity_bytes
        span = cap // spec.WIPC_BS * spec.WIPC_BS
        job = JobSpec("wipc", "write", bs_bytes=spec.WIPC_BS, qd=spec.WIPC_QD, span_bytes=span,
                      io_bytes=spec.WIPC_CAPACITIES * span, interval_s=10.0)

        def run():
            from ..progress import phase_bar

            with phase_bar(f"{self.test}: WIPC, SEQ 128 KiB W of 2x the capacity", enabled=self.progress) as bar:
                r = self.target.run_phase(job, bar)
            if not r.complete:
                raise Stopped(r.error)
            d = float(r.totals.get("duration_s") or 0.0)
            return {"bytes": int(r.totals.get("host_write_bytes") or 0), "duration_s": d,
                    "mbps": (r.totals.get("host_write_bytes") or 0) / d / 1e6 if d else None}
        return self.step(prefix + "wipc", run)

    def groups(self, text: str, label: str, interval_s: float = 1.0, outstanding: int | None = None,
               keep_series: bool = False):
        """Runs every group of a fio job text: {group name: cell record} (and the series)."""
        w = fiojob.parse_job_text(text, source=f"<pts {self.test}>")
        steps = self.target.plan_workload(w, interval_s)
        out, series = {}, {}
        for gi, st in enumerate(steps):
            r = engine.run_group(self.target, w, st, self.progress,
                                 label=f"{label} · {st.name} ({gi + 1}/{len(steps)})" if len(steps) > 1 else label)
            if not r.complete:
                raise Stopped(r.error)
            jobs = [j for j in w.groups[gi]]
            n_out = outstanding or sum(j.iodepth for j in jobs)
            out[st.name] = cell_record(r, n_out)
            if keep_series:
                series[st.name] = r.series
        return (out, series) if keep_series else out

    def rounds(self, key: str, text: str, label: str, track, interval_s: float = 1.0, copied=None):
        """Rounds of ``text`` until steady state of ``track(round record)`` or the round limit:
        (records, SteadyState). With ``copied(round record)`` (the bytes of valid data the
        drive's garbage collection copied in the round; None where the target does not say),
        the window starts no earlier than the first round with copies (:func:`gc_start`)."""
        recs = []
        ss = steady.detect([], self.s.max_rounds)
        for k in range(1, self.s.max_rounds + 1):
            recs.append(self.step(f"{key}round_{k}", lambda k=k: self.groups(
                text, f"{label} round {k} (<= {self.s.max_rounds})", interval_s)))
            start = gc_start([copied(r) for r in recs]) if copied else 1
            ss = steady.detect([track(r) for r in recs], self.s.max_rounds, start=start)
            if ss.done:
                break
        return recs, ss


def gc_start(copied) -> int:
    """The first round (1-based) a steady-state window of a random-write workload may start
    at, from each round's bytes copied by garbage collection (None: not reported). After the
    WIPC the drive writes into the spare blocks its sequential overwrites freed, without
    copying anything: the rounds are flat, yet the drive has not reached the state it keeps
    (on the simulated 256 GB drive, 5 rounds of DIRTH's 32 x 32 or of CBW/ECW fit in its
    spare area). The window starts at the first round in which the drive copied valid data,
    on targets that report it; 1 where a round does not (real drives), as the spec has it."""
    if not copied or any(c is None for c in copied):
        return 1
    return next((i for i, c in enumerate(copied, start=1) if c > 0), len(copied) + 1)


# ---------------------------------------------------------------------------- figures
def cell_record(r, outstanding: int, top: int = 64) -> dict:
    """One group's figures: IOPS and MB/s (all and per direction), average response time
    (Little's law: outstanding IOs x time / IOs completed, exact for the closed loop the
    simulator and fio's iodepth keep), 99.99 % and maximum response time, the ``top``
    largest per-interval maxima (for five nines over a window), write amplification."""
    t = r.totals
    dur = float(t.get("duration_s") or 0.0)
    per = {d: (int(t.get(f"{d}_ios") or 0), int(t.get(f"{d}_bytes") or 0)) for d in ("read", "write")}
    ios = sum(n for n, _ in per.values())
    nbytes = sum(b for _, b in per.values())
    lat = dict(r.latency_us or {})
    dl = [t.get(f"{d}_latency_us") or {} for d in ("read", "write")]
    mx = [v for v in [lat.get("max")] + [x.get("max") for x in dl] if v is not None]
    p4 = [v for v in [lat.get("p99.99")] + [x.get("p99.99") for x in dl] if v is not None]
    maxima = np.concatenate([np.asarray(r.series[c], float) for d in ("read", "write")
                             if (c := latency_column(d, "max")) in r.series] or [np.zeros(0)])
    maxima = np.sort(maxima[np.isfinite(maxima)])[::-1][:top]
    rec = {"duration_s": dur, "ios": ios, "bytes": nbytes, "outstanding": outstanding,
           "iops": ios / dur if dur else 0.0, "mbps": nbytes / dur / 1e6 if dur else 0.0,
           "art_us": outstanding * dur / ios * 1e6 if ios else None,
           "p99_99_us": max(p4) if p4 else None, "max_us": max(mx) if mx else None,
           "top_interval_max_us": [float(v) for v in maxima],
           "quantiles_us": {k: v for k, v in lat.items()},
           "write_amplification": t.get("write_amplification"), "gc_copied_bytes": t.get("gc_copied_bytes")}
    for d, (n, b) in per.items():
        rec[f"{d}_iops"] = n / dur if dur else 0.0
        rec[f"{d}_mbps"] = b / dur / 1e6 if dur else 0.0
    return rec


def five_nines_us(ios: int, tops, p9999_us, max_us) -> tuple[float | None, str]:
    """99.999 % response time of ``ios`` IOs and how it was found. Nearest rank: with at most
    100,000 IOs it is the maximum ("too few IOs": not separable from the maximum); above, the
    k-th largest IO (k = ios - ceil(0.99999 ios) + 1), estimated as the k-th largest of the
    per-interval maxima (a lower bound, exact when the k slowest IOs fall in different
    intervals), kept between the 99.99 % value and the maximum. The simulator exposes
    quantiles up to 99.99 % and per-interval maxima, not every IO."""
    if not ios or max_us is None:
        return None, "no IOs"
    if ios <= 100_000:
        return float(max_us), f"too few IOs ({ios:,} <= 100,000): equals the maximum"
    k = ios - math.ceil(spec.FIVE_NINES * ios) + 1
    tops = sorted((float(v) for v in tops), reverse=True)
    est = tops[k - 1] if len(tops) >= k else (tops[-1] if tops else max_us)
    lo = float(p9999_us) if p9999_us is not None else est
    return float(min(max(est, lo), max_us)), f"estimated: {k}-th largest per-interval maximum of {ios:,} IOs"


def window_cell(recs: list[dict]) -> dict:
    """A cell over the measurement window's rounds: mean IOPS and MB/s, IO-weighted ART,
    five nines over all the window's IOs, the maximum."""
    ios = sum(r["ios"] for r in recs)
    dur = sum(r["duration_s"] for r in recs)
    arts = [(r["art_us"], r["ios"]) for r in recs if r["art_us"] is not None]
    mx = max((r["max_us"] for r in recs if r["max_us"] is not None), default=None)
    p4 = max((r["p99_99_us"] for r in recs if r["p99_99_us"] is not None), default=None)
    tops = [v for r in recs for v in r["top_interval_max_us"]]
    fn, how = five_nines_us(ios, tops, p4, mx)
    out = {"iops": float(np.mean([r["iops"] for r in recs])), "mbps": float(np.mean([r["mbps"] for r in recs])),
           "ios": ios, "duration_s": dur,
           "art_us": sum(a * n for a, n in arts) / sum(n for _, n in arts) if arts else None,
           "five_nines_us": fn, "five_nines_method": how, "max_us": mx, "p99_99_us": p4}
    for d in ("read", "write"):
        out[f"{d}_iops"] = float(np.mean([r.get(f"{d}_iops", 0.0) for r in recs]))
    return out


def ss_series(values, ss: steady.SteadyState) -> dict:
    """Per round: the tracking variable and, over the measurement window, its average, 110 %
    and 90 % of it, and the fitted line (the spec's measurement-window plot)."""
    y = np.asarray(values, float)
    n = len(y)
    nan = np.full(n, np.nan)
    out = {"round": np.arange(1, n + 1, dtype=float), "value": y, "window_avg": nan.copy(),
           "avg_plus_10pct": nan.copy(), "avg_minus_10pct": nan.copy(), "fit": nan.copy()}
    w = ss.window
    if w is not None:
        sl = slice(w.first - 1, w.last)
        out["window_avg"][sl] = w.average
        out["avg_plus_10pct"][sl] = 1.1 * w.average
        out["avg_minus_10pct"][sl] = 0.9 * w.average
        out["fit"][sl] = w.intercept + w.slope * np.arange(w.last - w.first + 1)
    return out


def ss_hints(name: str, title: str, unit: str) -> list[dict]:
    ys = [{"series": name, "y": "value", "label": f"tracking variable ({unit})", "unit": unit},
          {"series": name, "y": "window_avg", "label": "window average", "unit": unit},
          {"series": name, "y": "avg_plus_10pct", "label": "110 % of the average", "unit": unit},
          {"series": name, "y": "avg_minus_10pct", "label": "90 % of the average", "unit": unit},
          {"series": name, "y": "fit", "label": "least-squares line", "unit": unit}]
    return [{"series": name, "x": "round", "y": ys, "kind": "line", "title": f"{title}: steady state and "
             "measurement window", "label": f"{title.split(':')[0]} steady state", "xlabel": "round", "ylabel": unit}]


def ss_table(title: str, ss: steady.SteadyState, unit: str) -> dict:
    w = ss.window
    rows = [["steady state", "reached" if ss.reached else "NOT reached"],
            ["rounds run", ss.rounds], ["measurement window (rounds)", f"{w.first}-{w.last}" if w else "n/a"],
            [f"window average ({unit})", w.average if w else None],
            ["data excursion (% of average, limit 20)", w.data_excursion_pct if w else None],
            ["slope excursion (% of average, limit 10)", w.slope_excursion_pct if w else None],
            [f"least-squares slope ({unit} per round)", w.slope if w else None],
            ["windows start at round (first round with GC copies)", ss.start]]
    return {"title": f"{title}: steady state", "columns": ["criterion", "value"], "rows": rows}


def _ms(us):
    return None if us is None else us / 1e3


def _copied(cell: str):
    """A round's bytes copied by garbage collection in ``cell`` (None: not reported)."""
    return lambda r: r[cell].get("gc_copied_bytes")


# ---------------------------------------------------------------------------- the tests
def run_iops(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    rn.wipc()
    cells = [(m, b) for m in spec.IOPS_MIXES for b in spec.IOPS_BS]
    text = spec.random_cells_text(cells, s.round_s, s.ar, s.threads, s.qd, "PTS IOPS round: 7 mixes x 8 sizes")
    track = spec.cell_name(*spec.IOPS_TRACK)
    recs, ss = rn.rounds("", text, "IOPS", lambda r: r[track]["iops"], copied=_copied(track))
    w = recs[ss.window.first - 1:ss.window.last] if ss.window else recs[-5:]
    matrix = {c: window_cell([r[c] for r in w]) for c in recs[0]}
    also = {spec.cell_name(*c): steady.detect([r[spec.cell_name(*c)]["iops"] for r in recs], s.max_rounds).as_dict()
            for c in spec.IOPS_ALSO_TRACKED}
    rows = [[spec.bs_label(b)] + [matrix[spec.cell_name(m, b)]["iops"] for m in spec.IOPS_MIXES] for b in spec.IOPS_BS]
    cols = ["block size"] + [f"{m[0]}/{m[1]}" for m in spec.IOPS_MIXES]
    series = {"pts_iops_ss": ss_series([r[track]["iops"] for r in recs], ss),
              "pts_iops_rounds": {"round": np.arange(1, len(recs) + 1, dtype=float),
                                  **{c: np.array([r[c]["iops"] for r in recs]) for c in recs[0]}}}
    conv = [{"series": "pts_iops_rounds", "y": spec.cell_name((0, 100), b), "label": spec.bs_label(b), "unit": "IOPS"}
            for b in spec.IOPS_BS]
    plot = [{"series": "pts_iops_rounds", "x": "round", "y": conv, "kind": "line", "logy": True,
             "title": "IOPS: steady-state convergence, 0/100 mix, every block size", "label": "IOPS convergence",
             "xlabel": "round", "ylabel": "IOPS"}] + ss_hints("pts_iops_ss", "IOPS: 4 KiB 0/100", "IOPS")
    tables = [ss_table("IOPS (4 KiB 0/100)", ss, "IOPS"),
              {"title": f"IOPS matrix: measurement-window average (rounds {ss.window.first}-{ss.window.last}), "
                        f"R/W mix across, block size down", "columns": cols, "rows": rows}]
    figures = {"matrix": {c: v["iops"] for c, v in matrix.items()}, "also_tracked": also,
               "wipc": rn.journal.get(rn.test, "wipc")}
    return Outcome(figures, ss.as_dict(), tables, plot, series=series)


def run_tp(rn: Runner) -> Outcome:
    s = rn.s
    figures, tables_rows, plot, series, sss = {}, {}, [], {}, {}
    for bs in spec.TP_BS:
        for d in spec.TP_DIRECTIONS:
            key = f"{bs // 1024}k_{d}"
            rn.purge(key + "/")
            rn.wipc(key + "/")
            text = spec.sequential_text(key, d, bs, s.round_s, s.ar, spec.TP_THREADS, spec.TP_QD)
            recs, ss = rn.rounds(key + "/", text, f"TP SEQ {spec.bs_label(bs)} {d}", lambda r: r[key]["mbps"])
            win = window_cell([r[key] for r in recs[ss.window.first - 1:ss.window.last]])
            figures[key] = {"mbps": win["mbps"], "iops": win["iops"], "steady_state": ss.as_dict()}
            tables_rows.setdefault(bs, {})[d] = win["mbps"]
            name = f"pts_tp_{key}_ss"
            series[name] = ss_series([r[key]["mbps"] for r in recs], ss)
            plot += ss_hints(name, f"TP: SEQ {spec.bs_label(bs)} {d}", "MB/s")
            sss[key] = ss
    rows = [[spec.bs_label(b), tables_rows[b].get("read"), tables_rows[b].get("write")] for b in spec.TP_BS]
    tables = [{"title": "TP: measurement-window average, MB/s (10^6 bytes/s)",
               "columns": ["block size", "100 % read MB/s", "100 % write MB/s"], "rows": rows}]
    tables += [ss_table(f"TP {k}", v, "MB/s") for k, v in sss.items()]
    return Outcome(figures, {k: v.as_dict() for k, v in sss.items()}, tables, plot, series=series)


def run_lat(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    rn.wipc()
    cells = [(m, b) for m in spec.LAT_MIXES for b in spec.LAT_BS]
    text = spec.random_cells_text(cells, s.round_s, s.ar, 1, 1, "PTS LAT round: 1 thread x QD1")
    track = spec.cell_name(*spec.LAT_TRACK)
    interval = min(0.05, s.round_s / 20)
    recs, ss = rn.rounds("", text, "LAT", lambda r: r[track]["art_us"] / 1e3, interval_s=interval,
                         copied=_copied(track))
    w = recs[ss.window.first - 1:ss.window.last]
    cellv = {c: window_cell([r[c] for r in w]) for c in recs[0]}
    cols = ["block size"] + [f"{m[0]}/{m[1]}" for m in spec.LAT_MIXES]

    def table(what, key):
        return {"title": f"LAT: {what} [ms], measurement window (rounds {ss.window.first}-{ss.window.last})",
                "columns": cols, "rows": [[spec.bs_label(b)] + [_ms(cellv[spec.cell_name(m, b)][key])
                                                               for m in spec.LAT_MIXES] for b in spec.LAT_BS]}
    few = [c for c, v in cellv.items() if v["five_nines_method"].startswith("too few")]
    t5 = table("99.999 % response time", "five_nines_us")
    t5["note"] = ("five nines by nearest rank; " + (f"cells with too few IOs for a value apart from the maximum "
                  f"(<= 100,000 in the window): {', '.join(few)}" if few else "every cell has > 100,000 IOs: "
                  "estimated from per-interval maxima (see summary)"))
    tables = [ss_table("LAT (4 KiB 0/100 ART, ms)", ss, "ms"), table("average response time", "art_us"), t5,
              table("maximum response time", "max_us")]
    series = {"pts_lat_ss": ss_series([r[track]["art_us"] / 1e3 for r in recs], ss)}
    figures = {"cells": cellv, "too_few_ios_for_five_nines": few, "interval_s": interval}
    return Outcome(figures, ss.as_dict(), tables, ss_hints("pts_lat_ss", "LAT: 4 KiB 0/100 ART", "ms"), series=series)


def run_wsat(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    cap = rn.target.capacity_bytes
    text = spec.random_cells_text([((0, 100), spec.WSAT_BS)], s.round_s, s.ar, s.threads, s.qd, "PTS WSAT sample")
    name = spec.cell_name((0, 100), spec.WSAT_BS)
    recs, written, elapsed, k = [], 0, 0.0, 0
    while written < s.wsat_capacities * cap and elapsed < s.wsat_max_s:
        k += 1
        rec = rn.step(f"round_{k}", lambda k=k: rn.groups(text, f"WSAT sample {k}"))[name]
        recs.append(rec)
        written += rec["bytes"]
        elapsed += rec["duration_s"]
    t_end = np.cumsum([r["duration_s"] for r in recs])
    gb = np.cumsum([r["bytes"] for r in recs]) / 1e9
    series = {"t_s": t_end, "t_min": t_end / 60, "iops": np.array([r["iops"] for r in recs]),
              "gb_written": gb, "drive_fills": gb * 1e9 / cap,
              "art_ms": np.array([np.nan if r["art_us"] is None else r["art_us"] / 1e3 for r in recs]),
              "p99_99_ms": np.array([np.nan if r["p99_99_us"] is None else r["p99_99_us"] / 1e3 for r in recs]),
              "max_ms": np.array([np.nan if r["max_us"] is None else r["max_us"] / 1e3 for r in recs])}
    last = recs[-5:]
    ss = steady.detect([r["iops"] for r in recs][-5:]) if len(recs) >= 5 else None
    figures = {"samples": len(recs), "fob_iops": recs[0]["iops"] if recs else None,
               "final_iops": float(np.mean([r["iops"] for r in last])) if last else None,
               "written_bytes": int(written), "drive_fills": written / cap, "time_s": elapsed,
               "stopped_by": "capacity" if written >= s.wsat_capacities * cap else "time limit",
               "last_5_samples_criteria": ss.as_dict() if ss else None}
    charts = [Chart("pts_wsat", x, (Line("iops", "IOPS", "IOPS"),), f"WSAT: IOPS per sample vs {lbl}", xl, "IOPS",
                    label=f"WSAT vs {lbl}", kind="scatter", logy=True, file=file)
              for x, lbl, xl, file in (("t_min", "time", "time (min)", None),
                                       ("gb_written", "GB written", "written (GB)", "pts_wsat"),
                                       ("drive_fills", "drive fills", "user capacities written", None))]
    charts.append(Chart("pts_wsat", "t_min", tuple(Line(c, lbl, "ms") for c, lbl in (
        ("art_ms", "average"), ("p99_99_ms", "99.99 %"), ("max_ms", "maximum"))),
        "WSAT: response times per sample", "time (min)", "ms", label="WSAT response times", logy=True))
    tables = [{"title": "WSAT", "columns": ["figure", "value"], "rows": [
        ["samples", len(recs)], ["sample length (s)", s.round_s], ["FOB IOPS (first sample)", figures["fob_iops"]],
        ["IOPS, mean of the last 5 samples", figures["final_iops"]], ["GB written", written / 1e9],
        ["drive fills", written / cap], ["stopped by", figures["stopped_by"]]]}]
    return Outcome(figures, None, tables, [c.hint() for c in charts], series={"pts_wsat": series}, charts=charts)


def run_hir(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    rn.wipc()
    text = spec.random_cells_text([((0, 100), spec.WSAT_BS)], s.round_s, s.ar, s.threads, s.qd, "PTS HIR pre-writes")
    name = spec.cell_name((0, 100), spec.WSAT_BS)
    recs, ss = rn.rounds("pre_", text, "HIR pre-writes", lambda r: r[name]["iops"], copied=_copied(name))
    baseline = ss.window.average
    parts, figures = [], {"baseline_iops": baseline, "waits": {}}
    for wait in spec.HIR_WAITS_S:
        for phase, runtime, think in (("access", s.hir_cycles * (spec.HIR_ACCESS_S + wait), wait),
                                      ("return", s.hir_return_s, None)):
            key = f"w{wait}_{phase}"
            t = spec.hir_text(key, runtime, s.ar, s.threads, s.qd, think)

            def run(t=t, key=key):
                out, ser = rn.groups(t, f"HIR wait {key}", keep_series=True)
                return out[key], ser[key]
            rec, ser = rn.step(key, run, series_name=f"pts_hir_{key}")
            parts.append((key, ser))
            w = figures["waits"].setdefault(str(wait), {})
            if phase == "access":
                busy = s.hir_cycles * spec.HIR_ACCESS_S
                w["access_iops"] = rec["ios"] / busy if busy else None  # IOs per second of writing
                w["access_vs_baseline"] = w["access_iops"] / baseline if baseline else None
            else:
                w["return_iops"] = rec["iops"]
    comb = engine.combine(parts)
    series = {"pts_hir": {"t_s": comb["t_s"], "iops": comb["iops"], "group": comb["group"]}}
    rows = [[f"{w} s", v.get("access_iops"), v.get("access_vs_baseline"), v.get("return_iops")]
            for w, v in figures["waits"].items()]
    tables = [ss_table("HIR pre-writes (RND 4 KiB W IOPS)", ss, "IOPS"),
              {"title": f"HIR: IOPS while writing (5 s of each {s.hir_cycles} cycles) vs the steady-state baseline "
                        f"({baseline:,.0f} IOPS)", "columns": ["wait state", "IOPS while writing", "x baseline",
                                                              f"IOPS over the {s.hir_return_s:g} s return"],
               "rows": rows}]
    plot = [{"series": "pts_hir", "x": "t_s", "y": [{"series": "pts_hir", "y": "iops", "label": "IOPS", "unit": "IOPS"}],
             "kind": "scatter", "logy": True, "title": "HIR: IOPS per second through the wait states (5, 10, 15, 25, 50 s) "
             "and their returns", "label": "HIR time line", "xlabel": "time (s)", "ylabel": "IOPS"}]
    plot += ss_hints("pts_hir_ss", "HIR: pre-writes", "IOPS")
    series["pts_hir_ss"] = ss_series([r[name]["iops"] for r in recs], ss)
    return Outcome(figures, ss.as_dict(), tables, plot, series=series)


def run_xsr(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    parts, figures = [], {"groups": [], "hours": list(s.xsr_hours), "hours_why": spec.XSR_HOURS_WHY}
    for i, ((pattern, bs), hours) in enumerate(zip(spec.XSR_GROUPS, s.xsr_hours), start=1):
        key = f"ag{i}_{'seq' if pattern == 'write' else 'rnd'}{bs // 1024}k"
        text = spec.xsr_text(key, pattern, bs, hours * 3600, s.ar)

        def run(text=text, key=key):
            out, ser = rn.groups(text, f"XSR access group {key}", interval_s=10.0, keep_series=True)
            return out[key], ser[key]
        rec, ser = rn.step(key, run, series_name=f"pts_xsr_{key}")
        parts.append((key, ser))
        mbps = np.asarray(ser["mbps"], float)
        tail = mbps[int(len(mbps) * 0.9):]
        final = float(tail.mean()) if len(tail) else None
        near = np.nonzero(np.abs(mbps - final) <= 0.1 * final)[0] if final else []
        figures["groups"].append({"group": key, "hours": hours, "mbps": rec["mbps"], "iops": rec["iops"],
                                  "first_10min_mbps": float(mbps[:60].mean()) if len(mbps) else None,
                                  "final_10pct_mbps": final,
                                  "recovery_s": float(near[0] * 10.0) if len(near) else None})
    comb = engine.combine(parts)
    series = {"pts_xsr": {"t_h": comb["t_s"] / 3600, "mbps": comb["mbps"], "iops": comb["iops"], "group": comb["group"]}}
    rows = [[g["group"], g["hours"], g["mbps"], g["first_10min_mbps"], g["final_10pct_mbps"], g["recovery_s"]]
            for g in figures["groups"]]
    tables = [{"title": "XSR: access groups at 1 thread x QD32", "columns": [
        "access group", "hours", "MB/s mean", "MB/s first 10 min", "MB/s last 10 %",
        "s until within 10 % of the last 10 %"], "rows": rows, "note": spec.XSR_HOURS_WHY}]
    plot = [{"series": "pts_xsr", "x": "t_h", "y": [{"series": "pts_xsr", "y": "mbps", "label": "MB/s", "unit": "MB/s"}],
             "kind": "line", "title": "XSR: MB/s per 10 s through SEQ 1024 KiB W -> RND 8 KiB W -> SEQ 1024 KiB W",
             "label": "XSR time line", "xlabel": "time (h)", "ylabel": "MB/s"}]
    return Outcome(figures, None, tables, plot, series=series)


def run_cbw(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    rn.wipc()
    text = spec.ecw_text(s.round_s, s.ar, s.threads, s.qd)
    recs, ss = rn.rounds("", text, "CBW/ECW", lambda r: r["ecw"]["iops"], copied=_copied("ecw"))
    win = window_cell([r["ecw"] for r in recs[ss.window.first - 1:ss.window.last]])
    tables = [ss_table("CBW/ECW (IOPS)", ss, "IOPS"), {"title": "CBW/ECW: measurement window", "columns": [
        "figure", "value"], "rows": [["IOPS", win["iops"]], ["MB/s", win["mbps"]], ["read IOPS", win["read_iops"]],
                                     ["write IOPS", win["write_iops"]], ["ART (ms)", _ms(win["art_us"])],
                                     ["99.999 % (ms)", _ms(win["five_nines_us"])], ["max (ms)", _ms(win["max_us"])]]}]
    series = {"pts_cbw_ss": ss_series([r["ecw"]["iops"] for r in recs], ss)}
    return Outcome({"window": win}, ss.as_dict(), tables, ss_hints("pts_cbw_ss", "CBW/ECW: IOPS", "IOPS"),
                   series=series)


def run_dirth(rn: Runner) -> Outcome:
    s = rn.s
    rn.purge()
    rn.wipc()
    top = (spec.DIRTH_THREADS[0], spec.DIRTH_QDS[0])
    text = spec.dirth_text([top], s.round_s, s.ar, s.dirth_bs_bytes, s.dirth_read_pct)
    tk = f"t{top[0]}q{top[1]}"
    recs, ss = rn.rounds("pc_", text, f"DIRTH preconditioning {top[0]}x{top[1]}", lambda r: r[tk]["iops"],
                         copied=_copied(tk))
    points = {}
    for t in spec.DIRTH_THREADS:
        for q in spec.DIRTH_QDS:
            key = f"t{t}q{q}"
            ptext = spec.dirth_text([(t, q)], s.round_s, s.ar, s.dirth_bs_bytes, s.dirth_read_pct)
            points[key] = {"threads": t, "qd": q, **rn.step(key, lambda p=ptext: rn.groups(p, "DIRTH point"))[key]}
    ok = {k: p for k, p in points.items() if p["art_us"] is not None and p["art_us"] / 1e3 < s.dirth_art_limit_ms}
    max_key = max(ok, key=lambda k: ok[k]["iops"]) if ok else None
    min_key = "t1q1"
    mid_key = None
    if max_key:
        half = (points[max_key]["iops"] + points[min_key]["iops"]) / 2
        mid_key = min(points, key=lambda k: abs(points[k]["iops"] - half))
    sel = {"max": max_key, "mid": mid_key, "min": min_key}
    order = sorted(points, key=lambda k: points[k]["iops"])
    curve = {"iops": np.array([points[k]["iops"] for k in order])}
    for t in spec.DIRTH_THREADS:
        curve[f"art_ms_t{t}"] = np.array([points[k]["art_us"] / 1e3 if points[k]["threads"] == t and
                                          points[k]["art_us"] is not None else np.nan for k in order])
    qlabels = ("p1", "p50", "p90", "p99", "p99.9", "p99.99", "max")
    nines = np.array([-math.log10(1 - q) if q < 1 else 5.0 for q in (0.01, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0)])
    hist = {"nines": nines}
    for what, k in sel.items():
        if k:
            qs = points[k]["quantiles_us"]
            hist[f"{what}_ms"] = np.array([np.nan if qs.get(q) is None else qs[q] / 1e3 for q in qlabels])
    grid_rows = [[f"{t} threads"] + [points[f"t{t}q{q}"]["iops"] for q in spec.DIRTH_QDS] for t in spec.DIRTH_THREADS]
    tables = [ss_table(f"DIRTH preconditioning at {top[0]} x {top[1]} (IOPS)", ss, "IOPS"),
              {"title": "DIRTH: IOPS, threads down, QD across", "columns": ["threads"] + [f"QD{q}" for q in spec.DIRTH_QDS],
               "rows": grid_rows},
              {"title": f"DIRTH: the maximum (highest IOPS with ART < {s.dirth_art_limit_ms:g} ms), middle and minimum "
                        "points", "columns": ["point", "threads x QD", "IOPS", "ART (ms)", "99.99 % (ms)", "max (ms)"],
               "rows": [[w, f"{points[k]['threads']} x {points[k]['qd']}" if k else "n/a",
                         points[k]["iops"] if k else None, _ms(points[k]["art_us"]) if k else None,
                         _ms(points[k]["p99_99_us"]) if k else None, _ms(points[k]["max_us"]) if k else None]
                        for w, k in sel.items()]},
              {"title": "DIRTH: response-time distribution at the three points (ms at each quantile)",
               "columns": ["quantile"] + [w for w, k in sel.items() if k],
               "rows": [[q] + [hist[f"{w}_ms"][i] for w, k in sel.items() if k] for i, q in enumerate(qlabels)],
               "note": "the simulator exposes quantiles (p1 ... p99.99, max), not every bin of its histogram"}]
    plot = [{"series": "pts_dirth_curve", "x": "iops", "y": [
        {"series": "pts_dirth_curve", "y": f"art_ms_t{t}", "label": f"{t} threads", "unit": "ms"}
        for t in spec.DIRTH_THREADS], "kind": "scatter", "logy": True, "title": "DIRTH: average response time vs IOPS",
        "label": "DIRTH IOPS vs ART", "xlabel": "IOPS", "ylabel": "ART (ms)"},
        {"series": "pts_dirth_hist", "x": "nines", "y": [
            {"series": "pts_dirth_hist", "y": f"{w}_ms", "label": f"{w} point", "unit": "ms"} for w, k in sel.items() if k],
         "kind": "line", "logy": True, "title": "DIRTH: response time at each quantile (x: nines, 1 = 90 %, 4 = 99.99 %, "
         "5 = max)", "label": "DIRTH response times", "xlabel": "nines", "ylabel": "ms"}]
    plot += ss_hints("pts_dirth_ss", "DIRTH: preconditioning", "IOPS")
    series = {"pts_dirth_curve": curve, "pts_dirth_hist": hist,
              "pts_dirth_ss": ss_series([r[tk]["iops"] for r in recs], ss)}
    figures = {"points": points, "selected": sel, "art_limit_ms": s.dirth_art_limit_ms,
               "pattern": f"RND {spec.bs_label(s.dirth_bs_bytes)} {s.dirth_read_pct}/{100 - s.dirth_read_pct}"}
    return Outcome(figures, ss.as_dict(), tables, plot, series=series)


RUNNERS = {"iops": run_iops, "tp": run_tp, "lat": run_lat, "wsat": run_wsat, "hir": run_hir, "xsr": run_xsr,
           "cbw": run_cbw, "dirth": run_dirth}
