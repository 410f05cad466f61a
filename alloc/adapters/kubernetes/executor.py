"""The Kubernetes executor: `snapshot()` reads Nodes and the pods `alloc` manages (their
`schedulerName` is `alloc`'s, so nothing binds them before a plan does; see
alloc.adapters.kubernetes.read); `apply(plan)` acts through the API.

- start: every pod of the workload is bound to a planned node (the Binding subresource), after
  its start time is written on it (`alloc.dev/started`); all or none: if a bind fails, the pods
  already bound are requeued and the start is reported failed.
- preempt: each pod is evicted (an Eviction, so disruption budgets are honoured: a refusal is a
  failed action) and requeued: a pod a controller owns (a Job's) is recreated by it; a bare pod
  is recreated pending with the same spec, its labels and annotations, and the count of its
  preemptions (`alloc.dev/preemptions`), through a note no crash can lose
  (alloc.adapters.kubernetes.requeue).
- wait: nothing to do (a pending pod of `alloc`'s scheduler stays pending).
- drained hosts: cordoned and tainted `alloc.dev/drained=repair:NoSchedule` once no work of
  ours is on them; when the repair system removes that taint, the next apply uncordons the node.
- a gang found bound in part (a crash inside an apply) has its bound pods requeued first, by
  eviction too (a disruption budget may refuse it: reported, tried again next apply).

Pods the snapshot leaves out but that are bound (a gang bound in part, pods of two things that
share an id) still hold their GPUs: the snapshot's hosts have that many fewer.

Applying the same plan twice changes nothing the second time: each action is checked against
the cluster as read at the start of `apply` and reported ok with what was found.

A call without a usable answer (none within the timeout, a 5xx, a list that does not read) is
tried again with backoff by alloc.adapters.kubernetes.api, each failed attempt kept as a fault
that `faults()` hands to the controller; one that still fails fails the read (the round) or
the action it was for, and nothing is assumed of it: the next read shows what happened.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from alloc.adapters.base import (
    ActionResult,
    ApplyReport,
    EndedRun,
    ExecutorFault,
    cluster_snapshot,
)
from alloc.adapters.kubernetes.api import KubeApi, KubeError
from alloc.adapters.kubernetes.capacity import fit, free_gpus, others
from alloc.adapters.kubernetes.constraints import selects
from alloc.adapters.kubernetes.drain import drain, return_repaired
from alloc.adapters.kubernetes.gangs import job_sizes
from alloc.adapters.kubernetes.read import (
    KubePod,
    KubeSite,
    KubeWorkload,
    ended_from_pods,
    host_state,
    hosts_from_nodes,
    is_managed,
    workloads_from_pods,
)
from alloc.adapters.kubernetes.requeue import Requeue
from alloc.adapters.kubernetes.times import STARTED
from alloc.domain import Action, BudgetTree, Cluster, HostName, Plan, Policy, Snapshot, WorkloadId
from alloc.policy.contract import allocated_in


class KubernetesExecutor:
    def __init__(
        self,
        site: KubeSite,
        budgets: BudgetTree,
        api: KubeApi,
        policy: Policy | None = None,
        cluster_name: str = "kubernetes",
    ) -> None:
        self.site = site
        self.budgets = budgets
        self.api = api
        self.policy = policy or Policy()
        self.cluster_name = cluster_name
        self.problems: dict[WorkloadId, str] = {}
        self.unmapped: dict[WorkloadId, str] = {}  # workloads whose namespace has no budget
        self._ended: tuple[EndedRun, ...] = ()
        self.requeue = Requeue(api, site.namespaces, site.scheduler_name)

    # ------------------------------------------------------------------ reading
    def read(self, recover: bool = False) -> KubeRead:
        """The cluster, the managed workloads (blocked ones included, those on a node holding
        more than it has too), and what they were read from. `recover` (apply only, so that
        `alloc status` writes nothing): first finish the requeues a killed controller left."""
        nodes = self.api.nodes()
        cluster = Cluster(self.cluster_name, hosts_from_nodes(nodes, self.site))
        pods = self.api.pods(self.site.scheduler_name, self.site.namespaces)
        by_key = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        if recover and self.requeue.recover(by_key):  # its pods are back: read them
            pods = self.api.pods(self.site.scheduler_name, self.site.namespaces)
        jobs = job_sizes(self.api.jobs(self.site.namespaces))
        held = others(self.api.bound_pods(), self.site)
        limit = self.policy.max_min_runtime_s
        now = datetime.now(UTC)
        workloads = workloads_from_pods(pods, self.site, cluster, limit, now, nodes, jobs)
        room, workloads = fit(cluster, workloads, held)
        self._ended = tuple(
            EndedRun(w.id, w.budget, w.gpus, allocated_in(self.budgets, w), w.started, ended)
            for w, ended in ended_from_pods(pods, self.site, cluster, limit)
            if w.started is not None
        )
        return KubeRead(cluster, room, workloads, nodes, pods, held)

    def snapshot(self) -> Snapshot:
        found = self.read()
        read = ((w.workload, w.problem, w.blocked) for w in found.workloads)
        snapshot, self.problems = cluster_snapshot(
            datetime.now(UTC), self.policy, found.room, self.budgets, read
        )
        self.unmapped = {w.workload.id: w.no_budget for w in found.workloads if w.no_budget}
        return snapshot

    def ended_runs(self) -> tuple[EndedRun, ...]:
        return self._ended

    def notes(self) -> dict[WorkloadId, str]:
        return dict(self.problems)

    def no_budget(self) -> dict[WorkloadId, str]:
        return dict(self.unmapped)

    def faults(self) -> tuple[ExecutorFault, ...]:
        """The failed attempts of API calls since the last call (alloc.adapters.kubernetes.api
        retries them and keeps them, as Slurm's commands do)."""
        return self.api.take_faults()

    def changes(self) -> str:
        """The managed pods with their phases, nodes, labels and annotations, and the nodes
        with their states, GPUs and labels: whatever a round reads."""
        pods = self.api.pods(self.site.scheduler_name, self.site.namespaces)
        nodes = self.api.nodes()
        lines = sorted(
            repr(
                (
                    p["metadata"].get("namespace"),
                    p["metadata"].get("name"),
                    (p.get("status") or {}).get("phase"),
                    (p.get("spec") or {}).get("nodeName"),
                    bool(p["metadata"].get("deletionTimestamp")),
                    sorted((p["metadata"].get("labels") or {}).items()),
                    sorted((p["metadata"].get("annotations") or {}).items()),
                )
            )
            for p in pods
            if is_managed(p, self.site)
        )
        lines += sorted(
            repr(
                (
                    n["metadata"]["name"],
                    str(host_state(n, self.site)),
                    ((n.get("status") or {}).get("allocatable") or {}).get(self.site.gpu_resource),
                    sorted((n["metadata"].get("labels") or {}).items()),
                )
            )
            for n in nodes
        )
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()

    # ------------------------------------------------------------------ acting
    def apply(self, plan: Plan) -> ApplyReport:
        """Gangs bound in part are requeued, then preemptions (they free nodes), then starts,
        then drains."""
        return self.apply_guarded(plan, lambda: None)

    def apply_guarded(self, plan: Plan, check: Callable[[], None]) -> ApplyReport:
        """`apply`, with `check()` before each action (alloc.adapters.base.Guarded): what it
        raises stops the apply there."""
        found = self.read(recover=True)
        workloads, nodes = found.workloads, found.nodes
        raw = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in found.pods}
        by_id = {w.workload.id: w for w in workloads}
        free = free_gpus(found.cluster, workloads, found.held)
        results = []
        for w in workloads:
            if w.blocked.startswith("bound in part"):
                check()
                try:
                    # its status may change (a kubelet starting it): stop it all the same
                    self._requeue([p for p in w.pods if p.node], raw, as_read=False)
                    _credit(free, w.pods)
                except KubeError as e:  # reported; the rest of the plan still applies
                    results.append(ActionResult(w.workload.id, Action.PREEMPT, False, str(e)))
        order = {Action.PREEMPT: 0, Action.START: 1}
        acting = sorted(
            (d for d in plan.decisions if d.action in order), key=lambda d: order[d.action]
        )
        for d in acting:
            check()
            target = by_id.get(d.workload)
            if target is None or target.blocked:
                why = target.blocked if target is not None else "no such workload in Kubernetes"
                results.append(ActionResult(d.workload, d.action, False, why))
                continue
            try:
                if d.action is Action.PREEMPT:
                    ok, detail = self._preempt(target, raw)
                    if ok and not detail.startswith("already"):
                        _credit(free, target.pods)
                else:
                    ok, detail = self._start(target, dict(d.hosts), raw, free)
            except KubeError as e:
                ok, detail = False, str(e)
            results.append(
                ActionResult(
                    d.workload,
                    d.action,
                    ok,
                    detail,
                    datetime.now(UTC),
                    changed=not detail.startswith("already"),
                )
            )
        busy = {p.node for w in workloads for p in w.pods if p.node}
        by_name = {n["metadata"]["name"]: n for n in nodes}
        hosts = []
        for h in plan.drained_hosts:
            check()
            hosts.append(drain(self.api, h, by_name.get(h), h in busy))
        check()
        hosts += return_repaired(self.api, self.site, nodes, set(plan.drained_hosts))
        return ApplyReport(tuple(results), tuple(hosts))

    def _start(
        self,
        found: KubeWorkload,
        hosts: dict[HostName, int],
        raw: Mapping[tuple[str, str], Any],
        free: dict[str, int],
    ) -> tuple[bool, str]:
        w = found.workload
        where = ",".join(sorted(hosts))
        if w.running:
            if dict(w.hosts) == hosts:
                return True, f"already running on {where}"
            return False, f"already running elsewhere ({','.join(sorted(w.hosts))})"
        targets = _assign(found.pods, hosts)
        if targets is None:
            sizes = "/".join(str(p.gpus) for p in found.pods)
            return False, f"its pods ({sizes} GPUs) do not fit the planned {hosts}"
        short = sorted(h for h, gpus in hosts.items() if free.get(h, 0) < gpus)
        if short:  # a preemption before it was refused, or work alloc does not manage
            room = ", ".join(f"{h} has {max(0, free.get(h, 0))} free" for h in short)
            return False, f"not started: {room} (the work that was to leave is still there)"
        started = datetime.now(UTC).isoformat().replace("+00:00", "Z")
        bound: list[KubePod] = []
        try:
            for pod, node in targets:
                self.api.annotate(pod.namespace, pod.name, {STARTED: started})
                self.api.bind(pod.namespace, pod.name, node)
                bound.append(pod)
        except KubeError as e:
            if not bound:
                return False, str(e)
            try:
                self._requeue(bound, raw, as_read=False)  # just bound by us: changed
            except KubeError as undo:  # bound in part: the next apply requeues the rest
                return False, f"{e} (all or none: requeueing its {len(bound)} bound pods: {undo})"
            return False, f"{e} (all or none: {len(bound)} bound pods requeued)"
        for h, gpus in hosts.items():
            free[h] = free.get(h, 0) - gpus
        return True, f"bound on {where}"

    def _preempt(self, found: KubeWorkload, raw: Mapping[tuple[str, str], Any]) -> tuple[bool, str]:
        if not found.workload.running:
            return True, "already stopped"
        self._requeue(list(found.pods), raw)
        return True, "evicted, requeued"

    def _requeue(
        self, pods: list[KubePod], raw: Mapping[tuple[str, str], Any], as_read: bool = True
    ) -> None:
        """Evict each pod, then put each back in the queue (alloc.adapters.kubernetes.requeue);
        `as_read`: only if it has not changed since `raw` was read (a pod that succeeded
        meanwhile is not run again). A refused eviction stops the rest; what was stopped is
        still requeued, not lost, and the refusal is raised (KubeError 429, a disruption
        budget's; 409, a pod that changed)."""
        if len(pods) > 1:  # a gang: asked first, so that a refusal stops none of it
            self._budgets_allow(pods, raw)
            for pod in pods:
                try:
                    found = raw.get((pod.namespace, pod.name))
                    self.requeue.may_stop(pod.namespace, pod.name, found, as_read)
                except KubeError as e:
                    raise _refusal(e, pod.name) from None
        stopped: list[KubePod] = []
        try:
            for pod in pods:
                found = raw.get((pod.namespace, pod.name))
                self.requeue.stop(pod.namespace, pod.name, found, as_read)
                stopped.append(pod)
        except KubeError as e:
            for pod in stopped:
                self.requeue.again(pod.namespace, pod.name, raw.get((pod.namespace, pod.name)))
            raise _refusal(e, pods[len(stopped)].name) from None
        for pod in stopped:
            self.requeue.again(pod.namespace, pod.name, raw.get((pod.namespace, pod.name)))

    def _budgets_allow(self, pods: list[KubePod], raw: Mapping[tuple[str, str], Any]) -> None:
        """Each disruption budget over pods of the gang allows as many evictions now as it
        has pods there (each eviction alone would pass, the gang's would not); else
        KubeError 429 and none is stopped."""
        for namespace in sorted({p.namespace for p in pods}):
            for budget in self.api.disruption_budgets(namespace):
                selector = (budget.get("spec") or {}).get("selector")
                # a pod not running (pending, bound in part) is evicted whatever the budget
                mine = [
                    p
                    for p in pods
                    if p.namespace == namespace
                    and _phase(raw.get((p.namespace, p.name))) == "Running"
                    and selects(selector, _labels(raw.get((p.namespace, p.name))))
                ]
                allowed = (budget.get("status") or {}).get("disruptionsAllowed") or 0
                if len(mine) > int(allowed):
                    name = (budget.get("metadata") or {}).get("name")
                    raise KubeError(
                        f"a disruption budget ({name}) allows {allowed} evictions now and "
                        f"the gang has {len(mine)} pods under it: none of it is stopped",
                        429,
                        "",
                    )


