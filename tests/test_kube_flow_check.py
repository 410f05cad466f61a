"""The checks of the Kubernetes flow benchmark and crash test (benchmarks.kube_flow) catch
what they are for: a pod bound twice at once, a gang with more pods bound than it has, a node
holding more GPUs than it has. (A check that cannot fail proves nothing.)"""

from __future__ import annotations

from benchmarks.kube_flow import PodLife, gang_runs, node_overload


def life(uid: str, name: str, node: str, start: float, end: float | None, how: str = "succeeded"):
    return PodLife(uid, name, "w", node, float(int(start)), start, end, how, gpus=8)


def test_one_run_of_a_gang_is_found_with_its_api_start_and_nodes():
    runs, problems = gang_runs(
        [life("a", "w-0", "n1", 10.4, 20.0), life("b", "w-1", "n2", 10.6, 19.0)], 2
    )
    assert runs == [(10.0, 19.0, "succeeded", frozenset({"n1", "n2"}))] and problems == []


def test_a_pod_name_bound_twice_at_once_is_a_problem():
    lives = [life("a", "w", "n1", 100.0, 109.0), life("b", "w", "n2", 105.0, 110.0)]
    runs, problems = gang_runs(lives, 1)
    assert any("bound twice at once" in p for p in problems)
    assert any("2 pods of a gang of 1" in p for p in problems)


def test_an_eviction_and_a_rebinding_in_one_second_are_two_runs():
    lives = [life("a", "w", "n1", 554.2, 555.13, "gone"), life("b", "w", "n1", 555.3, 559.6)]
    runs, problems = gang_runs(lives, 1)
    assert problems == [] and [r[2] for r in runs] == ["gone", "succeeded"]


def test_a_node_holding_more_than_its_gpus_is_a_problem():
    lives = [life("a", "x", "n1", 1.0, 5.0), life("b", "y", "n1", 4.0, 6.0)]
    assert node_overload(lives) == ["n1: 16 GPUs at 4.0"]
    assert node_overload([life("a", "x", "n1", 1.0, 5.0), life("b", "y", "n1", 5.0, 6.0)]) == []
