"""The allocation tree: shares of GPU time handed down to programs, teams and people."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from alloc.domain.ids import ROOT_PATH, BudgetPath, join_path


@dataclass(frozen=True, slots=True)
class BudgetNode:
    name: str
    share: float  # fraction of the parent's share, 0..1 (the root's is 1)
    owners: tuple[str, ...] = ()
    children: tuple[BudgetNode, ...] = ()

    @property
    def is_leaf(self) -> bool:
        return not self.children


@dataclass(frozen=True, slots=True)
class BudgetTree:
    root: BudgetNode
    nodes: Mapping[BudgetPath, BudgetNode] = field(init=False, repr=False, compare=False)
    effective: Mapping[BudgetPath, float] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        nodes: dict[BudgetPath, BudgetNode] = {}
        effective: dict[BudgetPath, float] = {}

        def walk(node: BudgetNode, path: BudgetPath, eff: float) -> None:
            nodes[path] = node
            effective[path] = eff
            for child in node.children:
                walk(child, join_path(path, child.name), eff * child.share)

        walk(self.root, ROOT_PATH, 1.0)
        object.__setattr__(self, "nodes", MappingProxyType(nodes))
        object.__setattr__(self, "effective", MappingProxyType(effective))

    def __contains__(self, path: object) -> bool:
        return path in self.nodes

    def node(self, path: BudgetPath) -> BudgetNode:
        return self.nodes[path]

    def effective_allocation(self, path: BudgetPath) -> float:
        """The product of the shares along the path: the node's fraction of the cluster's time."""
        return self.effective[path]

    def children(self, path: BudgetPath) -> tuple[BudgetPath, ...]:
        return tuple(join_path(path, c.name) for c in self.nodes[path].children)

    def leaves(self) -> tuple[BudgetPath, ...]:
        return tuple(p for p, n in self.nodes.items() if n.is_leaf and p != ROOT_PATH)

    def paths(self) -> Iterator[BudgetPath]:
        return iter(self.nodes)
