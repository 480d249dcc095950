"""Parameters declared once: a frozen dataclass whose fields are made by :func:`param` (name
with its unit, type, default, allowed range, command-line flag and help), from which the
command line (:func:`add_arguments`, :func:`from_args`), the range checks (:func:`check`) and
the summary's fields (:func:`as_summary`) all come. The tests (:mod:`ssdlab.procedures.declare`)
and the built-in workloads (:mod:`ssdlab.workload.named`) declare theirs with it.
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from dataclasses import dataclass
from typing import Any, Callable

from .errors import UserError
from .units import parse_size, parse_time_s, round_to

#: Dataclass field metadata key holding a field's :class:`Param`.
_KEY = "ssdlab.param"

#: Largest seed: the simulator takes unsigned 64-bit seeds and fio reads ``randseed`` with
#: strtoll, so seeds are whole numbers in [0, 2**63 - 1] (a test derives a second seed as
#: seed + 1, which still fits the simulator).
SEED_MAX = 2**63 - 1
#: Most intervals one series may hold (duration / interval): a run keeps about 1 KB of
#: memory per interval while it writes its results (series, Parquet, CSV, plots), so 1 GB.
#: A longer duration needs a longer interval.
MAX_SERIES_POINTS = 1_000_000
#: Longest timed phase an option asks for [s]: one week.
MAX_DURATION_S = 7 * 86400.0
#: Deepest queue an option asks for [commands]: Linux's NVMe driver queues 1023 commands
#: per queue by default, SATA NCQ 32.
MAX_QD = 1024
#: Most a phase sized in bytes transfers, in spans (the part of the drive under test): 100.
#: Beyond it a run takes days on the simulator.
MAX_SPANS = 100


@dataclass(frozen=True)
class Param:
    """How one parameter appears on the command line and what values it accepts."""

    #: ``--duration``; None for a parameter the command line sets otherwise (``seed``: ``--seed``).
    flag: str | None
    help: str
    #: Unit of the value, for ``--help`` and messages: "s", "bytes", "%", "" for a count.
    unit: str = ""
    #: Text -> value (default: the field's type: int, float, str; sizes: :func:`size`).
    parse: Callable[[str], Any] | None = None
    #: Allowed range: ``low``/``high`` bounds, each inclusive unless ``*_open``.
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    #: The value must be a whole multiple of this (e.g. 4096 bytes).
    multiple_of: int | None = None
    choices: tuple | None = None
    metavar: str | None = None
    #: A boolean switch that turns the parameter off (``--no-read`` for ``read=True``).
    off_switch: bool = False
    #: The default as ``--help`` says it, where the value alone does not say it well.
    default_text: str | None = None
    #: A positional argument (``flag`` is its metavar, e.g. ``JOB``); optional when it has a
    #: default.
    positional: bool = False
    #: A switch (``--list``): True when given.
    switch: bool = False
    #: For a duration (unit ``s`` or ``min``) that fills a series: the name of the field
    #: holding the series interval [s]; duration / interval is at most
    #: :data:`MAX_SERIES_POINTS`.
    series_interval: str | None = None

    def range_text(self) -> str:
        """"> 0", "in (0, 100]", ">= 1", "" for none."""
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            return f"in {'(' if self.low_open else '['}{_num(lo)}, {_num(hi)}{')' if self.high_open else ']'}"
        if lo is not None:
            return f"{'>' if self.low_open else '>='} {_num(lo)}"
        if hi is not None:
            return f"{'<' if self.high_open else '<='} {_num(hi)}"
        return ""


def _num(v) -> str:
    """A number as messages and ``--help`` show it: whole numbers exactly (a very long one
    cut, with its count of digits), others as ``:g``."""
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e16):
        text = str(int(v))
        return text if len(text) <= 20 else f"{text[:12]}... ({len(text.lstrip('-'))} digits)"
    return f"{v:g}"


def param(default: Any, flag: str | None, help: str, **kw) -> Any:
    """A declared parameter: a dataclass field with ``default`` whose :class:`Param` is built
    from ``flag``, ``help`` and the keywords (``unit``, ``low``, ``high``, ``low_open``,
    ``multiple_of``, ``choices``, ``parse``, ``metavar``, ``off_switch``, ``default_text``,
    ``positional``, ``switch``, ``series_interval``). A
    ``parse`` may return a dict: the option then sets those fields (one option for a choice
    between two fields, e.g. bytes or a multiple of the span)."""
    return dataclasses.field(default=default, metadata={_KEY: Param(flag, help, **kw)})


def like(params_cls, name: str, **changes) -> Any:
    """The parameter ``name`` of another test's ``params_cls`` (flag, help, unit, range...), for
    a test that passes it on (``review`` gives its ``--zones`` to ``recovery``); ``default``
    and :class:`Param` keywords in ``changes`` replace the original's."""
    f = next(f for f in dataclasses.fields(params_cls) if f.name == name)
    default = changes.pop("default", f.default)
    return dataclasses.field(default=default, metadata={_KEY: dataclasses.replace(f.metadata[_KEY], **changes)})


