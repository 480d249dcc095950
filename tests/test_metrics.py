"""A test's figures declared once (:class:`ssdlab.procedures.declare.Metric`): ``compare``'s
headline figures, ``grid``'s columns, table headers and plot labels all come from it."""
from __future__ import annotations

from ssdlab import grid, report
from ssdlab.procedures.declare import Metric, by_summary_name, headline_of


def test_headline_of_gives_the_marked_metrics_in_order_reading_their_paths():
    metrics = (Metric("a_iops", "a", "IOPS", headline=True), Metric("b_s", "b", "s"),
               Metric("wa", "write amplification, used", path=("states", "used", "write_amplification"), headline=True))
    s = {"a_iops": 5.0, "b_s": 2.0, "states": {"used": {"write_amplification": 2.5}}}
    assert headline_of(metrics)(s) == [("a", "IOPS", 5.0), ("write amplification, used", "", 2.5)]
    assert metrics[2].value({"states": "n/a"}) is None and metrics[0].value({}) is None


def test_grid_columns_and_labels_come_from_the_tests_declarations():
    tests = by_summary_name()
    for name in grid.TESTS:
        declared = {m.key: m for m in tests[name].metrics}
        cols = grid.metrics(name)
        assert list(cols)[:len(declared)] == list(declared)
        assert {c for c in grid.PLOT_METRICS[name]} | {c for c, _ in grid.TABLE_METRICS[name]} <= set(declared)
        for key, m in declared.items():
            assert cols[key] == (m.path or (key,))
    assert grid._metric_label("consistency", "zero_iops_seconds") == "time at zero IOPS (s)"
    assert grid._metric_label("used", "used_vs_new_pct") == "used vs new (%)"


def test_consistency_metrics_are_labelled_as_the_reports_main_metrics():
    """``analyze`` runs have no declaration: compare matches their rows by the report's labels."""
    main = {k: (label, unit) for k, label, unit in report.MAIN_METRICS}
    for m in by_summary_name()["consistency"].metrics:
        if m.key in main:
            assert (m.label, m.unit) == main[m.key], m
