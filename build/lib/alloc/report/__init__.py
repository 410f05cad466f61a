"""Plots, an HTML report and what-if comparisons drawn from a simulation's output folder
(metrics.json, timeline.csv, teams.csv, jobs.csv, rounds.csv; see `alloc.sim.output`)."""

from alloc.report.compare import comparison_table, write_comparison
from alloc.report.html import write_report
from alloc.report.plots import write_plots

__all__ = ["comparison_table", "write_comparison", "write_plots", "write_report"]
