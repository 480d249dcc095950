"""``ssdlab review`` on the small simulated drive with short durations: one folder per part,
summary.json listing the parts, one report.html holding all of them; --dry-run; --only/--skip;
a part that fails; Ctrl-C in the middle of a part."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssdlab.errors import UserError
from ssdlab.procedures import review
from ssdlab.results import read_series
from ssdlab.targets import open_target

from conftest import SMALL_DRIVE, interrupt_cli, journalled, run_cli, set_args
from test_report import _open as open_page
from test_report import page_problems
from test_report import browser  # noqa: F401 - the headless Chromium fixture

PARTS = ["consistency", "consistency-spare25", "recovery", "used"]
SHORT = ["--duration", "20", "--torture-min", "0.5", "--idle-min", "1", "--zones", "10", "--used-duration", "5"]


def summary_of(path: Path) -> dict:
    return json.loads((path / "summary.json").read_text())


def page_data(page: Path) -> dict:
    m = re.search(r'<script type="application/json" id="ssdlab-data">(.*?)</script>', page.read_text("utf-8"), re.S)
    assert m, "embedded data block missing"
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def review_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("review") / "r"
    proc = run_cli("review", *set_args(), *SHORT, "--no-progress", "--out", str(out))
    return out, proc


def test_one_folder_per_part_and_one_report(review_run):
    out, proc = review_run
    names = {p.name for p in out.iterdir()}
    assert {"summary.json", "report.html", *PARTS} <= names, sorted(names)
    assert "INCOMPLETE" not in names
    for part in PARTS:
        assert (out / part / "summary.json").exists(), part
        assert not (out / part / "INCOMPLETE").exists(), part
    # Progress: every part announced and its result printed.
    for i, part in enumerate(PARTS, 1):
        assert f"[{i}/4] {part}:" in proc.stdout
    assert proc.stdout.count("done in") == 4 and "4 of 4 parts done" in proc.stdout
    # Each part is the normal results folder of its test.
    tests = {part: summary_of(out / part)["test"] for part in PARTS}
    assert tests == {"consistency": "consistency", "consistency-spare25": "consistency", "recovery": "recovery",
                     "used": "used"}
    assert summary_of(out / "consistency")["span_pct"] == 100
    assert summary_of(out / "consistency-spare25")["span_pct"] == 75
    assert summary_of(out / "consistency")["requested_duration_s"] == 20
    rec = summary_of(out / "recovery")
    assert (rec["torture_min"], rec["idle_min"], rec["zones"]) == (0.5, 1, 10)
    assert summary_of(out / "used")["requested_duration_s"] == 5


def test_summary_lists_the_parts(review_run):
    out, _ = review_run
    s = summary_of(out)
    assert s["test"] == "review" and s["complete"] is True and s["target"] == "sim:default"
    assert s["profile"]["blocks_per_plane"] == 64 and "ssdlab_version" in s and "command_line" in s
    assert [e["part"] for e in s["parts"]] == PARTS
    assert s["part_dirs"] == PARTS and s["parts_done"] == 4 and s["parts_failed"] == []
    for e in s["parts"]:
        assert e["status"] == "done" and e["complete"] is True and e["dir"] == e["part"], e
        assert e["headline"] and e["metrics"], e
    by = {e["part"]: e for e in s["parts"]}
    assert by["used"]["metrics"]["used_mbps"] < by["used"]["metrics"]["new_mbps"]
    assert by["recovery"]["metrics"]["after_torture_write_mbps_first_zones"] is not None
    table = s["tables"][0]
    assert [r[0] for r in table["rows"]] == PARTS
    assert all(len(r) == len(table["columns"]) for r in table["rows"])
    assert s["options"]["consistency_duration_s"] == 20 and s["report"] == "report.html"


def test_report_holds_every_part(review_run):
    out, _ = review_run
    page = out / "report.html"
    text = page.read_text("utf-8")
    data = page_data(page)
    runs = list(data["runs"].values())
    assert sorted(Path(r["dir"]).name for r in runs) == sorted(["r"] + PARTS)
    assert sorted(r["test"] for r in runs) == sorted(["review", "consistency", "consistency", "recovery", "used"])
    cons = [r for r in runs if r["kind"] == "consistency"]
    assert sorted(r["variant"] for r in cons) == ["25% Spare Area", "Default"]
    assert len(data["groups"]) == 1 and len(data["groups"][0]["runs"]) == 2  # one drive, two variants
    assert "recovery" in {s["test"] for s in data["line_sections"]}  # the sweeps as MB/s against position
    for heading in ("<h2>Review</h2>", "<h2>Performance consistency</h2>", "<h2>Recovery</h2>", "<h2>Used</h2>"):
        assert heading in text, heading
    assert text.index("<h2>Review</h2>") < text.index("<h2>Performance consistency</h2>")
    # `ssdlab report OUT` makes the same page: the review and its parts.
    again = out.parent / "again.html"
    run_cli("report", str(out), "--out", str(again))
    assert sorted(Path(r["dir"]).name for r in page_data(again)["runs"].values()) == sorted(["r"] + PARTS)


def test_dry_run_prints_the_whole_plan_and_runs_nothing(tmp_path):
    out = tmp_path / "dry"
    proc = run_cli("review", *set_args(), "--quick", "--zones", "2", "--dry-run", "--out", str(out))
    text = proc.stdout
    for i, part in enumerate(PARTS, 1):
        assert f"# part {i}/4 {part} -> OUT/{part}/" in text
    phases = [line.split()[2].rstrip(":") for line in text.splitlines() if line.startswith("# phase ")]
    assert phases.count("fill") == 4 and phases.count("randwrite") == 2
    assert {"torture", "retorture", "idle", "trim", "dirty", "new", "used", "trimmed"} <= set(phases)
    assert "duration_s=600.0" in text and "duration_s=300.0" in text  # --quick: 600 s, 5 min torture
    assert "duration_s=20.0" in text
    assert not out.exists()


def test_interval_reaches_every_part(tmp_path):
    """--interval sets the IOPS interval of each part's timed random writes (those measured:
    consistency, torture, used's new/used/trimmed states)."""
    out = tmp_path / "plan"
    text = run_cli("review", *set_args(), "--quick", "--interval", "0.1", "--dry-run", "--out", str(out)).stdout
    timed = [line for line in text.splitlines() if ": randwrite " in line and "duration_s=None" not in line]
    assert len(timed) == 7 and all(line.endswith("interval_s=0.1") for line in timed), timed


