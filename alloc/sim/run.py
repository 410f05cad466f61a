"""One simulation run from plain inputs (texts, paths, numbers), so that `alloc whatif` can run
several in parallel processes; writes the run's output folder, that of a partial run too (one
asked to stop before its end: every file says so, see `alloc.metrics.pyramid`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

from alloc.domain import Snapshot, TraceJob
from alloc.io import InputError, parse_instance
from alloc.io.durations import format_duration
from alloc.io.files import write_atomically
from alloc.io.trace_csv import read_trace
from alloc.io.yaml_source import line_of, read_yaml
from alloc.ledger import SQLiteStore
from alloc.report.data import PLOTS
from alloc.sim.baselines import LegacyConfig
from alloc.sim.engine import OnProgress, SimConfig, SimResult, Simulation
from alloc.sim.hosts import FailureModel, read_host_events
from alloc.sim.output import WRITTEN, write_run
from alloc.sim.policies import KEEPS_CONTRACT, SKIPS_QUIET, PolicyOptions, planner
from alloc.sim.synthetic import SyntheticLab, synthetic_trace


@dataclass(frozen=True, slots=True)
class RunSpec:
    label: str
    lab_yaml: str  # the lab instance, as YAML text
    lab_file: str  # where it came from, for messages
    policy: str
    days: float
    out: str
    trace: str | None = None  # a trace CSV; None: the synthetic generator
    seed: int = 1
    round_interval_s: float = 300.0
    min_round_gap_s: float = 10.0
    checkpoint_interval_s: float | None = None
    mtbf_h: float | None = None
    repair_h: float = 8.0
    host_events: str | None = None
    time_limit_s: float | None = None
    ledger: str = ":memory:"
    start_s: float = 0.0  # replay the trace from this offset after the lab's now (cold start)
    legacy_top: float = 0.8  # legacy-priority: fraction of submissions at the highest level
    legacy_cap: float = 1.0  # legacy-priority: non-preemptible GPUs per team / its share
    credit: str | None = None
    rounds: str = "events"  # events: passes between full rounds | full: a full round each time
    validate_passes: bool = False  # also validate every pass's whole plan from scratch
    extra: dict[str, Any] = field(default_factory=dict)


# What a run writes into its folder (`run`): the data, the lab it ran, the plots, the report.
RUN_FILES = (*WRITTEN, "lab.yaml", *PLOTS, "report.html")

Inputs = tuple[Snapshot, list[TraceJob]]  # the lab and the jobs of its trace


class NothingSimulated(Exception):
    """The run was asked to stop before any simulated time passed: nothing was written."""


def load_inputs(spec: RunSpec) -> Inputs:
    """The lab and its trace, checked, and the host events file if any (bad input raises
    InputError naming file, line, field), before a command says what it will replace."""
    lab = parse_instance(spec.lab_yaml, spec.lab_file)
    if spec.host_events:
        read_host_events(spec.host_events, {str(h.name) for h in lab.cluster.hosts})
    for i, w in enumerate(lab.workloads):
        if w.runtime_s is None:
            _, lines = read_yaml(spec.lab_yaml, spec.lab_file)
            raise InputError(
                spec.lab_file,
                f"workloads[{i}].runtime",
                f"workload {w.id!r} is {'running' if w.started else 'queued'} but states no "
                f"runtime: the simulation needs the work it {'still has' if w.started else 'has'}"
                " to do (e.g. runtime: 2h)",
                line_of(lines, ("workloads", i)),
            )
    if spec.trace is None:
        jobs = synthetic_trace(lab, SyntheticLab(days=spec.days, seed=spec.seed))
    else:
        types = frozenset(h.gpu_type for h in lab.cluster.hosts)
        jobs = read_trace(
            spec.trace,
            lab.budgets,
            lab.policy.max_min_runtime_s,
            spec.lab_file,
            types,
            taken_ids=frozenset(w.id for w in lab.workloads),
        )
        if spec.start_s:
            lab, jobs = _from(lab, jobs, spec.start_s)
    return lab, jobs


def _as_run(spec: RunSpec) -> str:
    """A comment for the run's copy of the lab: the run options that change what the rounds
    decide and the lab does not say (the policy may differ from the lab's `policy.solver`);
    metrics.json has the rest (trace, failures, intervals)."""
    options = [f"--policy {spec.policy}", f"--days {spec.days:g}", f"--seed {spec.seed}"]
    if spec.rounds != "events":
        options.append(f"--rounds {spec.rounds}")
    if spec.start_s:
        options.append(f"--start {format_duration(spec.start_s)}")
    if spec.checkpoint_interval_s is not None:
        options.append(f"--checkpoint {format_duration(spec.checkpoint_interval_s)}")
    return f"# alloc simulate ran this lab with {' '.join(options)}\n"


def _from(lab: Snapshot, jobs: list[TraceJob], start_s: float) -> tuple[Snapshot, list[TraceJob]]:
    """The replay from `start_s` on: the lab's clock moves there, the cluster starts empty,
    jobs submitted before are left out and the others keep their dates."""
    if lab.workloads:
        raise InputError(
            "--start",
            "",
            "the lab's workloads run at its own now: replaying from later needs a lab without "
            "workloads (the cluster starts empty)",
        )
    later = [
        replace(j, submitted_s=j.submitted_s - start_s) for j in jobs if j.submitted_s >= start_s
    ]
    if jobs and not later:
        last = format_duration(max(j.submitted_s for j in jobs))
        raise InputError(
            "--start",
            "",
            f"no job is submitted after it: the trace's last submission is {last} after the "
            "lab's now",
        )
    return replace(lab, now=lab.now + timedelta(seconds=start_s)), later


def simulate(
    spec: RunSpec,
    lab: Snapshot,
    jobs: list[TraceJob],
    progress: OnProgress | None,
    stop: Callable[[], bool] | None = None,
) -> SimResult:
    hosts = {str(h.name) for h in lab.cluster.hosts}
    config = SimConfig(
        days=spec.days,
        round_interval_s=spec.round_interval_s,
        min_round_gap_s=spec.min_round_gap_s,
        checkpoint_interval_s=spec.checkpoint_interval_s,
        failures=(FailureModel(spec.mtbf_h, spec.seed) if spec.mtbf_h else None),
        host_events=tuple(read_host_events(spec.host_events, hosts)) if spec.host_events else (),
        repair_h=spec.repair_h,
        keeps_contract=spec.policy in KEEPS_CONTRACT,
        skip_quiet_rounds=spec.policy in SKIPS_QUIET,
        rounds=spec.rounds,
        validate_passes=spec.validate_passes,
    )
    legacy = LegacyConfig(inflation=spec.legacy_top, cap=spec.legacy_cap, seed=spec.seed)
    plan = planner(spec.policy, PolicyOptions(time_limit_s=spec.time_limit_s, legacy=legacy))
    return Simulation(lab, jobs, plan, config, SQLiteStore(spec.ledger)).run(progress, stop)


def run(
    spec: RunSpec,
    progress: OnProgress | None = None,
    inputs: Inputs | None = None,
    stop: Callable[[], bool] | None = None,
    writing: OnProgress | None = None,
) -> dict[str, Any]:
    """Load (unless `inputs`: `load_inputs(spec)` already read), simulate, write the
    timelines, metrics.json, the lab it ran, the plots and report.html. When `stop()` says so
    the simulation ends early and what it covered is written as a partial run; raises
    NothingSimulated, writing nothing, if that was before any simulated time passed.
    `writing` is told, once, when the simulation is over and the files are being written:
    the simulated time it reached, its full rounds and event passes."""
    lab, jobs = inputs if inputs is not None else load_inputs(spec)
    result = simulate(spec, lab, jobs, progress, stop)
    if result.partial and result.horizon_s <= 0:
        raise NothingSimulated(spec.label)
    if writing is not None:
        writing(result.horizon_s, result.rounds, result.passes)
    out = Path(spec.out)
    extra = {"label": spec.label, "trace": spec.trace or "synthetic", **spec.extra}
    if spec.credit:
        extra["credit"] = spec.credit
    metrics = write_run(result, out, spec.policy, spec.seed, extra)
    write_atomically(out / "lab.yaml", _as_run(spec) + spec.lab_yaml)
    from alloc.report import write_report

    write_report(out, f"alloc simulate: {spec.label}", spec.credit)  # and the plots it shows
    return metrics
