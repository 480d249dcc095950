"""Every test leaves a report.html that works: sweep, recovery, used, trace run, analyze and
consistency, on small simulated drives (and a synthetic fio log for analyze), also after
Ctrl-C. Each page is opened in a real headless Chromium (the ``browser`` fixture of
test_report.py): no console errors or warnings, no network request (neither in Chromium's
network log nor in the Resource Timing API), and the charts the test should show exist and
have data drawn in them (coloured pixels, not just axes); at 1280 px every chart labels the
range of its data and nothing inside a card scrolls sideways (``page_problems``).

Set ``SSDLAB_SCREENSHOT_DIR`` to keep the screenshots.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from conftest import interrupt_cli, journalled, run_cli, set_args
from test_report import _attr, _canvas, _open, _page_data, _png_pixels, _shot_dir, browser, page_problems  # noqa: F401


# --------------------------------------------------------------------------- helpers

def _load_clean(driver, page: Path) -> None:
    """Opens ``page``: it must exist, finish its script, log nothing, fetch nothing, and show
    every chart's data inside its labelled range with no card scrolling sideways."""
    assert page.exists(), f"{page} was not written"
    logs, requests = _open(driver, page)
    assert [e for e in logs if e.get("level") in ("SEVERE", "WARNING")] == [], logs
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert requests == [page.resolve().as_uri()], requests
    assert page_problems(driver) == [], page


def _drawn(driver, section: str, shot: Path) -> int:
    """Asserts the chart ``section`` is shown with data series and coloured pixels in its plot
    (the screenshot goes to ``shot``); returns the number of coloured pixels: 100 at least,
    30 where the section counts fewer than 4 points (``data-points``; they may overlap): a lone
    sample's marker whole, not a half-hidden dot."""
    assert driver.execute_script(f"return document.getElementById('{section}').hidden") is False, section
    assert int(_attr(driver, section, "series") or 0) > 0, section
    assert int(_attr(driver, section, "renders") or 0) >= 1, section
    plot = driver.find_element("id", f"plot-{section}")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", plot)
    png = plot.screenshot_as_png
    shot.write_bytes(png)
    px = _png_pixels(png)
    assert px.shape[0] > 150 and px.shape[1] > 600, px.shape
    # Axes, grid and labels are grey or black; data are drawn in colour.
    coloured = int(((px.max(axis=2) - px.min(axis=2)) > 0.25).sum())
    points = _attr(driver, section, "points")
    least = 30 if points and int(points) < 4 else 100
    assert coloured > least, f"{section}: only {coloured} coloured pixels for {points or 'its'} points: nothing drawn"
    return coloured


def _legend(driver, section: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.text for e in driver.find_elements(By.CSS_SELECTOR, f"#{section} .legend span")]


def _chart_buttons(driver, section: str) -> dict[str, object]:
    from selenium.webdriver.common.by import By

    return {b.text: b for b in driver.find_elements(By.CSS_SELECTOR, f'#{section} button[data-role="chart"]')}


def _every_chart_drawn(driver, section: str, shots: Path, stem: str) -> list[str]:
    """Clicks through the chart buttons of a line section; every chart must draw. Returns
    the button labels."""
    labels = list(_chart_buttons(driver, section))
    for i, label in enumerate(labels):
        _chart_buttons(driver, section)[label].click()
        assert _attr(driver, section, "chart") == str(i)
        _drawn(driver, section, shots / f"{stem}_{i}.png")
    return labels


def _summary(folder: Path) -> dict:
    return json.loads((folder / "summary.json").read_text())


# --------------------------------------------------------------------------- the tests

def test_sweep_report(browser, tmp_path):
    out = tmp_path / "sweep"
    run_cli("sweep", *set_args(), "--zones", "20", "--out", str(out), "--no-progress")
    assert "report.html" not in _summary(out)["plots"]
    _load_clean(browser, out / "report.html")
    assert _legend(browser, "lines-0") == ["write", "read"]  # as the PNG's: one declaration
    _drawn(browser, "lines-0", _shot_dir(tmp_path) / "every_sweep.png")
    text = (out / "report.html").read_text(encoding="utf-8")
    assert "sequential MB/s across the LBA space" in text  # the sweep's table


def test_recovery_report(browser, tmp_path):
    out = tmp_path / "recovery"
    run_cli("recovery", *set_args(), "--zones", "20", "--zone-bytes", "sample", "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    labels = _every_chart_drawn(browser, "lines-0", _shot_dir(tmp_path), "every_recovery")
    # the sweeps per stage, then the torture phases over time (the simulator writes all of these)
    assert labels == ["sweeps: write MB/s", "sweeps: read MB/s", "torture: IOPS", "torture: latency",
                      "torture: write amplification", "torture: free blocks", "torture: GC vs host writes"], labels
    _chart_buttons(browser, "lines-0")["sweeps: write MB/s"].click()
    # One chart per direction with a line per stage, as recovery_write.png and recovery_read.png.
    assert _legend(browser, "lines-0") == ["clean", "after torture", "after idle", "after TRIM"]
    _chart_buttons(browser, "lines-0")["torture: IOPS"].click()
    assert _legend(browser, "lines-0") == ["torture", "torture (again)"]
    # the stages table is drawn as a bar table, one bar per stage
    widths = browser.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('td.barcell .bar'), "
        "function (b) { return b.getBoundingClientRect().width; })")
    assert len(widths) == 4 and all(w > 0 for w in widths), widths


