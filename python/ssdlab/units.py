"""Sizes as users write them: one grammar for the command line, grid files and profile
overrides (the simulator's profile parser reads the same, see ``ssdsim::config::parse_size``).

``K``, ``M``, ``G``, ``T`` are powers of 1000 (a 256G drive holds 256 x 10**9 bytes, as drive
makers count) and ``KiB``, ``MiB``, ``GiB``, ``TiB`` powers of 1024 (4KiB = 4096 bytes); a
trailing ``B`` is optional and case does not matter; a fraction is allowed when the result is
a whole number of bytes (``1.5KiB``).
"""
from __future__ import annotations

import re

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*", re.IGNORECASE)
_MULT = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
         "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}


def parse_size(text: str | int) -> int:
    """Bytes of ``text`` (see the module docstring). Raises ValueError saying what is wrong."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE.fullmatch(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a size: use bytes or 4KiB, 128KiB, 1MiB, 8G (K/M/G/T powers of 1000, "
                         "KiB/MiB/GiB/TiB powers of 1024)")
    value = float(m.group(1)) * _MULT[(m.group(2) or "").upper().rstrip("B")]
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    return int(value)


def format_size(n: int) -> str:
    """The shortest exact spelling of ``n`` bytes that :func:`parse_size` reads back: powers of
    1000 first (``64000000`` -> ``64M``), then powers of 1024 (``268435456`` -> ``256MiB``),
    else plain bytes."""
    if n:
        for unit in ("T", "G", "M", "K", "TI", "GI", "MI", "KI"):
            if n % _MULT[unit] == 0:
                return f"{n // _MULT[unit]}{unit[0]}{'iB' if unit.endswith('I') else ''}"
    return str(n)
