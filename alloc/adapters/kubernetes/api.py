"""The calls the Kubernetes executor makes, through the official client (`kubernetes`, pinned to
the server's minor version), each with a timeout and retried with backoff when the server or the
connection fails (never when it answered no: a refused eviction is an answer). Objects come back
as the API's JSON (dicts), which alloc.adapters.kubernetes.read reads."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from alloc.adapters.kubernetes import steps
from alloc.adapters.kubernetes.steps import Step

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
    # Every change is a Step (alloc.adapters.kubernetes.steps), sent as it is: what `alloc
    # export` writes down is what the executor sends.
    def send(self, step: Step) -> None:
        """Send one request: KubeError when the server refuses it (an answer in
        `step.done_if` means done already; a conflict is waited out `step.conflict_waits`
        times), after the retries when it does not answer."""
        content = "application/merge-patch+json" if step.merge_patch else "application/json"
        for attempt in range(step.conflict_waits + 1):
            try:
                self._call(
                    step.what,
                    lambda t: self.client.call_api(
                        step.path,
                        step.method,
                        query_params=list(step.query),
                        header_params={"Content-Type": content, "Accept": "application/json"},
                        body=dict(step.body) if step.body is not None else None,
                        auth_settings=["BearerToken"],
                        _preload_content=False,
                        _request_timeout=t,
                    ),
                )
                return
            except KubeError as e:
                if e.status in step.done_if:
                    return
                if e.status != 409 or attempt == step.conflict_waits:
                    raise
                time.sleep(0.1)

    def bind(self, namespace: str, pod: str, node: str) -> None:
        self.send(steps.bind(namespace, pod, node))

    def annotate(self, namespace: str, pod: str, annotations: dict[str, str | None]) -> None:
        self.send(steps.annotate(namespace, pod, annotations))

    def evict(self, namespace: str, pod: str) -> None:
        """A disruption budget that forbids it answers 429: raised, never retried."""
        self.send(steps.evict(namespace, pod))

    def delete(self, namespace: str, pod: str) -> None:
        self.send(steps.delete_pod(namespace, pod))

    def create(self, namespace: str, pod: dict[str, Any]) -> None:
        self.send(steps.create_pod(namespace, pod))

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.send(steps.patch_node(name, patch))

    def put_config_map(self, namespace: str, body: dict[str, Any]) -> None:
        """Create the ConfigMap, or replace the one of that name."""
        try:
            self.send(steps.create_config_map(namespace, body))
        except KubeError as e:
            if e.status != 409:
                raise
            self.send(steps.replace_config_map(namespace, body))

    def delete_config_map(self, namespace: str, name: str) -> None:
        self.send(steps.delete_config_map(namespace, name))

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
