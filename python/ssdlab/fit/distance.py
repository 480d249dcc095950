"""How far a simulated series is from the measured one: a distance on the series' *shape*,
as named terms, each normalized so that terms are comparable and the distance reads as a
typical relative error.

Every term is a log error ``|ln((fitted + floor) / (measured + floor))|``: 0.1 is about 10 %
off, 0.69 a factor of 2, whichever way. The ``floor`` keeps values near zero (a 0-IOPS
stall, no write cache) from dominating; it is stated per term below. The distance is the
weighted mean of the terms of every measured folder: ``sum(weight x error) / sum(weight)``.

consistency (IOPS per interval of the random-write phase; :mod:`ssdlab.analysis`):

=================  ======  =========================================================================
term               weight  what
=================  ======  =========================================================================
fob_level          1       fresh-out-of-box level: median IOPS of the first 2 % of the run
                           (``analysis.fob_phase``); floor 1 % of the measured p99 IOPS
fob_length         1       time until the first sustained drop below half that level
                           (``fob_phase``); no drop counts as the whole run; floor 2 intervals or
                           1 % of the run
steady_p10/50/90   1/2/1   10th, 50th, 90th percentile of IOPS over the last 30 % of the run
                           (the steady state the reviewers zoom on); floor as fob_level
curve              2       median IOPS in each of 40 equal slices of the run: the mean log error
                           over the slices (the drop's timing and shape); floor as fob_level
high_mode_share    1       only when the measured last 30 % is bimodal (``analysis.split_modes``,
                           Otsu's split of log IOPS, on whole seconds at finer intervals): the
                           share of intervals above the *measured* threshold, in both series;
                           floor 0.02
burst_period       1       same condition: mean time between the starts of those bursts
                           (``analysis.burst_stats``; fewer than two: the window's length); floor
                           2 intervals
=================  ======  =========================================================================

fill (MB/s per interval against the share of the span written; :mod:`ssdlab.procedures.fill`):
``fill_average`` (2: bytes / time over the part measured), ``fill_curve`` (2: median MB/s in
each of 20 equal slices of the bytes written), ``cache_size`` (1: bytes written before the
first sustained drop, ``fill.analyze_fill``; none = 0; floor 1 % of the span),
``phase_rates`` (2: the constant-rate phases of both fills, ``fill.phases``; in each, the
median MB/s of the intervals that end within its share of the span, in both series; the mean
log error over the phases, each phase counting alike however short: a cache or a dip a few %
of the drive is a sliver of the curve's slices; shown as the number of phases; floor 1 MB/s),
``burst_average`` (1: MB/s of the write burst after the pause, when measured) and
``latency_p50`` (1: median of the per-interval write p50 latency, when both have it; floor
1 µs).

run (per group and direction, from the summary's group figures): ``gN.DIR.iops`` (2: mean
IOPS; floor 1), ``gN.DIR.lat_p50`` and ``gN.DIR.lat_p99`` (1 each: latency percentiles of
the group [µs]; floor 1 µs).
"""
from __future__ import annotations

import math

import numpy as np

from .. import analysis

#: Share of the run, at its end, taken as steady state [fraction].
STEADY_SHARE = 0.30
#: Slices of the run compared by the ``curve`` term (consistency) and ``fill_curve`` (fill).
CURVE_SLICES = 40
FILL_SLICES = 20

#: Term -> (weight, unit, what) for the report and the README; per-test terms above.
TERMS: dict[str, tuple[float, str, str]] = {
    "fob_level": (1.0, "IOPS", "fresh-out-of-box level (median IOPS of the first 2 % of the run)"),
    "fob_length": (1.0, "s", "time until the first sustained drop below half the FOB level"),
    "steady_p10": (1.0, "IOPS", "p10 of IOPS over the last 30 % of the run"),
    "steady_p50": (2.0, "IOPS", "p50 of IOPS over the last 30 % of the run"),
    "steady_p90": (1.0, "IOPS", "p90 of IOPS over the last 30 % of the run"),
    "curve": (2.0, "IOPS", f"median IOPS in {CURVE_SLICES} equal slices of the run (mean log error)"),
    "high_mode_share": (1.0, "", "share of the last 30 % above the measured mode threshold"),
    "burst_period": (1.0, "s", "mean time between high-mode bursts in the last 30 %"),
    "fill_average": (2.0, "MB/s", "average MB/s of the fill (over the part measured)"),
    "fill_curve": (2.0, "MB/s", f"median MB/s in {FILL_SLICES} equal slices of the bytes written (mean log error)"),
    "cache_size": (1.0, "bytes", "bytes written before the first sustained drop (write cache; none = 0)"),
    "phase_rates": (2.0, "phases", "median MB/s in each phase's share of the span, the phases of both fills "
                                   "(mean log error)"),
    "burst_average": (1.0, "MB/s", "MB/s of the write burst after the idle pause"),
    "latency_p50": (1.0, "µs", "median of the per-interval write p50 latency"),
    "iops": (2.0, "IOPS", "mean IOPS of the group and direction"),
    "lat_p50": (1.0, "µs", "p50 latency of the group and direction"),
    "lat_p99": (1.0, "µs", "p99 latency of the group and direction"),
}


