"""The budget tree, its usage and the policy as an instance (or a scenario, or a controller's
configuration) gives them: shares summed exactly, names and paths checked."""

from __future__ import annotations

import difflib
from decimal import Decimal

from alloc.domain import BudgetNode, BudgetPath, BudgetTree, Policy
from alloc.io.reporter import Reporter
from alloc.io.schema import BudgetIn, PolicyIn
from alloc.io.shares import ONE, over_100, percent_text


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


def budget_tree(raw: BudgetIn, report: Reporter) -> BudgetTree:
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


def unknown_path(path: str, tree: BudgetTree, leaf: bool = False) -> str:
    """`leaf`: where work is charged, which must name a leaf (instances and traces)."""
    if path.strip("/") == tree.root.name:
        return root_named(path, tree, leaf)
    options = [p for p in tree.paths() if p]
    close = difflib.get_close_matches(path, options, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown budget node {path!r}{hint}"


def root_named(path: str, tree: BudgetTree, leaf: bool = False) -> str:
    """Why the root's name is no budget to charge: the root is the whole cluster, and its
    name is no path (paths start below it: `nlp/olmo`). With `leaf` (work, which is charged
    to a leaf) a few leaves are named, not the root's children, which may not be leaves."""
    if leaf:
        below = f"a leaf below it, such as {leaves_below(BudgetPath(''), tree)}"
    else:
        below = f"a node below it ({', '.join(tree.children(BudgetPath('')))})"
    return (
        f"{path!r} is the root of the budget tree, the whole cluster, and cannot be a budget: "
        f"work is charged to {below}"
    )


def leaves_below(path: BudgetPath, tree: BudgetTree, shown: int = 3) -> str:
    """The first leaves under `path`, in the tree's order, `…` after `shown` of them:
    `nlp/olmo, nlp/tulu, vision`."""
    prefix = f"{path}/" if path else ""
    leaves = [leaf for leaf in tree.leaves() if leaf.startswith(prefix)]
    return ", ".join(leaves[:shown]) + (", …" if len(leaves) > shown else "")


def usage_from(
    raw: dict[str, float], tree: BudgetTree, report: Reporter
) -> dict[BudgetPath, float]:
    usage: dict[BudgetPath, float] = {}
    for key, hours in raw.items():
        path = BudgetPath(key.strip("/"))
        if path not in tree or not path:
            raise report.error(("usage", key), unknown_path(key, tree))
        if path in usage:
            raise report.error(("usage", key), f"usage for {path!r} is given twice")
        usage[path] = hours
    return usage
