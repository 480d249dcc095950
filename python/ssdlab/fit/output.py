"""What a fit writes into ``--out``:

* ``fitted.toml``: the fitted drive as a profile (every key, so it stands alone), usable as
  ``--target sim:OUT/fitted.toml``; a drive of the measured capacity whatever ``--scale`` the
  search ran at; checked by loading it back.
* ``fit.png`` / ``fit.svg``: measured (left) and fitted (right) series side by side, one row
  per measured folder, same axes per row; the fitted series is fitted.toml's own (the
  full-size check) when the search ran scaled.
* ``history.parquet`` / ``history.csv``: every candidate: evaluation number, step, distance,
  the keys' values (spare_pct as realized), each term's error, wall time, error text; the
  checks (steps ``check-seed``, ``check-full``) are rows too.
* ``measured_N`` / ``fitted_N`` series (Parquet + CSV) and ``report.html`` (the comparison
  charts, the term table and the key table).
* ``summary.json``: the measured folders, the keys (ranges, fitted values, identifiability),
  the terms, the distance, the checks (noise, the scaled drive's deviation, the full-size
  distance and terms), the search (optimizer, budget, seed, scale, backend) and run metadata.
"""
from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from .. import profiles, results
from ..errors import ProfileError
from . import distance as dist
from .core import FitRun, identifiability, near_tolerance, write_history
from .space import Key

FITTED_NAME = "fitted.toml"


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "0.0"
    return json.dumps(str(v), ensure_ascii=False)  # a TOML basic string


def write_fitted(run: FitRun, folder: Path, ident: list[dict]) -> tuple[Path, profiles.Profile]:
    """``fitted.toml`` of the best candidate at the measured capacity; loaded back to check it."""
    sets = run.full_scale_sets(run.best["realized"])
    prof = profiles.load_profile(run.base_spec, sets)
    values = dict(prof.values)
    labels = ", ".join(m.label for m in run.measured)
    values["name"] = "fitted"
    values["description"] = f"simulated twin of {labels} (ssdlab fit, distance {run.best['distance']:.3f})"
    lines = [f"# fitted — a simulated twin fitted by `ssdlab fit` to {labels}.",
             f"# Base profile {run.base.source}; distance {run.best['distance']:.4f} (weighted mean of the "
             "normalized term errors; summary.json lists them).",
             f"# User capacity {values['user_capacity_bytes']:,} bytes (the measured drive's); spare area "
             f"{(prof.geometry['physical_bytes'] / prof.geometry['user_bytes'] - 1) * 100:.2f} % of it.",
             "# Searched keys (fitted value; what the data says about it):"]
    for r in ident:
        lines.append(f"#   {r['key']} = {_plain(r['fitted'])}: {r['verdict']} (near-best {_plain(r['near_min'])}.."
                     f"{_plain(r['near_max'])})")
    lines.append("# Use: ssdlab consistency --target sim:" + str(folder / FITTED_NAME) + " --out DIR")
    lines.append("")
    for k, v in values.items():
        lines.append(f"{k} = {_toml_value(v)}")
    path = folder / FITTED_NAME
    text = "\n".join(lines) + "\n"
    results.atomic_write(path, lambda f: f.write(text.encode("utf-8")))
    try:
        loaded = profiles.load_profile(str(path))
    except ProfileError as e:  # pragma: no cover - the candidate was simulated from the same keys
        raise RuntimeError(f"{path}: the fitted profile does not load back: {e}") from None
    return path, loaded


def _plain(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.4g}"
    return f"{int(v):,}" if isinstance(v, (int, float)) else str(v)


# --------------------------------------------------------------------------- series and plots

def fitted_outputs(run: FitRun) -> tuple[list[dict], bool]:
    """The fitted series to show: fitted.toml's own when the full-size check ran (True), else
    the best candidate's as the search simulated it."""
    full = (run.checks or {}).get("full")
    return (full["outputs"], True) if full else (run.best["outputs"], False)


