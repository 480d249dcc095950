"""Drive profiles for the simulator: built-in TOML files and user files, plus overrides.

A profile is a flat TOML table of keys declared by the simulator (``ssdlab profiles --keys``
lists them with their units). A built-in profile is named (``default``); any other profile is
a path to a ``.toml`` file. Keys a profile leaves out take the simulator's defaults (those of
``default``). ``--set KEY=VALUE`` overrides one key for one run; byte keys read sizes as every
ssdlab size (:data:`ssdlab.units.SIZE_RULE`: ``256GB``, ``16KiB``, ``2G`` = 2 GiB).

``--set capacity=16GiB`` makes the same drive smaller (or larger): the NAND scales with the
user capacity, keeping the profile's spare fraction (within 0.4 point) and each plane's spare
for GC, so random writes amplify alike; a small drive has fewer dies and larger planes.
``user_capacity_bytes`` is the low-level key: it changes only what the host can address, so
lowering it adds spare area.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from . import _native
from .errors import ProfileError

BUILTIN_DIR = Path(__file__).parent / "profiles"
@dataclass(frozen=True)
class Profile:
    """A resolved profile: every key's value, the derived geometry, and where it came from."""

    name: str
    #: "builtin:NAME" or the file path.
    source: str
    #: (key, text) pairs as given (file then overrides), for the native simulator.
    pairs: tuple[tuple[str, str], ...]
    #: Every key with its final value.
    values: dict
    #: Derived quantities: dies, planes, physical_bytes, user_bytes, spare_fraction, alpha...;
    #: ``spare_warning`` when the spare area is out of the ordinary (``Config::spare_warning``).
    geometry: dict
    #: Sizes rounded to their key's unit: "WHERE: KEY = TEXT: N bytes is not a multiple...".
    notes: tuple[str, ...] = ()

    @property
    def user_bytes(self) -> int:
        return int(self.geometry["user_bytes"])

    @property
    def warnings(self) -> list[str]:
        """What the command output states about this drive beyond the notes: its spare area
        when out of the ordinary."""
        spare = self.geometry.get("spare_warning")
        return [f"{self.source}: {spare}"] if spare else []


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.toml"))


def list_profiles() -> list[tuple[str, str]]:
    """(name, description) of every built-in profile."""
    out = []
    for name in builtin_names():
        data = _read_toml(BUILTIN_DIR / f"{name}.toml")
        out.append((name, str(data.get("description", ""))))
    return out


