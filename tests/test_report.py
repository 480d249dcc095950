"""report.html: self-contained, offline, interactive (tested in a real headless Chromium).

The browser tests need Debian's ``chromium`` and ``chromium-driver`` and the ``selenium``
package (scripts/bootstrap.sh installs them). Without them these tests FAIL with the
install command, unless ``SSDLAB_NO_BROWSER=1`` (then they are skipped). Set
``SSDLAB_SCREENSHOT_DIR`` to keep the screenshots.
"""
from __future__ import annotations

import io
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli, set_args
from ssdlab import report, results
from ssdlab.commands.report import declared_metrics

#: What every test declares (and an ``analyze`` run), as ``ssdlab report`` passes it.
METRICS = declared_metrics()

CHROMEDRIVER = "/usr/bin/chromedriver"


# --------------------------------------------------------------------------- fixtures

def _consistency_like(folder: Path, *, label: str, target: str, span: float, seed: int,
                      n: int = 400, zeros_every: int = 0) -> Path:
    """A synthetic consistency results folder: FOB plateau, drop, noisy steady state."""
    rng = np.random.default_rng(seed)
    t = np.arange(n, dtype=np.float64)
    iops = np.where(t < 40, 60000.0, 8000.0 + 4000.0 * rng.random(n))
    if zeros_every:
        iops[50::zeros_every] = 0.0
    results.write_series(folder, "series", {"t_s": t, "iops": iops, "mbps": iops * 4096 / 1e6})
    from ssdlab import analysis

    summary = {"test": "consistency", "target": target, "label": label, "ssdlab_version": "0.1.0",
               "span_pct": span, "duration_s": float(n), "qd": 32, "bs_bytes": 4096,
               "command_line": f"ssdlab consistency --target {target} --span {span:g}",
               **analysis.analyze_iops(iops, 1.0, bs_bytes=4096), "complete": True}
    results.write_summary(folder, summary)
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two real consistency runs (default and 25 % spare area), a second synthetic drive,
    and a synthetic sweep with a ``plot`` hint and ``tables``."""
    base = tmp_path_factory.mktemp("report")
    r100, r75 = base / "r100", base / "r75"
    run_cli("consistency", *set_args(), "--duration", "400", "--out", str(r100), "--no-progress")
    run_cli("consistency", *set_args(), "--duration", "400", "--span", "75", "--out", str(r75), "--no-progress")
    other = _consistency_like(base / "driveb", label="Drive B", target="sim:other", span=100, seed=2,
                              zeros_every=37)
    sweep = base / "sweep"
    pos = np.linspace(0, 99, 100)
    write = np.where(pos < 25, 520.0, 380.0)
    read = np.full(100, 215.0)
    results.write_series(sweep, "sweep", {"position_pct": pos, "write_mbps": write, "read_mbps": read})
    results.write_summary(sweep, {
        "test": "sweep", "target": "sim:default", "ssdlab_version": "0.1.0", "span_pct": 100.0,
        "write_mbps_mean": float(write.mean()), "read_mbps_mean": 215.0,
        "command_line": "ssdlab sweep --out sweep",
        "plot": {"series": "sweep", "x": "position_pct", "y": ["write_mbps", "read_mbps"]},
        "tables": [
            {"title": "MB/s per stage", "columns": ["stage", "write avg (MB/s)", "read avg (MB/s)"],
             "rows": [["clean", 418.25, 214.0], ["after torture <b>", 149.0, None]]},
            {"title": "dict rows", "columns": ["state", "IOPS"], "rows": [{"state": "new", "IOPS": 54935}],
             "note": "a note"},
        ],
        "complete": True,
    })
    out = base / "report.html"
    report.write_report([r100, r75, other, sweep], out, title="Test report", metrics=METRICS)
    return {"r100": r100, "r75": r75, "other": other, "sweep": sweep, "html": out, "base": base}


def _page_data(html_text: str) -> dict:
    m = re.search(r'<script type="application/json" id="ssdlab-data">(.*?)</script>', html_text, re.S)
    assert m, "embedded data block missing"
    return json.loads(m.group(1))


# --------------------------------------------------------------------------- without a browser

def test_consistency_run_writes_its_own_report(runs):
    page = runs["r100"] / "report.html"
    assert page.exists()
    data = _page_data(page.read_text(encoding="utf-8"))
    assert len(data["runs"]) == 1 and data["groups"][0]["label"] == "sim:default"
    summary = json.loads((runs["r100"] / "summary.json").read_text())
    (run,) = data["runs"].values()
    assert run["consistency"]["n_total"] == summary["n_intervals"] == 400
    assert "report.html" not in summary.get("plots", [])


def test_page_is_self_contained(runs):
    text = runs["html"].read_text(encoding="utf-8")
    # Nothing that could fetch: no external scripts, styles, fonts, images, frames.
    assert not re.search(r"""(?:src|href)\s*=\s*["'](?!data:|#)""", text, re.I), "external reference"
    assert not re.search(r"https?://", text), "a URL in the page"
    assert "@import" not in text and "url(" not in text
    assert "<script src" not in text and "<link rel=\"stylesheet\"" not in text
    # Metadata is carried: version, command lines, targets, profile.
    for needle in ("ssdlab 0.1.0", "ssdlab consistency", "sim:default", "blocks_per_plane", "Drive B"):
        assert needle in text, needle
    # User tables rendered generically and escaped.
    assert "MB/s per stage" in text and "after torture &lt;b&gt;" in text and "<b>" not in text.split("after torture")[1][:10]
    assert "54,935" in text and "a note" in text


