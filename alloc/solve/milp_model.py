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
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from alloc.domain import Occupancy, WorkloadId
from alloc.policy.contract import Standing
from alloc.policy.weights import SPREAD_COST_PER_BLOCK, Tier
from alloc.solve.arrays import INF, ArrayModel
from alloc.solve.context import RoundContext
from alloc.solve.milp_priority import precedence
from alloc.solve.score import compaction_costs

UNRESERVED = 1 << 30  # the level of work that may start on no reserved pool (spread gangs)


@dataclass(frozen=True, slots=True)
class Pool:
    hosts: np.ndarray  # host indices, all alike
    cap: int
    free: int  # per host, once every preemptible workload on it is gone
    type: int
    block: int
    running: tuple[WorkloadId, ...]  # preemptible work on it (single-host pools only)
    # 0, or held back for a blocked gang: j = the rank of its `ready_at` among the round's
    # (1 = soonest); only work of a level below j starts here (backfill, section 8.5)
    res: int = 0

    @property
    def reserved(self) -> bool:
        return self.res > 0

    def open_to(self, level: int) -> bool:
        return self.res == 0 or self.res > level


@dataclass(frozen=True, slots=True)
class RequestClass:
    gpus: int
    gpu_type: str | None
    single: bool
    block: bool
    members: tuple[WorkloadId, ...]  # queued workloads, in the round's order
    # Reserved pools it may not start on: those of rank <= level (0: none; section 8.5)
    level: int = 0


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
    reserved = np.zeros(hosts.count, np.int64)  # per host: 0, or its reservation's rank
    if ctx.backfill is not None:
        b = ctx.backfill
        reserved[b.mask] = np.searchsorted(b.ends, b.until[b.mask]) + 1
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
                int(reserved[h]),
            )
        )
    if len(shared):
        keys = np.stack(
            [
                hosts.block_of[shared],
                hosts.type_of[shared],
                hosts.cap[shared],
                free[shared],
                reserved[shared],
            ],
            1,
        )
        uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        bounds = np.flatnonzero(np.r_[True, np.diff(inverse[order]) != 0, True])
        for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            block, gtype, cap, f, rank = (int(v) for v in uniq[i])
            if f > 0:
                pools.append(Pool(shared[order[lo:hi]], cap, f, gtype, block, (), rank))
    return pools


def request_classes(ctx: RoundContext) -> list[RequestClass]:
    members: dict[tuple[int, str | None, bool, bool, int], list[WorkloadId]] = defaultdict(list)
    for wid in ctx.order:
        s = ctx.standings[wid]
        if s.workload.running:
            continue
        shape = ctx.shapes[wid]
        key = (shape.gpus, s.workload.gpu_type, shape.single, shape.block, _level(ctx, s))
        members[key].append(wid)
    return [
        RequestClass(g, t, single, block, tuple(ws), level)
        for (g, t, single, block, level), ws in members.items()
    ]


def _level(ctx: RoundContext, s: Standing) -> int:
    """The reserved pools a queued workload may not start on (section 8.5): unallocated work
    fills any; a reserving gang starts on none (it does not fit this round anyway)."""
    b = ctx.backfill
    if b is None or s.occupancy is Occupancy.UNALLOCATED:
        return 0
    if s.workload.id in b.gangs:
        return len(b.ends)
    return b.level(s.workload, ctx.snapshot.now)


def build_model(ctx: RoundContext, warm: Iterable[WorkloadId] = ()) -> RoundModel:
    """The round's model. `warm` are the workloads the greedy plan holds: the model must serve
    at least its entitled GPUs (constraint 7), and entitled running work ranked ahead of every
    entitled workload the greedy leaves waiting is kept (5.1)."""
    held = set(warm)
    pools = pools_of(ctx)
    classes = request_classes(ctx)
    rm = RoundModel(ArrayModel(), pools, classes)
    _decisions(ctx, rm, held)
    _pool_capacity(ctx, rm)
    _class_demand(ctx, rm)
    precedence(ctx, rm)
    _entitled_service(ctx, rm, entitled_queued_gpus(ctx, held))
    return rm


