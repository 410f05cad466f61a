"""The four metrics of SPEC.md (availability, occupancy, impact, utilization) over a run and
over time."""

from alloc.metrics.pyramid import job_class, metrics
from alloc.metrics.timelines import job_rows, team_rows, timeline_rows

__all__ = ["job_class", "job_rows", "metrics", "team_rows", "timeline_rows"]
