"""Budget governance: who may change a share, and the tree a controller uses once shares
changed. Managers change shares with `alloc budgets set PATH SHARE --as USER`; only an owner of
the node's parent (SPEC `owners`, inherited down the tree: an owner of a node owns everything
beneath it) may. Changes are kept, with who, when, the old and the new share, in the
controller's state, and each round reads them: no restart needed. Pure functions here; the
store keeps the changes (alloc.controller.state)."""

from __future__ import annotations

from collections.abc import Mapping

from alloc.domain import ROOT_PATH, BudgetNode, BudgetPath, BudgetTree

TOLERANCE = 1e-9


class GovernanceError(ValueError):
    """A change that may not be made: who, what or how much is wrong."""


def owners_of(tree: BudgetTree, path: BudgetPath) -> frozenset[str]:
    """Everyone who owns `path`: its own owners and those of every node above it."""
    out: set[str] = set(tree.node(ROOT_PATH).owners)
    parts = path.split("/") if path else []
    for i in range(len(parts)):
        out |= set(tree.node(BudgetPath("/".join(parts[: i + 1]))).owners)
    return frozenset(out)


def check_change(tree: BudgetTree, path: BudgetPath, share: float, user: str) -> float:
    """The share `path` has now; GovernanceError unless `user` may set it to `share`."""
    if not path or path not in tree:
        options = ", ".join(p for p in tree.paths() if p)
        raise GovernanceError(f"no budget node {path!r} (nodes: {options})")
    if not 0.0 <= share <= 1.0:
        raise GovernanceError(f"a share is between 0% and 100%, got {share * 100:g}%")
    parent = BudgetPath(path.rsplit("/", 1)[0]) if "/" in path else ROOT_PATH
    allowed = owners_of(tree, parent)
    if user not in allowed:
        who = ", ".join(sorted(allowed)) or "nobody (the config names no owners)"
        raise GovernanceError(
            f"{user!r} does not own {parent or 'the root'}; who may change {path}: {who}"
        )
    siblings = sum(tree.node(c).share for c in tree.children(parent) if c != path)
    if siblings + share > 1.0 + TOLERANCE:
        raise GovernanceError(
            f"{path} at {share * 100:g}% would bring its siblings' shares to "
            f"{(siblings + share) * 100:g}% of {parent or 'the root'} (at most 100%)"
        )
    return tree.node(path).share


def with_shares(tree: BudgetTree, shares: Mapping[BudgetPath, float]) -> BudgetTree:
    """The tree with these nodes' shares replaced (nodes it lacks are ignored: the config may
    have dropped them since)."""
    if not shares:
        return tree

    def node(n: BudgetNode, path: BudgetPath) -> BudgetNode:
        children = tuple(
            node(c, BudgetPath(f"{path}/{c.name}" if path else c.name)) for c in n.children
        )
        share = shares.get(path, n.share) if path else n.share
        return BudgetNode(n.name, share, n.owners, children)

    return BudgetTree(node(tree.root, ROOT_PATH))
