"""The calls the Kubernetes executor makes, through the official client (`kubernetes`, pinned to
the server's minor version). Objects come back as the API's JSON (dicts), which
alloc.adapters.kubernetes.read reads.

Each call has a timeout (`timeout_s` to connect, and again for each wait on the answer). A
call that gets no answer (timed out: kind timeout; the connection refused or broken: failed),
a server failure (5xx: failed) or a list answer that does not read (not JSON, cut short,
without its items: unparsable) is tried again after a backoff with jitter, at most `attempts`
times in all (alloc.adapters.retry, as Slurm's commands are); every failed attempt is kept as
an `ExecutorFault` that `take_faults()` hands on (the controller logs, counts and records
them), named by the request without names ("list pods", "bind", "evict", "create pod"). The
client's own retries (urllib3's) are off, so each attempt is one request. A refusal is an
answer, never tried again nor a fault: 404, 409, 422, a 429 (an eviction a disruption budget
forbids) raise KubeError at once, as the last failed attempt does."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import quote

from alloc.adapters.base import ClusterError, ExecutorFault, FaultKind
from alloc.adapters.kubernetes import steps
from alloc.adapters.kubernetes.steps import Step, call_name
from alloc.adapters.retry import Failed, Retrier

T = TypeVar("T")
RETRIED = frozenset({500, 502, 503, 504})  # and no answer (status 0)


class KubeError(ClusterError):
    """A call that failed: `status` is the HTTP status (0: no answer, or one that does not
    read), `message` what the server said (or what went wrong), shortened."""

    def __init__(self, what: str, status: int, message: str) -> None:
        super().__init__(f"{what}: {status} {message}" if status else f"{what}: {message}")
        self.status = status
        self.message = message


class _Unanswered(Failed):
    """An attempt without a usable answer: tried again; `status` for the KubeError of the
    last one."""

    def __init__(self, kind: FaultKind, status: int, message: str) -> None:
        super().__init__(kind, f"{status} {message}" if status else message)
        self.status, self.detail = status, message


@dataclass(frozen=True, slots=True)
class KubeConnection:
    kubeconfig: str | None = None  # None: in-cluster config, else ~/.kube/config
    context: str | None = None
    timeout_s: float = 10.0
    attempts: int = 3
    backoff_s: float = 0.5  # the first wait; doubled after each failed attempt
    max_backoff_s: float = 30.0


class KubeApi:
    def __init__(self, connection: KubeConnection) -> None:
        from kubernetes import client, config

        self.connection = connection
        settings = client.Configuration()
        if connection.kubeconfig is None:
            try:
                config.load_incluster_config(client_configuration=settings)
            except config.ConfigException:
                config.load_kube_config(context=connection.context, client_configuration=settings)
        else:
            config.load_kube_config(
                config_file=connection.kubeconfig,
                context=connection.context,
                client_configuration=settings,
            )
        settings.retries = False  # urllib3's: each attempt is one request, retried below
        api_client = client.ApiClient(settings)
        self.retry = Retrier(
            attempts=connection.attempts,
            backoff_s=connection.backoff_s,
            max_backoff_s=connection.max_backoff_s,
            log=logging.getLogger("alloc.kubernetes"),
        )
        self.client = api_client
        self.core = client.CoreV1Api(api_client)
        self.models = client

    # ------------------------------------------------------------------ reading
    # Lists come back as the API's JSON, not the client's models: building (and unbuilding)
    # a model per field of 1,000 pods costs seconds a round.
    def nodes(self) -> list[dict[str, Any]]:
        return self._list("nodes", None)

    def pods(self, scheduler_name: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        selector = ("fieldSelector", f"spec.schedulerName={scheduler_name}")
        return self._list_in("pods", namespaces, selector)

    def bound_pods(self) -> list[dict[str, Any]]:
        """Every live pod bound to a node, of any scheduler and namespace: what holds GPUs."""
        selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
        return self._list("pods", None, ("fieldSelector", selector))

    def disruption_budgets(self, namespace: str) -> list[dict[str, Any]]:
        """The PodDisruptionBudgets of a namespace (policy/v1beta1 on a 1.20 server)."""
        return self._list("poddisruptionbudgets", namespace, group="/apis/policy/v1beta1")

    def jobs(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        """The Jobs (batch/v1) of the managed namespaces (all when none is named)."""
        return self._list_in("jobs", namespaces, group="/apis/batch/v1")

    def config_maps(self, selector: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        """The ConfigMaps with the label `selector`, in the namespaces (all when none)."""
        return self._list_in("configmaps", namespaces, ("labelSelector", selector))

    def _list_in(
        self,
        resource: str,
        namespaces: tuple[str, ...],
        *query: tuple[str, str],
        group: str = "/api/v1",
    ) -> list[dict[str, Any]]:
        if not namespaces:
            return self._list(resource, None, *query, group=group)
        return [item for ns in namespaces for item in self._list(resource, ns, *query, group=group)]

    def _list(
        self,
        resource: str,
        namespace: str | None,
        *query: tuple[str, str],
        group: str = "/api/v1",
    ) -> list[dict[str, Any]]:
        path = f"{group}/{resource}"
        if namespace is not None:
            path = f"{group}/namespaces/{quote(namespace, safe='')}/{resource}"
        what = f"list {resource}" + (f" in {namespace}" if namespace is not None else "")
        return self._call(
            what,
            call_name("GET", path),
            lambda t: self.client.call_api(
                path,
                "GET",
                query_params=list(query),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _request_timeout=t,
            ),
            _items,
        )

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
                    step.call,
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
                    lambda answer: None,
                )
                return
            except KubeError as e:
                if e.status in step.done_if:
                    return
                if e.status == 409 and step.replace_at:
                    self.send(replace(step, method="PUT", path=step.replace_at, replace_at=""))
                    return
                if e.status != 409 or attempt == step.conflict_waits:
                    raise
                time.sleep(0.1)

    def bind(self, namespace: str, pod: str, node: str) -> None:
        """A conflict that is the pod bound there already (a retry after an answer that was
        lost) is done."""
        try:
            self.send(steps.bind(namespace, pod, node))
        except KubeError as e:
            if e.status != 409:
                raise
            found = self.pod(namespace, pod)
            if not found or (found.get("spec") or {}).get("nodeName") != node:
                raise

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The pod of that name now, or None."""
        found = self._list("pods", namespace, ("fieldSelector", f"metadata.name={name}"))
        return found[0] if found else None

    def annotate(self, namespace: str, pod: str, annotations: dict[str, str | None]) -> None:
        self.send(steps.annotate(namespace, pod, annotations))

    def evict(
        self,
        namespace: str,
        pod: str,
        uid: str = "",
        resource_version: str = "",
        dry_run: bool = False,
    ) -> None:
        """A disruption budget that forbids it answers 429, a pod changed since it was read
        (with `uid`, `resource_version`) 409: raised, never retried."""
        self.send(steps.evict(namespace, pod, uid, resource_version, dry_run))

    def delete(self, namespace: str, pod: str) -> None:
        self.send(steps.delete_pod(namespace, pod))

    def create(self, namespace: str, pod: dict[str, Any], conflict_waits: int = 50) -> None:
        """Create the pod. A conflict with a pod of that name still leaving is waited out
        `conflict_waits` times (0.1 s each); one with the very pod sent (not leaving, with its
        labels and annotations: a request tried again after its answer was lost) is done; any
        other is a KubeError at once (waiting would not help)."""
        step = replace(steps.create_pod(namespace, pod), conflict_waits=0)
        for attempt in range(conflict_waits + 1):
            try:
                self.send(step)
                return
            except KubeError as e:
                if e.status != 409:
                    raise
                found = self.pod(namespace, str(pod["metadata"]["name"]))
                if found is not None and _same_pod(found, pod):
                    return
                leaving = found is None or (found.get("metadata") or {}).get("deletionTimestamp")
                if not leaving or attempt == conflict_waits:
                    raise
                time.sleep(0.1)

    def patch_node(self, name: str, patch: dict[str, Any]) -> None:
        self.send(steps.patch_node(name, patch))

    def put_config_map(self, namespace: str, body: dict[str, Any]) -> None:
        """Create the ConfigMap, or replace the one of that name."""
        self.send(steps.put_config_map(namespace, body))

    def delete_config_map(self, namespace: str, name: str) -> None:
        self.send(steps.delete_config_map(namespace, name))

    # ------------------------------------------------------------------ plumbing
    def take_faults(self) -> tuple[ExecutorFault, ...]:
        """The failed attempts since the last call (alloc.adapters.retry)."""
        return self.retry.take_faults()

    def _call(
        self,
        what: str,
        command: str,
        call: Callable[[tuple[float, float]], Any],
        read: Callable[[Any], T],
    ) -> T:
        """`read` of the answer of `call` (given the timeouts), tried again when there is no
        usable answer; KubeError for a refusal, or after the last attempt (`what` names the
        call in full: the pod, the node; `command` shortly, in the faults)."""
        try:
            # 429 is an answer from an eviction (a disruption budget forbids it), and the
            # server shedding load from anything else (API priority and fairness): tried again
            retried = RETRIED if command == "evict" else RETRIED | {429}
            return self.retry.call(command, lambda: self._once(what, call, read, retried))
        except _Unanswered as failed:
            raise KubeError(what, failed.status, failed.detail) from None

    def _once(
        self,
        what: str,
        call: Callable[[tuple[float, float]], Any],
        read: Callable[[Any], T],
        retried: frozenset[int] = RETRIED,
    ) -> T:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        timeout = self.connection.timeout_s
        try:
            # (connect, read): the client ignores a single float (it takes only an int)
            answer = call((timeout, timeout))
            return read(answer[0] if isinstance(answer, tuple) else answer)
        except ApiException as e:
            status = int(e.status or 0)
            if status and status not in retried:
                raise KubeError(what, status, _message(e)) from None  # an answer: refused
            why = _message(e) or ("a server error" if status else "no answer")
            raise _Unanswered(FaultKind.FAILED, status, why) from None
        except (HTTPError, OSError) as e:
            if _timed_out(e):
                raise _Unanswered(FaultKind.TIMEOUT, 0, f"no answer within {timeout:g} s") from None
            raise _Unanswered(FaultKind.FAILED, 0, f"no answer: {_short(e)}") from None


