"""Progress bars for long phases (tqdm on stderr; silent when stderr is not a terminal
unless forced with SSDLAB_PROGRESS=1)."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

from tqdm import tqdm

from .targets.base import Progress


@contextmanager
def phase_bar(label: str, enabled: bool | None = None) -> Iterator[Progress]:
    """Yields a :data:`Progress` callback drawing a 0–100 % bar for one phase."""
    if enabled is None:
        enabled = sys.stderr.isatty() or os.environ.get("SSDLAB_PROGRESS") == "1"
    bar = tqdm(total=1000, desc=label, unit="‰", disable=not enabled, leave=True, file=sys.stderr,
               bar_format="{desc:<24} {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]")
    state = {"n": 0}

    def update(fraction: float, text: str) -> None:
        n = int(max(0.0, min(1.0, fraction)) * 1000)
        if n > state["n"]:
            bar.update(n - state["n"])
            state["n"] = n
        bar.set_postfix_str(text, refresh=False)

    try:
        yield update
    finally:
        bar.close()
