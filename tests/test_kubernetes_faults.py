"""Executor faults inside a round, against the real local Kubernetes (tests/k8s_local.py) behind
a fault-injecting proxy (tests/k8s_faults.py): binds the server fails (503) for a while or for
good, list answers that do not read (garbage, truncated or cut short, without items) or never
come, an eviction that hangs past the timeout. Each fault is reported (the round's outcome,
the state's record, the metric, `alloc status`), each call is tried again after a backoff that
grows, a refusal (a disruption budget's 429) is neither tried again nor a fault, and the next
round starts from what the API shows; the ledger holds only what the cluster ran. Every plan
is checked against SPEC.md's invariants. As tests/test_slurm_faults.py does for Slurm."""

from __future__ import annotations

from pathlib import Path

import pytest
from fault_checks import backed_off, checked, round_view
from k8s_faults import FaultyKube
from k8s_local import KUBECONFIG, Kube, controller_config, kube_of
from typer.testing import CliRunner

from alloc.adapters.base import FaultKind
from alloc.adapters.kubernetes.api import KubeApi, KubeConnection
from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.read import KubeSite
from alloc.adapters.kubernetes.steps import call_name
from alloc.cli.app import app
from alloc.controller import Controller
from alloc.controller.faults import fault_lines
from alloc.controller.metrics import ControllerMetrics
from alloc.controller.state import StateStore
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, Policy

TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
ATTEMPTS = 3
INJECTED = "503 injected: the server is unavailable"
BIND = r"/binding$"
PODS = r"/pods$"  # a list of pods (of a namespace, or of all)


@pytest.fixture
def kube():
    yield from kube_of()


@pytest.fixture
def proxy(kube: Kube, tmp_path: Path):
    proxy = FaultyKube.start(tmp_path / "proxy", KUBECONFIG)
    yield proxy
    proxy.close()


def controller_of(
    kube: Kube, proxy: FaultyKube, tmp_path: Path, timeout_s: float = 5.0
) -> Controller:
    connection = KubeConnection(
        str(proxy.kubeconfig), timeout_s=timeout_s, attempts=ATTEMPTS, backoff_s=0.2
    )
    site = KubeSite(
        queues={
            f"{kube.namespace}/nlp": BudgetPath("nlp"),
            f"{kube.namespace}/vision": BudgetPath("vision"),
        },
        namespaces=(kube.namespace,),
    )
    policy = Policy(solver="greedy", time_limit_s=5.0)
    executor = KubernetesExecutor(site, TREE, KubeApi(connection), policy)
    return Controller(executor, StateStore(f"sqlite:///{tmp_path / 'state.db'}"), 1.0, TREE)


def api_view(kube: Kube) -> tuple[dict[str, set[str]], set[str]]:
    """The workloads bound (with their nodes) and those pending, as the API shows them (a
    gang by its label, a bare pod by its name)."""
    bound: dict[str, set[str]] = {}
    pending: set[str] = set()
    for name, pod in kube.pods().items():
        workload = f"{kube.namespace}/{(pod.metadata.labels or {}).get('alloc.dev/workload', name)}"
        if pod.spec.node_name:
            bound.setdefault(workload, set()).add(pod.spec.node_name)
        else:
            pending.add(workload)
    return bound, pending - set(bound)


def running_free_pods(kube: Kube, controller: Controller) -> None:
    """Four unallocated (preemptible) pods of nlp running on the whole cluster."""
    for i in range(4):
        kube.pod(f"free-{i}", 8, queue="nlp", min_runtime=None)
    assert checked(controller.round_once()).started == 4
    for i in range(4):
        kube.set_phase(f"free-{i}", "Running")


