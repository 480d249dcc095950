"""A test declared once: its parameters and what it is, from which the command line, ``--help``,
the range checks, the ``--dry-run`` plan and the summary's parameter fields all come (as fio
declares each option once, in one table entry).

A test module under :mod:`ssdlab.procedures` declares

* its parameters as a frozen dataclass whose fields are made by :func:`param`: name (the
  field, with its unit: ``duration_s``, ``bs_bytes``), type, unit, default, allowed range,
  command-line flag and help;
* ``TEST = Test(name, help, description, Params, plan, run, show)``: the subcommand's name and
  texts, the parameters, ``plan(target, params) -> [JobSpec...]`` (the phases, for ``--dry-run``
  and for checking the options against the target before anything runs),
  ``run(target, params, results_dir, argv=, progress=) -> summary`` and ``show(summary)`` (the
  few lines printed at the end).

The CLI finds every such module (:func:`tests`) and builds its subcommand from the declaration:
adding a test is adding one file.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import math
import pkgutil
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Callable

from ..errors import UserError
from ..units import parse_size

#: Dataclass field metadata key holding a field's :class:`Param`.
_KEY = "ssdlab.param"


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

    def range_text(self) -> str:
        """"> 0", "in (0, 100]", ">= 1", "" for none."""
        lo, hi = self.low, self.high
        if lo is not None and hi is not None:
            return f"in {'(' if self.low_open else '['}{lo:g}, {hi:g}{')' if self.high_open else ']'}"
        if lo is not None:
            return f"{'>' if self.low_open else '>='} {lo:g}"
        if hi is not None:
            return f"{'<' if self.high_open else '<='} {hi:g}"
        return ""


def param(default: Any, flag: str | None, help: str, **kw) -> Any:
    """A declared parameter: a dataclass field with ``default`` whose :class:`Param` is built
    from ``flag``, ``help`` and the keywords (``unit``, ``low``, ``high``, ``low_open``,
    ``multiple_of``, ``choices``, ``parse``, ``metavar``, ``off_switch``, ``default_text``,
    ``positional``, ``switch``). A
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


def size(text: str) -> int:
    """A byte count from the command line (:func:`ssdlab.units.parse_size`)."""
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def number(kind: type = float, low: float | None = None, high: float | None = None, *, low_open: bool = False,
           high_open: bool = False, unit: str = "") -> Callable[[str], Any]:
    """An argparse ``type`` for a command's numeric option outside a declared test: parses
    ``kind`` and checks the range, so a bad value is an error naming the option (argparse
    prefixes ``argument --flag:``) before anything is read or run."""
    rng = Param(None, "", unit=unit, low=low, high=high, low_open=low_open, high_open=high_open)

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {'a whole number' if kind is int else 'a number'}") \
                from None
        bad = _out_of_range(rng, v)
        if bad:
            raise argparse.ArgumentTypeError(bad)
        return v

    parse.__name__ = kind.__name__
    return parse


def declared(params_cls) -> list[tuple[dataclasses.Field, Param]]:
    """The declared fields of a parameters dataclass, in order."""
    return [(f, f.metadata[_KEY]) for f in dataclasses.fields(params_cls) if _KEY in f.metadata]


def _unit_text(p: Param, value: Any) -> str:
    if p.unit == "bytes" and isinstance(value, int) and value >= 1024 and value % 1024 == 0:
        k = value // 1024
        return f"{value} bytes = {k // 1024} MiB" if k % 1024 == 0 else f"{value} bytes = {k} KiB"
    return f"{value:g}{_unit(p)}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


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


def _parse_of(f: dataclasses.Field) -> Callable[[str], Any]:
    """int or float for a field of that type (also ``int | None``), else str."""
    name = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return {"int": int, "float": float}.get(name.removesuffix(" | None"), str)


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
        parse = p.parse or _parse_of(f)
        ranged = {"action": _Checked, "param": p} if parse in (int, float) and p.range_text() else {}
        extra = [f"default: {p.default_text or _unit_text(p, f.default)}"]
        if p.range_text():
            extra.append(f"must be {p.range_text()}{_unit(p)}")
        if p.multiple_of:
            extra.append(f"a multiple of {p.multiple_of}")
        text = f"{p.help} ({'; '.join(extra)})"
        parser.add_argument(p.flag, dest=f.name, type=parse, default=f.default, choices=p.choices,
                            metavar=p.metavar or _metavar(p), help=text.replace("%", "%%"), **ranged)


