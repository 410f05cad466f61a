"""Putting a stopped pod back in the queue, so that no crash can lose it.

A pod a controller owns (a Job's) is recreated by its controller. A bare pod has no one else:
`alloc` recreates it pending, with the same spec, labels and annotations, its start time
dropped and its preemptions counted (`alloc.dev/preemptions`). Deleting it and creating its
copy are two calls, and a controller killed between them would lose the pod; so the copy is
first written to the API server (a ConfigMap `alloc-requeue-...` in the pod's namespace,
labelled `alloc.dev/requeue`), and removed once the copy is created. Every read first finishes
what such a note says (`recover`): the pod gone, its copy is created; the pod still there as
it was (the stop never happened), the note is dropped; the pod on its way out (evicted, no
kubelet to finish), it is deleted and its copy created.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from alloc.adapters.kubernetes.api import KubeApi, KubeError
from alloc.adapters.kubernetes.read import PREEMPTIONS
from alloc.adapters.kubernetes.times import STARTED

NOTE_LABEL = "alloc.dev/requeue"
_DROPPED_META = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "selfLink",
    "generateName",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
)


def controlled(pod: Mapping[str, Any]) -> bool:
    refs = (pod.get("metadata") or {}).get("ownerReferences") or ()
    return any(r.get("controller") for r in refs)


def pending_copy(pod: Mapping[str, Any]) -> dict[str, Any]:
    """The pod as it was submitted, to queue again: no node, no status, no server fields; its
    start time dropped and its preemptions counted."""
    meta = {k: v for k, v in (pod.get("metadata") or {}).items() if k not in _DROPPED_META}
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(STARTED, None)
    count = str(annotations.get(PREEMPTIONS, "0"))
    known = count.isascii() and count.isdecimal() and len(count) <= 9  # user input: "²", 10^5000
    annotations[PREEMPTIONS] = str((int(count) if known else 0) + 1)
    meta["annotations"] = annotations
    spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _as_read(raw: Mapping[str, Any] | None, as_read: bool) -> tuple[str, str]:
    """The preconditions of an eviction: the pod's uid and, `as_read`, its version as read."""
    meta = (raw or {}).get("metadata") or {}
    return str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "") if as_read else ""


def note_name(pod_name: str) -> str:
    return "alloc-requeue-" + hashlib.sha256(pod_name.encode()).hexdigest()[:24]


class Requeue:
    """Stop pods and queue them again, through notes a restarted controller can finish."""

    def __init__(self, api: KubeApi, namespaces: tuple[str, ...], scheduler_name: str) -> None:
        self.api = api
        self.namespaces = namespaces
        self.scheduler_name = scheduler_name

    def stop(
        self, namespace: str, name: str, raw: Mapping[str, Any] | None, as_read: bool = True
    ) -> None:
        """Evict the pod (a disruption budget's refusal raises KubeError 429), after writing
        its copy down if it is bare. Only the pod `raw` is (its uid) and, `as_read`, only as
        it was read: a pod that changed since (it succeeded meanwhile) is not stopped, 409,
        and never run twice."""
        bare = raw is not None and not controlled(raw)
        if raw is not None and bare:
            self._note(namespace, name, raw)
        uid, version = _as_read(raw, as_read)
        try:
            self.api.evict(namespace, name, uid, version)
        except KubeError as e:
            if 400 <= e.status < 500 and self._leaving(namespace, name, uid):
                return  # a retry after a lost answer was refused: the first one went through
            if bare and 400 <= e.status < 500:  # refused, so not stopped: nothing to finish
                self.api.delete_config_map(namespace, note_name(name))
            raise  # no answer: it may have happened; the next read's recover decides

    def may_stop(
        self, namespace: str, name: str, raw: Mapping[str, Any] | None, as_read: bool = True
    ) -> None:
        """Ask, stopping nothing, whether `stop` would be refused (a dry-run eviction with the
        same preconditions): KubeError if so."""
        uid, version = _as_read(raw, as_read)
        self.api.evict(namespace, name, uid, version, dry_run=True)

    def _leaving(self, namespace: str, name: str, uid: str) -> bool:
        """The pod of `uid` is gone or on its way out."""
        found = self.api.pod(namespace, name)
        meta = (found or {}).get("metadata") or {}
        return found is None or str(meta.get("uid")) != uid or bool(meta.get("deletionTimestamp"))

    def again(self, namespace: str, name: str, raw: Mapping[str, Any] | None) -> None:
        """After `stop`: remove the pod at once (an evicted pod whose node runs no kubelet
        would stay Terminating) and, if bare, create its copy and drop the note."""
        self.api.delete(namespace, name)
        if raw is None or controlled(raw):
            return
        self._create(namespace, pending_copy(raw))
        self.api.delete_config_map(namespace, note_name(name))

    def recover(self, pods: Mapping[tuple[str, str], Mapping[str, Any]]) -> int:
        """Finish every note left by a controller that stopped half-way; the pods as just read
        by (namespace, name). How many copies were created."""
        created = 0
        for found in self.api.config_maps(NOTE_LABEL + "=true", self.namespaces):
            namespace = str(found["metadata"]["namespace"])
            data = found.get("data") or {}
            try:
                copy = json.loads(data["pod"])
                name, uid = str(copy["metadata"]["name"]), str(data["uid"])
                ours = (
                    found["metadata"]["name"] == note_name(name)
                    and copy["metadata"].get("namespace") == namespace
                    and copy["spec"].get("schedulerName") == self.scheduler_name
                )
            except (KeyError, TypeError, ValueError, AttributeError):
                ours = False
            if not ours:  # not a note alloc wrote: never a pod of it (and left alone)
                continue
            # only ever a pending pod of its own: never bound, never owned by anything
            copy["spec"].pop("nodeName", None)
            copy["metadata"].pop("ownerReferences", None)
            live = pods.get((namespace, name))
            live_meta = (live or {}).get("metadata") or {}
            if live is not None and (
                str(live_meta.get("uid")) != uid or not live_meta.get("deletionTimestamp")
            ):
                # recreated already, or never stopped: the plan decides again
                self.api.delete_config_map(namespace, note_name(name))
                continue
            try:
                if live is not None:
                    self.api.delete(namespace, name)
                # the name may be another pod's now (another scheduler's): no waiting
                self._create(namespace, copy, waits=0 if live is None else 50)
            except KubeError:
                continue  # the note stays: the next read tries again
            self.api.delete_config_map(namespace, note_name(name))
            created += 1
        return created

    def _note(self, namespace: str, name: str, raw: Mapping[str, Any]) -> None:
        uid = str((raw.get("metadata") or {}).get("uid") or "")
        body = {
            "metadata": {"name": note_name(name), "labels": {NOTE_LABEL: "true"}},
            "data": {"pod": json.dumps(pending_copy(raw)), "uid": uid},
        }
        self.api.put_config_map(namespace, body)

    def _create(self, namespace: str, body: dict[str, Any], waits: int = 50) -> None:
        """A conflict (the old pod still leaving) is waited out `waits` times, 0.1 s each."""
        self.api.create(namespace, body, waits)
