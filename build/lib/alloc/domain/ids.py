"""Typed identifiers: host names, workload ids and budget paths are strings, never swapped."""

from functools import lru_cache
from typing import NewType

WorkloadId = NewType("WorkloadId", str)
HostName = NewType("HostName", str)
# Names below the root joined by "/", e.g. "nlp/olmo"; the root itself is "".
BudgetPath = NewType("BudgetPath", str)

ROOT_PATH = BudgetPath("")


def join_path(parent: BudgetPath, name: str) -> BudgetPath:
    return BudgetPath(f"{parent}/{name}" if parent else name)


@lru_cache(maxsize=65536)
def path_prefixes(path: BudgetPath) -> tuple[BudgetPath, ...]:
    """The node paths from the top level down to `path` itself (the root excluded)."""
    if not path:
        return ()
    parts = path.split("/")
    return tuple(BudgetPath("/".join(parts[: i + 1])) for i in range(len(parts)))
