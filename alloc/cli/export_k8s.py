"""`alloc export PLAN.json --to kubernetes --config CONTROLLER.yaml [--cluster FILE] [-o DIR]
[--apply]`: the requests the Kubernetes executor would send for a plan now
(alloc.adapters.kubernetes.export), printed as YAML, or written to DIR/alloc-plan.yaml and
DIR/alloc-plan.sh (kubectl calls); sent with --apply."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from alloc.cli.common import MissingInput, check_writable, err, out, write_atomically
from alloc.io import InputError
from alloc.printable import shown
from alloc.readable import count, counted

if TYPE_CHECKING:
    from alloc.cli.export_cmd import ExportRequest

YAML_NAME = "alloc-plan.yaml"
SCRIPT_NAME = "alloc-plan.sh"


def export_kubernetes(request: ExportRequest) -> int:
    from alloc.adapters.kubernetes.api import KubeApi
    from alloc.adapters.kubernetes.export import (
        ClusterFile,
        apply_steps,
        plan_steps,
        render_script,
        render_yaml,
    )
    from alloc.controller.build import kubernetes_api, kubernetes_site
    from alloc.io.controller_config import load_controller_config

    if request.config is None:
        raise MissingInput(
            "--config",
            "required with --to kubernetes: the controller config of the Kubernetes cluster: "
            "a plan names workloads, "
            "the cluster their pods (add --cluster FILE to read `kubectl get nodes,pods,jobs,"
            "configmaps,poddisruptionbudgets -A -o json` output instead of the API)",
        )
    if request.cluster is not None and request.apply:
        raise InputError("--apply", "", "acts on the API of --config: leave out --cluster")
    settings = load_controller_config(request.config)
    if settings.executor != "kubernetes":
        raise InputError(
            str(request.config),
            "executor",
            f"expected kubernetes (the cluster to export for), got {settings.executor}",
        )
    site = kubernetes_site(settings)
    source: KubeApi | ClusterFile
    if request.cluster is not None:
        try:
            source = ClusterFile(request.cluster)
        except InputError:
            raise  # names the file already
        except ValueError as e:
            raise InputError(str(request.cluster), "items", str(e)) from None
        where = f"{request.cluster} (a file of the cluster)"
    else:
        source = kubernetes_api(settings)
        where = f"the API of {request.config}"
    plan = request.plan
    steps, report = plan_steps(plan, site, settings.budgets, settings.policy, source, settings.name)
    read_at = datetime.now(UTC).isoformat(timespec="seconds")
    header = [
        f"alloc export of {request.plan_file} (round of {plan.now.isoformat()}) for Kubernetes",
        f"cluster: {where}, read at {read_at}",
        f"{counted(len(steps), 'request')}, in order; the first refusal stops the rest",
    ]
    refused = [r for r in report.results if not r.ok] + [h for h in report.failed_hosts]
    header += [f"not exported: {_refusal(r)}" for r in refused]
    text = "\n".join(header)
    if request.output is not None:
        for name, body, mode in (
            (YAML_NAME, render_yaml(steps, text), 0o644),
            (SCRIPT_NAME, render_script(steps, text), 0o755),
        ):
            check_writable("--output", request.output / name)
            write_atomically(request.output / name, body, mode=mode)
    if not request.apply:
        if request.output is None:
            sys.stdout.write(render_yaml(steps, text))
        else:
            names = f"{request.output / YAML_NAME} and {SCRIPT_NAME}"
            message = f"{names}: {counted(len(steps), 'request')} (dry run: nothing was sent)"
            out.print(message, markup=False, highlight=False, soft_wrap=True)
        for r in refused:
            err.print(f"warning: {_refusal(r)}", markup=False, highlight=False, soft_wrap=True)
        return 0
    assert isinstance(source, KubeApi)
    sent, failure = apply_steps(steps, source)
    for step in steps[:sent]:
        out.print(f"ok      {shown(step.what)}", markup=False, highlight=False, soft_wrap=True)
    if failure:
        err.print(f"failed  {shown(failure)}", markup=False, highlight=False, soft_wrap=True)
        left = len(steps) - sent - 1
        err.print(f"stopped: {counted(left, 'request')} after it not sent", markup=False)
    out.print(f"{count(sent)} of {counted(len(steps), 'request')} sent", highlight=False)
    return 1 if failure or refused else 0


def _refusal(result: object) -> str:
    from alloc.adapters.shell import comment

    who = getattr(result, "workload", None) or f"host {getattr(result, 'host', '')}"
    action = getattr(getattr(result, "action", None), "value", "drain")
    return comment(f"{who}: {action}: {getattr(result, 'detail', '')}", None)
