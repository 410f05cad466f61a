"""Which pods make one workload (a gang) and how many it needs before it may start.

Pods that share the label `alloc.dev/workload` in a namespace are one gang; else the Job that
owns them (its `job-name` label and controller reference); else a pod is a workload alone. A
gang declares its size with `alloc.dev/gang-size` on its pods; a Job's gang is its parallelism
(no more than the completions it still needs); else the gang is the pods found.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

PREFIX = "alloc.dev/"
WORKLOAD_LABEL = PREFIX + "workload"
GANG_SIZE = PREFIX + "gang-size"


def workload_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    """(namespace, workload name) of a pod: its gang's label, the Job that owns it, or
    itself. A `job-name` label alone does not join a Job's gang: the Job must own the pod (a
    pod labelled by hand would otherwise make someone's running gang look bound in part)."""
    meta = pod.get("metadata") or {}
    name = (meta.get("labels") or {}).get(WORKLOAD_LABEL) or job_of(pod) or meta.get("name", "")
    return str(meta.get("namespace", "")), str(name)


def job_of(pod: Mapping[str, Any]) -> str | None:
    """The name of the Job that owns the pod (its controller, named by its `job-name`)."""
    meta = pod.get("metadata") or {}
    job = (meta.get("labels") or {}).get("job-name")
    owned = job and any(
        r.get("kind") == "Job" and r.get("name") == job and r.get("controller")
        for r in meta.get("ownerReferences") or ()
    )
    return str(job) if owned else None


def source(pod: Mapping[str, Any]) -> str:
    """What made the pod part of its workload: the gang label, a Job (by uid), or itself."""
    meta = pod.get("metadata") or {}
    if (meta.get("labels") or {}).get(WORKLOAD_LABEL):
        return "a gang label"
    if job_of(pod):
        uid = next(
            (str(r.get("uid")) for r in meta.get("ownerReferences") or () if r.get("controller")),
            "",
        )
        return f"a Job (uid {uid[:13]})"
    return "a pod"


def job_sizes(jobs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """How many pods each Job runs at once, by (namespace, name): its parallelism, no more
    than the completions it still needs. A gang of a Job waits until that many exist."""
    out = {}
    for job in jobs:
        meta, spec = job.get("metadata") or {}, job.get("spec") or {}
        size = _whole(spec.get("parallelism"), 1)
        completions = spec.get("completions")
        if completions is not None:
            done = _whole((job.get("status") or {}).get("succeeded"), 0)
            size = min(size, max(0, _whole(completions, 1) - done))
        out[(str(meta.get("namespace", "")), str(meta.get("name", "")))] = size
    return out


def missing_pods(
    key: tuple[str, str],
    members: list[Mapping[str, Any]],
    jobs: Mapping[tuple[str, str], int],
    present: int,
    finished: int = 0,
) -> str:
    """Why a gang waits for pods not yet submitted ("" if it does not): its pods' declared
    `alloc.dev/gang-size` (pods of it that succeeded count: the rest runs without them),
    else its Job's size (the Job's own count of successes says how many are still to run)."""
    declared = {str((p["metadata"].get("annotations") or {}).get(GANG_SIZE, "")) for p in members}
    declared.discard("")
    if len(declared) > 1:
        return f"its pods declare different {GANG_SIZE} ({', '.join(sorted(declared))[:80]})"
    if declared:
        text = declared.pop()
        size = _whole(text, 0) if len(text) <= 6 else 0
        if size <= 0:
            return f"{GANG_SIZE}: expected a whole number of pods, got {text[:40]!r}"
        present += finished
    else:
        job = job_of(members[0])
        size = jobs.get((key[0], job), present) if job else present
    if present < size:
        return f"a gang of {size} pods, {present} submitted so far: it waits for the rest"
    if present > size:
        return f"{present} pods for a gang of {size}"
    return ""


def _whole(value: object, default: int) -> int:
    try:
        return int(str(value)) if value is not None else default
    except ValueError:
        return default