@pytest.mark.parametrize(
    "method, path, expected",
    [
        ("GET", "/api/v1/namespaces/a/pods", "list pods"),
        ("GET", "/api/v1/pods", "list pods"),
        ("GET", "/api/v1/nodes", "list nodes"),
        ("GET", "/apis/batch/v1/namespaces/a/jobs", "list jobs"),
        (
            "GET",
            "/apis/policy/v1beta1/namespaces/a/poddisruptionbudgets",
            "list disruption budgets",
        ),
        ("GET", "/api/v1/configmaps", "list config maps"),
        ("POST", "/api/v1/namespaces/a/pods/p/binding", "bind"),
        ("POST", "/api/v1/namespaces/a/pods/p/eviction", "evict"),
        ("POST", "/api/v1/namespaces/a/pods", "create pod"),
        ("PATCH", "/api/v1/namespaces/a/pods/p", "patch pod"),
        ("DELETE", "/api/v1/namespaces/a/pods/p", "delete pod"),
        ("PATCH", "/api/v1/nodes/gpu-node1", "patch node"),
        ("PUT", "/api/v1/namespaces/a/configmaps/c", "replace config map"),
        ("DELETE", "/api/v1/namespaces/a/configmaps/c", "delete config map"),
    ],
    ids=lambda v: str(v),
)
def test_a_fault_names_the_request_by_its_verb_and_kind_never_the_pod_or_node(
    method, path, expected
):
    assert call_name(method, path) == expected


def test_a_bind_the_server_fails_twice_is_tried_again_and_the_gang_starts(kube, proxy, tmp_path):
    controller = controller_of(kube, proxy, tmp_path)
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    proxy.inject("POST", BIND, "503", times=2)

    ok = checked(controller.round_once())
    gang = f"{kube.namespace}/g"
    assert (ok.started, ok.failed) == (1, 0)
    assert [(f.kind, f.command, f.message) for f in ok.faults] == [
        (FaultKind.FAILED, "bind", INJECTED)
    ] * 2
    assert not any(f.gave_up for f in ok.faults)
    backed_off(list(ok.faults), proxy.calls("POST", BIND)[:3])
    assert ok.troubled  # the next round is a full one, after a backoff
    planned = set(ok.plan.by_workload[gang].hosts)
    assert api_view(kube) == ({gang: planned}, set())

    # Recorded and counted as Slurm's are.
    store = controller.store
    (line,) = fault_lines(store)
    assert line.startswith("executor faults: 2 failed attempts (failed 2), 0 calls given up on")
    assert f"bind: failed, attempt 2, tried again after {ok.faults[1].retry_in_s:.2f} s" in line
    metrics = ControllerMetrics()
    metrics.observe(ok)
    count = metrics.registry.get_sample_value
    assert count("alloc_executor_errors_total", {"kind": "failed"}) == 2

    after = checked(controller.round_once())
    assert after.faults == ()
    assert round_view(after) == api_view(kube) == ({gang: planned}, set())
    (run,) = store.runs()
    assert (run.workload, run.budget, run.gpus, run.charged) == (gang, "nlp", 16, True)
    store.close()


def test_a_bind_that_keeps_failing_requeues_the_gang_and_the_next_round_starts_it(
    kube, proxy, tmp_path
):
    # The first pod's bind goes through, every attempt of the second's is refused by a
    # failing server: all or none, the first pod is requeued, the start reported failed with
    # the server's answer. Nothing is assumed of it: the next round reads both pending and
    # starts the gang.
    controller = controller_of(kube, proxy, tmp_path)
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    proxy.inject("POST", BIND, "503", skip=1, times=ATTEMPTS)

    half = checked(controller.round_once())
    gang = f"{kube.namespace}/g"
    assert half.report is not None
    (result,) = half.report.results
    assert (result.action, result.ok) == (Action.START, False)
    assert INJECTED in result.detail and "all or none: 1 bound pods requeued" in result.detail
    assert (half.started, half.failed) == (0, 1)
    assert [(f.kind, f.command) for f in half.faults] == [(FaultKind.FAILED, "bind")] * ATTEMPTS
    assert [f.gave_up for f in half.faults] == [False] * (ATTEMPTS - 1) + [True]
    backed_off(list(half.faults), proxy.calls("POST", BIND)[1:])
    assert api_view(kube) == ({}, {gang})
    assert controller.store.runs() == []  # nothing ran: nothing charged

    proxy.clear()
    again = checked(controller.round_once())
    assert round_view(again) == ({}, {gang})  # it planned from what the API showed
    assert (again.started, again.failed, again.faults) == (1, 0, ())
    planned = set(again.plan.by_workload[gang].hosts)
    after = checked(controller.round_once())
    assert round_view(after) == api_view(kube) == ({gang: planned}, set())

    # `alloc status` sums the faults up, with the last one.
    controller.store.close()
    config = tmp_path / "controller.yaml"
    config.write_text(controller_config(tmp_path / "state.db", proxy.kubeconfig, kube.namespace))
    status = CliRunner().invoke(app, ["status", "--config", str(config)])
    assert status.exit_code == 0, status.output
    assert (
        f"executor faults: {ATTEMPTS} failed attempts (failed {ATTEMPTS}), 1 call given up "
        "on; the last at "
    ) in status.stdout
    assert f"bind: failed, attempt {ATTEMPTS}, given up: {INJECTED}" in status.stdout


