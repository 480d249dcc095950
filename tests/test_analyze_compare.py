"""``ssdlab analyze`` (fio IOPS logs -> metrics, results folder) and ``ssdlab compare``."""
from __future__ import annotations

import csv
import json
import math
import shutil
import subprocess

import numpy as np
import pytest

from conftest import hist_row, run_cli
from ssdlab import analysis, cli, results


def _known_iops(n: int = 420) -> np.ndarray:
    """FOB plateau at 60K for 40 s, then a bimodal steady state with stalls."""
    k = np.arange(n)
    y = np.where(k < 40, 60000.0, np.where(k % 5 < 2, 30000.0, 400.0))
    y[45::23] = 0.0
    return np.round(y)


def _write_windowed(path, iops, ddir=1):
    """A fio log as fio writes it with log_avg_msec=1000: one row per 1-s window that saw IO
    (no row for a window without IO), time = end of the window, block size 0."""
    with open(path, "w") as f:
        for k, v in enumerate(iops):
            if v > 0:
                f.write(f"{(k + 1) * 1000 + (k % 3)}, {int(v)}, {ddir}, 0, 0\n")


def _main(capsys, *args) -> tuple[int, str, str]:
    code = cli.main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _close(a, b):
    if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
        return a == b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-9)


def _assert_same_metrics(got: dict, want: dict):
    for k, v in want.items():
        assert k in got, k
        assert _close(got[k], v), (k, got[k], v)


# --------------------------------------------------------------------------- analyze

def test_analyze_windowed_log_matches_analysis(tmp_path, capsys):
    iops = _known_iops()
    log = tmp_path / "run_iops.1.log"
    _write_windowed(log, iops)
    want = analysis.analyze_iops(iops, 1.0, round_s=60.0, bs_bytes=4096)
    code, out, _ = _main(capsys, "analyze", str(log), "--json")
    assert code == 0
    _assert_same_metrics(json.loads(out), want)
    assert want["zero_iops_seconds"] == float((iops == 0).sum()) > 0  # missing windows are stalls

    code, out, _ = _main(capsys, "analyze", str(log))
    assert code == 0
    assert f"IOPS mean {want['iops_mean']:,.0f}" in out
    assert f"zero-IOPS seconds {want['zero_iops_seconds']:g}" in out
    assert f"steady state from {want['steady_state_onset_s']:g} s" in out


def test_analyze_out_writes_a_results_folder(tmp_path, capsys):
    iops = _known_iops()
    logs = tmp_path / "logs"
    logs.mkdir()
    _write_windowed(logs / "job_iops.1.log", iops)
    _write_windowed(logs / "job_iops.2.log", iops[:300])  # numjobs=2: summed, the shorter job adds 0 after
    (logs / "job_bw.1.log").write_text("1000, 5, 1, 0, 0\n")  # other log types are ignored
    total = iops.copy()
    total[:300] += iops[:300]
    out = tmp_path / "res"
    code, text, _ = _main(capsys, "analyze", str(logs), "--bs", "8KiB", "--label", "My SSD", "--span", "75",
                          "--out", str(out), "--json")
    assert code == 0
    want = analysis.analyze_iops(total, 1.0, round_s=60.0, bs_bytes=8192)
    _assert_same_metrics(json.loads(text), want)
    s = results.read_summary(out)
    assert s["test"] == "analyze" and s["label"] == "My SSD" and s["span_pct"] == 75 and s["bs_bytes"] == 8192
    assert s["target"] == "fio:job" and len(s["logs"]) == 2 and s["complete"] is True
    assert s["command_line"] and s["ssdlab_version"]  # in-process: sys.argv is pytest's
    _assert_same_metrics(s, want)
    series = results.read_series(out / "series")
    assert np.array_equal(series["iops"], total) and np.allclose(series["mbps"], total * 8192 / 1e6)
    for name in ("series.parquet", "series.csv", "consistency_log.png", "consistency_steady_log.png",
                 "consistency_steady_linear.png", "report.html"):
        assert (out / name).exists(), name
    assert not (out / "INCOMPLETE").exists()
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "My SSD" in page and "25% Spare Area" in page