def comparison_series(run: FitRun) -> list[tuple[str, dict, dict, dict]]:
    """Per measured folder: (kind, measured series, fitted series, report hint)."""
    out = []
    for i, (m, sim) in enumerate(zip(run.measured, fitted_outputs(run)[0]), start=1):
        if m.test == "consistency":
            ms = {"t_s": m.series["t_s"], "iops": m.series["iops"]}
            fs = {"t_s": np.asarray(sim["t_s"], float), "iops": np.asarray(sim["iops"], float)}
            hint = {"series": f"measured_{i}", "x": "t_s", "kind": "scatter", "logy": True,
                    "y": [{"series": f"measured_{i}", "y": "iops", "label": "measured", "unit": "IOPS"},
                          {"series": f"fitted_{i}", "y": "iops", "label": "fitted", "unit": "IOPS"}],
                    "title": f"{m.label}: IOPS per interval, measured vs fitted", "label": f"{m.label} IOPS",
                    "xlabel": "time (s)", "ylabel": "IOPS"}
        elif m.test == "fill":
            span_gb = float(m.summary.get("span_bytes") or m.capacity_bytes) / 1e9
            ms = {"written_gb": _written(m.series), "mbps": np.asarray(m.series["mbps"], float)}
            f = sim["fill"]
            fs = {"written_gb": _written(f) / (sim["span_bytes"] / 1e9) * span_gb, "mbps": np.asarray(f["mbps"], float)}
            hint = {"series": f"measured_{i}", "x": "written_gb", "kind": "line",
                    "y": [{"series": f"measured_{i}", "y": "mbps", "label": "measured", "unit": "MB/s"},
                          {"series": f"fitted_{i}", "y": "mbps", "label": "fitted", "unit": "MB/s"}],
                    "title": f"{m.label}: fill MB/s vs GB written, measured vs fitted", "label": f"{m.label} MB/s",
                    "xlabel": "written (GB)", "ylabel": "MB/s"}
        else:
            cols = [c for c in m.series if c.endswith("_iops") and c != "iops"]
            ms = {"t_s": m.series.get("t_s", np.zeros(0)), **{c: m.series[c] for c in cols}}
            fser = sim["series"]
            fs = {"t_s": np.asarray(fser.get("t_s", np.zeros(0)), float),
                  **{c: np.asarray(fser[c], float) for c in cols if c in fser}}
            ys = [{"series": f"measured_{i}", "y": c, "label": f"measured {c[:-5]}", "unit": "IOPS"} for c in cols]
            ys += [{"series": f"fitted_{i}", "y": c, "label": f"fitted {c[:-5]}", "unit": "IOPS"} for c in cols if c in fs]
            hint = {"series": f"measured_{i}", "x": "t_s", "kind": "line", "logy": True, "y": ys,
                    "title": f"{m.label}: IOPS by direction, measured vs fitted", "label": f"{m.label} IOPS",
                    "xlabel": "time (s)", "ylabel": "IOPS"}
        out.append((m.test, ms, fs, hint))
    return out


def _si(v: float, _pos=None) -> str:
    """Axis numbers as the project's plots write them: 500, 2K, 35K, 1.2M."""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}K"
    return f"{v:g}"


def _written(series: dict) -> np.ndarray:
    mbps = np.asarray(series["mbps"], float)
    t = np.asarray(series.get("t_s", np.arange(len(mbps))), float)
    step = float(t[1] - t[0]) if len(t) > 1 else 1.0
    dt = np.asarray(series.get("dt_s", np.full(len(mbps), step)), float)
    return np.cumsum(mbps * dt) / 1e3


