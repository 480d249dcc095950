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
from .measured import CsvOptions, Measured, load_measured

#: Candidates that fit "about as well" as the best: distance within a tolerance of the best
#: distance made of what the checks measure (:func:`run_checks`): the distance's noise (the
#: range of the best candidate's distances over seeds) times NOISE_FACTOR, the scaled drive's
#: deviation from the full one, and the misfit (how much further the best is from the
#: measurement, on average over seeds, than two runs of the best are from each other: a search
#: that has not found the region where the drive fits as well as the noise allows, or a model
#: that cannot, cannot tell candidates apart more finely than that); at least NEAR_MIN and
#: NEAR_REL x the best distance. Without checks (a budget too small for them):
#: NEAR_UNCHECKED, and no key is called pinned.
NEAR_MIN, NEAR_REL, NOISE_FACTOR, NEAR_UNCHECKED = 0.02, 0.5, 2.0, 0.05
#: Fewest blocks per plane (of user capacity) a fitted drive may have.
MIN_BLOCKS_PER_PLANE = 16
#: Seeds the best candidate is simulated with again to measure the distance's noise.
CHECK_SEEDS = 2
#: The simulations use seed SIM_SEED_OFFSET + --seed: never a test's default seed, so a drive
#: measured on the simulator is not reproduced noise-free by the candidate equal to it.
SIM_SEED_OFFSET = 1_000_000
#: Keys whose values correlate at least this much (|Pearson r| in the unit cube) among the
#: near-best candidates trade off against each other: the data pins a combination.
TRADE_OFF_R = 0.8
#: Identifiability verdicts: spread of a key among those candidates [share of its range] and
#: the distance's local rise when the key alone moves by 10 % of its range. Pinned also needs
#: MIN_NEAR candidates within the tolerance from the steps that move every key at once (sample,
#: refine: the probe's, which move one key, say nothing of the valleys where keys trade off)
#: and the distance above it on both sides of the best when the key alone moves (the probe,
#: at most PROBE_REACH of the range away).
PINNED_SPREAD, LOOSE_SPREAD = 0.15, 0.40
FLAT_SENSITIVITY = 0.005
MIN_NEAR = 5
PROBE_REACH = 0.15
#: Pinned also needs a misfit (see NEAR_MIN) of at most this: a best candidate further from
#: the measurement than two runs of one drive are from each other may sit in the wrong valley,
#: the drive's own being unfound or beyond the model, and its near-best set with it.
PIN_MAX_MISFIT = 0.05
#: The optimizer's steps that move every key at once.
JOINT_STEPS = ("sample", "refine")
#: The near-best candidates are a sample of the values that fit about as well: the near-best
#: range is their span widened by this share of the key's range on each side, the refine
#: step's smallest spread (:data:`ssdlab.fit.search.MIN_SIGMA`), about the samples' spacing.
NEAR_PAD = search.MIN_SIGMA
#: Verdicts.
PINNED, WEAK, NOT_IDENTIFIED, NOT_PRESERVED = ("pinned", "weakly identified", "not identified",
                                               "not preserved at this scale")


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
    #: Per measured folder: how its candidates are simulated (full size or a scaled copy).
    scalings: list[space.Scaling]
    spare_default: float
    rows: list[dict] = field(default_factory=list)
    cache: dict = field(default_factory=dict)
    used: int = 0
    best: dict | None = None
    #: The best candidate when the probe started (the probe moves its keys one at a time).
    probe_center: dict | None = None
    #: Simulations kept from the budget for :func:`run_checks`.
    reserved: int = 0
    #: What the checks found (:func:`run_checks`); None before them or without them.
    checks: dict | None = None
    started: float = field(default_factory=time.perf_counter)

    @property
    def sim_seed(self) -> int:
        return SIM_SEED_OFFSET + self.seed

    @property
    def scales(self) -> list[float]:
        """Per measured folder, the scale its candidates are simulated at (1: full size)."""
        return [sc.factor for sc in self.scalings]

    @property
    def scaled(self) -> bool:
        return any(sc.scaled for sc in self.scalings)

    # -- candidates ---------------------------------------------------------------------
    def values_at(self, u: np.ndarray) -> dict:
        return {k.name: k.value(x) for k, x in zip(self.keys, u)}

    def sets_for(self, values: dict, full: bool = False) -> tuple[list[list[str]], dict]:
        """Per measured folder, the candidate's profile overrides as it is simulated for that
        folder (``full``: at full size whatever --scale says), and the keys' realized values."""
        spare = values.get(space.SPARE_KEY, self.spare_default)
        cap = self.measured[0].capacity_bytes // 4096 * 4096
        all_sets, realized = [], {}
        for sc in self.scalings:
            sets, r = space.candidate_sets(self.keys, values, self.base.values, cap, spare, None if full else sc)
            all_sets.append(sets)
            realized = realized or r
        return all_sets, realized

    def full_scale_sets(self, realized: dict) -> list[str]:
        """The best candidate on a drive of the measured capacity (fitted.toml)."""
        return self.sets_for(dict(realized), full=True)[0][0]

    # -- scoring ------------------------------------------------------------------------
    def score(self, outputs: list[dict], refs: list[dict] | None = None) -> list[dict]:
        """The terms of simulated ``outputs`` against the measured folders (or ``refs``)."""
        terms = []
        for m, ref, out in zip(self.measured, refs or self.refs, outputs):
            if m.test == "consistency":
                t = dist.consistency_terms(ref, out["t_s"], out["iops"])
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