def test_groups_drives_and_spare_area_variants(runs):
    data = _page_data(runs["html"].read_text(encoding="utf-8"))
    labels = [g["label"] for g in data["groups"]]
    assert labels == ["sim:default", "Drive B"]
    variants = [data["runs"][i]["variant"] for i in data["groups"][0]["runs"]]
    assert variants == ["Default", "25% Spare Area"]
    kinds = sorted(r["kind"] for r in data["runs"].values())
    assert kinds == ["consistency", "consistency", "consistency", "lines"]
    (sweep,) = [r for r in data["runs"].values() if r["kind"] == "lines"]
    assert sweep["charts"][0]["xcol"] == "position_pct"
    assert [y["name"] for y in sweep["charts"][0]["ys"]] == ["write_mbps", "read_mbps"]


def test_variant_labels():
    assert report.variant_label(100) == "Default"
    assert report.variant_label(None) == "Default"
    assert report.variant_label(75) == "25% Spare Area"
    assert report.variant_label(80.0) == "20% Spare Area"


def test_downsampling_keeps_every_zero_and_the_extremes():
    rng = np.random.default_rng(0)
    n = 200_000
    y = 1000 + 30000 * rng.random(n)
    zeros = rng.choice(n, 3000, replace=False)
    y[zeros] = 0.0
    y[12345] = 99999.0  # a lone peak
    idx = report.downsample_indices([y], report.MAX_POINTS, y == 0)
    assert idx.size <= report.MAX_POINTS + 3000 and idx.size >= report.MAX_POINTS // 2
    assert set(zeros.tolist()) <= set(idx.tolist())
    assert 12345 in idx
    assert np.all(np.diff(idx) > 0)
    assert report.downsample_indices([np.arange(10.0)]).tolist() == list(range(10))


def test_huge_series_is_thinned_in_the_page(tmp_path):
    run = _consistency_like(tmp_path / "long", label="Long", target="sim:x", span=100, seed=5, n=60_000,
                            zeros_every=97)
    out = report.write_report([run], tmp_path / "r.html", metrics=METRICS)
    data = _page_data(out.read_text(encoding="utf-8"))
    c = next(iter(data["runs"].values()))["consistency"]
    n_zero = len(range(50, 60_000, 97))
    assert c["n_total"] == 60_000 and c["n_shown"] < 25_000
    assert c["zeros"] == n_zero and sum(1 for v in c["y"] if v == 0) == n_zero
    assert out.stat().st_size < 1_500_000


