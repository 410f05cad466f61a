"""`alloc trace import philly|itp SOURCE -o TRACE.csv [--lab LAB.yaml]`: a real trace -> our trace
CSV (SPEC.md, "Trace") and, with --lab, a matching instance. Thin: the rules live in
`alloc.traces`. Bad input exits 2 naming the file, the line and the field; nothing is written
unless both outputs could be made."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alloc.cli.commands import Command, Subcommands
from alloc.cli.common import check_writable, guarded, out, say_written, write_atomically
from alloc.cli.params import choice, number, whole
from alloc.io.errors import InputError
from alloc.printable import shown
from alloc.readable import count, counted, duration

if TYPE_CHECKING:  # the trace readers load when the command runs
    from alloc.traces import ImportSummary

trace_app = typer.Typer(
    cls=Subcommands,
    rich_markup_mode=None,
    add_completion=False,
    no_args_is_help=True,
    help="Real GPU-cluster traces -> trace CSV (and a matching lab).",
)


class Source(StrEnum):
    PHILLY = "philly"
    ITP = "itp"


@trace_app.command(
    "import", cls=Command, short_help="Convert a real trace into a trace CSV (and a lab)."
)
def import_trace(
    ctx: typer.Context,
    kind: Annotated[Source, choice(Source, help="philly or itp.")],
    source: Annotated[
        Path,
        typer.Argument(
            help="philly: the philly-sia folder (or its philly.csv); "
            "itp: one cluster CSV (a folder means its cluster01.csv)."
        ),
    ],
    output: Annotated[
        Path, typer.Option("-o", "--output", metavar="FILE", help="The trace CSV to write.")
    ],
    lab: Annotated[
        Path | None,
        typer.Option("--lab", metavar="FILE", help="Also write a matching instance YAML."),
    ] = None,
    gpus_per_node: Annotated[int, whole(min=1, help="philly only: GPUs per node.")] = 8,
    tenants: Annotated[int, whole(min=1, help="itp only: tenants to assign.")] = 8,
    seed: Annotated[int, whole(help="Seed of the minimum-runtime and tenant draws.")] = 1,
    unallocated: Annotated[
        float,
        number(
            min=0.0, max=1.0, metavar="FRACTION", help="Fraction of jobs with minimum runtime 0."
        ),
    ] = 0.1,
) -> None:
    """Convert a real trace into a trace CSV; print what was imported, dropped and assumed."""
    from alloc.io import dump_instance, parse_instance
    from alloc.io.trace_csv import parse_trace, trace_text
    from alloc.traces import MinRuntimeRule, import_itp, import_philly
    from alloc.traces.itp import raw_files as itp_files
    from alloc.traces.philly import raw_files as philly_files

    # Given on the command line (not their defaults): each applies to one source only.
    given = {
        name: value
        for name, value in (("--gpus-per-node", gpus_per_node), ("--tenants", tenants))
        if getattr(ctx.get_parameter_source(name[2:].replace("-", "_")), "name", "") != "DEFAULT"
    }

    def act() -> None:
        if kind is Source.PHILLY and "--tenants" in given:
            raise InputError("--tenants", "", "applies to itp only (Philly has its own VCs)")
        if kind is Source.ITP and "--gpus-per-node" in given:
            raise InputError("--gpus-per-node", "", "applies to philly only (ITP hosts have 8)")
        if lab is not None and lab.resolve() == output.resolve():
            raise InputError("--lab", "", f"the same file as -o ({output})")
        raw = {
            p.resolve()
            for p in (philly_files(source) if kind is Source.PHILLY else itp_files(source))
        }
        for option, path in (("--output", output), ("--lab", lab)):
            if path is not None and path.resolve() in raw:
                raise InputError(
                    option, "", f"{path} would overwrite the raw trace it is imported from"
                )
        check_writable("--output", output)
        if lab is not None:
            check_writable("--lab", lab)
        rule = MinRuntimeRule(unallocated=unallocated, seed=seed)
        if kind is Source.PHILLY:
            result = import_philly(source, gpus_per_node, rule)
        else:
            result = import_itp(source, tenants, rule)
        trace = trace_text(result.jobs)
        # Both outputs must read back as valid input before either is written.
        parse_trace(trace, str(output), result.lab.budgets, result.lab.policy.max_min_runtime_s)
        lab_text = None
        if lab is not None:
            command = f"alloc trace import {kind.value} {source} -o {output} --lab {lab}"
            options = {**given, "--seed": seed, "--unallocated": unallocated}
            command += "".join(f" {k} {v:g}" for k, v in options.items())
            lab_text = dump_instance(result.lab, _header(command, result.summary.attribution))
            parse_instance(lab_text, str(lab))
        write_atomically(output, trace)
        if lab is not None and lab_text is not None:
            try:
                write_atomically(lab, lab_text)
            except BaseException:
                output.unlink(missing_ok=True)
                raise
        for line in summary_lines(kind.value, result.summary):
            out.print(shown(line), markup=False, highlight=False, soft_wrap=True)
        say_written("trace", output)
        if lab is not None:
            say_written("lab", lab)

    guarded(act)


def _header(command: str, attribution: str | None) -> str:
    lines = [f"imported by: {command}"]
    if attribution:
        lines.append(f"data: {attribution}")
    lines.append("rules: see alloc/traces (minimum runtimes, tenants, cluster size)")
    return "\n".join(lines)


def summary_lines(kind: str, s: ImportSummary) -> list[str]:
    """The printed summary of an import."""
    dropped = sum(s.dropped.values())
    why = ", ".join(f"{count(n)} {reason}" for reason, n in sorted(s.dropped.items()))
    kinds = ", ".join(f"{count(s.kinds.get(k, 0))} {k}" for k in ("debug", "train", "unallocated"))
    handed = sum(p for _, p, _ in s.budgets)
    lines = [
        f"{kind}: {counted(s.imported, 'job')} imported from {s.source} "
        f"({counted(s.rows, 'row')}; "
        + (f"{count(dropped)} dropped: {why})" if dropped else "none dropped)"),
        f"  jobs: {kinds} (minimum runtime 0 = unallocated)",
        f"  cluster: {counted(s.hosts, 'host')} x {counted(s.gpus_per_host, 'GPU')} = "
        f"{counted(s.gpus, 'GPU')}; submissions over {duration(s.span_days * 86400)}",
        f"  larger than the whole cluster: {count(s.too_large)} (kept; they wait too_large); "
        f"larger than one block: {count(s.wider_than_block)}",
        f"  budgets: {counted(len(s.budgets), 'leaf', 'leaves')}, {handed:.3f}% of the cluster "
        "handed out",
    ]
    width = max(len(name) for name, _, _ in s.budgets)
    lines += [f"    {name:<{width}}  {pct:7.3f}%  {why}" for name, pct, why in s.budgets]
    lines += [f"  note: {n}" for n in s.notes]
    if s.attribution:
        lines.append(s.attribution)
    return lines
