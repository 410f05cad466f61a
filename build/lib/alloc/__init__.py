"""alloc: an optimization-based batch allocator for shared GPU training clusters.

The public API: load an instance, run one round, check or write the plan.
"""

from alloc.domain import Plan, Snapshot
from alloc.io import InputError, dump_plan, load_instance, load_plan, parse_instance
from alloc.round import InvalidPlanError, RoundOptions, run_round
from alloc.solve.validate import validate

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "InvalidPlanError",
    "Plan",
    "RoundOptions",
    "Snapshot",
    "dump_plan",
    "load_instance",
    "load_plan",
    "parse_instance",
    "run_round",
    "validate",
]
