"""The controller's configuration file (`alloc controller run --config FILE`), validated like an
instance: every error names the file, the line and the field.

```yaml
name: h100-west
executor: slurm            # slurm | kubernetes | sim (a simulated cluster in a file, below)
interval: 60s              # a round at least this often
event_poll: 2s             # and one early when the cluster changes (looked at this often; 0: off)
min_round_gap: 10s         # but not sooner than this after the last round
state: sqlite:////var/lib/alloc/state.db  # or postgresql://user@host/alloc (SQLAlchemy URL)
lease: 30s                 # the leader lease of the controllers sharing the state (default: the
                           # interval, from 1s to 30s; README "Failover")
policy: {solver: milp, time_limit: 10s}   # as in an instance
budgets:                   # the allocation tree, as in an instance
  name: lab
  children:
    - {name: nlp, share: 60%, owners: [pm-nlp]}
    - {name: vision, share: 40%}
slurm:
  accounts: {nlp-acct: nlp, vision-acct: vision}   # Slurm account -> budget path
  partitions: [gpu]        # managed partitions (default: all)
  block_prefix: block-     # node feature naming its network block
  rack_prefix: rack-
  command_timeout: 10s
  attempts: 3              # tries of a failing command, with backoff
kubernetes:                # executor kubernetes (alloc.adapters.kubernetes.read says the rest)
  kubeconfig: ~/.kube/config   # default: in-cluster, else $KUBECONFIG, else ~/.kube/config
  context: lab-west          # default: the kubeconfig's current context
  queues: {nlp: nlp, nlp/pretrain: nlp/team1}   # namespace or namespace/queue -> budget path
  namespaces: [nlp, vision]  # managed namespaces (default: all)
  scheduler_name: alloc      # the schedulerName of the pods alloc places
  gpu_resource: nvidia.com/gpu
  gpu_type_label: nvidia.com/gpu.product
  block_label: alloc.dev/block
  rack_label: alloc.dev/rack
  retire_label: alloc.dev/retire
  default_gpu_type: gpu      # the type of nodes without the type label
  timeout: 10s               # each API call
  attempts: 3                # tries of a call without a usable answer, with backoff
metrics: {port: 9464, address: 127.0.0.1}   # Prometheus /metrics (port 0: off)
sim:                       # executor sim: paths relative to this file
  lab: lab.yaml            # an instance: the cluster, its policy and budgets (no workloads)
  trace: trace.csv         # the jobs it receives (SPEC's trace CSV)
  cluster: sim-cluster.db  # where the simulated cluster keeps its state (created if absent)
  step: 5m                 # simulated time between two rounds
```

Relative paths are relative to the config's folder, wherever the command runs: the `sim` files
and an SQLite state file, `sqlite:///state.db` (three slashes and a relative path: `state.db`
beside the config; four slashes for an absolute path, `sqlite:////var/lib/alloc/state.db`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field

from alloc.domain import BudgetPath, BudgetTree, Policy
from alloc.io.budgets_in import budget_tree, policy_from, unknown_path
from alloc.io.reporter import load_model
from alloc.io.schema import BudgetIn, Duration, Name, PolicyIn, _Strict


class SlurmIn(_Strict):
    accounts: dict[Name, Name] = {}
    partitions: list[Name] = []
    block_prefix: str = "block-"
    rack_prefix: str = "rack-"
    retire_reason: Name = "retire"
    command_timeout: Duration = 10.0
    attempts: Annotated[int, Field(ge=1, le=20, strict=True)] = 3


class KubernetesIn(_Strict):
    kubeconfig: Name | None = None
    context: Name | None = None
    queues: dict[Name, Name] = {}
    namespaces: list[Name] = []
    scheduler_name: Name = "alloc"
    gpu_resource: Name = "nvidia.com/gpu"
    gpu_type_label: Name = "nvidia.com/gpu.product"
    block_label: Name = "alloc.dev/block"
    rack_label: Name = "alloc.dev/rack"
    retire_label: Name = "alloc.dev/retire"
    default_gpu_type: Name = "gpu"  # the type of nodes without the type label
    timeout: Duration = 10.0
    attempts: Annotated[int, Field(ge=1, le=20, strict=True)] = 3


class SimIn(_Strict):
    lab: Name
    trace: Name
    cluster: Name = "sim-cluster.db"
    step: Duration = 300.0


class MetricsIn(_Strict):
    port: Annotated[int, Field(ge=0, le=65535, strict=True)] = 9464
    address: Name = "127.0.0.1"


class ControllerIn(_Strict):
    name: Name = "alloc"
    executor: Literal["slurm", "kubernetes", "sim"] = "slurm"
    interval: Duration = 60.0
    event_poll: Duration = 2.0
    min_round_gap: Duration = 10.0
    state: Name = "sqlite:///alloc-state.db"  # beside the config (state_url)
    lease: Duration | None = None
    policy: PolicyIn = PolicyIn()
    budgets: BudgetIn
    slurm: SlurmIn = SlurmIn()
    kubernetes: KubernetesIn = KubernetesIn()
    sim: SimIn | None = None
    metrics: MetricsIn = MetricsIn()


@dataclass(frozen=True, slots=True)
class SlurmSettings:
    accounts: dict[str, BudgetPath] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()
    block_prefix: str = "block-"
    rack_prefix: str = "rack-"
    retire_reason: str = "retire"
    command_timeout_s: float = 10.0
    attempts: int = 3


@dataclass(frozen=True, slots=True)
class KubernetesSettings:
    kubeconfig: str | None = None
    context: str | None = None
    queues: dict[str, BudgetPath] = field(default_factory=dict)
    namespaces: tuple[str, ...] = ()
    scheduler_name: str = "alloc"
    gpu_resource: str = "nvidia.com/gpu"
    gpu_type_label: str = "nvidia.com/gpu.product"
    block_label: str = "alloc.dev/block"
    rack_label: str = "alloc.dev/rack"
    retire_label: str = "alloc.dev/retire"
    default_gpu_type: str = "gpu"
    timeout_s: float = 10.0
    attempts: int = 3


@dataclass(frozen=True, slots=True)
class SimSettings:
    lab: Path
    trace: Path
    cluster: Path
    step_s: float


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    name: str
    executor: str
    interval_s: float
    state_url: str
    event_poll_s: float
    min_round_gap_s: float
    policy: Policy
    budgets: BudgetTree
    slurm: SlurmSettings
    kubernetes: KubernetesSettings = field(default_factory=KubernetesSettings)
    sim: SimSettings | None = None
    metrics_port: int = 9464  # 0: no /metrics
    metrics_address: str = "127.0.0.1"
    file: str = ""
    lease_s: float = 30.0  # the leader lease (alloc.controller.lease)


def state_url(url: str, folder: Path) -> str:
    """The state store's SQLAlchemy URL, an SQLite file given by a relative path taken as
    relative to `folder` (the config's): `sqlite:///state.db` -> `sqlite:///conf/state.db`, as
    the `sim` paths are (SQLAlchemy would take it as relative to the working directory, so
    `alloc status` run elsewhere would open another, empty state). An absolute path
    (`sqlite:////var/lib/alloc/state.db`), an in-memory database (`sqlite://`,
    `sqlite:///:memory:`), an SQLite URI (`sqlite:///file:...?uri=true`) and other databases
    are kept as written."""
    scheme, sep, rest = url.partition(":///")
    if not sep or scheme.split("+")[0] != "sqlite":
        return url
    file, query, options = rest.partition("?")
    if not file or file == ":memory:" or file.startswith(("/", "file:")):
        return url
    return f"{scheme}:///{folder / file}{query}{options}"


def load_controller_config(path: str | Path) -> ControllerSettings:
    file = str(path)
    raw, report = load_model(
        path, ControllerIn, "a controller config is a mapping with budgets (and executor...)"
    )
    if raw.interval <= 0:
        raise report.error(("interval",), "the controller needs an interval above 0, e.g. 60s")
    if raw.lease is not None and raw.lease <= 0:
        raise report.error(("lease",), "the leader lease lasts more than 0, e.g. 30s")
    tree = budget_tree(raw.budgets, report)
    accounts = {}
    for account, budget in raw.slurm.accounts.items():
        node = BudgetPath(budget.strip("/"))
        if node not in tree or not node:
            raise report.error(("slurm", "accounts", account), unknown_path(budget, tree))
        accounts[account] = node
    queues = {}
    for queue, budget in raw.kubernetes.queues.items():
        node = BudgetPath(budget.strip("/"))
        if node not in tree or not node:
            raise report.error(("kubernetes", "queues", queue), unknown_path(budget, tree))
        queues[queue] = node
    k = raw.kubernetes
    kubeconfig = str(Path(k.kubeconfig).expanduser()) if k.kubeconfig else None
    here = Path(path).parent
    sim = None
    if raw.sim is not None:
        if raw.sim.step <= 0:
            raise report.error(("sim", "step"), "the simulated step is above 0, e.g. 5m")
        sim = SimSettings(
            here / raw.sim.lab, here / raw.sim.trace, here / raw.sim.cluster, raw.sim.step
        )
    elif raw.executor == "sim":
        raise report.error(("sim",), "executor sim needs `sim: {lab: FILE, trace: FILE}`")
    s = raw.slurm
    return ControllerSettings(
        name=raw.name,
        executor=raw.executor,
        interval_s=raw.interval,
        state_url=state_url(raw.state, here),
        event_poll_s=raw.event_poll,
        min_round_gap_s=raw.min_round_gap,
        policy=policy_from(raw.policy),
        budgets=tree,
        slurm=SlurmSettings(
            accounts,
            tuple(s.partitions),
            s.block_prefix,
            s.rack_prefix,
            s.retire_reason,
            s.command_timeout,
            s.attempts,
        ),
        kubernetes=KubernetesSettings(
            **k.model_dump(exclude={"kubeconfig", "queues", "namespaces", "timeout"}),
            kubeconfig=kubeconfig,
            queues=queues,
            namespaces=tuple(k.namespaces),
            timeout_s=k.timeout,
        ),
        sim=sim,
        metrics_port=raw.metrics.port,
        metrics_address=raw.metrics.address,
        file=file,
        lease_s=raw.lease if raw.lease is not None else min(max(raw.interval, 1.0), 30.0),
    )
