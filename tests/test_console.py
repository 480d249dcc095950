"""What a user reads in the console: every ``--help`` renders clean and says one thing about
purging; progress lines reach stderr when it is a file (a line every SSDLAB_PROGRESS_EVERY_S
seconds, whatever runs: setup, phases, results, teardown); sizes read like sizes; "n/a" never
carries a unit; the endurance block only with a steady state."""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import subprocess
import sys
import time

import pytest

from ssdlab import cli, progress
from ssdlab.procedures import common, declare
from ssdlab.targets.fio import fio_engines, parse_fio_json
from ssdlab.units import human_size

from conftest import run_cli, set_args

# --------------------------------------------------------------------------- help texts

#: What must not appear in a rendered help: unrendered format fields, doubled percent signs,
#: Python reprs.
_HELP_FLAWS = [(re.compile(r"%\("), "unrendered %(...)s"), (re.compile(r"%%"), "doubled %%"),
               (re.compile(r"[{}]"), "a brace"), (re.compile(r"object at 0x|<[\w.]+ object|<function |<class "),
                                                  "a Python repr"), (re.compile(r"\bNone\b"), "None")]
#: argparse's own spelling of a choice list in usage and option lines: ``{a,b,c}``.
_CHOICES = re.compile(r"\{[\w.-]+(?:,[\w.-]+)+\}")


def help_flaws(text: str) -> list[str]:
    """The flaws of a rendered help text, one per line found: "line: what"."""
    found = []
    for line in text.splitlines():
        bare = _CHOICES.sub("", line)
        found += [f"{line.strip()!r}: {what}" for rx, what in _HELP_FLAWS if rx.search(bare)]
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def _render(words: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        cli.main(words + ["--help"])
    return out.getvalue()


def every_help() -> dict[str, str]:
    """``ssdlab --help`` and every (nested) ``ssdlab CMD ... --help``, rendered."""
    helps, todo = {}, [[]]
    while todo:
        words = todo.pop()
        helps[" ".join(words) or "ssdlab"] = _render(words)
        parser = cli.build_parser(words)
        for w in words:
            parser = _subparsers(parser)[w]
        todo += [words + [name] for name in _subparsers(parser)]
    return helps


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    return every_help()


def test_every_help_is_walked(helps):
    tests = {t.name for t in declare.tests()}
    assert {"ssdlab", "trace run", "trace info", "grid", "fit", "profiles"} | tests <= set(helps)


def test_every_help_renders_clean(helps):
    flaws = {cmd: f for cmd, text in helps.items() if (f := help_flaws(text))}
    assert flaws == {}


def test_the_help_checker_catches_what_it_is_for():
    assert help_flaws("  --purge {blkdiscard,none}  how (default: blkdiscard)") == []
    for bad in ("(default: %(default)s)", "100%% of the span", "a {lba} sweep", "<ssdlab.x.Y object at 0x7f>",
                "default: None"):
        assert help_flaws(bad), bad


def test_a_test_that_does_not_purge_offers_no_purge(helps):
    for t in declare.tests():
        text = helps[t.name]
        says_not = "not purged" in " ".join(text.split())
        assert says_not == (not t.purges), t.name
        assert ("--purge" in text) == t.purges, t.name


def test_help_gives_the_progress_interval(helps):
    for t in declare.tests():
        text = " ".join(helps[t.name].split())
        assert f"a line every {progress.LINE_EVERY_S:g} s, or every SSDLAB_PROGRESS_EVERY_S seconds" in text, t.name


def test_run_refuses_purge_and_records_no_purge(tmp_path):
    r = run_cli("run", "--name=w", "--rw=write", "--bs=4k", "--size=1m", "--purge", "blkdiscard",
                "--out", str(tmp_path / "o"), check=False)
    assert r.returncode == 2 and "run never purges" in r.stderr and "Traceback" not in r.stderr


# --------------------------------------------------------------------------- progress

def _timed_lines(args: list[str], every_s: float, env: dict | None = None) -> tuple[list[tuple[float, str]], float]:
    """Runs ``ssdlab ARGS`` with stderr into a file and ``SSDLAB_PROGRESS_EVERY_S``; returns
    (the time each stderr line was first seen, the line) and when the command ended, both
    in seconds from the start."""
    import tempfile

    with tempfile.TemporaryFile("w+") as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "ssdlab", *args], stdout=subprocess.DEVNULL, stderr=err,
                                text=True, env={**os.environ, "SSDLAB_PROGRESS_EVERY_S": str(every_s), **(env or {})})
        seen: list[tuple[float, str]] = []
        while True:
            done = proc.poll() is not None
            err.seek(0)
            lines = err.read().splitlines()
            seen += [(time.monotonic() - t0, line) for line in lines[len(seen):]]
            if done:
                break
            time.sleep(0.05)
        assert proc.returncode == 0, "\n".join(line for _, line in seen)
        return seen, time.monotonic() - t0


