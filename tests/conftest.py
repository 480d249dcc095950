"""Shared fixtures. Tests use small simulated drives (a few GiB) so the suite stays fast."""
from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: Every plot a test writes (in this process or in a command it runs) must show its data inside
#: its labelled range: :func:`ssdlab.plots.save_figure` refuses it otherwise.
os.environ["SSDLAB_CHECK_PLOTS"] = "1"

REPO = Path(__file__).resolve().parent.parent
PYTHON_DIR = str(REPO / "python")
SHARED = REPO.parent / "shared"

#: A scaled-down default drive: same dies, planes, pages and timings, 64 blocks per plane
#: (8 GiB of NAND), 7 GiB user capacity (12.5 % spare).
SMALL_DRIVE = ["blocks_per_plane=64", "user_capacity_bytes=7GiB"]


# ============================================================================ realtime tests

#: What makes a command need the machine to itself: a run of fio, or a run on a target whose
#: I/O takes wall-clock time (a loop device, the emulated drive, a file, a device).
REALTIME_TARGETS = ("loop:", "emu:", "file:", "/dev/")
#: fio options with which fio only reads and prints, and runs no job.
FIO_NO_IO = {"--parse-only", "--showcmd", "--version", "--cmdhelp", "--enghelp"}


def realtime_reason(args) -> str | None:
    """Why command ``args`` (a Popen's: a sequence, or one string, a shell's command line)
    needs the machine to itself (its figures follow the wall clock, which another test on the
    other core would bend), or None."""
    if isinstance(args, (str, bytes, os.PathLike)):
        args = shlex.split(os.fsdecode(args))
    argv = [os.fsdecode(a) for a in args]
    program = os.path.basename(argv[0]) if argv else ""
    if program == "fio" and not any(arg.split("=", 1)[0] in FIO_NO_IO for arg in argv[1:]):
        return f"it runs fio ({' '.join(argv)})"
    for arg in argv[1:]:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if value.startswith(REALTIME_TARGETS):
            return f"it runs on a real-time target ({value})"
    return None


#: The node id of the running test when it runs beside others (pytest-xdist) without the
#: ``realtime`` mark, else None.
_UNMARKED_IN_PARALLEL: list[str | None] = [None]


def require_alone(what: str) -> None:
    """Fails a test that runs beside others (pytest-xdist) but does ``what``, which needs the
    machine to itself: it must carry ``@pytest.mark.realtime`` (``make test-python`` then runs
    it alone)."""
    if _UNMARKED_IN_PARALLEL[0] is not None:
        pytest.fail(f"{_UNMARKED_IN_PARALLEL[0]} runs beside other tests, but {what}: mark it "
                    f"@pytest.mark.realtime, so that it runs alone")


@pytest.fixture(autouse=True)
def _realtime_alone(request, monkeypatch):
    """In a pytest-xdist worker, a test without the ``realtime`` mark that starts a real-time
    command (:func:`realtime_reason`) fails (:func:`require_alone`)."""
    parallel = "PYTEST_XDIST_WORKER" in os.environ and request.node.get_closest_marker("realtime") is None
    _UNMARKED_IN_PARALLEL[0] = request.node.nodeid if parallel else None
    if parallel:
        start = subprocess.Popen.__init__

        def checked_start(self, args, *more, **kwargs):
            if (why := realtime_reason(args)) is not None:
                require_alone(why)
            start(self, args, *more, **kwargs)

        monkeypatch.setattr(subprocess.Popen, "__init__", checked_start)
    yield
    _UNMARKED_IN_PARALLEL[0] = None


def set_args(overrides=SMALL_DRIVE) -> list[str]:
    out: list[str] = []
    for kv in overrides:
        out += ["--set", kv]
    return out


def fill_then_random_writes(target, duration_s: float, span_pct: float = 100.0, interval_s: float = 1.0):
    """The consistency test's phases on ``target`` without the command line: a sequential
    fill of ``span_pct`` % of the drive (128 KiB, QD32), then 4 KiB random writes at QD32
    over that span for ``duration_s`` with the series at ``interval_s``. Returns (span in
    bytes, the random-write phase's result)."""
    from ssdlab.targets.base import JobSpec

    span = int(target.capacity_bytes * span_pct / 100) // 131072 * 131072
    target.run_phase(JobSpec("fill", "write", bs_bytes=131072, qd=32, span_bytes=span))
    return span, target.run_phase(JobSpec("rw", "randwrite", bs_bytes=4096, qd=32, span_bytes=span,
                                          duration_s=duration_s, interval_s=interval_s))