def _reference(m: Measured) -> dict:
    if m.test == "consistency":
        return dist.consistency_reference(m.series["t_s"], m.series["iops"], m.repro["interval_s"])
    if m.test == "fill":
        span = m.summary.get("span_bytes") or m.capacity_bytes * m.repro["span_pct"] / 100
        return dist.fill_reference(m.series, m.extra.get("burst"), float(span), m.repro["fraction_written"],
                                   m.repro["min_phase_pct"])
    return dist.run_reference(m.extra["groups"])


def _output_reference(m: Measured, out: dict) -> dict:
    """A simulated output of ``m``'s test as if it were the measurement (the full-size check)."""
    if m.test == "consistency":
        return dist.consistency_reference(out["t_s"], out["iops"], m.repro["interval_s"])
    if m.test == "fill":
        return dist.fill_reference(out["fill"], out.get("burst"), float(out["span_bytes"]),
                                   m.repro["fraction_written"], m.repro["min_phase_pct"])
    return dist.run_reference(out["groups"])


def prepare(folders: list[str], key_specs: list[str], base: str = "default", seed: int = 1, scale: float = 1.0,
            evals: int = 100, warn=None, csv: CsvOptions | None = None) -> FitRun:
    """Reads and checks everything before anything runs: the folders and CSV curves (with
    ``csv``, the options a CSV needs), the base profile, the keys, the scaled drive. UserError
    naming the folder, file, line or key otherwise."""
    if not folders:
        raise UserError("fit: give at least one results folder or CSV file")
    if not 0 < scale <= 1:
        raise UserError(f"--scale {scale:g}: must be in (0, 1]")
    csv = csv or CsvOptions()
    if csv.given() and not any(Path(f).suffix.lower() == ".csv" for f in folders):
        raise UserError(f"{', '.join(csv.given())}: for CSV curves only; a results folder says its own drive and "
                        "test")
    measured = [load_measured(f, csv) for f in folders]
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
    if scale < 1 and all(m.test == "run" for m in measured):
        (warn or _warn)("--scale applies to consistency and fill results; run results are simulated at full capacity")
    geo = space.Geometry.of(base_profile.values)
    cap = measured[0].capacity_bytes
    blocks = cap / (geo.planes * geo.block_bytes)
    if blocks < MIN_BLOCKS_PER_PLANE:
        raise UserError(f"{measured[0].folder}: a drive of {cap:,} bytes holds {blocks:.1f} blocks per plane of the "
                        f"base profile's {geo.planes} planes x {geo.block_bytes:,}-byte blocks (at least "
                        f"{MIN_BLOCKS_PER_PLANE}); use a --base profile with fewer planes or smaller blocks "
                        "(pages_per_block) for a drive this small")
    scalings = [space.check_scale(base_profile.values, scale if m.test in ("consistency", "fill") else 1.0,
                                  str(m.folder)) for m in measured]
    return FitRun(measured=measured, keys=keys, base=base_profile, base_spec=base, seed=seed, scale=scale,
                  evals=evals, refs=[_reference(m) for m in measured], scalings=scalings,
                  spare_default=space.base_spare_pct(base_profile.values, base_profile.geometry))


