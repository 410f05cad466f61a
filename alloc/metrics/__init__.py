"""The four metrics of SPEC.md (availability, occupancy, impact, utilization) over a run and
over time. Each name is imported when first used (PEP 562): `alloc.metrics.quantiles` alone,
which the reports use, does not load the simulator."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alloc.lazy import names_from

_WHERE = {
    "job_class": "alloc.metrics.pyramid",
    "job_rows": "alloc.metrics.timelines",
    "metrics": "alloc.metrics.pyramid",
    "team_rows": "alloc.metrics.timelines",
    "timeline_rows": "alloc.metrics.timelines",
}
__all__ = ["job_class", "job_rows", "metrics", "team_rows", "timeline_rows"]

if TYPE_CHECKING:
    from alloc.metrics.pyramid import job_class, metrics
    from alloc.metrics.timelines import job_rows, team_rows, timeline_rows

__getattr__, __dir__ = names_from(__name__, _WHERE)
