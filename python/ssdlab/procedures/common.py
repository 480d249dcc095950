"""Pieces shared by procedures: spans, phase runner with progress, results bookkeeping."""
from __future__ import annotations

import math
import sys

from .. import analysis, report, results
from ..errors import UserError
from ..progress import phase_bar, step
from ..targets.base import FIO_JOBS, SIMULATED, JobSpec, PhaseResult, Target
from ..units import human_size
from .declare import as_summary, metrics_by_test

FILL_BS_BYTES = 128 * 1024


class Interrupted(Exception):
    """A phase was cut short, by Ctrl-C / SIGTERM or because the target failed (``error``,
    from :attr:`PhaseResult.error`); partial results were kept."""

    def __init__(self, result: PhaseResult):
        super().__init__(f"phase {result.job.name!r} " + ("failed" if result.error else "interrupted"))
        self.result = result
        self.error: str | None = result.error


class PhaseFailed(UserError):
    """A run stopped because its target failed; what was measured is kept, marked incomplete.
    The message is the target's (target, phase, job file, the tool's own error line)."""


def failure_of(e: BaseException) -> str | None:
    """Why a run stopped: the target's error for a failed phase, None for Ctrl-C/SIGTERM."""
    return getattr(e, "error", None)


def describe_target(summary: dict, target: Target) -> None:
    """Adds the target's description to a summary: ``target_info`` and, for the simulator,
    the resolved ``profile`` and derived ``geometry`` at the top level (what reports show)."""
    desc = target.describe()
    if "profile" in desc:
        summary["profile"] = desc["profile"]
        summary["geometry"] = desc.get("geometry")
    summary["target_info"] = desc


def base_summary(test: str, target: Target, seed: int, argv: list[str] | None, **params) -> dict:
    """The head of every test's summary: test, target, capacity, seed, the test's parameters,
    run metadata (versions, command line, time) and the target's description. Also written
    to the current results folder's journal (:func:`ssdlab.results.record_head`)."""
    summary: dict = {"test": test, "target": target.name, "seed": seed,
                     "capacity_bytes": target.capacity_bytes, **params, **results.run_metadata(argv)}
    describe_target(summary, target)
    # Kept in the run's journal at once: a run killed before its summary.json is written
    # is still readable as this test on this target.
    results.record_head(summary)
    return summary


def declared_summary(test: str, target: Target, params, argv: list[str] | None) -> dict:
    """:func:`base_summary` with a declared test's parameters (:mod:`.declare`) as its fields."""
    fields = as_summary(params)
    seed = fields.pop("seed", 1)
    return base_summary(test, target, seed, argv, **fields)


def write_report(rd: results.ResultsDir, summary: dict) -> None:
    """``report.html`` of the folder, from what is on disk (an interrupted run shows what was
    measured, marked incomplete). A report that cannot be built costs the run nothing: the
    error goes to stderr and into the summary as ``report_error``. One that cannot be
    written (a full disk...) is a failure of the run like any results file:
    :class:`~ssdlab.results.ResultsWriteError` is raised."""
    try:
        report.write_report([rd.path], rd.path / report.REPORT_NAME, metrics=metrics_by_test())
    except results.ResultsWriteError:
        raise
    except Exception as e:  # noqa: BLE001 - the measurements are on disk already
        summary["report_error"] = f"{type(e).__name__}: {e}"
        rd.write_summary(summary)
        print(f"ssdlab: could not write {rd.path / report.REPORT_NAME}: {summary['report_error']}",
              file=sys.stderr, flush=True)


def mark_stopped(rd: results.ResultsDir, summary: dict, error: str | None = None) -> None:
    """Marks the folder and the summary incomplete, saying why: Ctrl-C/SIGTERM, or the
    target failed (``error``)."""
    rd.mark_incomplete(f"failed: {error}" if error else results.INTERRUPTED_REASON)
    summary["complete"] = False
    if error:
        summary["error"] = error


def raise_stopped(error: str | None) -> None:
    """Ends a stopped run: :class:`PhaseFailed` for a failure, else KeyboardInterrupt."""
    if error:
        raise PhaseFailed(error)
    raise KeyboardInterrupt


