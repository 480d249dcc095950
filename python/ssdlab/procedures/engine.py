"""Running a workload written in fio's language on any target: the engine under ``ssdlab run``
and the tests built on fio jobs.

:func:`plan_groups` checks a :class:`~ssdlab.workload.fiojob.Workload` against the target
before anything is written (the simulator's groups, or fio's steps with the job's
``filename`` checked against the target); :func:`run_group` runs one group (the simulator
runs its jobs itself, a fio target runs the group's job file as written);
:func:`group_summary` and :func:`combine` turn the results into summary figures and one
series.
"""
from __future__ import annotations

import numpy as np

from ..progress import phase_bar
from ..targets.base import DIRECTIONS, JobSpec, PhaseResult, Target, WorkloadStep
from ..workload import fiojob, tofio, tosim

#: Per-direction series columns that are 0 (not NaN) where a group did not run the direction.
_COUNT_SUFFIXES = ("_iops", "_mbps")


def plan_groups(workload: fiojob.Workload, target: Target, interval_s: float) -> list:
    """What runs, checked against the target before anything is written: the simulator's
    groups (:class:`~ssdlab.workload.tosim.SimGroup`) or fio's steps."""
    if target.simulated:
        return tosim.sim_groups(workload, target.capacity_bytes, interval_s)
    path = getattr(target, "path", target.name)
    tofio.check_filename(workload, path, (target.name, getattr(target, "real_path", path)))
    steps = []
    for gi, group in enumerate(workload.groups):
        timed = [j.runtime_us / 1e6 for j in group if j.runtime_us]
        name = "+".join(dict.fromkeys(j.section for j in group))
        steps.append(WorkloadStep(name=name, interval_s=interval_s,
                                  duration_s=max(timed) if timed and all(j.time_based for j in group) else None))
    return steps


def not_applicable(workload: fiojob.Workload) -> list[str]:
    """The options not applicable to the simulator, one line each: job, option, why."""
    return [f"{job}: {o.text()} ({o.reason})" for job, o in workload.not_applicable()]


def run_group(target: Target, workload: fiojob.Workload, step, gi: int, progress: bool | None = None,
              label: str | None = None) -> PhaseResult:
    """Runs group ``gi`` of ``workload`` (its planned ``step``) on the target with a progress
    bar: the simulator runs the jobs, a fio target runs the group's job file."""
    label = label or f"group {gi + 1}/{len(workload.groups)} {step.name}"
    with phase_bar(label, enabled=progress) as bar:
        if target.simulated:
            if step.idle_before_s:
                target.run_phase(JobSpec("startdelay", "idle", duration_s=step.idle_before_s,
                                         interval_s=step.keys["interval_s"]))
            return target.run_workload({**step.keys, "name": step.name}, bar)
        return target.run_workload_group(step, workload, gi, bar)


def combine(parts: list[tuple[str, dict]]) -> dict[str, np.ndarray]:
    """Groups' series back to back: ``t_s`` from the start of the run, ``group`` (1-based);
    a column a group lacks is 0 for per-direction IOPS/MB/s and NaN otherwise."""
    parts = [(n, s) for n, s in parts if len(s.get("t_s", ()))]
    if not parts:
        return {"t_s": np.zeros(0), "group": np.zeros(0), "iops": np.zeros(0), "mbps": np.zeros(0)}
    cols = list(dict.fromkeys(c for _, s in parts for c in s if c != "t_s"))
    out: dict[str, list] = {"t_s": [], "group": []}
    start = 0.0
    for gi, (_, s) in enumerate(parts, start=1):
        t = np.asarray(s["t_s"], float)
        n = len(t)
        step = float(t[1] - t[0]) if n > 1 else float(np.asarray(s.get("dt_s", [1.0]))[0])
        out["t_s"].append(t + start)
        out["group"].append(np.full(n, gi))
        for c in cols:
            fill = 0.0 if c.endswith(_COUNT_SUFFIXES) else np.nan
            out.setdefault(c, []).append(np.asarray(s[c], float) if c in s else np.full(n, fill))
        end = float(t[-1] + (np.asarray(s["dt_s"])[-1] if "dt_s" in s else step)) if n else 0.0
        start += end
    return {c: np.concatenate(v) for c, v in out.items()}


def direction_figures(totals: dict, duration_s: float) -> dict:
    """Per direction that ran: IOs, bytes, mean IOPS and MB/s, latency percentiles [us]."""
    out = {}
    for d in DIRECTIONS:
        ios = totals.get(f"{d}_ios")
        if not ios:
            continue
        nbytes = totals.get(f"{d}_bytes") or 0
        out[d] = {"ios": int(ios), "bytes": int(nbytes),
                  "iops_mean": ios / duration_s if duration_s else None,
                  "mbps_mean": nbytes / duration_s / 1e6 if duration_s else None,
                  "latency_us": totals.get(f"{d}_latency_us") or {}}
    return out


def group_summary(step, r: PhaseResult) -> dict:
    """A group's figures for a summary: duration, per-direction figures, per-job totals and,
    on the simulator, write amplification, GC work and idle time."""
    t = r.totals
    duration = float(t.get("duration_s") or 0.0)
    g = {"name": step.name, "complete": r.complete, "duration_s": duration,
         "directions": direction_figures(t, duration), "latency_us": r.latency_us,
         "jobs": t.get("jobs"), "notes": r.notes}
    for k in ("host_write_bytes", "host_read_bytes", "nand_write_bytes", "write_amplification", "erases",
              "gc_copied_bytes", "idle_gaps", "idle_s"):
        if t.get(k) is not None:
            g[k] = t[k]
    return g
