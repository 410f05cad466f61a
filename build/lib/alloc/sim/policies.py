"""Every policy behind one signature, `plan(snapshot) -> Plan`, found by name in a registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from alloc.domain import Plan, Snapshot
from alloc.round import RoundOptions, run_round
from alloc.sim.baselines import LegacyConfig, fifo, legacy_priority

Planner = Callable[[Snapshot], Plan]


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    time_limit_s: float | None = None  # per round, for the MILP (None: the lab's policy)
    legacy: LegacyConfig = LegacyConfig()


def _round(solver: str) -> Callable[[PolicyOptions], Planner]:
    def make(options: PolicyOptions) -> Planner:
        round_options = RoundOptions(solver=solver, time_limit_s=options.time_limit_s)
        return lambda snapshot: run_round(snapshot, round_options)

    return make


REGISTRY: dict[str, tuple[Callable[[PolicyOptions], Planner], str]] = {
    "milp": (_round("milp"), "the round MILP with the greedy fallback"),
    "greedy": (_round("greedy"), "the fair-share sort with best-fit placement"),
    "legacy-priority": (
        lambda o: lambda s: legacy_priority(s, o.legacy),
        "static priority levels, opt-out of preemption capped per team",
    ),
    "fifo": (lambda o: fifo, "first come, first served, with backfill, no preemption"),
}
# Plans of these policies keep the contract: the simulator checks each against SPEC's
# invariants, and a violation there is a bug. The baselines' violations are their pathology.
KEEPS_CONTRACT = frozenset({"milp", "greedy"})


def planner(name: str, options: PolicyOptions | None = None) -> Planner:
    if name not in REGISTRY:
        raise KeyError(f"unknown policy {name!r}; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name][0](options or PolicyOptions())
