"""Real targets driven by fio: block devices (``/dev/NAME``), regular files (``file:PATH``)
and throwaway loop devices (``loop:SIZE``).

:class:`FioTarget` turns each :class:`~ssdlab.targets.base.JobSpec` into a fio job file,
runs ``fio --output-format=json`` on it and returns a
:class:`~ssdlab.targets.base.PhaseResult` in the same names and units as the simulator:

- ``series``: one row per ``job.interval_s`` (a regular grid, see :mod:`ssdlab.fio_logs`)
  from fio's completion-latency histogram log (``write_hist_log`` with ``log_hist_msec`` =
  the interval): ``t_s`` (interval start, s from phase start), ``iops`` (IO/s), ``mbps``
  (10^6 bytes/s = iops * bs), ``dt_s`` (interval length, s: the last one may be shorter) and
  the per-interval latency percentiles of the phase's direction (``write_lat_p99_us``...).
  An interval in which the drive completed nothing is 0 IOPS. fio never logs the final
  window of a job; ssdlab adds it from fio's own IO count and latency histogram in its JSON
  summary (``--output-format=json+``), and says so in ``notes``.
- ``totals``: ``host_write_bytes``, ``host_read_bytes``, ``host_trim_bytes`` (bytes),
  ``ios``, ``duration_s`` (s), ``fio_iops`` (fio's whole-job IO/s).
- ``latency_us``: completion-latency percentiles ``p50``, ``p99``, ``p99.9`` and ``max`` (us).

Every job file is kept in the target's ``workdir`` next to its logs
(``NNN_phase.fio``, ``NNN_phase_clat_hist.1.log``, ``NNN_phase.json``, ``NNN_phase.stderr``), so a
user can rerun any phase by hand: ``cd WORKDIR && fio --output-format=json NNN_phase.fio``.
Phases run back to back (:meth:`FioTarget.run_phases`: an LBA sweep's zones) share one job
file, ``NNN_first..last.fio``, so that the drive has no idle time between them: each sweep
pass is one fio job in strided zone mode whose per-IO completion log
(``NNN_first_clat.K.log``) gives each zone's figures.

Jobs use ``direct=1``, ``ioengine=io_uring`` (ssdlab probes io_uring once with a 4 KiB read
and falls back to ``libaio``), incompressible data (``refill_buffers=1``), non-repeating
offsets (``randrepeat=0``, ``norandommap=1``, ``random_generator=tausworthe64``).
TRIM is ``rw=trim`` on block devices and fio's ``falloc`` engine (hole punching) on files.
``idle`` phases just wait. Ctrl-C or SIGTERM during a phase stops fio cleanly (fio writes its
logs on exit) and the phase comes back with what was measured and ``complete=False``; fio is
asked by its stop file (``--trigger-file``), not a signal, which can hang it
(:meth:`FioTarget._stop_fio`).
fio keeps its logs in memory until it exits, so while a phase runs fio also writes a status
report every second (``--status-interval``, into its JSON output file); each new report
becomes a row of the results folder's journal (:mod:`ssdlab.journal`), and a run killed
outright (or a power loss) keeps those rows. When fio has exited the journal gets the
phase's final series and the JSON file only fio's final report. When
fio fails (exits non-zero, is killed, reports an IO error or writes no log) the phase comes
back the same way with ``error`` set: one message naming the target, phase, job file and
fio's own error line.

Trace replay (:meth:`FioTarget.replay`, the ``003_*`` trace test) writes the prepared commands
as fio replay files (``NNN_name.blktrace``: blktrace binary, because fio 3.33, Debian 12's, cannot
replay TRIMs from a text iolog) and runs ``read_iolog=`` with ``replay_no_stall=1`` at ``iodepth=QD``;
per-command completion times come from fio's per-IO completion log (1 ms resolution). Details
and limits (flushes, very long traces) in :mod:`ssdlab.targets.fio_replay`.

Writing to a device destroys its data: see :mod:`ssdlab.targets.safety` for the gate every
device passes first. ``dry_run=True`` writes and returns the job files and runs nothing.
"""
from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import glob
import json
import math
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import numpy as np

from .. import fio_logs, results, stop
from ..errors import UserError
from ..journal import FIO_STATUS_S
from . import fdpstats
from . import fio_replay as _rp
from .base import (DIRECTIONS, DRIVE_COUNTERS, FIO_JOBS, LATENCY_STATS, CommandChunk, JobSpec, LiveFigures,
                   PhaseResult, PhasesProgress, Progress, ReplayJob, ReplayResult, TargetDefaults, WorkloadStep,
                   latency_column, pattern_direction, refuse_sets, run_phases_one_by_one, workload_steps)
from .counters import read_counters, unavailable
from .loop import LoopDevice, LoopError, format_size, parse_size
from .safety import (UnsafeTargetError, check_device, check_file, device_reasons, mark_own_file, resolve_device,
                     stack_reasons)

__all__ = [
    "FioError",
    "FioTarget",
    "LoopTarget",
    "open_target",
    "parse_fio_json",
    "probe_ioengine",
    "PURGE_METHODS",
]

#: <linux/fs.h> BLKDISCARD = _IO(0x12, 119); its argument is two u64: start and length [bytes].
_BLKDISCARD = 0x1277
#: Bytes discarded per BLKDISCARD call of a purge.
_DISCARD_STEP_BYTES = 1 << 30
#: Purge methods a real target understands (``--purge``). Files use ``truncate`` for all but ``none``.
PURGE_METHODS = ("blkdiscard", "nvme-format", "ata-secure-erase", "none")

_ENGINES = ("io_uring", "libaio")
_ENGINE_CACHE: dict[str, str] = {}  # fio binary -> engine that works on this machine
_VERSION_CACHE: dict[str, str] = {}


class FioError(UserError):
    """fio (or a purge tool) failed; the message names the target, the job and what to do."""


class _Terminate(BaseException):
    """Raised in the main thread by our SIGTERM and SIGHUP handler while a phase runs;
    ``str()`` is the signal's name."""

    stop_request = True  # dropped quietly where it cannot be raised (ssdlab.stop)

    def __str__(self) -> str:
        return signal.Signals(self.args[0]).name if self.args else "SIGTERM"


@contextlib.contextmanager
def _sigterm_raises():
    """While inside, SIGTERM and SIGHUP raise :class:`_Terminate` in the main thread (so a
    phase can stop fio cleanly and keep its logs, as on Ctrl-C); the previous handlers are
    restored on exit. Yields the list of the signals that came, so that one whose
    _Terminate was swallowed (raised inside a finalizer) can be raised again. Outside the
    main thread (signals cannot be handled there) it does nothing."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return

    def _on_term(signum, frame):
        came.append(signum)
        if not stop.hold(signum):
            raise _Terminate(signum)

    _on_term.holds = True
    old = {}
    try:
        with stop.held():  # both handlers change, or neither
            old = {signum: signal.signal(signum, _on_term) for signum in (signal.SIGTERM, signal.SIGHUP)}
        yield came
    finally:
        with stop.held():
            for signum, handler in old.items():
                signal.signal(signum, handler if handler is not None else signal.SIG_DFL)


def _raise_again(terminated: list[int]) -> None:
    """Raises again a stop request whose exception a finalizer or a weakref callback
    swallowed: Ctrl-C (:func:`ssdlab.stop.check`), or a signal in ``terminated`` (what
    :func:`_sigterm_raises` yields)."""
    stop.check()
    if terminated:
        raise _Terminate(terminated[0])


# ============================================================================ log parsing


def parse_fio_json(text: str) -> dict:
    """Parse fio's ``--output-format=json`` output, skipping what fio prints into the same
    file before it (``fio: terminating on signal 2``, ``fio: io_u error ...`` lines, the last
    of which may run into the JSON's opening brace). With ``--status-interval`` the file
    holds one report per interval and the final one last: the last whole report is taken."""
    starts = [m.start() for m in re.finditer(r'\{\s*"fio version"', text)]
    if not starts:
        start = 0 if text.startswith("{") else text.find("\n{") + 1 or -1
        if start < 0:
            raise ValueError("no JSON object in fio output")
        starts = [start]
    decoder = json.JSONDecoder()
    error: ValueError | None = None
    for start in reversed(starts):
        try:
            obj, _ = decoder.raw_decode(text[start:])
            return obj
        except ValueError as e:  # the last report cut short (fio killed while writing it)
            error = error or e
    raise error


#: Seconds fio has to take its stop file (``--trigger-file``) before it is sent a signal.
FIO_STOP_LOOK_S = 1.0
#: Seconds a stopping fio has to end its in-flight IO and write its logs before it is killed.
FIO_STOP_GRACE_S = 60.0
#: Seconds after which the user is told that fio is still stopping.
FIO_STOP_TELL_S = 3.0
#: Seconds ``nvme id-ns`` has to answer.
NVME_QUERY_TIMEOUT_S = 60.0


#: Words of a fio message line saying that fio failed or refused to run.
_FIO_ERROR_WORDS = re.compile(r"abort|appears mounted|error|fail|cannot|can't|could not|unable|invalid|not supported|"
                              r"does not support|doesn't support|no space|enospc|stopping|giving up|exiting|stuck|"
                              r"hung|disappeared|not found|too (?:large|small|big)", re.I)
#: fio lines with such words after which fio goes on (warnings), and fio's own word on a signal.
_FIO_WARNINGS = re.compile(r"terminating on signal|fadvise hint failed|may overwrite blocks|running job without|"
                           r"pre-read disabled|cache flush bypassed", re.I)


def fio_error_lines(text: str) -> list[str]:
    """The lines of fio's messages (``text``: what it printed to stderr, or before the JSON in
    its output file) saying that it failed or refused to run: a line saying "Aborting" or
    that the device "appears mounted" (fio then exits 0 without any IO), and each ``fio: ``
    line with an error's words that is not one of fio's warnings."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or _FIO_WARNINGS.search(line):
            continue
        if "Aborting" in line or "appears mounted" in line or (line.startswith("fio: ") and _FIO_ERROR_WORDS.search(line)):
            out.append(line)
    return list(dict.fromkeys(out))  # fio repeats a refusal once per file or job


def _write_job_file(path: Path, text: str) -> None:
    """Writes a fio job file into the working folder; :class:`~ssdlab.results.ResultsWriteError`
    naming it if that fails (a full disk...)."""
    try:
        path.write_text(text)
    except OSError as e:
        raise results.write_failed(path, e, len(text.encode())) from e


def _fio_error_text(errno_: int) -> str:
    """fio's error code (an errno) as words."""
    return f"fio error {errno_} ({os.strerror(errno_) if 0 < errno_ < 200 else 'see its message'})"


def _refusal(messages: str) -> str | None:
    """Why a fio run that exited 0 failed all the same, from its ``messages``, or None."""
    lines = fio_error_lines(messages)
    if not lines:
        return None
    return "it refused to run" if any("Aborting" in ln or "appears mounted" in ln for ln in lines) \
        else "it reported an error"


def _fio_messages(err_path: Path, out_json: Path | None = None) -> str:
    """What fio printed: its stderr file, then what precedes its first JSON report in its
    output file (fio writes some messages there). Empty if neither can be read."""
    parts = []
    for path, head_only in ((err_path, False), (out_json, True)):
        if path is None:
            continue
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        if head_only:
            m = re.search(r'\{\s*"fio version"', text)
            text = text[:m.start()] if m else text
        parts.append(text.strip())
    return "\n".join(p for p in parts if p)


def _status_reports(text: str) -> tuple[list[dict], int]:
    """The whole fio status reports (``--status-interval``) in ``text`` and how many
    characters they and what precedes them take (the rest may be a report still being
    written)."""
    decoder = json.JSONDecoder()
    out, used = [], 0
    for m in re.finditer(r'\{\s*"fio version"', text):
        if m.start() < used:
            continue
        try:
            obj, end = decoder.raw_decode(text, m.start())
        except ValueError:
            break
        out.append(obj)
        used = end
    return out, used


@dataclass
class _FioRun:
    """One fio run of a job file (:meth:`FioTarget._run_job_file`): how it ended
    (``interrupted``: the signal's name or None; ``rc``), its notes, its parsed JSON report
    (None if missing: ``json_error``), totals and latency from it, and ``failure``: why the
    run failed (None if it did not)."""
    interrupted: str | None
    rc: int | None
    notes: list
    out_json: Path
    err_path: Path
    journal: "_StatusJournal"
    data: dict | None = None
    json_error: Exception | None = None
    failure: str | None = None
    totals: dict = field(default_factory=dict)
    latency_us: dict = field(default_factory=dict)

    def finish(self, series: dict, complete: bool) -> None:
        """The phase's final series to its journal; fio's JSON file keeps its final report only."""
        self.journal.finish(series, complete)
        _keep_final_report(self.out_json)