def log_error(fitted: float | None, measured: float | None, floor: float) -> float:
    """``|ln((fitted + floor) / (measured + floor))|``; a missing value counts as 0."""
    f = 0.0 if fitted is None or not math.isfinite(fitted) else max(0.0, float(fitted))
    m = 0.0 if measured is None or not math.isfinite(measured) else max(0.0, float(measured))
    return abs(math.log((f + floor) / (m + floor)))


def _term(name: str, measured, fitted, error: float, *, label: str | None = None) -> dict:
    kind = name.rsplit(".", 1)[-1]
    weight, unit, what = TERMS[kind]
    return {"term": label or name, "what": what, "unit": unit, "measured": measured, "fitted": fitted,
            "error": float(error), "weight": weight}


def distance(terms: list[dict]) -> float:
    """Weighted mean of the terms' errors (inf when a term is not finite)."""
    w = sum(t["weight"] for t in terms)
    if not w:
        return math.inf
    d = sum(t["weight"] * t["error"] for t in terms) / w
    return d if math.isfinite(d) else math.inf


# --------------------------------------------------------------------------- consistency

def _slices(t: np.ndarray, x: np.ndarray, run_s: float, n: int) -> np.ndarray:
    """Median of ``x`` in each of ``n`` equal slices of [0, run_s) (NaN where a slice is empty)."""
    idx = np.minimum((t / run_s * n).astype(int), n - 1)
    out = np.full(n, np.nan)
    ok = np.isfinite(x) & (idx >= 0)
    for b in range(n):
        v = x[ok & (idx == b)]
        if v.size:
            out[b] = np.median(v)
    return out


def consistency_features(t_s, iops, interval_s: float, threshold_iops: float | None = None) -> dict:
    """The shape of one IOPS series of intervals of ``interval_s`` on the measured clock (a
    scaled simulation has as many intervals as the measurement, its times divided by the
    scale); ``threshold_iops`` is the measured mode threshold for the burst figures (None: not
    computed)."""
    x = np.asarray(iops, float)
    t = np.asarray(t_s, float)
    run_s = len(x) * interval_s
    fob = analysis.fob_phase(np.where(np.isfinite(x), x, np.nan), interval_s)
    tail = x[int(len(x) * (1 - STEADY_SHARE)):]
    tail_f = tail[np.isfinite(tail)]
    p10, p50, p90 = (np.percentile(tail_f, [10, 50, 90]) if tail_f.size else (np.nan,) * 3)
    out = {"run_s": run_s, "fob_iops": fob.level_iops,
           "fob_s": run_s if fob.duration_s is None else fob.duration_s, "fob_dropped": fob.end_index
           is not None, "steady_p10": float(p10), "steady_p50": float(p50), "steady_p90": float(p90),
           "curve": _slices(t - (t[0] if t.size else 0.0), x, run_s, CURVE_SLICES),
           "p99": float(np.nanpercentile(x, 99)) if np.isfinite(x).any() else 0.0}
    if threshold_iops is not None and tail.size and np.isfinite(tail).any():
        b = analysis.burst_stats(tail, threshold_iops, interval_s, max_gap_s=analysis.BURST_JOIN_S)
        out["high_share"] = b["high_share"]
        out["burst_period_s"] = b["burst_period_s"] if b["burst_period_s"] is not None else len(tail) * interval_s
    return out


def consistency_reference(t_s, iops, interval_s: float) -> dict:
    """The measured series' features and what the terms need (floors, the mode threshold)."""
    x = np.asarray(iops, float)
    tail = x[int(len(x) * (1 - STEADY_SHARE)):]
    per_s = analysis.whole_seconds(tail, interval_s)
    modes = analysis.split_modes(per_s) if np.isfinite(per_s).sum() >= 2 else None
    threshold = modes.threshold_iops if modes is not None and modes.bimodal else None
    feats = consistency_features(t_s, x, interval_s, threshold)
    return {"test": "consistency", "features": feats, "threshold_iops": threshold, "interval_s": interval_s,
            "floor_iops": max(1.0, 0.01 * feats["p99"])}


