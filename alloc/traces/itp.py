"""Microsoft ITP cluster traces (ElasticFlow, ASPLOS'23; MIT) -> trace jobs and a lab.

Source: one CSV with columns `job_id`, `submission_time` (seconds since the start of the
collection), `duration` (seconds), `num_gpu`; or a folder, which means its `cluster01.csv`
(import another cluster by naming its file). One file is one cluster, one import.

Rules (documented here, applied by `import_itp`):
- Tenants (the trace has no tenant column): `tenants` budget leaves `tenant1`...`tenantN`
  (default 8) under the root `itp`, with Zipf-like weights w_i = (1/i) / sum_k (1/k). A job goes
  to the tenant whose slice of the cumulative weights holds `uniform(seed, "tenant:" + job_id)`
  (alloc.traces.rules; `job_id` is the trace's own id). Budget shares are the weights in percent,
  rounded down to 3 decimals.
- Cluster: the smallest multiple of 8 GPUs (hosts of 8, GPU type `itp`, hosts `i001`... in blocks
  of 32 and racks of 4) at or above both the largest job and the 95th percentile of concurrent
  GPU demand if every job started at its submission: the demand over time from the first
  submission to the last completion, the percentile weighted by time.
- Times: `submitted` = seconds from the lab's now (below) to the submission, so that simulated
  times are the trace's; `runtime` = `duration`.
  Job ids `itp-000001`... in submission order (ties keep the file's order). Topology is left to
  the default.
- Rows with `duration` 0 or `num_gpu` 0 are dropped and counted; a negative or non-numeric
  value, an empty or repeated `job_id` is an input error.
- Minimum runtimes: `MinRuntimeRule` (alloc.traces.rules), its draw keyed by the imported id
  (`itp-000001`...), with the same seed as the tenants.
- The lab: now = midnight UTC of the first submission's day, counting the collection from
  2021-03-04T00:00:00Z (the start its README gives); default policy, no usage, no workloads.
"""

from __future__ import annotations

import math
from collections import Counter
from datetime import UTC, datetime, timedelta
from fractions import Fraction
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
from alloc.traces.rules import MinRuntimeRule, pick, shares_percent, uniform

ATTRIBUTION = (
    "Microsoft ITP cluster traces (MIT licence, Copyright (c) Microsoft Corporation), "
    "ASPLOS'23: ElasticFlow: An Elastic Serverless Training Platform for Distributed Deep Learning"
)
DEFAULT_FILE = "cluster01.csv"
COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
COLLECTION_START = datetime(2021, 3, 4, tzinfo=UTC)
GPUS_PER_HOST = 8
PERCENTILE = 0.95

Row = tuple[float, int, str, float, int]  # submission_time, line, job_id, duration, gpus


def raw_files(source: str | Path) -> tuple[Path, ...]:
    """The file an import of `source` reads (an output must not replace it)."""
    path = Path(source)
    return (path / DEFAULT_FILE,) if path.is_dir() else (path,)


