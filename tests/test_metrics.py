"""A test's figures declared once (:class:`ssdlab.charts.Metric`): ``compare``'s headline
figures, the report's tables and ``grid``'s columns, table headers, decimals and plot labels
all come from it, and every declared figure is where its test's summary puts it."""
from __future__ import annotations

import re

from ssdlab import grid, report
from ssdlab.commands.report import compare_rows, declared_metrics
from ssdlab.procedures.declare import Metric, by_summary_name, headline_of


def missing_metrics(test: str, summary: dict) -> list[str]:
    """The figures ``test`` declares that ``summary`` has no place for (a null value is a
    figure the run did not find, not a missing one): their keys."""
    out = []
    for m in by_summary_name()[test].metrics:
        v: object = summary
        for k in m.where[:-1]:
            v = v.get(k) if isinstance(v, dict) else None
        last = m.where[-1]
        if not (isinstance(v, list) and isinstance(last, int) or isinstance(v, dict) and last in v):
            out.append(m.key)
    return out


def test_headline_of_gives_the_marked_metrics_in_order_reading_their_paths():
    metrics = (Metric("a_iops", "a", "IOPS", headline=True), Metric("b_s", "b", "s"),
               Metric("wa", "write amplification, used", path=("states", "used", "write_amplification"), headline=True),
               Metric("c_bytes", "c", "GB", scale=1e-9, headline=True),
               Metric("lat_us.p99", "p99", "µs", headline=True), Metric("first", "first", path=("l", 0), headline=True))
    s = {"a_iops": 5.0, "b_s": 2.0, "states": {"used": {"write_amplification": 2.5}}, "c_bytes": 3_000_000_000,
         "lat_us": {"p99": 7.0}, "l": [4.0, 1.0]}
    assert headline_of(metrics)(s) == [("a", "IOPS", 5.0), ("write amplification, used", "", 2.5), ("c", "GB", 3.0),
                                       ("p99", "µs", 7.0), ("first", "", 4.0)]
    assert metrics[2].value({"states": "n/a"}) is None and metrics[0].value({}) is None
    assert metrics[5].value({"l": []}) is None


def test_grid_columns_and_labels_come_from_the_tests_declarations():
    tests = by_summary_name()
    for name in grid.TESTS:
        declared = {m.key: m for m in tests[name].metrics}
        cols = grid.metrics(name)
        assert list(cols)[:len(declared)] == list(declared)
        assert set(grid.PLOT_METRICS[name]) | set(grid.TABLE_METRICS[name]) <= set(declared)
        assert all(declared[c].decimals is not None for c in grid.TABLE_METRICS[name])
        for key, m in declared.items():
            assert cols[key] == m.where
    assert grid._metric_label("consistency", "zero_iops_seconds") == "time at zero IOPS (s)"
    assert grid._metric_label("used", "used_vs_new_pct") == "used vs new (%)"


def test_every_test_with_headline_figures_declares_them():
    """compare's figures of a test are its declared ones: a test declaring none has a headline
    built of other tests' (review: its parts') or of a list (trace: per variant)."""
    for name, t in by_summary_name().items():
        if t.metrics:
            assert t.headline is not None, name
            labels = [m.label for m in t.metrics if m.headline]
            assert labels, name
    assert not by_summary_name()["review"].metrics


def test_keys_are_declared_once_per_test():
    for name, ms in declared_metrics().items():
        keys = [m.key for m in ms]
        assert len(keys) == len(set(keys)), name


def test_missing_metric_check_catches_a_planted_omission():
    s = {"write_mbps_mean": 1.0, "write_mbps_min": None, "write_mbps_max": 2.0, "read_mbps_mean": 1.0,
         "read_mbps_min": 1.0, "read_mbps_max": 1.0}
    assert missing_metrics("sweep", s) == []
    del s["write_mbps_max"]
    assert missing_metrics("sweep", s) == ["write_mbps_max"]
    fill = {m.key: 1.0 for m in by_summary_name()["fill"].metrics} | {"after_cache_mbps": []}
    assert missing_metrics("fill", fill) == []
    assert missing_metrics("fill", {**fill, "after_cache_mbps": None}) == ["after_cache_mbps"]


