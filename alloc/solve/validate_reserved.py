"""The plan's reservations (models/round.md 8 and 8.5): each declared one is the rule's own,
recomputed here; on reserved hosts allocated work starts only as backfill, a gang only on its
own; and where waiting allocated work could start under them (for invariants 4 and 6)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime

from alloc.domain import Action, Decision, Occupancy, Plan, Snapshot, Workload, WorkloadId
from alloc.policy.contract import Standing, runtime_delta
from alloc.readable import duration, moment
from alloc.solve.problem import HostArrays, Shape
from alloc.solve.reserve import Held, Reserved, reservations


def reservation_problems(
    snapshot: Snapshot,
    hosts: HostArrays,
    plan: Plan,
    rest: list[Decision],
    st: Mapping[WorkloadId, Standing],
    due: tuple[Held, ...] | None,
) -> tuple[Reserved, list[str]]:
    """Hosts the plan holds back for blocked gangs (models/round.md 8). Optional: a plan need
    not reserve, but each reservation it declares must be the rule's own, recomputed here, and
    no allocated work may start on its hosts but backfill (8.5): a start whose protection ends
    by the host's `ready_at`, naming the gangs whose hosts it takes. Returns the reservations
    and the problems."""
    out = []
    held: list[Held] = []
    if plan.reservations:
        rule_of = {
            r.workload: r for r in (reservations(snapshot, st, hosts) if due is None else due)
        }
        for r in plan.reservations:
            rule = rule_of.get(r.workload)
            if rule is None or {hosts.names[h] for h in rule.hosts} != set(r.hosts):
                meant = (
                    "nothing"
                    if rule is None
                    else ", ".join(sorted(hosts.names[h] for h in rule.hosts))
                )
                out.append(
                    f"{r.workload}: reserves {', '.join(r.hosts)}, but the rule reserves "
                    f"{meant} for it (8)"
                )
                continue
            held.append(rule)
    reserved = Reserved(tuple(held), hosts)
    for d in rest:
        if d.action is Action.START:
            out += _start_on_reserved(snapshot, hosts, reserved, d)
    return reserved, out


def _start_on_reserved(
    snapshot: Snapshot, hosts: HostArrays, reserved: Reserved, d: Decision
) -> list[str]:
    """A start against the plan's reservations (8.5). A gang may start on the hosts reserved
    for it (whatever keeps it from fitting this round, such as protected work kept there, is
    what the other checks report), never on another gang's; other allocated work only as
    backfill: resumable, its protection ending by the host's `ready_at`, naming the gangs
    (`backfill_for`). Unallocated work may start on any (it yields at once) and backfills
    nothing."""
    w = snapshot.by_id[d.workload]
    placement = {hosts.index[h]: g for h, g in d.hosts.items()}
    allocated = d.occupancy is Occupancy.ALLOCATED
    gang = w.id in reserved.gangs
    blocked: dict[WorkloadId, list[int]] = defaultdict(list)  # hosts it may not take, by gang
    if allocated and reserved:
        level = len(reserved.ends) if gang else reserved.level(w, snapshot.now)
        mask = reserved.blocked(level)
        for i in placement:
            owner = reserved.gang_of.get(i)
            if owner is not None and owner != w.id and mask[i]:
                blocked[owner].append(i)
    out = []
    for owner, taken in blocked.items():
        where = ", ".join(hosts.names[i] for i in taken)
        until = moment(reserved.held_at(taken[0]))  # one ready_at per reservation
        if gang:
            why = "a gang holding a reservation of its own backfills no other"
        elif not w.resumable:
            why = (
                "it cannot resume, and only resumable work backfills (the contract could keep "
                "it past then)"
            )
        else:
            ends = snapshot.now + runtime_delta(w.min_runtime_s)
            why = (
                f"its minimum runtime of {duration(w.min_runtime_s)} from now protects it "
                f"until {moment(ends)}"
            )
        out.append(
            f"{w.id}: starts on {where}, reserved for {owner} until {until}, but {why} (8.5)"
        )
    lease = reserved.backfill_for(w.id, placement) if allocated else ()
    if blocked or tuple(sorted(d.backfill_for)) == lease:  # a set of gangs: any order
        return out
    named = ", ".join(d.backfill_for) or "no gang"
    if lease:
        why = f"the hosts it takes are reserved for {', '.join(lease)} (a start names them)"
    elif not allocated:
        why = "unallocated work backfills nothing (it yields at once)"
    elif gang:
        why = "a gang holding a reservation of its own backfills nothing"
    else:
        why = "it takes no reserved host"
    out.append(f"{w.id}: starts as backfill for {named}, but {why} (8.5)")
    return out


def waiting_shape(reserved: Reserved, w: Workload, shape: Shape, now: datetime) -> Shape:
    """Where waiting allocated `w` could start under the plan's reservations (8.5): a gang on
    its own reserved hosts, not another's; other work where it may backfill."""
    if not reserved:
        return shape
    if w.id in reserved.gangs:
        return reserved.gang_shape(w.id, shape)
    return reserved.shape_for(w, shape, now)
