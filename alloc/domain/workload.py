"""A workload: a gang of GPUs that starts whole or not at all."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from types import MappingProxyType

from alloc.domain.ids import BudgetPath, HostName, WorkloadId


class Topology(StrEnum):
    BLOCK = "block"  # all hosts inside one network block
    ANY = "any"


@dataclass(frozen=True, slots=True)
class Workload:
    id: WorkloadId
    budget: BudgetPath | None  # None = unfunded
    gpus: int
    min_runtime_s: float
    submitted: datetime
    resumable: bool = True
    priority: int = 0
    topology: Topology = Topology.ANY
    gpu_type: str | None = None
    started: datetime | None = None
    hosts: Mapping[HostName, int] = field(default_factory=lambda: MappingProxyType({}))
    runtime_s: float | None = None  # work it still needs; known to a simulation only
    # Started as backfill on hosts reserved for these gangs (models/round.md 8.5): once past
    # its minimum runtime it holds its GPUs as over its entitlement while any of them waits.
    backfill_for: tuple[WorkloadId, ...] = ()
    # started is not None; a plain attribute (not a property): rounds read it millions of times
    running: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.hosts, MappingProxyType):
            object.__setattr__(self, "hosts", MappingProxyType(dict(self.hosts)))
        object.__setattr__(self, "running", self.started is not None)

    def running_seconds(self, now: datetime) -> float:
        return (now - self.started).total_seconds() if self.started is not None else 0.0
