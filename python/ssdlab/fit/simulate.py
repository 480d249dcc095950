"""One candidate drive, simulated: the measured tests repeated on the simulator, as the test
procedures plan them (same phases, span, queue depth, block size, interval), without writing
a results folder. :func:`evaluate` is what the process pool and the dask workers run: a
top-level function of plain, picklable values.

``--scale F`` (consistency and fill results): the candidate is simulated as its scaled copy
(:class:`ssdlab.fit.space.Scaling`: blocks of F times the pages, F times the capacity) and
the test is repeated on the copy's clock: F times the duration, the interval and the pause,
so as many drive writes in as many intervals. A scaled consistency series' times are
divided by F (the measured clock); a fill is compared by share of the span written. ``run``
results are always simulated at full capacity (a job file may address absolute offsets and
sizes).
"""
from __future__ import annotations

import time
import traceback

import numpy as np

def simulate_one(profile, seed: int, repro: dict, scale: float) -> dict:
    """Runs one measured test's reproduction on a fresh drive of ``profile``; returns the
    simulated series the distance needs (see :mod:`ssdlab.fit.distance`)."""
    from ..targets.sim import SimTarget

    target = SimTarget(profile, seed)
    test = repro["test"]
    if test == "consistency":
        return _consistency(target, repro, scale, seed)
    if test == "fill":
        return _fill(target, repro, scale, seed)
    if test == "run":
        return _run(target, repro, seed)
    raise ValueError(f"cannot simulate a {test!r} test")


def _consistency(target, repro: dict, scale: float, seed: int) -> dict:
    import dataclasses

    from ..procedures import consistency

    interval = float(repro["interval_s"]) * scale
    params = consistency.ConsistencyParams(span_pct=repro["span_pct"], duration_s=repro["duration_s"] * scale,
                                           qd=repro["qd"],
                                           bs_bytes=repro["bs_bytes"], seed=seed)
    fill, rand = consistency.plan(target, params)
    target.purge()
    target.run_phase(fill)
    r = target.run_phase(dataclasses.replace(rand, interval_s=interval))
    s = r.series
    return {"t_s": np.asarray(s["t_s"], float) / scale, "iops": np.asarray(s["iops"], float),
            "write_amplification": r.totals.get("write_amplification")}


def _fill(target, repro: dict, scale: float, seed: int) -> dict:
    from ..procedures import fill as fillmod

    params = fillmod.FillParams(span_pct=repro["span_pct"], bs_bytes=repro["bs_bytes"], qd=repro["qd"],
                                interval_s=repro["interval_s"] * scale, pause_s=repro["pause_s"] * scale,
                                burst_pct=repro["burst_pct"], min_phase_pct=repro["min_phase_pct"], seed=seed)
    target.purge()
    out: dict = {}
    for job in fillmod.plan(target, params):
        r = target.run_phase(job)
        if job.name in ("fill", "burst"):
            s = r.series
            keep = {k: np.asarray(s[k], float) for k in ("t_s", "mbps", "dt_s", "write_lat_p50_us") if k in s}
            out[job.name] = keep
    out["span_bytes"] = fillmod.plan(target, params)[0].span_bytes
    return out


def _run(target, repro: dict, seed: int) -> dict:  # noqa: ARG001 - the target carries the seed
    from ..procedures import run as runmod
    from ..targets.base import JobSpec
    from ..workload import engine, fiojob

    workload = fiojob.parse_job_text(repro["job_text"], source=repro.get("job_source", "job.fio"))
    steps = target.plan_workload(workload, float(repro["interval_s"]))[: int(repro["groups"])]
    if repro.get("fill"):
        cap = target.capacity_bytes // runmod.FILL_BS_BYTES * runmod.FILL_BS_BYTES
        target.run_phase(JobSpec("fill", "write", bs_bytes=runmod.FILL_BS_BYTES, qd=32, span_bytes=cap))
    groups, parts = [], []
    for step in steps:
        r = engine.run_group(target, workload, step, progress=False)
        groups.append(engine.group_summary(step, r))
        parts.append((step.name, r.series))
    series = engine.combine(parts)
    keep = {k: v for k, v in series.items() if k in ("t_s", "group") or k.endswith("_iops")}
    return {"groups": groups, "series": keep}


def evaluate(task: dict) -> dict:
    """Simulates one candidate (``task``: ``index``, ``base`` profile, ``seed``, and ``runs``:
    per measured folder its ``repro``, profile overrides ``sets`` and ``scale``). Returns
    ``{"index", "ok", "outputs", "error", "wall_s"}``; a failure is returned, not raised, so
    one bad candidate costs the search nothing else."""
    from .. import results
    from ..profiles import load_profile

    t0 = time.perf_counter()
    try:
        outputs = []
        # simulated in the fit's own process, a candidate's phases would otherwise be
        # journalled (an fsync each) into the fit's folder as the run going on
        with results.outside_any_run():
            for run in task["runs"]:
                profile = load_profile(task["base"], run["sets"])
                outputs.append(simulate_one(profile, int(task["seed"]), run["repro"], float(run["scale"])))
        return {"index": task["index"], "ok": True, "outputs": outputs, "error": None,
                "wall_s": time.perf_counter() - t0}
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001 - reported in the history, with the candidate
        last = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
        where = f" ({last.filename.rsplit('/', 1)[-1]}:{last.lineno})" if last else ""
        return {"index": task["index"], "ok": False, "outputs": None, "error": f"{type(e).__name__}: {e}{where}",
                "wall_s": time.perf_counter() - t0}
