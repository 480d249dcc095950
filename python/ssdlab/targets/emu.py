"""An emulated drive (``ssdlab emulate``) read from outside, as a real drive is read: its
counters, and how faithfully the emulator kept to the drive's simulated times.

The emulator's FUSE filesystem holds the drive's file (under the loop device) and beside it
``counters.json``: a JSON object of the drive's counters at the moment the file is opened
(bytes, ns and counts, cumulative since the emulator started; layout version ``format``):
host and NAND bytes written, GC copies, erases, SLC level, commands served, and the replies
by how long after their simulated completion time they were sent (``late``: a count per
bucket of ``late_bounds_ns``, 1-2-5 µs steps up to 10 s, the last bucket above).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

#: The counters file beside the drive's file, and the layout this module reads.
COUNTERS_NAME = "counters.json"
IMAGE_NAME = "drive.img"
COUNTERS_FORMAT = 1

#: A reply sent more than this long after its simulated completion time counts as late [ns]:
#: well above a wake-up's jitter on an idle host (a few µs), and a tenth of a TLC program.
LATE_NS = 50_000


def counters_file(device: str) -> Path | None:
    """The counters file of the emulated drive under loop device ``device`` (/dev/loopN), or
    None when ``device`` is not over an emulated drive."""
    try:
        backing = (Path("/sys/class/block") / os.path.basename(os.path.realpath(device)) / "loop"
                   / "backing_file").read_text().strip().removesuffix(" (deleted)")
    except OSError:
        return None
    image = Path(backing)
    if image.name != IMAGE_NAME:
        return None
    path = image.with_name(COUNTERS_NAME)
    return path if path.exists() else None


def read(path: str | os.PathLike) -> dict:
    """The counters in ``path`` (a counters file); ValueError when it is not one this version
    reads."""
    d = json.loads(Path(path).read_text())
    if not isinstance(d, dict) or d.get("source") != "ssdlab-emu":
        raise ValueError(f"{path}: not an emulated drive's counters file")
    if d.get("format") != COUNTERS_FORMAT:
        raise ValueError(f"{path}: counters format {d.get('format')!r}; this ssdlab reads format {COUNTERS_FORMAT}")
    return d


def lateness(after: dict, before: dict | None = None) -> dict:
    """How late the replies sent between two counter readings were (since the start without
    ``before``): ``replies``, ``late_share`` (the share sent more than :data:`LATE_NS` after
    their completion time; None without replies), ``p50_late_s`` and ``p99_late_s`` (the upper
    bound of the bucket holding that percentile [s]; None without replies, inf past 10 s),
    ``mean_late_s`` [s], and ``max_late_s`` (the most any reply since the start was late [s])."""
    bounds = after["late_bounds_ns"]
    counts = [a - (before["late"][i] if before else 0) for i, a in enumerate(after["late"])]
    replies = sum(counts)
    late_ns = after["late_ns"] - (before["late_ns"] if before else 0)

    def percentile(q: float) -> float | None:
        if not replies:
            return None
        seen = 0
        for bound, n in zip(bounds + [float("inf")], counts):
            seen += n
            if seen >= q * replies:
                return bound / 1e9
        return float("inf")

    on_time = sum(n for bound, n in zip(bounds, counts) if bound <= LATE_NS)
    return {"replies": replies, "late_share": (replies - on_time) / replies if replies else None,
            "p50_late_s": percentile(0.5), "p99_late_s": percentile(0.99),
            "mean_late_s": late_ns / replies / 1e9 if replies else None,
            "max_late_s": after["max_late_ns"] / 1e9}
