"""What-if scenarios: a YAML file with a `budgets:` tree and optionally `policy:` overrides and
`usage:`, applied to a lab instance (SPEC.md, `alloc whatif --scenario`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from alloc.domain import Policy, Snapshot
from alloc.io.budgets_in import budget_tree, policy_from, usage_from
from alloc.io.reporter import first_error, load_model
from alloc.io.schema import PolicyIn, ScenarioIn


def load_scenario(path: str | Path, base: Snapshot) -> tuple[str, Snapshot]:
    """The scenario's name (its `name:` or the file's stem) and the lab it makes."""
    raw, report = load_model(
        path, ScenarioIn, "a scenario is a mapping with budgets (and policy, usage)"
    )
    tree = budget_tree(raw.budgets, report)
    try:
        policy = policy_from(PolicyIn.model_validate({**_as_input(base.policy), **raw.policy}))
    except ValidationError as exc:
        raise first_error(exc, report, ("policy",), PolicyIn) from None
    if raw.usage is not None:
        usage = usage_from(raw.usage, tree, report)
    else:
        # The lab's usage carries over for the nodes the new tree still has.
        usage = {p: h for p, h in base.usage_gpu_hours.items() if p in tree}
    name = raw.name or Path(path).stem
    return name, replace(base, budgets=tree, policy=policy, usage_gpu_hours=usage)


def _as_input(p: Policy) -> dict[str, Any]:
    return {
        "lookback": p.lookback_s,
        "max_min_runtime": p.max_min_runtime_s,
        "solver": p.solver,
        "time_limit": p.time_limit_s,
        "threads": p.threads,
        "seed": p.seed,
        "mip_gap": p.mip_gap,
        "backend": p.backend,
        "fairshare_horizon": p.fairshare_horizon_s,
        "checkpoint_interval": p.checkpoint_interval_s,
    }
