"""Instance YAML <-> Snapshot. All validation of user input happens here, before anything runs.

Every problem raises `InputError` naming the file, the line, the field path (e.g.
`workloads[3].gpus`) and what is wrong (SPEC.md, exit code 2).
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from alloc.domain import (
    BudgetNode,
    BudgetPath,
    BudgetTree,
    Cluster,
    Host,
    HostName,
    HostState,
    Policy,
    Snapshot,
    Topology,
    Workload,
    WorkloadId,
)
from alloc.io.durations import format_duration, format_time
from alloc.io.errors import InputError, field_path
from alloc.io.limits import limits, read_input, setting
from alloc.io.schema import BudgetIn, ClusterIn, InstanceIn, PolicyIn, WorkloadIn
from alloc.io.shares import ONE, over_100, percent_text
from alloc.io.yaml_source import line_of, read_yaml
from alloc.readable import count, counted


class _Reporter:
    def __init__(self, file: str, lines: Mapping[tuple[object, ...], int]) -> None:
        self.file = file
        self.lines = lines

    def error(self, loc: tuple[object, ...], message: str) -> InputError:
        return InputError(self.file, field_path(loc), message, line_of(self.lines, loc))


def load_instance(path: str | Path) -> Snapshot:
    return parse_instance(read_text(path), str(path))


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text; InputError naming the file when it cannot be read."""
    return read_input(path, kind="a YAML file")


M = TypeVar("M", bound=BaseModel)


def load_model(path: str | Path, model: type[M], what: str) -> tuple[M, _Reporter]:
    """A YAML file read and validated as `model` (`what` says what a valid one is when the
    file is not a mapping), and the reporter that names its lines."""
    file = str(path)
    data, lines = read_yaml(read_text(path), file)
    report = _Reporter(file, lines)
    if not isinstance(data, dict):
        raise report.error((), what)
    try:
        return model.model_validate(data), report
    except ValidationError as exc:
        raise first_error(exc, report, model=model) from None


def parse_instance(text: str, file: str = "<instance>") -> Snapshot:
    data, lines = read_yaml(text, file)
    report = _Reporter(file, lines)
    if not isinstance(data, dict):
        raise report.error((), "an instance is a mapping with now, cluster, budgets, workloads")
    return snapshot_from_dict(data, report)


def snapshot_from_dict(data: dict[str, Any], report: _Reporter | None = None) -> Snapshot:
    report = report or _Reporter("<instance>", {})
    try:
        raw = InstanceIn.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc, report) from None
    policy = policy_from(raw.policy)
    cluster = _cluster(raw.cluster, report)
    tree = _budgets(raw.budgets, report)
    usage = _usage(raw.usage, tree, report)
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


def first_error(
    exc: ValidationError,
    report: _Reporter,
    at: tuple[object, ...] = (),
    model: type[BaseModel] = InstanceIn,
) -> InputError:
    """The error to report of a failed validation of `model`: an unknown field first (a typo
    such as `gpu:` also makes the intended field missing; name the typo, on its line)."""
    errors = exc.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    return report.error((*at, *first["loc"]), _pydantic_message(first, model))


def _pydantic_message(error: Any, model: type[BaseModel]) -> str:
    kind = error["type"]
    given = error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        fields = _fields_at(error["loc"], model)
        close = difflib.get_close_matches(str(error["loc"][-1]), fields, n=1)
        if close:
            hint = f"; did you mean {close[0]!r}?"
        elif fields:
            hint = f"; expected one of {', '.join(fields)}"
        else:
            hint = ""
        if model is InstanceIn:
            return f"unknown field{hint} (see `alloc schema` for the fields an instance has)"
        return f"unknown field{hint}"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    message = message[0].lower() + message[1:]
    shown = repr(given)
    if "input" in error and not isinstance(given, dict | list) and len(shown) <= 80:
        return f"{message} (got {shown})"
    return message


