"""What a test outputs, declared once: its figures (:class:`Metric`), which the report's
tables, ``ssdlab compare`` and ``ssdlab grid`` label, scale and order by, and its charts of its
results series, drawn by both renderers: the PNG and SVG files
(:func:`ssdlab.plots.chart_files`) and the report's interactive chart (the ``plot`` hint
:meth:`Chart.hint` puts in ``summary.json``, see :mod:`ssdlab.report`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Metric:
    """One figure of a test's summary: its summary key (its unit in the name:
    ``host_write_bytes``), label, the unit it is shown in as
    :func:`ssdlab.report.format_value` takes it ("IOPS", "MB/s", "s", "%", "GB", "µs",
    "share" for a 0..1 share; "" for a count or a ratio), ``scale`` from the summary's unit to
    that one (1e-9: bytes shown as GB), where it is in ``summary.json`` (default: the key, a
    dot reading a nested object: ``latency_us.p99``; an int in a path indexes a list), the
    decimals of the tables that round it (None: three significant digits) and whether it is
    one of the headline figures that say what the run found (``ssdlab compare`` shows
    those)."""

    key: str
    label: str
    unit: str = ""
    path: tuple[str | int, ...] = ()
    headline: bool = False
    scale: float = 1.0
    decimals: int | None = None

    @property
    def where(self) -> tuple[str | int, ...]:
        """Its path in ``summary.json``: :attr:`path`, else the key's dot-separated parts."""
        return self.path or tuple(self.key.split("."))

    def value(self, summary: Any) -> Any:
        """The figure in ``summary``, in the summary's unit (None where it has none)."""
        v: Any = summary
        for k in self.where:
            if isinstance(k, int) and isinstance(v, list):
                v = v[k] if -len(v) <= k < len(v) else None
            elif isinstance(v, dict):
                v = v.get(k)
            else:
                return None
        return v

    def shown(self, summary: Any) -> Any:
        """The figure in ``summary`` in :attr:`unit` (scaled; None, a flag or text as it is)."""
        v = self.value(summary)
        if self.scale == 1.0 or isinstance(v, bool) or not isinstance(v, (int, float)):
            return v
        return float(v) * self.scale


@dataclass(frozen=True)
class Line:
    """One line: column ``y`` of the results series ``series`` (default: the chart's), drawn
    against that series' column named as the chart's x; ``scale`` multiplies the values into
    ``unit``."""

    y: str
    label: str
    unit: str = ""
    series: str = ""
    scale: float = 1.0


@dataclass(frozen=True)
class Chart:
    """Lines of a results folder's series against column ``x`` of ``series``. ``label``: the
    report's button for it (default: the title); ``kind``: "line" or "scatter" (the report's;
    the files draw lines); ``file``: base name of its PNG and SVG in the folder, None for
    the report only."""

    series: str
    x: str
    lines: tuple[Line, ...]
    title: str
    xlabel: str
    ylabel: str
    label: str = ""
    kind: str = "line"
    logy: bool = False
    file: str | None = None

    def hint(self) -> dict:
        """The report's ``plot`` hint for this chart."""
        return {"series": self.series, "x": self.x, "kind": self.kind, "logy": self.logy, "title": self.title,
                "label": self.label or self.title, "xlabel": self.xlabel, "ylabel": self.ylabel,
                "y": [{"series": ln.series or self.series, "y": ln.y, "label": ln.label, "unit": ln.unit,
                       **({"scale": ln.scale} if ln.scale != 1.0 else {})} for ln in self.lines]}
