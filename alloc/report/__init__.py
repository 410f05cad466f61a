"""Plots, an HTML report and what-if comparisons drawn from a simulation's output folder
(metrics.json, timeline.csv, teams.csv, jobs.csv, rounds.csv; see `alloc.sim.output`). Each
name is imported when first used (PEP 562): `alloc.report.fmt` alone does not load
matplotlib."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_WHERE = {
    "comparison_table": "alloc.report.compare",
    "write_comparison": "alloc.report.compare",
    "write_plots": "alloc.report.plots",
    "write_report": "alloc.report.html",
}
__all__ = [
    "comparison_table",
    "write_comparison",
    "write_plots",
    "write_report",
]

if TYPE_CHECKING:
    from alloc.report.compare import comparison_table, write_comparison
    from alloc.report.html import write_report
    from alloc.report.plots import write_plots


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'alloc.report' has no attribute {name!r}")
    value = getattr(import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])
