"""Stop requests: Ctrl-C, SIGTERM and SIGHUP, remembered until the run ends.

All three stop a run the same way: what was measured is kept and marked incomplete, the loop
device and temporary files are removed, and the command exits 130. SIGHUP comes when the
terminal closes; a run that died of it instead would leave its loop device's backing file
behind.

Python turns a signal into KeyboardInterrupt wherever the main thread happens to run
Python code next. Some places swallow it: a finalizer (``__del__``), a weakref callback or an
``os.register_at_fork`` callback reports the exception as "ignored" and goes on, so a
SIGTERM that lands while one runs would be lost and the run would go on for its full
duration. :func:`handler` therefore also records the request, and the long loops call
:func:`check`, which raises KeyboardInterrupt again until the run has stopped; the
swallowed exception is dropped without the report and its traceback.

Other places must not be cut short: between attaching a loop device and keeping its file
descriptor, or starting fio and keeping its process, an exception would leave the device or
the process behind. They run inside :func:`held`: a stop request that comes meanwhile is
raised when the section ends.

Child processes are waited for with :func:`wait` and short commands run with :func:`run`, not
with ``Popen.wait(timeout)``, ``Popen.poll`` or ``subprocess.run``: those take the Popen's
lock one bytecode before the ``try`` that releases it, and a stop request raised there leaves
the lock taken for good. Every later wait of that child then times out (or blocks for ever),
and its exit status is never collected.
"""
from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
import time

#: The signals that stop a run: Ctrl-C, ``kill`` and the terminal closing.
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_requested = threading.Event()
_depth = 0  # how many held() sections the main thread is in
_starting = False  # install(starting=True) holds stop requests until the run begins
_held: list[int] = []  # signals that came inside them, in order


def handler(signum: int, frame) -> None:
    """Signal handler for :data:`SIGNALS`: records the request and raises KeyboardInterrupt
    (inside :func:`held`: when the section ends)."""
    _requested.set()
    if not hold(signum):
        raise KeyboardInterrupt


handler.holds = True  # it knows of held() sections


def install(*, starting: bool = False) -> None:
    """Ctrl-C, SIGTERM and SIGHUP stop the run (main thread only, as ``signal.signal`` requires).
    A stop request's exception that lands where it cannot be raised (a finalizer, a weakref
    callback) is dropped quietly instead of printed with its traceback (:func:`check` raises
    the request again).

    ``starting=True`` (the entry point, before the command line is imported and read): a
    stop request is held (:func:`held`) until the next call, made when the run begins, and
    raised there. Raised during the imports, KeyboardInterrupt could come out of an extension
    module's import (numpy's) as an ImportError."""
    global _starting, _depth
    for signum in SIGNALS:
        signal.signal(signum, handler)
    if sys.unraisablehook is not _unraisable:
        _unraisable.previous = sys.unraisablehook
        sys.unraisablehook = _unraisable
    if starting and not _starting:
        _starting = True
        _depth += 1
    elif not starting and _starting:
        _starting = False
        _release()


def _unraisable(unraisable) -> None:
    """``sys.unraisablehook``: drops a stop request's exception (KeyboardInterrupt after a
    request, or one marked ``stop_request = True``), passes on anything else."""
    exc = unraisable.exc_value
    if getattr(exc, "stop_request", False) or (isinstance(exc, KeyboardInterrupt) and _requested.is_set()):
        return
    _unraisable.previous(unraisable)


_unraisable.previous = sys.__unraisablehook__


def hold(signum: int) -> bool:
    """For a signal handler: inside :func:`held`, remembers ``signum`` (the section's end
    hands it to the handler installed then) and returns True; elsewhere returns False. A
    handler that calls it says so with an attribute ``holds = True``."""
    if _depth:
        _held.append(signum)
        return True
    return False


def _hold_only(signum: int, frame) -> None:
    hold(signum)


_hold_only.holds = True


@contextlib.contextmanager
def held():
    """A section a stop request must not cut short. A signal of :data:`SIGNALS` that comes
    inside it is remembered; when the outermost section ends, it goes to the handler
    installed then (which raises KeyboardInterrupt, say).

    Handlers that know of sections (``holds = True``: :func:`handler`) stay in place; another
    Python handler (Python's own KeyboardInterrupt for Ctrl-C, a program's) is replaced for
    the section. A signal whose action is the default one still ends the process at once, as
    SIGKILL would. Signals are handled in the main thread only, so in another thread this
    does nothing."""
    global _depth
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    replaced: dict[int, object] = {}
    _depth += 1
    try:
        for signum in SIGNALS:
            current = signal.getsignal(signum)
            if callable(current) and not getattr(current, "holds", False):
                replaced[signum] = signal.signal(signum, _hold_only)
        yield
    finally:
        # signals to this thread wait until every handler is back (none of the handlers
        # installed now raises, so blocking runs nothing that could)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS) if replaced else None
        try:
            for signum, previous in replaced.items():
                signal.signal(signum, previous)
        finally:
            pending = _release(deliver=False)
            if mask is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _deliver(pending)


