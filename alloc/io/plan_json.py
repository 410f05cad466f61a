"""Plan <-> JSON (SPEC.md, "Plan"). Reading a plan validates its shape, naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alloc.domain import (
    Action,
    Decision,
    HostName,
    Occupancy,
    Plan,
    Reason,
    Reservation,
    SolverReport,
    WorkloadId,
)
from alloc.io.durations import format_time
from alloc.io.errors import InputError, field_path
from alloc.io.limits import read_input
from alloc.io.names import check_name
from alloc.io.schema import HostGpus, Time


def plan_to_dict(plan: Plan) -> dict[str, Any]:
    r = plan.report
    return {
        "now": format_time(plan.now),
        "round": plan.kind,
        "solver": r.solver,
        "status": r.status,
        "objective": round(r.objective, 6),
        "bound": None if r.bound is None else round(r.bound, 6),
        "gap": None if r.gap is None else round(r.gap, 8),
        "solve_seconds": round(r.solve_seconds, 4),
        "note": r.note,
        "decisions": [_decision(d) for d in plan.decisions],
        "drained_hosts": list(plan.drained_hosts),
        "reservations": [
            {"workload": r.workload, "hosts": list(r.hosts), "ready_at": format_time(r.ready_at)}
            for r in plan.reservations
        ],
        "metrics": {
            k: (round(v, 6) if isinstance(v, float) else v) for k, v in plan.metrics.items()
        },
    }


def _decision(d: Decision) -> dict[str, Any]:
    out: dict[str, Any] = {
        "workload": d.workload,
        "action": d.action.value,
        "occupancy": d.occupancy.value,
    }
    if d.action.holds_gpus:
        out["hosts"] = dict(d.hosts)
    if d.protected_until is not None:
        out["protected_until"] = format_time(d.protected_until)
    if d.backfill_for:
        out["backfill_for"] = list(d.backfill_for)
    out["reason"] = d.reason.value
    return out


def dump_plan(plan: Plan) -> str:
    return json.dumps(plan_to_dict(plan), indent=1) + "\n"


# A plan's ids and host names: text, within the characters of one value alloc reads (ids a
# cluster reports, `namespace/pod` in Kubernetes, may pass an instance's 200).
Name = Annotated[str, Field(min_length=1, max_length=4096, strict=True)]


class _DecisionIn(BaseModel):  # names and GPUs read as strictly as an instance's
    model_config = ConfigDict(extra="ignore")
    workload: Name
    action: Action
    occupancy: Occupancy
    hosts: dict[Name, HostGpus] = {}
    protected_until: Time | None = None
    backfill_for: list[Name] = []
    reason: Reason


class _ReservationIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    workload: Name
    hosts: list[Name]
    ready_at: Time


class _PlanIn(BaseModel):
    model_config = ConfigDict(extra="ignore")
    now: Time
    round: Literal["full", "event"] = "full"
    solver: str = "unknown"
    status: str = "unknown"
    objective: float = 0.0
    bound: float | None = None
    gap: float | None = None
    solve_seconds: float = 0.0
    note: str = ""
    decisions: list[_DecisionIn]
    drained_hosts: list[str] = []
    reservations: list[_ReservationIn] = []
    metrics: dict[str, Any] = Field(default_factory=dict)


def load_plan(path: str | Path) -> Plan:
    file = str(path)
    text = read_input(path, kind="a plan JSON file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(file, "", f"not valid JSON: {exc.msg}", exc.lineno) from None
    except RecursionError:
        raise InputError(file, "", "not a plan: arrays or objects nested too deep") from None
    except ValueError:  # an integer of more digits than Python converts (4,300)
        raise InputError(file, "", "not a plan: a number of more than 4,300 digits") from None
    try:
        raw = _PlanIn.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(file, field_path(tuple(first["loc"])), first["msg"]) from None
    _check_names(raw, file)
    decisions = tuple(
        Decision(
            WorkloadId(d.workload),
            d.action,
            d.occupancy,
            d.reason,
            {HostName(h): g for h, g in d.hosts.items()},
            d.protected_until,
            tuple(WorkloadId(g) for g in d.backfill_for),
        )
        for d in raw.decisions
    )
    report = SolverReport(
        raw.solver, raw.status, raw.objective, raw.bound, raw.gap, raw.solve_seconds, raw.note
    )
    metrics = {k: v for k, v in raw.metrics.items() if isinstance(v, int | float)}
    reservations = tuple(
        Reservation(WorkloadId(r.workload), tuple(HostName(h) for h in r.hosts), r.ready_at)
        for r in raw.reservations
    )
    drained = tuple(HostName(h) for h in raw.drained_hosts)
    return Plan(raw.now, report, decisions, drained, metrics, reservations, raw.round)


def _check_names(raw: _PlanIn, file: str) -> None:
    """Workload ids and host names are printable text (alloc.io.names); the note is prose,
    shown escaped."""
    names: list[tuple[tuple[object, ...], str]] = []
    for i, d in enumerate(raw.decisions):
        names.append((("decisions", i, "workload"), d.workload))
        names += [(("decisions", i, "hosts", h), h) for h in d.hosts]
        names += [(("decisions", i, "backfill_for", j), g) for j, g in enumerate(d.backfill_for)]
    names += [(("drained_hosts", i), h) for i, h in enumerate(raw.drained_hosts)]
    for i, r in enumerate(raw.reservations):
        names.append((("reservations", i, "workload"), r.workload))
        names += [(("reservations", i, "hosts", j), h) for j, h in enumerate(r.hosts)]
    for loc, name in names:
        check_name(name, file, field_path(loc))
