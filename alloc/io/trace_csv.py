"""Trace CSV <-> TraceJob (SPEC.md, "Trace"): one row per submission,
`id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology` and optionally
`util`, `kind`, `gpu_type` (the GPU type the job needs; empty: any). `submitted` and `runtime`
are seconds; `min_runtime` is seconds or a duration (`15m`, `4h`). Every problem names the file,
the line and the field."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from pathlib import Path

from alloc.domain import BudgetPath, BudgetTree, Topology, TraceJob, WorkloadId
from alloc.io.durations import format_duration, parse_duration
from alloc.io.errors import InputError
from alloc.io.limits import bounded_rows, limits, read_input, setting
from alloc.io.names import check_row

COLUMNS = (
    "id",
    "budget",
    "gpus",
    "submitted",
    "runtime",
    "min_runtime",
    "resumable",
    "priority",
    "topology",
)
OPTIONAL = ("util", "kind", "gpu_type")
PRIORITY_BOUND = 1_000_000  # as in an instance (alloc.io.schema.WorkloadIn.priority)
TRUE = {"1", "true", "yes", "y", "t"}
FALSE = {"0", "false", "no", "n", "f"}


def read_trace(
    path: str | Path,
    budgets: BudgetTree | None = None,
    max_min_runtime_s: float | None = None,
    tree_source: str = "the lab",
    gpu_types: frozenset[str] | None = None,
    taken_ids: frozenset[str] = frozenset(),
) -> list[TraceJob]:
    """Read and check a trace; with `budgets` (of `tree_source`, named in messages), every
    budget must be a leaf of that tree, with `max_min_runtime_s`, no minimum runtime may
    exceed it, with `gpu_types`, a job's GPU type must be one of them, and no job may have
    an id in `taken_ids` (the lab's own workloads)."""
    file = str(path)
    text = read_input(path, "utf-8-sig", "a CSV file")  # a BOM (Excel writes one) is no column
    return parse_trace(text, file, budgets, max_min_runtime_s, tree_source, gpu_types, taken_ids)


def parse_trace(
    text: str,
    file: str = "<trace>",
    budgets: BudgetTree | None = None,
    max_min_runtime_s: float | None = None,
    tree_source: str = "the lab",
    gpu_types: frozenset[str] | None = None,
    taken_ids: frozenset[str] = frozenset(),
) -> list[TraceJob]:
    if not text.removeprefix("\ufeff").strip():
        raise InputError(
            file,
            "",
            f"the file is empty (a trace has a header line, {','.join(COLUMNS)}, then a line "
            "per job)",
        )
    reader = csv.DictReader(io.StringIO(text.removeprefix("\ufeff")))
    header = reader.fieldnames or []
    check_row(((f"header column {i + 1}", c) for i, c in enumerate(header)), file, 1)
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise InputError(
            file,
            "",
            f"missing columns {', '.join(missing)} (a trace has "
            f"{','.join(COLUMNS)} and optionally {','.join(OPTIONAL)})",
            1,
        )
    unknown = [c for c in header if c not in COLUMNS + OPTIONAL]
    if unknown:
        raise InputError(file, "", f"unknown columns {', '.join(unknown)}", 1)
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise InputError(file, twice[0], "this column is in the header twice", 1)
    jobs: list[TraceJob] = []
    seen: dict[str, int] = {}
    ended = reader.line_num  # the line the previous row ended on
    for row in bounded_rows(reader, file):
        line, began = reader.line_num, ended + 1
        ended = line
        for name, value in row.items():
            if value is not None and "\n" in value:
                raise InputError(
                    file,
                    name or "",
                    "a quote is not closed (the field runs on to the next lines)",
                    began,
                )
        check_row(row.items(), file, line)
        job = _job(row, file, line, budgets, max_min_runtime_s, tree_source)
        if gpu_types is not None and job.gpu_type is not None and job.gpu_type not in gpu_types:
            raise InputError(
                file,
                "gpu_type",
                f"no host of {tree_source} has {job.gpu_type!r} GPUs "
                f"(it has {', '.join(sorted(gpu_types))})",
                line,
            )
        if job.id in seen:
            raise InputError(file, "id", f"job id {job.id!r} also on line {seen[job.id]}", line)
        if job.id in taken_ids:
            raise InputError(
                file, "id", f"job id {job.id!r} is also a workload of {tree_source}", line
            )
        seen[job.id] = line
        jobs.append(job)
    return sorted(jobs, key=lambda j: (j.submitted_s, j.id))


def _job(
    row: dict[str, str | None],
    file: str,
    line: int,
    budgets: BudgetTree | None,
    max_min_runtime_s: float | None,
    tree_source: str,
) -> TraceJob:
    def field(name: str) -> str:
        value = row.get(name)
        if value is None:
            raise InputError(file, name, "the row has too few columns", line)
        return value.strip()

    def number(name: str, minimum: float = 0.0) -> float:
        text = field(name)
        try:
            value = float(text)
        except ValueError:
            raise InputError(
                file, name, f"expected a number of seconds, got {text!r}", line
            ) from None
        if not math.isfinite(value):
            raise InputError(file, name, f"expected a finite number of seconds, got {text!r}", line)
        if value > limits().seconds:
            raise InputError(
                file, name, f"{text} seconds is more than ten years, the most alloc reads", line
            )
        if value < minimum:
            raise InputError(file, name, f"must be at least {minimum:g}, got {text!r}", line)
        return value

    if None in row:
        raise InputError(file, "", "the row has more columns than the header", line)

    job_id = field("id")
    if not job_id:
        raise InputError(file, "id", "empty job id", line)
    budget_text = field("budget").strip("/")
    budget = BudgetPath(budget_text) if budget_text else None
    if budget is not None and budgets is not None:
        if budget not in budgets and budget == budgets.root.name:
            from alloc.io.budgets_in import root_named  # pydantic's schema: only on this error

            raise InputError(file, "budget", root_named(budget, budgets, leaf=True), line)
        if budget not in budgets:
            raise InputError(
                file,
                "budget",
                f"unknown budget node {budget!r} (not in the budget tree of {tree_source})",
                line,
            )
        if not budgets.node(budget).is_leaf:
            from alloc.io.budgets_in import leaves_below  # as root_named

            message = (
                f"{budget!r} is not a leaf of the budget tree; "
                f"work is charged to a leaf, such as {leaves_below(budget, budgets)}"
            )
            raise InputError(file, "budget", message, line)
    gpus_text = field("gpus")
    if not (gpus_text.isascii() and gpus_text.isdigit()) or int(gpus_text) <= 0:
        raise InputError(file, "gpus", f"expected a positive whole number, got {gpus_text!r}", line)
    if int(gpus_text) > limits().gpus:
        raise InputError(
            file,
            "gpus",
            f"{int(gpus_text):,} GPUs, more than the {limits().gpus:,} of the largest cluster "
            f"alloc reads{setting('gpus')}",
            line,
        )
    runtime = number("runtime", -math.inf)  # one message for zero and below: above 0
    if runtime <= 0:
        raise InputError(
            file, "runtime", f"must be above 0 seconds, got {field('runtime')!r}", line
        )
    try:
        min_runtime = parse_duration(field("min_runtime"))
    except ValueError as exc:
        raise InputError(file, "min_runtime", str(exc), line) from None
    if max_min_runtime_s is not None and min_runtime > max_min_runtime_s:
        raise InputError(
            file,
            "min_runtime",
            f"{format_duration(min_runtime)} is above max_min_runtime "
            f"({format_duration(max_min_runtime_s)})",
            line,
        )
    resumable_text = field("resumable").lower()
    if resumable_text not in TRUE | FALSE | {""}:
        raise InputError(file, "resumable", f"expected true or false, got {resumable_text!r}", line)
    priority_text = field("priority") or "0"
    try:
        priority = int(priority_text)
    except ValueError:
        raise InputError(
            file, "priority", f"expected a whole number, got {priority_text!r}", line
        ) from None
    if abs(priority) > PRIORITY_BOUND:
        raise InputError(
            file,
            "priority",
            f"expected a whole number from -{PRIORITY_BOUND:,} to {PRIORITY_BOUND:,}, "
            f"got {priority_text!r}",
            line,
        )
    topology_text = field("topology").lower()
    if topology_text not in ("", "block", "any"):
        raise InputError(file, "topology", f"expected block or any, got {topology_text!r}", line)
    util: float | None = None
    if row.get("util"):
        util = number("util")
        if util > 1:
            raise InputError(file, "util", f"a utilisation is between 0 and 1, got {util:g}", line)
    return TraceJob(
        id=WorkloadId(job_id),
        budget=budget,
        gpus=int(gpus_text),
        submitted_s=number("submitted"),
        runtime_s=runtime,
        min_runtime_s=min_runtime,
        resumable=resumable_text not in FALSE,
        priority=priority,
        topology=Topology(topology_text) if topology_text else None,
        util=util,
        kind=(row.get("kind") or "").strip() or None,
        gpu_type=(row.get("gpu_type") or "").strip() or None,
    )


def write_trace(jobs: Iterable[TraceJob], out: io.TextIOBase | io.StringIO) -> None:
    """The `gpu_type` column is written only when some job names a type."""
    jobs = list(jobs)
    typed = any(j.gpu_type for j in jobs)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS + (OPTIONAL if typed else OPTIONAL[:-1]))
    for j in jobs:
        writer.writerow(
            [
                j.id,
                j.budget or "",
                j.gpus,
                _seconds(j.submitted_s),
                _seconds(j.runtime_s),
                _duration(j.min_runtime_s),
                "true" if j.resumable else "false",
                j.priority,
                j.topology.value if j.topology else "",
                "" if j.util is None else f"{j.util:g}",
                j.kind or "",
                *([j.gpu_type or ""] if typed else []),
            ]
        )


def _seconds(value: float) -> str:
    """Exact: `{:g}` keeps 6 digits, so 2240194 s would come back as 2240190 s."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _duration(seconds: float) -> str:
    """`8h`, `15m` when exact, else the seconds themselves."""
    text = format_duration(seconds)
    return text if parse_duration(text) == seconds else _seconds(seconds)


def trace_text(jobs: Iterable[TraceJob]) -> str:
    buffer = io.StringIO()
    write_trace(jobs, buffer)
    return buffer.getvalue()
