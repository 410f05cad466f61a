"""Microsoft Philly (ATC'19) as processed by the Sia artifact -> trace jobs and a lab.

Source: a folder holding `philly.csv` (columns `timestamp`, `duration`, `num_gpus`, `gpu_time`,
`cluster`; rows not sorted) and `philly_vc_nodes.csv` (`vc`, `node num`), or the `philly.csv`
itself (the node counts are read beside it). Licence CC BY 4.0: show `ATTRIBUTION` wherever
results derived from it are shown.

Rules (documented here, applied by `import_philly`):
- Tenants: each virtual cluster (VC, column `cluster`) is one budget leaf under the root
  `philly`; its share is proportional to its node count, in percent rounded down to 3 decimals
  (the shares never sum above 100%). Leaves follow the node file's order, then the VCs it lacks
  by name.
- A VC with jobs but no node count (in the real data 23dbec, 51b7ef, 925e2b, 795a4c) counts as
  1 node: the smallest allocation that still funds its work; those nodes join the cluster.
- Cluster: one host per node, `gpus_per_node` GPUs each (default 8; Philly mixed 2- and 8-GPU
  servers and the node file does not say which, so 8 is an upper estimate of its capacity),
  GPU type `philly`, hosts `p001`... in blocks of 32 (`p-b1`...) and racks of 4 (`p-r1`...).
- Times: `timestamp` is the submission time, read as UTC; `submitted` = seconds since the
  lab's now (below), so that simulated times are the trace's; `runtime` = `duration`;
  `gpu_time` is not used. Job ids `philly-000001`... in submission order (ties keep the file's
  order). Topology is left to the default.
- Rows with `duration` 0 or `num_gpus` 0 did no work: they are dropped and counted. A negative or
  non-numeric value, a bad timestamp or an empty `cluster` is an input error. A job larger than
  the whole cluster is kept (it waits `too_large`) and counted.
- Minimum runtimes: `MinRuntimeRule` (alloc.traces.rules), its draw keyed by the imported id.
- The lab: now = the first submission's day at midnight UTC (2017-09-04T00:00:00Z for the real
  data), default policy, no usage, no workloads.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from alloc.domain import BudgetPath, TraceJob, WorkloadId
from alloc.io.errors import InputError
from alloc.readable import counted
from alloc.traces.common import (
    ImportSummary,
    TraceImport,
    build_cluster,
    build_lab,
    kinds_and_sizes,
    number,
    read_rows,
    span_days,
    whole,
)
from alloc.traces.rules import MinRuntimeRule, shares_percent

ATTRIBUTION = (
    "Microsoft Philly trace (CC BY 4.0), ATC'19: Analysis of Large-Scale Multi-Tenant GPU "
    "Clusters for DNN Training Workloads"
)
JOBS_FILE = "philly.csv"
NODES_FILE = "philly_vc_nodes.csv"
COLUMNS = ("timestamp", "duration", "num_gpus", "cluster")
NODE_COLUMNS = ("vc", "node num")
UNCOUNTED_VC_NODES = 1


def import_philly(
    source: str | Path, gpus_per_node: int = 8, rule: MinRuntimeRule | None = None
) -> TraceImport:
    """Read the Philly job list and node counts; return the jobs, the lab and a summary."""
    rule = rule or MinRuntimeRule()
    if gpus_per_node < 1:
        raise InputError("--gpus-per-node", "", f"must be at least 1, got {gpus_per_node}")
    jobs_path, nodes_path = _paths(Path(source))
    nodes = _read_nodes(nodes_path)
    rows, dropped, total = _read_jobs(jobs_path)
    if not rows:
        raise InputError(str(jobs_path), "", f"no job to import ({total} rows, all dropped)")
    jobs_per_vc = Counter(vc for _, _, _, _, vc in rows)
    uncounted = sorted(vc for vc in jobs_per_vc if vc not in nodes)
    for vc in uncounted:
        nodes[vc] = UNCOUNTED_VC_NODES
    cluster = build_cluster("philly", sum(nodes.values()), gpus_per_node, "philly", "p")
    percents = shares_percent(list(nodes.values()))
    first = min(r[0] for r in rows)
    now = datetime(first.year, first.month, first.day, tzinfo=UTC)
    lab = build_lab(now, cluster, "philly", list(zip(nodes, percents, strict=True)))
    max_min = lab.policy.max_min_runtime_s
    rows.sort(key=lambda r: (r[0], r[1]))
    width = max(6, len(str(len(rows))))
    jobs = []
    for k, (stamp, _, duration, gpus, vc) in enumerate(rows):
        job_id = f"philly-{k + 1:0{width}d}"
        min_runtime, kind = rule.assign(job_id, gpus, duration, max_min)
        jobs.append(
            TraceJob(
                id=WorkloadId(job_id),
                budget=BudgetPath(vc),
                gpus=gpus,
                submitted_s=(stamp - now).total_seconds(),
                runtime_s=duration,
                min_runtime_s=min_runtime,
                kind=kind,
            )
        )
    kinds, too_large, wide = kinds_and_sizes(jobs, cluster)
    budgets = [
        (
            vc,
            pct,
            counted(n, "node")
            + (" (no count in the node file)" if vc in uncounted else "")
            + f", {counted(jobs_per_vc.get(vc, 0), 'job')}",
        )
        for (vc, n), pct in zip(nodes.items(), percents, strict=True)
    ]
    notes = [
        f"{counted(gpus_per_node, 'GPU')} per node (Philly mixed 2- and 8-GPU servers; "
        "--gpus-per-node)",
        "timestamps read as UTC; submitted counts from the earliest one",
    ]
    if uncounted:
        notes.append(
            f"VCs without a node count ({', '.join(uncounted)}) count as "
            f"{UNCOUNTED_VC_NODES} node each; those nodes join the cluster"
        )
    summary = ImportSummary(
        source=str(jobs_path),
        rows=total,
        dropped=dropped,
        kinds=kinds,
        too_large=too_large,
        wider_than_block=wide,
        hosts=len(cluster.hosts),
        gpus_per_host=gpus_per_node,
        span_days=span_days(jobs),
        budgets=budgets,
        notes=notes,
        attribution=ATTRIBUTION,
    )
    return TraceImport(tuple(jobs), lab, summary)


def raw_files(source: str | Path) -> tuple[Path, Path]:
    """The files an import of `source` reads, jobs then node counts (an output must not
    replace them)."""
    source = Path(source)
    if source.is_dir():
        return source / JOBS_FILE, source / NODES_FILE
    return source, source.parent / NODES_FILE


def _paths(source: Path) -> tuple[Path, Path]:
    """The jobs and the node counts of `source`; bad input, saying what is missing, when it
    is no Philly trace (naming the importer it looks made for: an ITP trace)."""
    from alloc.traces.sniff import looks_like, not_a

    if not source.is_dir() and not source.exists():
        raise InputError(str(source), "", "no such file or folder")
    jobs, nodes = raw_files(source)
    if source.is_dir() and not jobs.exists():  # a folder of that name: said below
        raise not_a(
            "philly",
            source,
            f"it holds no {JOBS_FILE} (a Philly trace is a folder of {JOBS_FILE}, the jobs, "
            f"and {NODES_FILE}, the node counts per VC)",
        )
    if not source.is_dir() and looks_like(source) == "itp":
        raise not_a("philly", source, f"its columns are not Philly's ({','.join(COLUMNS)})")
    if not nodes.is_file():
        raise InputError(
            str(nodes),
            "",
            f"no such file: a Philly trace has its node counts per VC "
            f"({','.join(NODE_COLUMNS)}) beside {jobs.name}",
        )
    return jobs, nodes


def _read_nodes(path: Path) -> dict[str, int]:
    file = str(path)
    nodes: dict[str, int] = {}
    where: dict[str, int] = {}
    for line, row in read_rows(path, NODE_COLUMNS):
        vc = row["vc"]
        if not vc:
            raise InputError(file, "vc", "empty virtual cluster name", line)
        if "/" in vc:
            raise InputError(file, "vc", f"a budget name cannot contain '/': {vc!r}", line)
        if vc in nodes:
            raise InputError(file, "vc", f"{vc!r} also on line {where[vc]}", line)
        count = whole(row, "node num", file, line)
        if count < 1:
            raise InputError(file, "node num", f"must be at least 1, got {row['node num']!r}", line)
        nodes[vc], where[vc] = count, line
    return nodes


Row = tuple[datetime, int, float, int, str]  # timestamp, line, duration, gpus, VC


def _read_jobs(path: Path) -> tuple[list[Row], dict[str, int], int]:
    """(rows kept, dropped rows by reason, data rows read)."""
    file = str(path)
    rows: list[Row] = []
    dropped: Counter[str] = Counter()
    total = 0
    for line, row in read_rows(path, COLUMNS):
        total += 1
        stamp = _timestamp(row["timestamp"], file, line)
        duration = number(row, "duration", file, line)
        gpus = whole(row, "num_gpus", file, line)
        vc = row["cluster"]
        if not vc:
            raise InputError(file, "cluster", "empty virtual cluster", line)
        if "/" in vc:
            raise InputError(file, "cluster", f"a budget name cannot contain '/': {vc!r}", line)
        if duration == 0:
            dropped["duration 0"] += 1
        elif gpus == 0:
            dropped["num_gpus 0"] += 1
        else:
            rows.append((stamp, line, duration, gpus, vc))
    return rows, dict(dropped), total


def _timestamp(text: str, file: str, line: int) -> datetime:
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            file, "timestamp", f"expected a time such as 2017-10-09 07:01:55, got {text!r}", line
        ) from None
    if stamp.tzinfo is None:
        return stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC)
