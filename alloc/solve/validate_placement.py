"""Placement invariants of a plan (SPEC.md 1 and 2): no host given more GPUs than it has,
nothing new on a host that is not ready, a start of the shape its workload asks for (whole or
not at all, whole hosts of one size and GPU type for a gang larger than one host, one block for
topology block), and the drained hosts exactly those emptied."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import numpy as np

from alloc.domain import Decision, HostName, Plan, Snapshot, Topology, Workload
from alloc.readable import counted
from alloc.solve.problem import HostArrays, shapes_of


def overfull(hosts: HostArrays, plan: Plan, used: np.ndarray) -> list[str]:
    """(1) Each host given more GPUs than it has, with what holds them."""
    problems = []
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
    return problems


def where(placement: Mapping[HostName, int]) -> str:
    """`h1: 8, h2: 8`, or `no host`."""
    return ", ".join(f"{h}: {g}" for h, g in placement.items()) or "no host"


def start_shape(snapshot: Snapshot, hosts: HostArrays, w: Workload, d: Decision) -> list[str]:
    name = w.id
    out = []
    unknown = [h for h in d.hosts if h not in hosts.index]
    if unknown:
        return [f"{name}: starts on {', '.join(unknown)}, not hosts of the instance (1)"]
    idx = [hosts.index[h] for h in d.hosts]
    if not idx:
        return [f"{name}: starts on no host (a start names its hosts and their GPUs) (2)"]
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
                f"{name}: given {counted(gpus, 'GPU')} ({where(d.hosts)}), but it asks for "
                f"{counted(w.gpus, 'GPU')} (2)"
            )
        if len(idx) != 1:
            out.append(
                f"{name}: spread over {len(idx)} hosts ({where(d.hosts)}), but its "
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


def drain_problems(
    snapshot: Snapshot, hosts: HostArrays, plan: Plan, used: np.ndarray
) -> list[str]:
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
                "and retired hosts drain) (models/round.md 1.1)"
            )
        if h.name in listed and not empty:
            holding = ", ".join(
                d.workload for d in plan.decisions if d.action.holds_gpus and h.name in d.hosts
            )
            out.append(
                f"host {h.name}: listed as drained, but {counted(int(used[i]), 'GPU')} of it "
                f"stay held ({holding}) (models/round.md 1.1)"
            )
        if h.state.draining and empty and h.name not in listed:
            out.append(
                f"host {h.name}: {h.state.value} and empty after the plan, so drained, but not "
                "listed in drained_hosts (models/round.md 1.1)"
            )
    for name in sorted(listed - set(hosts.index)):
        out.append(
            f"host {name}: listed as drained, but not a host of the instance (models/round.md 1.1)"
        )
    return out