def test_compare_rows_of_an_analyze_run_are_the_declared_analysis_figures():
    """A run with no test of its own (``analyze``) shows every figure an analyze run
    declares that it has, labelled and keyed as declared; bytes shown as GB keep a
    ``test:label`` key."""
    s = {"test": "analyze", "span_pct": 100, "duration_s": 60.0, "iops_mean": 1000.0, "read_iops_mean": 10.0,
         "latency_us": {"p99.9": 250.0}, "host_write_bytes": 2_000_000_000, "bimodal": False}
    rows = {label: (key, unit, vals[0]) for key, label, unit, vals in compare_rows([s])}
    assert rows["IOPS mean"] == ("iops_mean", "IOPS", 1000.0)
    assert rows["read IOPS mean"] == ("read_iops_mean", "IOPS", 10.0)
    assert rows["latency p99.9 (µs)"] == ("latency_us.p99.9", "µs", 250.0)
    assert rows["host writes (GB)"] == ("analyze:host writes", "GB", 2.0)
    assert rows["bimodal"][2] is False
    assert not any(k.startswith("steady") for k in rows)  # rows no run has a value for are left out


def test_the_reports_metrics_table_is_the_declared_figures_in_declared_order(tmp_path):
    from ssdlab import results

    rd = results.ResultsDir(tmp_path / "a")
    rd.write_series("series", {"t_s": [1.0, 2.0], "iops": [5.0, 6.0]})
    rd.write_summary({"test": "consistency", "target": "sim:x", "complete": True, "iops_max": 6.0, "iops_mean": 5.5,
                      "host_write_bytes": 3_000_000_000})
    text = report.write_report([rd.path], tmp_path / "r.html", metrics=declared_metrics()).read_text()
    table = re.search(r'id="metrics-consistency".*?</table>', text, re.S).group(0)
    rows = re.findall(r'<th scope="row">([^<]*)</th><td[^>]*>([^<]*)</td>', table)
    assert [r for r in rows if r[0] not in ("span (%)", "duration (s)")] == [
        ("IOPS mean", "5.5"), ("IOPS max", "6"), ("host writes (GB)", "3")]
    cons = by_summary_name()["consistency"].metrics
    planted = {**declared_metrics(), "consistency": tuple(m for m in cons if m.key != "iops_max")}
    text = report.write_report([rd.path], tmp_path / "r.html", metrics=planted).read_text()
    assert "IOPS max" not in re.search(r'id="metrics-consistency".*?</table>', text, re.S).group(0)


def test_the_reports_values_are_labelled_as_the_runs_own_test_declares_them(tmp_path):
    """``write_mbps_mean`` is a sweep's mean over its zones and a run's over its time."""
    from ssdlab import results

    rd = results.ResultsDir(tmp_path / "s")
    rd.write_summary({"test": "sweep", "target": "sim:x", "complete": True, "write_mbps_mean": 400.0,
                      "cache_bytes": 5_000_000_000})
    text = report.write_report([rd.path], tmp_path / "r.html", metrics=declared_metrics()).read_text()
    rows = dict(re.findall(r'<th scope="row">([^<]*)</th><td[^>]*>([^<]*)</td>', text))
    assert rows["write mean over the zones (MB/s)"] == "400" and "write MB/s mean" not in rows
    assert rows["write cache (GB)"] == "5"  # another test's figure: as that test declares it


def test_a_label_and_unit_name_one_figure():
    """compare finds a headline row's key by its label and unit: no two declared figures
    share them."""
    named: dict[tuple[str, str], str] = {}
    for ms in declared_metrics().values():
        for m in ms:
            assert named.setdefault((m.label, m.unit), m.key) == m.key, m
