"""The cluster as an instance gives it: hosts listed one by one and host groups expanded, within
the hosts and GPUs alloc reads (alloc.io.limits), each host name defined once."""

from __future__ import annotations

from alloc.domain import Cluster, Host, HostName, HostState
from alloc.io.errors import field_path
from alloc.io.limits import limits, setting
from alloc.io.reporter import Reporter
from alloc.io.schema import ClusterIn


def _check_size(raw: ClusterIn, report: Reporter) -> None:
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


def cluster_from(raw: ClusterIn, report: Reporter) -> Cluster:
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
