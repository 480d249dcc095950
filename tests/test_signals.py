"""A stop request at any moment of a run leaves nothing behind.

Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closing) all stop a run the same way: the
command exits 130 without a traceback, keeps what was measured, detaches its loop device
(whose backing file the kernel then frees) and leaves no temporary file and no fio process.
:func:`test_a_signal_at_any_moment_of_a_loop_run_leaves_nothing_behind` sends them at 20
seeded random moments of a ``loop:64MiB`` consistency run (which takes ~5 to 10 s), from
the imports of its first second to its random writes. The moments count from when the
process handles the three signals (``SigCgt`` in ``/proc/PID/status``): before that, some
tens of milliseconds after exec, the Python interpreter itself is starting, and that
handlers are in place before anything heavy is imported is tested on its own. Each run has a
scratch directory of its own as ``TMPDIR`` and ``SSDLAB_LOOP_DIR``, so the checks look only
at what that run made. Moments picked at random rarely fall in the ~50 ms of fio's io_uring
probe, so a test sends the signals just then.

Also here: :func:`ssdlab.stop.held`, the sections a stop request cannot cut short.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest

from ssdlab import stop

from conftest import PYTHON_DIR, REPO, SignalledLock, loops_backed_in, require_loops

pytestmark = pytest.mark.realtime  # see the marker in pyproject.toml

#: Seconds (from when the command handles the signals) over which the moments are spread.
SPREAD_S = 3.0
MOMENTS = 20
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _env(scratch: Path) -> dict:
    return {**os.environ, "PYTHONPATH": PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""),
            "TMPDIR": str(scratch), "SSDLAB_LOOP_DIR": str(scratch)}


def _catches(pid: int, signals=SIGNALS) -> bool:
    """Whether process ``pid`` has handlers for ``signals`` (its ``SigCgt`` mask)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return all(caught >> (s - 1) & 1 for s in signals)


def _cmdline(pid: int | str) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def _processes_of(scratch: Path) -> list[str]:
    """Processes whose environment has ``TMPDIR=scratch``: what a run there started (fio)."""
    mark = f"TMPDIR={scratch}".encode()
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if mark in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(f"{pid} {_cmdline(pid)}")
    return found


def _child_pids(pid: int) -> list[int]:
    """The pids of process ``pid``'s children (none once it is gone)."""
    pids = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            pids += [int(child) for child in children.read_text().split()]
    return pids


def _children(pid: int) -> str:
    """The command lines of process ``pid``'s children, one a line."""
    lines = []
    for child in _child_pids(pid):
        with contextlib.suppress(OSError):
            lines.append(_cmdline(child))
    return "\n".join(lines)


def _tree(pid: int, scratch: Path) -> str:
    """Each process of a run that does not end (``pid``, its children, and what it started in
    ``scratch``: fio runs in a session of its own), thread by thread: state and the kernel
    function it waits in."""
    pids = {pid} | {int(line.split()[0]) for line in _processes_of(scratch)}
    pids |= {child for p in list(pids) for child in _child_pids(p)}
    lines = []
    for p in sorted(pids):
        with contextlib.suppress(OSError):
            lines.append(f"{p} {_cmdline(p)}")
            for task in sorted(Path(f"/proc/{p}/task").iterdir(), key=lambda t: int(t.name)):
                with contextlib.suppress(OSError):
                    state = next(x for x in (task / "status").read_text().splitlines() if x.startswith("State:"))
                    lines.append(f"  thread {task.name}: {state.split(None, 1)[1]}, waits in {(task / 'wchan').read_text()}")
    return "\n".join(lines)


