"""Instance YAML -> Snapshot. All validation of user input happens here and in the readers it
uses (alloc.io.reporter, cluster_in, budgets_in), before anything runs.

Every problem raises `InputError` naming the file, the line, the field path (e.g.
`workloads[3].gpus`) and what is wrong (SPEC.md, exit code 2).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from alloc.domain import (
    BudgetPath,
    BudgetTree,
    Cluster,
    HostName,
    Policy,
    Snapshot,
    Topology,
    Workload,
    WorkloadId,
)
from alloc.io.budgets_in import (
    budget_tree,
    leaves_below,
    policy_from,
    unknown_path,
    usage_from,
)
from alloc.io.cluster_in import cluster_from
from alloc.io.durations import format_duration, format_time
from alloc.io.reporter import Reporter, first_error, read_text
from alloc.io.schema import InstanceIn, WorkloadIn
from alloc.io.yaml_source import read_yaml
from alloc.readable import count, counted


def load_instance(path: str | Path) -> Snapshot:
    return parse_instance(read_text(path), str(path))


def parse_instance(text: str, file: str = "<instance>") -> Snapshot:
    data, lines = read_yaml(text, file)
    report = Reporter(file, lines)
    if not isinstance(data, dict):
        raise report.error((), "an instance is a mapping with now, cluster, budgets, workloads")
    return snapshot_from_dict(data, report)


def snapshot_from_dict(data: dict[str, Any], report: Reporter | None = None) -> Snapshot:
    report = report or Reporter("<instance>", {})
    try:
        raw = InstanceIn.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc, report) from None
    policy = policy_from(raw.policy)
    cluster = cluster_from(raw.cluster, report)
    tree = budget_tree(raw.budgets, report)
    usage = usage_from(raw.usage, tree, report)
    workloads = _workloads(raw, policy, cluster, tree, report)
    return Snapshot(
        now=raw.now,
        policy=policy,
        cluster=cluster,
        budgets=tree,
        usage_gpu_hours=usage,
        workloads=workloads,
        usage_capacity_gpu_hours=raw.usage_capacity_gpu_hours,
    )


def _workloads(
    raw: InstanceIn, policy: Policy, cluster: Cluster, tree: BudgetTree, report: Reporter
) -> tuple[Workload, ...]:
    seen: dict[str, int] = {}
    placed: dict[HostName, int] = defaultdict(int)
    out = []
    for i, w in enumerate(raw.workloads):
        loc: tuple[object, ...] = ("workloads", i)
        if w.id in seen:
            raise report.error(
                (*loc, "id"), f"workload id {w.id!r} is used twice (also workloads[{seen[w.id]}])"
            )
        seen[w.id] = i
        out.append(_workload(w, loc, raw.now, policy, cluster, tree, placed, report))
    return tuple(out)


def _workload(
    w: WorkloadIn,
    loc: tuple[object, ...],
    now: datetime,
    policy: Policy,
    cluster: Cluster,
    tree: BudgetTree,
    placed: dict[HostName, int],
    report: Reporter,
) -> Workload:
    budget: BudgetPath | None = None
    if w.budget is not None and w.budget.strip("/"):
        budget = BudgetPath(w.budget.strip("/"))
        if budget not in tree:
            raise report.error((*loc, "budget"), unknown_path(w.budget, tree, leaf=True))
        if not tree.node(budget).is_leaf:  # its children may not be leaves either
            raise report.error(
                (*loc, "budget"),
                f"{budget!r} is not a leaf of the budget tree; "
                f"work is charged to a leaf, such as {leaves_below(budget, tree)}",
            )
    if w.min_runtime > policy.max_min_runtime_s:
        raise report.error(
            (*loc, "min_runtime"),
            f"{format_duration(w.min_runtime)} is above max_min_runtime "
            f"({format_duration(policy.max_min_runtime_s)})",
        )
    submitted = w.submitted or now
    if submitted > now:
        raise report.error(
            (*loc, "submitted"), f"{format_time(submitted)} is after now ({format_time(now)})"
        )
    hosts: dict[HostName, int] = {}
    if (w.started is None) != (w.hosts is None):
        missing = "hosts" if w.hosts is None else "started"
        raise report.error(
            (*loc, missing), "a running workload gives both started and hosts; a queued one neither"
        )
    if w.started is not None and w.hosts is not None:
        if w.started > now:
            raise report.error(
                (*loc, "started"), f"{format_time(w.started)} is after now ({format_time(now)})"
            )
        if w.submitted is not None and w.started < w.submitted:
            raise report.error((*loc, "started"), "it started before it was submitted")
        if not w.hosts:
            raise report.error((*loc, "hosts"), "a running workload runs on at least one host")
        for name, gpus in w.hosts.items():
            host = cluster.by_name.get(HostName(name))
            if host is None:
                close = difflib.get_close_matches(name, list(cluster.by_name), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                raise report.error((*loc, "hosts", name), f"unknown host {name!r}{hint}")
            if w.gpu_type is not None and host.gpu_type != w.gpu_type:
                raise report.error(
                    (*loc, "hosts", name),
                    f"host {name} has {host.gpu_type} GPUs but the workload asks for {w.gpu_type}",
                )
            placed[host.name] += gpus
            if placed[host.name] > host.gpus:
                raise report.error(
                    (*loc, "hosts", name),
                    f"host {name} has {counted(host.gpus, 'GPU')}, but running workloads "
                    f"place {count(placed[host.name])} there",
                )
            hosts[host.name] = gpus
        if sum(hosts.values()) < w.gpus:
            raise report.error(
                (*loc, "hosts"),
                f"places {counted(sum(hosts.values()), 'GPU')} for a workload of "
                f"{counted(w.gpus, 'GPU')}",
            )
    elif w.backfill_for:
        raise report.error(
            (*loc, "backfill_for"), "only a running workload runs as backfill (give started)"
        )
    if w.id in w.backfill_for:
        raise report.error((*loc, "backfill_for"), "a workload is not backfill for itself")
    topology = Topology(w.topology) if w.topology else cluster.default_topology(w.gpus, w.gpu_type)
    return Workload(
        id=WorkloadId(w.id),
        budget=budget,
        gpus=w.gpus,
        min_runtime_s=w.min_runtime,
        submitted=submitted,
        resumable=w.resumable,
        priority=w.priority,
        topology=topology,
        gpu_type=w.gpu_type,
        started=w.started,
        hosts=hosts,
        runtime_s=w.runtime,
        backfill_for=tuple(WorkloadId(g) for g in w.backfill_for),
    )
