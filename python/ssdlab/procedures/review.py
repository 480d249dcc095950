"""The review suite on one target (SPEC: ``ssdlab review``; issue 4 deliverable 4): the tests
reviewers run in sequence and read together, in one results folder with one report.

Parts, in order (each a normal results folder inside OUT, written by its own procedure):

==========================  =====================================================================
``consistency``             :mod:`~ssdlab.procedures.consistency`, the whole span (seeds 001, 004)
``consistency-spare25``     the same over 75 % of the capacity: 25 % extra spare area (seed 004)
``recovery``                :mod:`~ssdlab.procedures.recovery`: clean sweep, torture, sweep, idle,
                            sweep, TRIM, sweep (seed 000; the sweeps are the LBA sweep test)
``used``                    :mod:`~ssdlab.procedures.used`: new / used / used after TRIM (seed 002)
==========================  =====================================================================

OUT gets ``<part>/`` for each part run, ``summary.json`` (``"test": "review"``; ``parts``:
one entry per part with its folder, status — ``done``, ``interrupted``, ``failed``, ``not run``
(after a Ctrl-C) or ``skipped`` (``--only``/``--skip``) —, ``complete``, the error of a failed
part and its headline figures; a ``tables`` entry of the same) and ``report.html``: the one
report of :mod:`ssdlab.report` over the part folders and this summary.

Each part opens the target anew (``reopen`` of a target from
:func:`ssdlab.targets.open_target`: a fresh simulator, fio's files in ``OUT/PART/fio``) and
starts with the purge its procedure does, so parts do not depend on each other: a part that
fails (a fio error, a target that cannot be opened) is recorded, the next one runs, and the
review ends with a :class:`~ssdlab.errors.UserError` naming the failed parts once everything
is written. Ctrl-C / SIGTERM stops the running part, which keeps what it
measured (its folder is marked incomplete), marks the parts not yet run, still writes
summary.json and report.html with what exists, and re-raises KeyboardInterrupt.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from .. import report, results
from ..errors import UserError
from ..targets.base import REOPEN, JobSpec, Target
from ..units import human_size
from . import consistency, recovery, used
from .common import describe_target, print_jobs
from .common import print_plan as print_header
from .declare import Test, by_summary_name, check, like, metrics_by_test, param
from .sweep import WHOLE_ZONES

#: Part names, in the order they run.
PARTS = ("consistency", "consistency-spare25", "recovery", "used")
#: What each part is, for --help, the plan and the report.
PART_TITLES = {
    "consistency": "performance consistency, whole span",
    "consistency-spare25": "performance consistency, 25 % extra spare area (span 75 %)",
    "recovery": "LBA sweeps: clean, after torture, after idle, after TRIM",
    "used": "4 KiB random write: new / used / used after TRIM",
}
#: The span of the spare-area variant [% of capacity].
SPARE_SPAN_PCT = 75.0


def parse_parts(text: str) -> tuple[str, ...]:
    """``--only``/``--skip``: part names separated by commas."""
    names = tuple(t.strip() for t in text.split(",") if t.strip())
    for n in names:
        if n not in PARTS:
            raise argparse.ArgumentTypeError(f"{n!r} is not a part: choose from {', '.join(PARTS)}")
    if not names:
        raise argparse.ArgumentTypeError(f"no part named: choose from {', '.join(PARTS)}")
    return names


def _default(params_cls, name: str):
    return next(f.default for f in dataclasses.fields(params_cls) if f.name == name)


#: The timed phases (field -> (test, its field, unit, option)): the parts' own defaults, or
#: shorter ones with --quick (options given explicitly still apply).
_TIMED = {"consistency_duration_s": (consistency.ConsistencyParams, "duration_s", "s", "--duration"),
          "torture_min": (recovery.RecoveryParams, "torture_min", "min", "--torture-min"),
          "idle_min": (recovery.RecoveryParams, "idle_min", "min", "--idle-min"),
          "used_duration_s": (used.UsedParams, "duration_s", "s", "--used-duration")}
FULL = {k: _default(cls, name) for k, (cls, name, _, _) in _TIMED.items()}
QUICK = {"consistency_duration_s": 600.0, "torture_min": 5.0, "idle_min": 10.0, "used_duration_s": 20.0}


def _timed(field: str, **changes):
    """A timed phase's option, as its part declares it, unset by default (see :data:`FULL`)."""
    cls, name, unit, flag = _TIMED[field]
    return like(cls, name, default=None, flag=flag,
                default_text=f"{FULL[field]:g} {unit}; --quick: {QUICK[field]:g} {unit}", **changes)


