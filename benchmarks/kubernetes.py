"""Controller benchmark against the real local Kubernetes control plane (issue 16):
`.venv/bin/python -m benchmarks.kubernetes [--queued 200] [--rounds 20]`.

Round latency: `--queued` pending pods of two queues (1-8 GPUs, gangs of two 8-GPU pods, a
tenth without a contract) for `alloc`'s scheduler on the 4 x 8-GPU fake nodes of
../shared/recipes/k8s-local.sh; `--rounds` controller rounds back to back (full rounds and event
passes in turn), each snapshot (list nodes + pods) + solve + record + apply (bindings and
evictions through the API); median and max per solver. Target: median <= 1 s.

Writes a section of benchmarks/RESULTS.md and results-kubernetes.json. The control plane must be
up (`bash ../shared/recipes/k8s-local.sh start`); the benchmark works in a namespace of its own,
deleted at the end. The 1,000-pod run to completion is benchmarks.kube_flow.
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from typing import Any

from alloc.adapters.kubernetes.api import KubeApi, KubeConnection
from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.read import KubeSite
from alloc.domain import BudgetNode, BudgetPath, BudgetTree, Policy
from benchmarks.kube_flow import remove_namespace
from benchmarks.latency import round_latency

KUBECONFIG = "/var/lib/k8s-local/kubeconfig"
BEGIN, END = "<!-- kubernetes:begin -->", "<!-- kubernetes:end -->"
TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.6), BudgetNode("vision", 0.4))))


def submit(api: KubeApi, namespace: str, n: int, rng: random.Random) -> None:
    made = 0
    while made < n:
        gpus, size = rng.choice([(1, 1), (2, 1), (4, 1), (8, 1), (8, 2)])
        gang = f"g{made}" if size > 1 else None
        annotations = (
            {}
            if rng.random() < 0.1
            else {
                "alloc.dev/min-runtime": rng.choice(["1s", "30m", "1h"]),
                "alloc.dev/priority": str(rng.choice([0, 1])),
            }
        )
        labels = {"alloc.dev/queue": rng.choice(["nlp", "vision"])}
        if gang:
            labels["alloc.dev/workload"] = gang
        for k in range(size):
            body = {
                "metadata": {"name": f"p{made}-{k}", "labels": labels, "annotations": annotations},
                "spec": {
                    "schedulerName": "alloc",
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "m",
                            "image": "train",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                },
            }
            api.create(namespace, body)
        made += size


def latency(api: KubeApi, queued: int, rounds: int, solver: str) -> dict[str, Any]:
    namespace = f"bench-{uuid.uuid4().hex[:6]}"
    api.core.create_namespace({"metadata": {"name": namespace}})
    try:
        for _ in range(300):  # the namespace's service account token
            accounts = api.core.list_namespaced_service_account(namespace).items
            if accounts and accounts[0].secrets:
                break
            time.sleep(0.1)
        submit(api, namespace, queued, random.Random(1))
        queues = {
            f"{namespace}/nlp": BudgetPath("nlp"),
            f"{namespace}/vision": BudgetPath("vision"),
        }
        site = KubeSite(queues=queues, namespaces=(namespace,))
        executor = KubernetesExecutor(site, TREE, api, Policy(solver=solver, time_limit_s=10.0))
        measured = round_latency(executor, rounds)
    finally:
        remove_namespace(api, namespace)
    return {"solver": solver, "queued": queued, **measured}


def render(results: list[dict[str, Any]], info: str) -> str:
    lines = [
        BEGIN,
        "",
        "## Controller on the real local Kubernetes control plane (issue 16)",
        "",
        f"`.venv/bin/python -m benchmarks.kubernetes`; {info}. kube-apiserver, scheduler and "
        "controller-manager v1.20.2 from ../shared/recipes/k8s-local.sh (etcd, no kubelet): "
        "4 fake nodes x 8 GPUs, one host.",
        "",
        "| round latency | pending pods | rounds (full and event passes in turn) | median s | "
        "full rounds, median s | event passes, median s | max s | workloads started | target |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        verdict = "met" if r["median_s"] <= 1.0 else "NOT MET"
        event = r.get("event_median_s")
        lines.append(
            f"| {r['solver']} | {r['queued']} | {r['rounds']} | {r['median_s']:.3f} | "
            f"{r['full_median_s']:.3f} | {'-' if event is None else f'{event:.3f}'} | "
            f"{r['max_s']:.3f} | {r['started']} | median <= 1 s: {verdict} |"
        )
    lines += [
        "",
        "Each round lists the nodes and the namespace's pods, solves, records the plan and "
        "binds what starts (one Binding per pod, after writing its start time). Pods run to "
        "completion, with kills: benchmarks.kube_flow, below.",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    from benchmarks.machine import publish

    parser = argparse.ArgumentParser()
    parser.add_argument("--queued", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--solvers", default="milp,greedy")
    args = parser.parse_args()
    api = KubeApi(KubeConnection(KUBECONFIG, timeout_s=30.0))
    results = [latency(api, args.queued, args.rounds, s) for s in args.solvers.split(",")]
    print(publish("kubernetes", results, render, (BEGIN, END)))


if __name__ == "__main__":
    main()