def entitled_queued_gpus(ctx: RoundContext, started: Iterable[WorkloadId]) -> int:
    return sum(
        ctx.standings[w].workload.gpus
        for w in started
        if ctx.tier(w) is Tier.ENTITLED and not ctx.standings[w].workload.running
    )


def _entitled_service(ctx: RoundContext, rm: RoundModel, gpus: int) -> None:
    """(7) Serve at least `gpus` GPUs of entitled queued work: weights alone would let a large
    job over its entitlement outweigh a small entitled one, which the contract forbids."""
    if gpus <= 0:
        return
    mdl = rm.model
    entitled = [w for w in rm.y if ctx.tier(w) is Tier.ENTITLED]
    row = mdl.rows("(7) entitled service", 1, float(gpus), INF)
    mdl.terms(
        np.full(len(entitled), row[0]),
        np.array([rm.y[w] for w in entitled], np.int64),
        np.array([ctx.standings[w].workload.gpus for w in entitled], float),
    )


def _type_ok(ctx: RoundContext, c: RequestClass, gpu_type: int) -> bool:
    return c.gpu_type is None or ctx.hosts.types[gpu_type] == c.gpu_type


def _hosts_needed(c: RequestClass, capacity: int) -> int:
    return 1 if c.single else -(-c.gpus // capacity)


def _decisions(ctx: RoundContext, rm: RoundModel, held: set[WorkloadId]) -> None:
    """(5.1) y: start a queued workload; k: keep a running one the contract leaves open."""
    wts = ctx.weights
    mdl = rm.model
    queued = [wid for c in rm.classes for wid in c.members]
    y = mdl.variables(len(queued), 0, 1, np.array([wts.hold_value[w] for w in queued]), True)
    rm.y = dict(zip(queued, y.tolist(), strict=True))
    running = [wid for wid in ctx.order if ctx.standings[wid].optional_running]
    k_obj = np.array([wts.hold_value[w] + wts.preempt_cost[w] for w in running])
    # Running work inside its node's entitlement keeps running (SPEC: "while it is still
    # entitled") unless entitled work ranked ahead of it waits in the greedy plan: then the
    # model may move it to make room (e.g. for a gang), as the fair-share order says.
    waiting = [ctx.share.rank[w] for w in rm.y if ctx.tier(w) is Tier.ENTITLED and w not in held]
    first_waiting = min(waiting, default=len(ctx.share.order))
    k_lb = np.array(
        [float(ctx.tier(w) is Tier.ENTITLED and ctx.share.rank[w] < first_waiting) for w in running]
    )
    k = mdl.variables(len(running), k_lb, 1, k_obj, True)
    rm.k = dict(zip(running, k.tolist(), strict=True))
    mdl.offset = -sum(wts.preempt_cost[w] for w in running)


def _pool_capacity(ctx: RoundContext, rm: RoundModel) -> None:
    """(1) GPUs per pool; (1b) packing of several sizes into alike hosts."""
    mdl = rm.model
    pools = rm.pools
    small_cost, _ = compaction_costs(ctx)
    count = np.array([len(p.hosts) for p in pools], np.int64)
    cap = np.array([p.cap for p in pools], np.int64)
    free = np.array([p.free for p in pools], np.int64)
    gtype = np.array([p.type for p in pools], np.int64)
    first = np.array([int(p.hosts[0]) for p in pools], np.int64)
    res = np.array([p.res for p in pools], np.int64)
    rows = mdl.rows("(1) pool capacity", len(pools), -INF, (count * free).astype(float))
    sizes: dict[int, list[int]] = defaultdict(list)  # pool -> its small sizes
    for s in sorted({c.gpus for c in rm.classes if c.single}):
        # Per GPU type, the least level of a class of this size: pools reserved at a rank
        # above it are open (section 8.5).
        least = np.array(
            [
                min(
                    (
                        c.level
                        for c in rm.classes
                        if c.single and c.gpus == s and _type_ok(ctx, c, t)
                    ),
                    default=-1,
                )
                for t in range(len(ctx.hosts.types))
            ],
            np.int64,
        )
        lv = least[gtype]
        take = np.flatnonzero((s < cap) & (s <= free) & (lv >= 0) & ((res == 0) | (res > lv)))
        if len(take) == 0:
            continue
        var = mdl.variables(
            len(take), 0, count[take] * (free[take] // s), -s * small_cost[first[take]], True
        )
        mdl.terms(rows[take], var, float(s))
        for i, v in zip(take.tolist(), var.tolist(), strict=True):
            rm.x[(i, s)] = v
            sizes[i].append(s)
    fits_whole = np.array(  # type: ignore[var-annotated]
        [
            any(
                _type_ok(ctx, c, int(gtype[i]))
                and (c.gpus == cap[i] if c.single else c.gpus > cap[i])
                and pools[i].open_to(c.level)
                for c in rm.classes
            )
            for i in range(len(pools))
        ],
        bool,
    )
    take = np.flatnonzero((free == cap) & fits_whole)
    var = mdl.variables(len(take), 0, count[take], 0.0, True)
    mdl.terms(rows[take], var, cap[take].astype(float))
    rm.e = dict(zip(take.tolist(), var.tolist(), strict=True))
    r_rows: list[int] = []
    r_cols: list[int] = []
    r_vals: list[float] = []
    for i, p in enumerate(pools):
        host = ctx.hosts.names[int(p.hosts[0])]
        for r in p.running:
            r_rows.append(rows[i])
            r_cols.append(rm.k[r])
            r_vals.append(ctx.standings[r].workload.hosts[host])
    mdl.terms(np.array(r_rows, np.int64), np.array(r_cols, np.int64), np.array(r_vals, float))
    for i, own in sizes.items():
        if count[i] < 2:
            continue
        for j, s in enumerate(own):
            # At most floor(f/s) requests of size s or more fit on each host left to them.
            per_host = int(free[i]) // s
            row = mdl.rows("(1b) pool packing", 1, -INF, float(count[i] * per_host))
            larger = own[j:]
            mdl.terms(np.full(len(larger), row[0]), np.array([rm.x[(i, t)] for t in larger]), 1.0)
            if i in rm.e:
                mdl.terms(row, np.array([rm.e[i]]), float(per_host))


def _class_demand(ctx: RoundContext, rm: RoundModel) -> None:
    """(2) each class's started members go somewhere; (3) small slots; (4) whole hosts per
    region; (5) spread gangs on what the regions leave over. Reserved pools are open to a
    class by its level (section 8.5); the pools open to a level shrink as it grows, so one row
    per level present (the classes of that level or above within the pools open to it) is
    exactly what a placement needs."""
    mdl = rm.model
    pools = rm.pools
    _, whole_cost = compaction_costs(ctx)
    region_pools: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    for i in rm.e:
        p = pools[i]
        region_pools[(p.block, p.type, p.cap)].append(i)

    def hosts_open(region: tuple[int, int, int], level: int) -> int:
        return sum(len(pools[i].hosts) for i in region_pools[region] if pools[i].open_to(level))

    region_cost = {r: whole_cost[int(pools[ps[0]].hosts[0])] for r, ps in region_pools.items()}
    small_types = defaultdict(set)  # size -> types with slots
    for i, s in rm.x:
        small_types[s].add(pools[i].type)
    in_region: dict[tuple[int, int, int], list[tuple[int, float, int]]] = defaultdict(list)
    spread: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for ci, c in enumerate(rm.classes):
        demand = mdl.rows("(2) class demand", 1, 0.0, 0.0)
        mdl.terms(np.full(len(c.members), demand[0]), np.array([rm.y[w] for w in c.members]), -1.0)
        supply: list[int] = []
        if c.single:
            for t in sorted(small_types.get(c.gpus, ())):
                if _type_ok(ctx, c, t) and any(
                    pools[i].type == t and pools[i].open_to(c.level)
                    for i, size in rm.x
                    if size == c.gpus
                ):
                    rm.phi[(ci, t)] = v = int(mdl.variables(1, 0, len(c.members), 0.0, False)[0])
                    supply.append(v)
        for region in region_pools:
            _, t, cap = region
            need = _hosts_needed(c, cap)
            fits = c.gpus == cap if c.single else c.gpus > cap
            if not (_type_ok(ctx, c, t) and fits):
                continue
            hosts_there = hosts_open(region, c.level)
            if hosts_there < need:
                continue
            ub = min(len(c.members), hosts_there // need)
            cost = -need * cap * region_cost[region]
            rm.n[(ci, region)] = v = int(mdl.variables(1, 0, ub, cost, True)[0])
            in_region[region].append((v, float(need), c.level))
            supply.append(v)
        if not c.single and not c.block:
            for t, cap in sorted({(r[1], r[2]) for r in region_pools}):
                need = -(-c.gpus // cap)
                total = sum(hosts_open(r, UNRESERVED) for r in region_pools if r[1:] == (t, cap))
                if _type_ok(ctx, c, t) and cap < c.gpus and total >= need:
                    v = int(mdl.variables(1, 0, len(c.members), -SPREAD_COST_PER_BLOCK, True)[0])
                    rm.m[(ci, (t, cap))] = v
                    spread[(t, cap)].append((v, float(need)))
                    supply.append(v)
        mdl.terms(np.full(len(supply), demand[0]), np.array(supply, np.int64), 1.0)

    for s, types in small_types.items():
        for t in types:
            flows = [
                (v, rm.classes[ci].level)
                for (ci, tt), v in rm.phi.items()
                if tt == t and rm.classes[ci].gpus == s
            ]
            slots = [(v, pools[i]) for (i, ss), v in rm.x.items() if ss == s and pools[i].type == t]
            for level in sorted({lv for _, lv in flows}):
                row = mdl.rows("(3) small slots", 1, -INF, 0.0)
                mine = [v for v, lv in flows if lv >= level]
                there = [v for v, p in slots if p.open_to(level)]
                mdl.terms(np.full(len(mine), row[0]), np.array(mine, np.int64), 1.0)
                mdl.terms(np.full(len(there), row[0]), np.array(there, np.int64), -1.0)

    for region, members in region_pools.items():
        _, t, cap = region
        a = None
        if (t, cap) in spread:
            a = int(mdl.variables(1, 0, INF, -cap * region_cost[region], False)[0])
            rm.a[region] = a
        levels = {lv for _, _, lv in in_region[region]} | ({UNRESERVED} if a is not None else set())
        for level in sorted(levels):
            row = mdl.rows("(4) region whole hosts", 1, -INF, 0.0)
            there = [rm.e[i] for i in members if pools[i].open_to(level)]
            mdl.terms(np.full(len(there), row[0]), np.array(there, np.int64), -1.0)
            for var, hosts_each, lv in in_region[region]:
                if lv >= level:
                    mdl.terms(row, np.array([var]), hosts_each)
            if a is not None:  # spread gangs take unreserved hosts only: the highest level
                mdl.terms(row, np.array([a]), 1.0)
    for (t, cap), gangs in spread.items():
        row = mdl.rows("(5) spread whole hosts", 1, -INF, 0.0)
        for var, hosts_each in gangs:
            mdl.terms(row, np.array([var]), hosts_each)
        regions = [a for r, a in rm.a.items() if r[1:] == (t, cap)]
        mdl.terms(np.full(len(regions), row[0]), np.array(regions, np.int64), -1.0)