def measured_order(test: str) -> int:
    return {"consistency": 0, "fill": 1, "run": 2}[test]


def _warn(text: str) -> None:
    print(f"ssdlab fit: warning: {text}", file=sys.stderr, flush=True)


def task_for(run: FitRun, index: int, sets: list[list[str]], seed: int | None = None, full: bool = False) -> dict:
    """What a worker simulates: every measured test of one candidate (``sets`` per folder),
    with the fit's simulation seed or ``seed``, at the folders' scales or at full size."""
    seed = run.sim_seed if seed is None else seed
    return {"index": index, "base": run.base_spec if not Path(run.base_spec).exists()
            else str(Path(run.base_spec).resolve()), "seed": seed,
            "runs": [{"repro": {**m.repro, "seed": seed}, "sets": s, "scale": 1.0 if full else sc}
                     for m, s, sc in zip(run.measured, sets, run.scales)]}


def unit_step(run: FitRun, key: space.Key) -> float:
    """``key``'s step in the unit cube: one whole number of an integer key on a linear scale,
    one block per plane of the spare area; 0 for a continuous key."""
    if key.name == space.SPARE_KEY:
        geo = space.Geometry.of(run.base.values)
        return 100.0 * geo.planes * geo.block_bytes / run.measured[0].capacity_bytes / (key.hi - key.lo)
    if key.integer and key.scale == "lin":
        return 1.0 / (key.hi - key.lo)
    return 0.0


def check_count(run: FitRun) -> int:
    """Simulations :func:`run_checks` takes from the budget: CHECK_SEEDS, and one more at full
    size when the fit runs scaled; none when the budget is below four times that."""
    n = CHECK_SEEDS + (1 if run.scaled else 0)
    return n if run.evals >= 4 * n else 0


def search_fit(run: FitRun, evaluator: search.Evaluator, on_batch=None, on_result=None) -> None:
    """Runs the optimizer with ``evaluator``, then the checks (:func:`run_checks`); every
    evaluation becomes a row of ``run.rows`` (sorted by evaluation number when a batch ends);
    ``run.best`` is the best so far with its simulated outputs and terms. The search starts
    from a space-filling sample, never from the base profile's values (which may be the
    measured drive's own). ``on_result(run)`` after each simulation, ``on_batch(run)`` after
    each batch (the history is written there)."""
    run.reserved = check_count(run)

    def ask(points: list[np.ndarray], step: str, search_run: int | None = None) -> list[float]:
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
                                     f"not simulated: the simulator refuses it: {e}", search_run=search_run))
                continue
            if run.used >= run.evals - run.reserved:
                continue
            index = run.used
            run.used += 1
            run.cache[sig] = index
            pending.setdefault(index, []).append(i)
            tasks.append((task_for(run, index, sets), realized, step, sig))
        by_index = {t["index"]: (realized, step, sig) for t, realized, step, sig in tasks}

        def done(res: dict) -> None:
            realized, step_, sig = by_index[res["index"]]
            terms, d, err = _scored(run, res)
            run.cache[sig] = d
            row = _row(run, res["index"], step_, realized, d, terms, err, res.get("wall_s"), search_run)
            run.rows.append(row)
            for i in pending.get(res["index"], []):
                out[i] = d
            if math.isfinite(d) and (run.best is None or (d, res["index"]) < (run.best["distance"], run.best["eval"])):
                run.best = {"eval": res["index"], "distance": d, "realized": realized, "terms": terms,
                            "outputs": res["outputs"], "sets": [list(x) for x in sig]}
            if on_result:
                on_result(run)

        try:
            evaluator.map([t for t, *_ in tasks], done)
        finally:
            run.rows.sort(key=lambda r: (r["eval"] is None, r["eval"] if r["eval"] is not None else 0))
            if on_batch:
                on_batch(run)
        return out

    search.optimize(len(run.keys), ask, lambda: run.evals - run.reserved - run.used, run.seed,
                    steps=[unit_step(run, k) for k in run.keys])
    run.reserved = 0
    run_checks(run, evaluator, check_count(run), on_batch=on_batch, on_result=on_result)