@dataclass(frozen=True)
class ReviewParams:
    """Options of the parts (the procedures' defaults unless given)."""

    quick: bool = param(False, "--quick", "shorter timed phases: "
                        + ", ".join(f"{flag} {QUICK[k]:g}" for k, (*_, flag) in _TIMED.items())
                        + " (options given explicitly still apply)", switch=True)
    #: The parts to run (``--only``) and those left out (``--skip``); :attr:`chosen` runs.
    parts: tuple[str, ...] = param(PARTS, "--only", "run only these parts, comma-separated: " + ", ".join(PARTS),
                                   parse=parse_parts, metavar="PART[,PART]", default_text="all")
    skip: tuple[str, ...] = param((), "--skip", "leave out these parts, comma-separated", parse=parse_parts,
                                  metavar="PART[,PART]", default_text="none")
    #: Random-write time of each consistency part [s]; None: :data:`FULL` or :data:`QUICK`.
    consistency_duration_s: float | None = _timed(
        "consistency_duration_s", help="seconds of 4 KiB random writes at QD32 after the fill, per consistency part")
    #: Recovery: minutes of torture and of idle time.
    torture_min: float | None = _timed(
        "torture_min", help="minutes of 4 KiB random writes at QD32 on the full drive, done twice (before the "
        "after-torture sweep and again before the idle time; the review's second variant: 60)")
    idle_min: float | None = _timed("idle_min", help="minutes without host I/O before the after-idle sweep")
    #: Recovery sweeps: zones, and bytes per zone (-1, the default: whole zones; None: the
    #: sweep's default sample).
    zones: int = like(recovery.RecoveryParams, "zones")
    zone_bytes: int | None = like(recovery.RecoveryParams, "zone_bytes")
    #: Used: seconds of random writes per state; random-write bytes that make the drive used
    #: (None: ``dirty_spans`` times the span).
    used_duration_s: float | None = _timed(
        "used_duration_s", help="seconds of 4 KiB random writes at QD32 per state: new, used, used after TRIM")
    dirty_bytes: int | None = like(used.UsedParams, "dirty_bytes")
    dirty_spans: float = like(used.UsedParams, "dirty_spans")
    #: IOPS interval of every part's random writes [s].
    interval_s: float = like(consistency.ConsistencyParams, "interval_s")
    seed: int = param(1, None, "random seed")

    @property
    def chosen(self) -> tuple[str, ...]:
        """The parts to run, in order."""
        return tuple(n for n in PARTS if n in self.parts and n not in self.skip)

    def resolved(self) -> "ReviewParams":
        """These parameters with every unset timed phase at its default (``--quick``'s or the part's)."""
        table = QUICK if self.quick else FULL
        return replace(self, **{k: v for k, v in table.items() if getattr(self, k) is None})

    def check(self) -> None:
        unknown = [p for p in self.parts + self.skip if p not in PARTS]
        if unknown:
            raise UserError(f"unknown part {unknown[0]!r}: the parts are {', '.join(PARTS)}")
        if not self.chosen:
            raise UserError("--only/--skip leave no part to run; the parts are " + ", ".join(PARTS))
        check(self)


@dataclass
class Part:
    name: str
    module: Any
    params: Any
    title: str = ""


def parts(p: ReviewParams) -> list[Part]:
    """The parts to run, in order, with their procedure and its parameters."""
    p.check()
    p = p.resolved()
    out = []
    for name in p.chosen:
        if name.startswith("consistency"):
            span = SPARE_SPAN_PCT if name == "consistency-spare25" else 100.0
            params = consistency.ConsistencyParams(span_pct=span, duration_s=p.consistency_duration_s,
                                                   interval_s=p.interval_s, seed=p.seed)
            mod = consistency
        elif name == "recovery":
            params = recovery.RecoveryParams(torture_min=p.torture_min, idle_min=p.idle_min, zones=p.zones,
                                             zone_bytes=p.zone_bytes, interval_s=p.interval_s, seed=p.seed)
            mod = recovery
        else:
            params = used.UsedParams(duration_s=p.used_duration_s, dirty_bytes=p.dirty_bytes,
                                     dirty_spans=p.dirty_spans, interval_s=p.interval_s, seed=p.seed)
            params.check()
            mod = used
        out.append(Part(name, mod, params, PART_TITLES[name]))
    return out


