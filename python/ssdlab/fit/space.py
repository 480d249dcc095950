"""The search space of a fit: which simulator profile keys are searched, over which range, and
how a point of the unit cube becomes a simulated drive.

A key is searched over ``[lo, hi]`` on a linear or logarithmic scale (``log`` for keys whose
plausible values span more than a factor of ~10: timings, rates, buffer sizes); the
optimizer works in the unit cube, ``u`` in [0, 1] per key. Integer keys are rounded.

``spare_pct`` is a derived key, not a profile key: the spare area as reviewers state it,
(NAND bytes - user capacity) / user capacity x 100 [%] (the default 256 GB drive on 256 GiB
of NAND: 7.4 %). The user capacity is pinned by the measurement (the simulated drive has the
measured drive's capacity, times ``--scale``), so the spare area is set through the NAND
size: ``blocks_per_plane`` = round(user capacity x (1 + spare_pct / 100) / (planes x block
bytes)). Its resolution is one block per plane (on the default geometry 32 MiB of NAND per
step; the realized spare is what the history and fitted.toml record). ``user_capacity_bytes``
and ``blocks_per_plane`` therefore cannot be searched themselves.

GC watermarks keep their order: searching ``gc_bg_start_free_blocks`` alone moves
``gc_bg_stop_free_blocks`` with it (the base profile's gap kept; 0 = no active GC turns both
off). Any other candidate the simulator refuses (watermarks out of order, too little spare for
the GC reserve) is recorded with the simulator's message and costs no simulation.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import UserError
from ..units import parse_size

#: The derived spare-area key (see the module docstring) [%].
SPARE_KEY = "spare_pct"
#: Keys pinned by the measurement or derived from spare_pct: never searched directly.
PINNED = {"user_capacity_bytes": "the simulated drive has the measured drive's capacity (times --scale); "
                                 "search spare_pct to vary the spare area",
          "blocks_per_plane": "it follows from spare_pct and the measured capacity; search spare_pct"}
#: Keys that shape the drive's layout: searching them makes block sizes jump, not supported.
GEOMETRY = ("channels", "dies_per_channel", "planes_per_die", "pages_per_block", "page_size_bytes")

#: Ranges used when ``--key NAME`` gives none: (lo, hi, scale, unit).
DEFAULT_RANGES: dict[str, tuple[float, float, str, str]] = {
    SPARE_KEY: (3.0, 50.0, "lin", "%"),
    "t_prog_us": (300.0, 4000.0, "log", "µs"),
    "t_read_us": (20.0, 200.0, "log", "µs"),
    "t_erase_us": (1000.0, 10000.0, "log", "µs"),
    "controller_cmd_us": (3.0, 60.0, "log", "µs"),
    "channel_mbps": (100.0, 2000.0, "log", "MB/s"),
    "host_link_mbps": (200.0, 8000.0, "log", "MB/s"),
    "write_buffer_bytes": (float(1 << 20), float(1 << 30), "log", "bytes"),
    "gc_bg_start_free_blocks": (0.0, 16.0, "lin", "blocks"),
    "gc_bg_stop_free_blocks": (0.0, 24.0, "lin", "blocks"),
    "gc_bg_reclaim_ratio": (0.0, 3.0, "lin", "units/unit"),
    "gc_bg_copies_per_write": (1.0, 400.0, "log", "units/unit"),
    "gc_fg_target_free_blocks": (0.0, 32.0, "lin", "blocks"),
    "gc_idle_free_blocks": (0.0, 64.0, "lin", "blocks"),
    "compression_ratio": (1.0, 4.0, "lin", "ratio"),
}

#: The keys searched by default for each kind of measured test (--key replaces them).
DEFAULT_KEYS: dict[str, tuple[str, ...]] = {
    # FOB level: controller limit; FOB length: spare bytes / FOB rate; steady level: WA(spare)
    # x program time; bursts and their period: the active-GC watermark.
    "consistency": (SPARE_KEY, "t_prog_us", "controller_cmd_us", "gc_bg_start_free_blocks"),
    # A fresh drive's sequential fill: program time, channel and host link, the write buffer.
    "fill": ("t_prog_us", "channel_mbps", "host_link_mbps", "write_buffer_bytes"),
    # Per-group IOPS and latency of a mix: spare area (WA), NAND timings, the controller.
    "run": (SPARE_KEY, "t_prog_us", "t_read_us", "controller_cmd_us"),
}


@dataclass(frozen=True)
class Key:
    """One searched key: ``name`` (a profile key or ``spare_pct``), range ``[lo, hi]`` in the
    key's unit, ``scale`` "lin" or "log", ``integer`` for whole-number keys."""

    name: str
    lo: float
    hi: float
    scale: str = "lin"
    integer: bool = False
    unit: str = ""

    def value(self, u: float) -> float | int:
        """The key's value at ``u`` in [0, 1]."""
        u = min(1.0, max(0.0, float(u)))
        if self.scale == "log":
            v = self.lo * (self.hi / self.lo) ** u
        else:
            v = self.lo + u * (self.hi - self.lo)
        if self.integer and self.name.endswith("_bytes"):  # whole 4 KiB units, as the drive maps them
            return int(min(self.hi, max(self.lo, round(v / 4096) * 4096)))
        return int(round(v)) if self.integer else float(v)

    def unit_of(self, value: float) -> float:
        """The position in [0, 1] of ``value`` (clipped to the range)."""
        v = min(self.hi, max(self.lo, float(value)))
        if self.hi == self.lo:
            return 0.5
        if self.scale == "log":
            return math.log(v / self.lo) / math.log(self.hi / self.lo)
        return (v - self.lo) / (self.hi - self.lo)

    def text(self, value) -> str:
        """The value with its unit, as the terminal table shows it (bytes in KiB/MiB/GiB)."""
        if self.unit == "bytes":
            return _bytes_text(value)
        unit = f" {self.unit}" if self.unit else ""
        if self.integer:
            return f"{int(value):,}{unit}"
        return f"{value:.4g}{unit}"

    def range_text(self) -> str:
        if self.unit == "bytes":
            lo, hi, unit = _bytes_text(self.lo), _bytes_text(self.hi), ""
        else:
            lo = f"{int(self.lo):,}" if self.integer else f"{self.lo:g}"
            hi = f"{int(self.hi):,}" if self.integer else f"{self.hi:g}"
            unit = f" {self.unit}" if self.unit else ""
        return f"[{lo}, {hi}]{unit}{', log' if self.scale == 'log' else ''}"

    def to_json(self) -> dict:
        return {"name": self.name, "lo": self.lo, "hi": self.hi, "scale": self.scale, "integer": self.integer,
                "unit": self.unit}