def plot_fit(run: FitRun, folder: Path, pairs) -> list[Path]:
    """``fit.png`` and ``fit.svg``: measured | fitted, one row per measured folder."""
    import matplotlib
    import matplotlib.ticker
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from .. import plots

    rows = len(pairs)
    with matplotlib.rc_context({"svg.hashsalt": "ssdlab", "svg.fonttype": "path", "font.size": 9,
                                "axes.titlesize": 10, "path.simplify": True}):
        fig = Figure(figsize=(11.0, 3.6 * rows), dpi=100, layout="constrained")
        FigureCanvasAgg(fig)
        axes = fig.subplots(rows, 2, squeeze=False, sharey="row")
        full = fitted_outputs(run)[1]
        for r, ((kind, ms, fs, hint), m) in enumerate(zip(pairs, run.measured)):
            for c, (label, s, color) in enumerate((("measured", ms, "#1f5fa8"), ("fitted", fs, "#d9822b"))):
                ax = axes[r][c]
                if kind == "consistency":
                    y = np.asarray(s["iops"], float)
                    t = np.asarray(s["t_s"], float)
                    zero = y <= 0
                    ax.scatter(t[~zero], y[~zero], s=4, color=color, linewidths=0, rasterized=len(y) > 20000)
                    if zero.any():
                        ax.scatter(t[zero], np.full(int(zero.sum()), 1.0), s=16, marker="v", color=color,
                                   edgecolors="black", linewidths=0.4, label=f"0 IOPS (drawn at 1): {int(zero.sum())}")
                        ax.legend(loc="lower right", fontsize=7)
                    ax.set_yscale("log")
                    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
                    ax.set_xlabel("time (s)" + (f", simulated x 1/{run.scales[r]:.3g}" if c and run.scales[r] < 1 and not full
                                                  else ""))
                    ax.set_ylabel("IOPS (per interval)")
                elif kind == "fill":
                    ax.plot(s["written_gb"], s["mbps"], color=color, linewidth=1.2)
                    ax.set_xlabel("written (GB)" + (" (simulated share x measured span)"
                                                    if c and run.scales[r] < 1 and not full else ""))
                    ax.set_ylabel("MB/s")
                else:
                    for col in [k for k in s if k.endswith("_iops")]:
                        ax.plot(s["t_s"], np.where(np.asarray(s[col]) > 0, s[col], np.nan), linewidth=1.1,
                                label=col[:-5])
                    ax.set_yscale("log")
                    ax.set_xlabel("time (s)")
                    ax.set_ylabel("IOPS by direction")
                    ax.legend(loc="best", fontsize=7)
                ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_si))
                ax.grid(True, which="major", color="0.85", linewidth=0.7)
                ax.set_axisbelow(True)
                what = ("measured" if c == 0 else
                        f"fitted.toml at full size (distance {run.checks['full']['distance']:.3f})" if full
                        else f"fitted (distance {run.best['distance']:.3f})")
                ax.set_title(f"{m.label} — {what}", loc="left")
            # One labelled range per row (the two panels share y): whole decades on log axes,
            # from 0 on the fill's MB/s.
            xcol = "written_gb" if kind == "fill" else "t_s"
            ycols = lambda s: ["mbps"] if kind == "fill" else ["iops"] if kind == "consistency" else [  # noqa: E731
                k for k in s if k.endswith("_iops")]
            y_row = np.concatenate([np.asarray(s[k], float) for s in (ms, fs) for k in ycols(s)] or [np.zeros(0)])
            for c, s in enumerate((ms, fs)):
                plots.label_range(axes[r][c], np.asarray(s[xcol], float), y_row, logy=kind != "fill",
                                  zeros_at=1.0 if kind == "consistency" else None)
        paths = [plots.save_figure(fig, folder / f"fit.{fmt}") for fmt in ("png", "svg")]
    return paths


# --------------------------------------------------------------------------- summary, report, terminal

def term_table(terms: list[dict]) -> dict:
    return {"title": "distance terms: measured vs fitted (error = |ln((fitted + floor)/(measured + floor))|)",
            "columns": ["term", "measured", "fitted", "error", "weight", "unit", "what"],
            "rows": [[t["term"], t["measured"], t["fitted"], round(t["error"], 4), t["weight"], t["unit"], t["what"]]
                     for t in terms],
            "note": "distance = sum(weight x error) / sum(weight); 0.1 is about 10 % off"}


def key_table(ident: list[dict]) -> dict:
    rows = []
    for r in ident:
        rows.append([r["key"], r["fitted"], r["lo"], r["hi"], r["unit"], r["near_min"], r["near_max"],
                     round(r["near_spread_pct"], 1), None if r["sensitivity"] is None else round(r["sensitivity"], 4),
                     r["verdict"], r["why"] or r["scale_note"] or ""])
    tol = ident[0]["near_tolerance"] if ident else None
    return {"title": "searched keys: fitted value and identifiability",
            "columns": ["key", "fitted", "lo", "hi", "unit", "near-best min", "near-best max",
                        "near-best spread (% of range)", "distance rise per 10 % of range", "verdict", "why"],
            "rows": rows,
            "note": f"near-best: the candidates whose distance is within {tol if tol is None else round(tol, 4)} of "
                    "the best (the distance's noise and the scaled drive's deviation, as the checks measured "
                    "them); rise: distance change when only this key moves near the best. Pinned: the "
                    "measurement fixes the key within the near-best range; not identified: other values fit as well"}


def checks_summary(run: FitRun) -> dict | None:
    """The checks (:func:`ssdlab.fit.core.run_checks`) and the tolerance built on them."""
    if run.best is None:
        return None
    tol = near_tolerance(run)
    c = run.checks
    out = {**tol, "seed_distances": [x["distance"] for x in c["seeds"]] if c else [],
           "floor": (c or {}).get("floor"), "failed": (c or {}).get("failed")}
    if c and c.get("full"):
        f = c["full"]
        out["full_size"] = {"distance": f["distance"], "deviation": f["deviation"], "terms": f["terms"],
                            "deviation_terms": f["deviation_terms"]}
    return out