def consistency_terms(ref: dict, t_s, iops) -> list[dict]:
    """The consistency terms of a simulated series (times on the measured clock)."""
    m = ref["features"]
    s = consistency_features(t_s, iops, ref["interval_s"], ref["threshold_iops"])
    f = ref["floor_iops"]
    ft = max(2 * ref["interval_s"], 0.01 * m["run_s"])
    terms = [
        _term("fob_level", m["fob_iops"], s["fob_iops"], log_error(s["fob_iops"], m["fob_iops"], f)),
        _term("fob_length", m["fob_s"], s["fob_s"], log_error(s["fob_s"], m["fob_s"], ft)),
        _term("steady_p10", m["steady_p10"], s["steady_p10"], log_error(s["steady_p10"], m["steady_p10"], f)),
        _term("steady_p50", m["steady_p50"], s["steady_p50"], log_error(s["steady_p50"], m["steady_p50"], f)),
        _term("steady_p90", m["steady_p90"], s["steady_p90"], log_error(s["steady_p90"], m["steady_p90"], f)),
    ]
    mc, sc = m["curve"], s["curve"]
    both = np.isfinite(mc) & np.isfinite(sc)
    err = float(np.mean(np.abs(np.log((sc[both] + f) / (mc[both] + f))))) if both.any() else math.inf
    terms.append(_term("curve", None, None, err))
    if ref["threshold_iops"] is not None:
        terms.append(_term("high_mode_share", m["high_share"], s.get("high_share"),
                           log_error(s.get("high_share"), m["high_share"], 0.02)))
        terms.append(_term("burst_period", m["burst_period_s"], s.get("burst_period_s"),
                           log_error(s.get("burst_period_s"), m["burst_period_s"], 2 * ref["interval_s"])))
    return terms


# --------------------------------------------------------------------------- fill

def _fill_view(series: dict, span_bytes: float, upto: float) -> dict:
    """MB/s per interval against the share of ``span_bytes`` written, cut at ``upto``."""
    mbps = np.asarray(series["mbps"], float)
    dt = np.asarray(series.get("dt_s", np.full(len(mbps), _step(series))), float)
    written = np.cumsum(mbps * dt) * 1e6
    frac = written / span_bytes
    keep = frac <= upto + 1e-9
    keep[: max(1, int(keep.sum()))] = True
    return {"mbps": mbps[keep], "dt": dt[keep], "frac": frac[keep], "written": written[keep]}


def _step(series: dict) -> float:
    t = np.asarray(series.get("t_s", ()), float)
    return float(t[1] - t[0]) if len(t) > 1 else 1.0


def _phase_median(v: dict, lo: float, hi: float) -> float | None:
    """Median MB/s of the intervals of fill view ``v`` that end in (``lo``, ``hi``] (shares of
    the span), and at least the one that crosses ``hi``."""
    a = int(np.searchsorted(v["frac"], lo + 1e-9, side="right"))
    b = max(a + 1, int(np.searchsorted(v["frac"], hi - 1e-9, side="left")) + 1)
    sel = v["mbps"][a:b]
    return float(np.median(sel)) if sel.size else None


def fill_features(series: dict, burst: dict | None, span_bytes: float, upto: float, min_phase_pct: float) -> dict:
    """The shape of one fill: average, curve, constant-rate phases (``fill.analyze_fill``; as
    shares of the span) and cache size, burst, latency; ``view`` keeps the series by share
    written for the phase comparison."""
    from ..procedures import fill as fillmod

    v = _fill_view(series, span_bytes, upto)
    total_s = float(v["dt"].sum())
    avg = float(v["written"][-1] / 1e6 / total_s) if total_s > 0 and len(v["written"]) else 0.0
    # slice medians by share written (the interval ends), over [0, upto]
    idx = np.minimum((np.concatenate([[0.0], v["frac"][:-1]]) / max(upto, 1e-12) * FILL_SLICES).astype(int),
                     FILL_SLICES - 1)
    curve = np.full(FILL_SLICES, np.nan)
    for b in range(FILL_SLICES):
        sel = v["mbps"][idx == b]
        if sel.size:
            curve[b] = np.median(sel)
    sub = {"t_s": np.arange(len(v["mbps"])) * _step(series), "mbps": v["mbps"], "dt_s": v["dt"]}
    try:
        fa = fillmod.analyze_fill(sub, min_phase_pct) if len(v["mbps"]) >= 2 else {"cache_bytes": None, "phases": []}
    except Exception:  # noqa: BLE001 - a series too short to segment has no cache and one phase
        fa = {"cache_bytes": None, "phases": []}
    phases = [(p["start_gb"] * 1e9 / span_bytes, p["end_gb"] * 1e9 / span_bytes) for p in fa["phases"]]
    out = {"fill_mbps": avg, "curve": curve, "cache_bytes": fa["cache_bytes"] or 0.0, "phases": phases,
           "view": {"frac": v["frac"], "mbps": v["mbps"]}}
    lat = series.get("write_lat_p50_us")
    if lat is not None:
        lat = np.asarray(lat, float)[: len(v["mbps"])]
        out["lat_p50_us"] = float(np.nanmedian(lat)) if np.isfinite(lat).any() else None
    if burst is not None and len(burst.get("mbps", ())):
        b_mbps = np.asarray(burst["mbps"], float)
        b_dt = np.asarray(burst.get("dt_s", np.full(len(b_mbps), _step(burst))), float)
        out["burst_mbps"] = float((b_mbps * b_dt).sum() / b_dt.sum()) if b_dt.sum() > 0 else None
    return out


