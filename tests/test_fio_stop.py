"""How a stop request stops fio: its stop file first, then a signal, then SIGKILL.

fio's handler of SIGINT and SIGTERM is not async-signal-safe (it formats a message, which
allocates): a signal that lands while fio's main thread forks a job hangs fio for ever, in
the allocator's lock. So a phase asks fio to stop by its ``--trigger-file`` (fio's main loop
looks for it), signals only a fio that has not taken the file within
:data:`~ssdlab.targets.fio.FIO_STOP_LOOK_S`, and kills one that has not ended within
:data:`~ssdlab.targets.fio.FIO_STOP_GRACE_S`. The stand-in fio below hangs in its signal
handler as fio does, so a phase that signalled it first would be killed, its logs lost.
A real fio on a loop device is stopped the same way in ``test_signals.py``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import SignalledLock, stand_in_fio
from ssdlab.targets import fio as fio_target
from ssdlab.targets.base import JobSpec, PhaseResult

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml


#: A stand-in for fio. FAKE_FIO_MODE "file": it takes its stop file as fio's main loop does
#: (removes it, writes a verify state file as fio does, ends with a report); "deaf": it never
#: looks (fio still laying out a file); "stuck": neither, and its handler hangs too.
#: Its signal handler notes the signal in FAKE_FIO_LOG, then, but in "deaf" mode, hangs for
#: ever (fio's handler blocked on the allocator's lock).
FAKE_FIO = r'''#!{python}
import json, os, signal, sys, time
args = sys.argv[1:]
if "--version" in args:
    print("fio-3.33")
    sys.exit(0)
mode, log = os.environ["FAKE_FIO_MODE"], os.environ["FAKE_FIO_LOG"]
out = [a.split("=", 1)[1] for a in args if a.startswith("--output=")]
stop_file = [a.split("=", 1)[1] for a in args if a.startswith("--trigger-file=")]

def report(ios):
    r = {{"fio version": "fio-3.33", "jobs": [{{"jobname": "j", "error": 0, "job_runtime": 1000,
         "read": {{"total_ios": 0, "io_bytes": 0}}, "write": {{"total_ios": ios, "io_bytes": 4096 * ios}},
         "trim": {{"total_ios": 0, "io_bytes": 0}}}}]}}
    if out:
        open(out[0], "w").write(json.dumps(r))
    else:
        print(json.dumps(r))

def on_signal(signum, frame):
    with open(log, "a") as f:
        f.write(f"signal {{signum}}\n")
    if mode == "deaf":
        report(7)
        sys.exit(0)
    while True:
        time.sleep(1)

signal.signal(signal.SIGINT, on_signal)
signal.signal(signal.SIGTERM, on_signal)
if "ssdlab-probe" in " ".join(args) or not out:  # the io_uring probe
    report(1)
    sys.exit(0)
with open(log, "a") as f:
    f.write(f"started {{stop_file}}\n")
for _ in range(6000):  # 60 s at most
    if mode == "file" and stop_file and os.path.exists(stop_file[0]):
        os.unlink(stop_file[0])
        open("local-j-0-verify.state", "w").write("state")
        with open(log, "a") as f:
            f.write("took the stop file\n")
        report(42)
        sys.exit(0)
    time.sleep(0.01)
report(100)
'''


@pytest.fixture
def fake_fio(tmp_path, monkeypatch):
    """A file target on a stand-in fio (:data:`FAKE_FIO`); returns (target, log path) and
    sends SIGTERM to this process once the stand-in has started its job."""
    log = tmp_path / "fake.log"
    monkeypatch.setenv("FAKE_FIO_LOG", str(log))
    return stand_in_fio(tmp_path, FAKE_FIO), log


def _stop_when_started(log: Path) -> threading.Thread:
    """SIGTERM to this process once the stand-in fio has started its job (the phase's
    handler raises it in the main thread, inside its wait for fio)."""
    def send():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if log.exists() and "started" in log.read_text():
                os.kill(os.getpid(), signal.SIGTERM)
                return
            time.sleep(0.01)
    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


def _phase(target) -> PhaseResult:
    return target.run_phase(JobSpec("w", "randwrite", bs_bytes=4096, qd=1, duration_s=30.0))


def test_a_stopping_fio_takes_its_stop_file_and_gets_no_signal(fake_fio, monkeypatch):
    """The stand-in hangs on any signal: only the stop file ends it, with its report kept."""
    target, log = fake_fio
    monkeypatch.setenv("FAKE_FIO_MODE", "file")
    monkeypatch.setattr(fio_target, "FIO_STOP_GRACE_S", 5.0)  # a signalled stand-in is killed soon
    _stop_when_started(log)
    r = _phase(target)
    events = log.read_text().splitlines()
    stop_file = target.workdir / "001_w.stop"
    assert events == [f"started ['{stop_file}']", "took the stop file"], events
    assert not r.complete and r.error is None
    assert r.totals["ios"] == 42  # the report it wrote on taking the file
    assert not any("killed" in n for n in r.notes), r.notes
    assert sorted(p.name for p in target.workdir.glob("*")) == ["001_w.fio", "001_w.json", "001_w.stderr"]


def test_a_fio_that_does_not_take_its_stop_file_is_signalled(fake_fio, monkeypatch):
    target, log = fake_fio
    monkeypatch.setenv("FAKE_FIO_MODE", "deaf")
    _stop_when_started(log)
    t0 = time.monotonic()
    r = _phase(target)
    took_s = time.monotonic() - t0
    assert log.read_text().splitlines()[1:] == [f"signal {signal.SIGTERM}"]
    assert took_s >= fio_target.FIO_STOP_LOOK_S  # the signal came only after the look
    assert not r.complete and r.totals["ios"] == 7
    assert not (target.workdir / "001_w.stop").exists()


def test_a_fio_that_ends_on_nothing_is_killed_after_the_grace(fake_fio, monkeypatch, capsys):
    target, log = fake_fio
    monkeypatch.setenv("FAKE_FIO_MODE", "stuck")
    monkeypatch.setattr(fio_target, "FIO_STOP_LOOK_S", 0.3)
    monkeypatch.setattr(fio_target, "FIO_STOP_TELL_S", 0.5)
    monkeypatch.setattr(fio_target, "FIO_STOP_GRACE_S", 1.5)
    _stop_when_started(log)
    r = _phase(target)
    assert log.read_text().splitlines()[1:] == [f"signal {signal.SIGTERM}"]
    assert "fio did not stop within 2 s; killed it (its logs may be lost)" in r.notes
    assert not r.complete
    err = capsys.readouterr().err
    assert "ssdlab: waiting for fio (pid " in err and "to end its IO and write its logs, at most 2 s" in err
    assert not (target.workdir / "001_w.stop").exists()


@pytest.mark.timeout(30, method="signal")  # a phase that never sees fio end waits for ever
def test_a_stop_request_as_the_phase_looks_at_fio_loses_neither_fio_nor_its_report(fake_fio, monkeypatch):
    """The request lands as the phase's wait takes fio's Popen lock (``SignalledLock``): the
    phase still sees fio take its stop file and end, and keeps its report. A stock
    ``Popen.wait(timeout)`` would keep the lock and never see fio end."""
    target, log = fake_fio
    monkeypatch.setenv("FAKE_FIO_MODE", "file")
    monkeypatch.setattr(fio_target, "FIO_STOP_GRACE_S", 5.0)
    started = lambda: log.exists() and "started" in log.read_text()  # noqa: E731

    class Popen(subprocess.Popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self._waitpid_lock = SignalledLock(self._waitpid_lock, signal.SIGTERM, when=started)

    monkeypatch.setattr(subprocess, "Popen", Popen)
    r = _phase(target)
    assert log.read_text().splitlines()[1:] == ["took the stop file"]
    assert not r.complete and r.totals["ios"] == 42
    assert not any("killed" in n for n in r.notes), r.notes