def stop(rd: results.ResultsDir, summary: dict, error: str | None = None) -> None:
    """Ctrl-C, or the target failed (``error``): mark the folder and the summary incomplete
    (:func:`mark_stopped`), keep what is there, and write report.html of it."""
    mark_stopped(rd, summary, error)
    rd.write_summary(summary)
    write_report(rd, summary)


def done_with_drive(target: Target, summary: dict) -> None:
    """The test has run its last phase: on the simulator, the drive's cumulative counters go
    into the summary and the drive's state is let go (:meth:`SimTarget.release
    <ssdlab.targets.sim.SimTarget.release>`: most of a run's memory) before the results are
    written, so writing them never adds to the run's peak memory."""
    if SIMULATED in target.capabilities:
        summary["counters"] = target.counters()
    target.release()


def end_run(rd: results.ResultsDir, summary: dict, complete: bool, error: str | None = None) -> None:
    """Writes the final summary and report.html: a complete run closes the folder; an
    interrupted one is marked incomplete (:func:`stop`) and KeyboardInterrupt is raised again,
    a failed one (``error``) raises :class:`PhaseFailed` with the error."""
    if not complete:
        stop(rd, summary, error)
        raise_stopped(error)
    summary["complete"] = True
    rd.write_summary(summary)
    write_report(rd, summary)
    rd.finish()


def purge(target: Target) -> dict:
    """:meth:`Target.purge <ssdlab.targets.base.Target.purge>`, with progress lines while it
    lasts (a format or a discard of a large drive takes minutes)."""
    with step(f"purging {target.name}"):
        return target.purge()


def span_bytes(capacity_bytes: int, span_pct: float, align_bytes: int = FILL_BS_BYTES) -> int:
    """The tested span: ``span_pct`` % of the capacity, rounded down to ``align_bytes``.
    A span below 100 % leaves the rest of the drive unwritten: extra spare area, exactly as
    the reviewers emulated it."""
    if not 0 < span_pct <= 100:
        raise UserError(f"--span {span_pct}: must be a percentage of the capacity in (0, 100]")
    span = int(capacity_bytes * span_pct / 100) // align_bytes * align_bytes
    if span < align_bytes:
        raise UserError(f"--span {span_pct}: leaves less than {align_bytes} bytes of a {capacity_bytes}-byte target")
    return span


def run_phase(target: Target, job: JobSpec, label: str | None = None, progress: bool | None = None) -> PhaseResult:
    """Runs one phase with a progress bar; raises :class:`Interrupted` if it was cut short."""
    with phase_bar(label or job.name, enabled=progress) as bar:
        result = target.run_phase(job, bar)
    if not result.complete:
        raise Interrupted(result)
    return result


def print_plan(target, jobs, what: str = "") -> None:
    """``--dry-run``: what would run (``what``: e.g. "review of "), and the fio job files for
    real targets."""
    print(f"# dry run: {what}{target.name} ({human_size(target.capacity_bytes)}); nothing is written")
    if target.refused:
        print(f"# WARNING: a real run would be refused: {target.refused}")
    if target.gate_overridden:
        print("# WARNING: --destroy-data lets the run write although the device " + "; ".join(target.gate_overridden))
    if FIO_JOBS in target.capabilities:
        purge = target.purge()
        print("# no purge (--purge none): the device is tested as it is" if purge["method"] == "none" else
              f"# purge ({purge['method']}) before the test and before each stage that starts from a fresh drive"
              + (f": {purge['command']}" if purge.get("command") else ""))
    print_jobs(target, jobs)


def print_jobs(target, jobs) -> None:
    """One line per phase, and its fio job file on real targets."""
    for job in jobs:
        print(f"# phase {job.name}: {job.pattern} bs={job.bs_bytes} qd={job.qd} offset={job.offset_bytes} "
              f"span={job.span_bytes} duration_s={job.duration_s} interval_s={job.interval_s}")
        if FIO_JOBS in target.capabilities:
            print(target.job_text(job))


