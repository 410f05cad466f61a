"""The "What would have to change" of `alloc explain`, for waiting work: only changes whose
condition does not already hold (room that frees, and when; a reservation it lacks; room in the
entitlement of the node in its way; for unallocated work, GPUs no allocated work wants, or a
minimum runtime above 0 when with one this round would start it; fewer GPUs, topology any or
hosts back for work the ready cluster cannot hold)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from alloc.domain import (
    Action,
    Decision,
    Occupancy,
    Plan,
    Reason,
    Workload,
    WorkloadId,
    path_prefixes,
)
from alloc.explain.entitled import shortfall_changes
from alloc.explain.facts import held_by_node
from alloc.explain.room import down_hosts, earliest, fits, free_after, largest
from alloc.io.durations import format_time
from alloc.readable import count, counted, duration
from alloc.round import RoundOptions, run_round
from alloc.solve.context import RoundContext
from alloc.solve.placement import place
from alloc.solve.problem import Shape
from alloc.solve.reserve import reservations


def change_lines(ctx: RoundContext, plan: Plan, wid: WorkloadId, d: Decision) -> list[str]:
    """What would let a waiting workload start (nothing for the others)."""
    if d.action is not Action.WAIT:
        return []
    w = ctx.snapshot.by_id[wid]
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    hosts = ctx.hosts
    held = _reservation_lines(plan, wid)
    if d.reason is Reason.RESERVED:
        return held
    # Work that never fits (even the empty ready cluster) has room held for it by nobody and
    # no share that would help: only the request or the cluster can change (below).
    if (
        not shape.single
        and wid in ctx.placeable
        and d.occupancy is Occupancy.ALLOCATED
        and all(r.workload != wid for r in plan.reservations)
    ):
        why: dict[WorkloadId, str] = {}
        reservations(ctx.snapshot, ctx.standings, hosts, why)
        if wid in why:
            held.append(f"no hosts are held back for it (models/round.md 8): {why[wid]}")
            node = why[wid].split("'s allocation alone", 1)[0]
            if node != why[wid] and w.budget and node in path_prefixes(w.budget):
                held[-1] += _held_after(ctx, plan, node)
    if wid in ctx.share.shortfalls:
        held += shortfall_changes(ctx, wid)
    if d.reason is Reason.GPU_TYPE:  # no host of that type at all, ready or not
        return [f"a host with GPU type {w.gpu_type} (types here: {', '.join(hosts.types)})"]
    typed = shape.types[hosts.type_of]
    back = down_hosts(ctx, typed)  # hosts of its type that are not ready
    if not (typed & hosts.ready).any():
        return held + [f"a host of its GPU type ready again: {back}"]
    if wid not in ctx.placeable:  # it does not fit even the empty ready cluster
        return held + _never_fits(ctx, w, shape, typed, back)
    free = free_after(ctx, plan)
    room = place(ctx.shapes[wid], free, hosts)  # under this round's reservations
    out = []
    if room is not None:
        where = ", ".join(f"{hosts.names[h]} ({counted(int(free[h]), 'GPU')} free)" for h in room)
        out.append(f"nothing about room: a place of its shape is free after this round ({where})")
    else:
        if shape.single:
            best = int(free[shape.allowed].max()) if shape.allowed.any() else 0
            out.append(
                f"{counted(w.gpus, 'GPU')} free on one host; the most free on a host it may use "
                f"is {count(best)}"
            )
        else:
            need = shape.hosts_needed(int(hosts.cap[shape.allowed].max()))
            whole = shape.allowed & (free == hosts.cap)
            per_block = np.bincount(hosts.block_of[whole], minlength=len(hosts.blocks))
            scope = "in one block" if shape.block else "anywhere"
            best = int(per_block.max()) if shape.block else int(whole.sum())
            out.append(
                f"{counted(need, 'whole free host')} {scope}; the best it has now is {count(best)}"
            )
        if d.occupancy is Occupancy.UNALLOCATED:
            out += _unallocated_room(ctx, w)
        else:
            out += _when_room_frees(ctx, plan, wid)
    if d.reason is Reason.TOPOLOGY and shape.block and fits(ctx, shape, free, block=False):
        out.append("or the workload accepts topology any (it fits across blocks now)")
    return held + out


def _never_fits(
    ctx: RoundContext, w: Workload, shape: Shape, typed: np.ndarray, back: str
) -> list[str]:
    """What would make room for work the empty ready cluster has no place for: fewer GPUs
    (the most it could get), topology any (when that fits), hosts back (when with them it
    would fit), each only when it would help."""
    hosts = ctx.hosts
    ready = typed & hosts.ready
    everything = np.where(typed, hosts.cap, 0)
    strict = Shape(shape.gpus, shape.types, ready, shape.single, shape.block)
    if shape.block and fits(ctx, strict, np.where(ready, hosts.cap, 0), block=False):
        most = largest(ctx, ready, block=True)
        out = [
            f"no network block has room for it, even empty (one block gives at most "
            f"{counted(most, 'GPU')} of its kind): the workload accepts topology any (it fits "
            "the ready cluster across blocks), or asks for at most "
            f"{counted(most, 'GPU')}"
        ]
    else:
        most = largest(ctx, ready, block=False)
        out = [
            f"it asks for {counted(w.gpus, 'GPU')}; the ready cluster gives at most "
            f"{counted(most, 'GPU')} of its GPU type to one workload: ask for at most "
            f"{count(most)}"
        ]
    whole = Shape(shape.gpus, shape.types, typed, shape.single, shape.block)
    if back and place(whole, everything, hosts) is not None:
        out.append(f"or hosts come back: {back}")
    return out


def _when_room_frees(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> list[str]:
    """For allocated work: when protection ends on enough hosts of its shape, if it ever does
    (nothing when that time has come)."""
    when = earliest(ctx, plan, wid)
    if when is None:
        return [
            "every place of that shape is held, at least in part, by work past its "
            "protection that ranks ahead of it this round: it starts when such work ends, "
            "or when its own node moves ahead in the fair-share order"
        ]
    if when > ctx.snapshot.now:  # (not a time that has come)
        return [
            f"room of that shape frees at the earliest at {format_time(when)}, when the "
            "protection of the work there ends (work still entitled then keeps running)"
        ]
    return []


def _unallocated_room(ctx: RoundContext, w: Workload) -> list[str]:
    """For unallocated work (minimum runtime 0, or unfunded): what frees room for it. It
    displaces no allocated work, protected or not, and has no place in the fair-share order,
    so neither the end of a protection nor its node's ratio helps it."""
    out = [
        "GPUs of that shape that no allocated work wants: allocated work keeps its GPUs "
        "against unallocated work (past its protection too), so room frees only when work "
        "there ends and no waiting allocated work takes it"
    ]
    if ctx.standings[w.id].funded:
        trial = _starts_as_allocated(ctx, w)
        if trial is not None:
            out.append(
                f"or it declares a minimum runtime above 0 (with {duration(trial)}, this round "
                f"would start it): it then runs as allocated work of {w.budget}, charged to "
                f"{w.budget} and protected for that runtime, and waiting allocated work "
                "displaces unallocated work"
            )
    elif place(ctx.shapes[w.id], _beside_protected(ctx), ctx.hosts) is not None:
        # Which node it would name is its owner's choice: room beside the work the contract
        # keeps is what any node's work needs this round (without it, no node would help).
        out.append(
            "or it names a budget node with a share and a minimum runtime above 0: it then "
            "runs as allocated work of that node, charged to it and protected for that runtime, "
            "and waiting allocated work displaces unallocated work"
        )
    return out


