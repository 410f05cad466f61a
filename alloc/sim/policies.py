"""Every policy behind one signature, `plan(snapshot) -> Plan`, found by name in a registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from alloc.domain import Plan, Snapshot
from alloc.round import RoundOptions, run_round
from alloc.rounds import Rounds
from alloc.sim.baselines import LegacyConfig, fifo, legacy_priority
from alloc.sim.fairshare_sort import fairshare_sort

Planner = Callable[[Snapshot], Plan]


@dataclass(frozen=True, slots=True)
class PolicyOptions:
    time_limit_s: float | None = None  # per round, for the MILP (None: the lab's policy)
    legacy: LegacyConfig = LegacyConfig()


@dataclass(frozen=True, slots=True)
class RoundPlanner:
    """The round allocator as a policy: a full round per call, and the two kinds of rounds
    (full rounds with event passes between them, `alloc.rounds`) for whoever drives them."""

    options: RoundOptions

    def __call__(self, snapshot: Snapshot) -> Plan:
        return run_round(snapshot, self.options)

    def rounds(self, validate_whole: bool = False) -> Rounds:
        return Rounds(self.options, validate_whole)


def _round(solver: str) -> Callable[[PolicyOptions], Planner]:
    def make(options: PolicyOptions) -> Planner:
        return RoundPlanner(RoundOptions(solver=solver, time_limit_s=options.time_limit_s))

    return make


REGISTRY: dict[str, tuple[Callable[[PolicyOptions], Planner], str]] = {
    "milp": (_round("milp"), "the round MILP with the greedy fallback"),
    "greedy": (_round("greedy"), "the fair-share sort with best-fit placement"),
    "legacy-priority": (
        lambda o: lambda s: legacy_priority(s, o.legacy),
        "static priority levels, opt-out of preemption capped per team",
    ),
    "fairshare-sort": (
        lambda o: fairshare_sort,
        "the published design: hierarchical fair-share sort, first fit, rebalancing past the "
        "minimum runtime, no reservations",
    ),
    "fifo": (lambda o: fifo, "first come, first served, with backfill, no preemption"),
}
# Plans of these policies keep the contract: the simulator checks each against SPEC's
# invariants, and a violation there is a bug. The baselines' violations are their pathology.
KEEPS_CONTRACT = frozenset({"milp", "greedy"})
# Policies that never preempt without starting something: a round in which no queued work
# could start decides nothing, and the simulator may skip it (alloc/sim/quiet.py).
SKIPS_QUIET = KEEPS_CONTRACT | {"fifo", "fairshare-sort"}


def planner(name: str, options: PolicyOptions | None = None) -> Planner:
    if name not in REGISTRY:
        raise KeyError(f"unknown policy {name!r}; expected one of {', '.join(REGISTRY)}")
    return REGISTRY[name][0](options or PolicyOptions())
