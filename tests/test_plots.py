"""Review scatter plots, line and bar plots: files, pixels, stalls on log axes, axis limits."""
from __future__ import annotations

import numpy as np
import pytest
from matplotlib import image as mpimg
from matplotlib.colors import to_rgb

from ssdlab import plots
from ssdlab.plots import (
    NICE_MANTISSAS,
    bar_table_figure,
    bar_table_plot,
    consistency_figures,
    consistency_plots,
    consistency_plots_multi,
    line_figure,
    line_plot,
    nice_ceil,
    save_figure,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def review_like(n: int = 2000, seed: int = 3, steady_hi: float = 30000.0) -> dict[str, np.ndarray]:
    """FOB ~80K IOPS for 300 s, then bimodal steady state (~100 / ~steady_hi) with 1% stalls."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=float)
    fob = 80000 * np.exp(rng.normal(0, 0.03, n))
    high = rng.random(n) < 0.4
    steady = np.where(high, rng.normal(steady_hi, steady_hi * 0.05, n), 100 * np.exp(rng.normal(0, 0.4, n)))
    iops = np.where(t < 300, fob, steady)
    iops[(t >= 300) & (rng.random(n) < 0.01)] = 0.0
    return {"t_s": t, "iops": iops, "mbps": iops * 4096 / 1e6}


def _collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    return found[0] if found else None


def _legend_texts(ax):
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg else []


def _check_png(path, shape=(450, 1000)):
    assert path.read_bytes()[:8] == PNG_MAGIC, path
    img = mpimg.imread(path)[..., :3]
    assert img.shape[:2] == shape, path
    assert img.var() > 0, f"{path} is blank"
    non_white = np.mean(img.min(axis=2) < 0.95)
    assert 0.01 < non_white < 0.6, f"{path}: {non_white:.1%} non-white pixels"
    return img


# --------------------------------------------------------------------------- consistency files

def test_consistency_plots_write_three_views_png_and_svg(tmp_path):
    paths = consistency_plots(tmp_path, review_like(), title="sim:default 4 KiB random write QD32")
    names = [p.name for p in paths]
    assert names == [
        "consistency_log.png", "consistency_log.svg",
        "consistency_steady_log.png", "consistency_steady_log.svg",
        "consistency_steady_linear.png", "consistency_steady_linear.svg",
    ]
    for p in paths:
        assert p.exists() and p.parent == tmp_path
        if p.suffix == ".png":
            _check_png(p)
        else:
            head = p.read_text()[:400]
            assert head.startswith("<?xml") and "<svg" in head
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_output_is_deterministic(tmp_path):
    fig = consistency_figures({"run": review_like(300)}, title="t")["log"]
    a = save_figure(fig, tmp_path / "a.png").read_bytes()
    b = save_figure(fig, tmp_path / "b.png").read_bytes()
    assert a == b
    sa = save_figure(fig, tmp_path / "a.svg").read_text()
    sb = save_figure(fig, tmp_path / "b.svg").read_text()
    assert sa == sb
    assert "<dc:date>" not in sa


# --------------------------------------------------------------------------- stalls

def test_log_plot_draws_zero_iops_at_floor_with_legend():
    n = 100
    iops = np.zeros(n)
    iops[[10, 50, 90]] = [5000.0, 20000.0, 300.0]
    figs = consistency_figures({"run": {"t_s": np.arange(n, dtype=float), "iops": iops}}, title="stalls")
    ax = figs["log"].axes[0]
    assert ax.get_yscale() == "log"
    stalls = _collection(ax, "stalls:IOPS per 1 s interval")
    assert stalls is not None, [c.get_gid() for c in ax.collections]
    off = stalls.get_offsets()
    assert len(off) == n - 3
    assert np.all(off[:, 1] == 1.0)  # drawn at the floor, y=1
    assert sorted(off[:, 0]) == sorted(set(range(n)) - {10, 50, 90})
    lo, hi = ax.get_ylim()
    assert lo == 1.0 < hi  # the floor is the axis' bottom, a labelled decade
    tip_up = stalls.get_paths()[0].vertices
    assert tip_up[:, 1].min() == 0.0 < tip_up[:, 1].max()  # the mark stands on the floor, inside the axes
    assert any("0 IOPS (stall), drawn at 1" in t and "97 intervals" in t for t in _legend_texts(ax))
    dots = _collection(ax, "iops:IOPS per 1 s interval")
    assert len(dots.get_offsets()) == 3

    # zoom: 70% of a 100 s run -> only stalls from t=70 on
    steady = figs["steady_log"].axes[0]
    assert steady.get_xlim() == (70.0, 100.0)
    assert len(_collection(steady, "stalls:IOPS per 1 s interval").get_offsets()) == 30 - 1


def test_stalls_are_visible_in_the_pixels(tmp_path):
    """The red stall markers must really be drawn (not clipped by the log axis)."""
    n = 200
    iops = np.zeros(n)
    iops[::20] = 30000.0
    fig = consistency_figures({"run": {"t_s": np.arange(n, dtype=float), "iops": iops}}, title="t")["log"]
    img = mpimg.imread(save_figure(fig, tmp_path / "stalls.png"))[..., :3]
    red = np.array(to_rgb(plots._STALL_COLOR))
    close = np.abs(img - red).max(axis=2) < 0.08
    rows = np.nonzero(close.any(axis=1))[0]
    assert close.sum() > 200, "stall markers not drawn"
    # y=1 is the bottom of the plotting area: the red marks sit in the lower part of the image
    assert rows.min() > img.shape[0] * 0.6


def test_no_stall_marks_or_legend_entry_without_zeros():
    s = review_like()
    s["iops"] = np.where(s["iops"] == 0, 50.0, s["iops"])
    ax = consistency_figures({"run": s}, title="t")["log"].axes[0]
    assert not [c for c in ax.collections if (c.get_gid() or "").startswith("stalls:")]
    assert not [t for t in _legend_texts(ax) if "stall" in t]


def test_stalls_also_marked_on_linear_plot_at_zero():
    ax = consistency_figures({"run": review_like()}, title="t")["steady_linear"].axes[0]
    stalls = [c for c in ax.collections if (c.get_gid() or "").startswith("stalls:")]
    assert stalls and np.all(stalls[0].get_offsets()[:, 1] == 0.0)
    assert any("drawn at 0" in t for t in _legend_texts(ax))


# --------------------------------------------------------------------------- axes

def test_linear_plot_tops_out_at_40k_for_a_typical_drive():
    figs = consistency_figures({"run": review_like()}, title="t")
    ax = figs["steady_linear"].axes[0]
    assert ax.get_yscale() == "linear"
    assert ax.get_ylim() == (0.0, 40000.0)
    assert ax.get_xlim() == (1400.0, 2000.0)  # reviews zoom from t=1400 s on 2000 s runs
    assert figs["steady_log"].axes[0].get_xlim() == (1400.0, 2000.0)
    assert figs["log"].axes[0].get_xlim() == (0.0, 2000.0)
    assert ax.get_xlabel() == "time (s)" and ax.get_ylabel() == "IOPS (4 KiB)"


def test_linear_plot_grows_to_a_nice_top_when_data_demands():
    s = review_like(steady_hi=60000.0)
    zoom = s["iops"][s["t_s"] >= 1400]
    p995 = np.percentile(zoom, 99.5)
    assert p995 > 40000
    top = consistency_figures({"run": s}, title="t")["steady_linear"].axes[0].get_ylim()[1]
    assert top >= p995 and top > 40000
    mantissa = top / 10 ** np.floor(np.log10(top))
    assert any(np.isclose(mantissa, m) for m in NICE_MANTISSAS)
    assert top < 1.5 * p995


def test_a_few_outliers_do_not_raise_the_linear_top():
    s = review_like()
    s["iops"][1500:1502] = 90000.0  # 2 of 600 points: below the 0.5% tail
    ax = consistency_figures({"run": s}, title="t")["steady_linear"].axes[0]
    assert ax.get_ylim()[1] == 40000.0
    assert [t.get_text() for t in ax.texts if t.get_gid() == "above_top"] == ["2 intervals above 40K not shown"]
    assert _collection(ax, "iops:IOPS per 1 s interval").get_offsets()[:, 1].max() <= 40000.0  # as the note says
    assert plots.figure_problems(ax.figure) == []


def test_explicit_limits_and_zoom():
    figs = consistency_figures({"run": review_like()}, title="t", zoom_start_s=1000,
                               linear_top_iops=50000, log_top_iops=1e6)
    assert figs["steady_linear"].axes[0].get_ylim() == (0.0, 50000.0)
    assert figs["steady_linear"].axes[0].get_xlim() == (1000.0, 2000.0)
    assert figs["log"].axes[0].get_ylim()[1] == 1e6
    with pytest.raises(ValueError, match="zoom_start_s=2500"):
        consistency_figures({"run": review_like()}, title="t", zoom_start_s=2500)


def test_missing_column_is_named():
    with pytest.raises(ValueError, match="'iops'"):
        consistency_figures({"run": {"t_s": np.arange(3.0)}}, title="t")


def test_accepts_a_phase_result(tmp_path):
    from ssdlab.targets.base import JobSpec, PhaseResult

    pr = PhaseResult(job=JobSpec(name="rw", pattern="randwrite"), series=review_like(500))
    figs = consistency_figures({"default": pr}, title="t")
    assert figs["steady_log"].axes[0].get_xlim() == (350.0, 500.0)


def test_nice_ceil():
    assert nice_ceil(40000) == 40000
    assert nice_ceil(41000) == 50000
    assert nice_ceil(57000) == 60000
    assert nice_ceil(0.013) == 0.015
    with pytest.raises(ValueError):
        nice_ceil(0)


# --------------------------------------------------------------------------- several runs

def test_multi_overlays_runs_with_distinct_colours_and_legend(tmp_path):
    runs = {"default": review_like(seed=1), "25% spare area": review_like(seed=2, steady_hi=35000)}
    figs = consistency_figures(runs, title="t")
    for view in plots.VIEWS:
        ax = figs[view].axes[0]
        a, b = _collection(ax, "iops:default"), _collection(ax, "iops:25% spare area")
        assert a is not None and b is not None
        assert not np.allclose(a.get_facecolor()[0], b.get_facecolor()[0])
        texts = _legend_texts(ax)
        assert "default" in texts and "25% spare area" in texts
    # stem and formats pick the file names
    paths = consistency_plots_multi(tmp_path, runs, title="t", stem="overlay", formats=("png",))
    assert [p.name for p in paths] == ["overlay_log.png", "overlay_steady_log.png", "overlay_steady_linear.png"]
    _check_png(paths[0])


# --------------------------------------------------------------------------- lines and bars

def test_line_plot(tmp_path):
    x = np.linspace(0, 100, 101)
    ys = {"fresh": np.full(101, 450.0), "dirty": np.r_[np.zeros(3), np.full(98, 120.0)]}
    paths = line_plot(tmp_path / "sweep.png", x, ys, "LBA position (%)", "MB/s", "sequential write sweep", logy=True)
    assert paths == [tmp_path / "sweep.png"]
    _check_png(paths[0])
    ax = line_figure(x, ys, "LBA position (%)", "MB/s", "s", logy=True).axes[0]
    zeros = _collection(ax, "zeros:dirty")
    assert zeros is not None and len(zeros.get_offsets()) == 3
    assert ax.get_xlabel() == "LBA position (%)" and ax.get_ylabel() == "MB/s"
    both = line_plot(tmp_path / "trace", x, ys, "x", "y", "t", formats=("png", "svg"))
    assert [p.name for p in both] == ["trace.png", "trace.svg"]
    with pytest.raises(ValueError, match="'dirty' has shape"):
        line_plot(tmp_path / "bad.png", x, {"dirty": np.ones(5)}, "x", "y", "t")


def test_bar_table_plot(tmp_path):
    rows = {"new": 85000.0, "used": 31000.0, "used + TRIM": None, "used + 30 min idle": 61000.0}
    paths = bar_table_plot(tmp_path / "used_vs_new.png", rows, "IOPS (4 KiB)", "used vs new", highlight="used")
    img = mpimg.imread(paths[0])[..., :3]
    assert img.var() > 0 and np.mean(img.min(axis=2) < 0.95) > 0.05
    ax = bar_table_figure(rows, "IOPS (4 KiB)", "used vs new").axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["85,000", "31,000", "n/a", "61,000"]
    assert [t.get_text() for t in ax.get_yticklabels()] == list(rows)


# --------------------------------------------------------------------------- latency

def latency_like(n: int = 300, seed: int = 4, directions=("write",)) -> dict[str, np.ndarray]:
    """Per-interval latency columns (us) as targets write them, with a gap where nothing completed."""
    from ssdlab.targets.base import LATENCY_STATS, latency_column

    rng = np.random.default_rng(seed)
    s = {"t_s": np.arange(n, dtype=float), "iops": np.full(n, 5000.0)}
    for d in directions:
        for (label, _), median in zip(LATENCY_STATS, (100.0, 900.0, 3000.0, 9000.0)):
            v = median * np.exp(rng.normal(0, 0.3, n))
            v[50:55] = np.nan  # nothing completed: not drawn
            s[latency_column(d, label)] = v
    return s


def test_latency_plot_draws_every_statistic_on_a_log_axis(tmp_path):
    series = latency_like()
    paths = plots.latency_plot(tmp_path / "latency", series, title="drive: latency", formats=("png", "svg"))
    assert [p.name for p in paths] == ["latency.png", "latency.svg"]
    img = _check_png(paths[0])
    for stat in ("p50", "max"):  # their fixed colours are in the pixels
        color = np.array(to_rgb(plots.LATENCY_COLORS[stat]))
        assert np.sum(np.all(np.abs(img - color) < 0.12, axis=2)) > 100, stat
    ax = plots.latency_figure(series, title="t").axes[0]
    assert ax.get_yscale() == "log" and ax.get_xlim() == (0.0, 300.0)
    for col in ("write_lat_p50_us", "write_lat_p99_us", "write_lat_p99_9_us", "write_lat_max_us"):
        dots = _collection(ax, f"latency:{col}")
        assert dots is not None and len(dots.get_offsets()) == 300 - 5, col
    assert _legend_texts(ax) == ["p50", "p99", "p99.9", "max"]


def test_latency_plot_names_directions_and_needs_latency_columns():
    ax = plots.latency_figure(latency_like(directions=("read", "write")), title="t").axes[0]
    assert _legend_texts(ax)[:2] == ["read p50", "read p99"] and "write max" in _legend_texts(ax)
    with pytest.raises(ValueError, match="no per-interval latency columns"):
        plots.latency_figure({"t_s": np.arange(3.0), "iops": np.ones(3)}, title="t")
    empty = latency_like()
    for c in [c for c in empty if "_lat_" in c]:
        empty[c][:] = np.nan  # columns without data count as none
    with pytest.raises(ValueError, match="no per-interval latency columns"):
        plots.latency_figure(empty, title="t")


# --------------------------------------------------------------------------- labelled ranges

def _labelled(axis) -> list[float]:
    locs = axis.get_majorticklocs()
    lo, hi = sorted(axis.axes.get_xlim() if axis is axis.axes.xaxis else axis.axes.get_ylim())
    locs = [v for v in locs if lo - abs(lo) * 1e-9 <= v <= hi + abs(hi) * 1e-9]
    return [v for v, t in zip(locs, axis.get_major_formatter().format_ticks(locs)) if t]


def test_every_figure_labels_the_range_of_its_data():
    s = review_like()
    s["t_s"] = s["t_s"] + 0.5  # a run that ends off a round number: 2000.5 s
    figs = consistency_figures({"run": s}, title="t")
    x = np.linspace(0.2, 7.5, 40)
    built = [*figs.values(),
             line_figure(x, {"fill": np.full(40, 380.0), "burst": (x[:5], np.full(5, 411.0))}, "GB", "MB/s", "t"),
             line_figure(x, {"a": np.r_[0.0, np.full(39, 3.2e4)]}, "x", "IOPS", "t", logy=True),
             bar_table_figure({"new": 372.4, "used": -15.3}, "MB/s", "t"),
             plots.latency_figure(latency_like(), title="t")]
    for fig in built:
        assert plots.figure_problems(fig) == [], fig.axes[0].get_title()
    log = figs["log"].axes[0]
    assert log.get_ylim() == (1.0, 1e5) and _labelled(log.yaxis)[-1] == 1e5  # FOB ~80K under a labelled 100K
    assert _labelled(log.xaxis)[-1] == log.get_xlim()[1] == 2000.5  # the end of the run is labelled
    fill = built[3].axes[0]
    assert fill.get_ylim()[0] == 0.0 and fill.get_ylim()[1] >= 411.0 and fill.get_xlim()[0] == 0.0
    assert {ln.get_gid() for ln in fill.lines} == {"line:fill", "line:burst"}
    lat = built[-1].axes[0]
    lo, hi = lat.get_ylim()
    assert np.log10(lo).is_integer() and np.log10(hi).is_integer()  # whole decades
    # p99.9 is drawn above max, and larger than p99 drawn above it: each one shows where they meet
    order = {c.get_gid().split("_lat_")[1]: c for c in lat.collections}
    assert order["max_us"].get_zorder() < order["p99_9_us"].get_zorder() < order["p99_us"].get_zorder()
    assert order["p99_9_us"].get_sizes()[0] > order["p99_us"].get_sizes()[0]
    assert len(order["max_us"].get_facecolors()) == 0 or order["max_us"].get_facecolors()[0][3] == 0  # hollow


def test_figure_problems_catch_a_clipped_chart(tmp_path, monkeypatch):
    from matplotlib.ticker import FixedLocator

    def fresh():
        return line_figure(np.arange(10.0), {"w": np.full(10, 450.0), "r": np.full(10, 210.0)}, "x", "MB/s", "t")

    fig = fresh()
    fig.axes[0].set_ylim(300, 400)  # the axis cuts the data off
    assert any("outside the axis" in p for p in plots.figure_problems(fig))
    fig = fresh()
    fig.axes[0].yaxis.set_major_locator(FixedLocator([0, 100, 200, 300, 400]))  # top of the axis unlabelled
    assert any("above the highest label (400)" in p for p in plots.figure_problems(fig))
    fig = fresh()
    fig.axes[0].xaxis.set_major_locator(FixedLocator([0, 2, 4, 6, 8]))  # the end (9) unlabelled
    assert any("x: highest value 9 above the highest label (8)" in p for p in plots.figure_problems(fig))
    fig = fresh()
    next(ln for ln in fig.axes[0].lines if ln.get_gid() == "line:r").remove()  # a series lost
    assert plots.figure_problems(fig) == ["series 'line:r' draws no point"]
    monkeypatch.setenv("SSDLAB_CHECK_PLOTS", "1")
    with pytest.raises(ValueError, match="clipped.png: the plot does not show its data"):
        save_figure(fig, tmp_path / "clipped.png")
    assert not (tmp_path / "clipped.png").exists()
    monkeypatch.setenv("SSDLAB_CHECK_PLOTS", "0")
    assert save_figure(fig, tmp_path / "clipped.png").exists()  # only checked when asked
