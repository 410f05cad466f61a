"""`validate(snapshot, plan)`: every hard invariant of SPEC.md, checked from scratch.

Independent of how the plan was made: it recomputes the contract from the snapshot and checks
placements with its own arithmetic, so a solver bug cannot hide behind shared state. Returns the
violations found, each a sentence naming the workload or host; an empty list means valid.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from alloc.domain import (
    Action,
    BudgetPath,
    Decision,
    HostName,
    Occupancy,
    Plan,
    Reason,
    Snapshot,
    Topology,
    Workload,
    WorkloadId,
)
from alloc.policy.contract import Standing, runtime_delta, standings
from alloc.readable import counted, duration, moment
from alloc.solve.across import entitlement_problems
from alloc.solve.memo import RoundMemo
from alloc.solve.placement import PlaceIndex, place
from alloc.solve.problem import HostArrays, host_arrays, shapes_of
from alloc.solve.reserve import Held, Reserved, reservations


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
            f"{wid}: {n} decisions, one per workload" for wid, n in sorted(times.items()) if n > 1
        ]
    missing = set(snapshot.by_id) - set(seen)
    unknown = set(seen) - set(snapshot.by_id)
    problems += [f"{w}: no decision" for w in sorted(missing)]
    problems += [
        f"{w}: decision for an unknown workload (not in the instance)" for w in sorted(unknown)
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
                d.protected_until is None
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
                        "the instance"
                    )
                    unsound = True
        elif not unsound and any(h not in index for h in d.hosts):
            unsound = True
    if checked is not None:
        checked.clear()
        checked.update(sound)
    np.add.at(used, at, gpus)
    for i in np.flatnonzero(used > hosts.cap):
        name = hosts.names[i]
        holders = ", ".join(
            f"{d.workload} {d.hosts[name]}"
            for d in plan.decisions
            if d.action.holds_gpus and name in d.hosts
        )
        problems.append(
            f"host {name}: {counted(int(used[i]), 'GPU')} given ({holders}), "
            f"it has {int(hosts.cap[i])} (1)"
        )
    # The checks across decisions read only decisions about known workloads on known hosts.
    if unsound:
        rest = [d for d in rest if d.workload in by_id and all(h in index for h in d.hosts)]
    reserved, why = _reservations(snapshot, hosts, plan, rest, st, due)
    problems += why
    problems += _unallocated_yields(snapshot, hosts, rest, used, st, reserved)
    problems += _priority_order(snapshot, hosts, rest, used, reserved)
    problems += _drains(snapshot, hosts, plan, used)
    if entitlement is not None and not unsound:
        problems += entitlement_problems(snapshot, plan, entitlement)
    return problems


def decision_problems(snapshot, hosts, w, d, s, max_rt) -> list[str]:  # type: ignore[no-untyped-def]
    action, occupancy, until = d.action, d.occupancy, d.protected_until
    keep = action is Action.KEEP
    out: list[str] = []
    name = w.id
    if occupancy is not s.occupancy:
        out.append(
            f"{name}: occupancy {occupancy.value}, the contract says {s.occupancy.value} "
            f"({_why_occupancy(snapshot, w, s)})"
        )
    if w.min_runtime_s > max_rt:
        out.append(
            f"{name}: minimum runtime {duration(w.min_runtime_s)} is above max_min_runtime "
            f"{duration(max_rt)} (7)"
        )
    if until is not None:
        if not s.funded:
            out.append(
                f"{name}: protected until {moment(until)}, but unfunded work is never "
                f"protected ({_why_occupancy(snapshot, w, s)}) (5)"
            )
        elif occupancy is Occupancy.UNALLOCATED:
            out.append(
                f"{name}: protected until {moment(until)}, but it is marked unallocated, "
                "and unallocated work is never protected (5)"
            )
    if w.running:
        if not keep and action is not Action.PREEMPT:
            out.append(f"{name}: running, so it is kept or preempted, not '{action.value}'")
    elif action is not Action.START and action is not Action.WAIT:
        out.append(f"{name}: queued, so it starts or waits, not '{action.value}'")
    if s.forced is Action.KEEP and not keep:
        if s.forced_reason is Reason.COSTLY_TO_STOP:
            ran = w.running_seconds(snapshot.now)
            interval = snapshot.policy.checkpoint_interval_s
            out.append(
                f"{name}: {action.value}, but it cannot resume and has run {duration(ran)}, "
                f"longer than the checkpoint interval of {duration(interval)}: the contract "
                "keeps it to its end (costly_to_stop)"
            )
        else:
            assert s.protected_until is not None
            out.append(
                f"{name}: {action.value}, but it is protected until {moment(s.protected_until)} (3)"
            )
    if s.forced is Action.PREEMPT and keep:
        states = {h: snapshot.cluster.by_name[h].state.value for h in w.hosts}
        bad = ", ".join(f"{h} is {state}" for h, state in states.items() if state != "ready")
        out.append(f"{name}: kept, but {bad} ({s.forced_reason.value}) (1)")
    if keep and d.hosts != w.hosts:
        out.append(f"{name}: kept on {_where(d.hosts)}, but it runs on {_where(w.hosts)}")
    if keep or action is Action.START:
        if occupancy is Occupancy.ALLOCATED:
            start = w.started if w.running else snapshot.now
            want = start + runtime_delta(w.min_runtime_s)
            if until != want:
                given = "not protected" if until is None else f"protected until {moment(until)}"
                began = "its start at" if w.running else "now,"
                out.append(
                    f"{name}: {given}, but its minimum runtime of {duration(w.min_runtime_s)} "
                    f"from {began} {moment(start)} protects it until {moment(want)}"
                )
        if action is Action.START:
            out += _start_shape(snapshot, hosts, w, d)
        if d.hosts is not w.hosts:
            out += [
                f"{name}: holds {g} GPUs on {h} (a count above 0 for each host it holds)"
                for h, g in d.hosts.items()
                if g <= 0
            ]
    return out


def _where(placement: Mapping[HostName, int]) -> str:
    """`h1: 8, h2: 8`, or `no host`."""
    return ", ".join(f"{h}: {g}" for h, g in placement.items()) or "no host"


def _why_occupancy(snapshot: Snapshot, w: Workload, s: Standing) -> str:
    if not w.budget:
        return "it names no budget, so it is unfunded"
    if not s.funded:
        return f"its budget {w.budget} has an effective allocation of 0, so it is unfunded"
    if w.min_runtime_s == 0:
        return "its minimum runtime is 0"
    return f"funded by {w.budget} with a minimum runtime of {duration(w.min_runtime_s)}"


def _start_shape(snapshot: Snapshot, hosts: HostArrays, w: Workload, d: Decision) -> list[str]:
    name = w.id
    out = []
    unknown = [h for h in d.hosts if h not in hosts.index]
    if unknown:
        return [f"{name}: starts on {', '.join(unknown)}, not hosts of the instance"]
    idx = [hosts.index[h] for h in d.hosts]
    if not idx:
        return [f"{name}: starts on no host (a start names its hosts and their GPUs)"]
    by_name = snapshot.cluster.by_name
    for h in idx:
        host = hosts.names[h]
        if not hosts.ready[h]:
            out.append(f"{name}: starts on {host}, which is {by_name[host].state.value} (1)")
        if w.gpu_type is not None and hosts.types[hosts.type_of[h]] != w.gpu_type:
            out.append(
                f"{name}: needs {w.gpu_type} GPUs, but starts on {host}, which has "
                f"{hosts.types[hosts.type_of[h]]} GPUs (2)"
            )
    shape = shapes_of((w,), hosts)[w.id]  # the memo of shape_of on these hosts
    if shape.single:  # (a gang of whole hosts may hold more GPUs than it asks for)
        gpus = sum(d.hosts.values())
        if gpus != w.gpus:
            out.append(
                f"{name}: given {counted(gpus, 'GPU')} ({_where(d.hosts)}), but it asks for "
                f"{counted(w.gpus, 'GPU')} (2)"
            )
        if len(idx) != 1:
            out.append(
                f"{name}: spread over {len(idx)} hosts ({_where(d.hosts)}), but its "
                f"{counted(w.gpus, 'GPU')} fit on one host, so it gets one (2)"
            )
        return out
    caps = {int(hosts.cap[h]) for h in idx}
    types = {hosts.types[hosts.type_of[h]] for h in idx}
    part = [h for h in idx if d.hosts[hosts.names[h]] != hosts.cap[h]]
    larger = f"larger than one host ({counted(w.gpus, 'GPU')}), so it gets whole hosts"
    for h in part:
        out.append(
            f"{name}: {larger}, but gets {d.hosts[hosts.names[h]]} of the "
            f"{counted(int(hosts.cap[h]), 'GPU')} of {hosts.names[h]} (2)"
        )
    if len(caps) > 1:
        sizes = ", ".join(f"{hosts.names[h]} has {int(hosts.cap[h])}" for h in idx)
        out.append(f"{name}: {larger} of one size, but gets hosts of several ({sizes}) (2)")
    if len(types) > 1:
        kinds = ", ".join(f"{hosts.names[h]} {hosts.types[hosts.type_of[h]]}" for h in idx)
        out.append(f"{name}: {larger} of one GPU type, but gets several ({kinds}) (2)")
    if not part and len(caps) == 1 and len(types) == 1:
        size = caps.pop()
        need = -(-w.gpus // size)
        if len(idx) != need:
            out.append(
                f"{name}: gets {len(idx)} hosts of {counted(size, 'GPU')} for "
                f"{counted(w.gpus, 'GPU')}, "
                f"which take {counted(need, 'host')} (2)"
            )
    if w.topology is Topology.BLOCK:
        blocks: dict[str, list[str]] = defaultdict(list)
        for h in idx:
            blocks[hosts.blocks[hosts.block_of[h]]].append(hosts.names[h])
        if len(blocks) > 1:
            spread = "; ".join(f"{b}: {', '.join(names)}" for b, names in blocks.items())
            out.append(
                f"{name}: topology block, but starts across {len(blocks)} blocks ({spread}) (2)"
            )
    return out


def _free_after(hosts: HostArrays, used: np.ndarray) -> np.ndarray:
    return np.where(hosts.ready, np.maximum(hosts.cap - used, 0), 0)


def _reservations(snapshot, hosts, plan, rest, st, due) -> tuple[Reserved, list[str]]:  # type: ignore[no-untyped-def]
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


def _waiting_shape(reserved: Reserved, w: Workload, shape, now):  # type: ignore[no-untyped-def]
    """Where waiting allocated `w` could start under the plan's reservations (8.5): a gang on
    its own reserved hosts, not another's; other work where it may backfill."""
    if not reserved:
        return shape
    if w.id in reserved.gangs:
        return reserved.gang_shape(w.id, shape)
    return reserved.shape_for(w, shape, now)