class TypedSize(int):
    """A byte count read from the command line that keeps the ``text`` typed, for messages."""

    text: str


def size(text: str) -> int:
    """A byte count from the command line (:func:`ssdlab.units.parse_size`), as a
    :class:`TypedSize`."""
    try:
        n = TypedSize(parse_size(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    n.text = text
    return n


def number(kind: type = float, low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, unit: str = "") -> Callable[[str], Any]:
    """An argparse ``type`` for a command's numeric option outside a declared test: parses
    ``kind`` (int, float, or :func:`size` for bytes) and checks the range, so a bad value is an
    error naming the option (argparse prefixes ``argument --flag:``) before anything is read
    or run. The callable's ``param`` holds the range (a :class:`Param`)."""
    rng = Param(None, "", unit=unit, low=low, high=high, low_open=low_open, high_open=high_open)

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}") \
                from None
        bad = _problem(rng, v, typed=getattr(v, "text", None))
        if bad:
            raise argparse.ArgumentTypeError(bad)
        return v

    parse.__name__ = kind.__name__
    parse.param = rng
    return parse


#: ``--seed`` of every command: a whole number in [0, :data:`SEED_MAX`].
seed = number(int, 0, SEED_MAX)


def at_most(flag: str, value_bytes: int, limit_bytes: int, what: str) -> None:
    """A size option against what the target allows (known once the target is open):
    :class:`UserError` "FLAG V bytes: more than WHAT (L bytes)" when ``value_bytes`` >
    ``limit_bytes``."""
    if value_bytes > limit_bytes:
        raise UserError(f"{flag} {_num(value_bytes)} bytes: more than {what} ({_num(limit_bytes)} bytes)")


def declared(params_cls) -> list[tuple[dataclasses.Field, Param]]:
    """The declared fields of a parameters dataclass, in order."""
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(params_cls) if _KEY in f.metadata]


def _unit_text(p: Param, value: Any) -> str:
    if p.unit == "bytes" and isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        k = value // 1024
        return f"{value} bytes = {k // 1024} MiB" if k % 1024 == 0 else f"{value} bytes = {k} KiB"
    return f"{_num(value)}{_unit(p)}" if _is_number(value) else str(value)


def _metavar(p: Param) -> str | None:
    """SIZE for sizes, S for seconds, PCT for percentages, None (argparse's ``{a,b}``) for a
    choice, N otherwise."""
    if p.choices:
        return None
    if p.parse is size:
        return "SIZE"
    return {"s": "S", "%": "PCT"}.get(p.unit, "N")


def _unit(p: Param) -> str:
    return f" {p.unit}" if p.unit else ""


def _parse_of(f: dataclasses.Field, p: "Param | None" = None) -> Callable[[str], Any]:
    """int or float for a field of that type (also ``int | None``), else str; a float in
    seconds or minutes (unit ``s`` or ``min``) also takes fio's time forms (``10m``,
    ``500ms``: :func:`ssdlab.units.parse_time_s`)."""
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    kind = {"int": int, "float": float}.get(name.removesuffix(" | None"), str)
    if kind is float and p is not None and p.unit in ("s", "min"):
        per = 60.0 if p.unit == "min" else 1.0

        def duration(text: str) -> float:
            try:
                return parse_time_s(text, per) / per
            except ValueError as e:
                raise argparse.ArgumentTypeError(str(e)) from None

        duration.__name__ = "time"
        return duration
    return kind


class Parser(argparse.ArgumentParser):
    """argparse's parser for every ssdlab command line, with one mend: an option given ``--``
    as its value (``--bs=--``) is an error naming the option. Python 3.11's argparse drops
    that ``--`` and hands the option an empty list instead of a value."""

    def _get_values(self, action, arg_strings):
        if action.option_strings and action.nargs in (None, argparse.OPTIONAL) and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected a value, got '--'")
        return super()._get_values(action, arg_strings)


