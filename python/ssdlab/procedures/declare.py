"""A test declared once: its parameters and what it is, from which the command line, ``--help``,
the range checks, the ``--dry-run`` plan and the summary's parameter fields all come (as fio
declares each option once, in one table entry).

A test module under :mod:`ssdlab.procedures` declares

* its parameters as a frozen dataclass whose fields are made by :func:`~ssdlab.params.param`: name (the
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

import importlib
import pkgutil
from dataclasses import dataclass
from types import EllipsisType
from typing import Any, Callable

from ..charts import Metric  # noqa: F401 - the figures a test declares
from ..params import (  # noqa: F401 - the vocabulary the tests declare their parameters with
    MAX_DURATION_S, MAX_QD, MAX_SERIES_POINTS, MAX_SPANS, SEED_MAX, Param, TypedSize, add_arguments, as_summary,
    at_most, check, declared, from_args, like, number, param, seed, size,
)


def headline_of(metrics: tuple[Metric, ...]) -> Callable[[dict, Any], list[tuple[str, str, Any]]]:
    """A :attr:`Test.headline` giving the ``metrics`` marked as headline figures, in order."""
    chosen = [m for m in metrics if m.headline]

    def headline(s: dict, folder=None) -> list[tuple[str, str, Any]]:
        return [(m.label, m.unit, m.shown(s)) for m in chosen]

    return headline


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
    #: Whether the test purges the drive (``--purge`` says how); False: it meets the drive as
    #: it is, and the command line offers no ``--purge``.
    purges: bool = True
    #: The figures its summary holds that grids tabulate and plot (:class:`Metric`); a
    #: ``headline`` made by :func:`headline_of` gives those marked as headline figures.
    metrics: tuple[Metric, ...] = ()

    @property
    def summary_name(self) -> str:
        """The ``test`` field of this test's summaries (``trace`` for ``ssdlab trace run``)."""
        return self.parent or self.name


def by_summary_name() -> dict[str, Test]:
    """Every declared test (subcommands included) by the ``test`` field of its summaries."""
    return {t.summary_name: t for t in tests(parent=...)}


def metrics_by_test() -> dict[str, tuple[Metric, ...]]:
    """The figures every declared test declares, by the ``test`` field of its summaries (what
    :func:`ssdlab.report.write_report` labels and orders a run's figures by)."""
    return {name: t.metrics for name, t in by_summary_name().items()}


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
