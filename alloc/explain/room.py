"""Room on the hosts for `alloc explain`, after the plan: the GPUs left free, who holds a
host and until when, when room of a workload's shape frees at the earliest, and whether a shape
fits."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

import numpy as np

from alloc.domain import Occupancy, Plan, Reason, WorkloadId
from alloc.io.durations import format_time
from alloc.readable import counted
from alloc.solve.context import RoundContext
from alloc.solve.placement import place
from alloc.solve.problem import Shape


def free_after(ctx: RoundContext, plan: Plan) -> np.ndarray:
    """Free GPUs per host once the plan is applied (0 on hosts that are not ready)."""
    used = np.zeros(ctx.hosts.count, np.int64)
    for d in plan.decisions:
        if d.action.holds_gpus:
            for h, g in d.hosts.items():
                used[ctx.hosts.index[h]] += g
    return np.where(ctx.hosts.ready, np.maximum(ctx.hosts.cap - used, 0), 0)


def holders(ctx: RoundContext, plan: Plan, host: int, given: bool = False) -> str:
    """Who holds GPUs on a host after the plan, and until when: `workload b-run0 (8 GPUs,
    protected until T)`, the workload named as one (a Slurm job id alone, `1 (8 GPUs`, reads
    like a count);
    with `given`, only the work the plan chose to put or keep there (not what the contract
    keeps)."""
    name = ctx.hosts.names[host]
    out = []
    for d in plan.decisions:
        if not d.action.holds_gpus or name not in d.hosts:
            continue
        if given and ctx.standings[d.workload].protected:
            continue
        if d.protected_until is not None and d.protected_until > ctx.snapshot.now:
            until = f"protected until {format_time(d.protected_until)}"
        elif d.occupancy is Occupancy.UNALLOCATED:
            until = "unallocated, yields to allocated work at once"
        elif d.reason is Reason.COSTLY_TO_STOP:
            until = "costly to stop, no known end"
        else:
            until = f"past its protection, {d.reason.value}"
        out.append(f"workload {d.workload} ({counted(d.hosts[name], 'GPU')}, {until})")
    return ", ".join(out)


def release_s(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> np.ndarray:
    """Per host, the seconds until every holder there after the plan may yield to `wid`:
    protected work when its protection ends, unallocated work at once (to allocated work),
    other work never that anyone knows of (inf)."""
    snapshot, hosts = ctx.snapshot, ctx.hosts
    allocated = ctx.standings[wid].occupancy is Occupancy.ALLOCATED
    release = np.zeros(hosts.count)
    for d in plan.decisions:
        if not d.action.holds_gpus:
            continue
        if d.protected_until is not None and d.protected_until > snapshot.now:
            wait = (d.protected_until - snapshot.now).total_seconds()
        elif allocated and d.occupancy is Occupancy.UNALLOCATED:
            wait = 0.0  # unallocated work yields to allocated work at once
        else:
            wait = math.inf
        for h in d.hosts:
            i = hosts.index[h]
            release[i] = max(release[i], wait)
    return release


def earliest(ctx: RoundContext, plan: Plan, wid: WorkloadId) -> datetime | None:
    """The soonest time at which protection ends on enough hosts for the workload to fit; None
    when every place it could have is held, at least in part, by work without an end in sight
    (past its protection but ranked ahead of it this round, or unallocated work in the way of
    unallocated work)."""
    snapshot = ctx.snapshot
    shape = ctx.unreserved_shapes.get(wid, ctx.shapes[wid])
    hosts = ctx.hosts
    release = release_s(ctx, plan, wid)
    candidates = np.flatnonzero(shape.allowed)
    if len(candidates) == 0:
        return None
    if shape.single:
        seconds = float(release[candidates].min())
    else:
        need = shape.hosts_needed(int(hosts.cap[candidates].max()))
        seconds = math.inf
        groups = (
            [
                candidates[hosts.block_of[candidates] == b]
                for b in np.unique(hosts.block_of[candidates])
            ]
            if shape.block
            else [candidates]
        )
        for group in groups:
            if len(group) >= need:
                seconds = min(seconds, float(np.sort(release[group])[need - 1]))
    if math.isinf(seconds):
        return None
    return snapshot.now + timedelta(seconds=seconds)


def down_hosts(ctx: RoundContext, typed: np.ndarray) -> str:
    """The hosts of `typed` that take no work, with their state: `h3 (unhealthy), h4 ...`."""
    hosts, by_name = ctx.hosts, ctx.snapshot.cluster.by_name
    down = [hosts.names[i] for i in np.flatnonzero(typed & ~hosts.ready)]
    shown = ", ".join(f"{h} ({by_name[h].state.value})" for h in down[:6])
    return shown + (f" and {len(down) - 6} more" if len(down) > 6 else "")


def fits(ctx: RoundContext, shape: Shape, free: np.ndarray, block: bool) -> bool:
    """Whether `shape`, with topology block or not, fits into `free` on the hosts it allows."""
    loose = Shape(shape.gpus, shape.types, shape.allowed, shape.single, block)
    return place(loose, free, ctx.hosts) is not None


def largest(ctx: RoundContext, usable: np.ndarray, block: bool) -> int:
    """The most GPUs one workload can get of the `usable` hosts, all empty: one host, or whole
    hosts of one GPU type and size (in one block with `block`)."""
    hosts = ctx.hosts
    most = int(hosts.cap[usable].max()) if usable.any() else 0
    for kind, (_, capacity) in enumerate(hosts.kinds):
        mine = usable & (hosts.kind_of == kind)
        if block:
            per_block = np.bincount(hosts.block_of[mine], minlength=len(hosts.blocks))
            most = max(most, int(per_block.max()) * capacity)
        else:
            most = max(most, int(mine.sum()) * capacity)
    return most