def _no_long_silence(seen, end_s: float, every_s: float, slack_s: float) -> None:
    """Progress lines at most ``every_s`` (+ slack) apart from the first one to the end."""
    times = [t for t, line in seen if line.startswith("ssdlab: ")]
    assert len(times) >= 3, seen
    gaps = [b - a for a, b in zip(times, times[1:] + [end_s])]
    assert max(gaps) <= every_s + slack_s, (gaps, seen)


def test_progress_lines_when_stderr_is_a_file(tmp_path):
    every = 0.25
    seen, end = _timed_lines(["consistency", *set_args(), "--duration", "2000", "--out", str(tmp_path / "c")], every)
    phase = [line for _, line in seen if "4 KiB random write QD32: " in line]
    assert phase, seen
    # phase, percent, elapsed and time left, in that order
    assert all(re.search(r"ssdlab: \d\d:\d\d:\d\d 4 KiB random write QD32: \d+ %.*, \d+ s elapsed, "
                         r"(about \d+ (s|min \d\d s|h \d\d min) left|time left not known yet)", line) for line in phase), phase
    _no_long_silence(seen, end, every, slack_s=1.5)


def test_no_progress_prints_no_lines(tmp_path):
    seen, _ = _timed_lines(["consistency", *set_args(), "--duration", "30", "--no-progress",
                            "--out", str(tmp_path / "c")], 0.2)
    assert [line for _, line in seen if line.startswith("ssdlab: ")] == []


