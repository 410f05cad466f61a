"""A trace: the submissions a simulation replays (SPEC.md, "Trace")."""

from __future__ import annotations

from dataclasses import dataclass

from alloc.domain.ids import BudgetPath, WorkloadId
from alloc.domain.workload import Topology


@dataclass(frozen=True, slots=True)
class TraceJob:
    id: WorkloadId
    budget: BudgetPath | None  # None = unfunded
    gpus: int
    submitted_s: float  # seconds after the start of the simulation
    runtime_s: float  # work needed on an uninterrupted run
    min_runtime_s: float
    resumable: bool = True
    priority: int = 0
    topology: Topology | None = None  # None: block if larger than one host, else any
    util: float | None = None  # GPU utilisation 0..1 over its life, when the trace has it
    kind: str | None = None  # free-form class, e.g. debug / train
    gpu_type: str | None = None  # None: any type (a lab's workload may name one)
