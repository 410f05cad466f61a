"""Work a plan leaves waiting that could have run (SPEC.md 4 and 6): unallocated work never
holds GPUs a waiting allocated workload could use, and within one budget node no start goes
ahead of a waiting workload of higher priority that fits in its place. Under the plan's
reservations a waiting gang could use its own reserved hosts, other allocated work the ones it
may backfill (`validate_reserved.waiting_shape`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from alloc.domain import Action, Decision, Occupancy, Snapshot, WorkloadId
from alloc.policy.contract import Standing
from alloc.readable import counted
from alloc.solve.placement import PlaceIndex, place
from alloc.solve.problem import HostArrays, shapes_of
from alloc.solve.reserve import Reserved
from alloc.solve.validate_reserved import waiting_shape


def _free_after(hosts: HostArrays, used: np.ndarray) -> np.ndarray:
    return np.where(hosts.ready, np.maximum(hosts.cap - used, 0), 0)


def unallocated_yields(
    snapshot: Snapshot,
    hosts: HostArrays,
    rest: list[Decision],
    used: np.ndarray,
    st: Mapping[WorkloadId, Standing],
    reserved: Reserved,
) -> list[str]:
    """(4) Unallocated work never holds GPUs a waiting allocated workload could use (not those
    of reserved hosts it may not backfill: section 8)."""
    at: list[int] = []
    gpus: list[int] = []
    asked: list[Decision] = []  # allocated work waiting or preempted: could it have used them?
    index = hosts.index
    holders: defaultdict[int, list[WorkloadId]] = defaultdict(list)  # unallocated, by host
    for d in rest:
        action = d.action
        if d.occupancy is Occupancy.ALLOCATED:
            if action is Action.WAIT or action is Action.PREEMPT:
                asked.append(d)
        elif action.holds_gpus:
            for h, g in d.hosts.items():
                at.append(index[h])
                gpus.append(g)
                holders[index[h]].append(d.workload)
    if not at or not asked:
        return []
    unallocated = np.zeros(hosts.count, np.int64)
    np.add.at(unallocated, at, gpus)
    if not unallocated.any():
        return []
    room = _free_after(hosts, used - unallocated)
    waiting = [snapshot.by_id[d.workload] for d in asked if d.action is Action.WAIT]
    shapes = {
        wid: waiting_shape(reserved, snapshot.by_id[wid], sh, snapshot.now)
        for wid, sh in shapes_of(waiting, hosts).items()
    }
    fits = {id(sh): place(sh, room, hosts) for sh in shapes.values()}

    def held_by(where: list[int]) -> str:
        names = sorted({v for i in where for v in holders.get(i, ())})
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        return f"{', '.join(hosts.names[i] for i in where)}, held by unallocated {shown}"

    out = []
    for d in asked:
        w = snapshot.by_id[d.workload]
        found = fits[id(shapes[w.id])] if d.action is Action.WAIT else None
        if found is not None:
            out.append(
                f"{w.id}: waits for {counted(w.gpus, 'GPU')}, which it would have on "
                f"{held_by(sorted(found))} (4)"
            )
        if (
            d.action is Action.PREEMPT
            and w.running  # (a queued workload "preempted" is wrong on its own: 1.1)
            and st[w.id].forced is None
            and all(room[hosts.index[h]] >= g for h, g in w.hosts.items())
        ):
            mine = sorted(hosts.index[h] for h in w.hosts)
            out.append(
                f"{w.id}: preempted, but only unallocated work wants its GPUs on "
                f"{held_by(mine)} (4)"
            )
    return out


def priority_order(
    snapshot: Snapshot,
    hosts: HostArrays,
    rest: list[Decision],
    used: np.ndarray,
    reserved: Reserved,
) -> list[str]:
    """(6) Inside one budget node, no start ahead of a waiting higher-priority workload that
    fits in its place (compared within one occupancy class; see models/round.md). Under the
    plan's reservations an allocated workload fits only where it may backfill (section 8.5)."""
    starts = defaultdict(list)
    waits = defaultdict(list)
    for d in rest:
        w = snapshot.by_id[d.workload]
        key = (w.budget, d.occupancy)
        if d.action is Action.START:
            starts[key].append((w, d))
        elif d.action is Action.WAIT:
            waits[key].append(w)
    free = _free_after(hosts, used)
    shapes = shapes_of((w for ws in waits.values() for w in ws), hosts)
    if reserved:
        for (_, occupancy), ws in waits.items():
            if occupancy is not Occupancy.ALLOCATED:
                continue
            for w in ws:
                shapes[w.id] = waiting_shape(reserved, w, shapes[w.id], snapshot.now)
    out = []
    for key, started in starts.items():
        by_level: dict[int, tuple[list, PlaceIndex]] = {}
        for b in waits.get(key, ()):
            if b.priority not in by_level:
                ahead = [(a, d) for a, d in started if a.priority < b.priority]
                places = [{hosts.index[h]: g for h, g in d.hosts.items()} for _, d in ahead]
                by_level[b.priority] = (ahead, PlaceIndex(hosts, places))
            ahead, index = by_level[b.priority]
            found = index.find(shapes[b.id], free) if ahead else None
            if found is not None:
                a = ahead[found][0]
                out.append(
                    f"{a.id} (priority {a.priority}) starts ahead of {b.id} "
                    f"(priority {b.priority}), which fits in its place (6)"
                )
    return out
