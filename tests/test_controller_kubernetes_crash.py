"""Crash safety on Kubernetes (issue 16): the real controller process (`alloc controller
run`) drives the real local control plane while an emulated kubelet runs what it binds
(benchmarks.kube_flow), and is killed with SIGKILL 20 times at random moments. Then no
workload was lost or ran twice, every run answers a recorded plan's start, every eviction was
followed by a requeue, and the ledger equals what the API showed, run by run."""

from __future__ import annotations

from k8s_local import require_kubernetes

from benchmarks.kube_flow import flow


def test_twenty_kills_lose_no_pod_bind_nothing_twice_and_keep_every_charge(tmp_path):
    api = require_kubernetes()
    # 80 pods on the 4 x 8 GPUs of the plane: queues, preemptions and rebalancing go on
    # while the kills land.
    result = flow(api, pods=80, kills=20, nodes=0, seed=3, workdir=tmp_path, timeout_s=900)
    assert result["kills"] == 20
    assert result["kubelet_errors"] == []
    assert (result["lost"], result["duplicated"]) == (0, 0), result["first_problems"]
    assert result["problems"] == 0, result["first_problems"]
    assert result["runs"] >= result["workloads"]
