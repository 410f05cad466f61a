"""The real local Kubernetes control plane the integration tests drive (started by .ci/run with
../shared/recipes/k8s-local.sh: etcd, kube-apiserver, scheduler and controller-manager v1.20,
fake nodes `gpu-node1..4` of 8 GPUs without a kubelet). Tests that need it are skipped when it
is not running, unless ALLOC_REQUIRE_KUBERNETES=1 (set by .ci/run), where its absence fails
them. A test emulates the kubelet by patching pod status through the API."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from alloc.adapters.kubernetes.api import KubeApi, KubeConnection

KUBECONFIG = Path(os.environ.get("ALLOC_TEST_KUBECONFIG", "/var/lib/k8s-local/kubeconfig"))
NODES = [f"gpu-node{i}" for i in range(1, 5)]


def require_kubernetes() -> KubeApi:
    problem = ""
    if not KUBECONFIG.exists():
        problem = f"no kubeconfig at {KUBECONFIG}"
    else:
        try:
            api = KubeApi(KubeConnection(str(KUBECONFIG), timeout_s=5.0, attempts=1))
            api.nodes()
            return api
        except Exception as e:  # any failure to reach it
            problem = f"the local control plane does not answer ({e})"
    if os.environ.get("ALLOC_REQUIRE_KUBERNETES") == "1":
        pytest.fail(f"ALLOC_REQUIRE_KUBERNETES=1 but {problem}")
    pytest.skip(f"{problem} (.ci/run starts it with k8s-local.sh)")


class Kube:
    """Submit pods into a namespace of its own, emulate the kubelet, and clean up."""

    def __init__(self, api: KubeApi) -> None:
        self.api = api
        self.core = api.core
        self.namespace = f"t-{uuid.uuid4().hex[:8]}"
        self.core.create_namespace({"metadata": {"name": self.namespace}})
        self.extra_nodes: list[str] = []
        # Pods need the namespace's `default` service account and its token, which two
        # controllers make shortly after (seconds on a loaded machine).
        for _ in range(300):
            accounts = self.core.list_namespaced_service_account(self.namespace).items
            if accounts and accounts[0].secrets:
                break
            time.sleep(0.1)

    def pod(
        self,
        name: str,
        gpus: int,
        min_runtime: str | None = "1h",
        gang: str | None = None,
        queue: str | None = None,
        gpu_type: str | None = None,
        annotations: dict[str, str] | None = None,
    ) -> None:
        labels = {"alloc.dev/workload": gang} if gang else {}
        if queue:
            labels["alloc.dev/queue"] = queue
        notes = dict(annotations or {})
        if min_runtime is not None:
            notes["alloc.dev/min-runtime"] = min_runtime
        spec: dict[str, Any] = {
            "schedulerName": "alloc",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "train:latest",
                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                }
            ],
        }
        if gpu_type:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": gpu_type}
        body = {"metadata": {"name": name, "labels": labels, "annotations": notes}, "spec": spec}
        self.core.create_namespaced_pod(self.namespace, body)

    def pods(self) -> dict[str, Any]:
        return {p.metadata.name: p for p in self.core.list_namespaced_pod(self.namespace).items}

    def placements(self) -> dict[str, str | None]:
        return {name: p.spec.node_name for name, p in self.pods().items()}

    def set_phase(self, name: str, phase: str) -> None:
        """What a kubelet would report (Running with Ready, or Succeeded/Failed)."""
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        ready = "True" if phase == "Running" else "False"
        status = {
            "phase": phase,
            "startTime": now,
            "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": now}],
        }
        self.core.patch_namespaced_pod_status(name, self.namespace, {"status": status})

    def budget(self, name: str, pods: list[str], min_available: int) -> None:
        """A disruption budget over these pods (labelled `pdb=<name>`) keeping
        `min_available` of them."""
        for pod in pods:
            self.core.patch_namespaced_pod(
                pod, self.namespace, {"metadata": {"labels": {"pdb": name}}}
            )
        selector = {"matchLabels": {"pdb": name}}
        self.api.models.PolicyV1beta1Api(self.api.client).create_namespaced_pod_disruption_budget(
            self.namespace,
            {
                "metadata": {"name": name},
                "spec": {"minAvailable": min_available, "selector": selector},
            },
        )

    def node(self, name: str, gpus: int, labels: dict[str, str]) -> None:
        """A fake GPU node of this test (removed at the end)."""
        self.core.create_node({"metadata": {"name": name, "labels": labels}})
        self.extra_nodes.append(name)
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        res = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": str(gpus)}
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": now}
        self.core.patch_node_status(
            name, {"status": {"capacity": res, "allocatable": res, "conditions": [ready]}}
        )

    def close(self) -> None:
        self.core.delete_namespace(self.namespace, grace_period_seconds=0)
        for pod in self.core.list_namespaced_pod(self.namespace).items:
            self.core.delete_namespaced_pod(
                pod.metadata.name, self.namespace, grace_period_seconds=0
            )
        for name in self.extra_nodes:
            self.core.delete_node(name)
        for name in NODES:  # back in service for the next test
            self.core.patch_node(
                name,
                {
                    "metadata": {"annotations": {"alloc.dev/cordoned": None}},
                    "spec": {"unschedulable": False, "taints": None},
                },
            )


def kube_of() -> Iterator[Kube]:
    kube = Kube(require_kubernetes())
    try:
        yield kube
    finally:
        kube.close()


def controller_config(db: Path, kubeconfig: Path, namespace: str | None = None) -> str:
    """A controller config for the Kubernetes tests: queues nlp and vision (of `namespace`,
    its only managed one, when given) with half the lab each, the greedy solver."""
    if namespace:
        managed = f"  namespaces: [{namespace}]\n"
        queues = f"{{{namespace}/nlp: nlp, {namespace}/vision: vision}}"
    else:
        managed, queues = "", "{nlp: nlp, vision: vision}"
    return (
        "name: local\n"
        "executor: kubernetes\n"
        "interval: 1s\n"
        f"state: sqlite:///{db}\n"
        "policy: {solver: greedy, time_limit: 5s}\n"
        "budgets:\n"
        "  name: lab\n"
        "  children:\n"
        "    - {name: nlp, share: 50%}\n"
        "    - {name: vision, share: 50%}\n"
        "metrics: {port: 0}\n"
        "kubernetes:\n"
        f"  kubeconfig: {kubeconfig}\n"
        f"{managed}"
        f"  queues: {queues}\n"
    )