def test_generic_run_without_hint_and_incomplete_run(tmp_path):
    a = tmp_path / "rec"
    results.write_series(a, "series", {"t_s": np.arange(5.0), "iops": np.array([5.0, 4, 3, 2, 1])})
    results.write_summary(a, {"test": "recovery", "target": "sim:default", "ssdlab_version": "0.1.0",
                              "complete": False, "incomplete_reason": "interrupted (Ctrl-C or SIGTERM)"})
    b = tmp_path / "broken"
    results.mark_incomplete(b, "in progress")
    text = report.write_report([a, b], tmp_path / "r.html", metrics=METRICS).read_text(encoding="utf-8")
    data = _page_data(text)
    kinds = {r["name"]: r["kind"] for r in data["runs"].values()}
    assert kinds == {"rec": "lines", "broken": "none"}
    assert "Incomplete run: interrupted" in text and "no summary.json" in text


def test_errors_are_clear(tmp_path):
    with pytest.raises(ValueError, match="at least one"):
        report.write_report([], tmp_path / "r.html", metrics=METRICS)
    with pytest.raises(FileNotFoundError, match="not an ssdlab results folder"):
        report.write_report([tmp_path], tmp_path / "r.html", metrics=METRICS)
    proc = run_cli("report", str(tmp_path / "nope"), check=False)
    assert proc.returncode == 2 and "no such results folder" in proc.stderr and "Traceback" not in proc.stderr


def test_report_command(runs, tmp_path):
    out = tmp_path / "sub" / "page.html"
    proc = run_cli("report", str(runs["r100"]), str(runs["r75"]), "--out", str(out), "--title", "Two runs")
    assert out.exists() and str(out) in proc.stdout
    data = _page_data(out.read_text(encoding="utf-8"))
    assert data["title"] == "Two runs" and len(data["runs"]) == 2


def test_page_inlines_dygraphs_with_its_licence(runs):
    from importlib import resources

    vendor = resources.files("ssdlab").joinpath("vendor", "dygraphs")
    for name in ("dygraph.min.js", "dygraph.min.css", "LICENSE", "SOURCE"):
        assert vendor.joinpath(name).is_file(), name
    assert "libjs-dygraphs" in vendor.joinpath("SOURCE").read_text() and report.DYGRAPHS_VERSION in \
        vendor.joinpath("SOURCE").read_text()
    text = runs["html"].read_text(encoding="utf-8")
    assert f"dygraphs {report.DYGRAPHS_VERSION}, MIT licence" in text and "Permission is hereby granted" in text
    assert "Dygraph" in text and "sourceMappingURL" not in text
    assert text.count("<script") == 3  # data, the library, the page's own script


def _phase_folder(folder, n: int = 50):
    """A folder like used/recovery write: two phase series with latency and simulator columns."""
    from ssdlab.targets.base import latency_column

    phases = {}
    for k, name in enumerate(("new", "used")):
        t = np.arange(n if k == 0 else n + 10, dtype=float)
        s = {"t_s": t, "iops": np.full(t.size, 1000.0 * (k + 1)), "free_blocks": 100.0 - t,
             "write_amplification": np.full(t.size, 1.0 + k), "gc_copied_bytes": np.full(t.size, 2e6),
             "host_write_bytes": np.full(t.size, 4e6)}
        for label, v in (("p50", 100.0), ("p99", 900.0), ("p99.9", 2000.0), ("max", 5000.0)):
            s[latency_column("write", label)] = np.full(t.size, v * (k + 1))
        s[latency_column("write", "p50")][3] = np.nan  # nothing completed
        results.write_series(folder, name, s)
        phases[name] = s
    return phases