def test_used_report(browser, tmp_path):
    out = tmp_path / "used"
    run_cli("used", *set_args(), "--duration", "10", "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    labels = _every_chart_drawn(browser, "lines-0", _shot_dir(tmp_path), "every_used")
    assert labels[:2] == ["IOPS", "latency"] and "free blocks" in labels, labels
    _chart_buttons(browser, "lines-0")["IOPS"].click()
    assert _legend(browser, "lines-0") == ["new (purged)", "used (full, no TRIM)", "used after TRIM"]
    # the review's bar table: MB/s per state, "used" highlighted, bars as long as the values
    s = _summary(out)
    rows = browser.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('td.barcell'), function (td) {"
        " return [td.closest('tr').className, td.querySelector('.bar').getBoundingClientRect().width,"
        " td.getBoundingClientRect().width]; })")
    assert [r[0] for r in rows] == ["", "hl", ""], rows
    shares = [r[1] / rows[0][1] for r in rows]
    want = [s["new_mbps"] / s["new_mbps"], s["used_mbps"] / s["new_mbps"], s["trimmed_mbps"] / s["new_mbps"]]
    assert shares == pytest.approx(want, abs=0.05), (shares, want)


def test_trace_run_report(browser, tmp_path):
    out = tmp_path / "trace"
    run_cli("trace", "run", "jedec-like", *set_args(), "--qd", "8", "--write-bytes", "2GiB", "--window", "10000",
            "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    assert _legend(browser, "lines-0") == ["with TRIM", "without TRIM"]
    _drawn(browser, "lines-0", _shot_dir(tmp_path) / "every_trace.png")


def _fio_iops_log(path: Path, n: int = 300) -> np.ndarray:
    """A windowed fio write_iops_log (log_avg_msec=1000): FOB at 50K for 30 s, then ~8K with
    a zero-IOPS window every 40 s (fio writes no row for a window without IO)."""
    k = np.arange(n)
    iops = np.where(k < 30, 50000.0, 8000.0 + 500.0 * np.sin(k / 7.0))
    iops[45::40] = 0.0
    with open(path, "w") as f:
        for i, v in enumerate(iops):
            if v > 0:
                f.write(f"{(i + 1) * 1000}, {int(v)}, 1, 0, 0\n")
    return iops


def test_analyze_report(browser, tmp_path):
    log = tmp_path / "run_iops.1.log"
    iops = _fio_iops_log(log)
    out = tmp_path / "analyzed"
    run_cli("analyze", str(log), "--label", "my drive", "--out", str(out))
    _load_clean(browser, out / "report.html")
    assert _attr(browser, "consistency", "drive") == "my drive"
    _drawn(browser, "consistency", _shot_dir(tmp_path) / "every_analyze.png")
    # every zero-IOPS window is drawn (at the floor of the log axis)
    assert int(_attr(browser, "consistency", "stalls")) == int((iops == 0).sum()) > 0
    # a fio IOPS log has no latency and no simulator counters: no charts under the IOPS
    assert browser.execute_script("return document.querySelectorAll('.chart.companion').length") == 0


def test_consistency_report_shows_latency_and_the_simulators_why(browser, tmp_path):
    out = tmp_path / "consistency"
    run_cli("consistency", *set_args(), "--duration", "200", "--out", str(out), "--no-progress")
    assert {"latency.png", "latency.svg"} <= set(_summary(out)["plots"])
    _load_clean(browser, out / "report.html")
    shots = _shot_dir(tmp_path)
    _drawn(browser, "consistency", shots / "every_consistency.png")
    for cid in ("latency", "wa", "free_blocks", "gc"):
        _drawn(browser, f"consistency-{cid}", shots / f"every_consistency_{cid}.png")
    sec = "consistency-latency"
    assert _legend(browser, sec) == ["p50", "p99", "p99.9", "max"]
    assert _attr(browser, sec, "scale") == "log"
    # a legend entry hides its statistic and the chart is drawn again without it
    from selenium.webdriver.common.by import By

    before = _canvas(browser, sec)
    browser.find_elements(By.CSS_SELECTOR, f"#{sec} .legend span")[0].click()
    assert _attr(browser, sec, "series") == "3" and _canvas(browser, sec) != before
    # the charts under the IOPS follow its zoom
    browser.find_element(By.CSS_SELECTOR, '#consistency button[data-role="zoom"][data-value="review"]').click()
    x0 = float(_attr(browser, "consistency", "x0"))
    assert x0 == pytest.approx(140.0)  # 70 % of a 200 s run
    for cid in ("latency", "wa", "free_blocks", "gc"):
        assert float(_attr(browser, f"consistency-{cid}", "x0")) == pytest.approx(x0), cid
    data = _page_data((out / "report.html").read_text(encoding="utf-8"))
    (run,) = data["runs"].values()
    assert [c["id"] for c in run["companions"]] == ["latency", "wa", "free_blocks", "gc"]
    # hovering shows the values under the mouse, without errors
    from selenium.webdriver.common.action_chains import ActionChains

    plot = browser.find_element("id", f"plot-{sec}")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", plot)
    ActionChains(browser).move_to_element_with_offset(plot, 100, 0).perform()
    shown = browser.execute_script(
        f"var l = document.querySelector('#plot-{sec} .dygraph-legend');"
        "return l && l.style.display !== 'none' ? l.textContent : ''")
    assert shown.startswith("t ") and "µs" in shown, shown
    assert [e for e in browser.get_log("browser") if e.get("level") in ("SEVERE", "WARNING")] == []


@pytest.mark.realtime
def test_interrupted_recovery_report_shows_what_was_measured(browser, tmp_path):
    out = tmp_path / "r"
    _, stderr = interrupt_cli("recovery", *set_args(), "--zones", "10", "--torture-min", "10080", "--out", str(out),
                              "--no-progress", ready=lambda: journalled(out, "torture"))
    assert (out / "INCOMPLETE").exists() and _summary(out)["complete"] is False
    page = out / "report.html"
    _load_clean(browser, page)
    text = page.read_text(encoding="utf-8")
    assert '<span class="badge">incomplete</span>' in text and "Incomplete run: interrupted" in text
    labels = _every_chart_drawn(browser, "lines-0", _shot_dir(tmp_path), "every_interrupted")
    # the clean sweep, the torture so far
    assert labels[:3] == ["sweeps: write MB/s", "sweeps: read MB/s", "torture: IOPS"], labels
    _chart_buttons(browser, "lines-0")["sweeps: read MB/s"].click()
    assert _legend(browser, "lines-0") == ["clean"]


def test_a_phase_of_one_sample_is_drawn_in_the_middle_of_its_axis(browser, tmp_path):
    """An interrupted phase may hold one sample: each of its charts centres it on an x axis
    whose labels all differ (three digits would label the ticks of 1,202-1,203 s all 1.2K),
    with a marker large enough to see."""
    import pyarrow.parquet as pq

    out = tmp_path / "r"
    run_cli("recovery", *set_args(), "--zones", "10", "--zone-bytes", "sample", "--torture-min", "0.5",
            "--idle-min", "0.5", "--out", str(out), "--no-progress")
    for phase in ("torture", "retorture"):
        table = pq.read_table(out / f"{phase}.parquet")
        pq.write_table(table.slice(table.num_rows // 2, 1), out / f"{phase}.parquet")
    run_cli("report", str(out))
    _load_clean(browser, out / "report.html")
    labels = _every_chart_drawn(browser, "lines-0", _shot_dir(tmp_path), "one_sample")
    assert "torture: IOPS" in labels, labels
    _chart_buttons(browser, "lines-0")["torture: IOPS"].click()
    assert _attr(browser, "lines-0", "points") == "2"  # the torture's and the retorture's
    x0, x1 = float(_attr(browser, "lines-0", "x0")), float(_attr(browser, "lines-0", "x1"))
    xs = browser.execute_script("return window.ssdlabReport.views['lines-0'].chart.P.series"
                                ".map(function (s) { return s.x.filter(function (v) { return v !== null; }); })")
    assert all(x0 < x < x1 for x in sum(xs, [])), (x0, x1, xs)


@pytest.mark.realtime
def test_loop_device_consistency_report_shows_latency(browser, tmp_path):
    """A real run (fio on a loop device) carries per-interval latency too, and its report
    draws it; the simulator-only charts (WA, free blocks, GC) are absent."""
    from conftest import require_loops

    require_loops()
    out = tmp_path / "loop"
    run_cli("consistency", "--target", "loop:128MB", "--duration", "20", "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    shots = _shot_dir(tmp_path)
    _drawn(browser, "consistency", shots / "loop_consistency.png")
    _drawn(browser, "consistency-latency", shots / "loop_consistency_latency.png")
    data = _page_data((out / "report.html").read_text(encoding="utf-8"))
    (run,) = data["runs"].values()
    assert [c["id"] for c in run["companions"]] == ["latency"]


def test_run_report_shows_reads_and_writes_separately(browser, tmp_path):
    job = tmp_path / "mix.fio"
    job.write_text("[mix]\nrw=randrw\nrwmixread=70\nbs=4k\niodepth=16\nsize=64m\nruntime=6\ntime_based\n")
    out = tmp_path / "run"
    run_cli("run", str(job), *set_args(), "--interval", "0.5", "--out", str(out), "--no-progress")
    _load_clean(browser, out / "report.html")
    labels = _every_chart_drawn(browser, "lines-0", _shot_dir(tmp_path), "every_run")
    assert labels[:3] == ["IOPS by direction", "MB/s by direction", "latency"], labels
    assert "write amplification" in labels, labels
    _chart_buttons(browser, "lines-0")["IOPS by direction"].click()
    assert _legend(browser, "lines-0") == ["read", "write"]