@pytest.mark.parametrize(
    "mode, kind, message",
    [
        ("garbage", FaultKind.UNPARSABLE, "an answer that is not JSON"),
        ("truncated", FaultKind.UNPARSABLE, "an answer that is not JSON"),
        ("cut", FaultKind.UNPARSABLE, "an answer cut short"),
        ("empty", FaultKind.UNPARSABLE, "an answer without items"),
        ("drop", FaultKind.FAILED, "no answer: ProtocolError"),
        ("429", FaultKind.FAILED, "429 injected: too many requests"),
    ],
    ids=[
        "garbage",
        "truncated JSON",
        "an answer cut short by the connection",
        "JSON without items",
        "the connection closed without an answer",
        "the server shedding load (429)",
    ],
)
def test_a_list_that_does_not_read_is_asked_again_and_the_round_goes_on(
    kube, proxy, tmp_path, mode, kind, message
):
    controller = controller_of(kube, proxy, tmp_path)
    kube.pod("one", 4, queue="vision", min_runtime="30m")
    proxy.inject("GET", PODS, mode)

    ok = checked(controller.round_once())
    (fault,) = ok.faults
    assert (fault.kind, fault.command, fault.attempt) == (kind, "list pods", 1)
    assert fault.message.startswith(message) and not fault.gave_up
    calls = proxy.calls("GET", PODS)
    assert [c.mode for c in calls[:2]] == [mode, ""]
    backed_off([fault], calls)
    assert ok.started == 1 and ok.troubled
    one = f"{kube.namespace}/one"
    after = checked(controller.round_once())
    assert (
        round_view(after) == api_view(kube) == ({one: set(ok.plan.by_workload[one].hosts)}, set())
    )


def test_garbage_on_every_attempt_fails_the_round_and_the_next_one_carries_on(
    kube, proxy, tmp_path
):
    controller = controller_of(kube, proxy, tmp_path)
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")
    proxy.inject("GET", PODS, "garbage", times=ATTEMPTS)

    failed = controller.round_once()
    assert failed.error.startswith(f"list pods in {kube.namespace}: an answer that is not JSON")
    assert [(f.kind, f.command) for f in failed.faults] == [
        (FaultKind.UNPARSABLE, "list pods")
    ] * ATTEMPTS
    assert failed.faults[-1].gave_up
    backed_off(list(failed.faults), proxy.calls("GET", PODS))
    assert controller.store.rounds() == []  # nothing planned, nothing applied
    gang = f"{kube.namespace}/g"
    assert api_view(kube) == ({}, {gang})

    ok = checked(controller.round_once())
    assert round_view(ok) == ({}, {gang})
    assert (ok.started, ok.faults) == (1, ())
    after = checked(controller.round_once())
    assert round_view(after) == api_view(kube)
    metrics = ControllerMetrics()
    metrics.observe(failed)
    count = metrics.registry.get_sample_value
    assert count("alloc_executor_errors_total", {"kind": "unparsable"}) == ATTEMPTS
    assert count("alloc_rounds_total", {"status": "failed"}) == 1
    (line,) = fault_lines(controller.store)
    assert f"(unparsable {ATTEMPTS}), 1 call given up on" in line
    controller.store.close()