def _assign(
    pods: tuple[KubePod, ...], hosts: Mapping[HostName, int]
) -> list[tuple[KubePod, str]] | None:
    """Each pod on a planned node with room for it (largest pods first); None if they do not
    fit exactly the planned GPUs."""
    room = dict(hosts)
    out = []
    for pod in sorted(pods, key=lambda p: (-p.gpus, p.name)):
        node = next((h for h in sorted(room) if room[h] >= pod.gpus), None)
        if node is None:
            return None
        room[node] -= pod.gpus
        out.append((pod, str(node)))
    if any(room.values()):
        return None
    return sorted(out, key=lambda pn: pn[0].name)


def _credit(free: dict[str, int], pods: Iterable[KubePod]) -> None:
    """The GPUs of pods stopped: free again."""
    for pod in pods:
        if pod.node in free:
            free[pod.node] += pod.gpus


@dataclass(frozen=True, slots=True)
class KubeRead:
    cluster: Cluster  # as the nodes are
    room: Cluster  # less what is held on each node (alloc.adapters.kubernetes.capacity)
    workloads: tuple[KubeWorkload, ...]
    nodes: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    held: dict[str, int]  # GPUs by node of pods alloc does not manage


def _refusal(e: KubeError, name: str) -> KubeError:
    """An eviction's refusal told as what it means."""
    if e.status == 429:
        return KubeError(f"a disruption budget refuses the eviction of {name}", 429, e.message)
    if e.status == 409:
        why = f"{name} changed since the round read it (it may have ended): not stopped"
        return KubeError(why, 409, e.message)
    return e


def _labels(pod: Mapping[str, Any] | None) -> dict[str, str]:
    return dict(((pod or {}).get("metadata") or {}).get("labels") or {})


def _phase(pod: Mapping[str, Any] | None) -> str:
    return str(((pod or {}).get("status") or {}).get("phase") or "")
