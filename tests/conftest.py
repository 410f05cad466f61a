"""Builders for tiny instances and the one way tests obtain plans: `solve_checked`, which
checks every plan against the invariants of SPEC.md (STYLE.md habit 8)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from alloc.domain import Action, Plan, Snapshot
from alloc.io import parse_instance
from alloc.round import RoundOptions, run_round
from alloc.solve.validate import validate

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SOLVERS = ("milp", "greedy")


# Two programs of 50%: p with teams a and b (50% each), q with its one team c.
TWO_PROGRAMS: dict[str, Any] = {
    "name": "root",
    "children": [
        {
            "name": "p",
            "share": "50%",
            "children": [{"name": "a", "share": "50%"}, {"name": "b", "share": "50%"}],
        },
        {"name": "q", "share": "50%", "children": [{"name": "c", "share": "100%"}]},
    ],
}


def ago(**delta: float) -> str:
    """An ISO time that long before NOW, e.g. ago(hours=3)."""
    return (NOW - timedelta(**delta)).isoformat().replace("+00:00", "Z")


def host(name: str, gpus: int = 8, **fields: Any) -> dict[str, Any]:
    return {"name": name, "gpus": gpus, **fields}


def workload(
    id: str, gpus: int, budget: str | None = "a", min_runtime: str = "2h", **fields: Any
) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id, "gpus": gpus, "min_runtime": min_runtime, **fields}
    if budget is not None:
        out["budget"] = budget
    if "hosts" in fields and "started" not in fields:
        out["started"] = ago(hours=10)
    out.setdefault("submitted", ago(hours=20))
    return out


def instance(
    hosts: list[dict[str, Any]] | None = None,
    budgets: dict[str, Any] | None = None,
    workloads: list[dict[str, Any]] | None = None,
    usage: dict[str, float] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A small instance as the dict a YAML file would hold; defaults: 2 hosts of 8 GPUs and
    two teams a and b with equal shares and equal usage."""
    return {
        "now": NOW.isoformat().replace("+00:00", "Z"),
        "policy": {"time_limit": "20s", **top.pop("policy", {})},
        "cluster": {"name": "test", "hosts": hosts or [host("h1"), host("h2")]},
        "budgets": budgets
        or {
            "name": "root",
            "children": [{"name": "a", "share": "50%"}, {"name": "b", "share": "50%"}],
        },
        "usage": usage if usage is not None else {},
        "workloads": workloads or [],
        **top,
    }


def snapshot_of(data: dict[str, Any]) -> Snapshot:
    import yaml

    return parse_instance(yaml.safe_dump(data, sort_keys=False), "test.yaml")


def solve_checked(
    snapshot: Snapshot | dict[str, Any], solver: str = "milp", **options: Any
) -> Plan:
    """Solve and check the plan against every invariant; the MILP must not have fallen back."""
    if isinstance(snapshot, dict):
        snapshot = snapshot_of(snapshot)
    plan = run_round(snapshot, RoundOptions(solver=solver, **options))
    problems = validate(snapshot, plan)
    assert problems == [], problems
    if solver == "milp":
        assert plan.report.solver == "milp", plan.report.note
    return plan


def actions(plan: Plan) -> dict[str, str]:
    return {d.workload: d.action.value for d in plan.decisions}


def started(plan: Plan) -> set[str]:
    return {d.workload for d in plan.decisions if d.action is Action.START}


@pytest.fixture(params=SOLVERS)
def solver(request: pytest.FixtureRequest) -> str:
    return str(request.param)