def finish(run: FitRun, rd: results.ResultsDir, *, argv, backend: dict, complete: bool, reason: str | None,
           progress_note: str | None = None) -> dict:
    """Writes every output (what there is after Ctrl-C too) and returns the summary."""
    folder = rd.path
    written = write_history(run, folder)
    ident = identifiability(run)
    summary: dict = {"test": "fit", "target": f"sim:{folder / FITTED_NAME}", "label": "ssdlab fit",
                     **results.run_metadata(argv)}
    summary["measured"] = [{"folder": str(m.folder), "test": m.test, "capacity_bytes": m.capacity_bytes,
                            "repro": {k: v for k, v in m.repro.items() if k not in ("job_text",)},
                            "warnings": m.warnings} for m in run.measured]
    summary["base_profile"] = run.base.source
    summary["scale"] = run.scale
    summary["scaling"] = [{"folder": str(m.folder), "factor": sc.factor, "pages_per_block": sc.pages_per_block,
                           "full_pages_per_block": sc.full_pages_per_block,
                           "write_buffer_floor_bytes": sc.buffer_floor_bytes if sc.scaled else None}
                          for m, sc in zip(run.measured, run.scalings)]
    summary["seed"] = run.seed
    summary["simulation_seed"] = run.sim_seed
    summary["search"] = {
        "optimizer": "Latin hypercube sample, cross-entropy refinement (Gaussian with full covariance fitted "
                     "to the best candidates), a +/-10 % probe per key (ssdlab.fit.search), then the checks: the "
                     "best simulated with other seeds and, when scaled, at full size (ssdlab.fit.core.run_checks)",
        "evals_budget": run.evals, "evals_simulated": run.used,
        "refused_candidates": sum(1 for r in run.rows if r["eval"] is None),
        "backend": backend, "wall_s": time.perf_counter() - run.started}
    summary["keys"] = [k.to_json() for k in run.keys]
    summary["history_files"] = [p.name for p in written]
    summary["complete"] = complete
    if run.best is None:
        summary["distance"] = None
        summary["error"] = reason or "no candidate could be simulated"
        rd.write_summary(summary)
        return summary
    summary["distance"] = run.best["distance"]
    summary["best_eval"] = run.best["eval"]
    summary["terms"] = run.best["terms"]
    summary["identifiability"] = ident
    summary["checks"] = checks_summary(run)
    summary["fitted"] = {k.name: run.best["realized"][k.name] for k in run.keys}
    fitted_path, prof = write_fitted(run, folder, ident)
    summary["fitted_profile"] = fitted_path.name
    summary["profile"] = prof.values
    summary["geometry"] = prof.geometry
    pairs = comparison_series(run)
    for i, (_, ms, fs, _) in enumerate(pairs, start=1):
        rd.write_series(f"measured_{i}", ms)
        rd.write_series(f"fitted_{i}", fs)
    summary["plot"] = [h for *_, h in pairs]
    summary["plots"] = [p.name for p in plot_fit(run, folder, pairs)]
    summary["tables"] = [term_table(run.best["terms"]), key_table(ident)]
    if (summary["checks"] or {}).get("full_size"):
        full = term_table(summary["checks"]["full_size"]["terms"])
        full["title"] = "fitted.toml at full size (the check): measured vs simulated"
        summary["tables"].insert(1, full)
    summary["term_definitions"] = dist.__doc__
    rd.write_summary(summary)
    try:
        from .. import report
        from ..procedures.declare import metrics_by_test

        report.write_report([folder], folder / "report.html", metrics=metrics_by_test())
    except Exception as e:  # noqa: BLE001 - the fit is on disk already
        summary["report_error"] = f"{type(e).__name__}: {e}"
        rd.write_summary(summary)
        print(f"ssdlab fit: could not write {folder / 'report.html'}: {summary['report_error']}", file=sys.stderr)
    return summary


def _cell(v, unit: str = "") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        if unit == "bytes":
            return f"{v / 1e9:,.3g} GB" if abs(v) >= 1e9 else f"{v / 1e6:,.3g} MB"
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)


