"""Running a workload written in fio's language on any target: the engine under ``ssdlab run``
and the tests built on fio jobs.

The target plans a :class:`~ssdlab.workload.fiojob.Workload` (:meth:`Target.plan_workload
<ssdlab.targets.base.Target.plan_workload>`: checked against it before anything is written)
and runs each planned group (:meth:`Target.run_workload
<ssdlab.targets.base.Target.run_workload>`); :func:`run_group` runs one with a progress bar;
:func:`group_summary` and :func:`combine` turn the results into summary figures and one
series.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported in the functions that use them: `ssdlab --help` starts without them
    import numpy as np

from .. import columns
from ..progress import phase_bar
from ..targets.base import DIRECTIONS, PhaseResult, Target
from . import fiojob

#: Per-direction series columns that are 0 (not NaN) where a group did not run the direction.
_COUNT_SUFFIXES = ("_iops", "_mbps")


def run_group(target: Target, workload: fiojob.Workload, step, progress: bool | None = None,
              label: str | None = None) -> PhaseResult:
    """Runs a planned group of ``workload`` (a ``step`` of the target's ``plan_workload``) on
    the target with a progress bar."""
    label = label or f"group {step.index + 1}/{len(workload.groups)} {step.name}"
    with phase_bar(label, enabled=progress) as bar:
        return target.run_workload(step, bar)


def combine(parts: list[tuple[str, dict]]) -> dict[str, np.ndarray]:
    """Groups' series back to back: ``t_s`` from the start of the run, ``group`` (1-based);
    a column a group lacks is 0 for per-direction IOPS/MB/s and NaN otherwise."""
    import numpy as np

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
    on the simulator, write amplification, GC work, idle time and, on a drive with flexible
    data placement, each reclaim unit handle's (``fdp_handles``)."""
    t = r.totals
    duration = float(t.get("duration_s") or 0.0)
    g = {"name": step.name, "complete": r.complete, "duration_s": duration,
         "directions": direction_figures(t, duration), "latency_us": r.latency_us,
         "jobs": t.get("jobs"), "notes": r.notes}
    drive = [c.name for c in columns.drive_columns() if c.reading == "change"]  # the drive's totals
    for k in ("host_write_bytes", "host_read_bytes", *drive, "write_amplification", "idle_gaps", "idle_s",
              "fdp_handles"):
        if k not in g and t.get(k) is not None:
            g[k] = t[k]
    return g
