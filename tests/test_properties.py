"""Property tests: random tiny instances, both solvers, the invariants of SPEC.md.

Every example is a *valid* instance (it parses without InputError): 1-12 hosts of 4 or 8 GPUs
in 1-3 blocks, one or two GPU types, mostly ready hosts; a budget tree of depth 1-3 whose
sibling shares sum to at most 100%; 0-25 workloads, some running (on hosts that can hold them,
possibly hosts that are no longer ready), some unfunded, some unallocated.

Runs are reproducible (derandomized, no example database). When the environment variable
ALLOC_PROPERTY_DUMP names a directory, the instance of a failing example is written there as
YAML (the last one written is hypothesis' minimal example).
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import NOW, SOLVERS, instance, snapshot_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alloc.domain import Action, HostState, Occupancy, Plan, Snapshot, Topology, Workload
from alloc.round import RoundOptions, run_round
from alloc.solve.validate import validate

GPU_SIZES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
GPU_TYPES = ("h100", "a100")
ABSENT_TYPE = "b200"  # asked for by some queued work, held by no host
# Mostly ready; now and then a host that drains or is out of service.
HOST_STATES = ("ready",) * 7 + ("unhealthy", "retired", "maintenance")
TIME_LIMIT = "5s"
NOT_A_CHOICE = ("host_draining", "host_maintenance")  # preemptions the contract makes

PROPERTY = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=False,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _iso(minutes_ago: int) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).isoformat().replace("+00:00", "Z")


# --- the instance strategy ---------------------------------------------------------------------


def _shares(draw: st.DrawFn, count: int) -> list[int]:
    """Percentages of `count` siblings summing to at most 100 (zero now and then)."""
    raw = draw(
        st.lists(
            st.integers(0, 9).flatmap(lambda k: st.integers(1, 100) if k else st.just(0)),
            min_size=count,
            max_size=count,
        )
    )
    total = sum(raw)
    if total > 100:
        raw = [x * 100 // total for x in raw]
    return raw


def _budget_children(draw: st.DrawFn, prefix: str, depth: int) -> list[dict[str, Any]]:
    """1-3 children; each may have children of its own while `depth` allows."""
    count = draw(st.integers(1, 3))
    shares = _shares(draw, count)
    children = []
    for i, share in enumerate(shares):
        name = f"{prefix}{i}"
        node: dict[str, Any] = {
            "name": name,
            "share": draw(st.sampled_from([f"{share}%", share])),
        }
        if depth > 1 and draw(st.booleans()):
            node["children"] = _budget_children(draw, f"{name}_", depth - 1)
        children.append(node)
    return children


def _leaf_paths(node: dict[str, Any], parent: str = "") -> list[str]:
    out: list[str] = []
    for child in node.get("children", []):
        path = f"{parent}/{child['name']}" if parent else child["name"]
        out += _leaf_paths(child, path) if child.get("children") else [path]
    return out


def _hosts(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    count = draw(st.integers(1, 12))
    sizes = draw(st.sampled_from(["8", "8", "4", "mixed"]))
    blocks = draw(st.integers(1, 3))
    two_types = draw(st.integers(0, 3)) == 0
    hosts = []
    for i in range(count):
        gpus = {"8": 8, "4": 4}.get(sizes) or draw(st.sampled_from([4, 8]))
        h: dict[str, Any] = {
            "name": f"h{i + 1:02d}",
            "gpus": gpus,
            "block": f"b{draw(st.integers(1, blocks))}",
            "state": draw(st.sampled_from(HOST_STATES)),
        }
        if two_types:
            h["gpu_type"] = draw(st.sampled_from(GPU_TYPES))
        hosts.append(h)
    types = sorted({h.get("gpu_type", "gpu") for h in hosts})
    return hosts, types


def _running_place(
    draw: st.DrawFn,
    hosts: list[dict[str, Any]],
    used: dict[str, int],
    gpus: int,
    gpu_type: str | None,
) -> dict[str, int] | None:
    """Where a running workload may sit: one host with room if one of its type is large enough,
    else whole free hosts of one capacity. Any host state (it may have stopped being ready)."""
    typed = [h for h in hosts if gpu_type is None or h.get("gpu_type", "gpu") == gpu_type]
    if not typed:
        return None
    if any(h["gpus"] >= gpus for h in typed):
        room = [h["name"] for h in typed if h["gpus"] - used[h["name"]] >= gpus]
        if not room:
            return None
        return {draw(st.sampled_from(room)): gpus}
    capacity = draw(st.sampled_from(sorted({h["gpus"] for h in typed})))
    need = -(-gpus // capacity)
    whole = [h["name"] for h in typed if h["gpus"] == capacity and used[h["name"]] == 0]
    if len(whole) < need:
        return None
    chosen = draw(st.permutations(whole))[:need]
    return {name: capacity for name in sorted(chosen)}


def _workloads(
    draw: st.DrawFn, hosts: list[dict[str, Any]], types: list[str], leaves: list[str]
) -> list[dict[str, Any]]:
    used: dict[str, int] = defaultdict(int)
    out = []
    for i in range(draw(st.integers(0, 25))):
        w: dict[str, Any] = {"id": f"w{i:02d}", "gpus": draw(st.sampled_from(GPU_SIZES))}
        budget = draw(st.one_of(st.none(), st.sampled_from(leaves)))
        if budget is not None:
            w["budget"] = budget
        w["min_runtime"] = draw(st.one_of(st.just(0), st.integers(5, 480).map(lambda m: f"{m}m")))
        w["priority"] = draw(st.integers(0, 3))
        topology = draw(st.sampled_from([None, "block", "any"]))
        if topology is not None:
            w["topology"] = topology
        w["resumable"] = draw(st.booleans())
        # Mostly no constraint; now and then a type of the cluster, rarely one it lacks.
        pick = draw(st.integers(0, 19))
        gpu_type = (
            None if pick < 13 else ABSENT_TYPE if pick == 19 else draw(st.sampled_from(types))
        )
        if gpu_type is not None:
            w["gpu_type"] = gpu_type
        placement = None
        if draw(st.booleans()):
            placement = _running_place(draw, hosts, used, w["gpus"], gpu_type)
        if placement is not None:
            ran = draw(st.integers(0, 600))  # minutes since it started
            waited = draw(st.integers(0, 600))
            w["started"] = _iso(ran)
            w["submitted"] = _iso(ran + waited)
            w["hosts"] = placement
            for name, g in placement.items():
                used[name] += g
        else:
            w["submitted"] = _iso(draw(st.integers(0, 1200)))
        out.append(w)
    return out


@st.composite
def instances(draw: st.DrawFn) -> dict[str, Any]:
    hosts, types = _hosts(draw)
    depth = draw(st.integers(1, 3))
    budgets = {"name": "root", "children": _budget_children(draw, "n", depth)}
    leaves = _leaf_paths(budgets)
    # GPU-hours charged in the window, to some leaves (in quarter hours).
    usage: dict[str, float] = {
        leaf: draw(st.integers(0, 12000)) / 4 for leaf in leaves if draw(st.booleans())
    }
    return instance(
        hosts=hosts,
        budgets=budgets,
        usage=usage,
        workloads=_workloads(draw, hosts, types, leaves),
        policy={"time_limit": TIME_LIMIT},
    )


# --- helpers -----------------------------------------------------------------------------------


def _solve(snapshot: Snapshot, solver: str) -> Plan:
    return run_round(snapshot, RoundOptions(solver=solver))


@contextmanager
def _saved_on_failure(name: str, data: dict[str, Any]) -> Iterator[None]:
    """Write the example's instance as YAML to $ALLOC_PROPERTY_DUMP/<name>.yaml if it fails."""
    try:
        yield
    except BaseException:
        where = os.environ.get("ALLOC_PROPERTY_DUMP")
        if where:
            Path(where).mkdir(parents=True, exist_ok=True)
            (Path(where) / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
        raise


def _funded(snapshot: Snapshot, w: Workload) -> bool:
    return w.budget is not None and snapshot.budgets.effective_allocation(w.budget) > 0


def _protected(snapshot: Snapshot, w: Workload) -> bool:
    """Running, funded, minimum runtime above zero and not over, on no host in maintenance."""
    if not w.running or w.min_runtime_s <= 0 or not _funded(snapshot, w):
        return False
    assert w.started is not None
    if any(snapshot.cluster.host(h).state is HostState.MAINTENANCE for h in w.hosts):
        return False
    return snapshot.now < w.started + timedelta(seconds=w.min_runtime_s)


def _held_per_host(plan: Plan) -> Counter[str]:
    held: Counter[str] = Counter()
    for d in plan.decisions:
        if d.action.holds_gpus:
            for h, g in d.hosts.items():
                held[h] += g
    return held


def _could_start_now(snapshot: Snapshot, w: Workload, free: dict[str, int]) -> str | None:
    """Where `w` would fit on the GPUs left free by the plan, as placement.py places work, or None.

    A workload that fits on one host of its type (of any state: shape_of) goes on one ready host
    of its type with enough free GPUs. A larger one takes whole free ready hosts of its type, all
    of one GPU type and capacity, ceil(gpus / capacity) of them, from one block if its topology
    is block.
    """
    typed = [h for h in snapshot.cluster.hosts if w.gpu_type is None or h.gpu_type == w.gpu_type]
    ready = [h for h in typed if h.state is HostState.READY]
    if any(h.gpus >= w.gpus for h in typed):
        for h in ready:
            if h.gpus >= w.gpus and free[h.name] >= w.gpus:
                return f"{w.gpus} GPUs on {h.name} ({free[h.name]} of {h.gpus} free)"
        return None
    whole = [h for h in ready if free[h.name] == h.gpus]
    for gpu_type, capacity in sorted({(h.gpu_type, h.gpus) for h in whole}):
        need = math.ceil(w.gpus / capacity)
        same = [h for h in whole if (h.gpu_type, h.gpus) == (gpu_type, capacity)]
        groups: list[list[Any]] = (
            [[h for h in same if h.block == b] for b in sorted({h.block for h in same})]
            if w.topology is Topology.BLOCK
            else [same]
        )
        for group in groups:
            if len(group) >= need:
                names = [h.name for h in group[:need]]
                return f"whole free hosts {names} ({capacity} GPUs each)"
    return None


# --- the properties ----------------------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
@PROPERTY
@given(data=instances())
def test_every_plan_is_valid_and_decides_every_workload_once(solver: str, data: dict) -> None:
    snapshot = snapshot_of(data)
    with _saved_on_failure(f"valid-{solver}", data):
        plan = _solve(snapshot, solver)
        assert validate(snapshot, plan) == []
        counts = Counter(d.workload for d in plan.decisions)
        assert set(counts) == set(snapshot.by_id), "a workload has no decision, or an unknown one"
        assert all(n == 1 for n in counts.values()), f"decided more than once: {counts}"
        if solver == "milp":
            assert plan.report.solver == "milp" or "time limit" in plan.report.note, (
                f"the MILP fell back to greedy without hitting a time limit: {plan.report.note!r}"
            )


@PROPERTY
@given(data=instances())
def test_the_milp_objective_is_never_below_the_greedy_one_nor_above_its_bound(data: dict) -> None:
    snapshot = snapshot_of(data)
    with _saved_on_failure("objective", data):
        report = _solve(snapshot, "milp").report
        milp = report.objective
        greedy = _solve(snapshot, "greedy").report.objective
        if report.bound is not None:
            assert report.bound >= milp - 1e-6 * max(1.0, abs(milp)), (
                f"the MILP's bound {report.bound} is below its own objective {milp}"
            )
        assert milp >= greedy - 1e-6 * max(1.0, abs(greedy)), (
            f"MILP objective {milp} is below the greedy objective {greedy}"
        )


@pytest.mark.parametrize("solver", SOLVERS)
@PROPERTY
@given(data=instances())
def test_protection_capacity_and_readiness_are_kept(solver: str, data: dict) -> None:
    snapshot = snapshot_of(data)
    with _saved_on_failure(f"protection-{solver}", data):
        plan = _solve(snapshot, solver)
        for w in snapshot.workloads:
            d = plan.decision(w.id)
            if _protected(snapshot, w):
                assert d.action is Action.KEEP, f"{w.id} is protected, yet {d.action.value}"
                assert dict(d.hosts) == dict(w.hosts), f"{w.id} is protected but moved"
            if d.occupancy is Occupancy.UNALLOCATED or not _funded(snapshot, w):
                assert d.protected_until is None, (
                    f"{w.id} is unallocated or unfunded, yet protected until {d.protected_until}"
                )
        held = _held_per_host(plan)
        for h in snapshot.cluster.hosts:
            assert held[h.name] <= h.gpus, f"{h.name} holds {held[h.name]} of {h.gpus} GPUs"
        for d in plan.decisions:
            if d.action is Action.START:
                for name in d.hosts:
                    state = snapshot.cluster.host(name).state
                    assert state is HostState.READY, f"{d.workload} starts on {state} {name}"


@pytest.mark.parametrize("solver", SOLVERS)
@PROPERTY
@given(data=instances())
def test_no_gpu_idles_while_queued_or_preempted_work_could_use_it(solver: str, data: dict) -> None:
    snapshot = snapshot_of(data)
    with _saved_on_failure(f"occupancy-{solver}", data):
        plan = _solve(snapshot, solver)
        held = _held_per_host(plan)
        free: dict[str, int] = {
            h.name: (h.gpus - held[h.name]) if h.state is HostState.READY else 0
            for h in snapshot.cluster.hosts
        }
        for d in plan.decisions:
            w = snapshot.by_id[d.workload]
            if d.action is Action.PREEMPT and d.reason.value not in NOT_A_CHOICE:
                assert not all(free[h] >= g for h, g in w.hosts.items()), (
                    f"{w.id} is preempted ({d.reason.value}) although its GPUs end the round free"
                )
            if d.action is not Action.WAIT:
                continue
            # Hosts reserved for a blocked gang take no other allocated work this round but
            # backfill, whose protection ends by their ready_at (models/round.md 8.5).
            ends = snapshot.now + timedelta(seconds=w.min_runtime_s)
            gang = any(r.workload == w.id for r in plan.reservations)
            reserved = {h for r in plan.reservations if gang or r.ready_at < ends for h in r.hosts}
            if d.occupancy is Occupancy.ALLOCATED and reserved:
                room = _could_start_now(
                    snapshot, w, {h: 0 if h in reserved else g for h, g in free.items()}
                )
            else:
                room = _could_start_now(snapshot, w, free)
            assert room is None, (
                f"{w.id} ({w.gpus} GPUs, type {w.gpu_type}, topology {w.topology.value}, "
                f"{d.occupancy.value}) waits ({d.reason.value}) although {room} are free "
                "after the plan: no GPU may idle while queued work fits there"
            )
