"""Stop requests: Ctrl-C and SIGTERM, remembered until the run ends.

Python turns a signal into KeyboardInterrupt wherever the main thread happens to run
Python code next. Some places swallow it: a finalizer (``__del__``), a weakref callback or an
``os.register_at_fork`` callback reports the exception as "ignored" and goes on, so a
SIGTERM that lands while one runs would be lost and the run would go on for its full
duration. :func:`handler` therefore also records the
request, and the long loops call :func:`check`, which raises KeyboardInterrupt again until
the run has stopped.
"""
from __future__ import annotations

import signal
import threading

_requested = threading.Event()


def handler(signum: int, frame) -> None:
    """Signal handler for SIGINT and SIGTERM: records the request, raises KeyboardInterrupt."""
    _requested.set()
    raise KeyboardInterrupt


def install() -> None:
    """Ctrl-C and SIGTERM stop the run (main thread only, as ``signal.signal`` requires)."""
    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def requested() -> bool:
    """Whether Ctrl-C or SIGTERM came since :func:`clear`."""
    return _requested.is_set()


def check() -> None:
    """Raises KeyboardInterrupt if a stop was requested (whether or not the first
    KeyboardInterrupt got through)."""
    if _requested.is_set():
        raise KeyboardInterrupt


def clear() -> None:
    """Forgets a request (a new run in the same process, tests)."""
    _requested.clear()