def test_only_and_skip_choose_parts(tmp_path):
    out = tmp_path / "only"
    run_cli("review", *set_args(), *SHORT, "--only", "used,consistency", "--skip", "consistency", "--out", str(out))
    s = summary_of(out)
    assert {e["part"]: e["status"] for e in s["parts"]} == {
        "consistency": "skipped", "consistency-spare25": "skipped", "recovery": "skipped", "used": "done"}
    assert s["complete"] is True and s["part_dirs"] == ["used"]
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == ["used"]
    assert {r["test"] for r in page_data(out / "report.html")["runs"].values()} == {"review", "used"}


@pytest.mark.parametrize("args, word", [
    (["--only", "sweepz"], "sweepz"),
    (["--skip", "consistency,consistency-spare25,recovery,used"], "no part"),
    (["--duration", "0"], "--duration"),
    (["--torture-min", "0"], "--torture-min"),
    (["--used-duration", "-1"], "--used-duration"),
    (["--zones", "0"], "--zones"),
    (["--dirty-writes", "lots"], "--dirty-writes"),
])
def test_bad_options_are_clear_errors(tmp_path, args, word):
    proc = run_cli("review", *set_args(), *args, "--out", str(tmp_path / "x"), check=False)
    assert proc.returncode == 2, (args, proc.stderr)
    assert word in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "x" / "summary.json").exists()


def test_a_part_that_fails_is_reported_and_the_others_run(tmp_path):
    def open_part(part_dir: Path):
        if part_dir.name == "recovery":
            raise RuntimeError("the drive went away")
        return open_target("sim:default", sets=SMALL_DRIVE)

    params = review.ReviewParams(consistency_duration_s=10, torture_min=0.5, idle_min=1, zones=4, used_duration_s=3,
                                 parts=("consistency", "recovery", "used"))
    lines: list[str] = []
    with pytest.raises(UserError, match=r"^review: part recovery failed .*summary.json\); the other parts ran"):
        review.run(open_target("sim:default", sets=SMALL_DRIVE), params, tmp_path / "r", argv=["ssdlab", "review"],
                   progress=False, open_part=open_part, echo=lines.append)
    s = summary_of(tmp_path / "r")
    by = {e["part"]: e for e in s["parts"]}
    assert by["recovery"]["status"] == "failed" and "the drive went away" in by["recovery"]["error"]
    assert by["consistency"]["status"] == by["used"]["status"] == "done"
    assert by["consistency-spare25"]["status"] == "skipped"
    assert s["complete"] is False and s["parts_failed"] == ["recovery"]
    assert "part failed: recovery" in (tmp_path / "r" / "INCOMPLETE").read_text()
    assert s["complete"] is False
    row = next(r for r in s["tables"][0]["rows"] if r[0] == "recovery")
    assert "failed" in row[1] and "the drive went away" in row[1]
    assert (tmp_path / "r" / "report.html").exists()