def test_phase_plots_overlay_the_phases(tmp_path):
    folder = tmp_path / "used"
    _phase_folder(folder)
    hints = report.phase_hints(folder, [("new", "new"), ("used", "used"), ("trimmed", "trimmed")], "4 KiB")
    assert [h["label"] for h in hints] == ["IOPS", "latency", "write amplification", "free blocks",
                                           "GC vs host writes"]
    results.write_summary(folder, {"test": "used", "target": "sim:x", "phase_plots": hints,
                                   "tables": [{"title": "bars", "columns": ["state", "MB/s"], "bars": ["MB/s"],
                                               "highlight": ["used"], "rows": [["new", 400.0], ["used", 100.0]]}]})
    run = report.load_run(folder)
    assert run["kind"] == "lines" and run["errors"] == []
    iops, lat, wa, free, gc = run["charts"]
    assert [y["label"] for y in iops["ys"]] == ["new", "used"] and iops["logy"] and iops["kind"] == "scatter"
    assert len(iops["x"]) == 50 and len(iops["ys"][1]["x"]) == 60  # each phase keeps its own time axis
    assert [y["stat"] for y in lat["ys"]] == ["p50", "p99", "p99.9", "max"] * 2
    assert {y["group"] for y in lat["ys"]} == {"new", "used"} and lat["ys"][0]["values"][3] is None
    assert gc["ys"][0]["values"][0] == pytest.approx(2.0)  # 2e6 bytes per 1 s interval = 2 MB/s
    assert free["kind"] == "line" and wa["ylabel"] == "write amplification"
    text = report.write_report([folder], tmp_path / "r.html", metrics=METRICS).read_text(encoding="utf-8")
    assert text.count('class="bar" style="width:100.0%"') == 1 and 'style="width:25.0%"' in text
    assert '<tr class="hl">' in text


def test_consistency_run_carries_latency_and_internals(runs):
    """A simulated consistency run: the charts under the IOPS (latency, WA, free blocks, GC)."""
    data = _page_data(runs["html"].read_text(encoding="utf-8"))
    r100 = next(r for r in data["runs"].values() if r["dir"] == str(runs["r100"]))
    ids = [c["id"] for c in r100["companions"]]
    assert ids == ["latency", "wa", "free_blocks", "gc"], ids
    lat = r100["companions"][0]
    assert [y["stat"] for y in lat["ys"]] == ["p50", "p99", "p99.9", "max"] and lat["logy"]
    assert len(lat["x"]) == 400
    other = next(r for r in data["runs"].values() if r["dir"] == str(runs["other"]))
    assert other["companions"] == []  # a series without those columns gets none
    assert data["companions"] == ids


# --------------------------------------------------------------------------- in Chromium

@pytest.fixture(scope="module")
def browser():
    if os.environ.get("SSDLAB_NO_BROWSER") == "1":
        pytest.skip("SSDLAB_NO_BROWSER=1: browser tests skipped")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    problems = []
    if not chromium:
        problems.append("no 'chromium' on PATH")
    if not os.path.exists(CHROMEDRIVER):
        problems.append(f"no {CHROMEDRIVER}")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        problems.append("the selenium package is not installed")
    if problems:
        pytest.fail("report.html is tested in a real headless Chromium, but " + "; ".join(problems)
                    + ". Install: apt-get install -y chromium chromium-driver && .venv/bin/pip install selenium "
                      "(or scripts/bootstrap.sh); set SSDLAB_NO_BROWSER=1 to skip these tests.", pytrace=False)
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1280,1100", "--force-device-scale-factor=1", "--no-first-run",
              "--disable-background-networking", "--disable-component-update"):
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    except Exception as e:  # noqa: BLE001
        pytest.fail(f"could not start headless Chromium with {CHROMEDRIVER}: {e}", pytrace=False)
    yield driver
    driver.quit()


def _shot_dir(tmp_path) -> Path:
    d = Path(os.environ.get("SSDLAB_SCREENSHOT_DIR") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _open(driver, page: Path) -> tuple[list, list]:
    """Load the page; return (browser log, network requests) produced by loading it."""
    driver.get_log("performance")  # drain what came before
    driver.get_log("browser")
    driver.get(page.resolve().as_uri())
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, 10).until(lambda d: d.execute_script("return document.body.getAttribute('data-ready')") == "1")
    requests = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            requests.append(msg["params"]["request"]["url"])
    return driver.get_log("browser"), requests


