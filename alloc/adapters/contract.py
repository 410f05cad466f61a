"""The contract fields a job declares to a cluster manager, whatever the manager: a minimum
runtime (required for allocated work), whether it resumes, its priority inside its budget and
its topology. Each adapter reads them from where its cluster keeps them (a Slurm job's comment,
a pod's annotations) as `key -> text` and hands them here: one set of rules and messages.

A job that declares nothing, or declares wrongly, runs as unallocated work (minimum runtime 0:
free and preemptible); the reason is kept so that `alloc status` can say why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from alloc.domain import Topology
from alloc.io.durations import format_duration, parse_duration

KEYS = ("min_runtime", "resumable", "priority", "topology")
_TRUE = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


@dataclass(frozen=True, slots=True)
class JobContract:
    min_runtime_s: float = 0.0
    resumable: bool = True
    priority: int = 0
    topology: Topology | None = None  # None: the cluster's default for its size
    problem: str = ""  # why the declaration was not used ("" when it was, or there is none)


def contract_of(
    fields: Mapping[str, str], max_min_runtime_s: float, names: Mapping[str, str] | None = None
) -> JobContract:
    """The contract `fields` (KEYS -> text) declare; unallocated, with the reason, when they
    declare it wrongly (a minimum runtime above the policy's maximum included). `names`: how
    the cluster spells each key, for the messages (default: the key itself)."""
    name = {k: (names or {}).get(k, k) for k in KEYS}
    try:
        contract = _contract(fields, name)
    except ValueError as e:
        return JobContract(problem=str(e))
    if contract.min_runtime_s > max_min_runtime_s:
        return JobContract(
            problem=f"{name['min_runtime']} {fields['min_runtime'][:20]} is above the policy's "
            f"maximum ({format_duration(max_min_runtime_s)})"
        )
    return contract


def _contract(fields: Mapping[str, str], name: Mapping[str, str]) -> JobContract:
    unknown = sorted(set(fields) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} ({', '.join(name[k] for k in KEYS)})")
    if "min_runtime" not in fields:
        raise ValueError(f"{name['min_runtime']} is missing")
    resumable = _TRUE.get(fields.get("resumable", "1").lower())
    if resumable is None:
        raise ValueError(f"{name['resumable']}: expected 1 or 0, got {fields['resumable'][:20]!r}")
    try:
        priority = int(fields.get("priority", "0"))
    except ValueError:
        got = fields["priority"][:20]
        raise ValueError(f"{name['priority']}: expected an integer, got {got!r}") from None
    topology = fields.get("topology")
    if topology is not None and topology not in ("block", "any"):
        raise ValueError(f"{name['topology']}: expected block or any, got {topology[:20]!r}")
    try:
        min_runtime_s = parse_duration(fields["min_runtime"])
    except ValueError as e:
        raise ValueError(f"{name['min_runtime']}: {e}") from None
    return JobContract(
        min_runtime_s=min_runtime_s,
        resumable=resumable,
        priority=priority,
        topology=Topology(topology) if topology else None,
    )
