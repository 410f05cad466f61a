"""The Kubernetes executor against a real control plane (tests/k8s_local.py): pods submitted
for `alloc`'s scheduler in two queues, rounds run, and the API shows the planned placements,
gangs bound all or none, evictions and requeues, disruption budgets honoured, cordons and
drains, two GPU types. Every plan is checked against SPEC.md's invariants."""

from __future__ import annotations

import json
import time

import pytest
from k8s_local import NODES, Kube, kube_of

from alloc.adapters.kubernetes.api import KubeApi, KubeError
from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.read import CORDONED, DRAIN_TAINT, PREEMPTIONS, KubeSite
from alloc.adapters.kubernetes.requeue import NOTE_LABEL, note_name
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, HostState, Policy
from alloc.round import run_round
from alloc.solve.validate import validate

TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))


@pytest.fixture
def kube():
    yield from kube_of()


def executor_of(kube: Kube) -> KubernetesExecutor:
    site = KubeSite(
        queues={
            f"{kube.namespace}/nlp": BudgetPath("nlp"),
            f"{kube.namespace}/vision": BudgetPath("vision"),
        },
        namespaces=(kube.namespace,),
    )
    return KubernetesExecutor(site, TREE, kube.api, Policy(solver="greedy", time_limit_s=5.0))