class _Checked(argparse.Action):
    """Stores a declared number after its range check, so a value out of range is an error
    naming the option as :func:`check` words it, before any file is read or run."""

    def __init__(self, *args, param: Param, **kw):
        super().__init__(*args, **kw)
        self.param = param

    def __call__(self, parser, namespace, values, option_string=None):
        bad = _out_of_range(self.param, values)
        if bad:
            parser.error(f"{option_string} {bad}")
        setattr(namespace, self.dest, values)


def _out_of_range(p: Param, v) -> str | None:
    """"V: must be in [lo, hi] unit" when ``v`` is outside ``p``'s range, else None."""
    lo, hi = p.low, p.high
    if not math.isfinite(v) or (lo is not None and (v <= lo if p.low_open else v < lo)) or (
            hi is not None and (v >= hi if p.high_open else v > hi)):
        return f"{v:g}: must be {p.range_text()}{_unit(p)}"
    return None


def check(params) -> None:
    """Range checks of every declared parameter: :class:`UserError` naming the option, the
    value and the allowed range."""
    for f, p in declared(type(params)):
        v = getattr(params, f.name)
        if v is None or isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        name = p.flag or f.name
        bad = _out_of_range(p, v)
        if bad:
            raise UserError(f"{name} {bad}")
        if p.multiple_of and v % p.multiple_of:
            raise UserError(f"{name} {v:g}: must be a whole multiple of {p.multiple_of}{_unit(p)}")


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


@dataclass(frozen=True)
class Test:
    """One test: its subcommand, texts, parameters and functions (see the module docstring)."""

    name: str
    help: str
    description: str
    params: type
    plan: Callable
    run: Callable
    show: Callable[[dict], None]
    #: Name of a field (a tuple of str) that takes the arguments the declared options do not
    #: match (``ssdlab run --rw=randrw --bs=4k``: fio's own options), or None: they are errors.
    passthrough: str | None = None
    #: ``early(params) -> int | None``: runs before a target is opened (``--list``); an int
    #: ends the command with that exit status, None goes on.
    early: Callable[[Any], int | None] | None = None
    #: Whether the test writes a results folder (``--out`` is required then).
    needs_out: bool = True
    #: ``print_plan(target, params)`` for ``--dry-run`` where the phases alone do not say
    #: enough (default: the plan's phases and their fio job files).
    print_plan: Callable | None = None
    #: The command this test is a subcommand of (``trace`` for ``ssdlab trace run``), which
    #: builds it from this declaration; None: a command of its own.
    parent: str | None = None
    #: ``headline(summary, folder) -> [(label, unit, value), ...]``: the figures that say
    #: what the run found, for ``ssdlab compare`` (units as :func:`ssdlab.report.format_value`
    #: takes them: "IOPS", "MB/s", "s", "%", "GB", "share"...); None: none beyond the common ones.
    headline: Callable[[dict, Any], list[tuple[str, str, Any]]] | None = None

    @property
    def summary_name(self) -> str:
        """The ``test`` field of this test's summaries (``trace`` for ``ssdlab trace run``)."""
        return self.parent or self.name


def by_summary_name() -> dict[str, Test]:
    """Every declared test (subcommands included) by the ``test`` field of its summaries."""
    return {t.summary_name: t for t in tests(parent=...)}


def tests(only: str | None = None, parent: str | None | EllipsisType = None) -> list[Test]:
    """Every test declared by a module of :mod:`ssdlab.procedures` (a module-level ``TEST``), or
    only the one of module ``only``; the commands of their own, or the subcommands of command
    ``parent`` (``...``: all of them)."""
    from .. import procedures

    found = []
    for info in pkgutil.iter_modules(procedures.__path__):
        if only is not None and info.name != only:
            continue
        mod = importlib.import_module(f"{procedures.__name__}.{info.name}")
        t = getattr(mod, "TEST", None)
        if isinstance(t, Test) and (parent is ... or t.parent == parent):
            found.append(t)
    return sorted(found, key=lambda t: t.name)