class _StatusJournal:
    """Turns fio's status reports (cumulative counts from the job's start, every
    ``--status-interval``) into journal rows while fio runs: per report, the IOs, bytes and
    completion-latency histogram (``clat_ns.bins`` of ``json+``) since the previous one, as
    ``t_s`` (start of the span, s from the job's start), ``dt_s``, ``iops``, ``mbps`` and
    the latency columns of the series (``{dir}_iops`` / ``{dir}_mbps`` too for a workload
    group). Approximate: the spans follow fio's reports, not the log's intervals; when fio
    has exited the journal gets the phase's final series instead."""

    def __init__(self, journal, out_json: Path, directions: Sequence[str], per_direction: bool) -> None:
        self.journal = journal
        self.out_json = out_json
        self.directions = list(directions)
        self.per_direction = per_direction
        self.offset = 0
        self.prev_s = 0.0
        self.prev: dict[str, tuple[float, float, dict[float, float]]] = {}

    def poll(self) -> None:
        if self.journal is None:
            return
        try:
            with open(self.out_json, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return
        text = chunk.decode("utf-8", errors="replace")
        reports, used = _status_reports(text)
        if not reports:
            return
        self.offset += len(text[:used].encode("utf-8", errors="replace"))
        rows = [r for r in (self._row(rep) for rep in reports) if r is not None]
        if rows:
            self.journal.append({c: np.array([r[c] for r in rows], dtype=np.float64) for c in rows[0]})

    def _row(self, report: dict) -> dict | None:
        jobs = report.get("jobs") or []
        try:
            end_s = max(float(j.get("job_runtime") or 0) for j in jobs) / 1000.0 if jobs else 0.0
        except (TypeError, ValueError):
            return None
        dt = end_s - self.prev_s
        if dt <= 0:
            return None
        row = {"t_s": self.prev_s, "dt_s": dt, "iops": 0.0, "mbps": 0.0}
        for d in self.directions:
            ios = sum(float((j.get(d) or {}).get("total_ios") or 0) for j in jobs)
            nbytes = sum(float((j.get(d) or {}).get("io_bytes") or 0) for j in jobs)
            bins: dict[float, float] = {}
            for j in jobs:
                for k, v in (((j.get(d) or {}).get("clat_ns") or {}).get("bins") or {}).items():
                    bins[float(k)] = bins.get(float(k), 0.0) + float(v)
            pios, pbytes, pbins = self.prev.get(d, (0.0, 0.0, {}))
            self.prev[d] = (ios, nbytes, bins)
            dios, dbytes = max(ios - pios, 0.0), max(nbytes - pbytes, 0.0)
            row["iops"] += dios / dt
            row["mbps"] += dbytes / dt / 1e6
            if self.per_direction:
                row[f"{d}_iops"] = dios / dt
                row[f"{d}_mbps"] = dbytes / dt / 1e6
            delta = {k: v - pbins.get(k, 0.0) for k, v in bins.items() if v - pbins.get(k, 0.0) > 0}
            stats = fio_logs.bins_percentiles_us(delta) if delta else {}
            for label, _ in LATENCY_STATS:
                row[latency_column(d, label)] = stats.get(label, math.nan)
        self.prev_s = end_s
        return row

    def finish(self, series: dict, complete: bool) -> None:
        """fio has exited: the phase's final series replaces the status rows."""
        if self.journal is None:
            return
        self.poll()
        if len(series.get("t_s", ())):
            self.journal.replace(series, source="fio logs")
        self.journal.close(complete)


def _keep_final_report(out_json: Path) -> None:
    """Rewrites fio's output file with its final report only (the status reports before it
    are in the journal, and would make the file grow by a report per second)."""
    try:
        text = out_json.read_text()
    except OSError:
        return
    starts = [m.start() for m in re.finditer(r'\{\s*"fio version"', text)]
    if len(starts) < 2:
        return
    try:
        json.JSONDecoder().raw_decode(text, starts[-1])
    except ValueError:
        return  # the final report is cut short: keep everything for a reader to see
    head = text[:starts[0]]  # fio's messages before its first report
    tmp = out_json.with_name(f".{out_json.name}.tmp")
    try:
        tmp.write_text(head + text[starts[-1]:])
        os.replace(tmp, out_json)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _summarize(data: dict) -> tuple[dict, dict, int]:
    """(totals, latency_us, fio error code) from fio JSON."""
    jobs = data.get("jobs") or []
    tot = {"host_write_bytes": 0, "host_read_bytes": 0, "host_trim_bytes": 0, "ios": 0, "duration_s": 0.0, "fio_iops": 0.0}
    best, best_ios, err = None, -1, 0
    tot["duration_s"] = fio_logs.run_time_s(data)
    for j in jobs:
        err = err or int(j.get("error", 0) or 0)
        for ddir, key in (("read", "host_read_bytes"), ("write", "host_write_bytes"), ("trim", "host_trim_bytes")):
            d = j.get(ddir) or {}
            tot[key] += int(d.get("io_bytes", 0))
            n = int(d.get("total_ios", 0))
            tot["ios"] += n
            tot["fio_iops"] += float(d.get("iops", 0.0))
            if n > best_ios:
                best, best_ios = d, n
    lat: dict[str, float] = {}
    if best is not None and best_ios > 0:
        clat = best.get("clat_ns") or {}
        pct = clat.get("percentile") or {}
        for label, key in (("p50", 50.0), ("p99", 99.0), ("p99.9", 99.9)):
            for k, v in pct.items():
                if abs(float(k) - key) < 1e-6:
                    lat[label] = float(v) / 1000.0
        if "max" in clat:
            lat["max"] = float(clat["max"]) / 1000.0
    return tot, lat, err


# ============================================================================ fio plumbing


def _fio_escape(path: str) -> str:
    """fio splits ``filename=`` on ':'; escape it."""
    return path.replace(":", "\\:")


def _die_with_us(sig: int = signal.SIGTERM):
    """A ``preexec_fn`` by which the child gets ``sig`` when this process ends, however it
    ends (PR_SET_PDEATHSIG), and exits at once if this process is already gone."""
    parent = os.getpid()
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        prctl = None

    def preexec() -> None:  # runs in the child before exec
        if prctl is not None:
            prctl(1, sig)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def _run_briefly(cmd: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """Runs a short fio command (``--version``, a probe) and returns its output
    (:func:`ssdlab.stop.run`). fio is killed with this process (SIGKILL: there is nothing to
    keep), and killed and reaped here when a stop request or the timeout interrupts it."""
    return stop.run(cmd, timeout_s, start_new_session=True, preexec_fn=_die_with_us(signal.SIGKILL))


def _remove_stop_leftovers(stop_file: Path, workdir: Path, since_s: float) -> None:
    """Removes fio's stop file if fio did not take it, and the verify state files
    (``local-JOB-N-verify.state``) fio writes when it takes one, from ``workdir``, written
    since ``since_s`` (epoch s; a second earlier, for coarse file timestamps)."""
    stop_file.unlink(missing_ok=True)
    for state in workdir.glob("local-*-verify.state"):
        with contextlib.suppress(OSError):
            if state.stat().st_mtime >= since_s - 1.0:
                state.unlink()


def _kill_fio(proc: subprocess.Popen) -> None:
    """SIGKILLs fio and its job processes: they run in sessions of their own, and a job
    process whose fio was killed would wait for it forever."""
    jobs = []
    for children in glob.glob(f"/proc/{proc.pid}/task/*/children"):
        with contextlib.suppress(OSError, ValueError):
            jobs += [int(pid) for pid in Path(children).read_text().split()]
    for pid in jobs:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    stop.signal_child(proc, signal.SIGKILL)


def _find_fio(fio: str) -> str:
    exe = shutil.which(fio)
    if not exe:
        raise FioError(f"fio not found ({fio!r}): install it (Debian/Ubuntu: apt-get install fio) or pass its path")
    return exe


def fio_version(fio: str = "fio") -> str:
    exe = _find_fio(fio)
    if exe not in _VERSION_CACHE:
        r = _run_briefly([exe, "--version"], timeout_s=30)
        _VERSION_CACHE[exe] = r.stdout.strip() or r.stderr.strip()
    return _VERSION_CACHE[exe]


def probe_ioengine(filename: str, fio: str = "fio") -> str:
    """Return "io_uring" if a tiny direct 4 KiB read through it works, else "libaio".

    The answer is remembered per fio binary for the rest of the process. ``filename`` is read
    (never written) with fio's ``--readonly``.
    """
    exe = _find_fio(fio)
    if exe in _ENGINE_CACHE:
        return _ENGINE_CACHE[exe]
    errors = []
    for eng in _ENGINES:
        # --thread: one process, so killing fio ends its job too (a job process whose fio
        # was killed waits for it forever)
        cmd = [exe, "--name=ssdlab-probe", f"--filename={_fio_escape(filename)}", f"--ioengine={eng}",
               "--rw=read", "--bs=4k", "--size=4k", "--iodepth=1", "--direct=1", "--readonly", "--thread",
               "--output-format=json"]
        try:
            r = _run_briefly(cmd, timeout_s=60)
            ok = r.returncode == 0 and all(int(j.get("error", 0)) == 0 for j in parse_fio_json(r.stdout).get("jobs", []))
        except (ValueError, subprocess.SubprocessError, OSError) as e:
            ok, r = False, None
            errors.append(f"{eng}: {e}")
        if ok:
            _ENGINE_CACHE[exe] = eng
            return eng
        if r is not None:
            errors.append(f"{eng}: {(r.stderr or r.stdout).strip()[-300:]}")
    raise FioError(f"fio cannot read {filename} with io_uring or libaio and direct I/O: " + " | ".join(errors)
                   + ". Check that you are root and that the filesystem supports O_DIRECT (tmpfs does not).")


def _interval_ms(job: JobSpec) -> int:
    """The phase's series interval in whole ms (fio's log windows are whole ms)."""
    return max(1, int(round(job.interval_s * 1000)))


def _log_lines(job: JobSpec, log_prefix: str) -> list[str]:
    """A job file's options for ``job``'s histogram log ``log_prefix``."""
    return ["; per-interval IO counts and completion-latency histograms (log_hist_coarseness=1: 1/32 resolution)",
            f"write_hist_log={log_prefix}", f"log_hist_msec={_interval_ms(job)}", "log_hist_coarseness=1"]


def _safe_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "phase"


# ============================================================================ targets


class FioTarget(TargetDefaults):
    """A real block device (``/dev/NAME``) or a regular file (``file:PATH``) driven by fio.

    Arguments:
        name: ``/dev/NAME`` (any path to a block device, symlinks allowed) or ``file:PATH``.
        workdir: where job files, logs and fio's JSON go (kept). Default: a new
            ``ssdlab-fio-*`` directory under the system temp dir.
        destroy: the device named in ``--destroy-data``; needed when the safety gate finds
            something on the device (see :func:`ssdlab.targets.safety.check_device`).
        dry_run: write and return job files, run nothing, touch nothing. A device the gate
            would refuse is reported in ``describe()["refused"]`` and in the job files instead
            of raising.
        size_bytes: for ``file:`` targets: the file's size (created sparse if missing,
            resized if different). Default: the existing file's size.
        purge_method: ``blkdiscard`` (default), ``nvme-format``, ``ata-secure-erase`` or
            ``none``; a file purges by ``truncate`` unless it is ``none``.
        fio: the fio executable.
    """

    capabilities = frozenset({DRIVE_COUNTERS, FIO_JOBS})
    #: The exclusive descriptor of the device while the target is open (real block devices).
    _held_fd: int | None = None
    #: A dry run's temporary workdir, removed by :meth:`close`.
    _scratch: Path | None = None
    #: Why the claim could not be taken again after a phase that let it go (the run stops).
    _claim_lost: str | None = None
    #: The FDP namespace whose counters each phase reads (:mod:`ssdlab.targets.fdpstats`), or
    #: why there is none.
    _fdp: "fdpstats.FdpDevice | str" = "no FDP counters on a file or in a dry run"

    def __init__(self, name: str, workdir: str | os.PathLike | None = None, *, destroy: str | None = None,
                 dry_run: bool = False, size_bytes: int | None = None, purge_method: str = "blkdiscard",
                 fio: str = "fio"):
        self.name = name
        self.dry_run = dry_run
        self.fio = fio
        self.refused: str | None = None
        self._engine: str | None = None
        self._facts: dict = {}
        self._counter = 0
        if purge_method not in PURGE_METHODS:
            raise ValueError(f"{name}: purge method {purge_method!r} is not one of {PURGE_METHODS}")
        self.purge_method = purge_method
        if name.startswith("file:"):
            self.kind = "file"
            self.path = os.path.abspath(os.path.expanduser(name[5:]))
            if not name[5:]:
                raise ValueError("file: target needs a path, e.g. file:/mnt/ssd/ssdlab.img")
            self._init_file(size_bytes, destroy, workdir)
        else:
            self.kind = "block"
            self.path = name
            self._init_block(destroy, tempfile.gettempdir() if workdir is None else workdir)
        try:
            self._set_workdir(workdir)
            if self.kind == "block" and not dry_run:
                self._fdp = fdpstats.probe(self.real_path)
        except BaseException:
            self.close()
            raise

    @property
    def workdir(self) -> Path:
        """Where job files, logs and fio's JSON go. A dry run given none makes a temporary one
        when it first needs it, and :meth:`close` removes it."""
        if self._workdir is None:
            with stop.held():
                self._workdir = self._scratch = Path(tempfile.mkdtemp(prefix="ssdlab-fio-")).resolve()
        return self._workdir

    def _set_workdir(self, workdir: str | os.PathLike | None) -> None:
        self._workdir: Path | None = None
        self._scratch: Path | None = None  # a dry run's temporary workdir
        if workdir is None and not self.dry_run:
            workdir = tempfile.mkdtemp(prefix="ssdlab-fio-")
        if workdir is not None:
            self._workdir = Path(workdir).resolve()
            self._workdir.mkdir(parents=True, exist_ok=True)

    # -- setup -----------------------------------------------------------------------
    def _init_dry_loop(self, name: str, capacity_bytes: int, workdir, purge_method: str, fio: str) -> None:
        """A dry run of a loop device ssdlab would make (nothing is made): job files say
        ``/dev/loopN``."""
        self.name = name
        self.dry_run, self.fio = True, fio
        self._engine, self._counter, self._facts = None, 0, {}
        self.purge_method = purge_method
        self.kind, self.path, self.real_path, self.kernel_name = "block", "/dev/loopN", "/dev/loopN", None
        self.capacity_bytes = capacity_bytes
        self._set_workdir(workdir)

    def _init_block(self, destroy: str | None, out_path: str | os.PathLike) -> None:
        real, kname = resolve_device(self.path)  # raises for missing / not a block device
        self.real_path, self.kernel_name = real, kname
        try:
            check_device(self.path, destroy, out_path=out_path)
        except UnsafeTargetError as e:
            if not self.dry_run:
                raise
            self.refused = str(e)
        else:
            if destroy is not None:
                self.gate_overridden = tuple(device_reasons(self.path))
        sysd = Path("/sys/class/block") / kname
        try:
            self.capacity_bytes = int((sysd / "size").read_text()) * 512
        except (OSError, ValueError):
            fd = os.open(real, os.O_RDONLY)
            try:
                self.capacity_bytes = os.lseek(fd, 0, os.SEEK_END)
            finally:
                os.close(fd)
        if self.capacity_bytes <= 0:
            raise FioError(f"{self.path}: has size 0 (an unattached loop device or an empty card reader?); name a device with media")
        if (sysd / "ro").exists() and (sysd / "ro").read_text().strip() == "1" and not self.dry_run:
            raise FioError(f"{self.path}: is read-only; a write test needs a writable device (check its write-protect switch or `blockdev --setrw`)")
        if not self.dry_run:
            self._hold()

    def _hold(self) -> None:
        """Opens the device exclusively for the target's lifetime: fio opens its own
        descriptors, but mkfs, mount, swapon and every other exclusive opener now fail until
        :meth:`close`. Remembers the device number and what is stacked on the device, which
        :meth:`_still_ours` compares before every phase."""
        try:
            fd = os.open(self.real_path, os.O_RDWR | os.O_EXCL | os.O_CLOEXEC)
        except OSError as e:
            if e.errno != errno.EBUSY:
                raise FioError(f"{self.path}: cannot open it for writing ({e.strerror}); check the device and "
                               f"that ssdlab runs as root") from None
            raise UnsafeTargetError(
                f"refusing to write to {self.path}: it cannot be held exclusively for the run, because a mount, a "
                f"swap area, a device-mapper/md device or another program claims it. Unmount or release it first "
                f"(`findmnt {self.real_path}`, `swapon --show`, `fuser -v {self.real_path}`)") from None
        self._held_fd = fd
        self._held_rdev = os.fstat(fd).st_rdev
        self._stack_at_start = stack_reasons(self.real_path)

    @contextlib.contextmanager
    def _claim_released(self, trims: bool):
        """Lets go of the exclusive claim while fio runs a job that trims (``trims``), and
        takes it again afterwards. fio opens such a job's device without O_DIRECT, and the
        kernel refuses (EBUSY) a discard over dirty cached pages while another descriptor
        claims the device. Whatever changed meanwhile, :meth:`_still_ours` sees before the
        next phase; a claim that cannot be taken again stops the run there."""
        if not trims or self._held_fd is None:
            yield
            return
        os.close(self._held_fd)
        self._held_fd = None
        try:
            yield
        finally:
            try:
                self._held_fd = os.open(self.real_path, os.O_RDWR | os.O_EXCL | os.O_CLOEXEC)
            except OSError as e:
                self._claim_lost = (f"{self.real_path} could not be held exclusively again after a phase with TRIM "
                                    f"({e.strerror}): another program, a mount or swap took it meanwhile. The run "
                                    f"stops here; what was measured is kept")

    def _still_ours(self) -> str | None:
        """Why the run must stop before its next phase, or None: the path the user gave no
        longer names the device held since the start, or something new is stacked on,
        mounted from or swapped to it (or to anything built on it)."""
        if self._claim_lost is not None:
            return self._claim_lost
        if self._held_fd is None:
            return None
        dev = f"{os.major(self._held_rdev)}:{os.minor(self._held_rdev)}"
        try:
            st = os.stat(self.path)
        except OSError as e:
            return (f"{self.path} no longer names a device ({e.strerror}); the run started on {self.real_path} "
                    f"({dev}). It stops here; what was measured is kept")
        if not stat.S_ISBLK(st.st_mode) or st.st_rdev != self._held_rdev:
            now = f"{os.path.realpath(self.path)} ({os.major(st.st_rdev)}:{os.minor(st.st_rdev)})" \
                if stat.S_ISBLK(st.st_mode) else f"{os.path.realpath(self.path)}, not a block device"
            return (f"{self.path} now names {now}, not {self.real_path} ({dev}) that the run started on and holds. "
                    f"It stops here; what was measured is kept")
        new = [r for r in stack_reasons(self.real_path) if r not in self._stack_at_start]
        if new:
            return (f"{self.path} changed since the run started: it " + "; it ".join(new)
                    + ". The run stops here so as not to write under it; what was measured is kept")
        return None

    def _stopped_before(self, job) -> PhaseResult | None:
        """A failed, empty result for ``job`` if :meth:`_still_ours` says the run must stop."""
        why = self._still_ours()
        if why is None:
            return None
        return PhaseResult(job=job, series=_empty_series(), totals={}, complete=False,
                           notes=[f"failed: {why}"], error=why)

    def _init_file(self, size_bytes: int | None, destroy: str | None, out_path: str | os.PathLike | None) -> None:
        self.real_path, self.kernel_name = self.path, None
        try:
            check_file(self.path, destroy, out_path=out_path)
        except UnsafeTargetError as e:
            if not self.dry_run or "block device" in str(e) or "regular file" in str(e):
                raise
            self.refused = str(e)
        exists = os.path.exists(self.path)
        if size_bytes is None:
            if not exists:
                raise ValueError(f"file:{self.path} does not exist; give its size with --file-size (e.g. --file-size 8G) "
                                 f"and ssdlab will create it sparse")
            size_bytes = os.path.getsize(self.path)
        size_bytes = int(size_bytes) // 4096 * 4096
        if size_bytes < (1 << 20):
            raise ValueError(f"file:{self.path}: size {size_bytes} bytes is too small; use at least 1M")
        self.capacity_bytes = size_bytes
        if self.dry_run:
            return
        self._check_space()
        if not exists or os.path.getsize(self.path) != size_bytes:
            with open(self.path, "ab"):
                pass
            os.truncate(self.path, size_bytes)  # sparse
        mark_own_file(self.path)
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
            os.close(fd)
        except OSError as e:
            raise FioError(f"file:{self.path}: its filesystem does not support direct I/O (O_DIRECT: {e.strerror}); "
                           f"tmpfs does not. Put the file on a disk filesystem (ext4, xfs, btrfs).") from None

    def _check_space(self) -> None:
        """Refuses a file its filesystem has no room for: a test purges it (truncate, which
        frees what it holds) and then writes all of it."""
        try:
            st = os.statvfs(os.path.dirname(self.path) or ".")
            held = os.stat(self.path).st_blocks * 512 if os.path.exists(self.path) else 0
        except OSError:
            return  # nothing to measure here: fio will say what goes wrong
        free = st.f_bfree * st.f_frsize if os.geteuid() == 0 else st.f_bavail * st.f_frsize
        if free + held < self.capacity_bytes:
            mib = 1 << 20
            raise FioError(f"file:{self.path}: its filesystem has {free / mib:,.1f} MiB free (plus "
                           f"{held / mib:,.1f} MiB the file holds), but a test writes the whole file, "
                           f"{self.capacity_bytes / mib:,.1f} MiB: free space there or use a smaller file")

    # -- job files ---------------------------------------------------------------------
    def _span(self, job: JobSpec) -> tuple[int, int]:
        off = int(job.offset_bytes)
        span = int(job.span_bytes) if job.span_bytes is not None else self.capacity_bytes - off
        if off < 0 or off % 4096:
            raise ValueError(f"job {job.name!r} on {self.name}: offset_bytes={off} must be a non-negative multiple of 4096")
        if span <= 0 or off + span > self.capacity_bytes:
            raise ValueError(f"job {job.name!r} on {self.name}: offset {off} + span {span} bytes does not fit in the "
                             f"target's {self.capacity_bytes} bytes; shrink the span")
        if span < job.bs_bytes:
            raise ValueError(f"job {job.name!r} on {self.name}: span {span} bytes is smaller than bs {job.bs_bytes}")
        return off, span

    def _ioengine(self) -> str:
        if self._engine is None:
            if self.dry_run:
                return _ENGINE_CACHE.get(shutil.which(self.fio) or self.fio, "io_uring")
            self._engine = probe_ioengine(self.real_path, self.fio)
        return self._engine

    def job_text(self, job: JobSpec, log_prefix: str | None = None) -> str:
        """The fio job file for ``job`` (what :meth:`run_phase` writes and runs)."""
        log_prefix = log_prefix or _safe_stem(job.name)
        head = [f"; ssdlab phase {job.name!r} on {self.name}" + (f" ({self.path})" if self.path not in self.name else "")]
        if self.refused:
            head.append("; WARNING: a real run would be refused by the safety gate:")
            head.append("; " + self.refused)
        if job.pattern == "idle":
            if job.duration_s is None:
                raise ValueError(f"job {job.name!r}: an idle phase needs duration_s")
            return "\n".join(head + [f"; idle: no I/O for {job.duration_s:g} s (ssdlab waits; fio is not run)", ""])
        trim_file = job.pattern == "trim" and self.kind == "file"
        head.append(self._job_comment(job))
        head.append("; rerun by hand: cd to this directory, then: fio --output-format=json <this file>")
        g = self._global_lines(trim_file) + _log_lines(job, log_prefix)
        return "\n".join(head + [""] + g + [""] + self._job_lines(job, trim_file)) + "\n"

    def _job_comment(self, job: JobSpec) -> str:
        """A job file's comment line saying what ``job`` does."""
        off, span = self._span(job)
        ends = (f"time_based, runtime {job.duration_s:g} s" if job.duration_s is not None
                else f"after {job.io_bytes if job.io_bytes is not None else span} bytes")
        qd = 1 if job.pattern == "trim" and self.kind == "file" else job.qd
        return f"; pattern {job.pattern}, bs {job.bs_bytes} B, QD {qd}, offset {off} B, span {span} B, ends {ends}"

    def _global_lines(self, trim_file: bool) -> list[str]:
        """The ``[global]`` section of a job file: the target, its I/O engine (``falloc`` for
        TRIM on a file) and the review's data and offset options."""
        g = ["[global]", f"filename={_fio_escape(self.real_path if not self.dry_run else self.path)}"]
        if trim_file:
            g += ["ioengine=falloc", "; falloc: DDIR_TRIM = fallocate(PUNCH_HOLE|KEEP_SIZE); synchronous, so iodepth=1"]
        else:
            eng = self._ioengine()
            g += ["direct=1", f"ioengine={eng}"]
            if self.dry_run and self._engine is None:
                g.append("; (ssdlab probes io_uring before a real run and falls back to libaio if it fails)")
        return g + ["refill_buffers=1", "randrepeat=0", "norandommap=1", "random_generator=tausworthe64"]

    def _job_lines(self, job: JobSpec, trim_file: bool) -> list[str]:
        """The job's own section: pattern, size, depth, where and how long."""
        off, span = self._span(job)
        j = [f"[{_safe_stem(job.name)}]", f"rw={job.pattern}", f"bs={job.bs_bytes}",
             f"iodepth={1 if trim_file else job.qd}", f"offset={off}", f"size={span}"]
        if job.duration_s is not None:
            j += ["time_based=1", f"runtime={max(1, int(round(job.duration_s * 1000)))}ms"]
        elif job.io_bytes is not None:
            j.append(f"io_size={int(job.io_bytes)}")
        return j

    def batch_text(self, groups: Sequence[Sequence[JobSpec]], log_prefixes: Sequence[str]) -> str:
        """One fio job file running ``groups`` of jobs (reads and writes) back to back, a
        section each, each section starting when the one before has ended (``stonewall``). A
        group of one job is that job with its histogram log ``log_prefixes[k]``; a longer group
        (a pass of an LBA sweep, :func:`_sweep_groups`) is one job over all its zones in fio's
        strided zone mode, with no gap between them, and a per-IO completion latency log with
        offsets (``PREFIX_clat.K.log``, K = k + 1) from which each zone's result is cut."""
        jobs = [j for g in groups for j in g]
        head = [f"; ssdlab phases {jobs[0].name!r} to {jobs[-1].name!r} ({len(jobs)}) on {self.name} back to back "
                f"in one fio run"]
        if self.refused:
            head += ["; WARNING: a real run would be refused by the safety gate:", "; " + self.refused]
        head.append("; rerun by hand: cd to this directory, then: fio --output-format=json <this file>")
        out = head + [""] + self._global_lines(False)
        for group, prefix in zip(groups, log_prefixes):
            first = group[0]
            if len(group) == 1:
                out += ["", self._job_comment(first)] + self._job_lines(first, False) + _log_lines(first, prefix)
            else:
                stride = group[1].offset_bytes - first.offset_bytes
                out += ["", f"; {len(group)} zones {first.name!r} to {group[-1].name!r}: {first.pattern} "
                            f"{first.span_bytes} B every {stride} B from offset {first.offset_bytes} B, "
                            f"bs {first.bs_bytes} B, QD {first.qd}, one zone right after the other",
                        f"[{_safe_stem(first.name)}..{_safe_stem(group[-1].name)}]", f"rw={first.pattern}",
                        f"bs={first.bs_bytes}", f"iodepth={first.qd}", f"offset={first.offset_bytes}",
                        f"size={stride * (len(group) - 1) + first.span_bytes}", f"io_size={first.span_bytes * len(group)}",
                        "zonemode=strided", f"zonesize={first.span_bytes}", f"zonerange={stride}",
                        "; per-IO completion times [ms] and latencies [ns] with offsets: each zone's figures "
                        "(completion latencies only: no total or submission latency log)",
                        f"write_lat_log={prefix}", "log_offset=1", "log_unix_epoch=1", "disable_lat=1",
                        "disable_slat=1"]
            out.append("stonewall")
        return "\n".join(out) + "\n"

    # -- running ---------------------------------------------------------------------------
    def run_phase(self, job: JobSpec, progress: Progress | None = None) -> PhaseResult:
        """Run one phase through fio (or wait, for ``idle``); see the module docstring. fio
        failing is not raised: the result has ``error`` set and keeps what was measured."""
        self._counter += 1
        stem = f"{self._counter:03d}_{_safe_stem(job.name)}"
        wall = self._wall_job(job)
        text = self.job_text(wall, log_prefix=stem)
        jobfile = self.workdir / f"{stem}.fio"
        _write_job_file(jobfile, text)
        if self.dry_run:
            return PhaseResult(job=job, series=_empty_series(), totals={}, complete=False,
                               notes=["dry run: nothing was run", f"job file: {jobfile}", text])
        if (stopped := self._stopped_before(job)) is not None:
            return stopped
        fdp_before = self._fdp_read()
        if job.pattern == "idle":
            return self._with_fdp(self._drive_result(self._idle(wall, progress), job), fdp_before, False)
        direction = pattern_direction(job.pattern)
        run = self._run_job_file(job.name, stem, jobfile, [direction] if direction else [], False, wall, progress)
        result = self._drive_result(self._phase_result(wall, run, self.workdir / f"{stem}_clat_hist.1.log", jobfile),
                                    job)
        run.finish(result.series, result.complete)
        return self._with_fdp(result, fdp_before, False)

    def _fdp_read(self) -> dict | None:
        """The drive's FDP counters before a phase (:func:`fdpstats.read`), None where it has
        none; a failed read is kept as ``{"error": why}`` for the phase's notes."""
        if not isinstance(self._fdp, fdpstats.FdpDevice):
            return None
        try:
            return fdpstats.read(self._fdp)
        except UserError as e:
            return {"error": str(e)}

    def _with_fdp(self, result: PhaseResult, before: dict | None, placed: bool) -> PhaseResult:
        """``result`` with the phase's FDP totals (:func:`fdpstats.phase_totals`: the columns
        the simulator reports them in) from the counters read ``before`` it and now. Where
        the drive has none, a phase whose jobs place data (``placed``) says why in its notes;
        a counter read that failed is a note, never the phase's failure."""
        if before is None:
            if placed:
                result.notes.append(f"FDP counters: {self._fdp}")
            return result
        try:
            if "error" in before:
                raise UserError(before["error"])
            after = fdpstats.read(self._fdp)
            totals = fdpstats.phase_totals(before, after)
        except UserError as e:
            result.notes.append(f"FDP counters unavailable for this phase: {e}")
            return result
        result.totals.update(totals)
        result.notes += [f"FDP counters: {n}" for n in dict.fromkeys(before["notes"] + after["notes"])]
        return result

    def _wall_job(self, job: JobSpec) -> JobSpec:
        """The job fio runs for ``job``: ``job`` itself (a target whose drive runs slower than
        the wall clock stretches its times)."""
        return job

    def _drive_result(self, result: PhaseResult, job: JobSpec) -> PhaseResult:
        """``result`` of :meth:`_wall_job` of ``job`` as the result of ``job`` in the drive's
        own time: as it is here."""
        return result

    def _phase_result(self, job: JobSpec, run: "_FioRun", log: Path, jobfile: Path) -> PhaseResult:
        """The result of ``job`` from its fio run ``run`` and its histogram log ``log``."""
        direction = pattern_direction(job.pattern)
        notes, data, failure, totals, lat = run.notes, run.data, run.failure, run.totals, run.latency_us
        interrupted, rc, err_path = run.interrupted, run.rc, run.err_path
        if run.json_error is not None:
            notes.append(f"fio's JSON summary is missing ({run.json_error}); totals come from its log")
        series, log_note = self._phase_series(job, log, data, totals)
        if log_note:
            notes.append(log_note)
            if not interrupted and failure is None and not len(series["t_s"]) and totals.get("ios"):
                failure = log_note
        error = None
        if failure is not None:
            error = self._fail_msg(job, jobfile, err_path, rc, failure, run.out_json)
            notes.insert(0, f"failed: {error}")
        if not data:
            ios = float(np.sum(series["iops"] * series["dt_s"]))
            dur = float(np.sum(series["dt_s"]))
            totals = {f"host_{d}_bytes": int(ios * job.bs_bytes) if d == direction else 0 for d in DIRECTIONS}
            totals.update(ios=int(ios), duration_s=dur, fio_iops=ios / dur if dur else 0.0)
        complete = interrupted is None and error is None
        return PhaseResult(job=job, series=series, totals=totals, latency_us=lat,
                           complete=complete, notes=notes, error=error)

    def run_phases(self, jobs: Sequence[JobSpec], progress: PhasesProgress | None = None) -> Iterator[PhaseResult]:
        """Runs ``jobs`` back to back (:meth:`Target.run_phases`): each run of consecutive read
        and write jobs that end by bytes (an LBA sweep's zones) goes to fio as one job file
        (:meth:`batch_text`), so the drive sees no fio start-up and no ssdlab bookkeeping
        between them: a sweep pass's zones are one fio job (:meth:`_zone_results`), other
        jobs one section each with ``stonewall`` (fio starts each job a few hundred ms after
        the one before) and their results as :meth:`run_phase` gives them. Other phases
        (timed, idle, TRIM) and a dry run go one by one through :meth:`run_phase`. Ctrl-C/SIGTERM stops fio:
        the jobs it finished are yielded complete, the one it was running with what it
        measured (``complete=False``), and none after it."""
        jobs = list(jobs)
        k = 0
        while k < len(jobs):
            end = k
            while end < len(jobs) and _batchable(jobs[end]) and not self.dry_run:
                end += 1
            end = max(end, k + 1)
            sub = None if progress is None else (lambda i, fraction, text, k=k: progress(k + i, fraction, text))
            results = (self._run_batch(jobs[k:end], sub) if end - k > 1
                       else run_phases_one_by_one(self, jobs[k:end], sub))
            for result in results:
                yield result
                if not result.complete:
                    return
            k = end

    def _run_batch(self, jobs: list[JobSpec], progress: PhasesProgress | None) -> list[PhaseResult]:
        """Runs ``jobs`` (read and write jobs that end by bytes) in one fio run; see
        :meth:`run_phases`. Files: ``NNN_<first>..<last>.fio`` (the job file), ``.json``,
        ``.stderr``, and per section its log: ``MMM_<job>_clat_hist.K.log`` for a single job,
        ``MMM_<job>_clat.K.log`` (per IO) for a sweep pass."""
        drive_jobs, jobs = jobs, [self._wall_job(j) for j in jobs]
        groups = _sweep_groups(jobs)
        stems = []
        for g in groups:
            stems.append(f"{self._counter + 1:03d}_{_safe_stem(g[0].name)}")
            self._counter += len(g)
        stem = f"{stems[0]}..{_safe_stem(jobs[-1].name)}"
        jobfile = self.workdir / f"{stem}.fio"
        _write_job_file(jobfile, self.batch_text(groups, stems))
        if (stopped := self._stopped_before(jobs[0])) is not None:
            return [stopped]
        for old in stems:
            for p in glob.glob(str(self.workdir / f"{old}_*.log")):
                os.unlink(p)
        sizes = np.cumsum([0] + [self._span(j)[1] if j.io_bytes is None else j.io_bytes for j in jobs])

        def sub(fraction: float, text: str) -> None:
            if progress is not None:
                i = min(int(np.searchsorted(sizes, fraction * sizes[-1], side="right")) - 1, len(jobs) - 1)
                progress(i, float((fraction * sizes[-1] - sizes[i]) / (sizes[i + 1] - sizes[i])), text)

        run = self._run_job_file(stem, stem, jobfile, [], False, None, sub, self._batch_status(jobs, sizes),
                                 journalled=False)
        data = run.data or {}
        entries = data.get("jobs") or []
        errors = [int(e.get("error", 0) or 0) for e in entries]
        out: list[PhaseResult] = []
        for n, (group, prefix) in enumerate(zip(groups, stems)):
            entry = entries[n] if n < len(entries) else {}
            last_section = n == len(groups) - 1 or not any(_entry_ios(e) for e in entries[n + 1:])
            part = _FioRun(interrupted=run.interrupted if last_section else None, rc=run.rc,
                           notes=[f"job file: {jobfile} (section {n + 1} of {len(groups)}, run back to back with "
                                  f"the others)"] + (run.notes[1 + bool(run.interrupted):] if last_section else []),
                           out_json=run.out_json, err_path=run.err_path, journal=run.journal,
                           data={**data, "jobs": [entry]} if run.data else None, json_error=run.json_error)
            if part.interrupted and len(group) == 1:  # a sweep pass's zones say it themselves
                part.notes.insert(0, run.notes[0])
            part.totals, part.latency_us, ferr = _summarize(part.data) if part.data else ({}, {}, 0)
            if not run.interrupted:
                # fio's failure belongs to the section that reports an error, else to the last one or one without IO.
                ios = part.totals.get("ios")
                part.failure = (_fio_error_text(ferr) if ferr else run.failure
                                if run.failure is not None and not any(errors) and (last_section or not ios)
                                else None if ios else "it completed no IO")
            if len(group) == 1:
                results_ = [self._phase_result(group[0], part, self.workdir / f"{prefix}_clat_hist.{n + 1}.log",
                                               jobfile)]
            else:
                results_ = self._zone_results(group, part, self.workdir / f"{prefix}_clat.{n + 1}.log", jobfile)
            for result in results_:
                result = self._drive_result(result, drive_jobs[len(out)])
                _journal_phase(result.job.name, result)
                out.append(result)
                if not result.complete:
                    _keep_final_report(run.out_json)
                    return out
            if part.interrupted:
                break
        _keep_final_report(run.out_json)
        return out

    def _zone_results(self, group: list[JobSpec], run: "_FioRun", log: Path, jobfile: Path) -> list[PhaseResult]:
        """The result of each zone of a sweep pass (a strided section of :meth:`batch_text`)
        from its per-IO completion log ``log`` (times since the epoch): the zone's IOs are
        those at its offsets; it starts when the zone before it ended (the first: when the
        pass's first IO was submitted, its completion time less its latency) and ends with its
        last completion (times at fio's 1 ms log resolution); ``wall_span_s`` says when. Zones
        after one cut short (Ctrl-C) or failed are not returned."""
        direction = pattern_direction(group[0].pattern)
        try:
            rows = np.loadtxt(log, delimiter=",", dtype=np.int64, ndmin=2, usecols=(0, 1, 4))
        except (OSError, ValueError) as e:
            rows = np.zeros((0, 3), dtype=np.int64)
            run.notes.append(f"fio's per-IO log {log.name} cannot be read ({e})")
        t_ms, lat_ns, off = rows[:, 0], rows[:, 1], rows[:, 2]
        first, stride, sample = group[0].offset_bytes, group[1].offset_bytes - group[0].offset_bytes, group[0].span_bytes
        zone = (off - first) // stride
        out, start_ms = [], int(np.min(t_ms - lat_ns // 1_000_000)) if len(t_ms) else 0
        for z, job in enumerate(group):
            mine = zone == z
            ios = int(mine.sum())
            done = ios * job.bs_bytes >= sample
            end_ms = int(t_ms[mine].max()) if ios else start_ms
            dur_s = max(end_ms - start_ms, 1) / 1000.0 if ios else 0.0
            notes = list(run.notes)
            interrupted = run.interrupted if not done else None
            failure = None if done else run.failure if run.failure is not None else (
                None if interrupted else f"fio ended the pass after {ios} of the zone's {sample // job.bs_bytes} IOs")
            error = None
            if failure is not None:
                error = self._fail_msg(job, jobfile, run.err_path, run.rc, failure, run.out_json)
                notes.insert(0, f"failed: {error}")
            elif interrupted:
                notes.insert(0, f"interrupted by {interrupted}: partial results")
            n = max(1, math.ceil(dur_s / job.interval_s - 1e-9)) if ios else 0
            k = np.minimum((t_ms[mine] - start_ms) / 1000.0 // job.interval_s, n - 1).astype(np.int64)
            t_s = np.arange(n, dtype=np.float64) * job.interval_s
            dt_s = np.minimum(job.interval_s, dur_s - t_s) if n else np.zeros(0)
            iops = np.bincount(k, minlength=n)[:n] / np.where(dt_s > 0, dt_s, np.nan) if n else np.zeros(0)
            series = {"t_s": t_s, "iops": iops, "mbps": iops * job.bs_bytes / 1e6, "dt_s": dt_s}
            for label, col in fio_logs.percentiles_by_interval(k, lat_ns[mine].astype(np.float64), n).items():
                series[latency_column(direction, label)] = col
            totals = {f"host_{d}_bytes": ios * job.bs_bytes if d == direction else 0 for d in DIRECTIONS}
            totals.update(ios=ios, duration_s=dur_s, fio_iops=ios / dur_s if dur_s else 0.0)
            lat = fio_logs.latency_percentiles_us(lat_ns[mine], (50.0, 99.0, 99.9)) if ios else {}
            out.append(PhaseResult(job=job, series=series, totals=totals, latency_us=lat,
                                   complete=error is None and interrupted is None, notes=notes, error=error,
                                   wall_span_s=(start_ms / 1000.0, end_ms / 1000.0) if ios else None))
            if not out[-1].complete:
                break
            start_ms = end_ms
        return out

    def _batch_status(self, jobs: list[JobSpec], sizes: np.ndarray):
        """Progress of a batch (:meth:`_run_batch`): the fraction of its bytes the device moved."""
        moved = self._progress_probe()

        def status(el: float) -> tuple[float, str]:
            try:
                done = moved() if moved else None
            except (OSError, ValueError, IndexError):
                done = None
            if done is None:
                return 0.0, f"{len(jobs)} phases back to back: {el:,.0f} s"
            return min(1.0, done / sizes[-1]), f"{len(jobs)} phases back to back: {done / 1e6:,.0f} MB moved"

        return status

    @property
    def zone_size_bytes(self) -> int:
        """Zone size of a zoned block device [bytes], 0 otherwise (fio's sizes in zones)."""
        from ..workload import tofio

        return tofio.zone_bytes(self.real_path)

    def plan_workload(self, workload, interval_s: float) -> list[WorkloadStep]:
        """One step per group of a :class:`~ssdlab.workload.fiojob.Workload`, after checking
        that no job's ``filename`` names another device or file than this target, that
        fio and the target can run its data placement options (:func:`tofio.check_placement`),
        its zone appends (:func:`tofio.check_write_mode`) and its zone mode
        (:func:`tofio.check_zones`)."""
        from ..workload import tofio

        if any(j.dataplacement != "none" for j in workload.jobs):
            tofio.check_placement(workload, fio_version(self.fio), self.real_path)
        if any(j.write_mode != "write" for j in workload.jobs):
            tofio.check_write_mode(workload, fio_version(self.fio), self.real_path)
        tofio.check_zones(workload, self.real_path)
        tofio.check_filename(workload, self.path, (self.name, self.real_path))
        return workload_steps(workload, interval_s)

    def workload_notes(self, workload, steps: list) -> dict:
        """fio runs the job file as written: nothing to add."""
        return {}

    def dry_run_text(self, workload, steps: list) -> list[str]:
        """Each step's fio job file (written to the workdir, not run)."""
        return [self.run_workload(step).notes[-1] for step in steps]

    def run_workload(self, step: WorkloadStep, progress: Progress | None = None) -> PhaseResult:
        """Runs a step of :meth:`plan_workload` (group ``step.index`` of ``step.workload``)
        through fio as written (:func:`ssdlab.workload.tofio.group_text`): the jobs run
        together, and the result is the sum of their histogram logs, per direction (IOPS, MB/s
        from each direction's mean IO size, latency percentiles), with ``totals["jobs"]`` per
        job."""
        from ..workload import tofio

        workload, index = step.workload, step.index
        self._counter += 1
        stem = f"{self._counter:03d}_{_safe_stem(step.name)}"
        head = [f"; ssdlab workload group {index + 1} ({step.name!r}) on {self.name}"]
        if self.refused:
            head += ["; WARNING: a real run would be refused by the safety gate:", "; " + self.refused]
        head.append("; rerun by hand: cd to this directory, then: fio --output-format=json+ <this file>")
        path = self.real_path if not self.dry_run else self.path
        text = tofio.group_text(workload, index, path, stem, max(1, int(round(step.interval_s * 1000))), head)
        jobfile = self.workdir / f"{stem}.fio"
        _write_job_file(jobfile, text)
        if self.dry_run:
            return PhaseResult(job=step, series=_empty_series(), totals={}, complete=False,
                               notes=["dry run: nothing was run", f"job file: {jobfile}", text])
        if (stopped := self._stopped_before(step)) is not None:
            return stopped
        moved = self._progress_probe()
        fdp_before = self._fdp_read()

        def status(el: float) -> tuple[float, str]:
            try:
                done = f"{moved() / 1e6:,.0f} MB moved, " if moved else ""
            except (OSError, ValueError, IndexError):
                done = ""
            of = f"/{step.duration_s:,.0f}" if step.duration_s else ""
            return (min(1.0, el / step.duration_s) if step.duration_s else 0.0), f"{step.name}: {done}{el:,.0f}{of} s"

        with self._claim_released(trims=re.search(r"^rw=\w*trim", text, re.M) is not None):
            run = self._run_job_file(step.name, stem, jobfile, DIRECTIONS, True, None, progress, status)
        notes, data, failure, totals, lat = run.notes, run.data, run.failure, run.totals, run.latency_us
        series = self._group_series(step, stem, data, totals, notes)
        error = None
        if failure is not None:
            error = self._fail_msg(step, jobfile, run.err_path, run.rc, failure, run.out_json)
            notes.insert(0, f"failed: {error}")
        totals.update(_direction_totals(data))
        complete = run.interrupted is None and error is None
        run.finish(series, complete)
        return self._with_fdp(PhaseResult(job=step, series=series, totals=totals, latency_us=lat, complete=complete,
                                          notes=notes, error=error), fdp_before,
                              any(j.dataplacement == "fdp" for j in workload.jobs))

    def _run_job_file(self, name: str, stem: str, jobfile: Path, directions: Sequence[str], per_direction: bool,
                      job: JobSpec | None, progress: Progress | None, status=None, journalled: bool = True
                      ) -> "_FioRun":
        """Runs fio on ``jobfile`` (its logs named ``stem``; stale ones removed first) with
        JSON output and a status report every FIO_STATUS_S, journalled as phase ``name``
        (``directions``, per direction or not) unless not ``journalled``; ``job`` and
        ``status`` as :meth:`_run_fio`.
        Returns what fio did and wrote; nothing raised for fio's failure (``failure``)."""
        for old in glob.glob(str(self.workdir / f"{stem}_*.log")):
            os.unlink(old)
        out_json, err_path = self.workdir / f"{stem}.json", self.workdir / f"{stem}.stderr"
        out_json.unlink(missing_ok=True)
        cmd = [_find_fio(self.fio), "--output-format=json+", f"--status-interval={FIO_STATUS_S}",
               f"--output={out_json.name}", jobfile.name]
        journal = _StatusJournal(results.open_phase_journal(name, "fio status reports") if journalled else None,
                                 out_json, list(directions), per_direction=per_direction)
        interrupted, rc, stop_notes = self._run_fio(cmd, err_path, job, progress, status, poll=journal.poll)
        run = _FioRun(interrupted=interrupted, rc=rc, notes=[f"job file: {jobfile}"] + stop_notes, out_json=out_json,
                      err_path=err_path, journal=journal)
        if interrupted:
            run.notes.insert(0, f"interrupted by {interrupted}: partial results")
        try:
            run.data = parse_fio_json(out_json.read_text())
            self._note_engines(run.data)
        except (OSError, ValueError) as e:
            run.json_error = e
            if not interrupted:
                run.failure = f"no JSON summary ({e})"
        run.totals, run.latency_us, ferr = _summarize(run.data) if run.data else ({}, {}, 0)
        if not interrupted and run.failure is None and (rc != 0 or ferr):
            run.failure = _fio_error_text(ferr) if ferr else ""
        if not interrupted and run.failure is None:
            run.failure = _refusal(_fio_messages(err_path, out_json))
        if not interrupted and run.failure is None and not run.totals.get("ios"):
            run.failure = "it completed no IO"
        return run

    def _group_series(self, step: WorkloadStep, stem: str, data: dict | None, totals: dict,
                      notes: list[str]) -> dict:
        """The summed series of a group's jobs' histogram logs, each job's final window added
        from its JSON figures (:func:`ssdlab.fio_logs.run_grid`); ``{dir}_mbps`` from the
        direction's mean IO size."""
        logs = sorted(self.workdir.glob(f"{stem}_clat_hist.*.log"), key=lambda p: int(p.name.split(".")[-2]))
        if not logs:
            notes.append(f"fio wrote no histogram log {stem}_clat_hist.N.log")
            return _empty_series()
        grid = self._run_grid(step, logs, data, totals)
        notes += grid.notes
        return fio_logs.run_series(grid, data, per_direction=True)

    def _phase_series(self, job: JobSpec, log: Path, data: dict | None, totals: dict) -> tuple[dict, str | None]:
        """The phase's series from its histogram log ``log`` and fio's JSON (for the final
        window fio does not log), and a note on what was added or missing."""
        grid = self._run_grid(job, [log], data, totals)
        return fio_logs.run_series(grid, data, per_direction=False, bs_bytes=job.bs_bytes), "; ".join(grid.notes) or None

    def _run_grid(self, job: JobSpec | WorkloadStep, logs: list[Path], data: dict | None, totals: dict) -> "fio_logs.Grid":
        """:func:`ssdlab.fio_logs.run_grid` of a phase or group: the series covers fio's run
        time, capped by the job's duration (fio's runtime of a timed job overshoots by a few
        ms; the IOs of those ms count in its last interval)."""
        end_s = totals.get("duration_s") or None
        if job.duration_s and end_s and end_s >= job.duration_s:
            end_s = job.duration_s
        try:
            return fio_logs.run_grid(logs, data, interval_s=job.interval_s,
                                     window_ms=_interval_ms(job), end_s=end_s)
        except ValueError as e:
            raise FioError(f"{self.name}, {job.name!r}: cannot read fio's log: {e}") from None

    # -- trace replay ----------------------------------------------------------------------
    #: Commands per fio run of a replay (fio holds a whole replay file in memory); see
    #: :mod:`ssdlab.targets.fio_replay`.
    replay_segment_commands: int = _rp.SEGMENT_COMMANDS

    def _trim_unsupported(self) -> str | None:
        """Why TRIM cannot be replayed on this target, or None."""
        if self.kind == "file":
            return ("fio replays a TRIM with the BLKDISCARD ioctl, which a regular file does not support "
                    "(fio's falloc engine punches holes but cannot write), so TRIMs were left out on this file target")
        if self.kernel_name:
            dmax = Path("/sys/class/block") / self.kernel_name / "queue" / "discard_max_bytes"
            try:
                if dmax.read_text().strip() == "0":
                    return f"{self.path} does not support discard (TRIM), so TRIMs were left out"
            except OSError:
                pass
        return None

    def _replay_device_number(self) -> int:
        if self.kind == "block" and not self.dry_run:
            try:
                rdev = os.stat(self.real_path).st_rdev
                return _rp.device_number(os.major(rdev), os.minor(rdev))
            except OSError:
                pass
        return _rp.device_number(0, 1)  # no real device: replay_redirect= names the target

    def replay_job_text(self, job: ReplayJob, seg: "_rp.Segment", nseg: int, total: int) -> str:
        """The fio job file for one replay file of ``job`` (what :meth:`replay` writes and runs)."""
        head = [f"; ssdlab trace replay {job.name!r} on {self.name}" + (f" ({self.path})" if self.path not in self.name else "")]
        if self.refused:
            head.append("; WARNING: a real run would be refused by the safety gate:")
            head.append("; " + self.refused)
        part = f"run {seg.index} of {nseg}: commands {seg.first}..{seg.first + seg.commands - 1} of {total}" if nseg > 1 \
            else f"{seg.commands} commands"
        c = seg.counts
        head += [f"; {part} ({c[0]} reads, {c[1]} writes, {c[2]} trims, {c[3]} flushes), QD {job.qd}, "
                 f"in order, as fast as the target goes (trace timestamps ignored)",
                 f"; {seg.trace.name}: blktrace binary QUEUE events (fio 3.33 cannot replay trims from a text iolog);",
                 ";   (48-byte records; ssdlab.targets.fio_replay.read_blktrace() decodes them)",
                 f"; per-IO completion log: {seg.stem}_clat.1.log (ms since the Unix epoch, latency ns, dir, bytes)",
                 "; rerun by hand: cd to this directory, then: fio --output-format=json <this file>"]
        g = ["[global]"]
        eng = self._ioengine()
        g += ["direct=1", f"ioengine={eng}"]
        if self.dry_run and self._engine is None:
            g.append("; (ssdlab probes io_uring before a real run and falls back to libaio if it fails)")
        g += ["refill_buffers=1"]
        if job.buffer_compress_pct is not None:
            g.append(f"buffer_compress_percentage={job.buffer_compress_pct}")
        j = [f"[{_safe_stem(job.name)}]", f"read_iolog={seg.trace.name}",
             f"replay_redirect={self.real_path if not self.dry_run else self.path}",
             "replay_no_stall=1", f"iodepth={job.qd}",
             f"write_lat_log={seg.stem}", "log_avg_msec=0", "log_unix_epoch=1",
             "disable_lat=1", "disable_slat=1"]
        return "\n".join(head + [""] + g + [""] + j) + "\n"

    def replay(self, job: ReplayJob, chunks: Iterable[CommandChunk], progress: Progress | None = None,
               total_commands: int | None = None) -> ReplayResult:
        """Replay prepared command chunks (:data:`~ssdlab.targets.base.CommandChunk`) through fio,
        in order, keeping ``job.qd`` commands outstanding, as fast as the target goes; see
        :class:`~ssdlab.targets.base.ReplayResult` and :mod:`ssdlab.targets.fio_replay` for how.

        The commands are written to ``WORKDIR/NNN_<name>.blktrace`` (several ``.pKKK`` files
        for long traces, one fio run each) with a job file ``NNN_<name>[.pKKK].fio`` next to
        each; fio's per-IO completion log gives each command's completion time (1 ms
        resolution). TRIMs are left out, with a note, on file targets and on devices without
        discard. A dry run writes these files and runs nothing. Ctrl-C or SIGTERM stops fio and
        returns what was logged with ``complete=False``. ``total_commands`` is accepted for
        interface compatibility (the count is known once the files are written).
        """
        self._counter += 1
        stem = f"{self._counter:03d}_{_safe_stem(job.name)}"
        notes: list[str] = []
        drop_reason = self._trim_unsupported()
        with _sigterm_raises():
            writer = _rp.SegmentWriter(self.workdir, stem, capacity_bytes=self.capacity_bytes,
                                       device=self._replay_device_number(),
                                       segment_commands=self.replay_segment_commands, drop_trims=drop_reason is not None)
            try:
                for op, off, ln in chunks:
                    writer.add(op, off, ln)
                    if progress is not None:
                        progress(0.0, f"{job.name}: writing the replay file, {writer.seen:,} commands")
            except (KeyboardInterrupt, _Terminate) as e:
                writer.abort()
                why = "Ctrl-C (SIGINT)" if isinstance(e, KeyboardInterrupt) else str(e)
                return ReplayResult(job=job, series=_rp.WindowAccumulator(job.window_commands).series(),
                                    totals=_replay_totals(np.zeros(4, np.int64), np.zeros(4, np.int64), 0.0),
                                    complete=False,
                                    notes=[f"interrupted by {why} while writing the replay file: nothing was replayed"])
            except BaseException as e:
                writer.abort()
                if isinstance(e, OSError) and e.errno in results.NO_ROOM_ERRNOS:  # no room for the replay file
                    raise results.write_failed(e.filename or self.workdir / f"{stem}.blktrace", e) from e
                raise
            try:
                segments = writer.close()
            except OSError as e:
                if e.errno not in results.NO_ROOM_ERRNOS:
                    raise
                raise results.write_failed(e.filename or self.workdir / f"{stem}.blktrace", e) from e
            if drop_reason and writer.dropped_trims:
                notes.append(f"{writer.dropped_trims:,} TRIM commands ({writer.dropped_trim_bytes:,} bytes) were not "
                             f"replayed: {drop_reason}")
            total = sum(s.commands for s in segments)
            for old_file in [*self.workdir.glob(f"{stem}.fio"), *self.workdir.glob(f"{stem}.p[0-9][0-9][0-9]*.fio")]:
                old_file.unlink()
            for seg in segments:
                seg.jobfile = self.workdir / f"{seg.stem}.fio"
                _write_job_file(seg.jobfile, self.replay_job_text(job, seg, len(segments), total))
            if self.dry_run:
                texts = [seg.jobfile.read_text() for seg in segments[:1]]
                files = [str(s.jobfile) for s in segments]
                return ReplayResult(job=job, series=_rp.WindowAccumulator(job.window_commands).series(), totals={},
                                    complete=False,
                                    notes=["dry run: nothing was run", f"job files: {', '.join(files) or 'none (no commands)'}"]
                                    + notes + texts)
            if not segments:
                return ReplayResult(job=job, series=_rp.WindowAccumulator(job.window_commands).series(),
                                    totals=_replay_totals(np.zeros(4, np.int64), np.zeros(4, np.int64), 0.0),
                                    notes=notes + ["no commands to replay: fio was not run"])
            with self._claim_released(trims=drop_reason is None):
                return self._replay_run(job, segments, total, notes, progress)

    def _replay_run(self, job: ReplayJob, segments: list, total: int, notes: list[str],
                    progress: Progress | None) -> ReplayResult:
        """Run fio on each replay file in turn and turn its logs into the result."""
        if (why := self._still_ours()) is not None:
            return ReplayResult(job=job, series=_rp.WindowAccumulator(job.window_commands).series(),
                                totals=_replay_totals(np.zeros(4, np.int64), np.zeros(4, np.int64), 0.0),
                                complete=False, notes=[f"failed: {why}"], error=why)
        acc = _rp.WindowAccumulator(job.window_commands)
        counts = np.zeros(4, dtype=np.int64)
        nbytes = np.zeros(4, dtype=np.int64)
        t0_ms: float | None = None
        last_end_ms: float | None = None
        gap_ms = 0.0
        unlogged = 0
        interrupted: str | None = None
        error: str | None = None
        runs = []  # fio runs done: (segment, interrupted, launch time [epoch ms], fio JSON counts)
        for seg in segments:  # run back to back (logs are read afterwards, to keep the gaps short)
            try:
                for old in glob.glob(str(self.workdir / f"{seg.stem}_*lat.*log")):
                    os.unlink(old)
                out_json = self.workdir / f"{seg.stem}.json"
                err_path = self.workdir / f"{seg.stem}.stderr"
                out_json.unlink(missing_ok=True)
                cmd = [_find_fio(self.fio), "--output-format=json", f"--output={out_json.name}", seg.jobfile.name]
                status = self._replay_status(job, seg, len(segments), total)
                launch_ms = time.time() * 1000.0
                interrupted, rc, stop_notes = self._run_fio(cmd, err_path, None, progress, status=status)
                notes += stop_notes
                try:
                    fio = self._replay_check(job, seg, interrupted, rc, out_json, err_path, notes)
                except FioError as e:  # keep what the runs before (and this one's log) measured
                    error = str(e)
                    fio = None
                runs.append((seg, interrupted or error, launch_ms, fio))
            except (KeyboardInterrupt, _Terminate) as e:  # between fio runs
                interrupted = interrupted or ("Ctrl-C (SIGINT)" if isinstance(e, KeyboardInterrupt) else str(e))
            if interrupted or error:
                break
        for k, (seg, seg_interrupted, launch_ms, fio) in enumerate(runs):
            if progress is not None:
                progress(min(1.0, (seg.first + seg.commands) / total), f"{job.name}: reading fio's completion logs")
            try:
                log = self._replay_log(job, seg, seg_interrupted, notes)
                t_ms, b, c, nb, start_ms, end_ms, tail = _rp.segment_completions(seg, log, fio, launch_ms)
            except (KeyboardInterrupt, _Terminate) as e:
                interrupted = interrupted or ("Ctrl-C (SIGINT)" if isinstance(e, KeyboardInterrupt) else str(e))
                notes.append(f"interrupted while reading fio's logs: runs {k + 1}..{len(runs)} are not counted")
                break
            if t0_ms is None:
                t0_ms = start_ms
            if last_end_ms is not None:
                gap_ms += max(0.0, start_ms - last_end_ms)
            if len(t_ms):
                last_end_ms = max(end_ms, float(t_ms[-1]))
            acc.add((t_ms - t0_ms) / 1000.0, b)
            counts += c
            nbytes += nb
            unlogged += tail
            if not seg_interrupted and not np.array_equal(c, seg.counts):
                notes.append(f"{seg.stem}: fio completed {c.tolist()} (read, write, trim, flush) commands but the "
                             f"replay file holds {seg.counts.tolist()}")
        series = acc.series()
        duration = float(acc.last_t) if acc.n else 0.0
        totals = _replay_totals(counts, nbytes, duration)
        notes.append("completion times come from fio's per-IO completion log (write_lat_log, log_avg_msec=0) "
                     "at 1 ms resolution; t = 0 is the first command's issue")
        if counts[3]:
            notes.append("flushes are fio syncs (fsync: a cache flush on a block device); fio neither waits for "
                         "earlier commands before one nor logs it, so each flush is placed at the completion of "
                         "the commands before it")
        if unlogged:
            notes.append(f"{unlogged} commands still in flight when a replay file ran out are not in fio's log "
                         f"(fio does not log them); they are counted from fio's totals and placed at the run's end")
        if len(segments) > 1:
            notes.append(f"replayed in {len(segments)} fio runs of at most {self.replay_segment_commands:,} commands "
                         f"(fio holds a replay file in memory); the queue drained for {gap_ms / 1000:.2f} s in "
                         f"total between runs")
        if interrupted or error:
            why = f"failed: {error}" if error else f"interrupted by {interrupted}"
            notes.insert(0, f"{why}: partial results ({int(counts.sum()):,} of {total:,} "
                            f"commands, {len(runs)} of {len(segments)} fio runs)")
        return ReplayResult(job=job, series=series, totals=totals, complete=interrupted is None and error is None,
                            notes=notes, error=error)

    def _replay_check(self, job, seg, interrupted, rc, out_json: Path, err_path: Path, notes: list[str]) -> dict | None:
        """fio's JSON counts of one replay run (None if missing after an interrupt); FioError if fio failed."""
        data = None
        try:
            data = parse_fio_json(out_json.read_text())
            self._note_engines(data)
        except (OSError, ValueError) as e:
            if not interrupted:
                raise FioError(self._fail_msg(job, seg.jobfile, err_path, rc, f"no JSON summary ({e})")) from None
            notes.append(f"fio's JSON summary of {seg.stem} is missing ({e}); counts come from its completion log")
        fio = _rp.fio_counts(data)
        if not interrupted and (rc != 0 or (fio and fio["error"])):
            raise FioError(self._fail_msg(job, seg.jobfile, err_path, rc,
                                          _fio_error_text(fio["error"]) if fio and fio["error"] else "", out_json))
        refusal = None if interrupted else _refusal(_fio_messages(err_path, out_json))
        if refusal:
            raise FioError(self._fail_msg(job, seg.jobfile, err_path, rc, refusal, out_json))
        if not interrupted and seg.counts[:3].sum() and not fio["counts"][:3].sum():
            raise FioError(self._fail_msg(job, seg.jobfile, err_path, rc, "it completed no IO", out_json))
        if not interrupted and seg.counts[:3].sum() and not (self.workdir / f"{seg.stem}_clat.1.log").exists():
            raise FioError(self._fail_msg(job, seg.jobfile, err_path, rc, f"no completion log {seg.stem}_clat.1.log"))
        return fio

    def _replay_log(self, job, seg, interrupted, notes: list[str]) -> dict | None:
        """One replay run's completion log (:func:`ssdlab.fio_logs.read_log`), or None."""
        log_path = self.workdir / f"{seg.stem}_clat.1.log"
        if not log_path.exists() or not log_path.stat().st_size:
            if seg.counts[:3].sum() and not interrupted:
                notes.append(f"{log_path.name} is empty: {seg.stem}'s commands have no completion times")
            return None
        try:
            return fio_logs.read_log(log_path)
        except ValueError as e:
            notes.append(f"could not read {log_path.name} ({e}); its commands have no completion times")
            return None

    def _replay_status(self, job: ReplayJob, seg, nseg: int, total: int):
        """Progress of one replay run: commands done, from the bytes the device moved (block
        devices) or whole runs (files)."""
        moved = self._progress_probe()
        want = seg.io_bytes

        def status(el: float) -> tuple[float, str]:
            frac_in = 0.0
            if moved is not None and want:
                try:
                    frac_in = min(1.0, moved() / want)
                except (OSError, ValueError, IndexError):
                    frac_in = 0.0
            done = seg.first + frac_in * seg.commands
            text = f"{job.name}: ~{done:,.0f} of {total:,} commands" if moved is not None and want \
                else f"{job.name}: {el:.0f} s"
            if nseg > 1:
                text += f" (fio run {seg.index}/{nseg})"
            return (min(1.0, done / total) if total else 0.0), text

        return status

    def _fail_msg(self, job, jobfile, err_path, rc, extra, out_json: Path | None = None) -> str:
        """One message for a failed fio run: target, phase, how fio ended, fio's own error line
        (from its stderr ``err_path`` and what precedes the JSON in ``out_json``), a hint, and
        the job file to rerun by hand."""
        err = _fio_messages(err_path, out_json)
        lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
        errors = fio_error_lines(err) or [ln for ln in lines if "error" in ln.lower() or ln.startswith("fio:")]
        said = (errors or lines[-1:] or ["fio printed no message"])[0].rstrip(".")
        if len(said) > 300:
            said = said[:297] + "..."
        more = f" (+{len(errors) - 1} more error lines in {err_path})" if len(errors) > 1 else ""
        if rc is not None and rc < 0:
            how = f"killed by {signal.Signals(-rc).name}" if -rc in signal.Signals._value2member_map_ else f"killed ({rc})"
        else:
            how = f"exit {rc}"
        hint = ""
        low = err.lower() + " " + (extra or "").lower()
        if "invalid argument" in low and self.kind == "file":
            hint = " The file's filesystem may not support O_DIRECT (tmpfs does not)."
        elif "permission denied" in low or "operation not permitted" in low:
            hint = " Run as root."
        elif "no space" in low or "error 28" in low:
            hint = " The filesystem under the target (or under a loop device's backing file) is full: free space."
        elif "appears mounted" in low:
            hint = f" Unmount {self.path} (and every partition of it) first: fio does not write to a mounted device."
        return (f"fio failed on {self.name} in phase {job.name!r} ({how}{', ' + extra if extra else ''}): {said}{more}."
                f"{hint} Job file: {jobfile}; rerun it by hand with `cd {self.workdir} && fio {jobfile.name}`.")

    def _progress_probe(self):
        """A function returning bytes the device moved so far (read, written, discarded), from
        the kernel's counters: the device's own for a block device, the device under the file's
        filesystem for a file (which other programs' I/O on it adds to). None if unknown."""
        if self.kind == "block" and self.kernel_name:
            stat_path = Path("/sys/class/block") / self.kernel_name / "stat"
        elif self.kind == "file" and not self.dry_run:
            try:
                dev = os.stat(self.path).st_dev
            except OSError:
                return None
            stat_path = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}/stat")
        else:
            return None

        def read() -> int:
            f = stat_path.read_text().split()
            total = int(f[2]) + int(f[6]) + (int(f[13]) if len(f) > 13 else 0)
            return total * 512

        try:
            base = read()
        except (OSError, ValueError, IndexError):
            return None
        return lambda: read() - base

    def _phase_status(self, job: JobSpec):
        """Progress of a phase: the fraction done (by time for timed jobs, else by bytes the
        device moved) and the live figures (:class:`~ssdlab.targets.base.LiveFigures`) from the
        bytes the device moved per interval."""
        moved = self._progress_probe()
        want = (job.io_bytes if job.io_bytes is not None else self._span(job)[1]) if job.duration_s is None else None
        live = LiveFigures(job.interval_s, job.duration_s, job.bs_bytes)

        def status(el: float) -> tuple[float, str]:
            done = None
            if moved is not None:
                try:
                    done = moved()
                except (OSError, ValueError, IndexError):
                    done = None
            if done is not None:
                live.update(el, done / job.bs_bytes)
            else:
                live.elapsed_s = el
            if job.duration_s:
                frac = min(1.0, el / job.duration_s)
            elif done is not None and want:
                frac = min(1.0, done / want)
            else:
                frac = 0.0
            return frac, f"{job.name}: {live.text()}"

        return status

    def _run_fio(self, cmd, err_path: Path, job: JobSpec | None, progress: Progress | None, status=None,
                 poll=None):
        """Run fio; on Ctrl-C / SIGTERM ask it to stop (:meth:`_stop_fio`) and wait. Returns
        (interrupted, rc, notes).

        ``status(elapsed_s) -> (fraction, text)`` reports progress; default: from ``job``'s
        duration or the bytes the device moved. ``poll()`` is called every half second
        while fio runs (the phase's journal reads fio's status reports). fio gets a stop file
        (``--trigger-file``, ``NNN_phase.stop`` beside its logs), removed when it has exited."""
        interrupted: str | None = None
        notes: list[str] = []
        proc = None
        t0 = time.monotonic()
        started = time.time()
        if status is None:
            status = self._phase_status(job)
        stop_file = err_path.with_suffix(".stop").absolute()
        stop_file.unlink(missing_ok=True)
        cmd = [cmd[0], f"--trigger-file={stop_file}", *cmd[1:]]
        try:
            with _sigterm_raises() as terminated:
                try:
                    with open(err_path, "w") as err, stop.held():  # no fio this process does not know of
                        proc = subprocess.Popen(cmd, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=err,
                                                stderr=err, start_new_session=True, preexec_fn=_die_with_us())
                    while True:
                        try:
                            rc = stop.wait(proc, 0.5)
                            break
                        except subprocess.TimeoutExpired:
                            _raise_again(terminated)
                            if poll is not None:
                                poll()
                            if progress is not None:
                                frac, text = status(time.monotonic() - t0)
                                progress(frac, text)
                except KeyboardInterrupt:
                    interrupted = "Ctrl-C (SIGINT)"
                except _Terminate as e:
                    interrupted = str(e)
                if interrupted is not None:
                    if proc is None:
                        return interrupted, -1, notes
                    rc = self._stop_fio(proc, signal.SIGINT if "SIGINT" in interrupted else signal.SIGTERM, notes,
                                        stop_file)
        finally:
            if interrupted is not None:
                _remove_stop_leftovers(stop_file, self.workdir, started)
        return interrupted, rc, notes

    @staticmethod
    def _stop_fio(proc: subprocess.Popen, sig: int, notes: list[str], stop_file: Path) -> int:
        """Asks fio to stop, so that it ends its jobs and writes its logs and JSON, and returns
        its exit status. First by creating ``stop_file`` (its ``--trigger-file``): once its
        jobs are starting, fio's main loop looks for the file every 10 to 100 ms and ends the
        jobs. If fio has not taken the file within :data:`FIO_STOP_LOOK_S` (it is still reading
        its job file or laying out a file), or on a second stop request, by the signal ``sig``;
        a third request, or :data:`FIO_STOP_GRACE_S` without fio ending, kills it and its job
        processes.

        The file comes first because fio's handler of SIGINT and SIGTERM formats a message
        (malloc) in whichever of its threads the signal lands: one that lands while that thread
        holds the allocator's lock (fio's main thread does in ``fork()``, as it starts a job)
        hangs fio for ever."""
        step = 0  # 0: asked by the stop file, 1: signalled, 2: killed
        look_s, grace_s = FIO_STOP_LOOK_S, FIO_STOP_GRACE_S

        def send_signal() -> None:
            nonlocal step
            step = 1
            stop.signal_child(proc, sig)

        def kill(why: str) -> None:
            nonlocal step
            step = 2
            notes.append(f"{why}; killed it (its logs may be lost)")
            _kill_fio(proc)

        try:
            stop_file.touch()
        except OSError:
            send_signal()
        t0 = time.monotonic()
        told = False
        while True:
            try:
                return stop.wait(proc, 0.1)
            except subprocess.TimeoutExpired:
                waited_s = time.monotonic() - t0
                if step == 0 and waited_s > look_s and stop_file.exists():
                    send_signal()
                if step < 2 and waited_s > grace_s:
                    kill(f"fio did not stop within {grace_s:.0f} s")
                if not told and step < 2 and waited_s > FIO_STOP_TELL_S:
                    told = True
                    print(f"ssdlab: waiting for fio (pid {proc.pid}) to end its IO and write its logs, at most "
                          f"{grace_s:.0f} s; Ctrl-C {'twice more' if step == 0 else 'again'} kills it (its logs may "
                          f"be lost)", file=sys.stderr, flush=True)
            except (KeyboardInterrupt, _Terminate):
                if step == 0:
                    send_signal()
                elif step == 1:
                    kill("interrupted again while fio was stopping")

    def _idle(self, job: JobSpec, progress: Progress | None) -> PhaseResult:
        """Wait ``duration_s`` (wall time) with no I/O; Ctrl-C/SIGTERM end it early."""
        if job.duration_s is None:
            raise ValueError(f"job {job.name!r}: an idle phase needs duration_s")
        interrupted = None
        t0 = time.monotonic()
        with _sigterm_raises() as terminated:
            try:
                while True:
                    el = time.monotonic() - t0
                    if el >= job.duration_s:
                        break
                    time.sleep(min(0.5, job.duration_s - el))
                    _raise_again(terminated)
                    if progress is not None:
                        progress(min(1.0, (time.monotonic() - t0) / job.duration_s), f"{job.name}: idle")
            except KeyboardInterrupt:
                interrupted = "Ctrl-C (SIGINT)"
            except _Terminate as e:
                interrupted = str(e)
        el = min(time.monotonic() - t0, job.duration_s)
        n = int(np.ceil(el / job.interval_s - 1e-9)) if el > 0 else 0
        t = np.arange(n, dtype=np.float64) * job.interval_s
        dt = np.minimum(job.interval_s, el - t) if n else np.zeros(0)
        notes = [f"interrupted by {interrupted}: partial results"] if interrupted else []
        return PhaseResult(job=job, series={"t_s": t, "iops": np.zeros(n), "mbps": np.zeros(n), "dt_s": dt},
                           totals={"host_write_bytes": 0, "host_read_bytes": 0, "host_trim_bytes": 0, "ios": 0,
                                   "duration_s": el},
                           complete=interrupted is None, notes=notes)

    # -- purge -------------------------------------------------------------------------------
    def purge(self) -> dict:
        """Return the target to a fresh state: whole-device discard (default), NVMe format,
        or, for files, truncate to 0 and re-create sparse; nothing with ``purge_method``
        ``none``. Returns ``{"method": ..., ...}``."""
        if self.kind == "file" and self.purge_method != "none":
            if self.dry_run:
                return {"method": "truncate", "dry_run": True}
            t0 = time.monotonic()
            os.truncate(self.path, 0)
            os.truncate(self.path, self.capacity_bytes)
            return {"method": "truncate", "bytes": self.capacity_bytes, "seconds": time.monotonic() - t0}
        m = self.purge_method
        if m == "none":
            return {"method": "none"}
        if not self.dry_run and (why := self._still_ours()) is not None:
            raise FioError(f"purge ({m}) not done: {why}")
        if m == "blkdiscard":
            what = (f"discard (TRIM) all {self.capacity_bytes:,} bytes of {self.real_path} through the descriptor "
                    f"ssdlab holds exclusively (BLKDISCARD, as `blkdiscard {self.real_path}`)")
            if self.dry_run:
                return {"method": "blkdiscard", "dry_run": True, "command": what}
            dmax = Path("/sys/class/block") / self.kernel_name / "queue" / "discard_max_bytes"
            if dmax.exists() and dmax.read_text().strip() == "0":
                raise FioError(f"{self.path} does not support discard (TRIM), so it cannot be purged with blkdiscard. "
                               f"Use --purge nvme-format (NVMe) where supported, or --purge none to test it as it is "
                               f"(the report will say it was not purged).")
            t0 = time.monotonic()
            start = 0
            try:
                while start < self.capacity_bytes:  # in steps, so Ctrl-C is seen between them
                    n = min(_DISCARD_STEP_BYTES, self.capacity_bytes - start)
                    fcntl.ioctl(self._held_fd, _BLKDISCARD, struct.pack("=QQ", start, n))
                    start += n
            except OSError as e:
                raise FioError(f"discarding {self.real_path} failed at byte {start:,} of {self.capacity_bytes:,} "
                               f"({e.strerror}). Use --purge none to skip the purge (the report will say so).") from None
            return {"method": "blkdiscard", "bytes": self.capacity_bytes, "seconds": time.monotonic() - t0}
        if m == "nvme-format":
            return self._nvme_format()
        if m == "ata-secure-erase":
            vendor = ""
            try:
                vendor = (Path("/sys/class/block") / self.kernel_name / "device" / "vendor").read_text().strip()
            except (OSError, TypeError):
                pass
            if vendor != "ATA":
                raise FioError(f"--purge ata-secure-erase is not supported on {self.path}: it is not an ATA/SATA drive. "
                               f"Use --purge blkdiscard (default) or nvme-format.")
            raise FioError(f"--purge ata-secure-erase is not supported by ssdlab yet on {self.path}: ATA security erase "
                           f"needs a password and a drive that is not security-frozen. Erase it yourself with "
                           f"`hdparm --user-master u --security-set-pass p {self.path}` then "
                           f"`hdparm --user-master u --security-erase p {self.path}`, and rerun with --purge none.")
        raise ValueError(f"{self.name}: unknown purge method {m!r}")  # pragma: no cover

    def _nvme_format(self) -> dict:
        if not self.kernel_name or not re.fullmatch(r"nvme\d+n\d+", self.kernel_name):
            raise FioError(f"--purge nvme-format is not supported on {self.path}: it is not an NVMe namespace "
                           f"(/dev/nvmeXnY). Use --purge blkdiscard.")
        nvme = shutil.which("nvme")
        if not nvme:
            raise FioError(f"--purge nvme-format on {self.path} needs nvme-cli: apt-get install nvme-cli")
        # keep the current LBA format: read FLBAS (bits 0-3 = format index) first
        said = ""
        try:
            r = stop.run([nvme, "id-ns", self.real_path, "--output-format=json"], NVME_QUERY_TIMEOUT_S)
            said = r.stderr.strip()
            lbaf = int(json.loads(r.stdout)["flbas"]) & 0xF
        except (ValueError, KeyError, TypeError, OSError, subprocess.SubprocessError) as e:
            raise FioError(f"`nvme id-ns {self.real_path}` failed ({said or e}); cannot keep its LBA format, "
                           f"so ssdlab will not format it. Use --purge blkdiscard.") from None
        cmd = [nvme, "format", self.real_path, "--ses=1", f"--lbaf={lbaf}", "--force"]
        if self.dry_run:
            return {"method": "nvme-format", "dry_run": True, "command": " ".join(cmd)}
        t0 = time.monotonic()
        r = stop.run(cmd, None)
        if r.returncode != 0:
            raise FioError(f"`{' '.join(cmd)}` failed: {(r.stderr or r.stdout).strip()}. The drive may not support "
                           f"a user-data erase format; use --purge blkdiscard.")
        return {"method": "nvme-format", "ses": 1, "lbaf": lbaf, "seconds": time.monotonic() - t0}

    # -- facts -------------------------------------------------------------------------------
    def _note_engines(self, data: dict) -> None:
        """Adds the I/O engines fio ran a job file's jobs with, as its JSON output reports
        them (:func:`fio_engines`), to ``ioengine`` of :meth:`describe`."""
        used = self._facts.get("ioengine")
        engines = ([] if used is None else used.split(", ")) + fio_engines(data)
        if engines:
            self._facts["ioengine"] = ", ".join(dict.fromkeys(engines))

    def describe(self) -> dict:
        """Facts for summary.json: kind, path, capacity, model/firmware (sysfs), fio version,
        and ``ioengine``: the I/O engine(s) fio ran the jobs with, from its JSON output (None
        until fio has run a job). The same dict every call, kept up to date as fio runs, so a
        summary holding it records the engines of every phase that ran."""
        d = self._facts
        d.update({"target": self.name, "kind": self.kind, "path": self.path, "capacity_bytes": self.capacity_bytes,
                  "simulated": False, "workdir": str(self.workdir), "dry_run": self.dry_run,
                  "purge_method": "truncate" if self.kind == "file" and self.purge_method != "none"
                  else self.purge_method})
        d.setdefault("ioengine", None)
        try:
            d["fio_version"] = fio_version(self.fio)
        except (FioError, OSError, subprocess.SubprocessError):
            d["fio_version"] = None
        if self.refused:
            d["refused"] = self.refused
        d["fdp_counters"] = (f"nvme fdp stats/usage of {self._fdp.device}, endurance group {self._fdp.endgid}, "
                             f"around each phase" if isinstance(self._fdp, fdpstats.FdpDevice) else self._fdp)
        if self.gate_overridden:
            d["destroy_overrode"] = list(self.gate_overridden)
        if self.kind == "block" and self.kernel_name:
            sysd = Path("/sys/class/block") / self.kernel_name
            d["real_path"] = self.real_path
            for key, rel in (("model", "device/model"), ("vendor", "device/vendor"), ("serial", "device/serial"),
                             ("firmware", "device/firmware_rev"), ("firmware", "device/rev"),
                             ("rotational", "queue/rotational"), ("logical_block_size", "queue/logical_block_size"),
                             ("physical_block_size", "queue/physical_block_size"),
                             ("discard_max_bytes", "queue/discard_max_bytes")):
                if key in d:
                    continue
                try:
                    v = (sysd / rel).read_text().strip()
                except OSError:
                    continue
                d[key] = int(v) if v.isdigit() and key not in ("serial", "firmware", "model") else v
        return d

    def counters(self) -> dict:
        """The drive's own lifetime host/NAND write counters now, for a measured write
        amplification (see :func:`ssdlab.targets.counters.read_counters`). Files, loop devices
        and drives without such counters give ``{"source": "unavailable", "reason": ...}``."""
        if self.dry_run:
            return unavailable("dry run: nothing was read", self.path)
        return read_counters(self.real_path)

    def close(self) -> None:
        """Lets go of the device held since the start and removes a dry run's temporary
        workdir (job files and logs stay in ``workdir``)."""
        with stop.held():
            fd, self._held_fd = self._held_fd, None
            if fd is not None:
                os.close(fd)
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
                self._scratch = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, capacity_bytes={self.capacity_bytes}, workdir={str(self.workdir)!r})"


def _sweep_groups(jobs: Sequence[JobSpec]) -> list[list[JobSpec]]:
    """``jobs`` cut into runs of consecutive jobs that are one pass of an LBA sweep (the same
    sequential pattern, block size, depth, interval and sample, ``io_bytes`` = the
    sample, at offsets a constant stride of at least the sample apart), and single jobs."""
    groups: list[list[JobSpec]] = []

    def key(j: JobSpec):
        return (j.pattern, j.bs_bytes, j.qd, j.interval_s, j.span_bytes)

    for job in jobs:
        g = groups[-1] if groups else None
        if (g and job.pattern in ("read", "write") and key(job) == key(g[0]) and job.span_bytes
                and job.io_bytes == job.span_bytes and g[0].io_bytes == g[0].span_bytes
                and (stride := (g[1].offset_bytes - g[0].offset_bytes) if len(g) > 1
                     else job.offset_bytes - g[0].offset_bytes) >= job.span_bytes
                and job.offset_bytes - g[-1].offset_bytes == stride):
            g.append(job)
        else:
            groups.append([job])
    return groups


def _batchable(job: JobSpec) -> bool:
    """Whether ``job`` can run in a batch of back-to-back jobs: reads and writes that end by bytes."""
    return job.duration_s is None and pattern_direction(job.pattern) in ("read", "write")


def _entry_ios(entry: dict) -> int:
    """IOs a job entry of fio's JSON output completed."""
    return sum(int((entry.get(d) or {}).get("total_ios", 0) or 0) for d in DIRECTIONS)


def _journal_phase(name: str, result: PhaseResult) -> None:
    """Journals a phase that ran inside a batch: its final series, then its end."""
    journal = results.open_phase_journal(name, "fio logs")
    if journal is not None:
        if len(result.series.get("t_s", ())):
            journal.replace(result.series)
        journal.close(result.complete)


def fio_engines(data: dict | None) -> list[str]:
    """The I/O engines of the jobs in fio's JSON output, in order, each once: a job's own
    ``ioengine`` option, else its global section's, else fio's default (psync)."""
    glob_engine = ((data or {}).get("global options") or {}).get("ioengine")
    jobs = (data or {}).get("jobs") or []
    return list(dict.fromkeys((j.get("job options") or {}).get("ioengine") or glob_engine or "psync" for j in jobs))


def _direction_totals(data: dict | None) -> dict:
    """Per direction that ran, over every job of fio's JSON: ``{dir}_ios``, ``{dir}_bytes``
    and ``{dir}_latency_us`` (percentiles of the jobs' summed completion-latency histograms);
    and ``jobs``: per job, its name and the same per-direction figures."""
    out: dict = {}
    per_job = []
    summed: dict[str, dict[float, float]] = {}
    for j in (data or {}).get("jobs") or []:
        row: dict = {"name": j.get("jobname"), "queue_depth": _queue_depth(j.get("iodepth_level"))}
        for d in DIRECTIONS:
            dd = j.get(d) or {}
            n = int(dd.get("total_ios", 0) or 0)
            if not n:
                continue
            bins = {float(k): float(v) for k, v in ((dd.get("clat_ns") or {}).get("bins") or {}).items()}
            row[f"{d}_ios"], row[f"{d}_bytes"] = n, int(dd.get("io_bytes", 0))
            row[f"{d}_latency_us"] = fio_logs.bins_percentiles_us(bins)
            out[f"{d}_ios"] = out.get(f"{d}_ios", 0) + n
            out[f"{d}_bytes"] = out.get(f"{d}_bytes", 0) + row[f"{d}_bytes"]
            acc = summed.setdefault(d, {})
            for k, v in bins.items():
                acc[k] = acc.get(k, 0.0) + v
        per_job.append(row)
    for d, bins in summed.items():
        out[f"{d}_latency_us"] = fio_logs.bins_percentiles_us(bins)
    out["jobs"] = per_job
    return out


def _queue_depth(levels: dict | None) -> int | None:
    """The queue depth a fio job mostly ran at: the bucket of fio's ``iodepth_level`` (percent
    of the time at 1, 2, 4, 8, 16, 32, >=64 IOs in flight) holding the most time."""
    if not levels:
        return None
    share = {int(k.lstrip(">=")): float(v) for k, v in levels.items() if k.lstrip(">=").isdigit()}
    return max(share, key=lambda k: (share[k], k)) if any(share.values()) else None


def _replay_totals(counts: np.ndarray, nbytes: np.ndarray, duration_s: float) -> dict:
    """ReplayResult totals from completed commands and bytes per op (read, write, trim, flush)."""
    n = int(counts.sum())
    data = int(nbytes[0] + nbytes[1])
    return {"commands": n, "reads": int(counts[0]), "writes": int(counts[1]), "trims": int(counts[2]),
            "flushes": int(counts[3]), "host_write_bytes": int(nbytes[1]), "host_read_bytes": int(nbytes[0]),
            "trim_bytes": int(nbytes[2]), "duration_s": duration_s,
            "iops": n / duration_s if duration_s > 0 else None,
            "mbps": data / duration_s / 1e6 if duration_s > 0 else None}


def _empty_series() -> dict[str, np.ndarray]:
    return {k: np.zeros(0) for k in ("t_s", "iops", "mbps", "dt_s")}


class LoopTarget(FioTarget):
    """``loop:SIZE``: a loop device over a sparse temp file, made now and removed by :meth:`close`.

    Arguments: ``size`` (``"8G"``, ``"8GB"``, ``"512MiB"``: see :func:`ssdlab.targets.loop.parse_size`,
    or bytes), ``workdir``, ``dry_run`` (nothing is created; job files say ``/dev/loopN``),
    ``directory`` (where the backing file goes; default ``$SSDLAB_LOOP_DIR`` or the temp dir),
    ``purge_method``, ``fio``. The fresh device is ours, so no ``--destroy-data`` is needed,
    but the safety gate still runs on it. Use as a context manager or call :meth:`close`;
    it is also removed at interpreter exit and if construction fails.
    """

    def __init__(self, size: str | int, workdir: str | os.PathLike | None = None, *, dry_run: bool = False,
                 directory: str | os.PathLike | None = None, purge_method: str = "blkdiscard", fio: str = "fio"):
        label = size if isinstance(size, str) else format_size(int(size))
        size_bytes = parse_size(size, what=f"loop:{label}:")
        self.loop = LoopDevice(size_bytes, directory=directory)
        if dry_run:
            self._init_dry_loop(f"loop:{label}", size_bytes, workdir, purge_method, fio)
            return
        self.loop.create()
        try:
            super().__init__(self.loop.path, workdir, destroy=None, dry_run=False,
                             purge_method=purge_method, fio=fio)
        except BaseException:
            self.loop.close()
            raise
        self.name = f"loop:{label}"

    def describe(self) -> dict:
        d = super().describe()
        d["kind"] = "loop"
        d["loop"] = self.loop.info()
        return d

    def close(self) -> None:
        """Let go of the loop device, then detach it (the kernel frees its backing file)."""
        try:
            super().close()
        finally:
            self.loop.close()


def open_spec(spec: str, *, sets: tuple[str, ...] = (), seed: int = 1, threads: int = 1, **kw) -> FioTarget:  # noqa: ARG001
    """``/dev/NAME``, ``file:PATH`` or ``loop:SIZE`` for :func:`ssdlab.targets.open_target`:
    :func:`open_target`, its problems (a device the safety gate refuses, a bad size, fio
    missing...) as :class:`UserError`. Real targets take no ``--set``; ``seed`` is the
    simulator's, and so is ``threads``."""
    refuse_sets(spec, sets)
    try:
        return open_target(spec, **kw)
    except (ValueError, UnsafeTargetError, FioError, LoopError) as e:
        raise UserError(str(e)) from None


def open_target(name: str, workdir: str | os.PathLike | None = None, **kw) -> FioTarget:
    """Make the fio-driven target the user named: ``/dev/NAME``, ``file:PATH`` or ``loop:SIZE``.

    Keyword arguments go to :class:`FioTarget` / :class:`LoopTarget` (``destroy``, ``dry_run``,
    ``size_bytes`` for files, ``purge_method``, ``fio``, ``directory`` for loops).
    """
    if name.startswith("loop:"):
        kw.pop("destroy", None)
        kw.pop("size_bytes", None)
        return LoopTarget(name[5:], workdir, **kw)
    kw.pop("directory", None)
    if name.startswith("file:") or name.startswith("/"):
        return FioTarget(name, workdir, **kw)
    raise ValueError(f"{name!r} is not a real target: use /dev/NAME, file:PATH or loop:SIZE (or sim:PROFILE for the simulator)")
