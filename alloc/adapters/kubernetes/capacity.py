"""Which GPUs of each node a round may give: what the node has, less what is held there.

Held: the GPUs of pods `alloc` does not place (other schedulers' pods, pods created with a
`nodeName`, `alloc`'s pods in namespaces it does not manage) and of its own pods that the
snapshot leaves out but that are bound (a gang bound in part, pods of two things sharing an
id). A node holding more than it has (a pod placed by hand over ours, a GPU lost) keeps the
work `alloc` runs there in the round (still charged, still preemptible), with the reason as a
note, and has no GPU free until it is back within its GPUs. A node whose GPUs are all held is
left out of the snapshot.

`free_gpus` is the same count for `apply`, which credits each eviction that went through and
refuses a start whose planned GPUs are not free (a preemption before it was refused).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from alloc.adapters.kubernetes.read import KubeSite, KubeWorkload, is_managed, pod_gpus
from alloc.domain import Cluster, HostName

_ENDED = ("Succeeded", "Failed")


def others(pods: Iterable[Mapping[str, Any]], site: KubeSite) -> dict[str, int]:
    """GPUs by node of the bound, live pods `alloc` does not manage."""
    out: defaultdict[str, int] = defaultdict(int)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        phase = (pod.get("status") or {}).get("phase")
        if node and phase not in _ENDED and not is_managed(pod, site):
            out[str(node)] += pod_gpus(pod, site)
    return dict(out)


def fit(
    cluster: Cluster, workloads: tuple[KubeWorkload, ...], held_by_others: Mapping[str, int]
) -> tuple[Cluster, tuple[KubeWorkload, ...]]:
    """The cluster less the GPUs held on each node. On a node holding more than it has, the
    work `alloc` runs there stays in the snapshot (it runs: it is charged, and may be
    preempted) with the reason as a note, and the node has no GPU free: what is held there is
    counted only up to what the node has left beside that work (a node whose own work alone
    is more than it has, after a GPU failed, is read as having just that)."""
    ours: defaultdict[str, int] = defaultdict(int)
    held: defaultdict[str, int] = defaultdict(int, held_by_others)
    for w in workloads:
        for pod in w.pods:
            if pod.node:
                (held if w.blocked else ours)[pod.node] += pod.gpus
    over = {
        str(h.name): ours[h.name] + held[h.name]
        for h in cluster.hosts
        if ours[h.name] + held[h.name] > h.gpus
    }
    if over:
        workloads = tuple(
            replace(w, problem=w.problem or _overcommitted(w, over, cluster))
            if not w.blocked and any(p.node in over for p in w.pods)
            else w
            for w in workloads
        )
    hosts = []
    for h in cluster.hosts:
        room = max(h.gpus, ours[h.name])  # never less than the work running there
        left = room - min(held[h.name], room - ours[h.name])
        if left > 0:
            hosts.append(replace(h, gpus=left))
    return Cluster(cluster.name, tuple(hosts)), workloads


def free_gpus(
    cluster: Cluster, workloads: Iterable[KubeWorkload], held_by_others: Mapping[str, int]
) -> dict[str, int]:
    """GPUs of each node no pod holds now (negative on a node holding more than it has)."""
    free = {str(h.name): h.gpus - held_by_others.get(h.name, 0) for h in cluster.hosts}
    for w in workloads:
        for pod in w.pods:
            if pod.node in free:
                free[pod.node] -= pod.gpus
    return free


def _overcommitted(w: KubeWorkload, over: Mapping[str, int], cluster: Cluster) -> str:
    node = next(str(p.node) for p in w.pods if p.node in over)
    has = cluster.by_name[HostName(node)].gpus
    return (
        f"runs on {node}, which holds {over[node]} GPUs of its {has} (pods placed there by "
        "hand or by another scheduler, or a GPU lost): nothing more goes there until it is "
        "within its GPUs"
    )