def run_checks(run: FitRun, evaluator: search.Evaluator, n: int, on_batch=None, on_result=None) -> None:
    """What the near-best tolerance rests on, measured at the best candidate (``n``
    simulations, :func:`check_count`): the best simulated again with CHECK_SEEDS other seeds
    (the distance's noise: the range of its distances; the floor: the distance between two of
    those runs, as if one were measured; the misfit: their mean distance above the floor), and
    when the fit ran scaled, the best at full size (the scaled copy's deviation: the distance of the scaled series from the full
    one, as if the full one were measured; and the fitted profile's own distance). Rows with
    steps ``check-seed`` and ``check-full``; ``run.checks`` holds the figures."""
    if run.best is None or n <= 0 or run.evals - run.used < n:
        return
    best = run.best
    tasks, kinds = [], {}
    for k in range(1, CHECK_SEEDS + 1):
        index = run.used + len(tasks)
        tasks.append(task_for(run, index, best["sets"], seed=run.sim_seed + k))
        kinds[index] = ("check-seed", run.sim_seed + k)
    if run.scaled:
        index = run.used + len(tasks)
        tasks.append(task_for(run, index, run.sets_for(best["realized"], full=True)[0], full=True))
        kinds[index] = ("check-full", run.sim_seed)
    run.used += len(tasks)
    found: dict = {"seeds": [], "full": None}

    def done(res: dict) -> None:
        step, seed = kinds[res["index"]]
        terms, d, err = _scored(run, res)
        run.rows.append(_row(run, res["index"], step, best["realized"], d, terms, err, res.get("wall_s")))
        if step == "check-seed":
            found["seeds"].append({"seed": seed, "distance": d if math.isfinite(d) else None,
                                   "outputs": res["outputs"] if math.isfinite(d) else None})
        elif math.isfinite(d):
            refs = [_output_reference(m, o) for m, o in zip(run.measured, res["outputs"])]
            dev_terms = run.score(best["outputs"], refs)
            found["full"] = {"distance": d, "terms": terms, "outputs": res["outputs"],
                             "deviation": dist.distance(dev_terms), "deviation_terms": dev_terms}
        if on_result:
            on_result(run)

    try:
        evaluator.map(tasks, done)
    finally:
        run.rows.sort(key=lambda r: (r["eval"] is None, r["eval"] if r["eval"] is not None else 0))
        if on_batch:
            on_batch(run)
    found["seeds"].sort(key=lambda x: x["seed"])  # as simulated, whatever order they finished in
    seeds = [x["distance"] for x in found["seeds"]]
    if len(seeds) < CHECK_SEEDS or None in seeds or (run.scaled and found["full"] is None):
        found["failed"] = "a check simulation failed (history.csv says why)"
    draws = [best["distance"], *(x for x in seeds if x is not None)]
    found["noise"] = max(draws) - min(draws)
    outs = [x["outputs"] for x in found["seeds"] if x["outputs"] is not None]
    found["floor"] = (dist.distance(run.score(outs[1], [_output_reference(m, o) for m, o in zip(run.measured, outs[0])]))
                      if len(outs) >= 2 else None)
    found["misfit"] = max(0.0, float(np.mean(draws[1:])) - found["floor"]) if found["floor"] is not None else 0.0
    found["deviation"] = found["full"]["deviation"] if found["full"] else 0.0
    run.checks = found


def _scored(run: FitRun, res: dict) -> tuple[list[dict] | None, float, str | None]:
    """(terms, distance, error) of a simulation's result (:func:`ssdlab.fit.simulate.evaluate`):
    inf and the error when it failed or its series cannot be scored."""
    if not res["ok"]:
        return None, math.inf, res.get("error")
    try:
        terms = run.score(res["outputs"])
        return terms, dist.distance(terms), None
    except Exception as e:  # noqa: BLE001 - a series the features cannot read
        return None, math.inf, f"scoring failed: {type(e).__name__}: {e}"