def describe_part(part: Part) -> str:
    """One line: what the part does, with its durations."""
    q = part.params
    if part.module is consistency:
        return (f"span {q.span_pct:g} %: sequential fill, then {q.bs_bytes // 1024} KiB random write QD{q.qd} "
                f"for {q.duration_s:g} s")
    if part.module is recovery:
        zb = ("whole zones" if q.zone_bytes == WHOLE_ZONES else "default sample" if q.zone_bytes is None
              else human_size(q.zone_bytes))
        return (f"sweeps of {q.zones} zones ({zb}); torture {q.torture_min:g} min; idle {q.idle_min:g} min; "
                f"{'re-torture before idle; ' if q.retorture else ''}TRIM")
    dirty = human_size(q.dirty_bytes) if q.dirty_bytes is not None else f"{q.dirty_spans:g}x the span"
    return (f"{q.bs_bytes // 1024} KiB random write QD{q.qd} for {q.duration_s:g} s per state; "
            f"used = fill + {dirty} of random writes")


def plan(target: Target, p: ReviewParams) -> list[tuple[Part, list[JobSpec]]]:
    """Every part with its phases; raises :class:`UserError` for options that do not fit
    the target (before anything runs)."""
    return [(part, part.module.plan(target, part.params)) for part in parts(p)]


