"""A plan as the requests that carry it out on Kubernetes, to review before anything acts.

The executor itself decides them: `plan_steps` runs `KubernetesExecutor.apply` against a
`RecordingApi`, which reads the cluster (the live API, or a file of `kubectl get nodes,pods,
jobs,configmaps,poddisruptionbudgets -A -o json`) and writes nothing, recording each
request instead (a Step, alloc.adapters.kubernetes.steps). So the export is, request for
request, what the executor would send now; `apply_steps` sends them later, in order,
stopping at the first refusal (an eviction a disruption budget refuses must not be followed
by the deletion after it).

Written out as a YAML stream (one document per request: what, method, path, body; anything
but ASCII escaped) and as a bash script of `kubectl` calls in which every name and body is
quoted (alloc.adapters.shell): names, labels and annotations with quotes, newlines or `$( )`
stay data.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from alloc.adapters.base import ApplyReport, ExecutorFault
from alloc.adapters.kubernetes.api import KubeApi, KubeError
from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.read import KubeSite
from alloc.adapters.kubernetes.steps import Step
from alloc.adapters.shell import comment, quote
from alloc.domain import BudgetTree, Plan, Policy
from alloc.io.limits import read_input


class ClusterFile:
    """The cluster as `kubectl get nodes,pods,jobs,configmaps,poddisruptionbudgets -A -o json`
    printed it (a List of items of those kinds; JSON or YAML). Without its disruption budgets,
    a gang's eviction is checked pod by pod only."""

    def __init__(self, path: Path) -> None:
        self.path = path
        text = read_input(path, kind="file of kubectl get -o json")  # InputError: named once
        try:
            try:  # kubectl's JSON (YAML refuses the control characters Go prints raw)
                data = json.loads(text)
            except ValueError:
                loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when there
                data = yaml.load(text, Loader=loader)
        except yaml.YAMLError as e:
            raise ValueError(f"neither JSON nor YAML: {str(e)[:200]}") from None
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise ValueError("expected a List of objects (kubectl get ... -o json)")
        self.by_kind: dict[str, list[dict[str, Any]]] = {}
        for item in items:
            self.by_kind.setdefault(str(item.get("kind")), []).append(item)

    def nodes(self) -> list[dict[str, Any]]:
        return list(self.by_kind.get("Node", ()))

    def pods(self, scheduler_name: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            p
            for p in self._in(self.by_kind.get("Pod", ()), namespaces)
            if (p.get("spec") or {}).get("schedulerName") == scheduler_name
        ]

    def bound_pods(self) -> list[dict[str, Any]]:
        return [
            p
            for p in self.by_kind.get("Pod", ())
            if (p.get("spec") or {}).get("nodeName")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]

    def jobs(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return self._in(self.by_kind.get("Job", ()), namespaces)

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next(
            (
                p
                for p in self.by_kind.get("Pod", ())
                if (p.get("metadata") or {}).get("namespace") == namespace
                and (p.get("metadata") or {}).get("name") == name
            ),
            None,
        )

    def disruption_budgets(self, namespace: str) -> list[dict[str, Any]]:
        return self._in(self.by_kind.get("PodDisruptionBudget", ()), (namespace,))

    def config_maps(self, selector: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        key, _, value = selector.partition("=")
        return [
            c
            for c in self._in(self.by_kind.get("ConfigMap", ()), namespaces)
            if ((c.get("metadata") or {}).get("labels") or {}).get(key) == value
        ]

    @staticmethod
    def _in(items: Iterable[dict[str, Any]], namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return [
            i
            for i in items
            if not namespaces or (i.get("metadata") or {}).get("namespace") in namespaces
        ]


class RecordingApi(KubeApi):
    """Reads from `source`, records every change instead of sending it."""

    def __init__(self, source: KubeApi | ClusterFile) -> None:  # no connection of its own
        self.source = source
        self.steps: list[Step] = []

    def nodes(self) -> list[dict[str, Any]]:
        return self.source.nodes()

    def pods(self, scheduler_name: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return self.source.pods(scheduler_name, namespaces)

    def jobs(self, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return self.source.jobs(namespaces)

    def bound_pods(self) -> list[dict[str, Any]]:
        return self.source.bound_pods()

    def pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.source.pod(namespace, name)

    def disruption_budgets(self, namespace: str) -> list[dict[str, Any]]:
        return self.source.disruption_budgets(namespace)

    def config_maps(self, selector: str, namespaces: tuple[str, ...]) -> list[dict[str, Any]]:
        return self.source.config_maps(selector, namespaces)

    def send(self, step: Step) -> None:
        self.steps.append(step)

    def take_faults(self) -> tuple[ExecutorFault, ...]:
        """The failed attempts of the live API's reads (a file has none)."""
        return self.source.take_faults() if isinstance(self.source, KubeApi) else ()


def plan_steps(
    plan: Plan,
    site: KubeSite,
    budgets: BudgetTree,
    policy: Policy,
    source: KubeApi | ClusterFile,
    cluster_name: str = "kubernetes",
) -> tuple[list[Step], ApplyReport]:
    """The requests the executor would send for `plan` on the cluster `source` shows, and its
    report (actions it would refuse, and why, are there with ok False)."""
    api = RecordingApi(source)
    report = KubernetesExecutor(site, budgets, api, policy, cluster_name).apply(plan)
    return api.steps, report


def apply_steps(steps: Sequence[Step], api: KubeApi) -> tuple[int, str]:
    """Send the steps in order; (how many were sent, "" or the first refusal, which stops the
    rest)."""
    for done, step in enumerate(steps):
        try:
            api.send(step)
        except KubeError as e:
            return done, str(e)
    return len(steps), ""


def render_yaml(steps: Sequence[Step], header: str) -> str:
    docs = []
    for i, step in enumerate(steps, 1):
        doc: dict[str, Any] = {"what": step.what, "method": step.method, "path": step.url}
        if step.merge_patch:
            doc["patchType"] = "merge"
        if step.body is not None:
            doc["body"] = _plain(step.body)
        text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=False, width=100)
        docs.append(f"# {i}/{len(steps)}: {comment(step.what)}\n{text}")
    return _comments(header) + "---\n" + "---\n".join(docs) if docs else _comments(header)


_SCRIPT_HEAD = r"""#!/usr/bin/env bash
set -euo pipefail
KUBECTL=${KUBECTL:-kubectl}
post() { "$KUBECTL" create --raw "$1" -f - <<<"$2"; }
# post_or_put URL BODY PUT_URL: create, or replace what has that name already
post_or_put() {
  local out
  out=$("$KUBECTL" create --raw "$1" -f - <<<"$2" 2>&1 >/dev/null) && return 0
  [[ $out == *AlreadyExists* ]] || { printf '%s\n' "$out" >&2; return 1; }
  "$KUBECTL" replace --raw "$3" -f - <<<"$2"
}
put() { "$KUBECTL" replace --raw "$1" -f - <<<"$2"; }
delete() { "$KUBECTL" delete --raw "$1"; }
patch() { "$KUBECTL" patch "$@" --type merge; }
# step WAITS GONE_IS_DONE COMMAND...: run it; NotFound is done when GONE_IS_DONE is 1; an
# AlreadyExists (a pod still leaving) is waited out WAITS times, 0.1 s each.
step() {
  local waits=$1 gone=$2 out i
  shift 2
  for ((i = 0; i <= waits; i++)); do
    if out=$("$@" 2>&1 >/dev/null); then return 0; fi
    if [[ $gone == 1 && $out == *NotFound* ]]; then return 0; fi
    [[ $out == *AlreadyExists* ]] || break
    sleep 0.1
  done
  printf '%s\n' "$out" >&2
  return 1
}
"""


def render_script(steps: Sequence[Step], header: str) -> str:
    """A bash script of kubectl calls (KUBECTL and KUBECONFIG from the environment)."""
    lines = [_SCRIPT_HEAD.rstrip("\n"), _comments(header).rstrip("\n")]
    for i, step in enumerate(steps, 1):
        lines.append(f"# {i}/{len(steps)}: {comment(step.what)}")
        lines.append(f"echo {quote(f'{i}/{len(steps)}: {comment(step.what)}')}")
        lines.append(_command(step))
    lines.append(f"echo {quote(f'done: {len(steps)} requests')}")
    return "\n".join(lines) + "\n"


def _command(step: Step) -> str:
    q = quote
    gone = "1" if 404 in step.done_if else "0"
    head = f"step {step.conflict_waits} {gone}"
    body = q(json.dumps(_plain(step.body), ensure_ascii=False)) if step.body is not None else ""
    if step.method == "POST" and step.replace_at:
        return f"{head} post_or_put {q(step.url)} {body} {q(step.replace_at)}"
    if step.method == "POST":
        return f"{head} post {q(step.url)} {body}"
    if step.method == "PUT":
        return f"{head} put {q(step.url)} {body}"
    if step.method == "DELETE":
        return f"{head} delete {q(step.url)}"
    resource, namespace, name = step.target
    where = f" -n {q(namespace)}" if namespace else ""
    # resource/name: one argument, never read as a flag (a name starting with "-")
    return f"{head} patch {q(f'{resource}/{name}')}{where} -p {body}"


def _plain(body: Mapping[str, Any] | None) -> Any:
    return json.loads(json.dumps(body))


def _comments(text: str) -> str:
    return "".join(f"# {comment(line, None)}\n" for line in text.splitlines())
