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

from alloc.adapters.contract import JobContract, contract_of

MARK = "alloc:"
MAX_COMMENT = 4096  # longer comments are not read (a job's comment is user input)
_ITEM = re.compile(r"^([a-z_]+)=(\S+)$")

__all__ = ["MARK", "JobContract", "read_contract"]


def read_contract(comment: str | None, max_min_runtime_s: float) -> JobContract:
    """The contract a job's comment declares; unallocated (with the reason) when it declares
    none or declares it wrongly (alloc.adapters.contract)."""
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
    return contract_of(fields, max_min_runtime_s)