def _canvas(driver, section: str) -> str:
    """The picture of a chart: every canvas dygraphs drew in ``#plot-<section>``."""
    return driver.execute_script(
        f"return Array.prototype.map.call(document.querySelectorAll('#plot-{section} canvas'), "
        "function (c) { return c.toDataURL(); }).join('|')")


def _attr(driver, section: str, name: str) -> str:
    return driver.execute_script(f"return document.getElementById('{section}').getAttribute('data-{name}')")


def _button(driver, section: str, role: str, value: str):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.CSS_SELECTOR, f'#{section} button[data-role="{role}"][data-value="{value}"]')


def _png_pixels(png: bytes) -> np.ndarray:
    import matplotlib.image as mpimg

    return mpimg.imread(io.BytesIO(png), format="png")[..., :3]


#: In the page: what a reader at this width would find wrong. Every chart shown (and every chart
#: of a line section's chart buttons): its visible data lie inside the axes, the lowest and
#: highest tick labels enclose the data (labels parsed back from "2.5K", "100K"), the x axis
#: labels both ends of its range, no two neighbouring labels of an axis read the same, and data
#: at a single x are not drawn on an end of the x axis (half hidden); no element inside a card
#: scrolls sideways.
_PAGE_PROBLEMS_JS = r"""
var out = [], R = window.ssdlabReport, MUL = {'': 1, 'K': 1e3, 'M': 1e6, 'G': 1e9, 'T': 1e12};
function num(t) { var m = /^\s*(-?[0-9.]+)\s*([KMGT]?)\s*$/.exec(t); return m ? parseFloat(m[1]) * MUL[m[2]] : NaN; }
function labels(c, axis) {
  return Array.prototype.map.call(c.plot.querySelectorAll('.dygraph-axis-label-' + axis),
    function (e) { return num(e.textContent); }).filter(function (v) { return isFinite(v); });
}
function texts(c, axis) {
  return Array.prototype.map.call(c.plot.querySelectorAll('.dygraph-axis-label-' + axis), function (e) { return e.textContent.trim(); });
}
function check(name, c) {
  if (c.root.hidden || !c.g || !c.P) return;
  var P = c.P, xr = c.g.xAxisRange(), yr = c.g.yAxisRange(), lo = Infinity, hi = -Infinity, n = 0, xmin = Infinity, xmax = -Infinity;
  P.series.forEach(function (s) {
    if (s.hidden) return;
    for (var i = 0; i < s.x.length; i++) {
      var x = s.x[i], y = s.y[i];
      if (x === null || y === null || y === undefined || x < xr[0] || x > xr[1] || (P.logy && y <= 0)) continue;
      n++; if (y < lo) lo = y; if (y > hi) hi = y; if (x < xmin) xmin = x; if (x > xmax) xmax = x;
    }
  });
  ['x', 'y'].forEach(function (axis) {
    var t = texts(c, axis);
    for (var i = 1; i < t.length; i++) if (t[i] === t[i - 1]) { out.push(name + ': neighbouring ' + axis + ' labels both read ' + t[i]); break; }
  });
  var yl = labels(c, 'y'), xl = labels(c, 'x'), tol = 1e-9;
  if (!n) { out.push(name + ': no data drawn'); return; }
  if (yl.length < 2) { out.push(name + ': ' + yl.length + ' y labels'); return; }
  if (xl.length < 2) { out.push(name + ': ' + xl.length + ' x labels'); return; }
  var ylo = Math.min.apply(null, yl), yhi = Math.max.apply(null, yl), xlo = Math.min.apply(null, xl), xhi = Math.max.apply(null, xl);
  var span = xr[1] - xr[0], rel = function (v) { return Math.abs(v) * 1e-3; };
  if (xmin === xmax && Math.min(xmin - xr[0], xr[1] - xmin) < span * 0.02) out.push(name + ': all data at x ' + xmin + ', on an end of the x axis');
  if (lo < yr[0] * (1 - tol) || hi > yr[1] * (1 + tol)) out.push(name + ': data ' + lo + '..' + hi + ' outside the y axis ' + yr);
  if (lo < ylo - rel(ylo)) out.push(name + ': lowest value ' + lo + ' below the lowest y label ' + ylo);
  if (hi > yhi + rel(yhi)) out.push(name + ': highest value ' + hi + ' above the highest y label ' + yhi);
  if (xhi < xr[1] - Math.max(span * 1e-3, rel(xr[1]))) out.push(name + ': x axis ends at ' + xr[1] + ', last x label ' + xhi);
  if (xlo > xr[0] + Math.max(span * 1e-3, rel(xr[0]))) out.push(name + ': x axis starts at ' + xr[0] + ', first x label ' + xlo);
}
Object.keys(R.views).forEach(function (k) {
  var v = R.views[k];
  if (v.state && v.state.chart !== undefined) {  // a line section: every chart of its buttons
    var n = 0; R.data.line_sections.filter(function (s) { return s.id === k; })[0].runs.forEach(function (id) { n = Math.max(n, R.data.runs[id].charts.length); });
    var was = v.state.chart;
    for (var i = 0; i < n; i++) { v.state.chart = i; v.render(); check(k + ' chart ' + i, v.chart); }
    v.state.chart = was; v.render();
  } else check(k, v.chart);
  (v.companions || []).forEach(function (cp) { check(k + '-' + cp.id, cp.chart); });
});
Array.prototype.forEach.call(document.querySelectorAll('main section'), function (sec) {
  if (sec.scrollWidth > sec.clientWidth + 1) out.push(sec.id + ': wider than its card (' + sec.scrollWidth + ' > ' + sec.clientWidth + ' px)');
  Array.prototype.forEach.call(sec.querySelectorAll('*'), function (e) {
    if (!e.offsetParent || !e.clientWidth) return;
    var ov = getComputedStyle(e).overflowX;
    if ((ov === 'auto' || ov === 'scroll') && e.scrollWidth > e.clientWidth + 1) {
      var t = e.querySelector('h4, caption, th'), what = e.previousElementSibling ? e.previousElementSibling.textContent : (t ? t.textContent : '');
      out.push(sec.id + ': ' + e.tagName.toLowerCase() + '.' + e.className + ' ' + JSON.stringify(what.slice(0, 60)) +
               ' scrolls sideways (' + e.scrollWidth + ' > ' + e.clientWidth + ' px)');
    }
  });
});
return out;
"""