def import_itp(
    source: str | Path, tenants: int = 8, rule: MinRuntimeRule | None = None
) -> TraceImport:
    """Read one ITP cluster CSV; return the jobs, the lab and a summary."""
    rule = rule or MinRuntimeRule()
    if tenants < 1:
        raise InputError("--tenants", "", f"must be at least 1, got {tenants}")
    (path,) = raw_files(source)
    _check_kind(Path(source), path)
    rows, dropped, total = _read(path)
    if not rows:
        raise InputError(str(path), "", f"no job to import ({total} rows, all dropped)")
    rows.sort(key=lambda r: (r[0], r[1]))
    first = rows[0][0]
    names = [f"tenant{i}" for i in range(1, tenants + 1)]
    weights = [Fraction(1, i) for i in range(1, tenants + 1)]
    percents = shares_percent(weights)
    demand = concurrent_demand_percentile([(r[0], r[3], r[4]) for r in rows], PERCENTILE)
    largest = max(r[4] for r in rows)
    hosts = max(1, math.ceil(max(demand, largest) / GPUS_PER_HOST))
    cluster = build_cluster(f"itp-{path.stem}", hosts, GPUS_PER_HOST, "itp", "i")
    day = COLLECTION_START + timedelta(seconds=first)
    now = datetime(day.year, day.month, day.day, tzinfo=UTC)
    since_now = (now - COLLECTION_START).total_seconds()  # submission_time of the lab's now
    lab = build_lab(now, cluster, "itp", list(zip(names, percents, strict=True)))
    max_min = lab.policy.max_min_runtime_s
    width = max(6, len(str(len(rows))))
    jobs = []
    for k, (submitted, _, source_id, duration, gpus) in enumerate(rows):
        job_id = f"itp-{k + 1:0{width}d}"
        tenant = names[pick(weights, uniform(rule.seed, f"tenant:{source_id}"))]
        min_runtime, kind = rule.assign(job_id, gpus, duration, max_min)
        jobs.append(
            TraceJob(
                id=WorkloadId(job_id),
                budget=BudgetPath(tenant),
                gpus=gpus,
                submitted_s=submitted - since_now,
                runtime_s=duration,
                min_runtime_s=min_runtime,
                kind=kind,
            )
        )
    per_tenant = Counter(j.budget for j in jobs)
    kinds, too_large, wide = kinds_and_sizes(jobs, cluster)
    summary = ImportSummary(
        source=str(path),
        rows=total,
        dropped=dropped,
        kinds=kinds,
        too_large=too_large,
        wider_than_block=wide,
        hosts=hosts,
        gpus_per_host=GPUS_PER_HOST,
        span_days=span_days(jobs),
        budgets=[
            (n, pct, f"weight 1/{i + 1}, {counted(per_tenant.get(BudgetPath(n), 0), 'job')}")
            for i, (n, pct) in enumerate(zip(names, percents, strict=True))
        ],
        notes=[
            f"tenants assigned by a seeded rule (the trace has none): "
            f"{counted(tenants, 'tenant')}, "
            f"Zipf weights 1/i, job -> tenant by SHA-256 of (seed {rule.seed}, job_id)",
            f"cluster sized to the {PERCENTILE * 100:g}th percentile of concurrent demand if "
            f"every job started at submission ({counted(demand, 'GPU')}) and the largest job "
            f"({counted(largest, 'GPU')}), in hosts of {GPUS_PER_HOST}",
        ],
        attribution=ATTRIBUTION,
    )
    return TraceImport(tuple(jobs), lab, summary)


def concurrent_demand_percentile(
    jobs: list[tuple[float, float, int]], fraction: float = PERCENTILE
) -> int:
    """The smallest GPU count D such that, for at least `fraction` of the time from the first
    submission to the last completion, the GPUs of the jobs running (each job (submitted,
    duration, gpus) running from its submission for its duration) are at most D."""
    events: Counter[float] = Counter()
    for submitted, duration, gpus in jobs:
        events[submitted] += gpus
        events[submitted + duration] -= gpus
    time_at: Counter[int] = Counter()
    level = 0
    times = sorted(events)
    for t, t_next in zip(times, times[1:], strict=False):
        level += events[t]
        time_at[level] += int(round((t_next - t) * 1000))  # milliseconds, summed exactly
    span = sum(time_at.values())
    if span == 0:
        return max((g for _, _, g in jobs), default=0)
    covered = 0
    for demand in sorted(time_at):
        covered += time_at[demand]
        if covered >= fraction * span:
            return demand
    return max(time_at)


def _check_kind(source: Path, path: Path) -> None:
    """Bad input, saying what is missing, when `source` is no ITP trace (naming the importer
    it looks made for: a Philly trace)."""
    from alloc.traces.sniff import looks_like, not_a

    if source.is_dir() and not path.exists():  # a folder of that name: said below
        raise not_a(
            "itp",
            source,
            f"it holds no {DEFAULT_FILE} (give an ITP cluster's CSV, e.g. cluster02.csv, or a "
            f"folder holding {DEFAULT_FILE})",
        )
    if path.is_file() and looks_like(path) == "philly":
        raise not_a("itp", path, f"its columns are not ITP's ({','.join(COLUMNS)})")


def _read(path: Path) -> tuple[list[Row], dict[str, int], int]:
    """(rows kept, dropped rows by reason, data rows read)."""
    file = str(path)
    rows: list[Row] = []
    dropped: Counter[str] = Counter()
    seen: dict[str, int] = {}
    total = 0
    for line, row in read_rows(path, COLUMNS):
        total += 1
        job_id = row["job_id"]
        if not job_id:
            raise InputError(file, "job_id", "empty job id", line)
        if job_id in seen:
            raise InputError(file, "job_id", f"{job_id!r} also on line {seen[job_id]}", line)
        seen[job_id] = line
        submitted = number(row, "submission_time", file, line)
        duration = number(row, "duration", file, line)
        gpus = whole(row, "num_gpu", file, line)
        if duration == 0:
            dropped["duration 0"] += 1
        elif gpus == 0:
            dropped["num_gpu 0"] += 1
        else:
            rows.append((submitted, line, job_id, duration, gpus))
    return rows, dict(dropped), total