def _unallocated_yields(snapshot, hosts, rest, used, st, reserved) -> list[str]:  # type: ignore[no-untyped-def]
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
        wid: _waiting_shape(reserved, snapshot.by_id[wid], sh, snapshot.now)
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
            and st[w.id].forced is None
            and all(room[hosts.index[h]] >= g for h, g in w.hosts.items())
        ):
            mine = sorted(hosts.index[h] for h in w.hosts)
            out.append(
                f"{w.id}: preempted, but only unallocated work wants its GPUs on "
                f"{held_by(mine)} (4)"
            )
    return out


def _priority_order(snapshot, hosts, rest, used, reserved) -> list[str]:  # type: ignore[no-untyped-def]
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
                shapes[w.id] = _waiting_shape(reserved, w, shapes[w.id], snapshot.now)
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


def _drains(snapshot, hosts, plan, used) -> list[str]:  # type: ignore[no-untyped-def]
    out = []
    listed = set(plan.drained_hosts)
    cluster = snapshot.cluster.hosts
    drained = hosts.draining & (used == 0)
    for i in sorted({*np.flatnonzero(drained).tolist(), *(hosts.index.get(n, -1) for n in listed)}):
        if i < 0:
            continue  # unknown: below
        h = cluster[i]
        empty = used[i] == 0
        if h.name in listed and not h.state.draining:
            out.append(
                f"host {h.name}: listed as drained, but it is {h.state.value} (only unhealthy "
                "and retired hosts drain)"
            )
        if h.name in listed and not empty:
            holding = ", ".join(
                d.workload for d in plan.decisions if d.action.holds_gpus and h.name in d.hosts
            )
            out.append(
                f"host {h.name}: listed as drained, but {counted(int(used[i]), 'GPU')} of it "
                f"stay held ({holding})"
            )
        if h.state.draining and empty and h.name not in listed:
            out.append(
                f"host {h.name}: {h.state.value} and empty after the plan, so drained, but not "
                "listed in drained_hosts"
            )
    for name in sorted(listed - set(hosts.index)):
        out.append(f"host {name}: listed as drained, but not a host of the instance")
    return out