def running_free_pods(kube: Kube) -> KubernetesExecutor:
    """Four unallocated (preemptible) pods of nlp running on the whole cluster; the executor
    that placed them."""
    for i in range(4):
        kube.pod(f"free-{i}", 8, queue="nlp", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    for i in range(4):
        kube.set_phase(f"free-{i}", "Running")
    return executor


def round_once(executor: KubernetesExecutor):
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    return snapshot, plan, executor.apply(plan)


def test_pods_of_two_queues_are_bound_where_the_plan_puts_them(kube):
    kube.pod("single", 4, queue="nlp")
    kube.pod("big-0", 8, queue="vision", gang="big", min_runtime="2h")
    kube.pod("big-1", 8, queue="vision", gang="big", min_runtime="2h")
    executor = executor_of(kube)
    snapshot, plan, report = round_once(executor)
    assert {w.id: w.gpus for w in snapshot.workloads} == {
        f"{kube.namespace}/single": 4,
        f"{kube.namespace}/big": 16,
    }
    assert report.failed == ()
    where = kube.placements()
    big = plan.decision(f"{kube.namespace}/big")
    assert big.action is Action.START
    assert {where["big-0"], where["big-1"]} == set(big.hosts)
    assert where["single"] in plan.decision(f"{kube.namespace}/single").hosts
    # Read back: both run where they were bound, with the start time alloc wrote.
    again = {w.id: w for w in executor.snapshot().workloads}
    assert dict(again[f"{kube.namespace}/big"].hosts) == dict(big.hosts)
    assert again[f"{kube.namespace}/big"].started is not None


def test_applying_a_plan_twice_changes_nothing_the_second_time(kube):
    kube.pod("a", 8, queue="nlp")
    executor = executor_of(kube)
    _, plan, first = round_once(executor)
    before = kube.placements()
    second = executor.apply(plan)
    assert [r.changed for r in first.results] == [True]
    assert [(r.ok, r.changed, r.detail.split(" on ")[0]) for r in second.results] == [
        (True, False, "already running")
    ]
    assert kube.placements() == before


def test_a_gang_that_lost_a_pod_is_not_bound(kube):
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    executor = executor_of(kube)
    plan = run_round(executor.snapshot())
    kube.core.delete_namespaced_pod("g-1", kube.namespace, grace_period_seconds=0)  # gone
    (result,) = executor.apply(plan).results
    assert not result.ok and "do not fit the planned" in result.detail
    assert kube.placements() == {"g-0": None}


class SecondBindFails(KubeApi):
    """The real API, except that the second bind of an apply is refused (a node that went
    away, a conflict): what a gang's all-or-none is for."""

    def __init__(self, real: KubeApi) -> None:
        self.__dict__.update(real.__dict__)
        self.binds = 0

    def bind(self, namespace: str, pod: str, node: str) -> None:
        self.binds += 1
        if self.binds == 2:
            raise KubeError(f"bind {namespace}/{pod} to {node}", 409, "injected")
        super().bind(namespace, pod, node)


def test_a_gang_is_bound_all_or_none(kube):
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    executor = executor_of(kube)
    plan = run_round(executor.snapshot())
    executor.api = SecondBindFails(kube.api)
    (result,) = executor.apply(plan).results
    assert not result.ok and "all or none: 1 bound pods requeued" in result.detail
    assert kube.placements() == {"g-0": None, "g-1": None}  # the bound one is back, pending
    executor.api = kube.api
    _, _, report = round_once(executor)  # and the next round starts the gang whole
    assert report.failed == () and all(kube.placements().values())


def test_unallocated_pods_are_evicted_and_requeued_for_allocated_work(kube):
    for i in range(4):
        kube.pod(f"free-{i}", 8, queue="nlp", min_runtime=None)  # unallocated: preemptible
    executor = executor_of(kube)
    round_once(executor)
    assert all(kube.placements().values())
    kube.pod("owed", 8, queue="vision")
    _, plan, report = round_once(executor)
    assert report.failed == ()
    preempted = [d.workload for d in plan.decisions if d.action is Action.PREEMPT]
    assert len(preempted) == 1
    name = preempted[0].split("/", 1)[1]
    pods = kube.pods()
    assert pods[name].spec.node_name is None  # back in the queue, pending
    assert pods[name].metadata.annotations[PREEMPTIONS] == "1"
    assert pods["owed"].spec.node_name is not None


def test_a_disruption_budget_that_refuses_an_eviction_is_a_failed_action(kube):
    executor = running_free_pods(kube)
    for i in range(4):  # each pod its own budget: none may go
        kube.budget(f"keep-{i}", [f"free-{i}"], min_available=1)
    for i in range(4):
        _budget_counted(kube, f"keep-{i}")
    kube.pod("owed", 8, queue="vision")
    _, _, report = round_once(executor)
    refused = [r for r in report.failed if r.action is Action.PREEMPT]
    assert refused and "disruption budget" in refused[0].detail
    assert all(kube.placements()[f"free-{i}"] for i in range(4))  # nobody was stopped
    # and the start that needed its node is not made: the node is still full
    (start,) = [r for r in report.results if r.action is Action.START]
    assert not start.ok and "not started" in start.detail and "0 free" in start.detail
    assert kube.placements()["owed"] is None


def test_a_cordoned_node_is_drained_tainted_and_uncordoned_once_repaired(kube):
    node = NODES[3]
    kube.core.patch_node(node, {"spec": {"unschedulable": True}})
    executor = executor_of(kube)
    snapshot = executor.snapshot()
    assert snapshot.cluster.by_name[node].state is HostState.UNHEALTHY
    _, plan, report = round_once(executor)
    assert node in plan.drained_hosts
    assert [(h.host, h.ok) for h in report.hosts] == [(node, True)]
    taints = kube.core.read_node(node).spec.taints or []
    assert [t.key for t in taints] == [DRAIN_TAINT]
    # The repair system removes the taint: the next apply returns the node to service.
    kube.core.patch_node(node, {"spec": {"taints": None}})
    round_once(executor)
    fresh = kube.core.read_node(node)
    assert not fresh.spec.unschedulable and CORDONED not in (fresh.metadata.annotations or {})
    assert executor.snapshot().cluster.by_name[node].state is HostState.READY


def test_two_gpu_types_go_to_their_own_nodes(kube):
    kube.node("t-a100", 4, {"nvidia.com/gpu.product": "a100"})
    kube.node("t-h100", 8, {"nvidia.com/gpu.product": "h100"})
    kube.pod("on-a100", 4, queue="nlp", gpu_type="a100")
    kube.pod("on-h100", 8, queue="vision", gpu_type="h100")
    executor = executor_of(kube)
    _, _, report = round_once(executor)
    assert report.failed == ()
    where = kube.placements()
    assert (where["on-a100"], where["on-h100"]) == ("t-a100", "t-h100")


def test_a_pod_whose_annotations_do_not_read_is_unallocated_with_the_reason(kube):
    kube.pod("odd", 1, queue="nlp", min_runtime="soon")
    executor = executor_of(kube)
    snapshot = executor.snapshot()
    (w,) = snapshot.workloads
    assert w.min_runtime_s == 0.0
    assert executor.notes()[w.id].startswith("alloc.dev/min-runtime: ")


def test_a_finished_gang_is_an_ended_run(kube):
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    executor = executor_of(kube)
    round_once(executor)
    for name in ("g-0", "g-1"):
        kube.set_phase(name, "Succeeded")
    snapshot = executor.snapshot()
    assert snapshot.workloads == ()
    (ended,) = executor.ended_runs()
    assert (ended.workload, ended.gpus, ended.charged) == (f"{kube.namespace}/g", 16, True)


def test_a_gang_whose_eviction_is_refused_for_one_pod_is_not_stopped_at_all(kube):
    for i in range(4):  # one unallocated gang on the whole cluster
        kube.pod(f"g-{i}", 8, queue="nlp", gang="g", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    kube.set_phase("g-3", "Running")
    kube.budget("keep", ["g-3"], min_available=1)
    kube.pod("owed", 8, queue="vision")
    _, _, report = round_once(executor)
    (refused,) = [r for r in report.results if r.action is Action.PREEMPT]
    assert not refused.ok and "disruption budget" in refused.detail
    where = kube.placements()
    assert set(where) == {"g-0", "g-1", "g-2", "g-3", "owed"}  # every pod still exists
    # the budget is asked before any pod goes: none of the gang is stopped
    assert all(where[f"g-{i}"] for i in range(4)) and where["owed"] is None


def test_a_job_s_pods_are_one_gang_bound_together_and_end_as_one_run(kube):
    template = {
        "metadata": {
            "annotations": {"alloc.dev/min-runtime": "1h"},
            "labels": {"alloc.dev/queue": "nlp"},
        },
        "spec": {
            "schedulerName": "alloc",
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "m", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "8"}}}
            ],
        },
    }
    job = {
        "metadata": {"name": "train"},
        "spec": {"parallelism": 2, "completions": 2, "template": template},
    }
    kube.api.models.BatchV1Api(kube.api.client).create_namespaced_job(kube.namespace, job)
    executor = executor_of(kube)
    for _ in range(100):  # the Job controller creates its pods
        if len(kube.pods()) == 2:
            break
        time.sleep(0.1)
    snapshot, plan, report = round_once(executor)
    (w,) = snapshot.workloads
    assert (w.id, w.gpus, w.budget) == (f"{kube.namespace}/train", 16, "nlp")
    assert report.failed == () and all(kube.placements().values())
    for name in kube.pods():
        kube.set_phase(name, "Succeeded")
    assert executor.snapshot().workloads == ()
    (ended,) = executor.ended_runs()
    assert (ended.workload, ended.gpus) == (f"{kube.namespace}/train", 16)


