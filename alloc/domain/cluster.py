"""Hosts and the cluster they form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from alloc.domain.ids import HostName
from alloc.domain.workload import Topology


class HostState(StrEnum):
    READY = "ready"
    UNHEALTHY = "unhealthy"  # drain, then repair
    RETIRED = "retired"  # drain, then remove
    MAINTENANCE = "maintenance"  # out of service: nothing runs there

    @property
    def accepts_work(self) -> bool:
        return self is HostState.READY

    @property
    def draining(self) -> bool:
        return self is HostState.UNHEALTHY or self is HostState.RETIRED


@dataclass(frozen=True, slots=True)
class Host:
    name: HostName
    gpus: int
    gpu_type: str
    block: str
    rack: str
    state: HostState = HostState.READY


@dataclass(frozen=True, slots=True, weakref_slot=True)
class Cluster:
    name: str
    hosts: tuple[Host, ...]
    by_name: Mapping[HostName, Host] = field(init=False, repr=False, compare=False)
    all_ready: bool = field(init=False, repr=False, compare=False)  # no host in trouble

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_name", MappingProxyType({h.name: h for h in self.hosts}))
        object.__setattr__(self, "all_ready", all(h.state is HostState.READY for h in self.hosts))

    def host(self, name: HostName) -> Host:
        return self.by_name[name]

    def default_topology(self, gpus: int, gpu_type: str | None) -> Topology:
        """A workload that names none gets `block` when it is larger than one host of its GPU
        type (of any type when it names none), else `any`."""
        sizes = [h.gpus for h in self.hosts if gpu_type is None or h.gpu_type == gpu_type]
        return Topology.BLOCK if sizes and gpus > max(sizes) else Topology.ANY

    @property
    def ready_gpus(self) -> int:
        return sum(h.gpus for h in self.hosts if h.state.accepts_work)

    @property
    def installed_gpus(self) -> int:
        return sum(h.gpus for h in self.hosts)
