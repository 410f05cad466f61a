"""alloc: an optimization-based batch allocator for shared GPU training clusters.

The public API: load an instance, run one round, check or write the plan; `Rounds` drives
the two kinds of rounds (full rounds and event passes between them) over a changing cluster.
Each name is imported when first used (PEP 562): `import alloc` alone loads neither the
solvers (OR-Tools) nor the file readers, so the command line starts at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alloc.lazy import names_from

__version__ = "0.1.0"

_WHERE = {
    "InputError": "alloc.io",
    "InvalidPlanError": "alloc.round",
    "Plan": "alloc.domain",
    "RoundOptions": "alloc.round",
    "Rounds": "alloc.rounds",
    "Snapshot": "alloc.domain",
    "dump_plan": "alloc.io",
    "load_instance": "alloc.io",
    "load_plan": "alloc.io",
    "parse_instance": "alloc.io",
    "run_round": "alloc.round",
    "validate": "alloc.solve.validate",
}
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

if TYPE_CHECKING:
    from alloc.domain import Plan, Snapshot
    from alloc.io import InputError, dump_plan, load_instance, load_plan, parse_instance
    from alloc.round import InvalidPlanError, RoundOptions, run_round
    from alloc.rounds import Rounds
    from alloc.solve.validate import validate

__getattr__, __dir__ = names_from(__name__, _WHERE)
