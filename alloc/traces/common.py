"""What the importers share: reading a source CSV with file/line/field errors, the cluster and
lab they build, and the summary they return."""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from alloc.domain import (
    BudgetNode,
    BudgetTree,
    Cluster,
    Host,
    HostName,
    Policy,
    Snapshot,
    TraceJob,
)
from alloc.io.errors import InputError
from alloc.io.limits import bounded_rows, read_input
from alloc.io.names import check_row
from alloc.io.shares import share_of_percent

HOSTS_PER_BLOCK = 32
HOSTS_PER_RACK = 4


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import did, for the command to print: nothing is dropped silently."""

    source: str
    rows: int  # data rows read (blank lines not counted)
    dropped: dict[str, int]  # reason -> rows not imported
    kinds: dict[str, int]  # kind (unallocated / debug / train) -> jobs
    too_large: int  # jobs larger than the whole cluster (kept: they wait too_large)
    wider_than_block: int  # multi-host jobs larger than one block (kept: they wait topology)
    hosts: int
    gpus_per_host: int
    span_days: float  # from the first to the last submission
    budgets: list[tuple[str, float, str]]  # (leaf, share in percent, where the share comes from)
    notes: list[str] = field(default_factory=list)
    attribution: str | None = None

    @property
    def imported(self) -> int:
        return sum(self.kinds.values())

    @property
    def gpus(self) -> int:
        return self.hosts * self.gpus_per_host


@dataclass(frozen=True, slots=True)
class TraceImport:
    jobs: tuple[TraceJob, ...]  # in submission order
    lab: Snapshot
    summary: ImportSummary


def read_rows(path: Path, required: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line, row) for every non-blank data row of a CSV whose header names `required` (other
    columns are allowed and ignored); a row with another number of columns is an error."""
    file = str(path)
    text = read_input(path, "utf-8-sig", "a CSV file")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError(file, "", "the file is empty (expected a header line)", 1) from None
    missing = [c for c in required if c not in header]
    if missing:
        raise InputError(
            file,
            "",
            f"missing columns {', '.join(missing)} (expected {','.join(required)}; "
            f"the header is {','.join(header)})",
            1,
        )
    for cells in bounded_rows(reader, file):
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue
        line = reader.line_num
        if len(cells) != len(header):
            raise InputError(
                file,
                "",
                f"the row has {len(cells)} columns, the header has {len(header)} "
                f"({','.join(header)})",
                line,
            )
        row = {h: c.strip() for h, c in zip(header, cells, strict=True)}
        check_row(((c, row[c]) for c in required), file, line)  # the columns it reads
        yield line, row


def number(row: dict[str, str], name: str, file: str, line: int) -> float:
    """A finite number, zero or more."""
    text = row[name]
    try:
        value = float(text)
    except ValueError:
        raise InputError(file, name, f"expected a number, got {text!r}", line) from None
    if not math.isfinite(value):
        raise InputError(file, name, f"expected a finite number, got {text!r}", line)
    if value < 0:
        raise InputError(file, name, f"must not be negative, got {text!r}", line)
    return value


def whole(row: dict[str, str], name: str, file: str, line: int) -> int:
    """A whole number, zero or more (`8` or `8.0`)."""
    value = number(row, name, file, line)
    if value != int(value):
        raise InputError(file, name, f"expected a whole number, got {row[name]!r}", line)
    return int(value)


def build_cluster(name: str, hosts: int, gpus_per_host: int, gpu_type: str, prefix: str) -> Cluster:
    """`hosts` hosts `<prefix>001`...: blocks of 32 hosts (`<prefix>-b1`...), racks of 4
    (`<prefix>-r1`...), as the instance's host groups name them."""
    width = max(3, len(str(hosts)))
    return Cluster(
        name,
        tuple(
            Host(
                name=HostName(f"{prefix}{i + 1:0{width}d}"),
                gpus=gpus_per_host,
                gpu_type=gpu_type,
                block=f"{prefix}-b{i // HOSTS_PER_BLOCK + 1}",
                rack=f"{prefix}-r{i // HOSTS_PER_RACK + 1}",
            )
            for i in range(hosts)
        ),
    )


def build_lab(
    now: datetime, cluster: Cluster, root: str, leaves: Sequence[tuple[str, float]]
) -> Snapshot:
    """The lab: default policy, the cluster, one root with a leaf per (name, share %), no usage,
    no workloads."""
    tree = BudgetTree(
        BudgetNode(root, 1.0, (), tuple(BudgetNode(n, share_of_percent(p), ()) for n, p in leaves))
    )
    return Snapshot(now, Policy(), cluster, tree, {}, ())


def kinds_and_sizes(jobs: Sequence[TraceJob], cluster: Cluster) -> tuple[dict[str, int], int, int]:
    """(jobs per kind, jobs larger than the cluster, multi-host jobs larger than one block)."""
    per_host = max(h.gpus for h in cluster.hosts)
    block = per_host * min(HOSTS_PER_BLOCK, len(cluster.hosts))
    kinds = Counter(j.kind or "" for j in jobs)
    too_large = sum(1 for j in jobs if j.gpus > cluster.installed_gpus)
    wide = sum(1 for j in jobs if block < j.gpus <= cluster.installed_gpus)
    return dict(kinds), too_large, wide


def span_days(jobs: Sequence[TraceJob]) -> float:
    if not jobs:
        return 0.0
    return (max(j.submitted_s for j in jobs) - min(j.submitted_s for j in jobs)) / 86400
