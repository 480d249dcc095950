"""The report at 1280 px in headless Chromium, for the tests whose pages no other browser test
opens (whole-drive fill, SNIA PTS): every chart's data inside its labelled range, no card
scrolling sideways, no console errors (``page_problems`` of test_report.py, which
test_reports_every_test.py and test_review.py apply to the other tests' pages); the tables
labelled with units; and the checker catching a chart that hides its top, a clipped chart, a
table too wide for its card and a console error. One Chromium session for every page.
"""
from __future__ import annotations

import re

import pytest

from conftest import run_cli, set_args
from test_report import _open, browser, page_problems  # noqa: F401 - the headless Chromium fixture


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    base = tmp_path_factory.mktemp("screens")
    run_cli("fill", *set_args(), "--pause", "2", "--burst", "5", "--out", str(base / "fill"), "--no-progress")
    run_cli("pts", *set_args(), "--test", "lat", "--round-s", "1", "--max-rounds", "5", "--out", str(base / "pts"),
            "--no-progress")
    return {name: base / name / "report.html" for name in ("fill", "pts")}


def _texts(driver, css: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [e.get_attribute("textContent").strip() for e in driver.find_elements(By.CSS_SELECTOR, css)]


def _values(driver) -> dict[str, str]:
    """The "Values" table of the page's first test section: row label -> cell."""
    rows = driver.execute_script(
        "var t = document.querySelector('table.metrics[id^=\"metrics-lines\"], table.metrics[id^=\"metrics-other\"]');"
        "return Array.prototype.map.call(t.querySelectorAll('tbody tr'), function (r) {"
        " return [r.querySelector('th').textContent, r.querySelector('td').textContent]; });")
    return dict(rows)


RAW_KEY = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")


def test_fill_and_pts_pages_fit_and_label_their_ranges(browser, pages):
    _open(browser, pages["fill"])
    assert page_problems(browser) == []
    assert _texts(browser, "main section h2")[0] == "Whole-drive fill"
    assert "Fill phases (constant-rate pieces of the MB/s series)" in _texts(browser, ".usertable h4")
    assert _texts(browser, ".usertable table thead th")[:5] == ["phase", "from (GB written)", "to (GB written)",
                                                                "written (GB)", "MB/s"]
    values = _values(browser)
    assert not [k for k in values if RAW_KEY.match(k)], values
    assert values["user capacity (GB)"] == "7.52" and values["block size (KiB)"] == "1,024", values
    assert "idle pause before the burst (s)" in values and "whole-drive fill average (MB/s)" in values

    _open(browser, pages["pts"])
    assert page_problems(browser) == []
    assert _texts(browser, "main section h2")[0] == "SNIA PTS"
    values = _values(browser)
    assert not [k for k in values if RAW_KEY.match(k)], values
    assert values["threads"] == "2" and values["queue depth"] == "16", values  # the client variant's 2 x QD16
    assert not [k for k in values if k.startswith(("WSAT", "HIR", "DIRTH"))], values  # only LAT ran


def _fill_page_drawn(browser, pages, before: str, after: str = "") -> list[str]:
    """The fill page's problems with its lines-0 chart drawn through a wrapped draw: the
    script ``before`` changes the draw's parameters ``P``, ``after`` its dygraph ``g``."""
    _open(browser, pages["fill"])
    browser.execute_script("var c = window.ssdlabReport.views['lines-0'].chart, proto = Object.getPrototypeOf(c),"
                           " draw = proto.draw; proto.draw = function (P) {"
                           f" {before} var g = draw.call(this, P); {after} return g; }};")
    return page_problems(browser)


def test_page_problems_catch_what_a_reader_would_see(browser, pages):
    # a y axis ending just above the data, not at a round number: labelled at its top by the
    # report's ticker, left unlabelled there by dygraphs' own (as the 100K of the IOPS chart was)
    top_just_above = ("var hi = 0; P.series.forEach(function (s) {"
                      " s.y.forEach(function (v) { if (v > hi) hi = v; }); }); P.y1 = hi * 1.01;")
    assert _fill_page_drawn(browser, pages, top_just_above) == []
    found = _fill_page_drawn(browser, pages, top_just_above, "g.updateOptions({axes: {y: {ticker: Dygraph.numericTicks}}});")
    assert any(re.match(r"lines-0 chart 0: highest value [0-9.]+ above the highest y label", p) for p in found), found
    # an x axis ending just past a round number (an interrupted run's 1403 s): its end label
    # names the end (1.403K), where three digits (1.4K) would leave 3 s unlabelled
    assert _fill_page_drawn(browser, pages, "P.x0 = 0; P.x1 = 1403;") == []
    # an x axis over one second at 1,202 s: its ticks labelled apart (1.2021K), not all 1.2K
    narrow = ("P.series.forEach(function (s) { var n = s.x.length;"
              " s.x = s.x.map(function (v, i) { return v === null ? null : 1202 + i / n; }); }); P.x0 = 1202; P.x1 = 1203;")
    assert _fill_page_drawn(browser, pages, narrow) == []
    found = _fill_page_drawn(browser, pages, narrow, "g.updateOptions({axes: {x: {ticker: function (a, b) { var t = [];"
                             " for (var i = 0; i <= 10; i++) { var v = a + (b - a) * i / 10;"
                             " t.push({v: v, label: parseFloat((v / 1e3).toPrecision(3)) + 'K'}); } return t; }}}});")
    assert "lines-0 chart 0: neighbouring x labels both read 1.2K" in found, found
    # every point at the start of the x axis, half hidden by its end
    found = _fill_page_drawn(browser, pages, "P.series.forEach(function (s) {"
                             " s.x = s.x.map(function (v) { return v === null ? null : P.x0; }); });")
    assert any(re.match(r"lines-0 chart 0: all data at x [0-9.e-]+, on an end of the x axis", p) for p in found), found
    found = _fill_page_drawn(browser, pages, "P.y1 = P.y1 / 4;")  # a y axis that cuts the data off
    assert any(p.startswith("lines-0 chart 0: data ") and "outside the y axis" in p for p in found), found
    _open(browser, pages["pts"])
    browser.execute_script(  # a table wider than its card, and a console error
        "var s = document.querySelector('main section'), d = document.createElement('div');"
        "d.className = 'tablewrap'; d.innerHTML = '<table><tr><td>' + 'wide '.repeat(400) + '</td></tr></table>';"
        "s.appendChild(d); console.error('broken');")
    found = page_problems(browser)
    assert any("div.tablewrap" in p and "scrolls sideways" in p for p in found), found
    assert any(p.startswith("console: ") and "broken" in p for p in found), found