def test_analyze_interval_and_per_io_logs(tmp_path, capsys):
    iops = _known_iops(240)
    log = tmp_path / "a_iops.1.log"
    _write_windowed(log, iops)
    code, out, _ = _main(capsys, "analyze", str(log), "--interval", "2", "--json")
    assert code == 0
    want = analysis.analyze_iops(iops.reshape(-1, 2).mean(axis=1), 2.0, round_s=60.0, bs_bytes=4096)
    _assert_same_metrics(json.loads(out), want)

    # per-IO log (log_avg_msec=0): one row per IO, value 1, real block size
    counts = [5, 0, 7, 3]
    rows = [f"{s * 1000 + 10 * i}, 1, 1, 4096, 0\n" for s, c in enumerate(counts) for i in range(c)]
    per_io = tmp_path / "p_iops.1.log"
    per_io.write_text("".join(rows))
    code, out, _ = _main(capsys, "analyze", str(per_io), "--json")
    _assert_same_metrics(json.loads(out), analysis.analyze_iops(np.array(counts, float), 1.0))


def test_analyze_errors_are_messages_not_tracebacks(tmp_path):
    bad = tmp_path / "x_iops.1.log"
    bad.write_text("1000, 5, 1, 0\nnot a line\n")
    proc = run_cli("analyze", str(bad), check=False)
    assert proc.returncode == 2 and f"{bad}:2" in proc.stderr and "Traceback" not in proc.stderr
    bw = tmp_path / "x_bw.1.log"
    bw.write_text("1000, 5, 1, 0\n")
    proc = run_cli("analyze", str(bw), check=False)
    assert proc.returncode == 2 and "not an IOPS log" in proc.stderr
    proc = run_cli("analyze", str(tmp_path / "missing"), check=False)
    assert proc.returncode == 2 and "no such file, and no fio logs" in proc.stderr


@pytest.mark.realtime
def test_analyze_real_fio_run(tmp_path):
    fio = shutil.which("fio")
    if fio is None:
        pytest.fail("fio is not installed: apt-get install -y fio", pytrace=False)
    job = tmp_path / "job"
    job.mkdir()
    subprocess.run(
        [fio, "--name=run", f"--filename={tmp_path / 'data'}", "--size=32M", "--rw=randwrite", "--bs=4k",
         "--ioengine=psync", "--rate_iops=5000", "--ramp_time=1", "--runtime=5", "--time_based",
         f"--write_iops_log={job / 'run'}",
         "--log_avg_msec=1000", "--output-format=json", f"--output={tmp_path / 'fio.json'}"],
        check=True, capture_output=True, timeout=60)
    fio_iops = json.loads((tmp_path / "fio.json").read_text())["jobs"][0]["write"]["iops"]
    proc = run_cli("analyze", str(job / "run_iops.1.log"), "--json", "--out", str(tmp_path / "res"))
    m = json.loads(proc.stdout)
    assert m["n_intervals"] >= 2  # fio logs the last window only if it ended after it
    # fio's JSON averages the whole run and its log omits the final partial window: at a rate
    # fio holds (5000 IOPS, far below what a page-cache write does even on a busy machine) every
    # window is that rate, so the two means agree within 5 % however loaded the machine is
    # (unpaced, they once differed by 13 % at load 7). The 1 s ramp keeps warm-up out of both.
    assert fio_iops == pytest.approx(5000, rel=0.05), fio_iops
    assert m["iops_mean"] == pytest.approx(fio_iops, rel=0.05), (m["iops_mean"], fio_iops)
    assert (tmp_path / "res" / "report.html").exists()
    assert "analyze" in results.read_summary(tmp_path / "res")["command_line"]


# --------------------------------------------------------------------------- compare

def _run_folder(path, *, target, span, iops, wa):
    t = np.arange(iops.size, dtype=float)
    results.write_series(path, "series", {"t_s": t, "iops": iops})
    m = analysis.analyze_iops(iops, 1.0)
    results.write_summary(path, {"test": "consistency", "target": target, "ssdlab_version": "0.1.0",
                                 "span_pct": span, **m, "write_amplification": wa,
                                 **results.run_metadata(["ssdlab", "consistency"]), "complete": True})
    return m