def print_plan(target: Target, p: ReviewParams) -> None:
    """``--dry-run``: the parts, their folders in OUT and every phase (and fio job files)."""
    planned = plan(target, p)
    print_header(target, [], what="review of ")
    skipped = [n for n in PARTS if n not in p.chosen]
    print(f"# {len(planned)} part{'s' if len(planned) != 1 else ''}: " + ", ".join(part.name for part, _ in planned)
          + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
    for i, (part, jobs) in enumerate(planned, 1):
        print(f"# part {i}/{len(planned)} {part.name} -> OUT/{part.name}/: {part.title}")
        print(f"#   {describe_part(part)}; purge first")
        print_jobs(target, jobs)
    print(f"# then OUT/summary.json and OUT/{report.REPORT_NAME} (all parts in one report)")


# --------------------------------------------------------------------------- headlines

def _n(v, spec=",.0f") -> str:
    return "n/a" if v is None else format(v, spec)


def headline(name: str, s: dict | None) -> tuple[str, dict]:
    """A one-line result of a part and its main figures, from the part's summary."""
    if not s:
        return "", {}
    if name.startswith("consistency"):
        m = {k: s.get(k) for k in ("iops_mean", "steady_state_iops_mean", "iops_p1", "zero_iops_seconds",
                                   "steady_state_onset_s", "write_amplification")}
        text = (f"IOPS mean {_n(m['iops_mean'])}, steady state {_n(m['steady_state_iops_mean'])}, "
                f"1st percentile {_n(m['iops_p1'])}, {_n(m['zero_iops_seconds'])} s at zero IOPS")
        if m["write_amplification"] is not None:
            text += f", write amplification {m['write_amplification']:.2f}"
        return text, m
    if name == "recovery":
        st = s.get("stages") or {}
        m = {f"{k}_write_mbps": st[k].get("write_mbps_mean") for k in st}
        parts_ = []
        for k, v in st.items():
            item = f"{v.get('label', k)} {_n(v.get('write_mbps_mean'), ',.1f')}"
            if k == "after_torture":
                m["after_torture_write_mbps_first_zones"] = v.get("write_mbps_first_zones")
                m["after_torture_write_mbps_last_zones"] = v.get("write_mbps_last_zones")
                item += (f" (first zones {_n(v.get('write_mbps_first_zones'), ',.1f')} -> last zones "
                         f"{_n(v.get('write_mbps_last_zones'), ',.1f')})")
            parts_.append(item)
        return ("sequential write MB/s: " + ", ".join(parts_)) if parts_ else "no sweep measured", m
    st = s.get("states") or {}
    m = {f"{k}_mbps": st[k].get("mbps") for k in st}
    items = []
    for k, v in st.items():
        pct = v.get("vs_new_pct")
        items.append(f"{v.get('label', k)} {_n(v.get('mbps'), ',.1f')}"
                     + ("" if pct is None or k == "new" else f" ({pct:.0f} % of new)"))
    return ("4 KiB random write MB/s: " + ", ".join(items)) if items else "nothing measured", m


# --------------------------------------------------------------------------- the run

def run(target: Target, p: ReviewParams, out: str | Path | results.ResultsDir, *, argv: list[str] | None = None,
        overwrite: bool = False, progress: bool | None = None, open_part: Callable[[Path], Target] | None = None,
        echo: Callable[[str], None] | None = None) -> dict:
    """Runs the parts into ``out`` and writes its summary.json and report.html; returns the
    summary. ``target`` (the one the plan was checked on) is closed; each part runs on
    ``open_part(part_dir)`` (default: ``target.reopen(part_dir / "fio")``, see
    :func:`ssdlab.targets.open_target`). Raises KeyboardInterrupt after writing what exists if
    interrupted, :class:`UserError` naming the failed parts if parts failed."""
    if open_part is None:
        if REOPEN not in target.capabilities:
            raise ValueError("review.run: give open_part, or a target from ssdlab.targets.open_target (it can reopen)")
        reopen = target.reopen

        def open_part(part_dir: Path) -> Target:
            return reopen(part_dir / "fio")
    target.close()
    say = echo or (lambda text: print(text, flush=True))
    todo = parts(p)
    p = p.resolved()
    rd = out if isinstance(out, results.ResultsDir) else results.ResultsDir(out, overwrite=overwrite)
    argv = list(sys.argv if argv is None else argv)
    summary: dict = {"test": "review", "title": "", "seed": p.seed,
                     "options": {k: v for k, v in asdict(p).items() if k not in ("parts", "skip")},
                     **results.run_metadata(argv)}
    entries = [{"part": n, "title": PART_TITLES[n], "dir": n, "status": "not run" if n in p.chosen else "skipped",
                "complete": False} for n in PARTS]
    by_name = {e["part"]: e for e in entries}
    summary["parts"] = entries
    t_start = time.perf_counter()
    interrupted = False
    current: dict | None = None
    target: Target | None = None
    try:
        for i, part in enumerate(todo, 1):
            entry = current = by_name[part.name]
            part_dir = rd.path / part.name
            say(f"[{i}/{len(todo)}] {part.name}: {part.title} -> {part_dir}/")
            say(f"      {describe_part(part)}")
            t0 = time.perf_counter()
            try:
                target = open_part(part_dir)
                _describe_target(summary, target)
                part_rd = results.ResultsDir(part_dir, overwrite=overwrite)
                try:
                    s = part.module.run(target, part.params, part_rd, argv=argv, progress=progress)
                except KeyboardInterrupt:
                    entry["status"] = "interrupted"
                    results.mark_incomplete(part_dir, results.INTERRUPTED_REASON)
                    raise
                entry["status"] = "done"
                entry["complete"] = bool(s.get("complete", True))
                entry["headline"], entry["metrics"] = headline(part.name, s)
                say(f"      done in {time.perf_counter() - t0:.1f} s: {entry['headline']}")
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001 - one part failing must not cost the others
                entry["status"] = "failed"
                entry["error"] = str(e) if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
                if part_dir.exists():
                    results.mark_incomplete(part_dir, f"failed: {entry['error']}")
                print(f"ssdlab review: part {part.name} failed: {entry['error']}", file=sys.stderr, flush=True)
            finally:
                entry["wall_s"] = round(time.perf_counter() - t0, 3)
                if target is not None:
                    try:
                        target.close()
                    finally:
                        target = None
            current = None
    except KeyboardInterrupt:
        interrupted = True
        if current is not None and current["status"] == "not run":
            current["status"] = "interrupted"
            if (rd.path / current["dir"]).exists():
                results.mark_incomplete(rd.path / current["dir"], results.INTERRUPTED_REASON)
        print(f"ssdlab review: interrupted during part {current['part'] if current else '?'}; "
              "the parts not started are marked 'not run'", file=sys.stderr, flush=True)
    summary["wall_s"] = round(time.perf_counter() - t_start, 3)
    _finish(rd, summary, interrupted, say)
    if interrupted:
        raise KeyboardInterrupt
    failed = summary["parts_failed"]
    if failed:
        raise UserError(f"review: part{'s' if len(failed) != 1 else ''} {', '.join(failed)} failed (see "
                        f"{rd.path / results.SUMMARY_NAME}); the other parts ran")
    return summary


def _describe_target(summary: dict, target: Target) -> None:
    if "target" in summary:
        return
    summary["target"] = target.name
    summary["capacity_bytes"] = target.capacity_bytes
    describe_target(summary, target)
    summary["title"] = f"ssdlab review: {target.name}"


def _finish(rd: results.ResultsDir, summary: dict, interrupted: bool, say: Callable[[str], None]) -> None:
    entries = summary["parts"]
    for e in entries:
        d = rd.path / e["dir"]
        e["folder_exists"] = d.is_dir() and ((d / results.SUMMARY_NAME).exists() or (d / results.INCOMPLETE_NAME).exists())
        if e["status"] in ("interrupted", "failed") and "headline" not in e and (d / results.SUMMARY_NAME).exists():
            try:  # what the part measured before it stopped
                e["headline"], e["metrics"] = headline(e["part"], results.read_summary(d))
            except (OSError, ValueError):
                pass
    ran = [e for e in entries if e["status"] != "skipped"]
    failed = [e["part"] for e in entries if e["status"] == "failed"]
    summary["part_dirs"] = [e["dir"] for e in ran if e["folder_exists"]]
    summary["parts_done"] = sum(e["status"] == "done" for e in entries)
    summary["parts_failed"] = failed
    complete = not interrupted and not failed and all(e["complete"] for e in ran)
    summary["complete"] = complete
    summary.setdefault("target", "unknown")
    summary["tables"] = [{
        "title": f"{summary.get('title') or 'ssdlab review'}: parts",
        "columns": ["part", "status", "complete", "folder", "result"],
        "rows": [[e["part"], e["status"] + (f": {e['error']}" if e.get("error") else ""),
                  "yes" if e["complete"] else "no", e["dir"] + "/" if e["folder_exists"] else "",
                  e.get("headline", "")] for e in entries],
    }]
    summary["report"] = report.REPORT_NAME
    if interrupted:
        rd.mark_incomplete(results.INTERRUPTED_REASON)
    elif failed:
        rd.mark_incomplete(f"part{'s' if len(failed) != 1 else ''} failed: {', '.join(failed)}")
    elif not complete:
        rd.mark_incomplete("a part did not complete")
    rd.write_summary(summary)
    try:
        dirs = [rd.path] + [rd.path / d for d in summary["part_dirs"]]
        path = report.write_report(dirs, rd.path / report.REPORT_NAME, title=summary.get("title") or None,
                                   metrics=metrics_by_test())
        say(f"report: {path}")
    except Exception as e:  # noqa: BLE001 - the measurements are on disk; say what went wrong
        summary["report_error"] = f"{type(e).__name__}: {e}"
        rd.write_summary(summary)
        print(f"ssdlab review: could not write {report.REPORT_NAME}: {summary['report_error']}", file=sys.stderr)
    if complete:
        rd.finish()


def show(s: dict) -> None:
    """The line printed at the end of a review."""
    ran = [e for e in s["parts"] if e["status"] != "skipped"]
    print(f"{s.get('target')}: {s['parts_done']} of {len(ran)} part{'s' if len(ran) != 1 else ''} done "
          "(one folder per part, summary.json, report.html)")


def parts_headline(s: dict, folder=None) -> list[tuple[str, str, object]]:
    """Each part's headline figures for ``ssdlab compare``, labelled with the part (read from
    its own folder)."""
    if folder is None:
        return []
    tests = by_summary_name()
    out: list[tuple[str, str, object]] = []
    for e in s.get("parts") or []:
        part = Path(folder) / (e.get("dir") or "")
        try:
            ps = results.read_summary(part)
        except (OSError, ValueError):
            continue
        t = tests.get(ps.get("test"))
        if t is not None and t.headline is not None:
            out += [(f"{e.get('name') or part.name}: {label}", unit, v) for label, unit, v in t.headline(ps, part)]
    return out


TEST = Test(
    name="review",
    help="the whole suite on one target: consistency (default and 25% spare), recovery (LBA sweeps), used vs new; "
         "one folder, one report",
    description="Run the review suite on one target, in order: " + "; ".join(f"{n}: {t}" for n, t in PART_TITLES.items())
                + ". Each part is a normal results folder OUT/PART/ (as the single commands write) and starts with "
                "a purge; OUT gets summary.json (the parts, their status and headline figures) and one report.html "
                "holding all of them. A part that fails is reported and the next one runs; the review then ends "
                "with an error naming the failed parts (exit status 2). Ctrl-C or SIGTERM stops the running part, "
                "keeps what it measured (marked incomplete), marks the remaining parts 'not run' and still writes "
                "summary.json and report.html (exit status 130). Time on a real drive: each consistency part a fill "
                "plus --duration; recovery two fills, 2 x --torture-min, --idle-min and four sweeps; used a fill, "
                "the dirty writes and 3 x --used-duration (hours in all; --quick shortens the timed phases). On "
                "the simulator (simulated time): minutes.",
    params=ReviewParams, plan=plan, run=run, show=show, headline=parts_headline, print_plan=print_plan)
