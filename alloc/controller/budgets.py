"""Budget governance: who may change a share, and the tree a controller uses once shares
changed. Managers change shares with `alloc budgets set PATH SHARE --as USER`; only an owner of
the node's parent (SPEC `owners`, inherited down the tree: an owner of a node owns everything
beneath it) may. Changes are kept, with who, when, the old and the new share, in the
controller's state, and each round reads them: no restart needed. Pure functions here; the
store keeps the changes (alloc.controller.state)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from alloc.domain import ROOT_PATH, BudgetNode, BudgetPath, BudgetTree
from alloc.io.shares import ONE, exact, over_100, percent_text
from alloc.readable import natural_key


class GovernanceError(ValueError):
    """A change that may not be made: who, what or how much is wrong."""


def owners_of(tree: BudgetTree, path: BudgetPath) -> frozenset[str]:
    """Everyone who owns `path`: its own owners and those of every node above it."""
    out: set[str] = set(tree.node(ROOT_PATH).owners)
    parts = path.split("/") if path else []
    for i in range(len(parts)):
        out |= set(tree.node(BudgetPath("/".join(parts[: i + 1]))).owners)
    return frozenset(out)


def node_named(tree: BudgetTree, path: BudgetPath) -> str:
    """A node as the config names it: its path, and the root by its name (`lab, the root`),
    never as a bare `the root`, which reads like the user named root."""
    return path if path else f"{tree.root.name}, the root"


def check_change(tree: BudgetTree, path: BudgetPath, share: float | Decimal, user: str) -> float:
    """The share `path` has now; GovernanceError unless `user` may set it to `share`. Its
    siblings' shares and it sum to at most 100%, exactly (alloc.io.shares: `share` as
    `parse_fraction` gives it, the others as the tree holds them)."""
    if not path or path not in tree:
        options = ", ".join(p for p in tree.paths() if p)
        raise GovernanceError(f"no budget node {path!r} (nodes: {options})")
    if not 0 <= exact(share) <= ONE:
        raise GovernanceError(f"a share is between 0% and 100%, got {percent_text(share)}")
    parent = BudgetPath(path.rsplit("/", 1)[0]) if "/" in path else ROOT_PATH
    allowed = owners_of(tree, parent)
    if not allowed:
        raise GovernanceError(nobody_owns(tree, parent, path))
    if user not in allowed:
        who = ", ".join(sorted(allowed, key=natural_key))
        raise GovernanceError(
            f"{user!r} does not own {node_named(tree, parent)}, the parent of {path}; who owns "
            f"it and so may change {path}: {who}"
        )
    siblings = [tree.node(c).share for c in tree.children(parent) if c != path]
    total = over_100([*siblings, share])
    if total is not None:
        raise GovernanceError(
            f"{path} at {percent_text(share)} would bring its siblings' shares to "
            f"{percent_text(total)} of {node_named(tree, parent)} (at most 100%)"
        )
    return tree.node(path).share


def nobody_owns(tree: BudgetTree, parent: BudgetPath, path: BudgetPath) -> str:
    """Why no one, root included, may change `path`: its parent has no owner (governance
    stays strict: root acts for an owner, and there is none), and how to name one."""
    where = (
        f"`owners: [USER]` on {tree.root.name}, the root"
        if not parent
        else f"`owners: [USER]` on {parent} or a node above it"
    )
    return (
        f"nobody owns {node_named(tree, parent)}, the parent of {path}: the config names no "
        f"owners there or above it, so no one may change {path}; name them in the config's "
        f"budgets ({where}), then run this as one of them"
    )


def with_shares(tree: BudgetTree, shares: Mapping[BudgetPath, float]) -> BudgetTree:
    """The tree with these nodes' shares replaced (nodes it lacks are ignored: the config may
    have dropped them since). GovernanceError when the config changed since so that some
    siblings' shares, with the changes, sum to more than 100%: no tree is made of them."""
    if not shares:
        return tree

    def node(n: BudgetNode, path: BudgetPath) -> BudgetNode:
        children = tuple(
            node(c, BudgetPath(f"{path}/{c.name}" if path else c.name)) for c in n.children
        )
        share = shares.get(path, n.share) if path else n.share
        return BudgetNode(n.name, share, n.owners, children)

    changed = BudgetTree(node(tree.root, ROOT_PATH))
    for parent in changed.paths():
        total = over_100(changed.node(c).share for c in changed.children(parent))
        if total is not None:
            kept = ", ".join(
                f"{p} {percent_text(s)}"
                for p, s in sorted(shares.items(), key=lambda ps: natural_key(ps[0]))
                if p in changed
            )
            raise GovernanceError(
                f"the shares of the children of {node_named(changed, parent)} sum to "
                f"{percent_text(total)} "
                f"with the changes made by `alloc budgets set` ({kept}): more than 100%; set "
                "them back, or change the config's budgets"
            )
    return changed
