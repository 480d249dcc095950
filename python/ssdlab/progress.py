"""Progress of long steps on stderr, whether or not stderr is a terminal.

* On a terminal (or with ``SSDLAB_PROGRESS=1``): a tqdm bar per phase.
* Otherwise (a log file, a pipe, a CI job): one line every :data:`LINE_EVERY_S` seconds
  (``SSDLAB_PROGRESS_EVERY_S`` sets another interval [s]) saying what runs now: a phase
  with its progress, elapsed time and the time left at its pace so far; or a step that
  has no measure of progress (setting a loop device up, a purge, writing the results) with
  the time it has run.

Steps (:func:`step`) print such lines on a terminal too: no bar shows them. ``--no-progress``
(:func:`configure` with False) turns everything off.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from .targets.base import Progress

#: Seconds between two progress lines when stderr is not a terminal: 30 s, about 120 lines
#: for an hour's run; ``SSDLAB_PROGRESS_EVERY_S`` overrides it.
LINE_EVERY_S = 30.0

#: What ``enabled=None`` means (:func:`configure`): None chooses by stderr, False is off.
_configured: bool | None = None


def configure(enabled: bool | None) -> None:
    """Sets what ``enabled=None`` means from now on in this process: False (the command
    line's ``--no-progress``) turns progress off, True forces bars, None chooses by stderr."""
    global _configured
    _configured = enabled


def every_s() -> float:
    """Seconds between two progress lines: ``SSDLAB_PROGRESS_EVERY_S`` if it is a number > 0,
    else :data:`LINE_EVERY_S`."""
    try:
        value = float(os.environ.get("SSDLAB_PROGRESS_EVERY_S", ""))
    except ValueError:
        return LINE_EVERY_S
    return value if value > 0 else LINE_EVERY_S


def _mode(enabled: bool | None) -> str:
    """"off", "bar" (tqdm) or "lines"."""
    if enabled is None:
        enabled = _configured
    if enabled is False:
        return "off"
    if enabled or sys.stderr.isatty() or os.environ.get("SSDLAB_PROGRESS") == "1":
        return "bar"
    return "lines"


def duration_text(seconds: float) -> str:
    """``42 s``, ``12 min 05 s``, ``2 h 03 min``."""
    s = int(round(max(0.0, seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@dataclass
class _Step:
    """One running step as the progress lines tell it."""

    label: str
    #: Fraction done in [0, 1], None for a step without a measure of progress.
    fraction: float | None = None
    text: str = ""
    #: A tqdm bar shows it: no lines.
    shown: bool = False
    start: float = field(default_factory=time.monotonic)

    def line(self, now: float) -> str:
        elapsed = now - self.start
        head = f"ssdlab: {time.strftime('%H:%M:%S')} {self.label}: "
        if self.fraction is None:
            return head + f"{duration_text(elapsed)} elapsed"
        pct = f"{self.fraction * 100:.0f} %" + (f" ({self.text})" if self.text else "")
        left = (f"about {duration_text(elapsed * (1 - self.fraction) / self.fraction)} left" if self.fraction > 0
                else "time left not known yet")
        return head + f"{pct}, {duration_text(elapsed)} elapsed, {left}"


class _Lines:
    """Prints the innermost running step on stderr every :func:`every_s` seconds, from a
    daemon thread, while any step runs (none is printed while a bar shows it)."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.steps: list[_Step] = []
        self.last = time.monotonic()  # when the last line was printed (or the clock restarted)
        self.thread: threading.Thread | None = None
        #: The phase that ended last and when: a step without progress of its own that
        #: outlasts it (the whole run) names it.
        self.ended: tuple[str, float] | None = None

    def push(self, step: _Step) -> None:
        with self.cond:
            now = time.monotonic()
            if not self.steps and now - self.last > every_s():
                self.last = now  # after a quiet while, the first line comes a whole interval later
            self.steps.append(step)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="ssdlab-progress", daemon=True)
                self.thread.start()
            self.cond.notify()

    def pop(self, step: _Step) -> None:
        with self.cond:
            if step in self.steps:
                self.steps.remove(step)
            if step.fraction is not None:
                self.ended = (step.label, time.monotonic())

    def _run(self) -> None:
        with self.cond:
            while True:
                if not self.steps:
                    self.cond.wait()
                    continue
                now = time.monotonic()
                due = self.last + every_s()
                if now < due:
                    self.cond.wait(due - now)
                    continue
                self.last = now
                top = self.steps[-1]
                if not top.shown:
                    line = top.line(now)
                    if top.fraction is None and self.ended is not None and self.ended[1] >= top.start:
                        line += f" ({self.ended[0]} ended {duration_text(now - self.ended[1])} ago)"
                    try:
                        print(line, file=sys.stderr, flush=True)
                    except (OSError, ValueError):  # stderr closed: progress is not worth failing over
                        pass


_LINES = _Lines()


@contextmanager
def _running(s: _Step) -> Iterator[_Step]:
    _LINES.push(s)
    try:
        yield s
    finally:
        _LINES.pop(s)


@contextmanager
def step(label: str, enabled: bool | None = None) -> Iterator[None]:
    """A step without a measure of progress (setting a target up, a purge, writing the
    results): while it runs, a line every :func:`every_s` seconds says how long it has run."""
    if _mode(enabled) == "off":
        yield
        return
    with _running(_Step(label)):
        yield


@contextmanager
def phase_bar(label: str, enabled: bool | None = None) -> Iterator[Progress]:
    """Yields a :data:`Progress` callback for one phase: a 0–100 % bar on a terminal, else
    a line every :func:`every_s` seconds (phase, percent, elapsed, time left)."""
    mode = _mode(enabled)
    bar = None
    if mode == "bar":  # tqdm (and the lock it makes) only where a bar is drawn
        from tqdm import tqdm

        bar = tqdm(total=1000, desc=label, unit="‰", leave=True, file=sys.stderr,
                   bar_format="{desc:<24} {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]")
    state = {"n": 0}
    s = _Step(label, fraction=0.0, shown=mode == "bar")

    def update(fraction: float, text: str) -> None:
        fraction = max(0.0, min(1.0, fraction))
        s.fraction, s.text = fraction, text
        if bar is None:
            return
        n = int(fraction * 1000)
        if n > state["n"]:
            bar.update(n - state["n"])
            state["n"] = n
        bar.set_postfix_str(text, refresh=False)

    try:
        if mode == "off":
            yield update
        else:
            with _running(s):
                yield update
    finally:
        if bar is not None:
            bar.close()