def add_arguments(parser: argparse.ArgumentParser, params_cls) -> None:
    """One option per declared parameter: its flag, type, metavar and a help that ends with the
    unit, the allowed range and the default."""
    for f, p in declared(params_cls):
        if p.flag is None:
            continue
        if p.off_switch or p.switch:
            parser.add_argument(p.flag, dest=f.name, action="store_false" if p.off_switch else "store_true",
                                default=f.default, help=p.help.replace("%", "%%"))
            continue
        if p.positional:
            parser.add_argument(f.name, nargs=None if f.default is dataclasses.MISSING else "?", default=f.default,
                                type=p.parse or str, metavar=p.flag, help=p.help.replace("%", "%%"))
            continue
        parse = p.parse or _parse_of(f, p)
        ranged = {"action": _Checked, "param": p} if p.range_text() or p.multiple_of else {}
        extra = [f"default: {p.default_text or _unit_text(p, f.default)}"]
        if p.range_text():
            extra.append(f"must be {p.range_text()}{_unit(p)}")
        if p.multiple_of:
            extra.append(f"{'rounded to ' if parse is size else ''}a multiple of {p.multiple_of}")
        if getattr(parse, "__name__", "") == "time":
            extra.append("or with a unit: 500ms, 90s, 10m, 1h")
        text = f"{p.help} ({'; '.join(extra)})"
        parser.add_argument(p.flag, dest=f.name, type=parse, default=f.default, choices=p.choices,
                            metavar=p.metavar or _metavar(p), help=text.replace("%", "%%"), **ranged)


class _Checked(argparse.Action):
    """Stores a declared number (also a size) after its range check, so a value out of range
    is an error naming the option as :func:`check` words it, before any file is read or run.
    A size (:class:`TypedSize`) that must be a multiple of a unit (``multiple_of``) is first
    rounded to the nearest (:func:`ssdlab.units.round_to`) with a note on stderr naming the
    option, the text typed and the bytes used; its errors echo the text typed."""

    def __init__(self, *args, param: Param, **kw):
        super().__init__(*args, **kw)
        self.param = param

    def __call__(self, parser, namespace, values, option_string=None):
        typed = getattr(values, "text", None)
        if typed is not None:
            values, step = int(values), self.param.multiple_of
            if step and round_to(values, step) != values:
                print(f"ssdlab: note: {option_string} {typed}: {values} bytes is not a multiple of {step}; "
                      f"using {round_to(values, step)} bytes", file=sys.stderr)
                values = round_to(values, step)
        bad = _problem(self.param, values, typed=typed)
        if bad:
            parser.error(f"{option_string} {bad}")
        setattr(namespace, self.dest, values)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _problem(p: Param, v, typed: str | None = None) -> str | None:
    """"V: must be in [lo, hi] unit" (or "a whole multiple of N") when the number ``v`` is
    not finite, outside ``p``'s range or not a multiple it must be; None when it is fine or
    not a number. V is ``typed``, the text the user gave, where there is one (with the
    value it reads as where that differs). Whole numbers of any size compare exactly."""
    if not _is_number(v):
        return None
    shown = _num(v) if typed is None or typed.strip() == _num(v) else f"{typed} (= {_num(v)}{_unit(p)})"
    lo, hi = p.low, p.high
    if (isinstance(v, float) and not math.isfinite(v)) or (lo is not None and (v <= lo if p.low_open else v < lo)) or (
            hi is not None and (v >= hi if p.high_open else v > hi)):
        return f"{shown}: must be {p.range_text()}{_unit(p)}"
    if p.multiple_of and v % p.multiple_of:
        return f"{shown}: must be a whole multiple of {p.multiple_of}{_unit(p)}"
    return None


def check(params) -> None:
    """Range checks of every declared parameter: :class:`UserError` naming the option, the
    value and the allowed range; a duration that fills a series (``series_interval``) is
    also checked against :data:`MAX_SERIES_POINTS`."""
    fields = declared(type(params))
    for f, p in fields:
        bad = _problem(p, getattr(params, f.name))
        if bad:
            raise UserError(f"{p.flag or f.name} {bad}")
    for f, p in fields:
        v = getattr(params, f.name)
        name = p.flag or f.name
        if p.series_interval and _is_number(v):
            interval_s = getattr(params, p.series_interval)
            points = v * (60 if p.unit == "min" else 1) / interval_s
            if points > MAX_SERIES_POINTS:
                flag = next(q.flag for g, q in fields if g.name == p.series_interval)
                raise UserError(f"{name} {_num(v)} {p.unit} at {flag} {_num(interval_s)} s is {points:,.0f} intervals; "
                                f"a series holds at most {MAX_SERIES_POINTS:,} (about 1 KB of memory each): "
                                f"use a longer {flag} or a shorter {name}")


def from_args(params_cls, args: argparse.Namespace, **given):
    """The parameters the command line asked for (``given`` sets the others, e.g. ``seed``),
    range-checked."""
    values: dict[str, Any] = {}
    for f, p in declared(params_cls):
        if p.flag is not None and hasattr(args, f.name):
            v = getattr(args, f.name)
            values.update(v if isinstance(v, dict) else {f.name: v})
    values.update(given)
    params = params_cls(**values)
    check(params)
    return params


def as_summary(params) -> dict:
    """The declared parameters as summary fields (``{name: value}``; names carry units)."""
    return {f.name: getattr(params, f.name) for f, _ in declared(type(params))}