def _left_behind(scratch: Path, wait_s: float = 2.0) -> list[str]:
    """What a run in ``scratch`` left: files there, loop devices over files there, processes
    (waiting up to ``wait_s`` for the last to go)."""
    deadline = time.monotonic() + wait_s
    while True:
        left = ([f"file {p}" for p in sorted(scratch.rglob("*"))]
                + [f"loop device {dev} over {f}" for dev, f in loops_backed_in(scratch).items()]
                + [f"process {p}" for p in _processes_of(scratch)])
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def test_the_leak_check_sees_a_file_a_loop_device_and_a_process(tmp_path):
    require_loops(())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    assert _left_behind(scratch, wait_s=0) == []
    img = scratch / "img"
    img.write_bytes(bytes(1 << 20))
    dev = subprocess.run(["losetup", "--find", "--show", str(img)], capture_output=True, text=True,
                         check=True).stdout.strip()
    sleeper = subprocess.Popen(["sleep", "30"], env=_env(scratch))
    try:
        # Popen returns once the exec has closed its pipe, before the kernel has set up the new
        # image's command line and environment in /proc: wait for them.
        deadline = time.monotonic() + 5
        while not _cmdline(sleeper.pid).startswith("sleep") and time.monotonic() < deadline:
            time.sleep(0.01)
        left = _left_behind(scratch, wait_s=0)
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["losetup", "--detach", dev], capture_output=True)
    assert f"file {img}" in left
    assert f"loop device {dev} over {img}" in left
    assert any(x.startswith(f"process {sleeper.pid} sleep 30") for x in left), left


