"""Procedures on the null target (``null:SIZE``: scripted figures, no simulator, no fio): each
test's results follow the script and the target's capabilities, Ctrl-C and a failing phase keep
what was measured, and the procedures never ask what kind a target is (a checker, itself tested
on planted lines)."""
from __future__ import annotations

import ast
import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest

import ssdlab
from ssdlab import cli, stop
from ssdlab.errors import UserError
from ssdlab.procedures import consistency, recovery, review, run as run_mod, sweep
from ssdlab.procedures.common import PhaseFailed
from ssdlab.procedures.trace_replay import _parallel_variants
from ssdlab.results import read_series
from ssdlab.targets import null, open_target
from ssdlab.targets.base import CAPABILITIES
from ssdlab.targets.null import NullTarget, PhaseFailure

PACKAGE = Path(ssdlab.__file__).parent
MIB = 2**20


def summary_of(path: Path) -> dict:
    return json.loads((path / "summary.json").read_text())


@pytest.fixture
def handlers():
    """Restores the signal handlers and ssdlab.stop's state after a test that installs them
    (stop.install does) or raises a signal."""
    saved = {s: signal.getsignal(s) for s in stop.SIGNALS}
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    stop.clear()


def _signal_at(sig: int, t_s: float):
    """A script that sends ``sig`` to this process at ``t_s`` of the random writes; the
    handler runs inside the script (a stop request lands within the interval)."""
    def script(job, now_s):
        if job.name == "randwrite" and now_s == t_s:
            signal.raise_signal(sig)
            for _ in range(1000):  # many chances for Python to run the handler
                pass
        return {}
    return script


def _consistency(target, out: Path, duration_s: float = 60) -> dict:
    params = consistency.ConsistencyParams(duration_s=duration_s)
    return consistency.run(target, params, out, argv=["ssdlab", "consistency"], progress=False)


def _stall(job, t_s: float) -> dict:
    """The random writes stall from 20 s to 25 s, then run at half speed."""
    if job.name != "randwrite":
        return {}
    return {"iops": 1000.0 if t_s < 20 else (0.0 if t_s < 25 else 500.0), "latency_us": 50.0 + t_s}


# --------------------------------------------------------------------------- the script and the capabilities

def test_consistency_follows_the_script(tmp_path):
    s = _consistency(NullTarget(64 * MIB, script=_stall), tmp_path / "r")
    series = read_series(tmp_path / "r" / "series.parquet")
    assert list(series["iops"][18:27]) == [1000, 1000, 0, 0, 0, 0, 0, 500, 500]
    assert s["zero_iops_seconds"] == 5 and s["longest_stall_s"] == 5 and s["iops_min"] == 0
    assert series["write_lat_p99_us"][30] == 80.0
    assert s["complete"] is True and not (tmp_path / "r" / "INCOMPLETE").exists()


@pytest.mark.parametrize("capabilities, source, wa", [
    ((), "unavailable: NullTarget has no drive counters", None),
    (("drive_counters",), "drive counters (null: null target bytes)", 3.0),
    (("simulated",), "simulator (exact)", 3.0),
])
def test_write_amplification_comes_from_what_the_target_can_do(tmp_path, capabilities, source, wa):
    s = _consistency(NullTarget(64 * MIB, capabilities=capabilities, write_amplification=3.0), tmp_path / "r", 10)
    assert s["write_amplification_source"].startswith(source)
    assert s["write_amplification"] == (pytest.approx(wa) if wa else None)
    assert ("counters" in s) == ("simulated" in capabilities)  # the simulated drive's counters, kept at the end


def test_sweep_and_recovery_run_on_the_null_target(tmp_path):
    def slow_reads(job, t_s):
        return {"iops": 500.0} if job.pattern == "read" else {}

    target = NullTarget(64 * MIB, script=slow_reads)
    s = sweep.run(target, sweep.SweepParams(zones=4), tmp_path / "s", argv=["ssdlab", "sweep"], progress=False)
    # 128 KiB IOs: 1000 IOPS write, 500 IOPS read
    assert s["write_mbps_mean"] == pytest.approx(131.072) and s["read_mbps_mean"] == pytest.approx(65.536)
    p = recovery.RecoveryParams(torture_min=1, idle_min=1, zones=4)
    r = recovery.run(NullTarget(64 * MIB), p, tmp_path / "rec", argv=["ssdlab", "recovery"], progress=False)
    assert r["complete"] is True and list(r["stages"]) == ["clean", "after_torture", "after_idle", "after_trim"]


