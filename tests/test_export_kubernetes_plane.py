"""An exported plan applied to the real control plane (tests/k8s_local.py) does what the
executor does: the same cluster built twice, in two namespaces one after the other; the plan
of the first exported and run as its kubectl script (the 1.20 kubectl the recipe builds), the
plan of the second applied by the executor; the same pods end on the same nodes, the same
ones requeued. And `apply_steps` (what `alloc export --apply` runs) stops at a refusal."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from k8s_local import KUBECONFIG, NODES, Kube, require_kubernetes

from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.export import apply_steps, plan_steps, render_script
from alloc.adapters.kubernetes.read import PREEMPTIONS, KubeSite
from alloc.adapters.kubernetes.steps import Step
from alloc.domain import BudgetNode, BudgetPath, BudgetTree, Policy
from alloc.round import run_round
from alloc.solve.validate import validate

KUBECTL = Path(os.environ.get("ALLOC_TEST_KUBECTL", "/var/cache/k8s-local/bin/kubectl"))
TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
POLICY = Policy(solver="greedy", time_limit_s=5.0)


def site_of(kube: Kube) -> KubeSite:
    ns = kube.namespace
    return KubeSite(
        queues={f"{ns}/nlp": BudgetPath("nlp"), f"{ns}/vision": BudgetPath("vision")},
        namespaces=(ns,),
    )


def build(kube: Kube) -> None:
    """Unallocated pods running on every node; allocated work waiting: a pod and a gang."""
    for i, node in enumerate(NODES):
        kube.pod(f"free-{i}", 8, queue="nlp", min_runtime=None)
        kube.api.bind(kube.namespace, f"free-{i}", node)
        kube.set_phase(f"free-{i}", "Running")
    kube.pod("owed", 8, queue="vision")
    kube.pod("g-0", 8, queue="nlp", gang="g")
    kube.pod("g-1", 8, queue="nlp", gang="g")


def outcome(kube: Kube) -> dict[str, tuple[str | None, str | None]]:
    return {
        name: (p.spec.node_name, (p.metadata.annotations or {}).get(PREEMPTIONS))
        for name, p in kube.pods().items()
    }


def plan_of(kube: Kube):
    executor = KubernetesExecutor(site_of(kube), TREE, kube.api, POLICY)
    snapshot = executor.snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    return executor, plan


def test_an_exported_plan_run_with_kubectl_places_as_the_executor_does(tmp_path):
    api = require_kubernetes()
    if not KUBECTL.exists():
        pytest.fail(f"no kubectl at {KUBECTL} (../shared/recipes/k8s-local.sh builds it)")
    first = Kube(api)
    try:
        build(first)
        _, plan = plan_of(first)
        steps, report = plan_steps(plan, site_of(first), TREE, POLICY, api)
        assert report.failed == () and steps
        assert first.pods()["owed"].spec.node_name is None  # exporting changed nothing
        script = tmp_path / "alloc-plan.sh"
        script.write_text(render_script(steps, "test"))
        env = {**os.environ, "KUBECTL": str(KUBECTL), "KUBECONFIG": str(KUBECONFIG)}
        done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        exported = outcome(first)
        decisions = sorted((d.workload.split("/")[1], d.action.value) for d in plan.decisions)
    finally:
        first.close()
    second = Kube(api)
    try:
        build(second)
        executor, plan = plan_of(second)
        assert sorted((d.workload.split("/")[1], d.action.value) for d in plan.decisions) == (
            decisions
        )
        assert executor.apply(plan).failed == ()
        assert outcome(second) == exported
    finally:
        second.close()
    assert exported["owed"][0] and exported["g-0"][0] and exported["g-1"][0]
    assert sum(1 for node, count in exported.values() if count == "1" and node is None) == 3


def test_applying_exported_requests_stops_at_the_first_refusal():
    api = require_kubernetes()
    kube = Kube(api)
    try:
        kube.pod("a", 8, queue="nlp")
        steps = [
            Step(
                "bind a",
                "POST",
                f"/api/v1/namespaces/{kube.namespace}/pods/a/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "a"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": NODES[0]},
                },
            ),
            Step(
                "bind a again",
                "POST",
                f"/api/v1/namespaces/{kube.namespace}/pods/a/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "a"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": NODES[1]},
                },
            ),
            Step("delete a", "DELETE", f"/api/v1/namespaces/{kube.namespace}/pods/a"),
        ]
        sent, failure = apply_steps(steps, api)
        assert sent == 1 and "bind a again: 409" in failure
        assert kube.placements() == {"a": NODES[0]}  # the deletion after it was not sent
    finally:
        kube.close()