def _bytes_text(n: float) -> str:
    """Bytes in the largest binary unit that keeps a number >= 1: 16 MiB, 1.5 GiB."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def profile_key_kinds() -> dict[str, tuple[str, str]]:
    """Every profile key: name -> (kind "int"/"float"/"str", meaning with unit)."""
    from .. import _native

    return {name: (kind, doc.strip()) for name, kind, doc in _native.profile_keys()}


def _unit_of_doc(doc: str) -> str:
    m = re.search(r"\[([^\]]+)\]\.?\s*$", doc)
    return m.group(1) if m else ""


def _number(text: str, name: str, integer: bool, spec: str) -> float:
    t = text.strip()
    try:
        if name.endswith("_bytes"):
            return float(parse_size(t))
        v = float(t)
    except ValueError:
        raise UserError(f"--key {spec}: {t!r} is not a number"
                        + (" or a size (4KiB, 1MiB, 8G)" if name.endswith("_bytes") else "")) from None
    if not math.isfinite(v):
        raise UserError(f"--key {spec}: {t!r} is not a finite number")
    return v


def parse_key(spec: str) -> Key:
    """``NAME``, ``NAME=LO:HI`` or ``NAME=LO:HI:log`` / ``:lin`` -> :class:`Key`; UserError
    naming the option for an unknown key, a key without a default range, or a bad range."""
    name, sep, rest = spec.partition("=")
    name = name.strip()
    kinds = profile_key_kinds()
    if not name:
        raise UserError(f"--key {spec!r}: expected NAME=LO:HI, e.g. --key t_prog_us=500:3000")
    if name != SPARE_KEY and name not in kinds:
        raise UserError(f"--key {spec}: {name!r} is not a profile key (ssdlab profiles --keys lists them) nor "
                        f"{SPARE_KEY} (spare area, % of the user capacity)")
    if name in PINNED:
        raise UserError(f"--key {spec}: {name} cannot be searched: {PINNED[name]}")
    if name in GEOMETRY:
        raise UserError(f"--key {spec}: {name} is part of the drive's geometry, which a fit keeps from --base "
                        "(give a base profile with the geometry you want)")
    kind = "float" if name == SPARE_KEY else kinds[name][0]
    if kind == "str":
        raise UserError(f"--key {spec}: {name} takes text ({kinds[name][1]}); a fit searches numbers: set it in "
                        "the --base profile instead (or fit once per choice and compare the distances)")
    integer = kind == "int"
    default = DEFAULT_RANGES.get(name)
    unit = default[3] if default else _unit_of_doc(kinds[name][1])
    if not sep:
        if default is None:
            raise UserError(f"--key {spec}: {name} has no default range; give one, e.g. --key {name}=LO:HI "
                            f"({kinds[name][1]})")
        lo, hi, scale = default[0], default[1], default[2]
    else:
        parts = rest.split(":")
        if len(parts) not in (2, 3):
            raise UserError(f"--key {spec}: expected {name}=LO:HI or {name}=LO:HI:log")
        lo, hi = _number(parts[0], name, integer, spec), _number(parts[1], name, integer, spec)
        scale = parts[2].strip().lower() if len(parts) == 3 else (default[2] if default else "lin")
        if scale not in ("lin", "log"):
            raise UserError(f"--key {spec}: scale {parts[2]!r} must be lin or log")
    if not lo < hi:
        raise UserError(f"--key {spec}: LO must be below HI (got {lo:g}:{hi:g})")
    if lo < 0:
        raise UserError(f"--key {spec}: LO {lo:g} is negative; {name} is >= 0")
    if scale == "log" and lo <= 0:
        raise UserError(f"--key {spec}: a log-scale range needs LO > 0 (got {lo:g}); use {name}={lo:g}:{hi:g}:lin")
    if integer and math.floor(hi) - math.ceil(lo) < 1:
        raise UserError(f"--key {spec}: {name} takes whole numbers; [{lo:g}, {hi:g}] holds fewer than two")
    if integer:
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
    if name != SPARE_KEY:
        from .. import _native

        for v in (lo, hi):
            text = str(int(v)) if integer else repr(float(v))
            try:
                _native.check_value(name, text)
            except _native.ProfileError as e:
                raise UserError(f"--key {spec}: {e.args[0]}") from None
    return Key(name, float(lo), float(hi), scale, integer, unit)


def build_space(specs: list[str], tests: list[str]) -> list[Key]:
    """The searched keys: those of ``--key`` (``defaults`` among them adds the default set of
    the measured tests), or the default set of the measured tests when none is given."""
    keys: dict[str, Key] = {}
    want_defaults = not specs or any(s.strip() == "defaults" for s in specs)
    if want_defaults:
        for t in tests:
            for name in DEFAULT_KEYS[t]:
                keys.setdefault(name, parse_key(name))
    for s in specs:
        if s.strip() == "defaults":
            continue
        k = parse_key(s)
        keys[k.name] = k
    if not keys:
        raise UserError("no key to search: give --key NAME=LO:HI")
    return list(keys.values())


# --------------------------------------------------------------------------- candidate drives

@dataclass(frozen=True)
class Geometry:
    """What the candidate's NAND size is computed from (the base profile's layout)."""

    planes: int
    block_bytes: int

    @classmethod
    def of(cls, values: dict) -> "Geometry":
        planes = int(values["channels"]) * int(values["dies_per_channel"]) * int(values["planes_per_die"])
        return cls(planes, int(values["pages_per_block"]) * int(values["page_size_bytes"]))


def base_spare_pct(values: dict, geometry: dict) -> float:
    """The base profile's own spare area [% of its user capacity]."""
    return (float(geometry["physical_bytes"]) / float(geometry["user_bytes"]) - 1.0) * 100.0


