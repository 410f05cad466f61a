"""The budgets table of `alloc solve`: `demand` and `waiting` count the same work, a node's
allocated work (running or queued), and its legend says so. Before, `waiting` also counted
unallocated work that `demand` leaves out (on `alloc generate --hosts 16`, robotics/team2's
waiting 2 included the unallocated w00033)."""

from __future__ import annotations

from conftest import solve_checked

from alloc.domain import ROOT_PATH, Action, Occupancy, path_prefixes
from alloc.generate import GeneratorSpec, generate
from alloc.solve.context import round_context
from alloc.summary import summarize


def test_demand_and_waiting_count_the_same_allocated_work():
    snap = generate(GeneratorSpec(hosts=16))
    plan = solve_checked(snap, "greedy")
    nodes = {n.path: n for n in summarize(round_context(snap), plan).nodes}
    demand = dict.fromkeys(nodes, 0)
    waiting = dict.fromkeys(nodes, 0)
    for d in plan.decisions:
        w = snap.by_id[d.workload]
        if d.occupancy is not Occupancy.ALLOCATED or not w.budget:
            continue
        for p in (ROOT_PATH, *path_prefixes(w.budget)):
            demand[p] += w.gpus
            waiting[p] += d.action is Action.WAIT
    assert {p: (n.demand_gpus, n.waiting) for p, n in nodes.items()} == {
        p: (demand[p], waiting[p]) for p in nodes
    }
    unallocated = plan.decision("w00033")  # waits, unallocated, in robotics/team2
    assert unallocated.action is Action.WAIT
    assert unallocated.occupancy is Occupancy.UNALLOCATED
    assert nodes["robotics/team2"].waiting == sum(
        1
        for d in plan.decisions
        if d.action is Action.WAIT
        and d.occupancy is Occupancy.ALLOCATED
        and (snap.by_id[d.workload].budget or "").startswith("robotics/team2/")
    )