@pytest.mark.realtime
def test_ctrl_c_keeps_finished_parts_and_marks_the_interrupted_one(tmp_path):
    out = tmp_path / "interrupted"
    stdout, stderr = interrupt_cli("review", *set_args(), "--duration", "10", "--torture-min", "10080", "--zones", "10",
                                   "--out", str(out), ready=lambda: journalled(out / "recovery", "torture", rows=11),
                                   ready_timeout_s=120, exit_timeout_s=120)
    assert "partial results kept" in stderr and "Traceback" not in stderr
    assert "[3/4] recovery" in stdout and "[4/4]" not in stdout
    s = summary_of(out)
    assert s["complete"] is False and (out / "INCOMPLETE").exists()
    by = {e["part"]: e for e in s["parts"]}
    assert [by[p]["status"] for p in PARTS] == ["done", "done", "interrupted", "not run"]
    assert by["consistency"]["complete"] is True and by["recovery"]["complete"] is False
    assert s["part_dirs"] == ["consistency", "consistency-spare25", "recovery"]
    # The finished parts are whole; the interrupted one keeps what it measured, marked incomplete.
    for part in ("consistency", "consistency-spare25"):
        assert summary_of(out / part)["complete"] is True and not (out / part / "INCOMPLETE").exists()
    rec = summary_of(out / "recovery")
    assert rec["complete"] is False and (out / "recovery" / "INCOMPLETE").exists()
    assert list(rec["stages"]) == ["clean"] and rec["torture"]["complete"] is False
    assert len(read_series(out / "recovery" / "torture.parquet")["iops"]) > 10
    assert not (out / "used").exists()
    data = page_data(out / "report.html")
    assert sorted(r["test"] for r in data["runs"].values()) == ["consistency", "consistency", "recovery", "review"]
    assert [r["complete"] for r in data["runs"].values() if r["test"] == "recovery"] == [False]


def test_each_part_opens_the_target_anew_with_its_fio_files_in_its_folder(tmp_path):
    opened = []
    first = open_target("sim:default", sets=SMALL_DRIVE)

    def reopen(workdir):
        opened.append(workdir)
        return open_target("sim:default", sets=SMALL_DRIVE)

    first.reopen = reopen
    params = review.ReviewParams(consistency_duration_s=3, used_duration_s=2, parts=("consistency", "used"))
    s = review.run(first, params, tmp_path / "r", progress=False, echo=lambda _: None)
    assert s["complete"] is True and opened == [tmp_path / "r" / "consistency" / "fio", tmp_path / "r" / "used" / "fio"]
    assert s["options"]["used_duration_s"] == 2 and s["options"]["torture_min"] == 20  # the part's default


def test_help_states_parts_units_and_defaults():
    text = run_cli("review", "--help").stdout
    for w in PARTS + ["--quick", "--only", "--skip", "default: 2000", "--quick: 600", "minutes", "seconds",
                      "default: 20", "default: 40", "default: 60", "--target", "--dry-run", "report.html"]:
        assert w in text, w


def test_review_page_loads_in_chromium_without_errors_or_requests(review_run, browser):
    out, _ = review_run
    page = out / "report.html"
    logs, requests = open_page(browser, page)
    assert [e for e in logs if e.get("level") in ("SEVERE", "WARNING")] == []
    assert requests == [page.resolve().as_uri()]
    n = browser.execute_script("return window.ssdlabReport && Object.keys(window.ssdlabReport.views).length")
    assert n >= 2  # the consistency scatter plot and the recovery lines at least
    assert page_problems(browser) == []  # at 1280 px: charts label their data's range, tables fit their cards
