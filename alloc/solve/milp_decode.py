"""From the MILP's counts to hosts, and from a plan back to the MILP's variables (a hint).

Decoding: gangs take whole hosts of the regions the model chose, then small requests take
slots in the pools it chose, largest first and best fit inside the pool. A request that does
not land (rounding, sizes that do not divide) is left to the repair passes.
"""

from __future__ import annotations

from collections import defaultdict, deque

import numpy as np

from alloc.domain import WorkloadId
from alloc.solve.context import RoundContext
from alloc.solve.load import Load
from alloc.solve.milp_model import RoundModel


def decode(ctx: RoundContext, rm: RoundModel, values: np.ndarray) -> Load:
    v = np.rint(values).astype(np.int64)
    hosts = ctx.hosts
    load = Load(hosts)
    ctx.hold_running(
        load,
        (
            wid
            for wid, s in ctx.standings.items()
            if s.protected or (s.optional_running and v[rm.k[wid]] == 1)
        ),
    )

    whole: dict[tuple[int, int, int], list[int]] = defaultdict(list)
    res_of: dict[int, int] = {}  # reserved host -> its reservation's rank (section 8.5)
    for i, var in rm.e.items():
        p = rm.pools[i]
        chosen = [int(h) for h in p.hosts[: v[var]]]
        whole[(p.block, p.type, p.cap)].extend(chosen)
        if p.res:
            res_of.update((h, p.res) for h in chosen)

    def open_to(h: int, level: int) -> bool:
        res = res_of.get(h, 0)
        return res == 0 or res > level

    started = {
        ci: deque(w for w in c.members if v[rm.y[w]] == 1) for ci, c in enumerate(rm.classes)
    }
    # Gangs inside one region first (the most restricted levels first, so that work that may
    # backfill reserved hosts leaves the others to work that may not), then gangs spread over
    # what the regions leave over (unreserved hosts only).
    for (ci, region), var in sorted(rm.n.items(), key=lambda kv: -rm.classes[kv[0][0]].level):
        c = rm.classes[ci]
        need = 1 if c.single else -(-c.gpus // region[2])
        for _ in range(v[var]):
            there = [h for h in whole[region] if open_to(h, c.level)]
            if not started[ci] or len(there) < need:
                break
            gang = _fewest_racks(ctx, there, need)
            whole[region] = [h for h in whole[region] if h not in gang]
            _hold_if_free(ctx, load, started[ci].popleft(), sorted(gang))
    spare = {r: [h for h in hs if h not in res_of] for r, hs in whole.items()}
    for (ci, (t, cap)), var in rm.m.items():
        need = -(-rm.classes[ci].gpus // cap)
        for _ in range(v[var]):
            regions = sorted(
                (r for r in spare if r[1:] == (t, cap) and spare[r]), key=lambda r: -len(spare[r])
            )
            if not started[ci] or sum(len(spare[r]) for r in regions) < need:
                break
            taken: list[int] = []
            for r in regions:
                part = spare[r][: need - len(taken)]
                spare[r] = spare[r][len(part) :]
                taken.extend(part)
                if len(taken) == need:
                    break
            _hold_if_free(ctx, load, started[ci].popleft(), taken)
    # (type, size) -> (level, work): the most restricted levels place first
    small: dict[tuple[int, int], list[tuple[int, WorkloadId]]] = defaultdict(list)
    for (ci, t), var in rm.phi.items():
        c = rm.classes[ci]
        for _ in range(v[var]):
            if started[ci]:
                small[(t, c.gpus)].append((c.level, started[ci].popleft()))

    slots: dict[tuple[int, int], list[list[int]]] = defaultdict(list)  # -> [pool, count]
    for (i, size), var in rm.x.items():
        if v[var] > 0:
            slots[(rm.pools[i].type, size)].append([i, int(v[var])])
    for t, size in sorted(small, key=lambda key: -key[1]):
        for level, wid in sorted(small[(t, size)], key=lambda lw: -lw[0]):
            for slot in slots[(t, size)]:
                i, count = slot
                pool = rm.pools[i]
                if count <= 0 or not pool.open_to(level):
                    continue
                free = load.free()[pool.hosts]
                fits = np.flatnonzero(free >= size)
                if len(fits) == 0:
                    slot[1] = 0
                    continue
                h = int(pool.hosts[fits[np.argmin(free[fits])]])
                ctx.hold(load, wid, {h: size})
                slot[1] -= 1
                break
    return load


def _fewest_racks(ctx: RoundContext, candidates: list[int], need: int) -> set[int]:
    """`need` of the candidate hosts, from the racks with most candidates first."""
    rack = ctx.hosts.rack_of
    count: dict[int, int] = defaultdict(int)
    for h in candidates:
        count[int(rack[h])] += 1
    ordered = sorted(candidates, key=lambda h: (-count[int(rack[h])], int(rack[h]), h))
    return set(ordered[:need])


def _hold_if_free(ctx: RoundContext, load: Load, workload: WorkloadId, taken: list[int]) -> None:
    """Hold whole hosts if they are still free (a model that decodes cleanly always is)."""
    free = load.free()
    if all(free[h] == ctx.hosts.cap[h] for h in taken):
        ctx.hold(load, workload, {h: int(ctx.hosts.cap[h]) for h in taken})


def hint(ctx: RoundContext, rm: RoundModel, load: Load) -> np.ndarray:
    """The MILP variables that describe `load` (a plan from the greedy), for a warm start."""
    v = np.zeros(rm.model.n_vars)
    hosts = ctx.hosts
    for wid, var in rm.y.items():
        v[var] = float(load.holds(wid))
    for wid, var in rm.k.items():
        v[var] = float(load.holds(wid))
    pool_of: dict[int, int] = {}
    for i, p in enumerate(rm.pools):
        for h in p.hosts:
            pool_of[int(h)] = i
    class_of = {w: ci for ci, c in enumerate(rm.classes) for w in c.members}
    spread_hosts: dict[tuple[int, int, int], int] = defaultdict(int)
    for wid, placement in load.held.items():
        if wid not in class_of:
            continue
        ci = class_of[wid]
        c = rm.classes[ci]
        first = next(iter(placement))
        whole_hosts = all(g == hosts.cap[h] for h, g in placement.items())
        if c.single and not whole_hosts:
            i = pool_of[first]
            x, phi = rm.x.get((i, c.gpus)), rm.phi.get((ci, rm.pools[i].type))
            if x is None or phi is None:  # a place the model cannot express: left waiting
                v[rm.y[wid]] = 0.0
                continue
            v[x] += 1
            v[phi] += 1
            continue
        for h in placement:
            if (e := rm.e.get(pool_of[h])) is not None:
                v[e] += 1
        blocks = {int(hosts.block_of[h]) for h in placement}
        region = (int(hosts.block_of[first]), int(hosts.type_of[first]), int(hosts.cap[first]))
        if len(blocks) == 1 and (ci, region) in rm.n:
            v[rm.n[(ci, region)]] += 1
        elif (key := (ci, region[1:])) in rm.m:
            v[rm.m[key]] += 1
            for h in placement:
                r = (int(hosts.block_of[h]), int(hosts.type_of[h]), int(hosts.cap[h]))
                spread_hosts[r] += 1
    for region, count in spread_hosts.items():
        if region in rm.a:
            v[rm.a[region]] = count
    return v