def run_cli(*args: str, check: bool = True, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Runs ``python -m ssdlab ARGS`` in a subprocess (the real command line)."""
    proc = subprocess.run([sys.executable, "-m", "ssdlab", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    if check and proc.returncode != 0:
        raise AssertionError(f"ssdlab {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def interrupt_cli(*args: str, ready=None, ready_timeout_s: float = 60, settle_s: float = 1.0,
                  exit_timeout_s: float = 60, **popen) -> tuple[str, str]:
    """Starts ``python -m ssdlab ARGS``, waits until ``ready()`` is true (at most
    ``ready_timeout_s``; no wait without it), ``settle_s`` more, then sends SIGINT (Ctrl-C).
    Asserts the command exits 130 (interrupted, results kept) and returns (stdout, stderr)."""
    require_alone("it interrupts a command at a moment it times")

    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)
    try:
        deadline = time.time() + ready_timeout_s
        while ready is not None and not ready() and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(settle_s)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=exit_timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    return stdout, stderr


def journalled(folder: Path, phase: str, rows: int = 1) -> bool:
    """Whether a running test's series journal in ``folder`` holds ``rows`` intervals of
    ``phase`` (lines after its header): a readiness test for :func:`interrupt_cli` that waits
    for measurements rather than for a time a busy machine may not keep."""
    return any(len(f.read_bytes().splitlines()) > rows for f in folder.glob(f"journal/*-{phase}.jsonl"))


@pytest.fixture
def small_drive() -> list[str]:
    return list(SMALL_DRIVE)


def loop_problem(tools: tuple[str, ...] = ("fio",)) -> str | None:
    """Why real loop-device tests cannot run here (None if they can): ``tools`` missing, or
    no loop device could be made (needs root and /dev/loop-control)."""
    from ssdlab.targets.loop import LoopDevice, parse_size

    for tool in tools:
        if not shutil.which(tool):
            return f"{tool} is not installed (apt-get install fio util-linux e2fsprogs mount)"
    try:
        with LoopDevice(parse_size("1MiB")):
            pass
    except Exception as e:  # noqa: BLE001 - report whatever went wrong
        return str(e)
    return None


def require_loops(tools: tuple[str, ...] = ("fio",)) -> None:
    """Skips with SSDLAB_NO_LOOP=1; otherwise FAILS when loop devices cannot be used, so a CI
    machine that silently lost them is noticed."""
    if os.environ.get("SSDLAB_NO_LOOP") == "1":
        pytest.skip("SSDLAB_NO_LOOP=1: loop-device tests skipped")
    require_alone("it needs loop devices")
    problem = loop_problem(tools)
    if problem:
        pytest.fail(f"cannot run on loop devices: {problem}. These tests need root, /dev/loop-control and "
                    f"{', '.join(tools)}; set SSDLAB_NO_LOOP=1 to skip them on a machine without loop devices.")


@contextlib.contextmanager
def mounted(args: list[str], where: Path):
    """``mount ARGS WHERE`` (WHERE made if missing) for the block; unmounted after it
    (lazily: a test that failed may still hold files open there). Fails if it cannot mount."""
    where.mkdir(exist_ok=True)
    r = subprocess.run(["mount", *args, str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"cannot mount {' '.join(args)} at {where}: {r.stderr.strip()} (these tests need root)")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def loops_backed_in(directory) -> dict[str, str]:
    """The loop devices attached over a file in ``directory`` (/dev/loopN -> the backing
    file's path; ssdlab unlinks its backing files, which still count): what a test that made
    its loop devices there left behind, whatever other programs attach or detach meanwhile."""
    from ssdlab.targets.loop import _loop_backing_files

    inside = os.path.realpath(directory) + os.sep
    return {dev: f for dev, f in _loop_backing_files().items() if f.startswith(inside)}


def loops_backed_by(path) -> list[str]:
    """The loop devices attached over file ``path`` (unlinked or not)."""
    from ssdlab.targets.loop import _loop_backing_files

    return [dev for dev, f in _loop_backing_files().items() if f == os.fspath(path)]


@pytest.fixture(scope="module")
def loops_ok():
    """Loop devices and fio are usable (see :func:`require_loops`)."""
    require_loops()


@pytest.fixture
def need_fio():
    if not shutil.which("fio"):
        pytest.fail("fio is not installed (apt-get install fio)")


def interrupt_fio_child(tmp_path, child_source: str, sig: int, start_timeout_s: float = 30,
                        stop_timeout_s: float = 30) -> tuple[dict, str, str, float]:
    """Runs ``child_source`` (a script that starts fio on a loop target in ``argv[1]``, prints
    ``RUNNING DEV BACKING`` once fio runs and a JSON line at the end), sends ``sig`` 2.5 s
    later and returns (that JSON, DEV, BACKING, seconds from the signal to the child's exit).
    The child must exit 0: it caught the signal and kept what was measured."""
    require_alone("it stops fio at a moment it times")
    script = tmp_path / "child.py"
    script.write_text(child_source)
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR + os.pathsep + os.environ.get("PYTHONPATH", ""))
    p = subprocess.Popen([sys.executable, str(script), str(tmp_path / "wd")], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    try:
        ready, _, _ = select.select([p.stdout], [], [], start_timeout_s)
        assert ready, f"child did not start fio within {start_timeout_s} s"
        line = p.stdout.readline().split()
        assert line and line[0] == "RUNNING", (line, p.stderr.read() if p.poll() is not None else "")
        dev, backing = line[1], line[2]
        time.sleep(2.5)
        t0 = time.monotonic()
        p.send_signal(sig)
        out, err = p.communicate(timeout=stop_timeout_s)
        stop_s = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), dev, backing, stop_s


class SignalledLock:
    """A Popen's lock through which a stop request (``signum``) lands the moment the lock is
    taken, as a signal does when it comes while ``acquire`` runs: Python runs the handler as
    the call returns, one bytecode before ``Popen`` enters the ``try`` that releases the lock.
    It does so the first ``times`` times the lock is taken while ``when()`` is true."""

    def __init__(self, real, signum: int = signal.SIGINT, times: int = 1, when=lambda: True):
        self.real, self.signum, self.times, self.when = real, signum, times, when

    def acquire(self, blocking=True, timeout=-1):
        got = self.real.acquire(blocking, timeout)
        if got and self.times > 0 and self.when():
            self.times -= 1
            signal.raise_signal(self.signum)
        return got

    def release(self):
        self.real.release()

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()


def stand_in_fio(tmp_path, script: str, data_bytes: int = 8 << 20):
    """A ``file:`` target (a ``data_bytes`` file in ``tmp_path``) whose fio is ``script``, a
    Python stand-in (formatted with ``python``: this interpreter's path), at ``tmp_path/fio``;
    its work directory is ``tmp_path/wd``."""
    from ssdlab.targets import fio as fio_target
    fake = tmp_path / "fio"
    fake.write_text(script.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    data = tmp_path / "t.img"
    with open(data, "wb") as f:
        f.truncate(data_bytes)
    fio_target._ENGINE_CACHE.pop(str(fake), None)
    return fio_target.FioTarget(f"file:{data}", tmp_path / "wd", fio=str(fake))


def signal_fio_of_phase(args: list[str], jobfile: str, action, wait_s: float,
                        start_timeout_s: float = 120, exit_timeout_s: float = 120) -> tuple[int, str, str]:
    """Runs ``python -m ssdlab ARGS``; once the fio running job file ``jobfile`` (e.g.
    "002_randwrite.fio") has run ``wait_s`` seconds, calls ``action(pids)`` with the pids of
    its processes (fio's parent and job processes), then waits for the command to end.
    Returns (exit status, stdout, stderr)."""
    require_loops(("fio", "pgrep"))

    def pids() -> list[int]:
        out = subprocess.run(["pgrep", "-f", jobfile], capture_output=True, text=True).stdout
        return [int(p) for p in out.split() if int(p) != os.getpid()]

    proc = subprocess.Popen([sys.executable, "-m", "ssdlab", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + start_timeout_s
        while not pids() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert pids(), f"fio never ran {jobfile}"
        time.sleep(wait_s)
        action(pids())  # fio's job processes exist by now
        out, err = proc.communicate(timeout=exit_timeout_s)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def hist_row(t_ms: int, ios: int, latency_ns: float = 50_000, ddir: int = 1, bs_bytes: int = 4096) -> str:
    """One fio ``write_hist_log`` row at ``log_hist_coarseness=1`` (928 bins): ``ios`` IOs in
    the bin of ``latency_ns``."""
    from ssdlab.fio_logs import hist_bins_ns

    import numpy as np

    lower, _ = hist_bins_ns(928)
    bins = [0] * 928
    bins[int(np.searchsorted(lower, latency_ns, side="right") - 1)] = ios
    return f"{t_ms}, {ddir}, {bs_bytes}, " + ", ".join(map(str, bins))
