"""``ssdlab fit``: the search for a simulated drive whose series match measured results.

:func:`run_fit` reads the measured folders (:mod:`.measured`), builds the search space
(:mod:`.space`), runs the optimizer (:mod:`.search`) whose candidates are simulated by
:mod:`.simulate` and scored by :mod:`.distance`, and writes the output folder
(:mod:`.output`). It sits beside the test procedures and the grid runner: it imports them and
what lies below, never the command line.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import profiles, results
from ..errors import ProfileError, UserError
from . import distance as dist
from . import search, space
from .measured import Measured, load_measured

#: Candidates that fit "about as well" as the best: distance within this of the best (0.05:
#: about 5 % typical error, about what separates two measurements of one drive), or within
#: this share of the best distance when that is larger.
NEAR_ABS, NEAR_REL = 0.05, 0.5
#: Keys whose values correlate at least this much (|Pearson r| in the unit cube) among the
#: near-best candidates trade off against each other: the data pins a combination.
TRADE_OFF_R = 0.8
#: Identifiability verdicts: spread of a key among those candidates [share of its range] and
#: the distance's local rise when the key alone moves by 10 % of its range.
PINNED_SPREAD, LOOSE_SPREAD = 0.15, 0.40
FLAT_SENSITIVITY = 0.005


@dataclass
class FitRun:
    """State of one fit: what is measured, the space, the evaluations so far."""

    measured: list[Measured]
    keys: list[space.Key]
    base: profiles.Profile
    base_spec: str
    seed: int
    scale: float
    evals: int
    refs: list[dict]
    caps: list[int]
    scales: list[float]
    spare_default: float
    rows: list[dict] = field(default_factory=list)
    cache: dict = field(default_factory=dict)
    used: int = 0
    best: dict | None = None
    #: The best candidate when the probe started (the probe moves its keys one at a time).
    probe_center: dict | None = None
    #: The base profile's values of the keys, in the unit cube: the first candidate.
    start: np.ndarray | None = None
    started: float = field(default_factory=time.perf_counter)

    # -- candidates ---------------------------------------------------------------------
    def values_at(self, u: np.ndarray) -> dict:
        return {k.name: k.value(x) for k, x in zip(self.keys, u)}

    def sets_for(self, values: dict) -> tuple[list[list[str]], dict]:
        spare = values.get(space.SPARE_KEY, self.spare_default)
        all_sets, realized = [], {}
        for cap in self.caps:
            sets, r = space.candidate_sets(self.keys, values, self.base.values, cap, spare)
            all_sets.append(sets)
            realized = realized or r
        return all_sets, realized

    def full_scale_sets(self, realized: dict) -> list[str]:
        """The best candidate on a drive of the measured capacity (fitted.toml)."""
        cap = self.measured[0].capacity_bytes // 4096 * 4096
        values = dict(realized)
        spare = values.get(space.SPARE_KEY, self.spare_default)
        sets, _ = space.candidate_sets(self.keys, values, self.base.values, cap, spare)
        return sets

    # -- scoring ------------------------------------------------------------------------
    def score(self, outputs: list[dict]) -> list[dict]:
        terms = []
        for m, ref, out, sc in zip(self.measured, self.refs, outputs, self.scales):
            if m.test == "consistency":
                t = dist.consistency_terms(ref, out["t_s"], out["iops"], 1.0 / sc)
            elif m.test == "fill":
                t = dist.fill_terms(ref, out["fill"], out.get("burst"), out["span_bytes"])
            else:
                t = dist.run_terms(ref, out["groups"])
            prefix = f"{m.label}:" if len(self.measured) > 1 else ""
            for x in t:
                x["term"] = prefix + x["term"]
                x["folder"] = str(m.folder)
            terms += t
        return terms


def _reference(m: Measured, scale: float) -> dict:
    if m.test == "consistency":
        return dist.consistency_reference(m.series["t_s"], m.series["iops"], m.repro["interval_s"])
    if m.test == "fill":
        span = m.summary.get("span_bytes") or m.capacity_bytes * m.repro["span_pct"] / 100
        return dist.fill_reference(m.series, m.extra.get("burst"), float(span), m.repro["fraction_written"],
                                   m.repro["min_phase_pct"])
    return dist.run_reference(m.extra["groups"])


def prepare(folders: list[str], key_specs: list[str], base: str = "default", seed: int = 1, scale: float = 1.0,
            evals: int = 100, warn=None) -> FitRun:
    """Reads and checks everything before anything runs: the folders, the base profile, the
    keys, the scaled drive. UserError naming the folder, file or key otherwise."""
    if not folders:
        raise UserError("fit: give at least one results folder")
    if not 0 < scale <= 1:
        raise UserError(f"--scale {scale:g}: must be in (0, 1]")
    measured = [load_measured(f) for f in folders]
    names = [m.label for m in measured]
    if len(set(names)) < len(names):  # term names are prefixed by folder name: keep them apart
        for i, m in enumerate(measured):
            m.label = f"{i + 1}-{m.label}"
    caps = {m.capacity_bytes for m in measured}
    if len(caps) > 1:
        raise UserError("fit: the folders were measured on drives of different capacities ("
                        + ", ".join(f"{m.folder}: {m.capacity_bytes:,} bytes" for m in measured)
                        + "); one fit is one drive: fit them separately")
    for m in measured:
        for w in m.warnings:
            (warn or _warn)(w)
    try:
        base_profile = profiles.load_profile(base)
    except ProfileError as e:
        raise UserError(f"--base {base}: {e}") from None
    keys = space.build_space(key_specs, sorted({m.test for m in measured}, key=measured_order))
    scales = [scale if m.test in ("consistency", "fill") else 1.0 for m in measured]
    if scale < 1 and all(m.test == "run" for m in measured):
        (warn or _warn)("--scale applies to consistency and fill results; run results are simulated at full capacity")
    caps_sim = [space.sim_capacity_bytes(m.capacity_bytes, s) for m, s in zip(measured, scales)]
    geo = space.Geometry.of(base_profile.values)
    for m, c, s in zip(measured, caps_sim, scales):
        blocks = c / (geo.planes * geo.block_bytes)
        if blocks < 16:
            raise UserError(f"{m.folder}: at --scale {s:g} the simulated drive holds {c:,} bytes, {blocks:.1f} blocks "
                            f"per plane of the base profile's {geo.planes} planes x {geo.block_bytes:,}-byte blocks; "
                            + ("use a larger --scale (at least 16 blocks per plane) or " if s < 1 else "use ")
                            + "a --base profile with fewer planes or smaller blocks (pages_per_block) for a drive "
                              "this small")
    run = FitRun(measured=measured, keys=keys, base=base_profile, base_spec=base, seed=seed, scale=scale, evals=evals,
                 refs=[_reference(m, s) for m, s in zip(measured, scales)], caps=caps_sim, scales=scales,
                 spare_default=space.base_spare_pct(base_profile.values, base_profile.geometry))
    # the base profile's own values, where the search starts (and that it must be a valid drive)
    start_values = {k.name: (run.spare_default if k.name == space.SPARE_KEY else base_profile.values[k.name])
                    for k in keys}
    run.start = np.array([k.unit_of(start_values[k.name]) for k in keys])
    return run


def measured_order(test: str) -> int:
    return {"consistency": 0, "fill": 1, "run": 2}[test]


def _warn(text: str) -> None:
    print(f"ssdlab fit: warning: {text}", file=sys.stderr, flush=True)


def task_for(run: FitRun, index: int, sets: list[list[str]]) -> dict:
    return {"index": index, "base": run.base_spec if not Path(run.base_spec).exists()
            else str(Path(run.base_spec).resolve()), "seed": run.seed,
            "runs": [{"repro": {**m.repro, "seed": run.seed}, "sets": s, "scale": sc}
                     for m, s, sc in zip(run.measured, sets, run.scales)]}


def search_fit(run: FitRun, evaluator: search.Evaluator, on_batch=None, on_result=None) -> None:
    """Runs the optimizer with ``evaluator``; every evaluation becomes a row of
    ``run.rows`` (sorted by evaluation number when a batch ends); ``run.best`` is the best so
    far with its simulated outputs and terms. ``on_result(run)`` after each simulation,
    ``on_batch(run)`` after each batch (the history is written there)."""

    def ask(points: list[np.ndarray], step: str) -> list[float]:
        if step == "probe" and run.best is not None:
            run.probe_center = {"realized": dict(run.best["realized"]), "distance": run.best["distance"]}
        out = [math.inf] * len(points)
        pending: dict[int, list[int]] = {}
        tasks = []
        for i, u in enumerate(points):
            values = run.values_at(u)
            sets, realized = run.sets_for(values)
            sig = tuple(tuple(s) for s in sets)
            if sig in run.cache:
                hit = run.cache[sig]
                if isinstance(hit, int):  # simulated in this very batch
                    pending.setdefault(hit, []).append(i)
                else:
                    out[i] = hit
                continue
            try:
                for s in sets:
                    profiles.load_profile(task_for(run, 0, [s])["base"], s)
            except ProfileError as e:
                run.cache[sig] = math.inf
                run.rows.append(_row(run, None, step, realized, math.inf, None,
                                     f"not simulated: the simulator refuses it: {e}"))
                continue
            if run.used >= run.evals:
                continue
            index = run.used
            run.used += 1
            run.cache[sig] = index
            pending.setdefault(index, []).append(i)
            tasks.append((task_for(run, index, sets), realized, step, sig))
        by_index = {t["index"]: (realized, step, sig) for t, realized, step, sig in tasks}

        def done(res: dict) -> None:
            realized, step_, sig = by_index[res["index"]]
            terms, d, err = None, math.inf, res.get("error")
            if res["ok"]:
                try:
                    terms = run.score(res["outputs"])
                    d = dist.distance(terms)
                except Exception as e:  # noqa: BLE001 - a series the features cannot read
                    err = f"scoring failed: {type(e).__name__}: {e}"
            run.cache[sig] = d
            row = _row(run, res["index"], step_, realized, d, terms, err, res.get("wall_s"))
            run.rows.append(row)
            for i in pending.get(res["index"], []):
                out[i] = d
            if math.isfinite(d) and (run.best is None or (d, res["index"]) < (run.best["distance"], run.best["eval"])):
                run.best = {"eval": res["index"], "distance": d, "realized": realized, "terms": terms,
                            "outputs": res["outputs"]}
            if on_result:
                on_result(run)

        try:
            evaluator.map([t for t, *_ in tasks], done)
        finally:
            run.rows.sort(key=lambda r: (r["eval"] is None, r["eval"] if r["eval"] is not None else 0))
            if on_batch:
                on_batch(run)
        return out

    search.optimize(len(run.keys), ask, lambda: run.evals - run.used, run.seed, start=run.start)


def _row(run: FitRun, index, step: str, realized: dict, d: float, terms, error, wall_s=None) -> dict:
    row = {"eval": index, "step": step, "distance": d if math.isfinite(d) else None}
    for k in run.keys:
        row[k.name] = realized.get(k.name)
    for t in terms or []:
        row[f"term:{t['term']}"] = t["error"]
    row["wall_s"] = wall_s
    row["error"] = error or ""
    return row


# --------------------------------------------------------------------------- identifiability

def identifiability(run: FitRun) -> list[dict]:
    """Per key: the best value; the range of the key among the candidates that fit about as
    well as the best (distance within max(:data:`NEAR_ABS`, :data:`NEAR_REL` x best) of it)
    and that range as a share of the key's searched range; the distance's local rise when
    only this key moves, per 10 % of its range (from the probe and any other candidate that
    differs from the best in this key alone, by at most 15 %; the probe's centre is the best
    candidate when the probe started); and a verdict: ``pinned``
    (spread <= 15 % and the distance rises), ``not identified`` (spread > 40 %, or no rise),
    else ``weakly identified``."""
    done = [r for r in run.rows if r["eval"] is not None and r["distance"] is not None]
    if not done or run.best is None:
        return []
    d_best = run.best["distance"]
    tol = max(NEAR_ABS, NEAR_REL * d_best)
    near = [r for r in done if r["distance"] <= d_best + tol]
    center = run.probe_center or {"realized": run.best["realized"], "distance": d_best}
    best_vals, d_center = center["realized"], center["distance"]
    out = []
    for k in run.keys:
        vals = [r[k.name] for r in near if r[k.name] is not None]
        us = [k.unit_of(v) for v in vals]
        spread = max(us) - min(us)
        best_v = run.best["realized"][k.name]
        rises = []
        for r in done:
            moved = [o for o in run.keys if not math.isclose(k_u(o, r), k_u(o, best_vals), abs_tol=1e-9)]
            if len(moved) == 1 and moved[0].name == k.name:
                du = abs(k_u(k, r) - k_u(k, best_vals))
                if 0 < du <= 0.15 + 1e-9:
                    rises.append((r["distance"] - d_center) * 0.10 / du)
        sens = float(np.mean(rises)) if rises else None
        if spread > LOOSE_SPREAD or (sens is not None and sens < FLAT_SENSITIVITY):
            verdict = "not identified"
        elif spread <= PINNED_SPREAD:
            verdict = "pinned"
        else:
            verdict = "weakly identified"
        out.append({"key": k.name, "fitted": best_v, "lo": k.lo, "hi": k.hi, "scale": k.scale, "unit": k.unit,
                    "near_candidates": len(near), "near_tolerance": tol,
                    "near_min": min(vals), "near_max": max(vals), "near_spread_pct": 100 * spread,
                    "sensitivity": sens, "verdict": verdict, "trades_off_with": []})
    if len(near) >= 5:  # keys that move together along a valley of equally good fits
        u = np.array([[k_u(k, r) for k in run.keys] for r in near])
        for i in range(len(run.keys)):
            for j in range(len(run.keys)):
                if i != j and u[:, i].std() > 0 and u[:, j].std() > 0:
                    r = float(np.corrcoef(u[:, i], u[:, j])[0, 1])
                    if abs(r) >= TRADE_OFF_R:
                        out[i]["trades_off_with"].append({"key": run.keys[j].name, "r": r})
    return out


def k_u(key: space.Key, values: dict) -> float:
    v = values.get(key.name)
    return key.unit_of(v) if v is not None else math.nan


def write_history(run: FitRun, folder: Path) -> list[Path]:
    """``history.parquet`` and ``history.csv``: one row per candidate (simulated or refused)."""
    import csv
    import io

    import pyarrow as pa
    import pyarrow.csv as pa_csv
    import pyarrow.parquet as pq

    term_cols = list(dict.fromkeys(c for r in run.rows for c in r if c.startswith("term:")))
    cols = ["eval", "step", "distance", *(k.name for k in run.keys), *term_cols, "wall_s", "error"]
    data = {}
    for c in cols:
        vals = [r.get(c) for r in run.rows]
        if c == "eval":
            typ = pa.int64()
        elif c in ("step", "error"):
            typ = pa.string()
            vals = [v or "" for v in vals]
        else:
            typ = pa.float64()
            vals = [None if v is None else float(v) for v in vals]
        data[c] = pa.array(vals, type=typ)
    table = pa.table(data)
    pq_path = results.atomic_write(folder / "history.parquet", lambda f: pq.write_table(table, f))

    def write_csv(f) -> None:
        head = io.StringIO()
        csv.writer(head, lineterminator="\n").writerow(cols)
        f.write(head.getvalue().encode("utf-8"))
        if table.num_rows:
            pa_csv.write_csv(table, f, pa_csv.WriteOptions(include_header=False, quoting_style="needed"))

    return [pq_path, results.atomic_write(folder / "history.csv", write_csv)]
