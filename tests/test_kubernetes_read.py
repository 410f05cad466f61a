"""How a Kubernetes cluster reads as a snapshot (alloc.adapters.kubernetes.read): nodes to
hosts and their states, the pods `alloc` manages to workloads and gangs, the contract from
annotations, budgets from namespaces and queues. Pure functions over the API's JSON."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from alloc.adapters.kubernetes.gangs import job_sizes
from alloc.adapters.kubernetes.read import (
    KubeSite,
    ended_from_pods,
    hosts_from_nodes,
    workloads_from_pods,
)
from alloc.domain import Cluster, HostState, Topology

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
EIGHT_H = 8 * 3600.0
SITE = KubeSite(queues={"vision": "vision", "nlp/pretrain": "nlp/team1", "nlp": "nlp/team2"})


def node(name: str, gpus: int = 8, ready: bool = True, **extra: Any) -> dict[str, Any]:
    labels = extra.pop("labels", {})
    spec = extra.pop("spec", {})
    annotations = extra.pop("annotations", {})
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": {
            "allocatable": {"cpu": "64", "nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "8"},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    name: str,
    gpus: int = 1,
    namespace: str = "vision",
    node_name: str | None = None,
    phase: str = "Pending",
    annotations: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    scheduler: str = "alloc",
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
    }
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-12-02T11:00:00Z",
            "labels": labels or {},
            "annotations": {"alloc.dev/min-runtime": "2h", **(annotations or {})},
        },
        "spec": spec,
        "status": {"phase": phase},
    }


CLUSTER = Cluster("k", hosts_from_nodes([node(f"n{i}") for i in range(1, 5)], SITE))


def read(pods: list[dict[str, Any]]):
    return {w.workload.id: w for w in workloads_from_pods(pods, SITE, CLUSTER, EIGHT_H, NOW)}


def test_nodes_become_hosts_with_gpus_type_block_rack_and_state():
    site = KubeSite(gpu_type_label="gpu.type")
    hosts = hosts_from_nodes(
        [
            node("a", labels={"gpu.type": "h100", "alloc.dev/block": "b1", "alloc.dev/rack": "r1"}),
            node("b", ready=False),
            node("c", spec={"unschedulable": True}),
            node("d", spec={"unschedulable": True}, labels={"alloc.dev/retire": "yes"}),
            node("e", spec={"taints": [{"key": "x", "effect": "NoExecute"}]}),
            node("f", spec={"taints": [{"key": "alloc.dev/drained", "effect": "NoSchedule"}]}),
            # alloc cordoned it and the repair system removed its taint: back in service
            node("g", spec={"unschedulable": True}, annotations={"alloc.dev/cordoned": "true"}),
            node("cpu-only", gpus=0),
        ],
        site,
    )
    got = {h.name: (h.gpus, h.gpu_type, h.block, h.rack, h.state) for h in hosts}
    assert got == {
        "a": (8, "h100", "b1", "r1", HostState.READY),
        "b": (8, "gpu", "default", "b", HostState.MAINTENANCE),
        "c": (8, "gpu", "default", "c", HostState.UNHEALTHY),
        "d": (8, "gpu", "default", "d", HostState.RETIRED),
        "e": (8, "gpu", "default", "e", HostState.MAINTENANCE),
        "f": (8, "gpu", "default", "f", HostState.UNHEALTHY),
        "g": (8, "gpu", "default", "g", HostState.READY),
    }


def test_a_pending_pod_is_a_queued_workload_with_its_contract_and_budget():
    w = read([pod("train", 4, annotations={"alloc.dev/priority": "3"})])["vision/train"]
    assert (w.problem, w.blocked) == ("", "")
    wl = w.workload
    assert (wl.budget, wl.gpus, wl.min_runtime_s, wl.priority, wl.resumable) == (
        "vision",
        4,
        7200.0,
        3,
        True,
    )
    assert wl.started is None and not wl.hosts and wl.topology is Topology.ANY


def test_pods_of_one_gang_are_one_workload_and_run_once_all_are_bound():
    gang = {"alloc.dev/workload": "big"}
    started = {"alloc.dev/started": "2026-12-02T11:30:00Z"}
    pods = [
        pod(f"big-{i}", 8, labels=gang, node_name=f"n{i + 1}", annotations=started)
        for i in range(2)
    ]
    w = read(pods)["vision/big"].workload
    assert (w.gpus, w.topology) == (16, Topology.BLOCK)
    assert w.started == datetime(2026, 12, 2, 11, 30, tzinfo=UTC)
    assert dict(w.hosts) == {"n1": 8, "n2": 8}


def test_a_job_s_pods_form_a_gang():
    owner = [{"kind": "Job", "name": "j", "controller": True, "uid": "u"}]
    pods = [pod(f"j-{i}", 8, labels={"job-name": "j"}) for i in range(3)]
    for p in pods:
        p["metadata"]["ownerReferences"] = owner
    assert read(pods)["vision/j"].workload.gpus == 24
    # A pod labelled job-name by hand, not owned by the Job, is a workload of its own.
    stray = pod("stray", 8, labels={"job-name": "j"})
    got = read([*pods, stray])
    assert got["vision/j"].workload.gpus == 24 and "vision/stray" in got


def test_a_gang_bound_in_part_is_left_out_with_the_reason():
    gang = {"alloc.dev/workload": "g"}
    pods = [pod("g-0", 8, labels=gang, node_name="n1"), pod("g-1", 8, labels=gang)]
    assert read(pods)["vision/g"].blocked.startswith("bound in part (1 of 2 pods)")


def test_a_gang_of_pods_smaller_than_a_node_is_left_out_with_the_reason():
    gang = {"alloc.dev/workload": "g"}
    pods = [pod("g-0", 4, labels=gang), pod("g-1", 4, labels=gang)]
    assert "takes whole nodes" in read(pods)["vision/g"].blocked


@pytest.mark.parametrize(
    ("annotations", "problem"),
    [
        ({"alloc.dev/min-runtime": "soon"}, "alloc.dev/min-runtime: "),
        ({"alloc.dev/min-runtime": "12h"}, "alloc.dev/min-runtime 12h is above the policy's"),
        ({"alloc.dev/priority": "high"}, "alloc.dev/priority: expected an integer"),
        ({"alloc.dev/topology": "ring"}, "alloc.dev/topology: expected block or any"),
        ({"alloc.dev/resumable": "maybe"}, "alloc.dev/resumable: expected 1 or 0"),
        ({"alloc.dev/priority": "1" * 300}, "alloc.dev/priority longer than 256 characters"),
    ],
)
def test_annotations_that_do_not_read_make_unallocated_work_with_the_reason(annotations, problem):
    w = read([pod("p", annotations=annotations)])["vision/p"]
    assert w.problem.startswith(problem), w.problem
    assert w.workload.min_runtime_s == 0.0  # unallocated: free and preemptible


def test_a_pod_without_the_contract_is_unallocated_without_a_problem():
    p = pod("p")
    p["metadata"]["annotations"] = {}
    w = read([p])["vision/p"]
    assert (w.problem, w.workload.min_runtime_s) == ("", 0.0)


def test_pods_of_a_gang_that_disagree_make_unallocated_work():
    gang = {"alloc.dev/workload": "g"}
    pods = [
        pod("g-0", 8, labels=gang),
        pod("g-1", 8, labels=gang, annotations={"alloc.dev/min-runtime": "1h"}),
    ]
    assert read(pods)["vision/g"].problem == "its pods declare different contracts"


def test_budgets_come_from_the_namespace_or_its_queue():
    got = read(
        [
            pod("a", namespace="nlp", labels={"alloc.dev/queue": "pretrain"}),
            pod("b", namespace="nlp"),
            pod("c", namespace="nlp", labels={"alloc.dev/queue": "unknown"}),
            pod("d", namespace="elsewhere"),
        ]
    )
    assert {k: w.workload.budget for k, w in got.items()} == {
        "nlp/a": "nlp/team1",
        "nlp/b": "nlp/team2",
        "nlp/c": "nlp/team2",
        "elsewhere/d": None,
    }


def test_only_pods_for_alloc_s_scheduler_and_namespaces_are_read():
    pods = [pod("mine"), pod("theirs", scheduler="default-scheduler"), pod("cpu", gpus=0)]
    assert set(read(pods)) == {"vision/mine"}
    site = KubeSite(queues=SITE.queues, namespaces=("nlp",))
    assert workloads_from_pods(pods, site, CLUSTER, EIGHT_H, NOW) == ()


def test_the_gpu_type_is_the_node_selector_on_the_type_label():
    w = read([pod("p", 8, selector={"nvidia.com/gpu.product": "a100"})])["vision/p"].workload
    assert w.gpu_type == "a100"


def test_ended_pods_are_ended_runs_with_their_times():
    done = pod(
        "p",
        2,
        node_name="n1",
        phase="Succeeded",
        annotations={"alloc.dev/started": "2026-12-02T10:00:00Z"},
    )
    done["metadata"]["creationTimestamp"] = "2026-12-02T09:00:00Z"
    done["status"]["containerStatuses"] = [
        {"state": {"terminated": {"finishedAt": "2026-12-02T11:15:00Z"}}}
    ]
    never = pod("q", 2, phase="Failed")  # failed before it was bound: it never ran
    ((w, ended),) = ended_from_pods([done, never], SITE, CLUSTER, EIGHT_H)
    assert (w.id, w.started, ended) == (
        "vision/p",
        datetime(2026, 12, 2, 10, 0, tzinfo=UTC),
        datetime(2026, 12, 2, 11, 15, tzinfo=UTC),
    )
    assert read([done, never]) == {}


def test_gpu_quantities_that_are_not_whole_counts_are_not_gpus():
    pods = [pod("frac"), pod("junk")]
    pods[0]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "0.5"
    pods[1]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "1e309"
    assert read(pods) == {}


def test_a_start_time_is_the_binding_s_not_a_user_s_annotation():
    # A user may annotate their own pod; the PodScheduled condition is the API server's.
    forged = {"alloc.dev/started": "9999-12-31T23:00:00Z"}
    p = pod("p", 2, node_name="n1", annotations=forged)
    # A start in the future is not believed: the pod's creation instead (a fixed time, so its
    # run is one run, not a new one each read, and its protection ends).
    assert read([p])["vision/p"].workload.started == datetime(2026, 12, 2, 11, 0, tzinfo=UTC)
    p["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-12-02T11:20:00Z"}
    ]
    assert read([p])["vision/p"].workload.started == datetime(2026, 12, 2, 11, 20, tzinfo=UTC)
    early = pod("q", 2, node_name="n1", annotations={"alloc.dev/started": "1970-01-01T00:00:00Z"})
    assert read([early])["vision/q"].workload.started == datetime(2026, 12, 2, 11, 0, tzinfo=UTC)


def test_a_single_pod_larger_than_every_node_is_left_out_with_the_reason():
    assert read([pod("huge", 16)])["vision/huge"].blocked.startswith("one pod of 16 GPUs")


def test_a_gang_waits_until_every_pod_it_declares_is_submitted():
    gang = {"alloc.dev/workload": "g"}
    size = {"alloc.dev/gang-size": "3"}
    two = [pod(f"g-{i}", 8, labels=gang, annotations=size) for i in range(2)]
    assert read(two)["vision/g"].blocked == (
        "a gang of 3 pods, 2 submitted so far: it waits for the rest"
    )
    three = [*two, pod("g-2", 8, labels=gang, annotations=size)]
    assert read(three)["vision/g"].blocked == ""
    assert read(three)["vision/g"].workload.gpus == 24


@pytest.mark.parametrize(
    ("sizes", "blocked"),
    [
        (["2", "3"], "its pods declare different alloc.dev/gang-size (2, 3)"),
        (["two", "two"], "alloc.dev/gang-size: expected a whole number of pods, got 'two'"),
        (["0", "0"], "alloc.dev/gang-size: expected a whole number of pods, got '0'"),
        (["1", "1"], "2 pods for a gang of 1"),
        (["9" * 400, "9" * 400], "alloc.dev/gang-size: expected a whole number of pods, got"),
    ],
)
def test_a_gang_size_that_does_not_read_leaves_the_gang_out_with_the_reason(sizes, blocked):
    gang = {"alloc.dev/workload": "g"}
    pods = [
        pod(f"g-{i}", 8, labels=gang, annotations={"alloc.dev/gang-size": s})
        for i, s in enumerate(sizes)
    ]
    assert read(pods)["vision/g"].blocked.startswith(blocked)


def test_a_job_s_gang_waits_for_the_pods_its_parallelism_makes():
    owner = [{"kind": "Job", "name": "j", "controller": True, "uid": "u"}]
    pods = [pod(f"j-{i}", 8, labels={"job-name": "j"}) for i in range(2)]
    for p in pods:
        p["metadata"]["ownerReferences"] = owner
    job = {"metadata": {"namespace": "vision", "name": "j"}, "spec": {"parallelism": 4}}
    sizes = job_sizes([job])
    got = workloads_from_pods(pods, SITE, CLUSTER, EIGHT_H, NOW, jobs=sizes)
    assert got[0].blocked == "a gang of 4 pods, 2 submitted so far: it waits for the rest"
    # No more than the completions still needed: 2 of 4 done, 2 to go.
    job["spec"]["completions"] = 4
    job["status"] = {"succeeded": 2}
    got = workloads_from_pods(pods, SITE, CLUSTER, EIGHT_H, NOW, jobs=job_sizes([job]))
    assert got[0].blocked == "" and got[0].workload.gpus == 16


def test_a_bare_pod_named_like_a_job_is_never_part_of_its_gang():
    owner = [{"kind": "Job", "name": "j", "controller": True, "uid": "job-uid-1"}]
    pods = [pod(f"j-{i}", 8, labels={"job-name": "j"}) for i in range(2)]
    for p in pods:
        p["metadata"]["ownerReferences"] = owner
    got = read([*pods, pod("j", 8)])
    assert got["vision/j"].blocked.startswith(
        "the id vision/j names a Job (uid job-uid-1) and a pod: rename one"
    )


def test_node_constraints_every_node_of_the_type_meets_are_no_constraint():
    nodes = [
        node(f"n{i}", labels={"kubernetes.io/os": "linux", "disk": "ssd" if i < 3 else "hdd"})
        for i in range(1, 5)
    ]
    cluster = Cluster("k", hosts_from_nodes(nodes, SITE))

    def blocked(**spec: Any) -> str:
        p = pod("p", 8)
        p["spec"].update(spec)
        (w,) = workloads_from_pods([p], SITE, cluster, EIGHT_H, NOW, nodes)
        return w.blocked

    assert blocked(nodeSelector={"kubernetes.io/os": "linux"}) == ""
    assert blocked(nodeSelector={"disk": "ssd"}).startswith(
        "its nodeSelector 'disk=ssd' matches 2 of the 4 nodes of its GPU type"
    )

    def affinity(*expressions: dict[str, Any]) -> dict[str, Any]:
        terms = [{"matchExpressions": list(expressions)}]
        return {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }

    assert (
        blocked(affinity=affinity({"key": "disk", "operator": "In", "values": ["ssd", "hdd"]}))
        == ""
    )
    assert blocked(affinity=affinity({"key": "gpu", "operator": "DoesNotExist"})) == ""
    assert "a required node affinity matches 2 of the 4" in blocked(
        affinity=affinity({"key": "disk", "operator": "NotIn", "values": ["hdd"]})
    )
    assert "matches 0 of the 4" in blocked(
        affinity=affinity(
            {"key": "disk", "operator": "Exists"},
            {"key": "rank", "operator": "Gt", "values": ["3"]},
        )
    )


def test_node_constraints_are_judged_among_the_nodes_of_the_pod_s_gpu_type():
    site = KubeSite(gpu_type_label="gpu.type")
    nodes = [
        node("a1", labels={"gpu.type": "a100", "zone": "x"}),
        node("h1", labels={"gpu.type": "h100", "zone": "y"}),
    ]
    cluster = Cluster("k", hosts_from_nodes(nodes, site))
    p = pod("p", 8, selector={"gpu.type": "a100", "zone": "x"})
    (w,) = workloads_from_pods([p], site, cluster, EIGHT_H, NOW, nodes)
    assert w.blocked == "" and w.workload.gpu_type == "a100"


def test_a_gang_member_that_succeeded_counts_toward_its_declared_size():
    gang = {"alloc.dev/workload": "g"}
    size = {"alloc.dev/gang-size": "2"}
    done = pod("g-0", 8, labels=gang, annotations=size, node_name="n1", phase="Succeeded")
    rest = pod("g-1", 8, labels=gang, annotations=size)
    w = read([done, rest])["vision/g"]
    assert w.blocked == "" and w.workload.gpus == 8


def test_alloc_s_own_cordon_stops_counting_once_repaired_but_no_other_mark_does():
    repaired = {"annotations": {"alloc.dev/cordoned": "true"}, "spec": {"unschedulable": True}}
    assert hosts_from_nodes([node("a", **repaired)], SITE)[0].state is HostState.READY
    tainted = {
        "annotations": {"alloc.dev/cordoned": "true"},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "repair.example/busy", "effect": "NoSchedule"}],
        },
    }
    assert hosts_from_nodes([node("b", **tainted)], SITE)[0].state is HostState.UNHEALTHY
    retiring = {**repaired, "labels": {"alloc.dev/retire": "yes"}}
    assert hosts_from_nodes([node("c", **retiring)], SITE)[0].state is HostState.RETIRED
