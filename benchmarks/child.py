"""One benchmark run in its own process: build the instance, run one round, measure, print JSON.

    python -m benchmarks.child '{"family": "scale", "gpus": 1024, "seed": 1, "solver": "milp"}'

Prints exactly one JSON line on stdout. Peak memory is this process's
`getrusage(RUSAGE_SELF).ru_maxrss` read after the round and its checks (so it includes the
interpreter, OR-Tools, the instance and the round), in MiB.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

import numpy as np

from alloc.domain import Action, Occupancy, Plan, Policy, Snapshot
from alloc.generate import GeneratorSpec, generate
from alloc.round import RoundOptions, run_round
from alloc.solve.placement import place
from alloc.solve.problem import host_arrays, shapes_of
from alloc.solve.validate import validate
from benchmarks.fragmentation import LARGE_GANG_GPUS, FragmentationSpec, fragmentation_snapshot

# Budget nodes per level of the scale family's trees: the sizes the generator built for
# (4, 15, 150) and (2, 4, 12) before it counted every level in all (issue 18), kept so these
# instances stay as large as those of the results recorded before.
LEVELS = (4, 15, 600)
SMALL_LEVELS = (2, 4, 24)  # the 128-GPU instances


def build(job: dict[str, Any]) -> Snapshot:
    policy = Policy(mip_gap=job["mip_gap"], time_limit_s=job["time_limit_s"])
    if job["family"] in ("scale", "stopgap"):
        gpus = job["gpus"]
        levels = LEVELS if gpus >= 1024 else SMALL_LEVELS
        spec = GeneratorSpec(
            hosts=gpus // 8, hosts_per_block=32, levels=levels, demand=3.0, seed=job["seed"]
        )
        return generate(spec, policy)
    if job["family"] == "fragmentation":
        frag = FragmentationSpec(hosts=job["gpus"] // 8, seed=job["seed"])
        return fragmentation_snapshot(frag, policy)
    raise ValueError(f"unknown family {job['family']!r}")


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def idle_check(snapshot: Snapshot, plan: Plan) -> dict[str, Any]:
    """Free ready GPUs after the round, and the waiting workloads that would fit into them
    (a single-host workload on one ready host of its type with enough free GPUs; a larger one on
    whole free hosts, inside one block when its topology says so)."""
    hosts = host_arrays(snapshot)
    used = np.zeros(hosts.count, np.int64)
    for d in plan.decisions:
        if d.action.holds_gpus:
            for h, g in d.hosts.items():
                used[hosts.index[h]] += g
    free = np.where(hosts.ready, np.maximum(hosts.cap - used, 0), 0)
    waiting = [snapshot.by_id[d.workload] for d in plan.decisions if d.action is Action.WAIT]
    shapes = shapes_of(waiting, hosts)
    fits_by_shape: dict[int, bool] = {}
    fitting = []
    for w in waiting:
        sh = shapes[w.id]
        if id(sh) not in fits_by_shape:
            fits_by_shape[id(sh)] = place(sh, free, hosts) is not None
        if fits_by_shape[id(sh)]:
            fitting.append(w)
    return {
        "free_gpus": int(free.sum()),
        "waiting": len(waiting),
        "waiting_that_fit": len(fitting),
        "waiting_that_fit_examples": [f"{w.id} ({w.gpus} GPUs)" for w in fitting[:5]],
    }


def plan_details(snapshot: Snapshot, plan: Plan) -> dict[str, Any]:
    counts = {a.value: 0 for a in Action}
    for d in plan.decisions:
        counts[d.action.value] += 1
    preempted_gpus = sum(
        sum(snapshot.by_id[d.workload].hosts.values())
        for d in plan.decisions
        if d.action is Action.PREEMPT
    )
    queued_large = [w for w in snapshot.workloads if not w.running and w.gpus >= LARGE_GANG_GPUS]
    started_large = [
        snapshot.by_id[d.workload]
        for d in plan.decisions
        if d.action is Action.START and snapshot.by_id[d.workload].gpus >= LARGE_GANG_GPUS
    ]
    small_starts = [
        d
        for d in plan.decisions
        if d.action is Action.START and snapshot.by_id[d.workload].gpus < LARGE_GANG_GPUS
    ]
    return {
        "actions": counts,
        "preemptions": counts["preempt"],
        "preempted_gpus": preempted_gpus,
        "queued_large": len(queued_large),
        "queued_large_gpus": sum(w.gpus for w in queued_large),
        "started_large": len(started_large),
        "started_large_gpus": sum(w.gpus for w in started_large),
        "started_large_ids": sorted(w.id for w in started_large),
        "started_small": len(small_starts),
        "started_small_gpus": sum(sum(d.hosts.values()) for d in small_starts),
        "hosts_with_small_starts": len({h for d in small_starts for h in d.hosts}),
        "blocks_with_small_starts": len(
            {snapshot.cluster.host(h).block for d in small_starts for h in d.hosts}
        ),
        "blocks": len({h.block for h in snapshot.cluster.hosts}),
        "allocated_gpus_held": sum(
            d.gpus_held for d in plan.decisions if d.occupancy is Occupancy.ALLOCATED
        ),
    }


def tiers(snapshot: Snapshot) -> dict[str, Any]:
    """Fragmentation family only: which large gangs are entitled this round (fair-share cut)."""
    from alloc.policy.weights import Tier
    from alloc.solve.context import round_context

    ctx = round_context(snapshot)
    large = [w for w in snapshot.workloads if not w.running and w.gpus >= LARGE_GANG_GPUS]
    small = [w for w in snapshot.workloads if not w.running and w.gpus < LARGE_GANG_GPUS]
    entitled_large = [w for w in large if ctx.weights.tier.get(w.id) is Tier.ENTITLED]
    return {
        "entitled_large": len(entitled_large),
        "entitled_large_gpus": sum(w.gpus for w in entitled_large),
        "entitled_large_ids": sorted(w.id for w in entitled_large),
        "queued_small": len(small),
        "queued_small_gpus": sum(w.gpus for w in small),
        "entitled_small": sum(ctx.weights.tier.get(w.id) is Tier.ENTITLED for w in small),
    }


def greedy_breakdown(snapshot: Snapshot) -> dict[str, float]:
    """A second, separately timed greedy on the same snapshot: the round context (standings,
    fair-share order, weights, shapes) apart from the greedy pass and its repair."""
    from alloc.solve.context import round_context
    from alloc.solve.greedy import greedy
    from alloc.solve.repair import complete

    t0 = time.perf_counter()
    ctx = round_context(snapshot)
    t1 = time.perf_counter()
    complete(ctx, greedy(ctx))
    t2 = time.perf_counter()
    return {"context_seconds": t1 - t0, "greedy_pass_seconds": t2 - t1}


def run(job: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    snapshot = build(job)
    build_seconds = time.perf_counter() - t0
    rss_before = max_rss_mib()
    t1 = time.perf_counter()
    plan = run_round(snapshot, RoundOptions(solver=job["solver"], time_limit_s=job["time_limit_s"]))
    wall = time.perf_counter() - t1
    problems = validate(snapshot, plan)
    out: dict[str, Any] = dict(job)
    r = plan.report
    m = plan.metrics
    out.update(
        workloads=len(snapshot.workloads),
        running=sum(w.running for w in snapshot.workloads),
        queued=sum(not w.running for w in snapshot.workloads),
        hosts=len(snapshot.cluster.hosts),
        build_seconds=build_seconds,
        report_solver=r.solver,
        status=r.status,
        objective=r.objective,
        bound=r.bound,
        gap=r.gap,
        solve_seconds=r.solve_seconds,
        note=r.note,
        occupancy=m.get("occupancy"),
        allocated_occupancy=m.get("allocated_occupancy"),
        unallocated_occupancy=m.get("unallocated_occupancy"),
        ready_gpus=m.get("ready_gpus"),
        greedy_seconds=m.get("greedy_seconds"),
        round_seconds=m.get("round_seconds"),
        run_round_wall_seconds=wall,
        violations=len(problems),
        violation_examples=problems[:5],
        idle=idle_check(snapshot, plan),
        plan=plan_details(snapshot, plan),
        rss_before_round_mib=rss_before,
    )
    out["peak_rss_mib"] = max_rss_mib()  # read before the extra measurements below
    if job["family"] == "fragmentation":
        out["tiers"] = tiers(snapshot)
    if job["solver"] == "greedy":
        out["breakdown"] = greedy_breakdown(snapshot)
    return out


def main() -> None:
    job = json.loads(sys.argv[1])
    print(json.dumps(run(job)), flush=True)


if __name__ == "__main__":
    main()
