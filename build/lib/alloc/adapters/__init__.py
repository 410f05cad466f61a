"""Executors: what a round reads from a cluster and how its plan is carried out."""

from alloc.adapters.base import ActionResult, ApplyReport, EndedRun, Executor, HostResult

__all__ = ["ActionResult", "ApplyReport", "EndedRun", "Executor", "HostResult"]