def _raw(kube: Kube, name: str) -> dict:
    return kube.api.client.sanitize_for_serialization(kube.pods()[name])


def _notes(kube: Kube) -> list[str]:
    found = kube.core.list_namespaced_config_map(kube.namespace, label_selector=NOTE_LABEL)
    return [c.metadata.name for c in found.items]


def test_a_controller_killed_between_evicting_and_recreating_a_pod_loses_no_pod(kube):
    kube.pod("solo", 8, queue="nlp", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    assert kube.placements()["solo"]
    raw = _raw(kube, "solo")
    # What a preemption does up to the moment of a kill -9: the note, then the eviction.
    executor.requeue.stop(kube.namespace, "solo", raw)
    assert _notes(kube) == [note_name("solo")]
    kube.api.delete(kube.namespace, "solo")  # gone (an eviction at grace 0 may have done it)
    assert "solo" not in kube.pods()
    # A new controller's first apply finishes it (a snapshot alone writes nothing: `alloc
    # status` reads one): the pod is back, pending, counted, and the next round sees it.
    restarted = executor_of(kube)
    assert restarted.snapshot().workloads == ()
    assert _notes(kube) == [note_name("solo")]
    round_once(restarted)
    (w,) = restarted.snapshot().workloads
    assert w.id == f"{kube.namespace}/solo" and not w.running
    pods = kube.pods()
    assert pods["solo"].spec.node_name is None
    assert pods["solo"].metadata.annotations[PREEMPTIONS] == "1"
    assert _notes(kube) == []


def test_a_note_whose_pod_was_never_stopped_is_dropped_and_the_pod_left_alone(kube):
    kube.pod("solo", 8, queue="nlp", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    raw = _raw(kube, "solo")
    executor.requeue._note(kube.namespace, "solo", raw)  # killed before the eviction
    round_once(executor_of(kube))
    assert _notes(kube) == []
    assert kube.pods()["solo"].metadata.uid == raw["metadata"]["uid"]  # the same pod
    assert kube.placements()["solo"]


def test_a_gang_bound_in_part_is_requeued_by_eviction_and_keeps_its_gpus_while_refused(kube):
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    node = NODES[0]
    kube.api.bind(kube.namespace, "g-0", node)  # a crash in the middle of binding the gang
    kube.set_phase("g-0", "Running")
    kube.budget("keep", ["g-0"], min_available=1)
    for i in range(4):
        kube.pod(f"w-{i}", 8, queue="vision")
    executor = executor_of(kube)
    _budget_counted(kube, "keep")  # the disruption controller counts the healthy pod
    snapshot, plan, report = round_once(executor)
    # The gang's bound pod holds its node: the round places nothing there.
    assert node not in snapshot.cluster.by_name
    assert all(node not in dict(d.hosts) for d in plan.decisions)
    (refused,) = [r for r in report.results if r.workload == f"{kube.namespace}/g"]
    assert not refused.ok and "disruption budget" in refused.detail
    assert kube.placements()["g-0"] == node  # the budget kept it
    assert f"{kube.namespace}/g" in executor.notes()
    # Once the budget allows it, the next apply requeues it and the gang may start whole.
    kube.api.models.PolicyV1beta1Api(kube.api.client).delete_namespaced_pod_disruption_budget(
        "keep", kube.namespace
    )
    time.sleep(0.5)
    executor.apply(plan)
    assert kube.placements()["g-0"] is None
    assert _notes(kube) == []


def test_a_pod_that_ends_while_it_is_being_preempted_is_not_run_again(kube):
    executor = running_free_pods(kube)
    kube.pod("owed", 8, queue="vision")
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    (victim,) = [d.workload.split("/")[1] for d in plan.decisions if d.action is Action.PREEMPT]

    class EndsFirst(KubeApi):
        """The kubelet reports the pod done between the apply's read and its eviction."""

        def __init__(self, api: KubeApi) -> None:
            self.__dict__.update(api.__dict__)

        def evict(self, namespace: str, pod: str, uid: str = "", resource_version: str = ""):
            kube.set_phase(pod, "Succeeded")
            super().evict(namespace, pod, uid, resource_version)

    executor.api = executor.requeue.api = EndsFirst(kube.api)
    report = executor.apply(plan)
    (refused,) = [r for r in report.results if r.action is Action.PREEMPT]
    assert not refused.ok and "changed since the round read it" in refused.detail
    pods = kube.pods()
    assert pods[victim].status.phase == "Succeeded"  # it ended: not stopped, not run again
    assert PREEMPTIONS not in (pods[victim].metadata.annotations or {})
    assert _notes(kube) == []


def _budget_counted(kube: Kube, name: str, healthy: int = 1) -> None:
    """Wait until the disruption controller has counted the budget's healthy pods."""
    policy = kube.api.models.PolicyV1beta1Api(kube.api.client)
    for _ in range(100):
        budget = policy.read_namespaced_pod_disruption_budget(name, kube.namespace)
        if budget.status and budget.status.current_healthy == healthy:
            return
        time.sleep(0.1)
    raise AssertionError(f"the disruption budget {name} was never counted")


def foreign(kube: Kube, name: str, node: str, gpus: int = 8) -> None:
    """A pod another scheduler placed (created bound, with nodeName)."""
    body = {
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {"name": "m", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
            ],
        },
    }
    kube.core.create_namespaced_pod(kube.namespace, body)


def test_gpus_of_pods_alloc_does_not_manage_are_not_given_again(kube):
    foreign(kube, "theirs", NODES[0])
    foreign(kube, "half", NODES[1], gpus=4)
    for i in range(3):
        kube.pod(f"p-{i}", 8, queue="nlp")
    kube.pod("small", 4, queue="vision")
    executor = executor_of(kube)
    snapshot, plan, report = round_once(executor)
    assert NODES[0] not in snapshot.cluster.by_name
    assert snapshot.cluster.by_name[NODES[1]].gpus == 4
    assert report.failed == ()
    where = kube.placements()
    assert where["small"] == NODES[1]
    assert [name for name, node in where.items() if node == NODES[0]] == ["theirs"]
    placed = [where[f"p-{i}"] for i in range(3)]
    assert placed.count(None) == 1 and {n for n in placed if n} == set(NODES[2:])


def test_work_on_a_node_holding_more_than_it_has_stays_charged_and_nothing_joins_it(kube):
    kube.pod("ours", 8, queue="nlp")
    executor = executor_of(kube)
    round_once(executor)
    node = kube.placements()["ours"]
    foreign(kube, "by-hand", node)  # 16 GPUs on an 8-GPU node
    kube.pod("next", 8, queue="vision")
    snapshot, plan, report = round_once(executor)  # validates: no node given twice
    ours = snapshot.by_id[f"{kube.namespace}/ours"]
    assert ours.running and dict(ours.hosts) == {node: 8}  # still seen running: charged
    assert snapshot.cluster.by_name[node].gpus == 8  # nothing free beside it
    assert "which holds 16 GPUs of its 8" in executor.notes()[f"{kube.namespace}/ours"]
    assert report.failed == () and kube.placements()["next"] not in (None, node)


def test_a_gang_is_not_evicted_in_part_when_its_budget_allows_fewer_evictions(kube):
    for i in range(4):  # one unallocated gang on the whole cluster, under one budget
        kube.pod(f"g-{i}", 8, queue="nlp", gang="g", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    for i in range(4):
        kube.set_phase(f"g-{i}", "Running")
    kube.budget("one", [f"g-{i}" for i in range(4)], min_available=3)
    _budget_counted(kube, "one", healthy=4)  # 4 healthy, 3 to keep: one eviction allowed
    kube.pod("owed", 8, queue="vision")
    _, _, report = round_once(executor)
    (refused,) = [r for r in report.results if r.action is Action.PREEMPT]
    assert not refused.ok and "allows 1 evictions now and the gang has 4 pods" in refused.detail
    assert all(kube.placements()[f"g-{i}"] for i in range(4))  # none of it was stopped
    assert kube.placements()["owed"] is None


def test_binding_a_pod_where_it_is_bound_already_is_done(kube):
    kube.pod("a", 8, queue="nlp")
    kube.api.bind(kube.namespace, "a", NODES[0])
    kube.api.bind(kube.namespace, "a", NODES[0])  # a retry after a lost answer
    with pytest.raises(KubeError):
        kube.api.bind(kube.namespace, "a", NODES[1])


def test_a_note_alloc_did_not_write_makes_no_pod(kube):
    """Whoever may write ConfigMaps in a managed namespace cannot have alloc create pods."""
    copy = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "evil", "namespace": kube.namespace},
        "spec": {"schedulerName": "default-scheduler", "containers": [{"name": "m", "image": "x"}]},
    }
    bound = {**copy, "metadata": {"name": "placed", "namespace": kube.namespace}}
    bound["spec"] = {**copy["spec"], "schedulerName": "alloc", "nodeName": NODES[0]}
    for name, pod in (("hand-made", copy), (note_name("evil"), copy), (note_name("placed"), bound)):
        kube.core.create_namespaced_config_map(
            kube.namespace,
            {
                "metadata": {"name": name, "labels": {NOTE_LABEL: "true"}},
                "data": {"pod": json.dumps(pod), "uid": "x"},
            },
        )
    executor = executor_of(kube)
    executor.apply(run_round(executor.snapshot()))
    assert "evil" not in kube.pods()
    assert kube.placements()["placed"] is None  # queued pending, never placed by the note


