"""Sizes as users write them: one rule for the command line, grid files and profile values
(the simulator's profile parser reads the same, see ``ssdsim::config::parse_size``).

The rule is GNU coreutils' (``truncate -s``, ``dd``, ``losetup``): :data:`SIZE_RULE`. ``K``,
``M``, ``G``, ``T`` and ``KiB``, ``MiB``, ``GiB``, ``TiB`` are powers of 1024 (``4k`` = 4096),
``KB``, ``MB``, ``GB``, ``TB`` powers of 1000 (a 256GB drive holds 256 x 10**9 bytes, as drive
makers count); a plain number (or one ending in ``B``) is bytes; case does not matter; a
fraction is allowed when the result is a whole number of bytes (``1.5KiB``); at most
:data:`MAX_SIZE_BYTES`. fio job files keep fio's own reading (:mod:`ssdlab.workload.fiojob`).
"""
from __future__ import annotations

import re
from decimal import Decimal

#: Largest size anything takes [bytes]: 2**63 - 1 (8 EiB), what fio (strtoll) and a signed
#: 64-bit offset hold.
MAX_SIZE_BYTES = 2**63 - 1
#: Largest I/O request a test or a job sends [bytes]: 256 MiB. A kernel splits requests
#: above its max_sectors_kb (at most a few MiB) anyway, and fio keeps iodepth of them in
#: memory.
MAX_BS_BYTES = 256 * 2**20

#: How every ssdlab size is read, in words (``--help``, README, messages).
SIZE_RULE = ("sizes are bytes, or a number with a unit as GNU coreutils read it (truncate -s, dd): K, M, G, T and "
             "KiB, MiB, GiB, TiB are powers of 1024 (4k = 4KiB = 4096), KB, MB, GB, TB powers of 1000 "
             "(256GB = 256 x 10^9)")

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])(i?B|i)?|B)?\s*", re.IGNORECASE | re.ASCII)


def parse_size(text: str | int) -> int:
    """Bytes of ``text`` (see the module docstring). Raises ValueError saying what is wrong."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise ValueError(f"{_cut(str(text))!r} is not a size: {SIZE_RULE}")
    unit, tail = (m.group(2) or "").upper(), (m.group(3) or "").upper()
    power = "KMGT".index(unit) + 1 if unit else 0
    value = Decimal(m.group(1)) * (1000 if tail == "B" else 1024) ** power
    if value != value.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if value > MAX_SIZE_BYTES:
        raise ValueError(f"{_cut(str(text))!r} is more than {MAX_SIZE_BYTES} bytes (8 EiB), the largest size there is")
    return int(value)


def round_to(value: int, step: int) -> int:
    """``value`` rounded to the nearest multiple of ``step`` (halves up); ``value`` itself where
    that is 0 (less than half a step is not a size to round up: a range check refuses it).
    The simulator rounds its capacity keys alike (``Range::round``)."""
    nearest = (value + step // 2) // step * step
    return nearest or value


def _cut(text: str, keep: int = 24) -> str:
    """``text``, shortened to ``keep`` characters and '...' when longer."""
    return text if len(text) <= keep else text[:keep] + "..."


def format_size(n: int) -> str:
    """The shortest exact spelling of ``n`` bytes that :func:`parse_size` reads back
    (``268435456`` -> ``256MiB``, ``64000000`` -> ``64MB``, ``4095`` -> ``4095``): plain bytes, then
    powers of 1024, where two are as short."""
    spellings = [str(n)] + [f"{n // base**power}{unit}{suffix}" for base, suffix in ((1024, "iB"), (1000, "B"))
                            for power, unit in ((4, "T"), (3, "G"), (2, "M"), (1, "K")) if n and n % base**power == 0]
    return min(spellings, key=len)


#: fio's time units [s]: ``us``, ``ms``, ``s``, ``m`` (minutes), ``h``, ``d``; also ``min``.
TIME_UNITS_S = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0,
                "h": 3600.0, "d": 86400.0}
_TIME = re.compile(r"\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*")


def parse_time_s(text: str | float, default_unit_s: float = 1.0) -> float:
    """Seconds of a time as users write them on the command line: a number in the option's
    own unit (``default_unit_s`` seconds: 1 for ``--duration``, 60 for ``--idle-min``) or with
    one of fio's units (:data:`TIME_UNITS_S`: ``10m``, ``1h``, ``500ms``). ValueError saying
    what is wrong."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text) * default_unit_s
    m = _TIME.fullmatch(str(text))
    unit = m.group(2).lower() if m else ""
    if not m or (unit and unit not in TIME_UNITS_S):
        raise ValueError(f"{_cut(str(text))!r} is not a time: write a number, or one with a unit of us, ms, s, m "
                         "(minutes), h or d (600, 10m, 1h, 500ms)")
    return float(m.group(1)) * (TIME_UNITS_S[unit] if unit else default_unit_s)



#: Units of :func:`human_size`: decimal (as drive makers and MB/s count) and binary.
_DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB", "EB")
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_size(n: int) -> str:
    """``n`` bytes for people to read in the console: three significant digits of the largest
    decimal unit (``256 GB``, ``34.4 GB``, ``1.00 GB`` for 999,997,440 bytes; digits are dropped
    only when exact), followed by the binary size when that is exact and the decimal one is
    not (``34.4 GB (32 GiB)``, ``131 kB (128 KiB)``). Not for reading back: see
    :func:`format_size` for that."""
    n = int(n)
    if abs(n) < 1000:
        return f"{n} B"
    k = 0
    while k + 1 < len(_DECIMAL_UNITS) and abs(n) >= 1000 ** (k + 1) * 0.9995:  # 999.6 MB reads 1.00 GB
        k += 1
    value = n / 1000**k
    digits = 0 if abs(value) >= 99.95 else 1 if abs(value) >= 9.995 else 2
    text = f"{value:.{digits}f}"
    exact = Decimal(n) / Decimal(1000**k)
    if Decimal(text) == exact:  # exact: no trailing zeros
        return f"{exact.normalize():f} {_DECIMAL_UNITS[k]}"
    b = max((i for i in range(1, len(_BINARY_UNITS)) if abs(n) >= 1024**i), default=0)
    whole = Decimal(n) / Decimal(1024**b)
    if b and whole == whole.quantize(Decimal("0.01")):  # at most two decimals: 1.5 GiB
        return f"{text} {_DECIMAL_UNITS[k]} ({whole.normalize():f} {_BINARY_UNITS[b]})"
    return f"{text} {_DECIMAL_UNITS[k]}"
