"""A Kubernetes cluster as the round sees it: Nodes -> hosts, the pods `alloc` manages ->
workloads. Pure functions of the API's objects as JSON (what the client's
`sanitize_for_serialization` gives) and the site's mapping; `KubernetesExecutor` calls the API.

Hosts: GPUs from the node's allocatable `nvidia.com/gpu` (the site may name another resource;
nodes without GPUs are left out); GPU type, block and rack from the labels the site names
(defaults `nvidia.com/gpu.product`, `alloc.dev/block`, `alloc.dev/rack`; without them: the
site's default type, one block, a rack per node). State: a node whose `Ready` condition is not
True, or with a `NoExecute` taint, is `maintenance` (nothing runs there); a cordoned node
(`unschedulable`) or one with another `NoSchedule` taint is `unhealthy` (drain, then repair),
or `retired` (drain, then remove) when it carries the site's retire label; else `ready`. A
node `alloc` drained (cordoned, annotated `alloc.dev/cordoned`, tainted `alloc.dev/drained`)
is `ready` again once the repair system removes that taint: the next apply uncordons it.

Workloads: the pods whose `schedulerName` is the site's (default `alloc`: no other scheduler
serves it, so nothing binds them before `alloc` decides), in the managed namespaces (all when
none is named), pending or bound, not yet ended. Pods that share the label `alloc.dev/workload`
(else the Job that owns them: its `job-name` label and owner reference) in a namespace form one
workload, a gang; a pod with neither is a workload alone. Its id is `namespace/name`; its
budget is the site's mapping of `namespace/queue` (the pods' label `alloc.dev/queue`) or of
the namespace alone (unmapped: unfunded); its GPUs are the sum of its pods' GPU requests
(limits when no request); its GPU type is the pods' node selector on the type label. The
contract is in the pods' annotations:

    alloc.dev/min-runtime: 2h      (required for allocated work)
    alloc.dev/resumable: "true"    (default true)
    alloc.dev/priority: "3"        (default 0)
    alloc.dev/topology: block      (block | any; default block when larger than one node)

    alloc.dev/gang-size: "4"       (a gang's pods; default: its Job's parallelism, else the
                                    pods found)

A gang whose pods declare different contracts, or a pod whose annotations do not read, runs as
unallocated work (minimum runtime 0) with the reason for `alloc status`. Left out with the
reason, never placed: a gang that has not started while it misses pods it declares (or its Job
will create); pods of different things that share an id (a bare pod named like a Job, a gang
label on it); a pod whose node selector or required node affinity only some nodes of its GPU
type meet (alloc.adapters.kubernetes.constraints). A workload runs once
every pod is bound (`spec.nodeName`); it started when it was bound (the `PodScheduled`
condition the API server sets, else `alloc.dev/started`, kept between the pod's creation and
now). A single pod larger than every node of its type is left out with the reason, and so is
a gang bound only in part (a crash inside an apply): the next apply requeues its bound pods.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from alloc.adapters.base import unfunded_note
from alloc.adapters.contract import JobContract, contract_of
from alloc.adapters.kubernetes.constraints import unmet
from alloc.adapters.kubernetes.gangs import (
    missing_pods,
    source,
    workload_key,
)
from alloc.adapters.kubernetes.times import ended_at, read_time, started_at
from alloc.domain import BudgetPath, Cluster, Host, HostName, HostState, Workload, WorkloadId

PREFIX = "alloc.dev/"
QUEUE_LABEL = PREFIX + "queue"
PREEMPTIONS = PREFIX + "preemptions"  # how often the pod was requeued by `alloc`
DRAIN_TAINT = PREFIX + "drained"  # the taint `apply` puts on a drained node
CORDONED = PREFIX + "cordoned"  # on a node `apply` cordoned (so that it uncordons only those)
# The contract's keys as annotations (alloc.adapters.contract.KEYS).
ANNOTATIONS = {
    "min_runtime": PREFIX + "min-runtime",
    "resumable": PREFIX + "resumable",
    "priority": PREFIX + "priority",
    "topology": PREFIX + "topology",
}
MAX_ANNOTATION = 256  # a longer contract value is not read (annotations are user input)
_ENDED = {"Succeeded", "Failed"}


@dataclass(frozen=True, slots=True)
class KubeSite:
    """How a Kubernetes cluster maps to alloc's terms (the controller config's `kubernetes:`
    part)."""

    queues: Mapping[str, BudgetPath] = field(default_factory=dict)  # ns or ns/queue -> budget
    namespaces: tuple[str, ...] = ()  # managed namespaces; () = all
    scheduler_name: str = "alloc"
    gpu_resource: str = "nvidia.com/gpu"
    gpu_type_label: str = "nvidia.com/gpu.product"
    block_label: str = PREFIX + "block"
    rack_label: str = PREFIX + "rack"
    retire_label: str = PREFIX + "retire"
    default_gpu_type: str = "gpu"


@dataclass(frozen=True, slots=True)
class KubePod:
    namespace: str
    name: str
    gpus: int
    node: str | None  # bound to
    uid: str = ""


@dataclass(frozen=True, slots=True)
class KubeWorkload:
    """A workload as read, with the pods `alloc` acts on."""

    workload: Workload
    pods: tuple[KubePod, ...]
    problem: str = ""  # why it is read otherwise than declared: its contract not used (it
    # runs as unallocated work), its namespace and queue mapped to no budget node (unfunded)
    blocked: str = ""  # why no round may place it now (left out of the snapshot)
    no_budget: str = ""  # why it has no budget: its namespace (and queue) mapped to no node


def hosts_from_nodes(nodes: Iterable[Mapping[str, Any]], site: KubeSite) -> tuple[Host, ...]:
    hosts = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        gpus = _quantity(allocatable.get(site.gpu_resource))
        if gpus <= 0:
            continue  # not a GPU node: nothing of ours runs there
        labels = meta.get("labels") or {}
        name = HostName(str(meta["name"]))
        hosts[name] = Host(
            name,
            gpus,
            str(labels.get(site.gpu_type_label) or site.default_gpu_type),
            str(labels.get(site.block_label) or "default"),
            str(labels.get(site.rack_label) or name),
            host_state(node, site),
        )
    return tuple(hosts[n] for n in sorted(hosts))


def host_state(node: Mapping[str, Any], site: KubeSite) -> HostState:
    spec = node.get("spec") or {}
    conditions = (node.get("status") or {}).get("conditions") or ()
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    taints = spec.get("taints") or ()
    if not ready or any(t.get("effect") == "NoExecute" for t in taints):
        return HostState.MAINTENANCE
    meta = node.get("metadata") or {}
    # Cordoned by alloc, and its drain taint removed by the repair system: alloc's own
    # cordon no longer counts (the next apply lifts it); every other mark still does.
    labels = meta.get("labels") or {}
    repaired = (
        CORDONED in (meta.get("annotations") or {})
        and not any(t.get("key") == DRAIN_TAINT for t in taints)
        and site.retire_label not in labels
    )
    cordoned = bool(spec.get("unschedulable")) and not repaired
    if cordoned or any(t.get("effect") == "NoSchedule" for t in taints):
        return HostState.RETIRED if site.retire_label in labels else HostState.UNHEALTHY
    return HostState.READY


def is_managed(pod: Mapping[str, Any], site: KubeSite) -> bool:
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    return spec.get("schedulerName") == site.scheduler_name and (
        not site.namespaces or namespace in site.namespaces
    )


def pod_gpus(pod: Mapping[str, Any], site: KubeSite) -> int:
    """GPUs a pod asks for: the sum over its containers of the request (the limit when there
    is no request, as Kubernetes defaults extended resources)."""
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or ():
        resources = c.get("resources") or {}
        value = (resources.get("requests") or {}).get(site.gpu_resource)
        if value is None:
            value = (resources.get("limits") or {}).get(site.gpu_resource)
        total += _quantity(value)
    return total


def workloads_from_pods(
    pods: Iterable[Mapping[str, Any]],
    site: KubeSite,
    cluster: Cluster,
    max_min_runtime_s: float,
    now: datetime,
    nodes: Iterable[Mapping[str, Any]] = (),
    jobs: Mapping[tuple[str, str], int] | None = None,
) -> tuple[KubeWorkload, ...]:
    """The managed workloads pending or bound (ended pods are `ended_from_pods`'). `nodes`
    (the API's) are for the pods' node constraints (alloc.adapters.kubernetes.constraints),
    `jobs` the gang sizes of Jobs (`job_sizes`)."""
    groups: defaultdict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    finished: defaultdict[tuple[str, str], int] = defaultdict(int)
    for pod in pods:
        if not is_managed(pod, site):
            continue
        phase = (pod.get("status") or {}).get("phase")
        if phase not in _ENDED:
            groups[workload_key(pod)].append(pod)
        elif phase == "Succeeded":
            finished[workload_key(pod)] += 1
    labels = {
        str((n.get("metadata") or {}).get("name")): (n.get("metadata") or {}).get("labels") or {}
        for n in nodes
    }
    labels = {name: found for name, found in labels.items() if name in cluster.by_name}
    out = []
    for key, members in groups.items():
        read = _workload(key, members, site, cluster, max_min_runtime_s, now)
        if read is not None and not read.blocked:
            read = _check_whole(read, key, members, site, labels, jobs or {}, finished[key])
        out.append(read)
    return tuple(sorted((w for w in out if w is not None), key=lambda w: w.workload.id))


def ended_from_pods(
    pods: Iterable[Mapping[str, Any]], site: KubeSite, cluster: Cluster, max_min_runtime_s: float
) -> tuple[tuple[Workload, datetime], ...]:
    """Workloads whose pods all ended after running (started set), with when the last ended."""
    groups: defaultdict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for pod in pods:
        if is_managed(pod, site):
            groups[workload_key(pod)].append(pod)
    out = []
    for key, members in groups.items():
        if not all((p.get("status") or {}).get("phase") in _ENDED for p in members):
            continue
        if not all((p.get("spec") or {}).get("nodeName") for p in members):
            continue  # never ran
        end = max(ended_at(p) for p in members)
        read = _workload(key, members, site, cluster, max_min_runtime_s, end)
        if read is not None and read.workload.started is not None and not read.blocked:
            out.append((read.workload, end))
    return tuple(out)


def _workload(
    key: tuple[str, str],
    members: list[Mapping[str, Any]],
    site: KubeSite,
    cluster: Cluster,
    max_min_runtime_s: float,
    now: datetime,
) -> KubeWorkload | None:
    namespace, name = key
    members = sorted(members, key=lambda p: str(p["metadata"]["name"]))
    pods = tuple(
        KubePod(
            namespace,
            str(p["metadata"]["name"]),
            pod_gpus(p, site),
            (p.get("spec") or {}).get("nodeName") or None,
            str(p["metadata"].get("uid") or ""),
        )
        for p in members
    )
    gpus = sum(p.gpus for p in pods)
    if gpus <= 0:
        return None  # asks for no GPU: not ours to place
    contracts = {_contract(p, max_min_runtime_s) for p in members}
    contract = (
        contracts.pop()
        if len(contracts) == 1
        else JobContract(problem="its pods declare different contracts")
    )
    labels = members[0]["metadata"].get("labels") or {}
    queue = labels.get(QUEUE_LABEL)
    budget = site.queues.get(f"{namespace}/{queue}") if queue else None
    budget = budget or site.queues.get(namespace)
    selector = (members[0].get("spec") or {}).get("nodeSelector") or {}
    gpu_type = selector.get(site.gpu_type_label)
    bound = [p for p in pods if p.node]
    placed: dict[HostName, int] = defaultdict(int)
    for p in bound:
        placed[HostName(p.node or "")] += p.gpus
    running = bool(bound) and len(bound) == len(pods)
    workload = Workload(
        id=WorkloadId(f"{namespace}/{name}"),
        budget=budget,
        gpus=gpus,
        min_runtime_s=contract.min_runtime_s,
        submitted=min(read_time(p["metadata"].get("creationTimestamp")) or now for p in members),
        resumable=contract.resumable,
        priority=contract.priority,
        topology=contract.topology or cluster.default_topology(gpus, gpu_type),
        gpu_type=gpu_type,
        started=min(started_at(p, now) for p in members) if running else None,
        hosts=dict(placed) if running else {},
    )
    blocked = ""
    if bound and not running:
        blocked = (
            f"bound in part ({len(bound)} of {len(pods)} pods): the next apply requeues "
            "its bound pods"
        )
    elif running and any(h not in cluster.by_name for h in placed):
        blocked = "runs on nodes alloc does not manage"
    elif len(pods) == 1 and gpus > _largest(gpu_type, cluster):
        blocked = f"one pod of {gpus} GPUs: no node of its type has that many"
    elif len(pods) > 1 and not _whole_nodes(pods, gpu_type, cluster):
        sizes = sorted({p.gpus for p in pods})
        blocked = (
            f"{len(pods)} pods of {'/'.join(map(str, sizes))} GPUs: a gang of several pods "
            "takes whole nodes (each pod asks for all of a node's GPUs)"
        )
    problems = [contract.problem] if contract.problem else []
    no_budget = ""
    if budget is None:  # as Slurm's unmapped accounts (alloc.adapters.slurm.read)
        named = f"its namespace {namespace!r}" + (f" and queue {queue!r} are" if queue else " is")
        no_budget = f"{named} not mapped to a budget node (kubernetes.queues)"
        problems.append(unfunded_note(no_budget))
    return KubeWorkload(workload, pods, "; ".join(problems), blocked, no_budget)


def _check_whole(
    read: KubeWorkload,
    key: tuple[str, str],
    members: list[Mapping[str, Any]],
    site: KubeSite,
    nodes: Mapping[str, Mapping[str, str]],
    jobs: Mapping[tuple[str, str], int],
    finished: int = 0,
) -> KubeWorkload:
    """Blocked, with the reason, when its pods come from things that share its id, when a gang
    that has not started misses pods it declares, or when its pods ask for nodes that only
    some of its type are."""
    sources = sorted({source(p) for p in members})
    why = ""
    if len(sources) > 1:
        why = (
            f"the id {read.workload.id} names {' and '.join(sources)}: rename one (pods of "
            "different workloads are never one gang)"
        )
    elif not read.workload.running:
        why = missing_pods(key, members, jobs, len(read.pods), finished) or next(
            (
                found
                for p in members
                if (found := unmet(p, nodes, site.gpu_type_label, read.workload.gpu_type))
            ),
            "",
        )
    return replace(read, blocked=why) if why else read


def _contract(pod: Mapping[str, Any], max_min_runtime_s: float) -> JobContract:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    fields = {}
    for key, name in ANNOTATIONS.items():
        value = annotations.get(name)
        if value is None:
            continue
        if len(str(value)) > MAX_ANNOTATION:
            return JobContract(problem=f"{name} longer than {MAX_ANNOTATION} characters")
        fields[key] = str(value)
    if not fields:
        return JobContract()
    return contract_of(fields, max_min_runtime_s, ANNOTATIONS)


def _largest(gpu_type: str | None, cluster: Cluster) -> int:
    return max(
        (h.gpus for h in cluster.hosts if gpu_type is None or h.gpu_type == gpu_type), default=0
    )


def _whole_nodes(pods: tuple[KubePod, ...], gpu_type: str | None, cluster: Cluster) -> bool:
    sizes = {h.gpus for h in cluster.hosts if gpu_type is None or h.gpu_type == gpu_type}
    return all(p.gpus in sizes for p in pods)


def _quantity(value: object) -> int:
    """A whole count of an extended resource ("8", 8); anything else (fractions, suffixes,
    garbage) counts 0: GPUs are whole."""
    try:
        number = float(str(value)) if value is not None else 0.0
    except ValueError:
        return 0
    return int(number) if math.isfinite(number) and number == int(number) and number > 0 else 0
