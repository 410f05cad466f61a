"""Nodes handed to repair and back: a drained node is cordoned and tainted
`alloc.dev/drained=repair:NoSchedule` (annotated `alloc.dev/cordoned`) once no work of ours is
on it; when the repair system removes that taint, alloc lifts its own cordon (not on a node
labelled for retirement)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from alloc.adapters.base import HostResult
from alloc.adapters.kubernetes.api import KubeApi, KubeError
from alloc.adapters.kubernetes.read import CORDONED, DRAIN_TAINT, KubeSite
from alloc.domain import HostName

DRAIN = {"key": DRAIN_TAINT, "value": "repair", "effect": "NoSchedule"}


def drain(api: KubeApi, name: HostName, node: Mapping[str, Any] | None, busy: bool) -> HostResult:
    """Cordon and taint a node the plan drains, once no work of ours is on it."""
    if node is None:
        return HostResult(name, False, "no such node in Kubernetes")
    spec = node.get("spec") or {}
    taints = list(spec.get("taints") or ())
    if any(t.get("key") == DRAIN_TAINT for t in taints):
        return HostResult(name, True, "already marked", changed=False)
    if busy:
        return HostResult(name, True, "work still on it: marked once it has left", False)
    patch = {
        "metadata": {"annotations": {CORDONED: "true"}},
        "spec": {"unschedulable": True, "taints": [*taints, DRAIN]},
    }
    try:
        api.patch_node(name, patch)
    except KubeError as e:
        return HostResult(name, False, str(e))
    return HostResult(name, True, "cordoned and tainted for repair")


def return_repaired(
    api: KubeApi, site: KubeSite, nodes: list[dict[str, Any]], draining: set[HostName]
) -> list[HostResult]:
    """Nodes `alloc` cordoned whose drain taint the repair system removed: uncordoned."""
    out = []
    for node in nodes:
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        name = HostName(str(meta.get("name")))
        if CORDONED not in (meta.get("annotations") or {}) or name in draining:
            continue
        if any(t.get("key") == DRAIN_TAINT for t in spec.get("taints") or ()):
            continue  # still waiting for repair
        if site.retire_label in (meta.get("labels") or {}):
            continue  # to be removed, not returned
        patch = {
            "metadata": {"annotations": {CORDONED: None}},
            "spec": {"unschedulable": False},
        }
        try:
            api.patch_node(name, patch)
        except KubeError as e:
            out.append(HostResult(name, False, str(e)))
            continue
        out.append(HostResult(name, True, "repaired: uncordoned"))
    return out