def show(summary: dict, out: str) -> None:
    """The table printed at the end."""
    s = summary["search"]
    where = (f"dask {s['backend'].get('scheduler')}" if s["backend"]["kind"] == "dask"
             else f"{s['backend']['workers']} process{'es' if s['backend']['workers'] != 1 else ''}")
    tests = ", ".join(f"{m['test']} {m['folder']}" for m in summary["measured"])
    print(f"fit of {tests}")
    scaled = [x for x in summary.get("scaling", []) if x["factor"] < 1]
    scale = (f"scale {scaled[0]['factor']:.4g} ({scaled[0]['pages_per_block']} of {scaled[0]['full_pages_per_block']} "
             "pages per block)" if scaled else "full size")
    print(f"  base {summary['base_profile']}, {scale}, seed {summary['seed']}: "
          f"{s['evals_simulated']} of {s['evals_budget']} simulations on {where} in {s['wall_s']:.1f} s"
          + (f" ({s['refused_candidates']} candidates refused by the simulator)" if s["refused_candidates"] else ""))
    if summary.get("distance") is None:
        print(f"  no fit: {summary.get('error')}")
        return
    print(f"  distance {summary['distance']:.4f} (weighted mean of the term errors; 0.1 ~ 10 % off)")
    rows = [["term", "measured", "fitted", "error", "weight"]]
    for t in summary["terms"]:
        rows.append([t["term"], _cell(t["measured"], t["unit"]) + (f" {t['unit']}" if t["measured"] is not None
                                                                  and t["unit"] not in ("", "bytes") else ""),
                     _cell(t["fitted"], t["unit"]) + (f" {t['unit']}" if t["fitted"] is not None
                                                       and t["unit"] not in ("", "bytes") else ""),
                     f"{t['error']:.3f}", f"{t['weight']:g}"])
    _table(rows)
    ident = summary["identifiability"]
    c = summary.get("checks") or {}
    if c.get("checked"):
        seeds = ", ".join(f"{d:.4f}" for d in c["seed_distances"])
        floor = "" if c.get("floor") is None else (
            f"; two of those runs are {c['floor']:.4f} apart, so the best misfits by {c['misfit']:.4f}")
        print(f"  checks: the best re-simulated with {len(c['seed_distances'])} other seeds: {seeds} (noise "
              f"{c['noise']:.4f}{floor})")
        if c.get("full_size"):
            f = c["full_size"]
            print(f"  at full size (fitted.toml itself): distance {f['distance']:.4f}; the scaled drive deviates "
                  f"from it by {f['deviation']:.4f}")
    elif c:
        print(f"  no checks ({c.get('failed') or 'the budget is too small for them'}): no key is called pinned")
    if ident:
        print(f"  identifiability: values of each key among the {ident[0]['near_candidates']} candidates within "
              f"{ident[0]['near_tolerance']:.3f} of the best distance"
              + (" (2 x noise + deviation + misfit, at least 0.02)" if c.get("checked") else "")
              + "; rise = distance change per 10 % of the range")
    rows = [["key", "fitted", "range", "near-best values", "spread", "rise/10%", "identifiability"]]
    for r, k in zip(ident, summary["keys"]):
        key = Key(k["name"], k["lo"], k["hi"], k["scale"], k["integer"], k["unit"])
        rows.append([r["key"], key.text(r["fitted"]), key.range_text(),
                     f"{key.text(r['near_min']).split(' ')[0]}..{key.text(r['near_max'])}",
                     f"{r['near_spread_pct']:.0f} %",
                     "n/a" if r["sensitivity"] is None else f"{r['sensitivity']:+.3f}", r["verdict"]])
    _table(rows, text_last=True)
    for r in ident:
        if r.get("scale_note"):
            print(f"  {r['key']}: {r['scale_note']}")
        elif r.get("why") and not r["why"].startswith("trades off"):  # a trade-off: the line below
            print(f"  {r['key']} is not pinned: {r['why']}")
        for t in r["trades_off_with"]:
            if r["key"] < t["key"]:
                print(f"  {r['key']} and {t['key']} trade off (r = {t['r']:+.2f} among the near-best candidates): "
                      "the data pins a combination of them")
    print(f"  fitted profile: {out}/{summary['fitted_profile']} (use --target sim:{out}/{summary['fitted_profile']})")
    print(f"  results in {out}/ (fit.png, history.csv, summary.json, report.html)")


def _table(rows: list[list[str]], text_last: bool = False) -> None:
    """Rows of cells, the first row the header: first column left-aligned, numbers right;
    ``text_last``: the last column is text (left-aligned)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    last = len(widths) - 1
    for r in rows:
        print("  " + "  ".join(c.ljust(w) if i == 0 or (text_last and i == last) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
