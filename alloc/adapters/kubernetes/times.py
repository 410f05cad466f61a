"""When a pod was bound, ended and created, as the API's JSON says (alloc.adapters.kubernetes.read).
Every time is read defensively: pods are user input, and only the API server's own status
fields are believed over a user's annotation."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

STARTED = "alloc.dev/started"  # written by `apply` when it binds a pod (ISO 8601, UTC)


def started_at(pod: Mapping[str, Any], now: datetime) -> datetime:
    """When the pod was bound: the `PodScheduled` condition the API server sets on binding
    (pod status, which users do not write), else the kubelet's start time, else
    `alloc.dev/started` if it is not in the future (an annotation is user input: a start that
    stays ahead of every read would protect work forever), else its creation (a pod created
    bound, with `nodeName`); never before the pod was created nor after `now`."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    scheduled = [
        read_time(c.get("lastTransitionTime"))
        for c in status.get("conditions") or ()
        if c.get("type") == "PodScheduled" and c.get("status") == "True"
    ]
    declared = read_time((meta.get("annotations") or {}).get(STARTED))
    created = read_time(meta.get("creationTimestamp"))
    found = (
        next((t for t in scheduled if t is not None), None)
        or read_time(status.get("startTime"))
        or (declared if declared is not None and declared <= now else None)
        or created
        or now
    )
    if created is not None and found < created:
        found = created
    return min(found, now)


def ended_at(pod: Mapping[str, Any]) -> datetime:
    """When a pod ended: its containers' last finish, else its last condition change."""
    status = pod.get("status") or {}
    times = [
        read_time(((c.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        for c in status.get("containerStatuses") or ()
    ]
    times += [read_time(c.get("lastTransitionTime")) for c in status.get("conditions") or ()]
    known = [t for t in times if t is not None]
    return max(known) if known else started_at(pod, datetime.now(UTC))


def read_time(value: object) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