def test_an_eviction_whose_answer_was_lost_still_requeues_the_pod(kube):
    kube.pod("solo", 8, queue="nlp", min_runtime=None)
    executor = executor_of(kube)
    round_once(executor)
    kube.set_phase("solo", "Running")
    kube.pod("owed", 8, queue="vision")
    for i in range(3):
        kube.pod(f"other-{i}", 8, queue="vision")

    class AnswerLost(KubeApi):
        """The eviction is carried out, its answer lost, and the retry refused (409: the pod
        changed since it was read: it is leaving)."""

        def __init__(self, api: KubeApi) -> None:
            self.__dict__.update(api.__dict__)

        def evict(self, namespace, pod, uid="", resource_version="", dry_run=False):
            super().evict(namespace, pod, uid, resource_version, dry_run)
            if not dry_run:
                raise KubeError(f"evict {namespace}/{pod}", 409, "precondition failed")

    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    assert any(d.action is Action.PREEMPT for d in plan.decisions)
    executor.api = executor.requeue.api = AnswerLost(kube.api)
    report = executor.apply(plan)
    (preempt,) = [r for r in report.results if r.action is Action.PREEMPT]
    assert preempt.ok, preempt.detail
    pods = kube.pods()
    assert pods["solo"].spec.node_name is None  # back in the queue, not lost
    assert pods["solo"].metadata.annotations[PREEMPTIONS] == "1"
    assert _notes(kube) == []


