"""The executor protocol: `snapshot() -> Snapshot` and `apply(plan) -> ApplyReport`.

The simulator, the controller and any cluster manager adapter implement it; the round function
never sees which one it talks to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from alloc.domain import Action, Plan, Snapshot, WorkloadId


@dataclass(frozen=True, slots=True)
class ActionResult:
    workload: WorkloadId
    action: Action
    ok: bool
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ApplyReport:
    results: tuple[ActionResult, ...]

    @property
    def failed(self) -> tuple[ActionResult, ...]:
        return tuple(r for r in self.results if not r.ok)


class Executor(Protocol):
    def snapshot(self) -> Snapshot: ...

    def apply(self, plan: Plan) -> ApplyReport: ...