def test_a_fio_workload_runs_group_by_group(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("[global]\nbs=4k\nruntime=5\ntime_based\n[w]\nrw=randwrite\n[r]\nstonewall\nrw=randread\n")
    target = NullTarget(64 * MIB, capabilities={"simulated"}, write_amplification=2.0,
                        script=lambda step, t: {"iops": 100.0 * (step.index + 1)})
    s = run_mod.run(target, run_mod.RunParams(job=str(job)), tmp_path / "r", argv=["ssdlab", "run"], progress=False)
    assert [g["name"] for g in s["groups"]] == ["w", "r"]
    assert s["groups"][0]["directions"]["write"]["iops_mean"] == 100
    assert s["groups"][1]["directions"]["read"]["iops_mean"] == 200
    assert s["write_amplification"] == pytest.approx(2.0)
    series = read_series(tmp_path / "r" / "series.parquet")
    assert list(series["group"]) == [1] * 5 + [2] * 5


def test_a_generated_command_stream_replays_in_order(tmp_path):
    s = run_mod.run(NullTarget(2 << 30, iops=500.0), run_mod.RunParams(job="record"), tmp_path / "r",
                    argv=["ssdlab", "run", "record"], progress=False)
    commands = s["planned"]["commands"]
    assert s["complete"] is True and s["commands"] == commands > 0
    assert s["duration_s"] == pytest.approx(commands / 500.0)


def test_review_reopens_the_null_target_for_each_part(tmp_path):
    params = review.ReviewParams(consistency_duration_s=10, torture_min=0.5, idle_min=1, zones=4,
                                 used_duration_s=3)
    s = review.run(open_target("null:64M"), params, tmp_path / "r", argv=["ssdlab", "review"], progress=False,
                   echo=lambda text: None)
    assert s["complete"] is True
    assert {e["part"]: e["status"] for e in s["parts"]} == {p: "done" for p in review.PARTS}


def test_a_capability_the_target_lacks_is_a_clear_error_or_not_used():
    with pytest.raises(ValueError, match="give open_part, or a target from ssdlab.targets.open_target"):
        review.run(NullTarget(64 * MIB), review.ReviewParams(), "/nonexistent/never-written")
    assert _parallel_variants(NullTarget(64 * MIB), 4) == 1
    assert _parallel_variants(NullTarget(64 * MIB, capabilities={"fork"}), 4) == min(4, os.cpu_count() or 1)
    with pytest.raises(ValueError, match="'teleport'"):
        NullTarget(capabilities={"teleport"})


def test_a_dry_run_shows_fio_jobs_only_on_a_target_that_runs_them(capsys):
    from ssdlab.procedures.common import print_plan
    from ssdlab.targets.base import JobSpec

    jobs = [JobSpec("randwrite", "randwrite", duration_s=5)]
    print_plan(NullTarget(64 * MIB), jobs)
    plain = capsys.readouterr().out
    print_plan(NullTarget(64 * MIB, capabilities={"fio_jobs"}), jobs)
    fio = capsys.readouterr().out
    assert "runs no fio job" not in plain and "# purge" not in plain
    assert "; null target: phase randwrite runs no fio job" in fio and "# no purge" not in fio and "# purge (" in fio


def test_the_command_line_opens_null_targets_and_refuses_bad_settings(tmp_path, capsys, handlers):
    assert cli.main(["consistency", "--target", "null:32M", "--set", "iops=250", "--set", "capabilities=simulated",
                       "--duration", "10", "--out", str(tmp_path / "r")]) == 0
    s = summary_of(tmp_path / "r")
    assert s["iops_mean"] == 250 and s["target_info"]["capabilities"] == ["reopen", "simulated"]
    for bad, word in ((["--set", "speed=3"], "speed=3"), (["--set", "iops=fast"], "iops must be a number"),
                      (["--set", "capabilities=warp"], "warp")):
        assert cli.main(["consistency", "--target", "null:", *bad, "--out", str(tmp_path / "x")]) == 2
        err = capsys.readouterr().err
        assert word in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        cli.main(["consistency", "--help"])
    assert "null:SIZE" in capsys.readouterr().out


# --------------------------------------------------------------------------- Ctrl-C and failures

def test_ctrl_c_in_the_random_writes_keeps_what_ran(tmp_path, handlers):
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Python's own: KeyboardInterrupt at once
    with pytest.raises(KeyboardInterrupt):
        _consistency(NullTarget(64 * MIB, script=_signal_at(signal.SIGINT, 15)), tmp_path / "r")
    s = summary_of(tmp_path / "r")
    assert s["complete"] is False and (tmp_path / "r" / "INCOMPLETE").exists() and "error" not in s
    assert len(read_series(tmp_path / "r" / "series.parquet")["iops"]) == 15


def test_a_stop_request_through_the_command_line_exits_130_with_the_results_kept(tmp_path, monkeypatch, capsys,
                                                                                 handlers):
    """SIGTERM at 15 s of the random writes, through ssdlab.stop's handlers (as the entry
    point installs them): exit 130, the partial series kept, the folder marked incomplete."""
    opened = null.open_spec

    def scripted(spec, **kw):
        target = opened(spec, **kw)
        target.script = _signal_at(signal.SIGTERM, 15)
        return target

    monkeypatch.setattr(null, "open_spec", scripted)
    stop.install()
    code = cli.main(["consistency", "--target", "null:32M", "--duration", "60", "--out", str(tmp_path / "r")])
    assert code == 130
    err = capsys.readouterr().err
    assert "partial results kept" in err and "Traceback" not in err
    assert summary_of(tmp_path / "r")["complete"] is False and (tmp_path / "r" / "INCOMPLETE").exists()
    assert len(read_series(tmp_path / "r" / "series.parquet")["iops"]) == 15


def test_a_failing_phase_stops_the_run_with_its_message(tmp_path):
    def fails_at_7_s(job, t_s):
        if job.name == "randwrite" and t_s >= 7:
            raise PhaseFailure("the drive went away")
        return {}

    with pytest.raises(PhaseFailed, match="null:.*phase randwrite: the drive went away"):
        _consistency(NullTarget(64 * MIB, script=fails_at_7_s), tmp_path / "r")
    s = summary_of(tmp_path / "r")
    assert s["complete"] is False and "the drive went away" in s["error"]
    assert len(read_series(tmp_path / "r" / "series.parquet")["iops"]) == 7


def test_a_phase_that_raises_propagates_and_leaves_the_folder_unfinished(tmp_path):
    def broken(job, t_s):
        if job.name == "fill":
            raise RuntimeError("bug in the script")
        return {}

    with pytest.raises(RuntimeError, match="bug in the script"):
        _consistency(NullTarget(64 * MIB, script=broken), tmp_path / "r")
    assert not (tmp_path / "r" / "summary.json").exists() or summary_of(tmp_path / "r").get("complete") is not True


def test_a_failing_group_of_a_workload_keeps_the_groups_before_it(tmp_path):
    job = tmp_path / "job.fio"
    job.write_text("[global]\nbs=4k\nruntime=5\ntime_based\n[w]\nrw=randwrite\n[r]\nstonewall\nrw=randread\n")

    def second_group_fails(step, t_s):
        if step.index == 1 and t_s >= 2:
            raise PhaseFailure("read error")
        return {}

    with pytest.raises(PhaseFailed, match="read error"):
        run_mod.run(NullTarget(64 * MIB, script=second_group_fails), run_mod.RunParams(job=str(job)), tmp_path / "r",
                    argv=["ssdlab", "run"], progress=False)
    s = summary_of(tmp_path / "r")
    assert s["complete"] is False and [g["complete"] for g in s["groups"]] == [True, False]
    assert list(read_series(tmp_path / "r" / "series.parquet")["group"]) == [1] * 5 + [2] * 2


# --------------------------------------------------------------------------- no target-kind branches

#: The procedures and the engine that runs fio workloads: none of it may ask what kind a target is.
PROCEDURE_FILES = (sorted((PACKAGE / "procedures").glob("*.py")) + sorted((PACKAGE / "pts").glob("*.py"))
                   + [PACKAGE / "workload" / "engine.py"])


def kind_probes(source: str, filename: str = "<source>") -> list[str]:
    """Lines that ask a target what kind it is: ``X.simulated``, or ``getattr``/``hasattr``
    on anything named ``target`` (``target``, ``self.target``, ``targets[i]``...)."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Attribute) and node.attr == "simulated":
            found.append(f"{filename}:{node.lineno}: .simulated")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
              and node.args and "target" in ast.unparse(node.args[0]).lower()):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_procedures_ask_capabilities_not_kinds():
    assert len(PROCEDURE_FILES) > 10 and all(p.exists() for p in PROCEDURE_FILES)
    found = [hit for p in PROCEDURE_FILES for hit in kind_probes(p.read_text(), str(p.relative_to(PACKAGE)))]
    assert not found, found


@pytest.mark.parametrize("line", [
    "if target.simulated:\n    pass",
    "x = self.target.simulated and done",
    "fork = getattr(target, 'fork', None)",
    "ok = hasattr(self.target, 'reopen')",
    "f = getattr(targets[i], 'state_bytes', 0)",
])
def test_the_kind_checker_catches_a_planted_probe(line):
    clean = "if 'simulated' in target.capabilities:\n    n = getattr(job, 'qd', 1)\n"
    assert kind_probes(clean) == []
    assert len(kind_probes(clean + line)) == 1


def test_every_capability_is_documented():
    assert all(isinstance(v, str) and len(v) > 20 for v in CAPABILITIES.values())
    assert {"simulated", "drive_counters", "fio_jobs", "fork", "reopen", "shared_replay"} == set(CAPABILITIES)