@pytest.mark.realtime
@pytest.mark.skipif(os.environ.get("SSDLAB_NO_LOOP") == "1", reason="SSDLAB_NO_LOOP=1")
def test_progress_covers_setting_a_loop_device_up_and_down(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    every = 0.3
    seen, end = _timed_lines(["run", "--fill", "--name=w", "--rw=randwrite", "--bs=4k", "--iodepth=8", "--runtime=2",
                              "--time_based", "--ioengine=libaio", "--direct=1", "--target", "loop:256M",
                              "--out", str(tmp_path / "r")], every, env={"SSDLAB_LOOP_DIR": str(scratch)})
    _no_long_silence(seen, end, every, slack_s=1.5)
    assert any("sequential fill: " in line for _, line in seen)
    s = json.loads((tmp_path / "r" / "summary.json").read_text())
    # the engines fio ran with, as its JSON says: ssdlab's fill (its probed engine), then the job's own
    used = [e for j in sorted((tmp_path / "r" / "fio").glob("*.json"))
            for e in fio_engines(parse_fio_json(j.read_text()))]
    assert s["target_info"]["ioengine"].split(", ") == list(dict.fromkeys(used)) and used[-1] == "libaio"
    assert s["target_info"]["purge_method"] == "none" and s["purge"]["method"].startswith("none")


def test_a_step_without_progress_prints_its_elapsed_time(capsys, monkeypatch):
    monkeypatch.setenv("SSDLAB_PROGRESS_EVERY_S", "0.1")
    monkeypatch.setattr(progress, "_configured", None)
    with progress.step("setting up loop:1G", enabled=None):
        time.sleep(0.45)
    time.sleep(0.2)  # no line once it is over
    err = capsys.readouterr().err.splitlines()
    assert len(err) >= 2 and all(re.fullmatch(r"ssdlab: \S+ setting up loop:1G: \d s elapsed", e) for e in err), err
    with progress.step("quiet", enabled=False):
        time.sleep(0.3)
    assert capsys.readouterr().err == ""


def test_progress_interval_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SSDLAB_PROGRESS_EVERY_S", "2.5")
    assert progress.every_s() == 2.5
    for bad in ("0", "-1", "soon"):
        monkeypatch.setenv("SSDLAB_PROGRESS_EVERY_S", bad)
        assert progress.every_s() == progress.LINE_EVERY_S


# --------------------------------------------------------------------------- figures

def test_human_size():
    assert human_size(34359738368) == "34.4 GB (32 GiB)"
    assert human_size(256_000_000_000) == "256 GB"
    assert human_size(999_997_440) == "1.00 GB"
    assert human_size(131072) == "131 kB (128 KiB)"
    assert human_size(1_610_612_736) == "1.61 GB (1.5 GiB)"
    assert human_size(1500) == "1.5 kB" and human_size(999) == "999 B"


def test_na_carries_no_unit():
    assert common.figure(None, ",.0f", "s") == "n/a" and common.figure(float("nan"), ".1f", "MB/s") == "n/a"
    assert common.figure(1234.5, ",.0f", "s") == "1,234 s" and common.figure(3, "d") == "3"


#: A quantity printed with no human unit: a long run of digits followed by "bytes"; or
#: n/a followed by a unit.
CONSOLE_FLAWS = [(re.compile(r"\b\d{7,} bytes\b"), "raw byte count"),
                 (re.compile(r"\bn/a (s|ms|µs|us|min|h|MB/s|GB|TB|IOPS|%)(?![\w/])"), "n/a with a unit")]


def console_flaws(text: str) -> list[str]:
    return [f"{line.strip()!r}: {what}" for line in text.splitlines() for rx, what in CONSOLE_FLAWS if rx.search(line)]


def test_the_console_checker_catches_what_it_is_for():
    assert console_flaws("1073741824 bytes written per pass") and console_flaws("steady state from n/a s")
    assert console_flaws("  IOPS n/a IOPS") and not console_flaws("steady state n/a, 0 s at zero IOPS")


def test_trace_header_reads_in_human_units(tmp_path):
    r = run_cli("trace", "run", "jedec-like", *set_args(), "--qd", "8", "--write-bytes", "32GiB", "--window", "10000",
                "--dry-run", "--out", str(tmp_path / "t"))
    assert "34.4 GB (32 GiB) written per pass over 7.52 GB (7 GiB)" in r.stdout
    assert console_flaws(r.stdout) == []


def test_endurance_only_with_a_steady_state(tmp_path):
    out = tmp_path / "c"
    r = run_cli("consistency", *set_args(), "--duration", "5", "--no-progress", "--out", str(out))
    s = json.loads((out / "summary.json").read_text())
    assert s["steady_state_onset_s"] is None and s["endurance"] is None
    assert "no steady state was reached in 5 s" in s["endurance_unavailable"]
    lines = [line for line in r.stdout.splitlines() if "endurance:" in line]
    assert lines == [f"  endurance: not projected: {s['endurance_unavailable']}"]
    assert "drive writes/day" not in r.stdout and "P/E" not in r.stdout
    assert console_flaws(r.stdout) == []


def test_fio_engines_come_from_fios_json():
    assert fio_engines({"global options": {"ioengine": "io_uring"}, "jobs": [{"job options": {}}]}) == ["io_uring"]
    assert fio_engines({"jobs": [{"job options": {"ioengine": "libaio"}}, {"job options": {}}]}) == ["libaio", "psync"]
    assert fio_engines(None) == []


def test_purge_none_leaves_a_file_target_as_it_is(tmp_path):
    from ssdlab.targets.fio import FioTarget

    path = tmp_path / "drive.img"
    path.write_bytes(b"\x5a" * (8 << 20))
    with FioTarget(f"file:{path}", tmp_path / "wd", destroy=str(path), purge_method="none") as t:
        assert t.purge() == {"method": "none"} and t.describe()["purge_method"] == "none"
    assert path.read_bytes()[:4096] == b"\x5a" * 4096
    with FioTarget(f"file:{path}", tmp_path / "wd2") as t:
        assert t.purge()["method"] == "truncate" and t.describe()["purge_method"] == "truncate"
    assert path.read_bytes()[:4096] == bytes(4096)