def _row(run: FitRun, index, step: str, realized: dict, d: float, terms, error, wall_s=None,
         search_run: int | None = None) -> dict:
    row = {"eval": index, "step": step, "search": search_run, "distance": d if math.isfinite(d) else None}
    for k in run.keys:
        row[k.name] = realized.get(k.name)
    for t in terms or []:
        row[f"term:{t['term']}"] = t["error"]
    row["wall_s"] = wall_s
    row["error"] = error or ""
    return row


# --------------------------------------------------------------------------- identifiability

def near_tolerance(run: FitRun) -> dict:
    """How far above the best distance a candidate still fits "about as well" (see NEAR_MIN)
    and what it is made of: ``tolerance``, ``noise``, ``deviation`` and ``misfit`` (None when
    unchecked), ``checked``."""
    d_best = run.best["distance"]
    c = run.checks
    if c is None or c.get("failed"):
        return {"tolerance": max(NEAR_UNCHECKED, NEAR_REL * d_best), "noise": None, "deviation": None,
                "misfit": None, "checked": False}
    tol = max(NEAR_MIN, NEAR_REL * d_best, NOISE_FACTOR * c["noise"] + c["deviation"] + c.get("misfit", 0.0))
    return {"tolerance": tol, "noise": c["noise"], "deviation": c["deviation"], "misfit": c.get("misfit", 0.0),
            "checked": True}


