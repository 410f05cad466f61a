"""The calls the Kubernetes executor makes, through the official client (`kubernetes`, pinned to
the server's minor version), each with a timeout and retried with backoff when the server or the
connection fails (never when it answered no: a refused eviction is an answer). Objects come back
as the API's JSON (dicts), which alloc.adapters.kubernetes.read reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
RETRIED = {500, 502, 503, 504}  # and connection errors (no status)


class KubeError(RuntimeError):
    """A call that failed: `status` is the HTTP status (0: no answer), `message` what the
    server said, shortened."""

    def __init__(self, what: str, status: int, message: str) -> None:
        super().__init__(f"{what}: {status or 'no answer'} {message}".strip())
        self.status = status
        self.message = message


@dataclass(frozen=True, slots=True)
class KubeConnection:
    kubeconfig: str | None = None  # None: in-cluster config, else ~/.kube/config
    context: str | None = None
    timeout_s: float = 10.0
    attempts: int = 3


class KubeApi:
    def __init__(self, connection: KubeConnection) -> None:
        from kubernetes import client, config

        self.connection = connection
        if connection.kubeconfig is None:
            try:
                config.load_incluster_config()
                api_client = client.ApiClient()
            except config.ConfigException:
                api_client = config.new_client_from_config(context=connection.context)
        else:
            api_client = config.new_client_from_config(
                config_file=connection.kubeconfig, context=connection.context
            )
        self.client = api_client
        self.core = client.CoreV1Api(api_client)
        self.batch = client.BatchV1Api(api_client)
        self.models = client

    # ------------------------------------------------------------------ reading
    def nodes(self) -> list[dict[str, Any]]:
        answer = self._call("list nodes", lambda t: self.core.list_node(_request_timeout=t))
        return self._items(answer)

    def pods(self, scheduler_name: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        selector = f"spec.schedulerName={scheduler_name}"
        if not namespaces:
            answer = self._call(
                "list pods",
                lambda t: self.core.list_pod_for_all_namespaces(
                    field_selector=selector, _request_timeout=t
                ),
            )
            return self._items(answer)
        return [p for ns in namespaces for p in self._pods_in(ns, selector)]

    def _pods_in(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        answer = self._call(
            f"list pods in {namespace}",
            lambda t: self.core.list_namespaced_pod(
                namespace, field_selector=selector, _request_timeout=t
            ),
        )
        return self._items(answer)

    def jobs(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        """The Jobs (batch/v1) of the managed namespaces (all when none is named)."""
        if not namespaces:
            answer = self._call(
                "list jobs",
                lambda t: self.batch.list_job_for_all_namespaces(_request_timeout=t),
            )
            return self._items(answer)
        return [job for ns in namespaces for job in self._jobs_in(ns)]

    def _jobs_in(self, namespace: str) -> list[dict[str, Any]]:
        answer = self._call(
            f"list jobs in {namespace}",
            lambda t: self.batch.list_namespaced_job(namespace, _request_timeout=t),
        )
        return self._items(answer)

    def config_maps(self, selector: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        """The ConfigMaps with the label `selector`, in the namespaces (all when none)."""
        if not namespaces:
            answer = self._call(
                "list config maps",
                lambda t: self.core.list_config_map_for_all_namespaces(
                    label_selector=selector, _request_timeout=t
                ),
            )
            return self._items(answer)
        return [found for ns in namespaces for found in self._config_maps_in(ns, selector)]

    def _config_maps_in(self, namespace: str, selector: str) -> list[dict[str, Any]]:
        answer = self._call(
            f"list config maps in {namespace}",
            lambda t: self.core.list_namespaced_config_map(
                namespace, label_selector=selector, _request_timeout=t
            ),
        )
        return self._items(answer)

    # ------------------------------------------------------------------ acting
    def put_config_map(self, namespace: str, body: dict[str, Any]) -> None:
        """Create the ConfigMap, or replace the one of that name."""
        name = body["metadata"]["name"]
        try:
            self._call(
                f"create config map {namespace}/{name}",
                lambda t: self.core.create_namespaced_config_map(
                    namespace, body, _request_timeout=t
                ),
            )
        except KubeError as e:
            if e.status != 409:
                raise
            self._call(
                f"replace config map {namespace}/{name}",
                lambda t: self.core.replace_namespaced_config_map(
                    name, namespace, body, _request_timeout=t
                ),
            )

    def delete_config_map(self, namespace: str, name: str) -> None:
        try:
            self._call(
                f"delete config map {namespace}/{name}",
                lambda t: self.core.delete_namespaced_config_map(
                    name, namespace, _request_timeout=t
                ),
            )
        except KubeError as e:
            if e.status != 404:
                raise

    def bind(self, namespace: str, pod: str, node: str) -> None:
        m = self.models
        body = m.V1Binding(
            metadata=m.V1ObjectMeta(name=pod, namespace=namespace),
            target=m.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        # The client cannot read the Binding's answer back (its `target` comes back empty):
        # take the raw answer, whose status the call already checked.
        self._call(
            f"bind {namespace}/{pod} to {node}",
            lambda t: self.core.create_namespaced_pod_binding(
                pod, namespace, body, _preload_content=False, _request_timeout=t
            ),
        )

    def annotate(self, namespace: str, pod: str, annotations: dict[str, str | None]) -> None:
        patch = {"metadata": {"annotations": annotations}}
        self._call(
            f"annotate {namespace}/{pod}",
            lambda t: self.core.patch_namespaced_pod(pod, namespace, patch, _request_timeout=t),
        )

    def evict(self, namespace: str, pod: str) -> None:
        """An Eviction (policy/v1beta1 on a 1.20 server): a disruption budget that forbids it
        answers 429, raised as KubeError without retrying."""
        m = self.models
        body = m.V1beta1Eviction(
            metadata=m.V1ObjectMeta(name=pod, namespace=namespace),
            delete_options=m.V1DeleteOptions(grace_period_seconds=0),
        )
        try:
            self._call(
                f"evict {namespace}/{pod}",
                lambda t: self.core.create_namespaced_pod_eviction(
                    pod, namespace, body, _request_timeout=t
                ),
            )
        except KubeError as e:
            if e.status != 404:  # gone already (a retry after an answer that was lost): done
                raise

    def delete(self, namespace: str, pod: str) -> None:
        """Delete at once (grace 0): a pod whose node runs no kubelet, or that was evicted,
        would otherwise stay Terminating. A pod already gone is no error."""
        try:
            self._call(
                f"delete {namespace}/{pod}",
                lambda t: self.core.delete_namespaced_pod(
                    pod, namespace, grace_period_seconds=0, _request_timeout=t
                ),
            )
        except KubeError as e:
            if e.status != 404:
                raise

    def create(self, namespace: str, pod: dict[str, Any]) -> None:
        self._call(
            f"create {namespace}/{pod['metadata']['name']}",
            lambda t: self.core.create_namespaced_pod(namespace, pod, _request_timeout=t),
        )

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self._call(
            f"patch node {name}",
            lambda t: self.core.patch_node(name, patch, _request_timeout=t),
        )

    # ------------------------------------------------------------------ plumbing
    def _items(self, answer: Any) -> list[dict[str, Any]]:
        data = self.client.sanitize_for_serialization(answer)
        return list(data.get("items") or ())

    def _call(self, what: str, call: Callable[[float], T]) -> T:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        attempts = max(1, self.connection.attempts)
        for attempt in range(attempts):
            try:
                return call(self.connection.timeout_s)
            except ApiException as e:
                error = KubeError(what, int(e.status or 0), _message(e))
            except (HTTPError, OSError) as e:
                error = KubeError(what, 0, str(e)[:200])
            if error.status not in RETRIED and error.status != 0 or attempt == attempts - 1:
                raise error
            time.sleep(min(2.0, 0.2 * 2**attempt))
        raise AssertionError("unreachable")


def _message(e: Any) -> str:
    """The server's own message of a refusal, shortened."""
    import json

    try:
        body = json.loads(e.body or "{}")
    except ValueError:
        return str(e.reason or "")[:200]
    return str(body.get("message") or e.reason or "")[:200]
