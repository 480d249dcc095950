"""One chart declaration (:class:`ssdlab.charts.Chart`), two renderers: the PNG/SVG files
(:func:`ssdlab.plots.chart_files`) and the report's chart from the declaration's ``plot``
hint say the same: title, axis labels, the lines and their labels and values."""
from __future__ import annotations

import numpy as np
import pytest

from ssdlab import plots, report
from ssdlab.charts import Chart, Line


def _two_series():
    fill = {"written_gb": np.array([1.0, 2.0, 3.0, 4.0]), "mbps": np.array([900.0, 880.0, 300.0, 310.0]),
            "fold_bytes": np.array([0.0, 0.0, 5e8, 6e8])}
    burst = {"written_gb": np.array([0.5, 1.0]), "mbps": np.array([950.0, 940.0])}
    return {"fill": fill, "burst": burst}


CHART = Chart("fill", "written_gb",
              (Line("mbps", "fill", "MB/s"), Line("fold_bytes", "folding", "MB/s", scale=1e-6),
               Line("mbps", "after 60 s idle", "MB/s", series="burst")),
              "drive: whole-drive fill", "written (GB)", "MB/s", label="MB/s vs written", file="fill")


def test_files_and_report_chart_come_from_the_one_declaration(tmp_path):
    series = _two_series()
    paths = plots.chart_files(tmp_path, [CHART, Chart("fill", "written_gb", CHART.lines[:1], "report only", "x",
                                                      "y")], series)
    assert sorted(p.name for p in paths) == ["fill.png", "fill.svg"]

    fig = plots.chart_figure(CHART, series)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    drawn = report._line_chart(CHART.hint(), "fill", series.get, errors := [], report.MAX_POINTS)
    assert not errors
    assert (ax.get_title(loc="left") or ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == \
        (drawn["title"], drawn["xlabel"], drawn["ylabel"])
    assert drawn["label"] == "MB/s vs written"
    assert [y["label"] for y in drawn["ys"]] == list(lines) == ["fill", "folding", "after 60 s idle"]
    for y in drawn["ys"]:
        np.testing.assert_allclose(y["values"], lines[y["label"]].get_ydata())
    # The burst's line is drawn against its own x in both.
    np.testing.assert_allclose(drawn["ys"][2]["x"], series["burst"]["written_gb"])
    np.testing.assert_allclose(lines["after 60 s idle"].get_xdata(), series["burst"]["written_gb"])
    np.testing.assert_allclose(lines["folding"].get_ydata(), [0, 0, 500, 600])


def test_a_line_the_series_lacks_is_an_error_in_both():
    series = _two_series()
    bad = Chart("fill", "written_gb", (Line("nope", "nope", "MB/s"),), "t", "x", "y", file="f")
    errors: list[str] = []
    assert report._line_chart(bad.hint(), "fill", series.get, errors, report.MAX_POINTS) is None
    assert errors and "nope" in errors[0]
    with pytest.raises(KeyError, match="nope"):
        plots.chart_figure(bad, series)
