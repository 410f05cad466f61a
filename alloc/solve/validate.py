"""`validate(snapshot, plan)`: every hard invariant of SPEC.md, checked from scratch.

Independent of how the plan was made: it recomputes the contract from the snapshot and checks
placements with its own arithmetic, so a solver bug cannot hide behind shared state. Returns the
violations found, each a sentence naming the workload or host; an empty list means valid.
Each sentence ends with the rule it breaks, which `alloc.cli.plans.violation` reads: `(1)` to
`(7)` SPEC.md's invariants; `(8)`, `(8.5)`, `(9)` or `(models/round.md 1.2)` a rule of
models/round.md; `(plan format)` SPEC.md's plan format (one decision per workload).

Here: one decision per workload, each decision checked once (the memo of the last round), the
GPUs each host is given. The checks, by family of invariants:
- `validate_contract`: each decision against the time-slicing contract (3, 5, 7; occupancy,
  the end of its protection, keep where it runs);
- `validate_placement`: capacity and host states (1), the shape of a start (2), drained hosts;
- `validate_reserved`: the plan's reservations and the starts on reserved hosts (8, 8.5);
- `validate_waiting`: work left waiting that could have run (4, 6);
- `across`: the entitlement rules along a budget path, for a full round's plan.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from alloc.domain import (
    Action,
    BudgetPath,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    Workload,
    WorkloadId,
)
from alloc.policy.contract import Standing, runtime_delta, standings
from alloc.readable import counted
from alloc.solve.across import entitlement_problems
from alloc.solve.memo import RoundMemo
from alloc.solve.problem import HostArrays, host_arrays
from alloc.solve.reserve import Held
from alloc.solve.validate_contract import decision_problems
from alloc.solve.validate_placement import drain_problems, overfull
from alloc.solve.validate_reserved import reservation_problems
from alloc.solve.validate_waiting import priority_order, unallocated_yields

__all__ = ["decision_problems", "validate"]  # decision_problems: for validate_event


def validate(
    snapshot: Snapshot,
    plan: Plan,
    standing: Mapping[WorkloadId, Standing] | None = None,
    hosts: HostArrays | None = None,
    due: tuple[Held, ...] | None = None,
    memo: RoundMemo | None = None,
    entitlement: Mapping[BudgetPath, int] | None = None,
) -> list[str]:
    """The contract's standings, the host arrays and the reservations the rule makes
    (`reserve.reservations`) are pure functions of the snapshot; a caller that has them may
    pass them (the round does) instead of having them recomputed. `memo`: decisions the last
    round found sound, each for its workload value and standing: the same decision object for
    the same two passes the checks of one decision again (those across decisions all run).
    `entitlement`: the round's entitled GPUs per budget node, when the plan is a full round's;
    its rules along the whole path are checked then (`across.entitlement_problems`)."""
    problems: list[str] = []
    hosts = hosts or host_arrays(snapshot)
    st = standing or standings(snapshot)
    seen = [d.workload for d in plan.decisions]
    if len(seen) != len(set(seen)):
        times: defaultdict[WorkloadId, int] = defaultdict(int)
        for wid in seen:
            times[wid] += 1
        problems += [
            f"{wid}: {n} decisions, one per workload (plan format)"
            for wid, n in sorted(times.items())
            if n > 1
        ]
    missing = set(snapshot.by_id) - set(seen)
    unknown = set(seen) - set(snapshot.by_id)
    problems += [f"{w}: no decision (plan format)" for w in sorted(missing)]
    problems += [
        f"{w}: decision for a workload not in the instance (plan format)" for w in sorted(unknown)
    ]
    used = np.zeros(hosts.count, np.int64)
    unsound = bool(unknown)
    index, by_id = hosts.index, snapshot.by_id
    at: list[int] = []  # host index of each GPU count held, summed into `used` at once
    gpus: list[int] = []
    max_rt = snapshot.policy.max_min_runtime_s
    rest: list[Decision] = []  # all but allocated work kept: what the checks across decisions read
    checked = memo.checked if memo is not None else None
    sound: dict[WorkloadId, tuple[Workload, Standing, Decision]] = {}
    wait, keep = Action.WAIT, Action.KEEP
    for d in plan.decisions:
        if d.workload in unknown:
            continue
        w = by_id[d.workload]
        s = st[w.id]
        if checked is not None:
            entry = checked.get(w.id)
            if entry is not None and entry[0] is w and entry[1] is s and entry[2] is d:
                sound[w.id] = entry
                if d.action is not keep or d.occupancy is not Occupancy.ALLOCATED:
                    rest.append(d)
                if d.action is keep:
                    for h, g in d.hosts.items():
                        at.append(index[h])
                        gpus.append(g)
                continue
        if d.action is wait and not w.running:  # queued work waiting: its few checks here
            if (
                d.occupancy is not s.occupancy
                or w.min_runtime_s > max_rt
                or d.protected_until is not None
            ):
                problems += decision_problems(snapshot, hosts, w, d, s, max_rt)
            elif checked is not None:
                sound[w.id] = (w, s, d)
            rest.append(d)
            continue
        if not (  # running work kept as it runs (most decisions): every check below holds
            d.action is Action.KEEP
            and w.started is not None  # running
            and s.forced is not Action.PREEMPT
            and d.occupancy is s.occupancy
            and d.hosts is w.hosts
            and w.min_runtime_s <= max_rt
            and (
                d.protected_until is None  # and no reason of protected work (5)
                and d.reason is not Reason.PROTECTED
                and d.reason is not Reason.COSTLY_TO_STOP
                if s.occupancy is Occupancy.UNALLOCATED
                else s.funded  # protected until its own start plus its minimum runtime:
                and d.protected_until is not None  # recomputed, not read from the standing
                and d.protected_until == w.started + runtime_delta(w.min_runtime_s)
            )
        ):
            found = decision_problems(snapshot, hosts, w, d, s, max_rt)
            problems += found
            if not found and checked is not None and d.action is keep:
                sound[w.id] = (w, s, d)
        elif checked is not None:
            sound[w.id] = (w, s, d)
        if d.action is not Action.KEEP or d.occupancy is not Occupancy.ALLOCATED:
            rest.append(d)  # allocated work kept (most decisions) counts below only in `used`
        if d.action.holds_gpus:
            for h, g in d.hosts.items():
                at_host = index.get(h)
                if at_host is not None:
                    at.append(at_host)
                    gpus.append(g)
                else:
                    problems.append(
                        f"{w.id}: holds {counted(g, 'GPU')} on {h}, which is not a host of "
                        "the instance (1)"
                    )
                    unsound = True
        elif not unsound and any(h not in index for h in d.hosts):
            unsound = True
    if checked is not None:
        checked.clear()
        checked.update(sound)
    np.add.at(used, at, gpus)
    problems += overfull(hosts, plan, used)
    # The checks across decisions read only decisions about known workloads on known hosts.
    if unsound:
        rest = [d for d in rest if d.workload in by_id and all(h in index for h in d.hosts)]
    reserved, why = reservation_problems(snapshot, hosts, plan, rest, st, due)
    problems += why
    problems += unallocated_yields(snapshot, hosts, rest, used, st, reserved)
    problems += priority_order(snapshot, hosts, rest, used, reserved)
    problems += drain_problems(snapshot, hosts, plan, used)
    if entitlement is not None and not unsound:
        problems += entitlement_problems(snapshot, plan, entitlement)
    return problems
