"""The instance file's shape (SPEC.md, "Instance"), as pydantic models: types, ranges, defaults.

Cross-field rules (a budget path that exists, shares that fit, hosts that hold what runs on
them) are checked afterwards in `alloc.io.instance`; `alloc schema` prints this as JSON Schema.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
)

from alloc.io.durations import parse_duration, parse_time
from alloc.io.shares import parse_fraction

_DURATION_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*(\d+(\.\d+)?\s*[smhdw]\s*)+$"},
        {"type": "number", "minimum": 0},
    ],
    "description": "seconds, or a duration such as 90s, 15m, 8h, 7d, 1h30m",
}
_TIME_SCHEMA = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601 with a zone, e.g. 2026-11-30T12:00:00Z",
}
Duration = Annotated[float, BeforeValidator(parse_duration), WithJsonSchema(_DURATION_SCHEMA)]
Time = Annotated[datetime, BeforeValidator(parse_time), WithJsonSchema(_TIME_SCHEMA)]
# The exact fraction written (alloc.io.shares): siblings are summed without rounding.
Share = Annotated[
    Decimal,
    BeforeValidator(parse_fraction),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%?\s*$"},
                {"type": "number"},
            ],
            "description": "percent of the parent's share: 35% or 35",
        }
    ),
]
Name = Annotated[str, Field(min_length=1, max_length=200)]
Gpus = Annotated[int, Field(gt=0, le=1_000_000, strict=True)]
HostGpus = Annotated[int, Field(gt=0, le=4096, strict=True)]  # GPUs one host carries
HostStateName = Literal["ready", "unhealthy", "retired", "maintenance"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PolicyIn(_Strict):
    lookback: Duration = 7 * 86400.0
    max_min_runtime: Duration = 8 * 3600.0
    solver: Literal["milp", "greedy"] = "milp"
    time_limit: Duration = 10.0
    threads: Annotated[int, Field(ge=1, le=256, strict=True)] = 2
    seed: Annotated[int, Field(ge=0, strict=True)] = 0
    mip_gap: Annotated[float, Field(ge=0, le=1)] = 0.001
    backend: Literal["scip", "sat"] = "scip"
    fairshare_horizon: Duration | None = None
    checkpoint_interval: Duration = 3600.0

    @field_validator("lookback")
    @classmethod
    def _window_above_zero(cls, seconds: float) -> float:
        # Every fair-share ratio divides by the window's capacity, the ledger keeps its usage.
        if seconds <= 0:
            raise ValueError(
                "the lookback window must be above 0 (e.g. 7d): fair-share ratios divide "
                "by the GPU time it holds"
            )
        return seconds


class HostIn(_Strict):
    name: Name
    gpus: HostGpus
    gpu_type: Name = "gpu"
    block: Name | None = None
    rack: Name | None = None
    state: HostStateName = "ready"


class HostGroupIn(_Strict):
    prefix: Name
    first: Annotated[int, Field(ge=0, strict=True)] = 1
    count: Annotated[int, Field(gt=0, le=1_000_000, strict=True)]
    gpus: HostGpus
    gpu_type: Name = "gpu"
    hosts_per_block: Annotated[int, Field(gt=0, strict=True)] | None = None
    hosts_per_rack: Annotated[int, Field(gt=0, strict=True)] | None = None
    block: Name | None = None
    rack: Name | None = None
    state: HostStateName = "ready"


class ClusterIn(_Strict):
    name: Name = "cluster"
    hosts: list[HostIn] = []
    host_groups: list[HostGroupIn] = []


class BudgetIn(_Strict):
    name: Name
    share: Share | None = Field(default=None, json_schema_extra={"default": "100%"})
    owners: list[Name] = []
    children: list[BudgetIn] = []


class WorkloadIn(_Strict):
    id: Name
    budget: str | None = None
    gpus: Gpus
    min_runtime: Duration  # required: every workload declares one (0 = unallocated)
    resumable: bool = True
    priority: Annotated[int, Field(strict=True, ge=-1_000_000, le=1_000_000)] = 0
    topology: Literal["block", "any"] | None = None
    gpu_type: Name | None = None
    submitted: Time | None = None
    started: Time | None = None
    hosts: dict[Name, Gpus] | None = None
    # running as backfill on hosts reserved for these gangs (the start's `backfill_for`)
    backfill_for: list[Name] = Field(  # a factory: a default list would be copied per workload
        default_factory=list, json_schema_extra={"default": []}
    )
    runtime: Duration | None = None  # work it still needs (simulation only)


class InstanceIn(_Strict):
    now: Time
    policy: PolicyIn = PolicyIn()
    cluster: ClusterIn
    budgets: BudgetIn
    usage: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] = {}
    usage_capacity_gpu_hours: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    workloads: list[WorkloadIn] = []


def json_schema() -> dict[str, Any]:
    """The instance file's JSON Schema, generated from the models above. `alloc schema` prints
    the copy shipped beside this module (`SCHEMA_FILE`, written by `python -m alloc.io.schema`),
    so that it starts without pydantic; tests/test_cli.py checks the copy is this, to the byte."""
    schema = InstanceIn.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "alloc instance"
    return schema


class ScenarioIn(_Strict):
    """A what-if scenario: another budget tree, optionally policy overrides and usage."""

    name: Name | None = None
    budgets: BudgetIn
    policy: dict[str, Any] = {}
    usage: dict[str, Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None


def schema_text() -> str:
    """`json_schema()` as `alloc schema` prints it and as `SCHEMA_FILE` holds it."""
    return json.dumps(json_schema(), indent=1) + "\n"


if __name__ == "__main__":  # python -m alloc.io.schema: rewrite the shipped copy
    from alloc.io import SCHEMA_FILE

    SCHEMA_FILE.write_text(schema_text())
    print(f"wrote {SCHEMA_FILE}")
