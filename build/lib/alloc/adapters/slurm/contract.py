"""The contract fields of a Slurm job, read from its comment in one documented form:

    --comment "alloc: min_runtime=2h resumable=1 priority=3 topology=block"

`min_runtime` (a duration: 90s, 15m, 2h; required for allocated work), `resumable` (1/0,
true/false; default 1), `priority` (an integer ordering work inside the job's budget; default
0), `topology` (block | any; default: block when larger than one host). Other text may
precede the `alloc:` part (it starts at the first `alloc:`); unknown keys are errors.

A job without the `alloc:` part, or whose part does not parse, runs as unallocated work
(minimum runtime 0: free and preemptible); the reason is kept so `alloc status` can say why.
Nothing here ever reaches a shell: the comment is data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from alloc.domain import Topology
from alloc.io.durations import parse_duration

MARK = "alloc:"
MAX_COMMENT = 4096  # longer comments are not read (a job's comment is user input)
_ITEM = re.compile(r"^([a-z_]+)=(\S+)$")
_TRUE = {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}


@dataclass(frozen=True, slots=True)
class JobContract:
    min_runtime_s: float = 0.0
    resumable: bool = True
    priority: int = 0
    topology: Topology | None = None  # None: the cluster's default for its size
    problem: str = ""  # why the comment was not used ("" when it was, or when there is none)


def read_contract(comment: str | None, max_min_runtime_s: float) -> JobContract:
    """The contract a job's comment declares; unallocated (with the reason) when it declares
    none or declares it wrongly (a minimum runtime above the policy's maximum included)."""
    text = comment or ""
    if len(text) > MAX_COMMENT:
        return JobContract(problem=f"comment longer than {MAX_COMMENT} characters")
    at = text.find(MARK)
    if at < 0:
        return JobContract()
    fields: dict[str, str] = {}
    for item in text[at + len(MARK) :].split():
        m = _ITEM.match(item)
        if not m:
            return JobContract(problem=f"cannot read {item[:40]!r}: expected key=value")
        if m[1] in fields:
            return JobContract(problem=f"{m[1]} given twice")
        fields[m[1]] = m[2]
    try:
        contract = _contract(fields)
    except ValueError as e:
        return JobContract(problem=str(e))
    if contract.min_runtime_s > max_min_runtime_s:
        return JobContract(
            problem=f"min_runtime {fields['min_runtime'][:20]} is above the policy's maximum "
            f"({max_min_runtime_s / 3600:g}h)"
        )
    return contract


def _contract(fields: dict[str, str]) -> JobContract:
    unknown = sorted(set(fields) - {"min_runtime", "resumable", "priority", "topology"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (min_runtime, resumable, priority, topology)")
    if "min_runtime" not in fields:
        raise ValueError("min_runtime is missing")
    resumable = _TRUE.get(fields.get("resumable", "1").lower())
    if resumable is None:
        raise ValueError(f"resumable: expected 1 or 0, got {fields['resumable'][:20]!r}")
    try:
        priority = int(fields.get("priority", "0"))
    except ValueError:
        got = fields["priority"][:20]
        raise ValueError(f"priority: expected an integer, got {got!r}") from None
    topology = fields.get("topology")
    if topology is not None and topology not in ("block", "any"):
        raise ValueError(f"topology: expected block or any, got {topology[:20]!r}")
    try:
        min_runtime_s = parse_duration(fields["min_runtime"])
    except ValueError as e:
        raise ValueError(f"min_runtime: {e}") from None
    return JobContract(
        min_runtime_s=min_runtime_s,
        resumable=resumable,
        priority=priority,
        topology=Topology(topology) if topology else None,
    )
