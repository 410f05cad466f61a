"""Snapshot -> instance YAML (for `alloc generate`), in the format `alloc.io.instance` reads."""

from __future__ import annotations

import re
from typing import Any

import yaml

from alloc.domain import BudgetNode, Cluster, Host, HostState, Policy, Snapshot
from alloc.io.durations import format_duration, format_time
from alloc.io.shares import percent_text


def snapshot_to_dict(snapshot: Snapshot) -> dict[str, Any]:
    out: dict[str, Any] = {
        "now": format_time(snapshot.now),
        "policy": _policy(snapshot.policy),
        "cluster": _cluster(snapshot.cluster),
        "budgets": _budget(snapshot.budgets.root, root=True),
        "usage": {p: round(h, 3) for p, h in sorted(snapshot.usage_gpu_hours.items())},
    }
    if snapshot.usage_capacity_gpu_hours is not None:
        out["usage_capacity_gpu_hours"] = snapshot.usage_capacity_gpu_hours
    out["workloads"] = [_workload(w) for w in snapshot.workloads]
    return out


# Strings a YAML 1.2 reader would take for numbers (PyYAML, YAML 1.1, writes `6214e9` bare).
_NUMBER_LIKE = re.compile(
    r"^[-+]?(\d[\d_]*\.?\d*|\.\d+)([eE][-+]?\d+)?$|^0[xob][0-9a-fA-F_]+$|^[-+]?\.(inf|nan)$",
    re.IGNORECASE,
)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "'" if _NUMBER_LIKE.match(value) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_instance(snapshot: Snapshot, header: str = "") -> str:
    body = yaml.dump(
        snapshot_to_dict(snapshot),
        Dumper=_Dumper,
        sort_keys=False,
        width=100,
        default_flow_style=None,
    )
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    return comment + body


def _policy(p: Policy) -> dict[str, Any]:
    out: dict[str, Any] = {
        "lookback": format_duration(p.lookback_s),
        "max_min_runtime": format_duration(p.max_min_runtime_s),
        "solver": p.solver,
        "time_limit": format_duration(p.time_limit_s),
        "threads": p.threads,
        "seed": p.seed,
        "mip_gap": p.mip_gap,
        "backend": p.backend,
        "checkpoint_interval": format_duration(p.checkpoint_interval_s),
    }
    if p.fairshare_horizon_s is not None:
        out["fairshare_horizon"] = format_duration(p.fairshare_horizon_s)
    return out


def _cluster(c: Cluster) -> dict[str, Any]:
    group = _as_group(c.hosts)
    if group is not None:
        return {"name": c.name, "host_groups": [group]}
    return {"name": c.name, "hosts": [_host(h) for h in c.hosts]}


def _host(h: Host) -> dict[str, Any]:
    return {
        "name": h.name,
        "gpus": h.gpus,
        "gpu_type": h.gpu_type,
        "block": h.block,
        "rack": h.rack,
        "state": h.state.value,
    }


def _as_group(hosts: tuple[Host, ...]) -> dict[str, Any] | None:
    """One host group that expands to exactly these hosts, if there is one."""
    m = re.fullmatch(r"(.*?)(\d+)", hosts[0].name) if hosts else None
    if m is None:
        return None
    prefix, first = m.group(1), int(m.group(2))
    h0 = hosts[0]
    per_block = sum(1 for h in hosts if h.block == h0.block)
    per_rack = sum(1 for h in hosts if h.rack == h0.rack)
    group = {
        "prefix": prefix,
        "first": first,
        "count": len(hosts),
        "gpus": h0.gpus,
        "gpu_type": h0.gpu_type,
        "hosts_per_block": per_block,
        "hosts_per_rack": per_rack,
        "state": h0.state.value,
    }
    width = max(3, len(str(first + len(hosts) - 1)))
    for k, h in enumerate(hosts):
        expected = (
            f"{prefix}{first + k:0{width}d}",
            h0.gpus,
            h0.gpu_type,
            f"{prefix}-b{k // per_block + 1}",
            f"{prefix}-r{k // per_rack + 1}",
            h0.state,
        )
        if (h.name, h.gpus, h.gpu_type, h.block, h.rack, h.state) != expected:
            return None
    if h0.state is not HostState.READY:
        return group
    del group["state"]
    return group


def _budget(b: BudgetNode, root: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"name": b.name}
    if not root:
        out["share"] = percent_text(b.share)  # exact: what the reader reads back
    if b.owners:
        out["owners"] = list(b.owners)
    if b.children:
        out["children"] = [_budget(c) for c in b.children]
    return out


def _workload(w: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": w.id}
    if w.budget:
        out["budget"] = w.budget
    out["gpus"] = w.gpus
    out["min_runtime"] = format_duration(w.min_runtime_s)
    if not w.resumable:
        out["resumable"] = False
    if w.priority:
        out["priority"] = w.priority
    out["topology"] = w.topology.value
    if w.gpu_type:
        out["gpu_type"] = w.gpu_type
    out["submitted"] = format_time(w.submitted)
    if w.started is not None:
        out["started"] = format_time(w.started)
        out["hosts"] = dict(w.hosts)
        if w.backfill_for:
            out["backfill_for"] = list(w.backfill_for)
    if w.runtime_s is not None:
        out["runtime"] = format_duration(w.runtime_s)
    return out