def page_problems(driver) -> list[str]:
    """What is wrong with the page open in ``driver`` (see :data:`_PAGE_PROBLEMS_JS`), plus
    console errors and warnings since the last look at the log."""
    found = list(driver.execute_script(_PAGE_PROBLEMS_JS))
    found += [f"console: {e.get('message')}" for e in driver.get_log("browser") if e.get("level") in ("SEVERE", "WARNING")]
    return found


def test_page_loads_without_errors_or_requests(browser, runs):
    logs, requests = _open(browser, runs["html"])
    errors = [e for e in logs if e.get("level") in ("SEVERE", "WARNING")]
    assert errors == [], errors
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    assert requests == [runs["html"].resolve().as_uri()], requests
    assert browser.execute_script("return window.ssdlabReport && Object.keys(window.ssdlabReport.views).length") == 2
    assert page_problems(browser) == []


def test_scale_variant_drive_and_zoom_switches_redraw(browser, runs, tmp_path):
    _open(browser, runs["html"])
    sec = "consistency"
    assert _attr(browser, sec, "scale") == "log" and _attr(browser, sec, "variant") == "Default"
    assert _attr(browser, sec, "drive") == "sim:default"
    before = _canvas(browser, sec)
    shots = _shot_dir(tmp_path)
    browser.find_element("id", "consistency").screenshot(str(shots / "report_consistency_log.png"))

    _button(browser, sec, "scale", "linear").click()
    assert _attr(browser, sec, "scale") == "linear"
    linear = _canvas(browser, sec)
    assert linear != before
    assert "on" in _button(browser, sec, "scale", "linear").get_attribute("class")

    _button(browser, sec, "scale", "log").click()
    assert _canvas(browser, sec) == before  # deterministic drawing: back to the same picture

    _button(browser, sec, "variant", "1").click()
    assert _attr(browser, sec, "variant") == "25% Spare Area"
    ids = _attr(browser, sec, "run")
    assert _canvas(browser, sec) != before
    # the metrics column of the shown run is highlighted
    assert browser.execute_script(
        f"return document.querySelector('#metrics-consistency thead th[data-run=\"{ids}\"]').classList.contains('shown')")

    _button(browser, sec, "variant", "all").click()
    assert _attr(browser, sec, "variant") == "all" and len(_attr(browser, sec, "run").split(",")) == 2
    browser.find_element("id", "consistency").screenshot(str(shots / "report_consistency_overlay.png"))

    _button(browser, sec, "drive", "1").click()
    assert _attr(browser, sec, "drive") == "Drive B"
    assert _attr(browser, sec, "variant") == "Default"  # Drive B has a single variant
    assert int(_attr(browser, sec, "stalls")) == len(range(50, 400, 37))  # every zero-IOPS interval drawn
    _button(browser, sec, "drive", "0").click()

    _button(browser, sec, "variant", "0").click()
    whole = _canvas(browser, sec)
    _button(browser, sec, "zoom", "review").click()  # 400-s run: from 70 % = 280 s
    assert _attr(browser, sec, "zoom") == "review" and float(_attr(browser, sec, "x0")) == pytest.approx(280)
    assert _canvas(browser, sec) != whole
    _button(browser, sec, "zoom", "steady").click()
    onset = json.loads((runs["r100"] / "summary.json").read_text())["steady_state_onset_s"]
    assert float(_attr(browser, sec, "x0")) == pytest.approx(onset)
    _button(browser, sec, "scale", "linear").click()
    browser.find_element("id", "consistency").screenshot(str(shots / "report_consistency_steady_linear.png"))