def figure(v, spec: str = ",.0f", unit: str = "") -> str:
    """A figure for the console: ``v`` formatted by ``spec``, followed by its ``unit`` (``12 s``,
    ``3.5 MB/s``), or ``n/a`` with no unit when ``v`` is None or not finite."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    return format(v, spec) + (f" {unit}" if unit else "")


def endurance(summary: dict, capacity_bytes: int) -> dict | None:
    """The endurance projection (:func:`ssdlab.analysis.endurance_projection`) of a run that
    reached steady state (``steady_state_onset_s``): its host write rate
    (``host_write_bytes`` / ``duration_s``), kept up around the clock, at the steady-state
    write amplification when known, else the WA of the whole random-write phase. The rated
    P/E cycles and the raw NAND capacity come from a simulated drive's profile
    (``rated_pe_cycles``, ``geometry.physical_bytes``); a real drive has neither, so its
    days are n/a (and its NAND figures too without counters); ``unavailable`` says why.
    None without a steady state (:func:`no_endurance_reason` says why), or when the phase
    wrote nothing in no time (stopped at once)."""
    if summary.get("steady_state_onset_s") is None:
        return None
    if not summary.get("duration_s") or summary.get("host_write_bytes") is None:
        return None
    steady = summary.get("steady_state_write_amplification")
    wa = steady if steady is not None else summary.get("write_amplification")
    profile = summary.get("profile") or {}
    geometry = summary.get("geometry") or {}
    out = analysis.endurance_projection(summary["host_write_bytes"], summary["duration_s"], wa, capacity_bytes,
                                        profile.get("rated_pe_cycles"), geometry.get("physical_bytes"))
    out["write_amplification_basis"] = (
        f"steady state from {summary['steady_state_onset_s']:.0f} s" if steady is not None
        else "whole random-write phase" if wa is not None else None)
    return out


def no_endurance_reason(summary: dict, test: str = "") -> str | None:
    """Why a run has no endurance projection (None when it has one): a run that never
    reached steady state writes at fresh-out-of-box rates and write amplification, which do
    not last; ``test`` names a test that does not judge steady state at all."""
    if summary.get("endurance"):
        return None
    if test:
        return (f"ssdlab {test} does not judge steady state, and a write rate and write amplification measured before it "
                "do not last; `ssdlab consistency` projects endurance from its steady state")
    if summary.get("steady_state_onset_s") is None:
        return (f"no steady state was reached in {summary.get('duration_s') or 0:.0f} s of random writes: its write "
                "rate and write amplification are those of a drive still settling, which do not last; run longer "
                "(--duration)")
    return "the random-write phase wrote nothing"


def add_endurance(summary: dict, capacity_bytes: int, test: str = "") -> None:
    """Sets ``endurance`` (:func:`endurance`; None for a ``test`` that judges no steady
    state) and, without one, ``endurance_unavailable`` (:func:`no_endurance_reason`)."""
    summary["endurance"] = None if test else endurance(summary, capacity_bytes)
    reason = no_endurance_reason(summary, test)
    if reason is not None:
        summary["endurance_unavailable"] = reason


def show_endurance(e: dict | None, why: str | None = None) -> None:
    """The endurance lines a test prints at the end: the projection, or one line saying why
    there is none (``why``: the summary's ``endurance_unavailable``)."""
    if not e:
        if why:
            print(f"  endurance: not projected: {why}")
        return
    v = report.format_value
    nand = f"; NAND {v(e['nand_bytes_per_day'] / 1e12)} TB/day at WA {v(e['write_amplification'])} " \
           f"({e['write_amplification_basis']})" if e["nand_bytes_per_day"] is not None else ""
    print(f"  endurance: host {v(e['host_write_bytes_per_s'] / 1e6)} MB/s = {v(e['drive_writes_per_day'])} "
          f"drive writes/day{nand}")
    if e["days_until_rated_pe"] is None:
        print(f"    days to the rated P/E count n/a: {e['unavailable']}")
    else:
        print(f"    rated {e['rated_pe_cycles']:,} P/E cycles of the {e['pe_capacity_basis']} reached in "
              f"{v(e['days_until_rated_pe'])} days ({v(e['years_until_rated_pe'])} years, "
              f"{v(e['rated_total_host_bytes'] / 1e12)} TB of host writes)")