def _signal_run(scratch: Path, out: Path, sig: int, delay_s: float = 0.0,
                until=None) -> tuple[subprocess.CompletedProcess, float]:
    """Starts a ``loop:64MiB`` consistency run, sends ``sig`` ``delay_s`` after it handles the
    signals (and ``until(pid)`` is true, if given), and returns how it ended and when (s
    after exec) it began to handle them."""
    cmd = [sys.executable, "-m", "ssdlab", "consistency", "--target", "loop:64MiB", "--duration", "2",
           "--out", str(out), "--no-progress"]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(scratch))
    try:
        while not _catches(proc.pid) and proc.poll() is None and time.monotonic() - t0 < 10:
            time.sleep(0.001)
        handled_s = time.monotonic() - t0
        while until is not None and not until(proc.pid) and proc.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.001)
        time.sleep(delay_s)
        proc.send_signal(sig)
        try:
            stdout, stderr = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{cmd} did not exit within 60 s of {signal.Signals(sig).name} ({delay_s:.3f} s after "
                        f"its handlers); its processes:\n{_tree(proc.pid, scratch)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), handled_s


def test_a_signal_at_any_moment_of_a_loop_run_leaves_nothing_behind(tmp_path):
    """Exit status 130 for all three signals (0 only if the run had finished, complete)."""
    require_loops(("fio",))
    rng = random.Random(20)
    moments = [(k + rng.random()) * SPREAD_S / MOMENTS for k in range(MOMENTS)]  # one in each 0.15 s
    rng.shuffle(moments)
    failures = []
    for k, delay_s in enumerate(moments):
        sig = SIGNALS[k % len(SIGNALS)]
        scratch, out = tmp_path / f"scratch{k}", tmp_path / f"out{k}"
        scratch.mkdir()
        r, handled_s = _signal_run(scratch, out, sig, delay_s)
        what = f"{signal.Signals(sig).name} {delay_s:.3f} s after the handlers (installed {handled_s:.3f} s after exec)"
        summary = out / "summary.json"
        finished = r.returncode == 0 and summary.exists() and json.loads(summary.read_text()).get("complete") is True
        if r.returncode != 130 and not finished:
            failures.append(f"{what}: exit status {r.returncode}: {r.stderr[-500:]}")
        if "Traceback" in r.stderr:
            failures.append(f"{what}: traceback: {r.stderr[-2000:]}")
        if left := _left_behind(scratch):
            failures.append(f"{what}: left {left}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_signal_while_fio_probes_the_device_leaves_no_fio(tmp_path, sig):
    """The io_uring probe (fio reading 4 KiB, about a second after the start) is killed and
    reaped: a job process forked by a killed fio would wait for it forever."""
    require_loops(("fio",))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    # 5 ms after the probe starts: once fio has forked its job, if it would
    r, _ = _signal_run(scratch, tmp_path / "out", sig, delay_s=0.005,
                       until=lambda pid: "ssdlab-probe" in _children(pid))
    assert r.returncode == 130 and "Traceback" not in r.stderr, r.stderr
    assert _left_behind(scratch) == []


def _default_signals() -> None:
    """A ``preexec_fn``: SIGINT's default action and nothing blocked, as in a terminal (a
    process started in the background of a shell ignores SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])


def test_a_stop_inside_exec_of_source_text_still_exits_130(tmp_path):
    """A stop request that lands while exec() or eval() runs source text (dataclasses and
    namedtuples are built so, many of them while the command imports its modules) sets
    CPython's flag of an unhandled KeyboardInterrupt, even once the exception is handled;
    the interpreter would then end itself by SIGINT (status -2), not with the 130 the
    command returns. Both entry points: ``python -m`` and the console script's."""
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "stand_in.py").write_text(
        "import sys\n"
        "from ssdlab import cli, entry\n"
        "def interrupted(argv=None):\n"
        "    exec('raise KeyboardInterrupt')  # where a dataclass is being built\n"
        "cli.main = interrupted\n"
        "sys.exit(entry.main([]))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(probe), PYTHON_DIR, os.environ.get("PYTHONPATH", "")])}
    for argv in (["-m", "stand_in"], [str(probe / "stand_in.py")]):
        r = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60,
                           preexec_fn=_default_signals)
        assert r.returncode == 130 and "Traceback" not in r.stderr, (argv, r.returncode, r.stderr)


def test_handlers_are_in_place_before_the_heavy_imports(tmp_path):
    """``python -m ssdlab`` and the console script's entry point install the stop
    handlers before numpy (the first heavy import; a help imports none, a command that opens
    a target does) is imported."""
    probe = tmp_path / "probe"
    probe.mkdir()
    # the interpreter runs sitecustomize before the command: it notes SIGHUP's handler when
    # numpy is first imported
    (probe / "sitecustomize.py").write_text(
        "import os, signal, sys\n"
        "class _Probe:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not os.path.exists(os.environ['PROBE_OUT']):\n"
        "            h = signal.getsignal(signal.SIGHUP)\n"
        "            with open(os.environ['PROBE_OUT'], 'w') as f:\n"
        "                f.write(f\"{getattr(h, '__module__', '')}.{getattr(h, '__qualname__', h)}\")\n"
        "sys.meta_path.insert(0, _Probe())\n")
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["ssdlab"] == "ssdlab.entry:main"
    entry = "import sys; from ssdlab.entry import main; sys.exit(main())"  # what pip's script does
    for name, argv in (("python -m ssdlab", ["-m", "ssdlab"]), ("console script", ["-c", entry])):
        out = tmp_path / f"{name}.txt"
        env = {**os.environ, "PROBE_OUT": str(out),
               "PYTHONPATH": os.pathsep.join([str(probe), PYTHON_DIR, os.environ.get("PYTHONPATH", "")])}
        r = subprocess.run([sys.executable, *argv, "run", "--name=w", "--rw=randwrite", "--runtime=1", "--time_based",
                            "--dry-run"], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, r.stderr
        assert out.read_text() == "ssdlab.stop.handler", name


# ============================================================================ stop.held


@pytest.fixture
def handlers():
    """Restores the signal handlers, the unraisable-exception hook and stop's state after
    the test."""
    saved = {s: signal.getsignal(s) for s in SIGNALS}
    hook = sys.unraisablehook
    yield
    for s, h in saved.items():
        signal.signal(s, h)
    sys.unraisablehook = hook
    stop.clear()


def test_held_raises_a_ctrl_c_at_the_end_and_restores_python_s_handler(handlers):
    signal.signal(signal.SIGINT, signal.default_int_handler)
    reached = []
    with pytest.raises(KeyboardInterrupt):
        with stop.held():
            signal.raise_signal(signal.SIGINT)
            for _ in range(1000):  # many chances for Python to run a handler
                reached.append(len(reached))
    assert len(reached) == 1000
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not stop.requested()  # the library's own caller was not told to stop later
    with pytest.raises(KeyboardInterrupt):  # and Ctrl-C acts at once again
        signal.raise_signal(signal.SIGINT)
        for _ in range(1000):
            pass


def test_held_sections_nest_and_the_outermost_raises(handlers):
    stop.install()
    done = []
    with pytest.raises(KeyboardInterrupt):
        with stop.held():
            with stop.held():
                signal.raise_signal(signal.SIGHUP)
            done.append("inner")  # the inner section's end did not raise
            signal.raise_signal(signal.SIGTERM)
            done.append("outer")
    assert done == ["inner", "outer"] and stop.requested()


def test_a_stop_request_while_starting_is_raised_when_the_run_begins(handlers):
    stop.install(starting=True)
    signal.raise_signal(signal.SIGTERM)
    for _ in range(1000):  # held, not raised
        pass
    with pytest.raises(KeyboardInterrupt):
        stop.install()
    stop.install()  # nothing pending any more


def test_a_stop_request_a_finalizer_swallows_is_quiet_and_raised_again(handlers):
    reported = []
    sys.unraisablehook = reported.append
    stop.install()

    class Finalized:
        def __init__(self, exc=None):
            self.exc = exc

        def __del__(self):
            if self.exc is not None:
                raise self.exc
            signal.raise_signal(signal.SIGTERM)
            for _ in range(1000):  # the KeyboardInterrupt is raised here, and cannot leave __del__
                pass

    Finalized()
    assert reported == []  # nothing printed
    with pytest.raises(KeyboardInterrupt):
        stop.check()
    Finalized(ValueError("a real error"))
    assert [type(u.exc_value) for u in reported] == [ValueError]  # still reported


# ============================================================================ stop.wait, stop.run


def _signalled_child(argv: list[str], times: int = 1) -> subprocess.Popen:
    proc = subprocess.Popen(argv)
    proc._waitpid_lock = SignalledLock(proc._waitpid_lock, times=times)
    return proc


def test_a_stop_request_as_popen_wait_takes_its_lock_loses_the_child(handlers):
    """What :func:`ssdlab.stop.wait` is for: the stock ``Popen.wait(timeout)`` keeps its lock
    when the request lands as it takes it, and never sees the child end."""
    stop.install()
    proc = _signalled_child(["true"])
    try:
        with pytest.raises(KeyboardInterrupt):
            proc.wait(timeout=5)
        time.sleep(0.2)  # `true` has long ended
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5)
        assert proc._waitpid_lock.real.locked() and proc.returncode is None
    finally:
        proc._waitpid_lock.real.release()
        proc.wait()


def test_stop_wait_raises_a_stop_request_and_keeps_the_child(handlers):
    stop.install()
    proc = _signalled_child(["sh", "-c", "sleep 0.2; exit 7"], times=3)
    with pytest.raises(KeyboardInterrupt):
        stop.wait(proc, 5)
    stop.clear()
    for _ in range(2):  # the two requests left land at the next looks, raised each time
        with pytest.raises(KeyboardInterrupt):
            stop.wait(proc, 5)
    assert stop.wait(proc, 5) == 7
    assert not proc._waitpid_lock.real.locked()
    sleeper = subprocess.Popen(["sleep", "0.5"])
    with pytest.raises(subprocess.TimeoutExpired):  # and its timeout holds
        stop.wait(sleeper, 0.05)
    assert stop.wait(sleeper) == 0  # reaped, not left behind


def _children_of_this_process() -> list[str]:
    return [_cmdline(pid) for pid in _child_pids(os.getpid()) if Path(f"/proc/{pid}").exists()]


def test_stop_run_gives_the_output_and_leaves_no_child_on_timeout_or_stop(handlers, tmp_path):
    r = stop.run(["sh", "-c", "echo out; printf 'err \\377' >&2; exit 3"], 10)
    assert (r.returncode, r.stdout, r.stderr) == (3, "out\n", "err \ufffd")
    marker = str(tmp_path / "sleeping")  # names this test's children among the others
    with pytest.raises(subprocess.TimeoutExpired):
        stop.run(["sh", "-c", f"sleep 30 # {marker}"], 0.2)
    assert not [c for c in _children_of_this_process() if marker in c]
    stop.install()
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGTERM))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        stop.run(["sh", "-c", f"sleep 30 # {marker}"], 60)
    assert time.monotonic() - t0 < 10
    assert not [c for c in _children_of_this_process() if marker in c]
