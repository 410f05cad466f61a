"""Importers that turn real GPU-cluster traces into our trace CSV and a matching lab
(`alloc trace import`): Microsoft Philly (per-VC budgets) and Microsoft ITP (seeded tenants).
Every rule they apply where the traces say nothing is documented in its module."""

from alloc.traces.common import ImportSummary, TraceImport
from alloc.traces.itp import import_itp
from alloc.traces.philly import ATTRIBUTION as PHILLY_ATTRIBUTION
from alloc.traces.philly import import_philly
from alloc.traces.rules import MinRuntimeRule

__all__ = [
    "PHILLY_ATTRIBUTION",
    "ImportSummary",
    "MinRuntimeRule",
    "TraceImport",
    "import_itp",
    "import_philly",
]