def _beside_protected(ctx: RoundContext) -> np.ndarray:
    """Per ready host, the GPUs that the work the contract keeps this round leaves."""
    hosts = ctx.hosts
    return np.where(hosts.ready, np.maximum(hosts.cap - ctx.fixed_used, 0), 0)


def _starts_as_allocated(ctx: RoundContext, w: Workload) -> float | None:
    """The minimum runtime with which funded unallocated work would start this round as
    allocated work of its budget node, or None when it would not: its node may be entitled
    to none of the GPUs (protected work, or work ranked ahead, holds them) and the room of
    its shape may be held by allocated work, which unallocated work never displaces. The
    round is solved again with that runtime (the greedy: a quick, valid plan); a short one,
    as a backfill on reserved hosts must end before the gang starts."""
    snapshot = ctx.snapshot
    trial = min(_TRIAL_MIN_RUNTIME_S, snapshot.policy.max_min_runtime_s)
    if trial <= 0:
        return None
    asked = replace(w, min_runtime_s=trial)
    workloads = tuple(asked if o.id == w.id else o for o in snapshot.workloads)
    plan = run_round(replace(snapshot, workloads=workloads), RoundOptions(solver="greedy"))
    return trial if plan.decision(w.id).action is Action.START else None


_TRIAL_MIN_RUNTIME_S = 15 * 60.0  # the minimum runtime of debug work (SPEC's metrics)


def _held_after(ctx: RoundContext, plan: Plan, node: str) -> str:
    """`; after this round's plan a holds 12 allocated GPUs: a-1 (8 GPUs, priority 1), ...`:
    the figure of `alloc solve`'s "held" column, and the work that holds it, largest first."""
    snapshot = ctx.snapshot
    mine = sorted(
        (
            (d.gpus_held, snapshot.by_id[d.workload])
            for d in plan.decisions
            if d.occupancy is Occupancy.ALLOCATED
            and d.action.holds_gpus
            and (b := snapshot.by_id[d.workload].budget)
            and (b == node or b.startswith(node + "/"))
        ),
        key=lambda gw: (-gw[0], gw[1].id),
    )
    shown = ", ".join(f"{o.id} ({counted(g, 'GPU')}, priority {o.priority})" for g, o in mine[:5])
    more = f" and {count(len(mine) - 5)} more" if len(mine) > 5 else ""
    total = held_by_node(plan, snapshot, node)
    return f"; after this round's plan {node} holds {counted(total, 'allocated GPU')}" + (
        f": {shown}{more}" if shown else ""
    )


def _reservation_lines(plan: Plan, wid: WorkloadId) -> list[str]:
    """For work that waits `reserved`: the reservations in its way, until when. (Its own
    reservation is a condition that holds already: the Why tells it.)"""
    if plan.decision(wid).reason is not Reason.RESERVED:
        return []
    return [
        f"hosts {', '.join(r.hosts)} are reserved for {r.workload} until it starts (its room "
        f"frees by {format_time(r.ready_at)}); {wid} can start on other hosts once room of its "
        "shape frees on them"
        for r in plan.reservations
        if r.workload != wid
    ]
