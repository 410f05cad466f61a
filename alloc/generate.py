"""A seeded generator of instances shaped like a research lab (`alloc generate`, benchmarks).

Builds a cluster of blocks of hosts, a budget tree with a given number of nodes per level,
usage over the window spread around each leaf's allocation, running work (some protected,
some past its minimum runtime, some unallocated) packed onto the hosts, and a queue that
brings total demand to a multiple of the cluster. Every workload states its `runtime`, the
work it still has to do (what `alloc simulate` needs; a round ignores it), drawn log-uniform
as the synthetic trace's are (`alloc.sim.synthetic`): 5-40 minutes for debug work, 12-48
hours for 64 GPUs or more, 1-24 hours otherwise; from a random stream of its own, so that
the rest of an instance is what it was before runtimes were written (benchmarks/ reads
generated instances).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from alloc.domain import (
    HOUR_S,
    BudgetNode,
    BudgetPath,
    BudgetTree,
    Cluster,
    Host,
    HostName,
    HostState,
    Policy,
    Snapshot,
    Topology,
    Workload,
    WorkloadId,
)

PROGRAM_NAMES = ("nlp", "vision", "robotics", "science", "speech", "safety", "systems", "bio")
DEFAULT_SIZES = {
    1: 0.22,
    2: 0.1,
    4: 0.14,
    8: 0.22,
    16: 0.12,
    32: 0.1,
    64: 0.06,
    128: 0.03,
    256: 0.01,
}


# Budget nodes a generated tree may have below its root (a lab's tree has hundreds).
MAX_NODES = 100_000


@dataclass(frozen=True, slots=True)
class GeneratorSpec:
    hosts: int = 128
    gpus_per_host: int = 8
    hosts_per_block: int = 32
    hosts_per_rack: int = 4
    gpu_type: str = "h100"
    levels: tuple[int, ...] = (4, 15, 150)  # budget nodes per level below the root, in all
    even: bool = False  # every node of a level has as many children (else a random spread)
    demand: float = 2.5  # total GPUs asked for (running + queued) / ready GPUs
    sizes: dict[int, float] = field(default_factory=lambda: dict(DEFAULT_SIZES))
    cap_sizes: bool = True  # drop sizes above a quarter of the ready GPUs
    running: float = 0.9  # fraction of ready GPUs held by running work
    protected: float = 0.5  # of running allocated work, the fraction inside its minimum runtime
    unallocated: float = 0.15  # fraction of workloads with minimum runtime 0
    unfunded: float = 0.02  # fraction of workloads with no budget
    debug: float = 0.15  # fraction of small workloads that are debug work (<= 15 minutes)
    unhealthy: float = 0.0  # fraction of hosts draining
    block_topology: float = 0.8  # fraction of multi-host gangs asking for one block
    seed: int = 1
    now: datetime = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    name: str = "generated"


def estimated_values(spec: GeneratorSpec) -> int:
    """About how many YAML values (scalars and collections, as `alloc.io.limits` counts them)
    the instance `generate(spec)` writes, without generating it: ~7 per budget node, ~16 per
    workload, ~4 more per running workload and 2 per host it runs on (within a few percent of
    the count at 256 to 4,096 hosts; tests/test_generate.py). `alloc generate` refuses up
    front an instance it could not read back."""
    ready = spec.hosts * spec.gpus_per_host * (1.0 - spec.unhealthy)
    sizes = _capped(spec, int(ready))
    weight = sum(sizes.values())
    mean_gpus = sum(g * p for g, p in sizes.items()) / weight
    mean_hosts = sum(max(1, -(-g // spec.gpus_per_host)) * p for g, p in sizes.items()) / weight
    workloads = max(spec.demand, spec.running) * ready / mean_gpus
    running = spec.running * ready / mean_gpus
    return round(100 + 7 * sum(spec.levels) + 16 * workloads + running * (4 + 2 * mean_hosts))


def _capped(spec: GeneratorSpec, ready_gpus: int) -> dict[int, float]:
    """The mix of sizes drawn from: with `cap_sizes`, none above a quarter of the ready GPUs."""
    if not spec.cap_sizes:
        return spec.sizes
    largest = max(1, ready_gpus // 4)
    return {g: p for g, p in spec.sizes.items() if g <= largest} or {1: 1.0}


def generate(spec: GeneratorSpec, policy: Policy | None = None) -> Snapshot:
    rng = random.Random(spec.seed)
    policy = policy or Policy()
    cluster = _cluster(spec, rng)
    tree = _tree(spec, rng)
    leaves = tree.leaves()
    capacity_h = cluster.ready_gpus * policy.lookback_s / HOUR_S
    usage = {
        leaf: round(
            tree.effective_allocation(leaf) * capacity_h * 0.85 * rng.lognormvariate(0, 0.4)
        )
        for leaf in leaves
    }
    sizes = _capped(spec, cluster.ready_gpus)  # keep every workload within a quarter
    weights = [tree.effective_allocation(leaf) for leaf in leaves]
    workloads: list[Workload] = []
    packer = _Packer(cluster, spec.gpus_per_host)
    running_target = spec.running * cluster.ready_gpus
    held = 0
    failures = 0
    while held < running_target and failures < 50:
        w = _workload(spec, rng, len(workloads), leaves, weights, sizes, policy)
        placed = packer.pack(w)
        if placed is None:
            failures += 1
            continue
        started = _started(spec, rng, w)
        submitted = started - timedelta(seconds=rng.randrange(0, 7200))
        w = _replace(w, started=started, hosts=placed, submitted=submitted)
        workloads.append(w)
        held += w.gpus
    demand_target = spec.demand * cluster.ready_gpus
    total = sum(w.gpus for w in workloads)
    while total < demand_target:
        w = _workload(spec, rng, len(workloads), leaves, weights, sizes, policy)
        workloads.append(w)
        total += w.gpus
    work = random.Random(f"generate-runtime:{spec.seed}")
    workloads = [_replace(w, runtime_s=_runtime_s(work, w)) for w in workloads]
    return Snapshot(
        now=spec.now,
        policy=policy,
        cluster=cluster,
        budgets=tree,
        usage_gpu_hours={BudgetPath(k): v for k, v in usage.items()},
        workloads=tuple(workloads),
    )


def _cluster(spec: GeneratorSpec, rng: random.Random) -> Cluster:
    width = max(3, len(str(spec.hosts)))
    hosts = []
    for i in range(spec.hosts):
        state = HostState.UNHEALTHY if rng.random() < spec.unhealthy else HostState.READY
        hosts.append(
            Host(
                name=HostName(f"h{i + 1:0{width}d}"),
                gpus=spec.gpus_per_host,
                gpu_type=spec.gpu_type,
                block=f"h-b{i // spec.hosts_per_block + 1}",
                rack=f"h-r{i // spec.hosts_per_rack + 1}",
                state=state,
            )
        )
    return Cluster(spec.name, tuple(hosts))


def _tree(spec: GeneratorSpec, rng: random.Random) -> BudgetTree:
    def names(level: int, count: int, parent: str) -> list[str]:
        if level == 0:
            return [
                PROGRAM_NAMES[i] if i < len(PROGRAM_NAMES) else f"p{i + 1}" for i in range(count)
            ]
        prefix = "team" if level == 1 else "r"
        return [f"{prefix}{i + 1}" for i in range(count)]

    # Children per node, level by level: `levels[k]` nodes in all at depth k+1, spread over
    # all the nodes of the level above (each gets at least one), so the tree has exactly the
    # nodes asked for. `spec.even` gives every node the same number (--depth with --width).
    per_level = [
        iter(_split(spec.levels[k + 1], spec.levels[k], rng, spec.even))
        for k in range(len(spec.levels) - 1)
    ]

    def build(level: int, count: int, parent: str) -> list[BudgetNode]:
        shares = [rng.uniform(0.5, 1.5) for _ in range(count)]
        total = sum(shares)
        # Whole tenths of a percent, rounded down: siblings sum to at most 100% exactly, and
        # tenths / 1000 is the float whose repr is that decimal (alloc.io.shares).
        tenths = [math.floor(1000 * s / total) for s in shares]
        out = []
        for name, share in zip(names(level, count, parent), tenths, strict=True):
            kids = next(per_level[level]) if level < len(per_level) else 0
            children = tuple(build(level + 1, kids, name)) if kids else ()
            out.append(
                BudgetNode(name, share / 1000, (f"pm-{name}",) if level == 0 else (), children)
            )
        return out

    return BudgetTree(
        BudgetNode("institute", 1.0, ("director",), tuple(build(0, spec.levels[0], "")))
    )


def _split(total: int, parts: int, rng: random.Random, even: bool = False) -> list[int]:
    """Spread `total` children over `parts` parents (total >= parts), at least one each: at
    random, or `even`ly (the first `total % parts` parents get one more)."""
    if even:
        return [total // parts + (i < total % parts) for i in range(parts)]
    counts = [1] * parts
    for _ in range(max(0, total - parts)):
        counts[rng.randrange(parts)] += 1
    return counts


def _workload(
    spec: GeneratorSpec,
    rng: random.Random,
    n: int,
    leaves: tuple[BudgetPath, ...],
    weights: list[float],
    sizes: dict[int, float],
    policy: Policy,
) -> Workload:
    gpus = rng.choices(list(sizes), weights=list(sizes.values()))[0]
    unfunded = rng.random() < spec.unfunded
    budget = None if unfunded else rng.choices(leaves, weights=weights)[0]
    if rng.random() < spec.unallocated:
        min_runtime = 0.0
    elif gpus <= 8 and rng.random() < spec.debug:
        min_runtime = rng.choice((5, 10, 15)) * 60.0
    else:
        min_runtime = min(policy.max_min_runtime_s, rng.choice((1, 2, 4, 6, 8)) * HOUR_S)
    multi = gpus > spec.gpus_per_host
    topology = Topology.BLOCK if multi and rng.random() < spec.block_topology else Topology.ANY
    return Workload(
        id=WorkloadId(f"w{n + 1:05d}"),
        budget=budget,
        gpus=gpus,
        min_runtime_s=min_runtime,
        submitted=spec.now - timedelta(seconds=rng.randrange(0, 48 * 3600)),
        resumable=rng.random() < 0.8,
        priority=rng.choice((0, 0, 0, 0, 1, 2)),
        topology=topology,
    )


def _runtime_s(rng: random.Random, w: Workload) -> float:
    """The work a workload still has to do: log-uniform over its kind's range (as
    `alloc.sim.synthetic` draws them), in whole minutes for debug work, else whole hours."""
    debug = w.gpus <= 8 and 0 < w.min_runtime_s <= 15 * 60
    lo, hi = (5 / 60, 40 / 60) if debug else (12.0, 48.0) if w.gpus >= 64 else (1.0, 24.0)
    hours = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return round(hours * 60) * 60.0 if debug else max(1, round(hours)) * 3600.0


def _started(spec: GeneratorSpec, rng: random.Random, w: Workload) -> datetime:
    protected = w.min_runtime_s > 0 and w.budget is not None and rng.random() < spec.protected
    if protected:
        return spec.now - timedelta(seconds=rng.randrange(0, int(w.min_runtime_s)))
    return spec.now - timedelta(seconds=w.min_runtime_s + rng.randrange(60, int(24 * HOUR_S)))


class _Packer:
    """First fit of running work onto the generated cluster: one host, or whole hosts of one
    block. Free GPUs only shrink, so a cursor per size finds the first fitting host."""

    def __init__(self, cluster: Cluster, gpus_per_host: int) -> None:
        self.hosts = [h for h in cluster.hosts if h.state is HostState.READY]
        self.gpus_per_host = gpus_per_host
        self.free = [h.gpus for h in self.hosts]
        self.cursor: dict[int, int] = {}
        self.whole: dict[str, list[int]] = {}
        for i, h in enumerate(self.hosts):
            self.whole.setdefault(h.block, []).append(i)

    def pack(self, w: Workload) -> dict[HostName, int] | None:
        if w.gpus <= self.gpus_per_host:
            i = self.cursor.get(w.gpus, 0)
            while i < len(self.hosts) and self.free[i] < w.gpus:
                i += 1
            self.cursor[w.gpus] = i
            if i == len(self.hosts):
                return None
            self._take(i, w.gpus)
            return {self.hosts[i].name: w.gpus}
        need = -(-w.gpus // self.gpus_per_host)
        for members in self.whole.values():
            if len(members) >= need:
                chosen = members[:need]
                for i in list(chosen):
                    self._take(i, self.free[i])
                return {self.hosts[i].name: self.hosts[i].gpus for i in chosen}
        return None

    def _take(self, i: int, gpus: int) -> None:
        if self.free[i] == self.hosts[i].gpus:
            self.whole[self.hosts[i].block].remove(i)
        self.free[i] -= gpus


def _replace(w: Workload, **changes: object) -> Workload:
    from dataclasses import replace

    return replace(w, **changes)  # type: ignore[arg-type]
