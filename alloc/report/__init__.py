"""Plots, an HTML report and what-if comparisons drawn from a simulation's output folder
(metrics.json, timeline.csv, teams.csv, jobs.csv, rounds.csv; see `alloc.sim.output`). Each
name is imported when first used (PEP 562): `alloc.report.fmt` alone does not load
matplotlib."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alloc.lazy import names_from

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

__getattr__, __dir__ = names_from(__name__, _WHERE)
