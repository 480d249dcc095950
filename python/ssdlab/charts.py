"""A test's charts of its results series, declared once and drawn by both renderers: the
PNG and SVG files (:func:`ssdlab.plots.chart_files`) and the report's interactive chart (the
``plot`` hint :meth:`Chart.hint` puts in ``summary.json``, see :mod:`ssdlab.report`).
"""
from __future__ import annotations

from dataclasses import dataclass


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
