"""`alloc explain`'s "what would have to change" suggests only changes whose condition does not
already hold (issue 17): each kind of suggestion is shown where it would help and left out
where it would not (a host asked back that is ready, topology any for a gang it would not
help, room that is already free, a node beyond its entitlement that is not)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, Plan, Snapshot, WorkloadId
from alloc.explain import explain
from alloc.io import load_instance

EXAMPLES = Path(__file__).resolve().parents[1] / "instances" / "examples"
ONE_TEAM = {"name": "root", "children": [{"name": "a", "share": "100%"}]}


def change(snapshot: Snapshot, wid: str, plan: Plan | None = None) -> list[str]:
    plan = plan or solve_checked(snapshot)
    assert plan.decision(WorkloadId(wid)).action is Action.WAIT, plan.decision(WorkloadId(wid))
    return explain(snapshot, plan, wid).change


def text(lines: list[str]) -> str:
    return "\n".join(lines)


# --- a GPU type nobody has, or whose hosts are all down --------------------------------------


def test_a_gpu_type_no_host_has_asks_for_such_a_host():
    lines = change(load_instance(EXAMPLES / "gpu-type.yaml"), "mi300-job")
    assert lines == ["a host with GPU type mi300 (types here: a100, h100)"]


def test_a_gpu_type_whose_hosts_are_down_asks_for_those_hosts_back():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", gpu_type="a100"), host("h2", gpu_type="h100", state="unhealthy")],
            workloads=[workload("w", 4, gpu_type="h100")],
        )
    )
    assert change(snap, "w") == ["a host of its GPU type ready again: h2 (unhealthy)"]


def test_no_host_is_asked_back_when_its_type_has_a_ready_host():
    snap = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2", state="unhealthy")],
            workloads=[
                workload("big", 8, min_runtime="4h", started=ago(hours=1), hosts={"h1": 8}),
                workload("w", 8, budget="b"),
            ],
        )
    )
    lines = change(snap, "w")
    assert "ready again" not in text(lines) and "come back" not in text(lines)
    assert "8 GPUs free on one host; the most free on a host it may use is 0" in lines


# --- work larger than the ready cluster gives ----------------------------------------------


def test_work_too_large_for_a_ready_cluster_asks_for_fewer_gpus_only():
    # Both hosts ready, topology any: neither topology any nor hosts back would help.
    snap = snapshot_of(instance(budgets=ONE_TEAM, workloads=[workload("w", 24, topology="any")]))
    assert change(snap, "w") == [
        "it asks for 24 GPUs; the ready cluster gives at most 16 GPUs of its GPU type to one "
        "workload: ask for at most 16"
    ]


def test_work_too_large_while_a_host_is_down_also_asks_for_the_host_back():
    snap = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2"), host("h3", state="maintenance")],
            budgets=ONE_TEAM,
            workloads=[workload("w", 24, topology="any")],
        )
    )
    assert change(snap, "w") == [
        "it asks for 24 GPUs; the ready cluster gives at most 16 GPUs of its GPU type to one "
        "workload: ask for at most 16",
        "or hosts come back: h3 (maintenance)",
    ]


def test_a_host_back_is_not_asked_for_when_even_with_it_the_work_would_not_fit():
    snap = snapshot_of(
        instance(
            hosts=[host("h1"), host("h2"), host("h3", state="maintenance")],
            workloads=[workload("w", 32, topology="any")],
        )
    )
    assert "come back" not in text(change(snap, "w"))


def test_a_block_gang_no_block_can_hold_is_told_about_topology_any():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", block="b1"), host("h2", block="b2")],
            budgets=ONE_TEAM,
            workloads=[workload("w", 16, topology="block")],
        )
    )
    assert change(snap, "w") == [
        "no network block has room for it, even empty (one block gives at most 8 GPUs of its "
        "kind): the workload accepts topology any (it fits the ready cluster across blocks), "
        "or asks for at most 8 GPUs"
    ]


# --- topology any, where it helps -------------------------------------------------------------


def test_topology_any_is_suggested_to_a_block_gang_that_would_fit_across_blocks():
    lines = change(load_instance(EXAMPLES / "topology-block.yaml"), "gang-2")
    assert "or the workload accepts topology any (it fits across blocks now)" in lines


def test_topology_any_is_not_suggested_to_a_gang_that_has_it():
    snap = snapshot_of(
        instance(
            hosts=[host("h1", block="b1"), host("h2", block="b2")],
            workloads=[
                workload("run", 8, min_runtime="4h", started=ago(hours=1), hosts={"h1": 8}),
                workload("w", 16, budget="b", topology="any"),
            ],
        )
    )
    assert "topology any" not in text(change(snap, "w"))


# --- room: when it frees, and not when it is free ------------------------------------------


def test_room_held_by_protected_work_says_when_it_frees():
    lines = change(load_instance(EXAMPLES / "protection.yaml"), "b-train")
    assert "8 GPUs free on one host; the most free on a host it may use is 0" in lines
    assert any(line.startswith("room of that shape frees at the earliest at ") for line in lines)


def test_room_that_is_free_is_not_asked_for():
    # A valid plan (an unallocated workload may wait beside idle GPUs) in which scratch waits
    # on an empty host: its room is there, so neither free room nor a time it frees is asked.
    snap = snapshot_of(instance(workloads=[workload("scratch", 1, budget=None, min_runtime="0")]))
    plan = solve_checked(snap)
    from dataclasses import replace

    from alloc.domain import Decision, Reason

    d = plan.decision(WorkloadId("scratch"))
    waiting = Decision(d.workload, Action.WAIT, d.occupancy, Reason.NO_ROOM)
    plan = replace(plan, decisions=(waiting,))
    from alloc.solve.validate import validate

    assert validate(snap, plan) == []
    lines = change(snap, "scratch", plan)
    assert lines == [
        "nothing about room: a place of its shape is free after this round (h1 (8 GPUs free))"
    ]


# --- the budget node: beyond its entitlement, holding too much, owed too little --------------


def test_a_node_beyond_its_entitlement_is_asked_to_drop_back():
    lines = change(load_instance(EXAMPLES / "fairshare-flat.yaml"), "b-7")
    assert any(line.startswith("or b drops back within its entitlement") for line in lines)
    assert any(line.startswith("b is owed 4 GPUs") for line in lines)


def test_a_node_within_its_entitlement_is_not_asked_to_drop_back_nor_told_it_holds_too_much():
    # b-train waits for room held by protected work (no_room): its node b holds nothing.
    lines = change(load_instance(EXAMPLES / "protection.yaml"), "b-train")
    assert not any("drops back" in line for line in lines)
    assert not any("other allocated GPU" in line for line in lines)


def test_work_larger_than_its_node_is_owed_is_told_so_and_smaller_work_is_not():
    lines = change(load_instance(EXAMPLES / "protection.yaml"), "b-train")
    assert any(line.startswith("it asks for more than all b is owed (4 GPUs") for line in lines)
    small = change(load_instance(EXAMPLES / "fairshare-flat.yaml"), "a-3")
    assert not any("asks for more than" in line for line in small)
    assert not any(line.startswith("a is owed") for line in small)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_no_example_is_told_to_wait_for_a_time_that_has_come(path):
    snap = load_instance(path)
    plan = solve_checked(snap)
    for d in plan.decisions:
        if d.action is Action.WAIT:
            for line in explain(snap, plan, d.workload).change:
                assert f"at the earliest at {snap.now.isoformat()}" not in line
                assert "come back" not in line or "(ready)" not in line
