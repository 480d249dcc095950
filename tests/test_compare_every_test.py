"""`ssdlab compare` shows each test's own headline figures, for every test kind: a fill, a
sweep, a recovery, a used, a trace, a PTS, a job-file run, a consistency and a review folder
(its parts), on small simulated drives. Each figure printed must equal the summary's value
(read here by key, not through the headline declarations), and a run's own rows must not
be n/a. Every test's last line points at its report.html, its console output reads clean
(sizes in units, no n/a with a unit), and its summary.json holds byte counts and counts as
integers."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli, set_args
from ssdlab.report import format_value

#: test folder -> (command line, [(row label as compare prints it, summary key path)]).
RUNS = {
    "fill": (["fill", "--pause", "2", "--burst", "5"],
             [("whole-drive fill average (MB/s)", "fill_mbps_mean"), ("fill time (s)", "fill_s")]),
    "sweep": (["sweep", "--zones", "10"],
              [("write mean over the zones (MB/s)", "write_mbps_mean"), ("read min over the zones (MB/s)",
                                                                         "read_mbps_min")]),
    "recovery": (["recovery", "--zones", "10", "--zone-bytes", "sample", "--torture-min", "0.5", "--idle-min", "0.5"],
                 [("write pass clean (MB/s)", "clean_write_mbps"),
                  ("write pass after torture (MB/s)", "after_torture_write_mbps"),
                  ("write pass after idle (MB/s)", "after_idle_write_mbps"),
                  ("write pass after TRIM (MB/s)", "after_trim_write_mbps")]),
    "used": (["used", "--duration", "10"],
             [("random writes new (IOPS)", "new_iops"), ("random writes used (IOPS)", "used_iops"),
              ("used vs new (%)", "used_vs_new_pct")]),
    "trace": (["trace", "run", "jedec-like", "--qd", "8", "--write-bytes", "1GiB", "--window", "10000"],
              [("qd8-trim IOPS mean", "variants.0.iops_mean"),
               ("qd8-notrim write amplification", "variants.1.write_amplification")]),
    "pts": (["pts", "--test", "iops,wsat", "--round-s", "2", "--wsat-capacities", "2"],
            [("PTS IOPS: 4 KiB random write", "pts.results.iops.matrix.r0w100_4096"),
             ("PTS WSAT final (IOPS)", "pts.results.wsat.final_iops")]),
    "run": (["run", "--name=mix", "--rw=randrw", "--bs=4k", "--iodepth=8", "--runtime=3", "--time_based"],
            [("read IOPS mean", "read_iops_mean"), ("write MB/s mean", "write_mbps_mean")]),
    "consistency": (["consistency", "--duration", "60"],
                    [("IOPS mean", "iops_mean"), ("fresh-out-of-box IOPS", "fob_iops"),
                     ("write amplification", "write_amplification")]),
    "review": (["review", "--only", "used,consistency", "--duration", "20", "--used-duration", "5"],
               [("used: random writes used (IOPS)", "@used/used_iops"),
                ("consistency: IOPS mean", "@consistency/iops_mean")]),
}


def _value(folder: Path, path: str):
    if path.startswith("@"):  # a review part's own summary
        part, path = path[1:].split("/", 1)
        folder = folder / part
    v = json.loads((folder / "summary.json").read_text())
    for k in path.split("."):
        v = v[int(k)] if isinstance(v, list) else v[k]
    return v


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """Every test's results folder, two runs at a time."""
    root = tmp_path_factory.mktemp("compare")
    pending = list(RUNS.items())
    running: list[tuple[str, subprocess.Popen]] = []
    while pending or running:
        while pending and len(running) < 2:
            name, (args, _) = pending.pop(0)
            cmd = [sys.executable, "-m", "ssdlab", *args, *set_args(), "--no-progress", "--out", str(root / name)]
            running.append((name, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
        name, proc = running.pop(0)
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"{name}: {err}"
        (root / f"{name}.stdout").write_text(out)
        assert f"open {root / name / 'report.html'}" in out.strip().splitlines()[-1], (name, out)  # the last line
    return root


def _table(text: str) -> dict[str, list[str]]:
    """The compare table's rows: label -> cells (columns are two or more spaces apart)."""
    import re

    rows = {}
    for line in text.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 2:
            rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.parametrize("name", list(RUNS))
def test_compare_shows_the_tests_own_figures(folders, name):
    table = _table(run_cli("compare", str(folders / name)).stdout)
    for label, path in RUNS[name][1]:
        assert label in table, (label, sorted(table))
        # the folder's own column comes first (a review's parts follow as columns of their own)
        assert table[label][0] == format_value(_value(folders / name, path)), (label, table[label])


def test_compare_puts_every_kind_side_by_side(folders):
    names = [n for n in RUNS if n != "review"]  # a review folder brings its parts as columns too
    table = _table(run_cli("compare", *(str(folders / n) for n in names)).stdout)
    for i, name in enumerate(names):
        for label, path in RUNS[name][1]:
            assert table[label][i] == format_value(_value(folders / name, path)), (name, label)


#: Summary keys that hold a whole number of bytes or a count: ``*_bytes``, ``*_ios``,
#: ``*_commands``, ``*_count`` and a few bare names.
COUNT_KEY = re.compile(r"(_bytes|_ios|_commands|_count)$|^(bytes|ios|commands|count|reads|writes|trims|flushes|erases|"
                       r"zones|rounds|intervals|passes|n_\w+)$")


def non_integers(v, path: str = "") -> list[str]:
    """Where a byte count or count of a summary holds something other than a whole number
    (an int; None is "not measured")."""
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            p = f"{path}.{k}" if path else str(k)
            if COUNT_KEY.search(str(k)) and x is not None and (isinstance(x, bool) or not isinstance(x, (int, dict, list))):
                out.append(f"{p} = {x!r}")
            out += non_integers(x, p)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            out += non_integers(x, f"{path}[{i}]")
    return out


def test_the_integer_checker_catches_what_it_is_for():
    assert non_integers({"written_bytes": 7516192767.999996}) == ["written_bytes = 7516192767.999996"]
    assert non_integers({"fill": [{"host_write_bytes": 1.0, "ios": 3}], "write_mbps_first_zones": 5.5}) == [
        "fill[0].host_write_bytes = 1.0"]
    assert non_integers({"capacity_bytes": 7, "zones": 10, "cache_bytes": None}) == []


@pytest.mark.parametrize("name", list(RUNS))
def test_summary_counts_are_integers(folders, name):
    for path in sorted((folders / name).rglob("summary.json")):
        assert non_integers(json.loads(path.read_text())) == [], path


@pytest.mark.parametrize("name", list(RUNS))
def test_console_output_reads_clean(folders, name):
    from test_console import console_flaws

    assert console_flaws((folders / f"{name}.stdout").read_text()) == []


@pytest.mark.parametrize("name", list(RUNS))
def test_every_declared_figure_is_in_the_summary_and_the_report(folders, name):
    """Each figure the test declares has its place in summary.json (test_metrics shows the
    check catches a planted omission), and each top-level one with a number is in the
    folder's report.html, labelled as declared."""
    import html

    from ssdlab.procedures.declare import by_summary_name
    from test_metrics import missing_metrics

    s = json.loads((folders / name / "summary.json").read_text())
    assert missing_metrics(s["test"], s) == []
    page = (folders / name / "report.html").read_text(encoding="utf-8")
    for m in by_summary_name()[s["test"]].metrics:
        v = m.value(s)
        if len(m.where) == 1 and isinstance(v, (int, float)) and not isinstance(v, bool):
            assert f">{html.escape(m.label)}" in page, (name, m.label)