def test_drag_zooms_and_double_click_resets(browser, runs):
    from selenium.webdriver.common.action_chains import ActionChains

    _open(browser, runs["html"])
    cv = browser.find_element("id", "plot-consistency")
    ActionChains(browser).move_to_element_with_offset(cv, -100, 0).click_and_hold() \
        .move_by_offset(200, 0).release().perform()
    assert _attr(browser, "consistency", "zoom") == "custom"
    x0, x1 = float(_attr(browser, "consistency", "x0")), float(_attr(browser, "consistency", "x1"))
    assert 0 < x0 < x1 < 400 and x1 - x0 < 200
    ActionChains(browser).double_click(cv).perform()
    assert _attr(browser, "consistency", "zoom") == "whole" and float(_attr(browser, "consistency", "x0")) == 0


def test_metrics_header_click_selects_run(browser, runs):
    from selenium.webdriver.common.by import By

    _open(browser, runs["html"])
    heads = browser.find_elements(By.CSS_SELECTOR, "#metrics-consistency thead th[data-run]")
    assert len(heads) == 3
    heads[2].click()
    assert _attr(browser, "consistency", "drive") == "Drive B"
    assert _attr(browser, "consistency", "run") == heads[2].get_attribute("data-run")


def test_line_section_toggles(browser, runs, tmp_path):
    from selenium.webdriver.common.by import By

    _open(browser, runs["html"])
    sec = "lines-0"
    assert _attr(browser, sec, "scale") == "linear"
    before = _canvas(browser, sec)
    _button(browser, sec, "scale", "log").click()
    assert _attr(browser, sec, "scale") == "log" and _canvas(browser, sec) != before
    _button(browser, sec, "scale", "linear").click()
    legend = browser.find_elements(By.CSS_SELECTOR, f"#{sec} .legend span")
    assert [e.text for e in legend] == ["write MB/s", "read MB/s"]
    legend[1].click()  # hide read MB/s
    assert _canvas(browser, sec) != before
    browser.find_element("id", sec).screenshot(str(_shot_dir(tmp_path) / "report_sweep.png"))


