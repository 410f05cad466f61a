"""Hierarchical fair share (models/round.md, section 2): ratios, the level-by-level order,
entitlement, and priority confined to its own budget node."""

from __future__ import annotations

import math

import pytest
from conftest import ago, host, instance, snapshot_of, solve_checked, started, workload

from alloc.domain import BudgetPath
from alloc.policy.contract import standings
from alloc.policy.fairshare import aggregate_usage, fair_share, window_ratios

TREE = {
    "name": "root",
    "children": [
        {
            "name": "nlp",
            "share": "60%",
            "children": [{"name": "olmo", "share": "70%"}, {"name": "tulu", "share": "30%"}],
        },
        {"name": "robotics", "share": "40%"},
    ],
}


def share_of(data):
    snap = snapshot_of(data)
    st = standings(snap)
    placeable = {w for w, s in st.items() if s.forced is None}
    return snap, fair_share(snap, st, placeable, snap.cluster.ready_gpus)


def test_a_nodes_usage_is_its_own_plus_its_descendants():
    snap = snapshot_of(
        instance(budgets=TREE, usage={"nlp/olmo": 100, "nlp/tulu": 50, "nlp": 5, "robotics": 30})
    )
    usage = aggregate_usage(snap.budgets, snap.usage_gpu_hours)
    assert usage[BudgetPath("nlp")] == 155
    assert usage[BudgetPath("")] == 185
    assert usage[BudgetPath("nlp/olmo")] == 100


def test_the_ratio_is_usage_over_effective_allocation_times_window_capacity():
    # 2 hosts x 8 GPUs x 168 h = 2688 GPU-h; olmo holds 60% x 70% = 42%.
    snap = snapshot_of(instance(budgets=TREE, usage={"nlp/olmo": 1128.96, "robotics": 0}))
    _, ratios = window_ratios(snap)
    assert ratios[BudgetPath("nlp/olmo")] == pytest.approx(1128.96 / (0.42 * 2688))
    assert ratios[BudgetPath("nlp/olmo")] == pytest.approx(1.0)
    assert ratios[BudgetPath("robotics")] == 0.0


def test_the_window_capacity_can_be_given():
    snap = snapshot_of(
        instance(budgets=TREE, usage={"robotics": 400}, usage_capacity_gpu_hours=1000)
    )
    assert window_ratios(snap)[1][BudgetPath("robotics")] == pytest.approx(1.0)


def test_a_zero_share_makes_a_node_unfunded_with_an_infinite_ratio():
    tree = {"name": "root", "children": [{"name": "a", "share": 100}, {"name": "z", "share": 0}]}
    snap = snapshot_of(instance(budgets=tree, workloads=[workload("w", 1, budget="z")]))
    assert math.isinf(window_ratios(snap)[1][BudgetPath("z")])
    plan = solve_checked(snap)
    d = plan.decision("w")
    assert (d.action.value, d.occupancy.value, d.reason.value) == (
        "start",
        "unallocated",
        "unfunded",
    )


def test_siblings_are_compared_before_cousins():
    # nlp (60%) is behind robotics (40%) at the top; inside nlp, tulu is behind olmo. With one
    # GPU left, tulu's work goes first although olmo's leaf ratio is lower than robotics'.
    usage = {"nlp/olmo": 0, "nlp/tulu": 1000, "robotics": 5000}
    work = [
        workload("olmo-1", 1, budget="nlp/olmo"),
        workload("tulu-1", 1, budget="nlp/tulu"),
        workload("rob-1", 1, budget="robotics"),
    ]
    _, share = share_of(instance(hosts=[host("h1", 1)], budgets=TREE, usage=usage, workloads=work))
    assert share.order[0] == "olmo-1"
    assert share.order[-1] == "rob-1"
    assert share.entitled == frozenset({"olmo-1"})


def test_a_programs_unused_share_goes_to_its_own_projects_first():
    # olmo has no work: nlp's 60% all goes to tulu, robotics gets its 40%.
    work = [workload(f"tulu-{i}", 1, budget="nlp/tulu") for i in range(10)]
    work += [workload(f"rob-{i}", 1, budget="robotics") for i in range(10)]
    plan = solve_checked(instance(hosts=[host("h1", 10)], budgets=TREE, workloads=work))
    tulu = sum(1 for w in started(plan) if w.startswith("tulu"))
    assert (tulu, len(started(plan)) - tulu) == (6, 4)


def test_projected_ratios_interleave_siblings_in_proportion_to_their_shares():
    tree = {
        "name": "root",
        "children": [{"name": "a", "share": "75%"}, {"name": "b", "share": "25%"}],
    }
    work = [workload(f"a-{i}", 1, budget="a") for i in range(8)]
    work += [workload(f"b-{i}", 1, budget="b") for i in range(8)]
    plan = solve_checked(instance(hosts=[host("h1", 8)], budgets=tree, workloads=work))
    assert sum(1 for w in started(plan) if w.startswith("a")) == 6