def test_a_gang_bound_in_part_is_requeued_whatever_its_budget_says_while_pending(kube):
    kube.pod("g-0", 8, queue="nlp", gang="g", annotations={"alloc.dev/gang-size": "2"})
    kube.pod("g-1", 8, queue="nlp", gang="g", annotations={"alloc.dev/gang-size": "2"})
    kube.api.bind(kube.namespace, "g-0", NODES[0])  # a crash in the middle of binding it
    kube.budget("all", ["g-0"], min_available=2)
    executor = executor_of(kube)
    report = executor.apply(run_round(executor.snapshot()))
    assert report.failed == ()
    assert kube.placements()["g-0"] is None  # never ran: no budget keeps it


class LeaseRanOut(Exception):
    pass


def test_a_controller_whose_lease_runs_out_mid_apply_stops_before_its_next_action(kube):
    for name in ("a", "b", "c"):
        kube.pod(name, 8, queue="nlp")
    executor = executor_of(kube)
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    assert sum(d.action is Action.START for d in plan.decisions) == 3
    asked: list[int] = []

    def check() -> None:  # the lease held for the first action only
        asked.append(len(asked))
        if len(asked) > 1:
            raise LeaseRanOut

    with pytest.raises(LeaseRanOut):
        executor.apply_guarded(plan, check)
    assert sum(n is not None for n in kube.placements().values()) == 1  # the first start only
    # The next controller's round starts from what the API shows: the other two, once.
    _, _, report = round_once(executor)
    assert sum(r.changed and r.ok for r in report.results) == 2
    assert all(n is not None for n in kube.placements().values())
