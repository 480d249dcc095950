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

``--scale F`` (:class:`Scaling`): the simulated drive is a smaller copy of the candidate,
F times its capacity, made by shrinking every erase block to F of its pages (pages per block
rounded; F is then that ratio exactly) and keeping everything else per plane: the planes,
blocks per plane, pages, timings and every watermark counted in blocks. Spare area, the open
blocks and the GC reserve therefore stay the same share of each plane, and everything that
happens once per block (a block filled, collected, erased; a GC burst between watermarks)
happens F times as often over F times the bytes: over a run F times as long, with intervals
F times as short, the series is the full drive's with its clock divided by F. What scales
with it: the user capacity, the erase time (erase time per byte kept), the capacity-like
byte sizes (write buffer, pseudo-SLC cache, map cache and SRAM: the same share of the
drive) and the idle delay (the same share of a pause). What cannot: a block of fewer pages
gives greedy GC more choice (at 13 pages per block the default drive's steady-state write
amplification is ~13 % lower than at 256), and the write buffer cannot shrink below what
keeps every die programming (:data:`BUFFER_FLOOR_PROGRAMS` programs per die) without
throttling the drive. The fit measures the first (a full-capacity check of the best
candidate) and names the keys the second leaves unscaled.
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

    def bound(self, u: float, side: str) -> float:
        """The value at ``u`` (clipped to [0, 1]) without rounding to the key's steps, except
        that a whole-number key rounds inwards (``side`` "lo" up, "hi" down): the end of a
        range in the key's unit."""
        u = min(1.0, max(0.0, float(u)))
        v = self.lo * (self.hi / self.lo) ** u if self.scale == "log" else self.lo + u * (self.hi - self.lo)
        if self.integer:
            return float(math.ceil(v - 1e-9) if side == "lo" else math.floor(v + 1e-9))
        return float(v)

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
        if self.unit.startswith("bytes"):
            return _bytes_text(value)
        unit = f" {self.unit}" if self.unit else ""
        if self.integer:
            return f"{int(value):,}{unit}"
        return f"{value:.4g}{unit}"

    def range_text(self) -> str:
        if self.unit.startswith("bytes"):
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


#: Byte sizes that are a share of the drive: times F on a scaled drive.
SCALED_BYTES = ("write_buffer_bytes", "slc_static_bytes", "slc_dynamic_max_bytes", "map_cache_bytes",
                "map_sram_bytes")
#: Times of something done once per block or per pause: times F on a scaled drive.
SCALED_TIMES = ("t_erase_us", "gc_idle_delay_ms")
#: The scaled write buffer holds at least this many multi-plane programs per die: below about
#: two a die waits for data (the default drive programs at 96 % of its rate with 1 per die,
#: 100 % with 2).
BUFFER_FLOOR_PROGRAMS = 4
#: Fewest pages per block a scaled drive may have.
MIN_SCALED_PAGES = 8


@dataclass(frozen=True)
class Scaling:
    """The scaled copy of a drive (see the module docstring): ``factor`` F (the pages per
    block ratio, close to the requested ``--scale``), ``pages_per_block`` of the copy and the
    write buffer's floor [bytes]."""

    requested: float
    factor: float
    pages_per_block: int
    full_pages_per_block: int
    buffer_floor_bytes: int

    @classmethod
    def of(cls, base_values: dict, scale: float) -> "Scaling":
        ppb = int(base_values["pages_per_block"])
        pages = ppb if scale >= 1 else max(1, round(ppb * scale))
        program = int(base_values["planes_per_die"]) * int(base_values["page_size_bytes"])
        return cls(scale, pages / ppb, pages, ppb, BUFFER_FLOOR_PROGRAMS * program
                   * int(base_values["channels"]) * int(base_values["dies_per_channel"]))

    @property
    def scaled(self) -> bool:
        return self.factor < 1

    def capacity_bytes(self, capacity_bytes: int) -> int:
        """The copy's user capacity: ``capacity_bytes`` times F, in whole 4096-byte units."""
        return int(capacity_bytes * self.factor) // 4096 * 4096

    def buffer_bytes(self, full_bytes: float) -> int:
        """The copy's write buffer: F times ``full_bytes``, at least the floor (4 KiB units)."""
        return max(self.buffer_floor_bytes, int(full_bytes * self.factor) // 4096 * 4096)

    def overrides(self, values: dict) -> dict:
        """Profile values of the copy of the drive whose (full) values are ``values``: the
        keys that change with F (pages per block, user capacity, SCALED_BYTES, SCALED_TIMES)."""
        if not self.scaled:
            return {}
        out = {"pages_per_block": self.pages_per_block,
               "user_capacity_bytes": self.capacity_bytes(int(values["user_capacity_bytes"]))}
        for k in SCALED_BYTES:
            v = int(values[k])
            out[k] = self.buffer_bytes(v) if k == "write_buffer_bytes" else (int(v * self.factor) // 4096 * 4096
                                                                               if v else 0)
        for k in SCALED_TIMES:
            out[k] = float(values[k]) * self.factor
        return out

    def unpreserved(self, key: "Key") -> str | None:
        """Why ``key``'s effect is not what it is on the full drive at this scale (None: it is)."""
        if self.scaled and key.name == "write_buffer_bytes" and key.lo * self.factor < self.buffer_floor_bytes:
            return (f"a write buffer below {_bytes_text(self.buffer_floor_bytes / self.factor)} is simulated at "
                    f"{_bytes_text(self.buffer_floor_bytes)} on the {self.factor:.3g}x drive (less would throttle "
                    f"it): use --scale >= {min(1.0, self.buffer_floor_bytes / key.lo):.2g} to fit it")
        return None

    def describe(self) -> str:
        return (f"{self.factor:.4g} ({self.pages_per_block} of {self.full_pages_per_block} pages per block; "
                "everything per block and per plane kept)")


def check_scale(base_values: dict, scale: float, where: str) -> Scaling:
    """The scaling of ``base_values`` at ``scale``; UserError naming ``where`` when its blocks
    would be too small."""
    s = Scaling.of(base_values, scale)
    if s.scaled and s.pages_per_block < MIN_SCALED_PAGES:
        need = MIN_SCALED_PAGES / s.full_pages_per_block
        raise UserError(f"{where}: --scale {scale:g} leaves {s.pages_per_block} of the base profile's "
                        f"{s.full_pages_per_block} pages per block (at least {MIN_SCALED_PAGES}); use --scale >= "
                        f"{need:.2g} or a --base profile with more pages_per_block")
    return s


def candidate_sets(keys: list[Key], values: dict, base_values: dict, capacity_bytes: int,
                   spare_pct: float, scaling: Scaling | None = None) -> tuple[list[str], dict]:
    """Profile overrides for one candidate on a drive of ``capacity_bytes`` user capacity (the
    measured one), as ``scaling`` simulates it (None: at full size): ``values`` holds the
    searched keys' values, ``spare_pct`` the spare area (searched or the base's). Returns
    (``KEY=VALUE`` list, realized values of the searched keys on the full drive: spare_pct as
    the whole blocks per plane give it)."""
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
    if scaling is not None and scaling.scaled:
        full = dict(base_values)
        full.update(kv.split("=", 1) for kv in sets)
        small = scaling.overrides(full)
        sets = [kv for kv in sets if kv.split("=", 1)[0] not in small]
        sets += [f"{k}={v if isinstance(v, int) else repr(v)}" for k, v in small.items()]
    return sets, realized
