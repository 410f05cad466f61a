"""What a pod asks of its node beyond GPUs, checked against the nodes `alloc` places on.

`alloc` places by GPU type, block and rack (SPEC): it cannot honour a pod's wish for some nodes
of its type and not others. So a pod's node selector and required node affinity are evaluated
against the GPU nodes of its type: a constraint every such node meets (`kubernetes.io/os:
linux`, say) is no constraint and the pod is placed as usual; one that only some nodes meet is
refused, with the reason for `alloc status` (binding it anywhere the plan says could put it on
a node its kubelet would refuse). Taints need no check: `alloc` places only on nodes it reads as
`ready`, which carry no `NoSchedule` or `NoExecute` taint (alloc.adapters.kubernetes.read).
Preferred affinities are preferences: ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Labels = Mapping[str, str]


def unmet(
    pod: Mapping[str, Any], nodes: Mapping[str, Labels], type_label: str, gpu_type: str | None
) -> str:
    """Why the pod cannot be placed by GPU type alone ("" when it can): its selector or
    required affinity matches only some of the nodes of its type (`nodes`: every GPU node's
    labels by name)."""
    spec = pod.get("spec") or {}
    selector = {k: v for k, v in (spec.get("nodeSelector") or {}).items() if k != type_label}
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = required.get("nodeSelectorTerms") or ()
    if not selector and not terms:
        return ""
    candidates = {
        name: labels
        for name, labels in nodes.items()
        if gpu_type is None or labels.get(type_label) == gpu_type
    }
    fits = [
        name
        for name, labels in candidates.items()
        if all(labels.get(k) == v for k, v in selector.items())
        and (not terms or any(_term(t, labels) for t in terms))
    ]
    if len(fits) == len(candidates):
        return ""
    what = " and ".join(
        part
        for part in (
            f"nodeSelector {_short(selector)}" if selector else "",
            "a required node affinity" if terms else "",
        )
        if part
    )
    return (
        f"its {what} matches {len(fits)} of the {len(candidates)} nodes of its GPU type: "
        "alloc places by GPU type, block and rack only (remove the constraint, or give the "
        "nodes it wants a GPU type of their own)"
    )


def selects(selector: Mapping[str, Any] | None, labels: Labels) -> bool:
    """A label selector (matchLabels and matchExpressions) picks these labels; an empty one
    picks nothing (a policy/v1beta1 disruption budget's rule)."""
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    wanted = selector.get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in wanted.items()) and all(
        _expression(e, labels) for e in selector.get("matchExpressions") or ()
    )


def _term(term: Mapping[str, Any], labels: Labels) -> bool:
    """A node selector term: all its expressions hold (fields are not labels: a term with
    matchFields is not met)."""
    if term.get("matchFields"):
        return False
    expressions = term.get("matchExpressions") or ()
    return bool(expressions) and all(_expression(e, labels) for e in expressions)


def _expression(e: Mapping[str, Any], labels: Labels) -> bool:
    key, op = str(e.get("key", "")), e.get("operator")
    values = [str(v) for v in e.get("values") or ()]
    has, value = key in labels, labels.get(key)
    if op == "In":
        return has and value in values
    if op == "NotIn":
        return not has or value not in values
    if op == "Exists":
        return has
    if op == "DoesNotExist":
        return not has
    if op in ("Gt", "Lt"):
        try:
            mine, theirs = int(str(value)), int(values[0])
        except (ValueError, IndexError):
            return False
        return mine > theirs if op == "Gt" else mine < theirs
    return False


def _short(selector: Labels) -> str:
    text = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    return repr(text if len(text) <= 80 else text[:77] + "...")
