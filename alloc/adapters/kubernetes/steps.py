"""Every change `alloc` makes to a Kubernetes cluster, as one API request: a `Step` (method,
path, body). The executor sends them (alloc.adapters.kubernetes.api.KubeApi.send) and `alloc
export` writes them down (alloc.adapters.kubernetes.export): the same requests either way,
so an exported plan applied later does what the executor would have done.

Bodies are the API's own JSON (Binding v1, Eviction policy/v1beta1 for a 1.20 server, Pod v1,
ConfigMap v1, merge patches of Pods and Nodes); tests validate them against the server's
OpenAPI schema (tests/data/k8s-1.20-openapi.json).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote


@dataclass(frozen=True, slots=True)
class Step:
    what: str  # for people: "bind ns/pod to node"
    method: str  # POST | PATCH | PUT | DELETE
    path: str  # the API path, each name quoted
    body: Mapping[str, Any] | None = None
    query: tuple[tuple[str, str], ...] = ()
    merge_patch: bool = False  # PATCH bodies are JSON merge patches
    done_if: tuple[int, ...] = ()  # answers that mean it is done already (404 on a delete)
    conflict_waits: int = 0  # 409 answers waited out (0.1 s each): a pod still leaving
    target: tuple[str, str, str] = ("", "", "")  # a patch's (resource, namespace, name)
    replace_at: str = ""  # a create that, when the name exists, replaces it there (PUT)

    @property
    def call(self) -> str:
        """The request, shortly, naming no pod or node ("bind", "evict", "create pod"): a
        fault's `command`."""
        return call_name(self.method, self.path)

    @property
    def url(self) -> str:
        """The path with its query, as `kubectl ... --raw` takes it."""
        if not self.query:
            return self.path
        return self.path + "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in self.query)


_ONE = {
    "pods": "pod",
    "nodes": "node",
    "configmaps": "config map",
    "jobs": "job",
    "poddisruptionbudgets": "disruption budget",
    "namespaces": "namespace",
}
_MANY = {"configmaps": "config maps", "poddisruptionbudgets": "disruption budgets"}
_SUB = {"binding": "bind", "eviction": "evict"}
_VERB = {"GET": "get", "POST": "create", "PUT": "replace", "PATCH": "patch", "DELETE": "delete"}


def call_name(method: str, path: str) -> str:
    """A request by its verb and kind of object, without names: "list pods", "bind",
    "evict", "create pod", "patch node", "delete config map"."""
    parts = [p for p in path.split("?")[0].split("/") if p]
    parts = parts[2:] if parts[:1] == ["api"] else parts[3:]  # /api/v1, /apis/GROUP/VERSION
    if len(parts) >= 3 and parts[0] == "namespaces":
        parts = parts[2:]
    if not parts:
        return f"{method.lower()} {path}"[:60]
    resource, verb = parts[0], _VERB.get(method.upper(), method.lower())
    if len(parts) >= 3:
        return _SUB.get(parts[2]) or f"{verb} {_ONE.get(resource, resource)} {parts[2]}"
    if len(parts) == 1 and verb == "get":
        return f"list {_MANY.get(resource, resource)}"
    return f"{verb} {_ONE.get(resource, resource)}"


def _seg(name: str) -> str:
    return quote(name, safe="")


def _pod_path(namespace: str, pod: str) -> str:
    return f"/api/v1/namespaces/{_seg(namespace)}/pods/{_seg(pod)}"


def bind(namespace: str, pod: str, node: str) -> Step:
    body = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    return Step(
        f"bind {namespace}/{pod} to {node}", "POST", _pod_path(namespace, pod) + "/binding", body
    )


def annotate(namespace: str, pod: str, annotations: Mapping[str, str | None]) -> Step:
    body = {"metadata": {"annotations": dict(annotations)}}
    return Step(
        f"annotate {namespace}/{pod}",
        "PATCH",
        _pod_path(namespace, pod),
        body,
        merge_patch=True,
        target=("pod", namespace, pod),
    )


def evict(
    namespace: str, pod: str, uid: str = "", resource_version: str = "", dry_run: bool = False
) -> Step:
    """An Eviction: a disruption budget that forbids it answers 429 (never retried). Gone
    already (404): done. With `uid` (and `resource_version`), only that pod as it was read:
    one that changed since (it ended, or was replaced) answers 409. `dry_run`: the same
    answer, nothing evicted (a gang is evicted only if every pod of it may be)."""
    options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0}
    if dry_run:
        options["dryRun"] = ["All"]
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
    if preconditions:
        options["preconditions"] = preconditions
    body = {
        "apiVersion": "policy/v1beta1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": namespace},
        "deleteOptions": options,
    }
    path = _pod_path(namespace, pod) + "/eviction"
    what = f"evict {namespace}/{pod}" + (" (dry run)" if dry_run else "")
    return Step(what, "POST", path, body, done_if=(404,))


def delete_pod(namespace: str, pod: str) -> Step:
    """At once (grace 0): a pod whose node runs no kubelet, or that was evicted, would
    otherwise stay Terminating. Gone already: done."""
    return Step(
        f"delete {namespace}/{pod}",
        "DELETE",
        _pod_path(namespace, pod),
        query=(("gracePeriodSeconds", "0"),),
        done_if=(404,),
    )


def create_pod(namespace: str, pod: Mapping[str, Any]) -> Step:
    """Its old self may take a moment to leave: a conflict is waited out."""
    name = str((pod.get("metadata") or {}).get("name"))
    path = f"/api/v1/namespaces/{_seg(namespace)}/pods"
    return Step(f"create {namespace}/{name}", "POST", path, pod, conflict_waits=50)


def patch_node(name: str, patch: Mapping[str, Any]) -> Step:
    return Step(
        f"patch node {name}",
        "PATCH",
        f"/api/v1/nodes/{_seg(name)}",
        patch,
        merge_patch=True,
        target=("node", "", name),
    )


def put_config_map(namespace: str, body: Mapping[str, Any]) -> Step:
    """Create the ConfigMap, or replace the one of that name."""
    name = str(body["metadata"]["name"])
    path = f"/api/v1/namespaces/{_seg(namespace)}/configmaps"
    return Step(
        f"create config map {namespace}/{name}",
        "POST",
        path,
        {"apiVersion": "v1", "kind": "ConfigMap", **body},
        replace_at=f"{path}/{_seg(name)}",
    )


def delete_config_map(namespace: str, name: str) -> Step:
    path = f"/api/v1/namespaces/{_seg(namespace)}/configmaps/{_seg(name)}"
    return Step(f"delete config map {namespace}/{name}", "DELETE", path, done_if=(404,))
