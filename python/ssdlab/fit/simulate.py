"""One candidate drive, simulated: the measured tests repeated on the simulator, as the test
procedures plan them (same phases, span, queue depth, block size, interval), without writing
a results folder. :func:`evaluate` is what the process pool and the dask workers run: a
top-level function of plain, picklable values.

``--scale F`` (consistency and fill results): the simulated drive has F times the measured
capacity (same geometry per plane, fewer blocks) and a consistency test runs F times the
measured duration: the same number of drive writes, so the fresh-out-of-box phase and the
way to steady state take the same share of the run, while levels (IOPS, MB/s) and the GC
burst period (set by per-plane watermarks in blocks) stay what they are. Times from a scaled
simulation are multiplied by 1/F before they are compared. ``run`` results are always
simulated at full capacity (a job file may address absolute offsets and sizes).
"""
from __future__ import annotations

import time
import traceback

import numpy as np

#: A consistency run keeps at least this many intervals when scaled down.
MIN_SCALED_INTERVALS = 30


def simulate_one(profile, seed: int, repro: dict, scale: float) -> dict:
    """Runs one measured test's reproduction on a fresh drive of ``profile``; returns the
    simulated series the distance needs (see :mod:`ssdlab.fit.distance`)."""
    from ..targets.sim import SimTarget

    target = SimTarget(profile, seed)
    test = repro["test"]
    if test == "consistency":
        return _consistency(target, repro, scale, seed)
    if test == "fill":
        return _fill(target, repro, seed)
    if test == "run":
        return _run(target, repro, seed)
    raise ValueError(f"cannot simulate a {test!r} test")


def _consistency(target, repro: dict, scale: float, seed: int) -> dict:
    import dataclasses

    from ..procedures import consistency

    interval = float(repro["interval_s"])
    duration = max(repro["duration_s"] * scale, MIN_SCALED_INTERVALS * interval)
    params = consistency.ConsistencyParams(span_pct=repro["span_pct"], duration_s=duration, qd=repro["qd"],
                                           bs_bytes=repro["bs_bytes"], seed=seed)
    fill, rand = consistency.plan(target, params)
    target.purge()
    target.run_phase(fill)
    r = target.run_phase(dataclasses.replace(rand, interval_s=interval))
    s = r.series
    return {"t_s": np.asarray(s["t_s"], float) / scale, "iops": np.asarray(s["iops"], float),
            "write_amplification": r.totals.get("write_amplification")}


def _fill(target, repro: dict, seed: int) -> dict:
    from ..procedures import fill as fillmod

    params = fillmod.FillParams(span_pct=repro["span_pct"], bs_bytes=repro["bs_bytes"], qd=repro["qd"],
                                interval_s=repro["interval_s"], pause_s=repro["pause_s"],
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
    from ..procedures import engine, run as runmod
    from ..targets.base import JobSpec
    from ..workload import fiojob

    workload = fiojob.parse_job_text(repro["job_text"], source=repro.get("job_source", "job.fio"))
    steps = engine.plan_groups(workload, target, float(repro["interval_s"]))[: int(repro["groups"])]
    if repro.get("fill"):
        cap = target.capacity_bytes // runmod.FILL_BS_BYTES * runmod.FILL_BS_BYTES
        target.run_phase(JobSpec("fill", "write", bs_bytes=runmod.FILL_BS_BYTES, qd=32, span_bytes=cap, seed=seed))
    groups, parts = [], []
    for gi, step in enumerate(steps):
        r = engine.run_group(target, workload, step, gi, progress=False)
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
    from ..profiles import load_profile

    t0 = time.perf_counter()
    try:
        outputs = []
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