def test_screenshot_is_not_blank(browser, runs, tmp_path):
    _open(browser, runs["html"])
    png = browser.find_element("id", "plot-consistency").screenshot_as_png
    (_shot_dir(tmp_path) / "report_canvas.png").write_bytes(png)
    px = _png_pixels(png)
    assert px.shape[0] > 200 and px.shape[1] > 600
    nonwhite = (px < 0.9).any(axis=2).mean()
    blue = ((px[..., 2] > 0.5) & (px[..., 0] < 0.35)).sum()  # the IOPS dots (#1f5fa8)
    red = ((px[..., 0] > 0.7) & (px[..., 1] < 0.3) & (px[..., 2] < 0.3)).sum()  # zero-IOPS markers
    assert px.std() > 0.05 and nonwhite > 0.01, (px.std(), nonwhite)
    assert blue > 200, blue
    zero_s = json.loads((runs["r100"] / "summary.json").read_text())["zero_iops_seconds"]
    if zero_s:
        assert red > 20, red
    full = browser.get_screenshot_as_png()
    (_shot_dir(tmp_path) / "report_page.png").write_bytes(full)
    assert _png_pixels(full).std() > 0.05


def test_trace_replay_report_renders(browser, tmp_path):
    """The trace test's report (overlay series padded with NaN where one variant has fewer
    windows) loads without errors or requests, and its chart draws both variants."""
    from conftest import run_cli, set_args
    from selenium.webdriver.common.by import By

    out = tmp_path / "trace"
    run_cli("trace", "run", "jedec-like", *set_args(), "--qd", "8", "--write-bytes", "2GiB", "--window", "10000",
            "--out", str(out), "--no-progress")
    logs, requests = _open(browser, out / "report.html")
    assert not [e for e in logs if e["level"] in ("SEVERE", "ERROR")], logs
    assert all(u.startswith(("file:", "data:", "about:")) for u in requests), requests
    sec = "lines-0"
    legend = [e.text for e in browser.find_elements(By.CSS_SELECTOR, f"#{sec} .legend span")]
    assert legend == ["with TRIM", "without TRIM"], legend  # as the PNG's legend: one declaration
    before = _canvas(browser, sec)
    browser.find_elements(By.CSS_SELECTOR, f"#{sec} .legend span")[0].click()
    assert _canvas(browser, sec) != before


def test_values_are_labelled_with_units_never_raw_keys():
    assert report.value_label("capacity_bytes") == ("user capacity", "GB", 1e9)
    assert report.value_label("wall_s") == ("wall-clock time", "s", 1.0)
    assert report.value_label("cache_after_pause_pct")[1] == "%"
    assert report.value_label("bs_bytes") == ("block size", "KiB", 1024.0)
    # keys in no table are named from their words, the unit from the last one
    assert report.value_label("after_idle_write_mbps") == ("after idle write", "MB/s", 1.0)
    assert report.value_label("spare_bytes") == ("spare", "GB", 1e9)
    pts = {"test": "pts", "tests": ["lat"], "qd": 0, "threads": 0, "wsat_max_s": 21600.0, "hir_cycles": 360,
           "dirth_bs_bytes": 8192, "round_s": 5.0, "pts": {"threads": 2, "qd": 16}}
    view = report._pts_view(pts)
    assert (view["threads"], view["qd"]) == (2, 16) and view["round_s"] == 5.0
    assert not {"wsat_max_s", "hir_cycles", "dirth_bs_bytes"} & set(view)
    fill = {"test": "fill", "phases": [{"start_gb": 0.0, "end_gb": 2.0, "mbps": 1500.0},
                                       {"start_gb": 2.0, "end_gb": 7.0, "mbps": 450.0}],
            "cache_bytes": 2e9, "burst_bytes": 1.5e9, "burst_mbps_mean": 1400.0, "pause_s": 60.0}
    table = report._fill_phases(fill)
    assert table["rows"] == [["write cache", 0.0, 2.0, 2.0, 1500.0], ["phase 2", 2.0, 7.0, 5.0, 450.0],
                             ["burst after 60 s idle", 0.0, 1.5, 1.5, 1400.0]]
    assert report._fill_phases({"test": "sweep"}) is None
