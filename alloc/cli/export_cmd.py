"""`alloc export PLAN.json --to slurm|kubernetes [-o DIR] [--config CONTROLLER.yaml] [--apply]`:
a plan as the actions of a cluster manager, for people who review them before anything acts.

A dry run by default: the actions are printed (or written into DIR) and nothing is run. With
`--config` the cluster of a controller config is read (read only) and the actions are exactly
those its executor would take now; without it, each job is taken to be in the state the plan
implies. `--apply` runs them against that cluster and reports each one. Each target is one
exporter in EXPORTERS, called with an ExportRequest.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from alloc.cli.common import MissingInput, check_writable, err, guarded, out, write_atomically
from alloc.cli.export_k8s import export_kubernetes
from alloc.io.errors import InputError
from alloc.readable import count, counted

if TYPE_CHECKING:
    from alloc.adapters.slurm import SlurmExecutor
    from alloc.domain import Plan

_JOB_ID = re.compile(r"\d+(?:[_+]\d+)?")  # a Slurm job id: 1234, an array task 1234_5, 1234+1


@dataclass(frozen=True, slots=True)
class ExportRequest:
    plan_file: Path
    plan: Plan  # loaded and checked for its shape (alloc.io.load_plan)
    output: Path | None  # an existing folder to write into; None: print to stdout
    config: Path | None  # a controller config: the cluster to read and, with apply, act on
    apply: bool  # run the actions (config is then given)
    cluster: Path | None = None  # Kubernetes: read this kubectl-get file, not the API


Exporter = Callable[[ExportRequest], int]  # the exit code: 0, or 1 when an action failed


def export(
    plan: Annotated[Path, typer.Argument(help="Plan JSON (alloc solve ... -o PLAN.json).")],
    to: Annotated[
        str,
        typer.Option("--to", metavar="MANAGER", help="The cluster manager: slurm or kubernetes."),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            metavar="DIR",
            help="Write into this existing folder (default: print).",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            help="Controller config: read its cluster and export what its executor would do now.",
        ),
    ] = None,
    apply: Annotated[
        bool, typer.Option("--apply", help="Run the actions on the cluster of --config.")
    ] = False,
    cluster: Annotated[
        Path | None,
        typer.Option(
            "--cluster",
            metavar="FILE",
            help="Kubernetes: read the cluster from this file (kubectl get nodes,pods,jobs,"
            "configmaps,poddisruptionbudgets -A -o json), not from the API of --config.",
        ),
    ] = None,
) -> None:
    """Export a plan as a cluster manager's actions (a Slurm script of scontrol commands, or
    Kubernetes API requests as YAML and a kubectl script);
    a dry run unless --apply."""

    def act() -> int:
        exporter = EXPORTERS.get(to)
        if exporter is None:
            known = " or ".join(EXPORTERS)
            raise InputError("--to", "", f"expected {known}, got {to!r}")
        if apply and config is None:
            raise MissingInput(
                "--config",
                "required with --apply: the controller config of the cluster to act on "
                "(without --apply nothing is run)",
            )
        if output is not None:
            check_writable("--output", output, folder=True, existing=True)
        if cluster is not None and to != "kubernetes":
            raise InputError("--cluster", "", "only for --to kubernetes")
        from alloc.io import load_plan

        return exporter(ExportRequest(plan, load_plan(plan), output, config, apply, cluster))

    code = guarded(act)
    if code:
        raise typer.Exit(code)


def export_slurm(request: ExportRequest) -> int:
    """A bash script of `scontrol` commands (alloc.adapters.slurm.script), written to
    DIR/alloc-plan.sh (mode 0755) or printed; with apply, run through SlurmCommands."""
    from alloc.adapters.shell import comment
    from alloc.adapters.slurm.actions import implied_by, plan_actions
    from alloc.adapters.slurm.script import SCRIPT_NAME, describe, slurm_script

    plan = request.plan
    _check_arguments(request.plan_file, plan)
    if request.config is None:
        executor = None
        actions = plan_actions(plan, implied_by(plan))
        source = [
            "cluster: not read (no --config); each job taken to be as the plan implies:",
            "to start: pending and held; to preempt: running; to wait: pending, so it is held.",
            "Drained hosts are marked at once, their own reasons (not known) replaced by alloc's.",
        ]
        _warn_unless_job_ids(plan)
    else:
        executor = _slurm_executor(request.config)
        actions = executor.actions(plan)
        read_at = datetime.now(UTC).isoformat(timespec="seconds")
        source = [f"cluster: as read from {request.config} at {read_at}"]
    script = slurm_script(plan, actions, source)
    written = None
    if request.output is not None:
        written = request.output / SCRIPT_NAME
        check_writable("--output", written)
        write_atomically(written, script, mode=0o755)
    doing = sum(1 for a in actions if a.steps)
    if not request.apply:
        if written is None:
            sys.stdout.write(script)
        else:
            message = f"{written}: {counted(doing, 'action')} (dry run: nothing was run)"
            out.print(message, markup=False, highlight=False)
        for a in actions:
            if not a.ok:
                err.print(f"warning: {describe(a)}", markup=False, highlight=False, soft_wrap=True)
        return 0
    assert executor is not None  # apply needs a config (checked by export)
    report = executor.carry_out(actions)
    lines = [
        (r.ok, f"job {comment(r.workload)}: {r.action.value}", r.detail) for r in report.results
    ]
    lines += [(h.ok, f"host {comment(h.host)}: drain", h.detail) for h in report.hosts]
    for ok, what, detail in lines:
        line = f"{'ok' if ok else 'failed':6}  {what}: {comment(detail)}"
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    failed = sum(1 for ok, _, _ in lines if not ok)
    out.print(f"{count(len(lines) - failed)} ok, {count(failed)} failed", highlight=False)
    return 1 if failed else 0


EXPORTERS: dict[str, Exporter] = {"slurm": export_slurm, "kubernetes": export_kubernetes}


def _slurm_executor(config: Path) -> SlurmExecutor:
    from alloc.adapters.slurm import SlurmExecutor
    from alloc.controller.build import executor_for
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    if settings.executor != "slurm":
        raise InputError(
            str(config),
            "executor",
            f"--to slurm reads a Slurm cluster, but this config's executor is "
            f"{settings.executor!r}",
        )
    executor = executor_for(settings, "slurm")
    assert isinstance(executor, SlurmExecutor)
    return executor


def _check_arguments(file: Path, plan: Plan) -> None:
    """Names become command arguments: one no argument can hold is bad input."""
    names: list[tuple[str, str]] = [
        (f"decisions[{i}].workload", d.workload) for i, d in enumerate(plan.decisions)
    ]
    names += [(f"decisions[{i}].hosts", h) for i, d in enumerate(plan.decisions) for h in d.hosts]
    names += [(f"drained_hosts[{i}]", h) for i, h in enumerate(plan.drained_hosts)]
    for where, name in names:
        if "\0" in name:
            raise InputError(str(file), where, "a NUL character: no command argument holds one")
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(str(file), where, "not valid Unicode (a lone surrogate)") from None


def _warn_unless_job_ids(plan: Plan) -> None:
    """Read from Slurm, ids are job ids; from a plan file they may be anything (an instance's
    names): say so before the script is run, as scontrol reads `12,13` as two jobs."""
    from alloc.domain import Action

    acting = [d.workload for d in plan.decisions if d.action is not Action.KEEP]
    odd = [w for w in acting if not _JOB_ID.fullmatch(w)]
    if odd:
        from alloc.adapters.shell import comment

        err.print(
            f"warning: {counted(len(odd), 'workload id')} "
            f"{'is not a Slurm job id' if len(odd) == 1 else 'are not Slurm job ids'} "
            f"(e.g. {comment(odd[0])}): "
            "scontrol will not find those jobs, or will read them otherwise",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
