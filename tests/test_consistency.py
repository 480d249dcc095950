"""The consistency test end to end on a small simulated drive: results folder contents,
summary keys and their coherence, determinism, spare-area emulation, Ctrl-C."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from ssdlab.results import read_series

from conftest import interrupt_cli, journalled, run_cli, set_args

REQUIRED = ["iops_mean", "iops_median", "iops_p1", "iops_p99", "iops_min", "zero_iops_seconds",
            "steady_state_onset_s", "write_amplification", "steady_state_write_amplification",
            "host_write_bytes", "nand_write_bytes", "duration_s", "target", "profile", "seed", "ssdlab_version"]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("consistency") / "r"
    run_cli("consistency", *set_args(), "--duration", "400", "--seed", "3", "--out", str(out))
    return out


def test_results_folder_holds_summary_series_and_three_plots(run_dir):
    names = {p.name for p in run_dir.iterdir()}
    for n in ["summary.json", "series.parquet", "series.csv", "fill.parquet",
              "consistency_log.png", "consistency_steady_log.png", "consistency_steady_linear.png"]:
        assert n in names, f"{n} missing from {sorted(names)}"
    assert "INCOMPLETE" not in names


def test_summary_has_required_keys_and_coherent_values(run_dir):
    s = json.loads((run_dir / "summary.json").read_text())
    for k in REQUIRED:
        assert k in s, k
    assert s["complete"] is True
    assert s["duration_s"] == 400
    assert s["seed"] == 3
    assert s["profile"]["blocks_per_plane"] == 64
    series = read_series(run_dir / "series.parquet")
    assert len(series["t_s"]) == 400
    assert s["iops_mean"] == pytest.approx(float(np.mean(series["iops"])))
    assert s["iops_min"] <= s["iops_p1"] <= s["iops_median"] <= s["iops_p99"]
    # Write amplification is NAND over host bytes, and GC makes it > 1 on a full drive.
    assert s["write_amplification"] == pytest.approx(s["nand_write_bytes"] / s["host_write_bytes"])
    assert s["write_amplification"] > 1.5
    # Host bytes written equal the IOs completed plus those still in flight at the end (<= QD).
    completed_bytes = float(np.sum(series["iops"])) * 4096
    assert 0 <= s["host_write_bytes"] - completed_bytes <= 32 * 4096 + 4096 * 32
    # Per-interval counters add up to the totals.
    assert float(np.sum(series["nand_write_bytes"])) == pytest.approx(s["nand_write_bytes"], rel=1e-9)
    for col in ["mbps", "free_blocks", "gc_copied_bytes", "erases", "write_amplification"]:
        assert col in series


def test_fresh_out_of_box_is_fast_then_drops(run_dir):
    series = read_series(run_dir / "series.parquet")
    iops = series["iops"]
    # Fresh drive: ~90K IOPS (controller limit); once spare area is used up it falls hard.
    assert iops[0] > 80_000
    assert np.median(iops[-100:]) < 0.3 * iops[0]


def test_same_seed_same_series_different_seed_differs(tmp_path, run_dir):
    again = tmp_path / "again"
    run_cli("consistency", *set_args(), "--duration", "400", "--seed", "3", "--out", str(again))
    a = read_series(run_dir / "series.parquet")
    b = read_series(again / "series.parquet")
    for col in a:
        np.testing.assert_array_equal(a[col], b[col], err_msg=col)
    other = tmp_path / "other"
    run_cli("consistency", *set_args(), "--duration", "400", "--seed", "4", "--out", str(other))
    c = read_series(other / "series.parquet")
    assert not np.array_equal(a["iops"], c["iops"])


def test_span_below_100_adds_spare_area_and_lowers_write_amplification(tmp_path, run_dir):
    out = tmp_path / "span75"
    run_cli("consistency", *set_args(), "--duration", "400", "--seed", "3", "--span", "75", "--out", str(out))
    s75 = json.loads((out / "summary.json").read_text())
    s100 = json.loads((run_dir / "summary.json").read_text())
    assert s75["span_bytes"] == pytest.approx(0.75 * 7 * 2**30, rel=1e-3)
    assert s75["write_amplification"] < s100["write_amplification"]
    assert s75["iops_median"] > s100["iops_median"]


@pytest.mark.realtime
def test_ctrl_c_keeps_partial_results_marked_incomplete(tmp_path):
    out = tmp_path / "interrupted"
    stdout, stderr = interrupt_cli("consistency", *set_args(), "--duration", "604800", "--out", str(out),
                                   ready=lambda: journalled(out, "randwrite", rows=11), settle_s=0.2)
    assert "partial results kept" in stderr
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] is False
    series = read_series(out / "series.parquet")
    assert len(series["iops"]) > 10  # more than a few simulated seconds were measured
    assert (out / "INCOMPLETE").exists()


def test_sigterm_behaves_like_ctrl_c(tmp_path):
    out = tmp_path / "terminated"
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", "consistency", *set_args(), "--duration", "604800",
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (out / "fill.parquet").exists() and time.time() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is False


def test_sigterm_swallowed_by_python_still_stops_the_run(tmp_path):
    """A SIGTERM handled inside a finalizer (``__del__``; also weakref and os.fork()
    callbacks) raises KeyboardInterrupt where Python swallows it (it would print "Exception
    ignored in ..." and a traceback: ssdlab drops it quietly); the run must stop all the
    same, not go on for its whole duration."""
    out = tmp_path / "swallowed"
    script = tmp_path / "term_in_del.py"
    script.write_text(
        "import os, signal, sys\n"
        "from ssdlab import cli, journal\n"
        "class Finalizer:\n"
        "    def __del__(self):\n"
        "        try:\n"
        "            os.kill(os.getpid(), signal.SIGTERM)\n"
        "            for _ in range(1000):  # the handler runs here, inside __del__\n"
        "                pass\n"
        "        except KeyboardInterrupt:\n"
        "            print('swallowed in __del__', file=sys.stderr)\n"
        "            raise\n"
        "append = journal.PhaseJournal.append\n"
        "def append_then_term(self, *a, **k):\n"
        "    append(self, *a, **k)\n"
        "    if self.rows and not getattr(journal, 'sent', False):\n"
        "        journal.sent = True\n"
        "        Finalizer()\n"
        "journal.PhaseJournal.append = append_then_term\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, str(script), "consistency", *set_args(), "--duration", "604800",
                           "--out", str(out), "--no-progress"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr
    assert "swallowed in __del__" in proc.stderr  # the case at hand: the first KeyboardInterrupt was lost
    assert "Exception ignored" not in proc.stderr and "Traceback" not in proc.stderr
    assert json.loads((out / "summary.json").read_text())["complete"] is False


def test_interval_resolves_the_series_finer_with_the_same_ios(tmp_path):
    """--interval 0.1: ten rows a second, the same IOs as the 1 s run of the same seed, and
    stalls measured to the interval."""
    runs = {}
    for interval in ("1", "0.1"):
        out = tmp_path / f"i{interval}"
        run_cli("consistency", *set_args(), "--duration", "20", "--interval", interval, "--out", str(out),
                "--no-progress")
        runs[interval] = (json.loads((out / "summary.json").read_text()), read_series(out / "series"))
    (s1, a), (s01, b) = runs["1"], runs["0.1"]
    assert s01["interval_s"] == 0.1 and len(b["t_s"]) == 200 and len(a["t_s"]) == 20
    assert np.allclose(np.diff(b["t_s"]), 0.1)
    assert np.sum(b["iops"]) * 0.1 == pytest.approx(np.sum(a["iops"]), rel=1e-9)  # every IO, once
    assert s01["iops_mean"] == pytest.approx(s1["iops_mean"], rel=1e-6)
    assert s01["zero_iops_seconds"] == pytest.approx(0.1 * np.sum(b["iops"] == 0))


def test_bad_options_are_clear_errors(tmp_path):
    for args, words in [(["--span", "0"], "--span"), (["--duration", "-5"], "--duration"), (["--bs", "1000"], "--bs"),
                        (["--target", "nvme0"], "--target")]:
        proc = run_cli("consistency", *args, "--out", str(tmp_path / "x"), check=False)
        assert proc.returncode == 2, (args, proc.stderr)
        assert words in proc.stderr and "Traceback" not in proc.stderr


def test_the_demo_drive_reaches_a_steady_state_that_holds_or_says_not_reached(tmp_path):
    """`make demo`: the default 256 GB drive for 2000 s. Its steady state, if it reports one,
    passes the SNIA rule on its last five rounds and holds from the onset to the end, on IOPS
    and on each round's write amplification; otherwise every output says "not reached"."""
    from ssdlab import analysis

    out = tmp_path / "demo"
    r = run_cli("consistency", "--target", "sim:default", "--out", str(out), "--no-progress")
    s = json.loads((out / "summary.json").read_text())
    series = read_series(out / "series")
    onset = s["steady_state_onset_s"]
    if onset is None:
        assert "steady state not reached" in r.stdout
        assert s["endurance"] is None and "no steady state was reached" in s["endurance_unavailable"]
        return
    assert f"steady state from {onset:,.0f} s" in r.stdout
    rounds = analysis.round_means(series["iops"], 1.0, 60.0)
    host, nand = (analysis.round_sums(series[k], 60) for k in ("host_write_bytes", "nand_write_bytes"))
    for per_round in (rounds, nand / host):
        last = analysis.steady_state_window(per_round[-5:], round_s=1.0, hold=False)
        assert last is not None and last.first_round == 0, "the last five rounds fail the SNIA rule"
        assert analysis._holds(per_round[int(onset // 60):], 5, 0.20, 0.10)
    assert s["endurance"]["write_amplification_basis"] == f"steady state from {onset:.0f} s"
