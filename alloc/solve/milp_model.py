"""The round MILP built from arrays (models/round.md, section 5; constraint numbers cited).

Hosts that carry no work the solver may preempt are interchangeable when they share block,
GPU type, capacity and protected load: they form one *pool* with integer counts. A host that
carries preemptible work is a pool of its own. Queued workloads fall into *request classes*
(size, GPU type, single host or whole hosts, block topology); the model decides which
workloads start (y), which running ones stay (k) and how many requests of each class each
pool or block takes; `milp_decode` turns the counts into hosts.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from alloc.domain import Occupancy, Topology, WorkloadId
from alloc.policy.weights import SPREAD_COST_PER_BLOCK
from alloc.solve.arrays import INF, ArrayModel
from alloc.solve.context import RoundContext
from alloc.solve.score import compaction_costs


@dataclass(frozen=True, slots=True)
class Pool:
    hosts: np.ndarray  # host indices, all alike
    cap: int
    free: int  # per host, once every preemptible workload on it is gone
    type: int
    block: int
    running: tuple[WorkloadId, ...]  # preemptible work on it (single-host pools only)


@dataclass(frozen=True, slots=True)
class RequestClass:
    gpus: int
    gpu_type: str | None
    single: bool
    block: bool
    members: tuple[WorkloadId, ...]  # queued workloads, in the round's order


@dataclass
class RoundModel:
    model: ArrayModel
    pools: list[Pool]
    classes: list[RequestClass]
    y: dict[WorkloadId, int] = field(default_factory=dict)
    k: dict[WorkloadId, int] = field(default_factory=dict)
    x: dict[tuple[int, int], int] = field(default_factory=dict)  # (pool, size) -> var
    e: dict[int, int] = field(default_factory=dict)  # pool -> var (hosts taken whole)
    phi: dict[tuple[int, int], int] = field(default_factory=dict)  # (class, type) -> var
    n: dict[tuple[int, tuple[int, int, int]], int] = field(default_factory=dict)  # (class, region)
    m: dict[tuple[int, tuple[int, int]], int] = field(default_factory=dict)  # (class, (type, cap))
    a: dict[tuple[int, int, int], int] = field(default_factory=dict)  # region -> spread hosts


def pools_of(ctx: RoundContext) -> list[Pool]:
    hosts = ctx.hosts
    running_on: dict[int, list[WorkloadId]] = defaultdict(list)
    for wid, s in ctx.standings.items():
        if s.optional_running:
            for h in s.workload.hosts:
                running_on[hosts.index[h]].append(wid)
    free = hosts.cap - ctx.fixed_used
    pools: list[Pool] = []
    ready = np.flatnonzero(hosts.ready)
    alone = np.array([h for h in ready if h in running_on], np.int64)
    shared = np.setdiff1d(ready, alone)
    for h in alone:
        pools.append(
            Pool(
                np.array([h]),
                int(hosts.cap[h]),
                int(free[h]),
                int(hosts.type_of[h]),
                int(hosts.block_of[h]),
                tuple(sorted(set(running_on[int(h)]))),
            )
        )
    if len(shared):
        keys = np.stack(
            [hosts.block_of[shared], hosts.type_of[shared], hosts.cap[shared], free[shared]], 1
        )
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0, True])
        for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            block, gtype, cap, f = (int(v) for v in uniq[i])
            if f > 0:
                pools.append(Pool(shared[order[lo:hi]], cap, f, gtype, block, ()))
    return pools


def request_classes(ctx: RoundContext) -> list[RequestClass]:
    members: dict[tuple[int, str | None, bool, bool], list[WorkloadId]] = defaultdict(list)
    for wid in ctx.order:
        s = ctx.standings[wid]
        if s.workload.running:
            continue
        shape = ctx.shapes[wid]
        key = (shape.gpus, s.workload.gpu_type, shape.single, shape.block)
        members[key].append(wid)
    return [
        RequestClass(g, t, single, block, tuple(ws))
        for (g, t, single, block), ws in members.items()
    ]


def build_model(ctx: RoundContext) -> RoundModel:
    hosts = ctx.hosts
    wts = ctx.weights
    pools = pools_of(ctx)
    classes = request_classes(ctx)
    rm = RoundModel(ArrayModel(), pools, classes)
    mdl = rm.model
    small_cost, whole_cost = compaction_costs(ctx)

    # Decision variables y (start) and k (keep), section 5.1.
    queued = [wid for c in classes for wid in c.members]
    y = mdl.variables(len(queued), 0, 1, np.array([wts.hold_value[w] for w in queued]), True)
    rm.y = dict(zip(queued, y.tolist(), strict=True))
    running = [wid for wid in ctx.order if ctx.standings[wid].optional_running]
    k_obj = np.array([wts.hold_value[w] + wts.preempt_cost[w] for w in running])
    k = mdl.variables(len(running), 0, 1, k_obj, True)
    rm.k = dict(zip(running, k.tolist(), strict=True))
    mdl.offset = sum(wts.hold_value[w] for w, s in ctx.standings.items() if s.protected) - sum(
        wts.preempt_cost[w] for w in running
    )

    def type_ok(c: RequestClass, gtype: int) -> bool:
        return c.gpu_type is None or hosts.types[gtype] == c.gpu_type

    # Small sizes each pool may take: x[p, s] integer, s < capacity (5.1).
    small_sizes = sorted({c.gpus for c in classes if c.single})
    pool_hi = np.array([len(p.hosts) * p.free for p in pools], float)
    pool_rows = mdl.rows("(1) pool capacity", len(pools), -INF, pool_hi)
    for i, p in enumerate(pools):
        n = len(p.hosts)
        sizes = [
            s
            for s in small_sizes
            if s < p.cap
            and s <= p.free
            and any(c.single and c.gpus == s and type_ok(c, p.type) for c in classes)
        ]
        host = int(p.hosts[0])
        for s in sizes:
            var = int(mdl.variables(1, 0, n * (p.free // s), -s * small_cost[host], True)[0])
            rm.x[(i, s)] = var
            mdl.terms(np.array([pool_rows[i]]), np.array([var]), s)
        if p.free == p.cap and any(
            type_ok(c, p.type) and (c.gpus == p.cap if c.single else c.gpus > p.cap)
            for c in classes
        ):
            var = int(mdl.variables(1, 0, n, 0.0, True)[0])
            rm.e[i] = var
            mdl.terms(np.array([pool_rows[i]]), np.array([var]), p.cap)
        for r in p.running:
            g = ctx.standings[r].workload.hosts[hosts.names[host]]
            mdl.terms(np.array([pool_rows[i]]), np.array([rm.k[r]]), g)
        # (1b) packability of several sizes into alike hosts (exact for sizes that divide).
        if n > 1 and len(sizes) > 1:
            for j, s in enumerate(sizes[1:], start=1):
                slots = s * (p.free // s)
                row = mdl.rows("(1b) pool packing", 1, -INF, n * slots)
                larger = sizes[j:]
                mdl.terms(
                    np.full(len(larger), row[0]),
                    np.array([rm.x[(i, t)] for t in larger]),
                    np.array(larger, float),
                )
                if i in rm.e:
                    mdl.terms(row, np.array([rm.e[i]]), slots)

    # Regions: (block, type, capacity) of pools that can be taken whole.
    region_pools: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for i in rm.e:
        p = pools[i]
        region_pools[(p.block, p.type, p.cap)].append(i)
    region_hosts = {r: sum(len(pools[i].hosts) for i in ps) for r, ps in region_pools.items()}

    # Per class: where its started members go (2); flows, block counts, spread counts.
    for ci, c in enumerate(classes):
        demand = mdl.rows("(2) class demand", 1, 0.0, 0.0)
        mdl.terms(np.full(len(c.members), demand[0]), np.array([rm.y[w] for w in c.members]), -1.0)
        if c.single:
            for t in range(len(hosts.types)):
                if type_ok(c, t) and any(
                    pools[i].type == t and (i, c.gpus) in rm.x for i in range(len(pools))
                ):
                    var = int(mdl.variables(1, 0, len(c.members), 0.0, False)[0])
                    rm.phi[(ci, t)] = var
                    mdl.terms(demand, np.array([var]), 1.0)
        for region, count in region_hosts.items():
            block, t, cap = region
            if not type_ok(c, t):
                continue
            if c.single and cap != c.gpus or not c.single and cap >= c.gpus:
                continue
            need = 1 if c.single else -(-c.gpus // cap)
            if count < need:
                continue
            cost = -need * cap * whole_cost[int(pools[region_pools[region][0]].hosts[0])]
            var = int(mdl.variables(1, 0, min(len(c.members), count // need), cost, True)[0])
            rm.n[(ci, region)] = var
            mdl.terms(demand, np.array([var]), 1.0)
        if not c.single and not c.block:
            for t, cap in {(r[1], r[2]) for r in region_hosts}:
                need = -(-c.gpus // cap)
                total = sum(v for r, v in region_hosts.items() if r[1:] == (t, cap))
                if type_ok(c, t) and cap < c.gpus and total >= need:
                    var = int(mdl.variables(1, 0, len(c.members), -SPREAD_COST_PER_BLOCK, True)[0])
                    rm.m[(ci, (t, cap))] = var
                    mdl.terms(demand, np.array([var]), 1.0)

    # (3) small channels: what classes of size s draw from type t fits in the pools' slots.
    for s in small_sizes:
        for t in range(len(hosts.types)):
            flows = [v for (ci, tt), v in rm.phi.items() if tt == t and classes[ci].gpus == s]
            if not flows:
                continue
            slots = [v for (i, ss), v in rm.x.items() if ss == s and pools[i].type == t]
            row = mdl.rows("(3) small slots", 1, -INF, 0.0)
            mdl.terms(np.full(len(flows), row[0]), np.array(flows), 1.0)
            mdl.terms(np.full(len(slots), row[0]), np.array(slots), -1.0)

    # (4) whole hosts per region; (5) spread gangs draw on what regions leave over.
    for region, members in region_pools.items():
        _, t, cap = region
        row = mdl.rows("(4) region whole hosts", 1, -INF, 0.0)
        mdl.terms(np.full(len(members), row[0]), np.array([rm.e[i] for i in members]), -1.0)
        for (ci, r), var in rm.n.items():
            if r == region:
                c = classes[ci]
                mdl.terms(row, np.array([var]), 1 if c.single else -(-c.gpus // cap))
        if any(tc == (t, cap) for (_, tc) in rm.m):
            host = int(pools[members[0]].hosts[0])
            var = int(mdl.variables(1, 0, INF, -cap * whole_cost[host], False)[0])
            rm.a[region] = var
            mdl.terms(row, np.array([var]), 1.0)
    for tc in {tc for (_, tc) in rm.m}:
        row = mdl.rows("(5) spread whole hosts", 1, -INF, 0.0)
        for (ci, t2), var in rm.m.items():
            if t2 == tc:
                mdl.terms(row, np.array([var]), -(-classes[ci].gpus // tc[1]))
        for region, var in rm.a.items():
            if region[1:] == tc:
                mdl.terms(row, np.array([var]), -1.0)

    _precedence(ctx, rm)
    return rm


def _precedence(ctx: RoundContext, rm: RoundModel) -> None:
    """(6) Inside one budget node and occupancy class, a queued workload starts only if every
    queued one of higher priority that surely fits in its place starts too."""
    groups: dict[tuple[object, Occupancy], list[WorkloadId]] = defaultdict(list)
    for wid in rm.y:
        s = ctx.standings[wid]
        groups[(s.workload.budget, s.occupancy)].append(wid)
    mdl = rm.model
    for members in groups.values():
        if len({ctx.standings[w].workload.priority for w in members}) < 2:
            continue
        for a in members:
            wa = ctx.standings[a].workload
            sa = ctx.shapes[a]
            ahead = []
            for b in members:
                wb = ctx.standings[b].workload
                sb = ctx.shapes[b]
                if wb.priority <= wa.priority or wb.gpus > wa.gpus:
                    continue
                if np.any(sa.allowed & ~sb.allowed) and sb.single == sa.single:
                    continue
                if not sb.single and (
                    sb.block
                    and not sa.block
                    or wb.topology is Topology.BLOCK
                    and wa.topology is Topology.ANY
                ):
                    continue
                if sb.single and not sa.single and np.any(sa.allowed & ~sb.allowed):
                    continue
                ahead.append(rm.y[b])
            if ahead:
                row = mdl.rows("(6) priority inside a budget node", 1, -INF, 0.0)
                mdl.terms(row, np.array([rm.y[a]]), float(len(ahead)))
                mdl.terms(np.full(len(ahead), row[0]), np.array(ahead), -1.0)