def _fields_at(loc: tuple[object, ...], root: type[BaseModel]) -> list[str]:
    """The field names of the model that holds the field at `loc` (for "did you mean")."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return []
        annotation: Any = fields[part].annotation
        while not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if not args:
                return []
            annotation = args[-1]  # list[X] -> X, dict[K, X] -> X, X | None -> X
        model = annotation
    return list(getattr(model, "model_fields", {}))


def policy_from(raw: PolicyIn) -> Policy:
    return Policy(
        lookback_s=raw.lookback,
        max_min_runtime_s=raw.max_min_runtime,
        solver=raw.solver,
        time_limit_s=raw.time_limit,
        threads=raw.threads,
        seed=raw.seed,
        mip_gap=raw.mip_gap,
        backend=raw.backend,
        fairshare_horizon_s=raw.fairshare_horizon,
        checkpoint_interval_s=raw.checkpoint_interval,
    )


def _check_size(raw: ClusterIn, report: _Reporter) -> None:
    """The cluster within the hosts and GPUs alloc reads (alloc.io.limits), checked before any
    host is made: a group of a million 4,096-GPU hosts is refused, not expanded."""
    bounds = limits()
    hosts, gpus = len(raw.hosts), sum(h.gpus for h in raw.hosts)
    where: tuple[object, ...] = ("cluster", "hosts")
    for j, g in enumerate(raw.host_groups):
        hosts, gpus, where = hosts + g.count, gpus + g.count * g.gpus, ("cluster", "host_groups", j)
        if hosts > bounds.hosts or gpus > bounds.gpus:
            break
    if hosts > bounds.hosts:
        raise report.error(
            where,
            f"{hosts:,} hosts, more than the {bounds.hosts:,} alloc reads" + setting("hosts"),
        )
    if gpus > bounds.gpus:
        raise report.error(
            where, f"{gpus:,} GPUs, more than the {bounds.gpus:,} alloc reads" + setting("gpus")
        )


def _cluster(raw: ClusterIn, report: _Reporter) -> Cluster:
    _check_size(raw, report)
    hosts: list[Host] = []
    where: dict[str, tuple[object, ...]] = {}

    def add(host: Host, loc: tuple[object, ...]) -> None:
        if host.name in where:
            raise report.error(
                loc, f"host {host.name} is defined twice (also at {field_path(where[host.name])})"
            )
        where[host.name] = loc
        hosts.append(host)

    for i, h in enumerate(raw.hosts):
        add(
            Host(
                HostName(h.name),
                h.gpus,
                h.gpu_type,
                h.block or "default",
                h.rack or "default",
                HostState(h.state),
            ),
            ("cluster", "hosts", i, "name"),
        )
    for j, g in enumerate(raw.host_groups):
        last = g.first + g.count - 1
        width = max(3, len(str(last)))
        for k in range(g.count):
            number = g.first + k
            block = g.block or (
                f"{g.prefix}-b{k // g.hosts_per_block + 1}"
                if g.hosts_per_block
                else f"{g.prefix}-b1"
            )
            rack = g.rack or (
                f"{g.prefix}-r{k // g.hosts_per_rack + 1}" if g.hosts_per_rack else f"{g.prefix}-r1"
            )
            name = HostName(f"{g.prefix}{number:0{width}d}")
            add(
                Host(name, g.gpus, g.gpu_type, block, rack, HostState(g.state)),
                ("cluster", "host_groups", j),
            )
    if not hosts:
        raise report.error(("cluster",), "the cluster has no hosts (give hosts or host_groups)")
    return Cluster(raw.name, tuple(hosts))


def _budgets(raw: BudgetIn, report: _Reporter) -> BudgetTree:
    def node(b: BudgetIn, loc: tuple[object, ...], share: Decimal) -> BudgetNode:
        if "/" in b.name:
            raise report.error((*loc, "name"), f"a budget name cannot contain '/': {b.name!r}")
        names: dict[str, int] = {}
        for i, child in enumerate(b.children):
            if child.name in names:
                raise report.error(
                    (*loc, "children", i, "name"), f"{b.name} has two children named {child.name!r}"
                )
            names[child.name] = i
        shares = [ONE if c.share is None else c.share for c in b.children]
        total = over_100(shares)  # exactly: no tolerance (alloc.io.shares)
        if total is not None:
            parts = " + ".join(
                f"{c.name} {percent_text(s)}" for c, s in zip(b.children, shares, strict=True)
            )
            raise report.error(
                (*loc, "children"),
                f"shares of {b.name}'s children sum to {percent_text(total)} ({parts}), "
                "more than 100%",
            )
        children = tuple(
            node(c, (*loc, "children", i), s)
            for i, (c, s) in enumerate(zip(b.children, shares, strict=True))
        )
        return BudgetNode(b.name, float(share), tuple(b.owners), children)

    if raw.share is not None and raw.share != ONE:
        raise report.error(
            ("budgets", "share"),
            "the root is the whole cluster: it has no share (give shares to its children)",
        )
    return BudgetTree(node(raw, ("budgets",), ONE))


def _known_path(path: str, tree: BudgetTree) -> str:
    options = [p for p in tree.paths() if p]
    close = difflib.get_close_matches(path, options, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown budget node {path!r}{hint}"


def _usage(raw: dict[str, float], tree: BudgetTree, report: _Reporter) -> dict[BudgetPath, float]:
    usage: dict[BudgetPath, float] = {}
    for key, hours in raw.items():
        path = BudgetPath(key.strip("/"))
        if path not in tree or not path:
            raise report.error(("usage", key), _known_path(key, tree))
        if path in usage:
            raise report.error(("usage", key), f"usage for {path!r} is given twice")
        usage[path] = hours
    return usage


def _workloads(
    raw: InstanceIn, policy: Policy, cluster: Cluster, tree: BudgetTree, report: _Reporter
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
    report: _Reporter,
) -> Workload:
    budget: BudgetPath | None = None
    if w.budget is not None and w.budget.strip("/"):
        budget = BudgetPath(w.budget.strip("/"))
        if budget not in tree:
            raise report.error((*loc, "budget"), _known_path(w.budget, tree))
        if not tree.node(budget).is_leaf:
            leaves = ", ".join(tree.children(budget))
            raise report.error(
                (*loc, "budget"),
                f"{budget!r} is not a leaf of the budget tree; "
                f"work is charged to a leaf ({leaves})",
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
