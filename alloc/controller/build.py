"""What a controller config builds: its executor, and the live view of a round (the cluster as
the executor shows it, with the fair-share usage of the controller's own ledger)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace
from typing import TYPE_CHECKING

from alloc.adapters.base import Executor
from alloc.controller.budgets import with_shares
from alloc.controller.state import Run, StateStore
from alloc.domain import BudgetTree, Snapshot
from alloc.io import InputError
from alloc.io.controller_config import ControllerSettings

if TYPE_CHECKING:
    from alloc.adapters.kubernetes.api import KubeApi
    from alloc.adapters.kubernetes.read import KubeSite


def live_snapshot(
    executor: Executor,
    store: StateStore,
    budgets: BudgetTree | None = None,
    open_runs: Sequence[Run] | None = None,
) -> Snapshot:
    """The cluster now as the controller's next round would see it (read-only: status,
    explain, queue). That round first records in its ledger the work it sees running; work
    started since the last round (by that round's own plan, or by hand) is not in the ledger
    yet, so its charged time is added here as that sighting would add it, without writing it.
    `open_runs`: the ledger's open runs, when the caller has read them already."""
    snapshot = controller_view(executor.snapshot(), store, budgets)
    unseen = unseen_runs(snapshot, store, open_runs)
    if not unseen:
        return snapshot
    now_s = snapshot.now.timestamp()
    start = now_s - snapshot.policy.lookback_s
    usage = dict(snapshot.usage_gpu_hours)
    for r in unseen:
        if r.charged and r.budget is not None and r.started_s < now_s:
            hours = r.gpus * (now_s - max(r.started_s, start)) / 3600.0
            usage[r.budget] = usage.get(r.budget, 0.0) + hours
    return replace(snapshot, usage_gpu_hours=usage)


def unseen_runs(
    snapshot: Snapshot, store: StateStore, open_runs: Sequence[Run] | None = None
) -> list[Run]:
    """The runs of the work running in `snapshot` that the ledger has not seen yet (it opens
    a run when a round sees it running: the round after its start); `open_runs`: the
    ledger's open runs, when the caller has read them already (else read here)."""
    from alloc.policy.contract import allocated_in

    known = {r.key for r in (store.open_runs() if open_runs is None else open_runs)}
    running = [
        Run(w.id, w.started.timestamp(), w.budget, w.gpus, allocated_in(snapshot.budgets, w))
        for w in snapshot.workloads
        if w.started is not None
    ]
    return [r for r in running if r.key not in known]


def controller_view(
    snapshot: Snapshot, store: StateStore, budgets: BudgetTree | None = None
) -> Snapshot:
    """The snapshot with what the controller owns: the budget tree (the config's, with the
    shares managers changed since: alloc budgets set), the window's usage from its own
    ledger and which running work its plans started as backfill."""
    tree = with_shares(budgets, store.shares()) if budgets is not None else snapshot.budgets
    usage = store.window_gpu_hours(snapshot.now.timestamp(), snapshot.policy.lookback_s)
    # Work started as backfill yields to its gangs (models/round.md 8.5): what its start
    # named is in the controller's own record of its plans, not in the cluster.
    leases = store.leases(w.id for w in snapshot.workloads if w.running)
    workloads = snapshot.workloads
    if leases:
        workloads = tuple(
            replace(w, backfill_for=leases[w.id]) if w.id in leases else w for w in workloads
        )
    return replace(snapshot, budgets=tree, usage_gpu_hours=usage, workloads=workloads)


def kubernetes_site(settings: ControllerSettings) -> KubeSite:
    """How the config's Kubernetes cluster maps to alloc's terms (its `kubernetes:` part)."""
    from alloc.adapters.kubernetes.read import KubeSite

    k = settings.kubernetes
    return KubeSite(**{f.name: getattr(k, f.name) for f in fields(KubeSite)})


def kubernetes_api(settings: ControllerSettings) -> KubeApi:
    """The client of the config's Kubernetes API (no call made yet); bad settings raise
    InputError."""
    from alloc.adapters.kubernetes.api import KubeApi, KubeConnection

    k = settings.kubernetes
    try:
        import kubernetes  # noqa: F401 - the client, an extra of the package
    except ImportError:
        raise InputError(
            settings.file,
            "executor",
            "the Kubernetes client is not installed: pip install 'alloc[kubernetes]' "
            "(or -e '.[kubernetes]' in a clone)",
        ) from None
    try:
        return KubeApi(KubeConnection(k.kubeconfig, k.context, k.timeout_s, k.attempts))
    except Exception as e:  # the client's config errors: a missing or unreadable file
        raise InputError(settings.file, "kubernetes", f"cannot connect: {e}") from None


def executor_for(
    settings: ControllerSettings, kind: str | None = None, existing: bool = False
) -> Executor:
    """The executor `kind` names (default: the config's): slurm, kubernetes, or a simulated
    cluster kept in a file. Bad settings raise InputError. `existing`: for a read-only
    command, which creates nothing: once its lab and trace are read, a simulated cluster's
    state and file must be there (alloc.controller.opening)."""
    kind = kind or settings.executor
    if kind == "slurm":
        from alloc.adapters.slurm import SlurmExecutor, SlurmSite
        from alloc.adapters.slurm.commands import SlurmCommands

        s = settings.slurm
        site = SlurmSite(s.accounts, s.partitions, s.block_prefix, s.rack_prefix, s.retire_reason)
        commands = SlurmCommands(timeout_s=s.command_timeout_s, attempts=s.attempts)
        return SlurmExecutor(site, settings.budgets, settings.policy, commands, settings.name)
    if kind == "kubernetes":
        from alloc.adapters.kubernetes.executor import KubernetesExecutor

        return KubernetesExecutor(
            kubernetes_site(settings),
            settings.budgets,
            kubernetes_api(settings),
            settings.policy,
            settings.name,
        )
    if kind == "sim":
        from alloc.adapters.simcluster import SimCluster
        from alloc.io import load_instance
        from alloc.io.trace_csv import read_trace

        if settings.sim is None:
            raise InputError(settings.file, "sim", "executor sim needs `sim: {lab:, trace:}`")
        lab = load_instance(settings.sim.lab)
        if lab.workloads:
            raise InputError(
                str(settings.sim.lab),
                "workloads",
                "the simulated cluster starts empty: give its work in the trace",
            )
        lab = replace(lab, policy=settings.policy, budgets=settings.budgets)
        types = frozenset(h.gpu_type for h in lab.cluster.hosts)
        jobs = read_trace(
            settings.sim.trace, lab.budgets, lab.policy.max_min_runtime_s, settings.file, types
        )
        if existing:
            from alloc.controller.opening import check_cluster, check_state

            check_state(settings, existing=True)
            check_cluster(settings)
        return SimCluster(settings.sim.cluster, lab, jobs, settings.sim.step_s)
    raise InputError("--executor", "", f"expected slurm, kubernetes or sim, got {kind!r}")