def test_an_eviction_that_hangs_past_the_timeout_is_tried_again_and_the_preemption_goes_through(
    kube, proxy, tmp_path
):
    # The whole cluster runs unallocated pods; allocated work comes: one of them is evicted.
    # Its first eviction hangs (nothing reaches the server): killed at the 1 s timeout and
    # sent again; the preemption and the start go through.
    controller = controller_of(kube, proxy, tmp_path, timeout_s=1.0)
    running_free_pods(kube, controller)
    kube.pod("owed", 8, queue="vision")
    proxy.inject("POST", r"/eviction$", "hang", seconds=30)

    ok = checked(controller.round_once())
    owed = f"{kube.namespace}/owed"
    (victim,) = [d.workload for d in ok.plan.decisions if d.action is Action.PREEMPT]
    assert (ok.started, ok.preempted, ok.failed) == (1, 1, 0)
    (fault,) = ok.faults
    assert (fault.kind, fault.command, fault.message) == (
        FaultKind.TIMEOUT,
        "evict",
        "no answer within 1 s",
    )
    assert not fault.gave_up
    evictions = proxy.calls("POST", r"/eviction$")
    assert [c.mode for c in evictions] == ["hang", ""]
    assert evictions[1].t - evictions[0].t >= 1.0 + fault.retry_in_s
    bound, pending = api_view(kube)
    assert bound[owed] == set(ok.plan.by_workload[owed].hosts)
    assert victim not in bound and victim in pending  # requeued, pending

    after = checked(controller.round_once())
    assert after.faults == ()
    assert round_view(after) == api_view(kube)
    runs = {r.workload: r for r in controller.store.runs()}
    assert runs[victim].ended_s is not None and not runs[victim].charged
    controller.store.close()


def test_an_eviction_a_disruption_budget_refuses_is_an_answer_not_a_fault(kube, proxy, tmp_path):
    controller = controller_of(kube, proxy, tmp_path)
    running_free_pods(kube, controller)
    kube.budget("keep-all", [f"free-{i}" for i in range(4)], min_available=4)
    kube.pod("owed", 8, queue="vision")

    refused = checked(controller.round_once())
    assert refused.report is not None
    by = {r.action: r for r in refused.report.results}
    assert not by[Action.PREEMPT].ok and "disruption budget" in by[Action.PREEMPT].detail
    assert refused.faults == ()  # a 429 is the server's answer: not a fault
    assert len(proxy.calls("POST", r"/eviction$")) == 1  # and not asked again
    assert fault_lines(controller.store) == []
    controller.store.close()


def test_a_requeued_copy_whose_answer_was_lost_is_created_once_and_not_waited_on(
    kube, proxy, tmp_path
):
    # A preempted bare pod is queued again as a copy of itself. The server creates the copy
    # but its answer is lost: the create is sent again, answered 409 (the name is taken
    # by the copy itself), and that is done, at once: no waiting on a conflict that lasts.
    controller = controller_of(kube, proxy, tmp_path)
    running_free_pods(kube, controller)
    kube.pod("owed", 8, queue="vision")
    proxy.inject("POST", r"/namespaces/[^/]+/pods$", "lost")

    ok = checked(controller.round_once())
    (victim,) = [d.workload for d in ok.plan.decisions if d.action is Action.PREEMPT]
    assert (ok.started, ok.preempted, ok.failed) == (1, 1, 0)
    (fault,) = ok.faults
    assert (fault.command, fault.attempt, fault.gave_up) == ("create pod", 1, False)
    creates = proxy.calls("POST", r"/namespaces/[^/]+/pods$")
    assert [c.mode for c in creates] == ["lost", ""]
    assert creates[1].t - creates[0].t < 3.0  # the retry's own backoff, no conflict loop
    bound, pending = api_view(kube)
    assert victim not in bound and victim in pending  # the copy, pending, once
    name = victim.split("/", 1)[1]
    assert sum(p == name for p in kube.pods()) == 1

    after = checked(controller.round_once())
    assert after.faults == ()
    assert round_view(after) == api_view(kube)
    controller.store.close()