def test_protected_work_counts_against_its_node_first():
    # a holds 6 protected GPUs of 8; equal shares and usage, so b gets the 2 GPUs left.
    work = [
        workload("a-run", 6, min_runtime="4h", started=ago(hours=1), hosts={"h1": 6}),
        workload("a-2", 1),
        workload("b-1", 1, budget="b"),
        workload("b-2", 1, budget="b"),
    ]
    plan = solve_checked(instance(hosts=[host("h1")], workloads=work))
    assert started(plan) == {"b-1", "b-2"}


def test_priority_orders_only_inside_its_own_budget_node(solver):
    work = [
        workload("a-vip", 8, priority=100, submitted=ago(hours=1)),
        workload("b-plain", 8, budget="b", priority=0, submitted=ago(hours=2)),
    ]
    plan = solve_checked(
        instance(hosts=[host("h1")], usage={"a": 100, "b": 0}, workloads=work), solver
    )
    assert started(plan) == {"b-plain"}


def test_inside_a_node_higher_priority_goes_first_then_earlier_submission(solver):
    work = [
        workload("old", 8, submitted=ago(hours=5)),
        workload("new", 8, submitted=ago(hours=1)),
        workload("vip", 8, priority=1, submitted=ago(minutes=1)),
    ]
    plan = solve_checked(instance(hosts=[host("h1"), host("h2")], workloads=work), solver)
    assert started(plan) == {"vip", "old"}


def test_a_lower_priority_workload_never_takes_the_place_a_higher_one_fits_in(solver):
    # The 4-GPU priority-0 job would use the host better alone, but the priority-5 2-GPU job
    # of the same node fits where it would go, so it starts (invariant 6); then fill follows.
    work = [workload("big-low", 4, priority=0), workload("small-high", 2, priority=5)]
    plan = solve_checked(instance(hosts=[host("h1", 4)], workloads=work), solver)
    assert started(plan) == {"small-high"}
    assert plan.decision("big-low").reason.value in ("no_room", "over_allocation")


def _pick_by_pick(snap, candidates):
    """The projected order as section 2.2 states it, one pick at a time: from the root, the
    child with the lowest projected ratio (then name) with work left, down to a leaf; its next
    workload is granted and `gpus x horizon` is charged along its path."""
    from alloc.domain import ROOT_PATH, path_prefixes
    from alloc.policy.fairshare import leaf_order_key, ratio

    tree, cap = snap.budgets, snap.window_capacity_gpu_hours
    horizon_h = snap.policy.horizon_s / 3600
    projected = dict(aggregate_usage(tree, snap.usage_gpu_hours))
    queues = {}
    for w in sorted(candidates, key=leaf_order_key):
        queues.setdefault(w.budget, []).append(w)

    def left(path):
        return any(q for leaf, q in queues.items() if leaf == path or leaf.startswith(path + "/"))

    out = []
    while any(queues.values()):
        path, trail = ROOT_PATH, []
        while not queues.get(path):
            kids = [c for c in tree.children(path) if left(c)]
            key = {
                c: (ratio(projected[c], tree.effective[c], cap), c.rsplit("/")[-1]) for c in kids
            }
            path = min(kids, key=key.__getitem__)
            trail.append(key[path][0])
        w = queues[path].pop(0)
        out.append((w.id, tuple(trail)))
        for p in (ROOT_PATH, *path_prefixes(path)):
            projected[p] += w.gpus * horizon_h
    return out


@pytest.mark.parametrize("seed", range(6))
def test_the_projected_order_is_the_pick_by_pick_walk_of_section_2_2(seed):
    # Random three-level trees, usage and queues: the order and the ratios at each grant are
    # exactly those of granting one workload at a time from the root down.
    import random
    from dataclasses import replace

    rng = random.Random(seed)
    programs = []
    for p in range(rng.randint(2, 4)):
        teams = [{"name": f"t{t}", "share": rng.randint(1, 9)} for t in range(rng.randint(1, 4))]
        programs.append({"name": f"p{p}", "share": rng.randint(1, 9), "children": teams})
    tree = {"name": "root", "children": programs}
    leaves = [f"{p['name']}/{t['name']}" for p in programs for t in p["children"]]
    usage = {leaf: rng.choice([0, rng.uniform(0, 3000)]) for leaf in leaves}
    work = [
        workload(
            f"w{i:02d}",
            rng.choice([1, 2, 4, 8]),
            budget=rng.choice(leaves),
            priority=rng.randint(0, 2),
            submitted=ago(hours=rng.randint(1, 50)),
        )
        for i in range(40)
    ]
    hosts = [host(f"h{i}") for i in range(4)]
    snap = snapshot_of(instance(hosts=hosts, budgets=tree, usage=usage, workloads=work))
    # A controller account may name an inner node: some work is filed on its program.
    inner = tuple(
        replace(w, budget=w.budget.split("/")[0]) if rng.random() < 0.2 else w
        for w in snap.workloads
    )
    snap = replace(snap, workloads=inner)
    st = standings(snap)
    share = fair_share(snap, st, set(st), snap.cluster.ready_gpus)
    expected = _pick_by_pick(snap, snap.workloads)
    assert list(share.order) == [wid for wid, _ in expected]
    assert [share.grant_ratios[wid] for wid in share.order] == [r for _, r in expected]
