"""alloc: an optimization-based batch allocator for shared GPU training clusters.

The public API: load an instance, run one round, check or write the plan; `Rounds` drives
the two kinds of rounds (full rounds and event passes between them) over a changing cluster.
"""

from alloc.domain import Plan, Snapshot
from alloc.io import InputError, dump_plan, load_instance, load_plan, parse_instance
from alloc.round import InvalidPlanError, RoundOptions, run_round
from alloc.rounds import Rounds
from alloc.solve.validate import validate

__version__ = "0.1.0"

__all__ = [
    "InputError",
    "InvalidPlanError",
    "Plan",
    "RoundOptions",
    "Rounds",
    "Snapshot",
    "dump_plan",
    "load_instance",
    "load_plan",
    "parse_instance",
    "run_round",
    "validate",
]