def fill_reference(series: dict, burst: dict | None, span_bytes: float, upto: float, min_phase_pct: float) -> dict:
    return {"test": "fill", "features": fill_features(series, burst, span_bytes, upto, min_phase_pct),
            "upto": upto, "min_phase_pct": min_phase_pct, "span_bytes": float(span_bytes)}


def phase_error(m: dict, s: dict) -> float | None:
    """The ``phase_rates`` term: over the phases of both fills (``fill_features``), the mean
    log error between the two fills' median MB/s in each phase's share of the span (a phase
    only one of them has counts: a dip the other lacks)."""
    errs = []
    for lo, hi in [*m["phases"], *s["phases"]]:
        a, b = _phase_median(m["view"], lo, hi), _phase_median(s["view"], lo, hi)
        if a is not None:
            errs.append(log_error(b, a, 1.0))
    return float(np.mean(errs)) if errs else None


def fill_terms(ref: dict, series: dict, burst: dict | None, span_bytes: float) -> list[dict]:
    m = ref["features"]
    s = fill_features(series, burst, span_bytes, ref["upto"], ref["min_phase_pct"])
    terms = [_term("fill_average", m["fill_mbps"], s["fill_mbps"], log_error(s["fill_mbps"], m["fill_mbps"], 1.0))]
    mc, sc = m["curve"], s["curve"]
    both = np.isfinite(mc) & np.isfinite(sc)
    err = float(np.mean(np.abs(np.log((sc[both] + 1.0) / (mc[both] + 1.0))))) if both.any() else math.inf
    terms.append(_term("fill_curve", None, None, err))
    # cache sizes as shares of the span (scale-free); the fitted one shown at the measured span
    s_share, m_share = s["cache_bytes"] / span_bytes, m["cache_bytes"] / ref["span_bytes"]
    terms.append(_term("cache_size", m["cache_bytes"], s_share * ref["span_bytes"],
                       log_error(s_share, m_share, 0.01)))
    err = phase_error(m, s)
    if err is not None:
        terms.append(_term("phase_rates", len(m["phases"]), len(s["phases"]), err))
    if m.get("burst_mbps") is not None:
        terms.append(_term("burst_average", m["burst_mbps"], s.get("burst_mbps"),
                           log_error(s.get("burst_mbps"), m["burst_mbps"], 1.0)))
    if m.get("lat_p50_us") is not None and s.get("lat_p50_us") is not None:
        terms.append(_term("latency_p50", m["lat_p50_us"], s["lat_p50_us"],
                           log_error(s["lat_p50_us"], m["lat_p50_us"], 1.0)))
    return terms


# --------------------------------------------------------------------------- run

def run_reference(groups: list[dict]) -> dict:
    return {"test": "run", "groups": groups}


def run_terms(ref: dict, sim_groups: list[dict]) -> list[dict]:
    terms = []
    for i, g in enumerate(ref["groups"], start=1):
        sg = sim_groups[i - 1] if i - 1 < len(sim_groups) else {"directions": {}}
        for d, fig in g["directions"].items():
            sfig = sg["directions"].get(d, {})
            mi, si = fig.get("iops_mean"), sfig.get("iops_mean")
            terms.append(_term(f"g{i}.{d}.iops", mi, si, log_error(si, mi, 1.0)))
            for p in ("p50", "p99"):
                ml, sl = (fig.get("latency_us") or {}).get(p), (sfig.get("latency_us") or {}).get(p)
                if ml is not None:
                    terms.append(_term(f"g{i}.{d}.lat_{p}", ml, sl, log_error(sl, ml, 1.0)))
    return terms