def keys() -> list[tuple[str, str, str]]:
    """(name, kind, meaning with unit and the values it accepts) of every profile key."""
    ranges = dict(_native.profile_key_ranges())
    return [(name, kind, f"{doc} Valid: {ranges[name]}.") for name, kind, doc in _native.profile_keys()]


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except RecursionError:
        raise ProfileError(f"{too_deep(path)}; profiles are flat key = value tables") from None
    except FileNotFoundError:
        raise ProfileError(
            f"{path}: no such profile file; built-in profiles are {', '.join(builtin_names())}"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise ProfileError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        raise ProfileError(f"{path}: not UTF-8 text (byte {e.start}: {e.object[e.start:e.start + 1]!r}); "
                           "TOML files are UTF-8") from None
    except OSError as e:
        raise ProfileError(f"{path}: cannot read the profile: {e.strerror or e}") from None


_KEY_LINE = re.compile(r"\s*([A-Za-z0-9_.\-]+|\"[^\"]*\"|'[^']*')\s*=")


_TABLE_LINE = re.compile(r"\s*\[+\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')")


def _key_lines(path: Path) -> dict[str, int]:
    """The line of each top-level key of a TOML file (where it is first written; a table
    header or a dotted key counts for its first part), for messages."""
    lines: dict[str, int] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
        m = _KEY_LINE.match(line) or _TABLE_LINE.match(line)
        if m:
            lines.setdefault(m.group(1).strip("\"'").split(".")[0], lineno)
    return lines


def too_deep(path: Path) -> str:
    """Where a TOML file nests arrays or inline tables too deeply for Python's TOML reader
    (it recurses once per level and runs out of stack at about a thousand): "PATH:LINE: key
    `KEY`: values nested N deep, too deep to read" for the deepest value."""
    depth, deepest, start = 0, (0, 0, ""), (0, "")
    quote = ""
    text = path.read_text(encoding="utf-8", errors="replace")
    for lineno, line in enumerate(text.splitlines(), start=1):
        if depth == 0:
            m = _KEY_LINE.match(line)
            start = (lineno, m.group(1) if m else "")
        i = 0
        while i < len(line):
            c = line[i]
            if quote:
                if c == "\\" and quote == '"':
                    i += 1
                elif c == quote:
                    quote = ""
            elif c in "\"'":
                quote = c
            elif c == "#":
                break
            elif c in "[{" and (depth or "=" in line[:i]):
                depth += 1
                if depth > deepest[0]:
                    deepest = (depth, *start)
            elif c in "]}" and depth:
                depth -= 1
            i += 1
        quote = ""  # a string does not go on past its line (multi-line strings hold no brackets that count)
    levels, lineno, key = deepest
    return f"{path}:{lineno}: key `{key}`: values nested {levels} deep, too deep to read"


def _text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _locate(spec: str) -> tuple[Path, str]:
    if spec.endswith(".toml") or "/" in spec:
        return Path(spec), str(spec)
    path = BUILTIN_DIR / f"{spec}.toml"
    if not path.exists():
        raise ProfileError(
            f"unknown profile {spec!r}: built-in profiles are {', '.join(builtin_names())}; "
            "or give a path to a .toml file"
        )
    return path, f"builtin:{spec}"


def parse_override(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` -> (key, value)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ProfileError(f"--set {text!r}: expected KEY=VALUE, e.g. --set gc_policy=fifo")
    return key.strip(), value.strip()


def load_profile(spec: str = "default", overrides: list[str] | tuple[str, ...] = ()) -> Profile:
    """Loads a built-in or file profile, applies ``KEY=VALUE`` overrides, validates.

    Errors name the file (or the ``--set`` option) and the key, and say what is expected.
    """
    path, source = _locate(spec)
    data = _read_toml(path)
    lines = _key_lines(path)

    def at(key: str) -> str:
        return f"{path}:{lines[key]}" if key in lines else str(path)

    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    for key, value in data.items():
        if isinstance(value, (dict, list)):
            raise ProfileError(f"{at(key)}: key `{key}`: profiles are flat key = value tables; got a {type(value).__name__}")
        notes += _check(at(key), key, _text(value))
        pairs.append((key, _text(value)))
    try:
        _native.resolve_profile(pairs)
    except _native.ProfileError as e:
        named = re.search(r"`([^`]+)`", e.args[0])
        raise ProfileError(f"{at(named.group(1)) if named else path}: {e.args[0]}") from None
    for text in overrides:
        key, value = parse_override(text)
        notes += _check(f"--set {text}", key, value)
        pairs.append((key, value))
    try:
        values, geometry = _native.resolve_profile(pairs)
    except _native.ProfileError as e:
        where = "--set " + ", ".join(overrides) if overrides else str(path)
        raise ProfileError(f"{where} (profile {path}): {e.args[0]}") from None
    return Profile(name=str(values["name"]), source=source, pairs=tuple(pairs), values=dict(values),
                   geometry=dict(geometry), notes=tuple(notes))


def _check(where: str, key: str, value: str) -> list[str]:
    """Refuses an unknown key or a value its key cannot read, naming ``where``; the note on
    a size rounded to its key's unit, if any."""
    try:
        note = _native.check_value(key, value)
    except _native.ProfileError as e:
        raise ProfileError(f"{where}: {e.args[0]}") from None
    return [f"{where}: {note}"] if note else []