def sim_capacity_bytes(capacity_bytes: int, scale: float) -> int:
    """The simulated drive's user capacity: the measured capacity times ``scale``, rounded down
    to whole MiB (scale 1: down to 4096 bytes) [bytes]."""
    align = 4096 if scale >= 1 else 1 << 20
    return int(capacity_bytes * scale) // align * align


def candidate_sets(keys: list[Key], values: dict, base_values: dict, capacity_bytes: int,
                   spare_pct: float) -> tuple[list[str], dict]:
    """Profile overrides for one candidate on a drive of ``capacity_bytes`` user capacity:
    ``values`` holds the searched keys' values, ``spare_pct`` the spare area (searched or the
    base's). Returns (``KEY=VALUE`` list, realized values of the searched keys: spare_pct as the
    whole blocks per plane give it)."""
    geo = Geometry.of(base_values)
    bpp = max(1, round(capacity_bytes * (1 + spare_pct / 100.0) / (geo.planes * geo.block_bytes)))
    realized_spare = (bpp * geo.planes * geo.block_bytes / capacity_bytes - 1.0) * 100.0
    sets = [f"user_capacity_bytes={capacity_bytes}", f"blocks_per_plane={bpp}"]
    realized: dict = {}
    names = {k.name for k in keys}
    for k in keys:
        if k.name == SPARE_KEY:
            realized[k.name] = realized_spare
            continue
        v = values[k.name]
        sets.append(f"{k.name}={int(v) if k.integer else repr(float(v))}")
        realized[k.name] = v
    if "gc_bg_start_free_blocks" in names and "gc_bg_stop_free_blocks" not in names:
        start = int(values["gc_bg_start_free_blocks"])
        b_start = int(base_values.get("gc_bg_start_free_blocks", 0))
        b_stop = int(base_values.get("gc_bg_stop_free_blocks", 0)) or b_start
        sets.append(f"gc_bg_stop_free_blocks={start + max(0, b_stop - b_start) if start else 0}")
    return sets, realized