def test_compare_table_csv_plots_report(tmp_path, capsys):
    base = tmp_path / "runs"
    a_iops = _known_iops()
    b_iops = np.full(420, 33000.0)
    b_iops[:30] = 90000.0
    ma = _run_folder(base / "a", target="sim:default", span=100, iops=a_iops, wa=5.02)
    mb = _run_folder(base / "b", target="sim:default", span=75, iops=b_iops, wa=1.74)
    out = tmp_path / "cmp"
    code, text, _ = _main(capsys, "compare", str(base), "--out", str(out))  # a folder of results folders
    assert code == 0
    lines = text.splitlines()
    assert "Default" in lines[1] and "25% Spare Area" in lines[1]

    def row(label):
        (line,) = [ln for ln in lines if ln.startswith(label + " ")]
        return line.split()[-2:]

    assert row("IOPS mean") == [f"{ma['iops_mean']:,.0f}", f"{mb['iops_mean']:,.0f}"]
    assert row("time at zero IOPS (s)") == [f"{ma['zero_iops_seconds']:,.0f}", "0"]
    assert row("write amplification") == ["5.02", "1.74"]
    # aligned: every row as wide as the header, values right-aligned in the same columns
    table = [ln for ln in lines if not ln.startswith("results in")]
    assert len({len(ln) for ln in table}) == 1, table

    with open(out / "compare.csv", newline="") as f:
        recs = list(csv.DictReader(f))
    assert [r["run"] for r in recs] == ["sim:default · Default", "sim:default · 25% Spare Area"]
    assert float(recs[0]["iops_mean"]) == ma["iops_mean"] and float(recs[1]["iops_mean"]) == mb["iops_mean"]
    assert float(recs[0]["zero_iops_seconds"]) == ma["zero_iops_seconds"]
    assert float(recs[1]["write_amplification"]) == 1.74
    for name in ("compare_log.png", "compare_steady_log.png", "compare_steady_linear.png", "report.html",
                 "summary.json"):
        assert (out / name).exists(), name
    s = results.read_summary(out)
    assert s["test"] == "compare" and len(s["runs"]) == 2 and s["tables"][0]["columns"][1:] == s["labels"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "25% Spare Area" in page and "Default" in page

    # without --out: just the table, nothing written
    code, text, _ = _main(capsys, "compare", str(base / "a"), str(base / "b"))
    assert code == 0 and "results in" not in text
    assert text == "\n".join(table) + "\n"


def test_compare_errors(tmp_path):
    proc = run_cli("compare", str(tmp_path), check=False)
    assert proc.returncode == 2 and "not an ssdlab results folder" in proc.stderr


# --------------------------------------------------------------------------- log variants
# One run, written the ways fio writes logs: 30 s at ~1000 IOPS with nothing completing in
# seconds 10..14. analyze must find the interval the log was written with and the 5 zero
# seconds, whatever the layout.
STALL = set(range(10, 15))


def _per_io_lines(kind: str) -> list[str]:
    """One row per IO: 1000 IOs a second outside the stall (lat: value = latency in ns)."""
    lines = []
    for sec in range(30):
        if sec in STALL:
            continue
        for i in range(1000):
            t = sec * 1000 + i
            value = 1 if kind == "iops" else 100_000 + i
            lines.append(f"{t}, {value}, 1, 4096, 0")
    return lines


def _windowed_lines(window_ms: int, both: bool = False, epoch_ms: int = 0) -> list[str]:
    lines = []
    for k in range(30_000 // window_ms):
        start_s = k * window_ms / 1000
        if int(start_s) in STALL:
            continue
        t = epoch_ms + (k + 1) * window_ms + (k % 3)  # fio's few ms of timer jitter
        lines.append(f"{t}, 1000, 1400, 1, 0, 0" if both else f"{t}, 1000, 1, 0, 0")
    return lines


def _hist_lines(window_ms: int = 1000) -> list[str]:
    """write_hist_log rows at log_hist_msec=window_ms: 1000 IOs a second at 100 us."""
    return [hist_row((k + 1) * window_ms + 1, 1000 * window_ms // 1000, 100_000)
            for k in range(30_000 // window_ms) if int(k * window_ms / 1000) not in STALL]


@pytest.mark.parametrize("name, lines, window_ms, cut_last", [
    ("w1000_iops.1.log", _windowed_lines(1000), 1000, False),
    ("w500_iops.1.log", _windowed_lines(500), 500, False),
    ("perio_iops.1.log", _per_io_lines("iops"), 0, False),
    ("perio_clat.1.log", _per_io_lines("clat"), 0, False),
    ("cut_iops.1.log", _windowed_lines(1000), 1000, True),
    ("both_iops.1.log", _windowed_lines(1000, both=True), 1000, False),
    ("epoch_iops.1.log", _windowed_lines(1000, epoch_ms=1_700_000_000_000), 1000, False),
    ("h_clat_hist.1.log", _hist_lines(), 1000, False),
    ("h500_clat_hist.1.log", _hist_lines(500), 500, False),
])
def test_analyze_finds_the_interval_and_the_stall(tmp_path, capsys, name, lines, window_ms, cut_last):
    p = tmp_path / name
    text = "\n".join(lines) + "\n"
    if cut_last:
        text += "31002, 10"  # fio killed while writing its last line: no newline
    p.write_text(text)
    code, out, err = _main(capsys, "analyze", str(p), "--json", "--out", str(tmp_path / "r"))
    assert code == 0, err
    m = json.loads(out)
    assert m["log_window_ms"] == window_ms
    assert m["interval_s"] == (window_ms / 1000 if window_ms else 1.0)
    assert m["zero_iops_seconds"] == 5.0 and m["longest_stall_s"] == 5.0
    assert m["iops_median"] == pytest.approx(1000, rel=0.01)
    s = results.read_series(tmp_path / "r" / "series.parquet")
    assert np.allclose(np.diff(s["t_s"]), m["interval_s"])
    summary = results.read_summary(tmp_path / "r")
    assert any("cut short" in n for n in summary["notes"]) == cut_last
    if "clat" in name:  # latency logs give per-interval latency
        p99 = s["write_lat_p99_us"]
        assert np.isnan(p99[s["iops"] == 0]).all()
        assert np.nanmin(p99) >= 95 and np.nanmax(p99) <= 110.0


def test_analyze_interval_override_and_bad_logs(tmp_path, capsys):
    p = tmp_path / "w500_iops.1.log"
    p.write_text("\n".join(_windowed_lines(500)) + "\n")
    code, out, _ = _main(capsys, "analyze", str(p), "--json", "--interval", "2")
    m = json.loads(out)
    assert code == 0 and m["interval_s"] == 2.0 and m["iops_median"] == pytest.approx(1000)
    # 5 zero seconds from 10 s: whole 2-s intervals 10-12 s and 12-14 s are at 0
    assert m["zero_iops_seconds"] == 4.0
    code, _, err = _main(capsys, "analyze", str(p), "--interval", "0.25")
    assert code == 2 and "at least 0.5 s" in err and "Traceback" not in err
    empty = tmp_path / "e_iops.1.log"
    empty.write_text("")
    code, _, err = _main(capsys, "analyze", str(empty))
    assert code == 2 and "e_iops.1.log: no log entries" in err and "killed" in err
    us = tmp_path / "us_iops.1.log"
    us.write_text("1700000000000000, 5, 1, 0, 0\n1700000001000000, 5, 1, 0, 0\n")
    code, _, err = _main(capsys, "analyze", str(us))
    assert code == 2 and "microseconds since the Unix epoch" in err
    hist = tmp_path / "bad_clat_hist.1.log"
    hist.write_text("1000, 1, 4096, " + ", ".join(["0"] * 100) + "\n")
    code, _, err = _main(capsys, "analyze", str(hist))
    assert code == 2 and "100 bins is not a fio latency histogram" in err
