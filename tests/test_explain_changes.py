"""`alloc explain`'s "what would have to change" suggests only changes whose condition does not
already hold (issue 17): each kind of suggestion is shown where it would help and left out
where it would not (a host asked back that is ready, topology any for a gang it would not
help, room that is already free, a node beyond its entitlement that is not, a node's
exception it already meets, fair-share moves for unallocated work). Its figures are those of
the path, the Why and `alloc solve`'s summary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, workload

from alloc.domain import Action, BudgetPath, Plan, Snapshot, WorkloadId
from alloc.explain import explain
from alloc.explain.entitled import counted_gpus
from alloc.io import load_instance
from alloc.solve.context import round_context
from alloc.summary import summarize

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


# --- the budget node: its entitlement, and only the conditions that do not hold yet ----------


def entitled_of(snapshot: Snapshot, plan: Plan, node: str) -> int:
    """`node`'s "entitled" in `alloc solve`'s Budgets table for this plan."""
    rows = summarize(round_context(snapshot), plan).nodes
    return next(r.entitled_gpus for r in rows if r.path == node)


def test_the_change_names_the_entitlement_the_path_and_solve_show_and_the_work_counted(solver):
    """Issue: "entitled to 9 GPUs this round" and then "is owed (0 GPUs ...)". Team a (20% of
    32 GPUs: its allocation alone is 6.4) is entitled to 12 this round (b leaves 4 of its share
    unused); a's protected 8 and a-q1's 4 fill them, so a-q2 waits. One notion in the answer:
    the entitlement of 12, in the path, the Why, the change and solve's "entitled"; the
    allocation alone is called so (6.4 GPUs), and nothing is "owed"."""
    snap = snapshot_of(
        instance(
            hosts=[host(f"h{i}") for i in range(4)],
            usage={"a": 1100, "b": 12000},
            budgets={
                "name": "root",
                "children": [{"name": "a", "share": "20%"}, {"name": "b", "share": "80%"}],
            },
            workloads=[
                workload("a-run", 8, "a", "4h", started=ago(hours=1), hosts={"h0": 8}),
                workload("b-run", 4, "b", "4h", started=ago(hours=1), hosts={"h1": 4}),
                workload("a-q1", 4, "a", submitted=ago(hours=5)),
                workload("a-q2", 4, "a", submitted=ago(hours=4)),
                workload("b-q1", 8, "b"),
                workload("b-q2", 8, "b"),
            ],
        )
    )
    plan = solve_checked(snap, solver)
    assert entitled_of(snap, plan, "a") == 12
    answer = explain(snap, plan, "a-q2")
    assert "  entitled to 12 GPUs this round (its allocation alone: 6.4 GPUs)" in answer.path
    assert "a holds 12 allocated GPUs after this round; its entitlement is 12" in answer.why
    assert answer.change[0] == (
        "a is entitled to 12 GPUs this round: its 4 GPUs fit once protected work and the "
        "entitled work ranked ahead of it count at most 8; they count 12: a-run (8 GPUs, "
        "protected), a-q1 (4 GPUs, entitled, 1 in the order) (that work ends)"
    )
    ctx = round_context(snap)
    assert counted_gpus(ctx, WorkloadId("a-q2"), BudgetPath("a")) == 12  # the walk's own count
    assert "owed" not in text(answer.lines())


def test_an_example_whose_node_already_meets_the_exception_is_not_told_to_meet_it():
    """Issue (and the README's example): protection.yaml's b-train was told "it is entitled
    only when b holds nothing else and is behind over the window ...; it holds 0" with b's
    ratio 0.000. Both hold; room, not b's share, keeps it waiting, so only room is named."""
    lines = change(load_instance(EXAMPLES / "protection.yaml"), "b-train")
    assert lines == [
        "8 GPUs free on one host; the most free on a host it may use is 0",
        "room of that shape frees at the earliest at 2026-11-30T15:00:00Z, when the protection "
        "of the work there ends (work still entitled then keeps running)",
    ]


def _gang_beyond_its_team(usage: dict[str, float], protected: bool) -> Snapshot:
    """8 hosts of one block; a's 40-GPU gang is larger than a's entitlement of 32. With
    `protected` a runs a-prot (8 GPUs, protected) and b runs 8 and queues 24 (the gang fits
    beside them and is ranked); without it a's 40-GPU a-old, past its protection, is
    rebalanced for b's queued runs."""
    if protected:
        work = [
            workload("a-prot", 8, "a", "4h", started=ago(hours=1), hosts={"h0": 8}),
            workload("b-run", 8, "b", "4h", started=ago(hours=1), hosts={"h1": 8}),
            *(workload(f"b-q{i}", 8, "b") for i in range(3)),
        ]
    else:
        work = [
            workload("b-run0", 8, "b", "4h", started=ago(hours=1), hosts={"h0": 8}),
            workload("b-run1", 8, "b", "4h", started=ago(hours=1), hosts={"h1": 8}),
            workload(
                "a-old", 40, "a", started=ago(hours=5), hosts={f"h{i}": 8 for i in range(2, 7)}
            ),
            workload("b-q1", 8, "b"),
            workload("b-q2", 8, "b"),
        ]
    hosts = [host(f"h{i}", block="X") for i in range(8)]
    return snapshot_of(
        instance(hosts=hosts, usage=usage, workloads=[*work, workload("a-gang", 40, "a", "4h")])
    )


@pytest.mark.parametrize(
    ("usage", "protected", "unmet"),
    [
        (
            {"a": 6000, "b": 0},
            False,
            "a is behind its share over the window (ratio 1.116 now)",
        ),
        (
            {},
            True,
            "a holds nothing else (protected work and the entitled work ranked ahead of it "
            "count 8: a-prot (8 GPUs, protected))",
        ),
    ],
    ids=["holds nothing but is ahead", "is behind but holds protected work"],
)
def test_a_gang_larger_than_its_team_is_told_only_the_conditions_that_do_not_hold(
    usage, protected, unmet, solver
):
    """Work larger than its leaf's whole entitlement is entitled as the leaf's first work
    when the leaf holds nothing else and is behind over the window (models/round.md 2.3): the
    answer names the one of the two that does not hold, and not the other."""
    snap = _gang_beyond_its_team(usage, protected)
    plan = solve_checked(snap, solver)
    assert entitled_of(snap, plan, "a") == 32
    lines = change(snap, "a-gang", plan)
    exception = [line for line in lines if line.startswith("it asks for more than all")]
    assert exception == [
        "it asks for more than all of a's entitlement this round (32 GPUs): it is entitled as "
        f"a's first work when {unmet} (models/round.md 2.3)"
    ]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_no_example_is_told_to_wait_for_a_time_that_has_come(path):
    snap = load_instance(path)
    plan = solve_checked(snap)
    for d in plan.decisions:
        if d.action is Action.WAIT:
            for line in explain(snap, plan, d.workload).change:
                assert f"at the earliest at {snap.now.isoformat()}" not in line
                assert "come back" not in line or "(ready)" not in line


# --- unallocated work -------------------------------------------------------------------------


ROOM_FOR_UNALLOCATED = (
    "GPUs of that shape that no allocated work wants: allocated work keeps its GPUs against "
    "unallocated work (past its protection too), so room frees only when work there ends and "
    "no waiting allocated work takes it"
)


def _one_host_held_by_a(a_run: dict[str, object], usage: dict[str, float]) -> Snapshot:
    """One host of 8 GPUs held by a's run `a_run`; b's scratch (8 GPUs, minimum runtime 0)
    and an unfunded orphan (4 GPUs) wait."""
    return snapshot_of(
        instance(
            hosts=[host("h0")],
            usage=usage,
            workloads=[a_run, workload("scratch", 8, "b", "0"), workload("orphan", 4, None)],
        )
    )


PROTECTED_A = workload("a-run", 8, "a", "4h", started=ago(hours=1), hosts={"h0": 8})


@pytest.mark.parametrize("wid", ["scratch", "orphan"], ids=["minimum runtime 0", "unfunded"])
def test_unallocated_work_is_told_what_frees_room_for_it_and_no_fair_share_moves(wid):
    """Issue: unallocated work was told room frees "when the protection of the work there
    ends" and "when its own node moves ahead in the fair-share order": neither helps it
    (allocated work keeps its GPUs against it, protected or not, and it has no place in the
    order). It is told what does: GPUs no allocated work wants. Running as allocated work
    would not help either this round (issue 17, point 4): b is entitled to none of the host,
    which a's run holds protected until 15:00, and no node's work could start beside it."""
    snap = _one_host_held_by_a(PROTECTED_A, {})
    lines = change(snap, wid)
    assert lines[1:] == [ROOM_FOR_UNALLOCATED]
    assert not any("fair-share" in line or "protection of the work" in line for line in lines)


def test_a_minimum_runtime_above_0_is_suggested_only_when_it_would_start_the_work(solver):
    """Issue 17, point 4: "a minimum runtime above 0" was suggested to work whose node is
    entitled to no GPU, which cannot help. Here a's 8-GPU run is past its protection and a is
    ahead of b over the window: as allocated work of b (ratio 0, holding nothing) scratch
    would be entitled and would displace a's run this round, so the suggestion stands, with
    the runtime tried; with a's run protected it does not (above). The unfunded orphan may
    be told to name a node: a's run past its protection leaves room for work of some node."""
    past = workload("a-run", 8, "a", "2h", started=ago(hours=5), hosts={"h0": 8})
    snap = _one_host_held_by_a(past, {"a": 100})
    plan = solve_checked(snap, solver)
    assert plan.decision(WorkloadId("a-run")).action is Action.KEEP  # unallocated work waits
    lines = change(snap, "scratch", plan)
    assert lines[1:] == [
        ROOM_FOR_UNALLOCATED,
        "or it declares a minimum runtime above 0 (with 15 min, this round would start it): it "
        "then runs as allocated work of b, charged to b and protected for that runtime, and "
        "waiting allocated work displaces unallocated work",
    ]
    assert change(snap, "orphan", plan)[1:] == [
        ROOM_FOR_UNALLOCATED,
        "or it names a budget node with a share and a minimum runtime above 0: it then runs as "
        "allocated work of that node, charged to it and protected for that runtime, and "
        "waiting allocated work displaces unallocated work",
    ]
    # What the suggestion claims, checked: the same round with that runtime starts it.
    from dataclasses import replace

    asked = tuple(
        replace(w, min_runtime_s=900.0) if w.id == "scratch" else w for w in snap.workloads
    )
    trial = solve_checked(replace(snap, workloads=asked), solver)
    assert trial.decision(WorkloadId("scratch")).action is Action.START


# --- the command line and the README ---------------------------------------------------------


def test_explain_with_a_config_and_no_workload_id_asks_for_the_workload_id(tmp_path):
    """Issue: `alloc explain --config C` said "Missing argument 'instance'"; the missing
    thing is the workload id (bad input: exit 2, nothing read from the cluster)."""
    from typer.testing import CliRunner

    from alloc.cli.app import app

    result = CliRunner().invoke(app, ["explain", "--config", str(tmp_path / "controller.yaml")])
    assert result.exit_code == 2
    error = result.stderr.splitlines()[0]  # then the usage line, which names both arguments
    assert error.endswith("WORKLOAD: required, but not given: alloc explain --config FILE WORKLOAD")
    assert "instance" not in error.lower()


def test_the_readme_explain_example_is_what_explain_prints():
    """The README's reference example of `alloc explain` (protection.yaml's b-train) shows
    lines of its answer in order, and its "What would have to change" whole."""
    from tests.tutorials import _steps, missing

    readme = (EXAMPLES.parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```console\n(.*?)```", readme, flags=re.S)
    (step,) = [
        s
        for b in blocks
        for s in _steps(b)
        if s.command.startswith("alloc explain instances/examples/protection.yaml b-train")
    ]
    snap = load_instance(EXAMPLES / "protection.yaml")
    answer = explain(snap, solve_checked(snap), "b-train")
    assert missing(step.shown, "\n".join(answer.lines())) is None
    shown = step.shown[step.shown.index("What would have to change:") + 1 :]
    assert [line.strip() for line in shown] == answer.change