def identifiability(run: FitRun) -> list[dict]:
    """Per key: the best value; the range of the key among the searched candidates that fit
    about as well as the best (distance within :func:`near_tolerance` of it; ``sampled_min``
    and ``sampled_max``), the near-best range (``near_min``, ``near_max``: that span widened
    by NEAR_PAD) and the span as a share of the key's searched range; the distance's local rise when only this key moves,
    per 10 % of its range (from the probe and any other candidate that differs from the probe's
    centre in this key alone, by at most PROBE_REACH); and a verdict:

    * ``pinned``: the checks ran and the misfit is at most PIN_MAX_MISFIT, the refine searches
      (:data:`ssdlab.fit.search.RUNS`, started apart) each ended within the tolerance of the best,
      at least MIN_NEAR candidates of the joint steps are near the
      best, the spread of all near ones
      is <= PINNED_SPREAD, and moving the key alone takes the distance above the tolerance on
      both sides of the best (a side at the end of the range counts as bounded);
    * ``not preserved at this scale``: --scale changes what the key does (``scale_note`` says
      how), whatever the data says;
    * ``not identified``: spread > LOOSE_SPREAD, or no rise;
    * else ``weakly identified`` (``why`` says what pinning it lacks)."""
    done = [r for r in run.rows if r["eval"] is not None and r["distance"] is not None
            and not r["step"].startswith("check")]
    if not done or run.best is None:
        return []
    d_best = run.best["distance"]
    near_tol = near_tolerance(run)
    tol = near_tol["tolerance"]
    near = [r for r in done if r["distance"] <= d_best + tol]
    joint = sum(1 for r in near if r["step"] in JOINT_STEPS)
    ends = {}  # each search's best distance
    for r in done:
        if r.get("search") is not None:
            ends[r["search"]] = min(ends.get(r["search"], math.inf), r["distance"])
    if len(ends) < search.RUNS:
        apart = f"{len(ends)} refine search (two, started apart, need a larger --evals)"
    else:
        far = {i: d for i, d in sorted(ends.items()) if d > d_best + tol}
        apart = ("the refine searches end apart ("
                 + ", ".join(f"search {i + 1}'s best is {d - d_best:.3f} above the best" for i, d in far.items())
                 + "): another valley may fit as well (more --evals)") if far else ""
    center = run.probe_center or {"realized": run.best["realized"], "distance": d_best}
    best_vals, d_center = center["realized"], center["distance"]
    notes = {k.name: next((n for n in (sc.unpreserved(k) for sc in run.scalings) if n), None) for k in run.keys}
    out = []
    for k in run.keys:
        vals = [r[k.name] for r in near if r[k.name] is not None]
        us = [k.unit_of(v) for v in vals]
        spread = max(us) - min(us)
        near_lo, near_hi = k.bound(min(us) - NEAR_PAD, "lo"), k.bound(max(us) + NEAR_PAD, "hi")
        best_v = run.best["realized"][k.name]
        rises, bounded = [], {}
        u_center = k_u(k, best_vals)
        for side, edge in ((1, 1.0), (-1, 0.0)):
            if math.isclose(u_center, edge, abs_tol=1e-9):
                bounded[side] = True  # the end of the searched range
        for r in done:
            moved = [o for o in run.keys if not math.isclose(k_u(o, r), k_u(o, best_vals), abs_tol=1e-9)]
            if len(moved) == 1 and moved[0].name == k.name:
                du = k_u(k, r) - u_center
                if 0 < abs(du) <= PROBE_REACH + 1e-9:
                    rises.append((r["distance"] - d_center) * 0.10 / abs(du))
                    if r["distance"] > d_best + tol:
                        bounded[1 if du > 0 else -1] = True
        sens = float(np.mean(rises)) if rises else None
        lacks = []
        if not near_tol["checked"]:
            lacks.append("no checks (a budget too small, or a check failed)")
        elif near_tol["misfit"] > PIN_MAX_MISFIT:
            lacks.append(f"the best misfits by {near_tol['misfit']:.3f} (more than {PIN_MAX_MISFIT}): a better "
                         "valley may be unfound (more --evals) or beyond the model (other keys"
                         + (", a larger --scale" if run.scaled else "") + ")")
        if apart:
            lacks.append(apart)
        if joint < MIN_NEAR:
            lacks.append(f"{joint} candidates that move every key fit within the tolerance (pinning takes {MIN_NEAR}; "
                         "more --evals)")
        if not (bounded.get(1) and bounded.get(-1)):
            lacks.append("the distance does not rise beyond the tolerance on both sides when this key alone moves")
        if spread > PINNED_SPREAD:
            lacks.append(f"the near-best values spread over {100 * spread:.0f} % of the range")
        if notes[k.name]:
            verdict = NOT_PRESERVED
        elif spread > LOOSE_SPREAD or (sens is not None and sens < FLAT_SENSITIVITY):
            verdict = NOT_IDENTIFIED
        elif not lacks:
            verdict = PINNED
        else:
            verdict = WEAK
        out.append({"key": k.name, "fitted": best_v, "lo": k.lo, "hi": k.hi, "scale": k.scale, "unit": k.unit,
                    "near_candidates": len(near), "near_joint_candidates": joint, "near_tolerance": tol,
                    "search_ends": [ends[i] for i in sorted(ends)],
                    "near_min": near_lo, "near_max": near_hi, "sampled_min": min(vals), "sampled_max": max(vals),
                    "near_spread_pct": 100 * spread,
                    "sensitivity": sens, "verdict": verdict, "why": "; ".join(lacks) if verdict == WEAK else "",
                    "scale_note": notes[k.name], "trades_off_with": []})
    if len(near) >= 5:  # keys that move together along a valley of equally good fits
        u = np.array([[k_u(k, r) for k in run.keys] for r in near])
        for i in range(len(run.keys)):
            for j in range(len(run.keys)):
                if i != j and u[:, i].std() > 0 and u[:, j].std() > 0:
                    r = float(np.corrcoef(u[:, i], u[:, j])[0, 1])
                    if abs(r) >= TRADE_OFF_R:
                        out[i]["trades_off_with"].append({"key": run.keys[j].name, "r": r})
    for r in out:  # along a valley the near-best range is as long as the search walked it
        if r["verdict"] == PINNED and r["trades_off_with"]:
            r["verdict"] = WEAK
            r["why"] = "trades off with " + ", ".join(f"{t['key']} (r = {t['r']:+.2f})" for t in r["trades_off_with"]) \
                       + ": the data pins a combination"
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
    cols = ["eval", "step", "search", "distance", *(k.name for k in run.keys), *term_cols, "wall_s", "error"]
    data = {}
    for c in cols:
        vals = [r.get(c) for r in run.rows]
        if c in ("eval", "search"):
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