def _release(deliver: bool = True) -> list[int]:
    """Leaves a held section; the outermost one hands the signals that came inside it to the
    handlers installed now (or returns them, with ``deliver=False``)."""
    global _depth
    _depth -= 1
    if _depth:
        return []
    pending = list(dict.fromkeys(_held))
    _held.clear()
    if deliver:
        _deliver(pending)
    return pending


def _deliver(signals: list[int]) -> None:
    for signum in signals:
        current = signal.getsignal(signum)
        if callable(current):
            current(signum, None)
        elif current == signal.SIG_DFL:
            signal.raise_signal(signum)


def finish() -> None:
    """The run is over and the process exits: from now on a stop request is only recorded,
    so it cannot interrupt the interpreter's own cleanup (exit handlers, finalizers)."""
    global _depth
    if threading.current_thread() is threading.main_thread():
        _depth += 1
        for signum in SIGNALS:
            if signal.getsignal(signum) != signal.SIG_IGN:
                signal.signal(signum, _hold_only)


def requested() -> bool:
    """Whether Ctrl-C, SIGTERM or SIGHUP came since :func:`clear`."""
    return _requested.is_set()


def check() -> None:
    """Raises KeyboardInterrupt if a stop was requested (whether or not the first
    KeyboardInterrupt got through)."""
    if _requested.is_set():
        raise KeyboardInterrupt


def clear() -> None:
    """Forgets a request (a new run in the same process, tests)."""
    _requested.clear()


#: Longest pause (s) between two looks at a child that :func:`wait` waits for.
WAIT_LOOK_S = 0.05


def wait(proc: subprocess.Popen, timeout_s: float | None = None) -> int:
    """``proc``'s exit status, waiting at most ``timeout_s`` (None: for ever) for it to end;
    raises :class:`subprocess.TimeoutExpired` as ``Popen.wait`` does. Each look at the child
    (``waitpid``, inside ``Popen.poll``) is a :func:`held` section, so a stop request raises
    between looks, never while the Popen's lock is taken; the child's status is kept, and a
    later call returns it."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    pause_s = 0.0005
    while True:
        with held():
            rc = proc.poll()
        if rc is not None:
            return rc
        pause_s = min(pause_s * 2, WAIT_LOOK_S)
        if deadline is not None:
            left_s = deadline - time.monotonic()
            if left_s <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout_s)
            pause_s = min(pause_s, left_s)
        time.sleep(pause_s)


def signal_child(proc: subprocess.Popen, signum: int) -> None:
    """Sends ``signum`` to ``proc`` unless it has ended (``Popen.send_signal``, which looks at
    the child first, in a :func:`held` section)."""
    with held(), contextlib.suppress(ProcessLookupError):
        proc.send_signal(signum)


#: Seconds :func:`run` waits for a command it killed to end.
KILLED_WAIT_S = 10.0


def run(cmd: list[str], timeout_s: float | None, **popen_kw) -> subprocess.CompletedProcess:
    """Runs a short command to its end: its exit status, stdout and stderr (text; bytes that are
    not UTF-8 replaced), as ``subprocess.run(cmd, capture_output=True, text=True)`` gives.
    Its stdin is ``/dev/null`` and its output goes to unnamed temporary files. On a stop request,
    or after ``timeout_s`` (then :class:`subprocess.TimeoutExpired`), the command is killed and
    reaped (at most :data:`KILLED_WAIT_S`) before the exception goes on; ``timeout_s`` None
    waits for ever. ``popen_kw`` go to :class:`subprocess.Popen` (``env``, ``preexec_fn``)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = None
        try:
            with held():  # no child this process does not know of
                proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, **popen_kw)
            rc = wait(proc, timeout_s)
        except BaseException:
            if proc is not None:
                with held():
                    signal_child(proc, signal.SIGKILL)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        wait(proc, KILLED_WAIT_S)
            raise
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode(errors="replace"))
    return subprocess.CompletedProcess(cmd, rc, *texts)