def _items(response: Any) -> list[dict[str, Any]]:
    """The items of a list answer; an answer that does not read is a failed attempt."""
    from urllib3.exceptions import ProtocolError

    try:
        body = response.data
    except ProtocolError as e:  # the connection broke inside the answer
        raise _Unanswered(FaultKind.UNPARSABLE, 0, f"an answer cut short: {_short(e)}") from None
    try:
        data = json.loads(body)
    except ValueError as e:
        raise _Unanswered(FaultKind.UNPARSABLE, 0, f"an answer that is not JSON: {e}") from None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise _Unanswered(FaultKind.UNPARSABLE, 0, "an answer without items")
    return [item for item in items if isinstance(item, dict)]


def _timed_out(e: BaseException) -> bool:
    """A read or connect timeout (a refused connection is not one, though urllib3 makes
    NewConnectionError a ConnectTimeoutError)."""
    from urllib3.exceptions import NewConnectionError
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    if isinstance(e, NewConnectionError):
        return False
    return isinstance(e, Urllib3Timeout | TimeoutError)


def _short(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"[:200]


def _same_pod(found: dict[str, Any], sent: dict[str, Any]) -> bool:
    """`found` is the pod `sent` created (not one still leaving, nor another's of that name):
    not being deleted, for the same scheduler, with the labels and annotations sent (a copy
    alloc queues again counts one more preemption than the pod it replaces)."""
    meta, want = found.get("metadata") or {}, sent.get("metadata") or {}
    return (
        not meta.get("deletionTimestamp")
        and (found.get("spec") or {}).get("schedulerName")
        == (sent.get("spec") or {}).get("schedulerName")
        and (meta.get("labels") or {}) == (want.get("labels") or {})
        and (meta.get("annotations") or {}) == (want.get("annotations") or {})
    )


def _message(e: Any) -> str:
    """The server's own message of a refusal, shortened."""
    try:
        body = json.loads(e.body or "{}")
    except ValueError:
        return str(e.reason or "")[:200]
    if not isinstance(body, dict):
        return str(e.reason or "")[:200]
    return str(body.get("message") or e.reason or "")[:200]
