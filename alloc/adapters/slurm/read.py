"""A Slurm cluster as the round sees it: `sinfo --json` -> hosts, `squeue --json` -> workloads
(Slurm 22.05's JSON, data_parser v0.0.38). Pure functions of the parsed JSON and the site's
mapping; `SlurmExecutor` runs the commands.

Hosts: GPUs and GPU type from the node's `gres` (`gpu:8`, `gpu:h100:8(S:0-1)`); block and rack
from node features named `<block_prefix>NAME` and `<rack_prefix>NAME` (default `block-`,
`rack-`; without them: one block, a rack per node). State: a DRAIN flag is `unhealthy` (drain,
then repair) unless its reason says `retire` (`retired`: drain, then remove); DOWN,
FAIL, NOT_RESPONDING, FUTURE and UNKNOWN are `maintenance` (nothing runs there); else `ready`.

Workloads: pending and running jobs of the managed partitions (all when none is named). The id
is the job id; the budget is the site's mapping of the job's account (an account it does not
map is unfunded, and its note says so); GPUs are the job's `--gpus` or `--gres=gpu:N` per node x
its nodes; the contract fields come from the comment (alloc.adapters.slurm.contract). A running
job's hosts and GPUs per host come from its allocation; a completing job still holds them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from alloc.adapters.base import unfunded_note
from alloc.adapters.slurm.contract import read_contract
from alloc.domain import BudgetPath, Cluster, Host, HostName, HostState, Workload, WorkloadId

_GRES = re.compile(r"(?:^|,)(?:gres:)?gpu(?::([A-Za-z0-9_.-]+?))?:(\d+)(?:\(|,|$)")
_RUNNING = {"RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED"}
# Pending for these reasons, a job starts when released (held) or when its nodes free; any
# other reason (a dependency, a begin time, a QOS or partition limit) keeps it waiting in Slurm.
STARTABLE = {"None", "Priority", "Resources", ""}
# A job in one of these states ran from start_time to end_time (Slurm keeps it in squeue for
# MinJobAge seconds, 300 by default).
_ENDED = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
}
_OUT = {"DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "FUTURE", "UNKNOWN", "POWERED_DOWN"}


@dataclass(frozen=True, slots=True)
class SlurmSite:
    """How a Slurm cluster maps to alloc's terms (the controller config's `slurm:` part)."""

    accounts: Mapping[str, BudgetPath] = field(default_factory=dict)
    partitions: tuple[str, ...] = ()  # managed partitions; () = all
    block_prefix: str = "block-"
    rack_prefix: str = "rack-"
    retire_reason: str = "retire"
    default_gpu_type: str = "gpu"  # when the gres names no type


@dataclass(frozen=True, slots=True)
class SlurmJob:
    """A job as read, with what alloc needs to act on it."""

    workload: Workload
    held: bool  # pending and held (alloc starts it by releasing it)
    state: str  # Slurm's job_state
    pinned: str = ""  # the nodes it is required to run on (as alloc set them: "a,b")
    problem: str = ""  # why it is read otherwise than declared: its comment not used (it runs
    # as unallocated work), its account mapped to no budget node (unfunded)
    blocked: str = ""  # why no round may place it now (Slurm holds it back, or its shape)
    no_budget: str = ""  # why it has no budget though its job named one (an unmapped account)


def gpus_of(gres: str | None, default_type: str) -> tuple[int, str | None]:
    """GPUs and GPU type named in a gres string; (0, None) without GPUs. The type is None
    when the string names none."""
    m = _GRES.search(gres or "")
    if not m:
        return 0, None
    return int(m[2]), m[1] or None


def hosts_from_sinfo(data: Mapping[str, Any], site: SlurmSite) -> tuple[Host, ...]:
    hosts = {}
    for node in data.get("nodes", ()):
        gpus, gpu_type = gpus_of(node.get("gres"), site.default_gpu_type)
        if gpus <= 0:
            continue  # not a GPU node: nothing of ours runs there
        name = HostName(str(node["name"]))
        features = str(node.get("active_features") or node.get("features") or "").split(",")
        block = _feature(features, site.block_prefix) or "default"
        rack = _feature(features, site.rack_prefix) or str(name)
        hosts[name] = Host(
            name, gpus, gpu_type or site.default_gpu_type, block, rack, _host_state(node, site)
        )
    return tuple(hosts[n] for n in sorted(hosts))


def _feature(features: list[str], prefix: str) -> str | None:
    for f in features:
        if f.startswith(prefix) and len(f) > len(prefix):
            return f[len(prefix) :]
    return None


def _host_state(node: Mapping[str, Any], site: SlurmSite) -> HostState:
    words = {str(node.get("state", "")).upper()} | {
        str(f).upper() for f in node.get("state_flags") or ()
    }
    if words & _OUT:
        return HostState.MAINTENANCE
    if words & {"DRAIN", "DRAINED", "DRAINING"}:
        reason = str(node.get("reason") or "").lower()
        retired = site.retire_reason.lower() in reason
        return HostState.RETIRED if retired else HostState.UNHEALTHY
    return HostState.READY


def jobs_from_squeue(
    data: Mapping[str, Any],
    site: SlurmSite,
    cluster: Cluster,
    max_min_runtime_s: float,
) -> tuple[SlurmJob, ...]:
    out = []
    for job in data.get("jobs", ()):
        state = str(job.get("job_state", ""))
        if state != "PENDING" and state not in _RUNNING:
            continue
        if site.partitions and job.get("partition") not in site.partitions:
            continue
        read = _job(job, state, site, cluster, max_min_runtime_s)
        if read is not None:
            out.append(read)
    return tuple(sorted(out, key=lambda j: int(j.workload.id)))


def ended_from_squeue(
    data: Mapping[str, Any],
    site: SlurmSite,
    cluster: Cluster,
    max_min_runtime_s: float,
) -> tuple[tuple[Workload, datetime], ...]:
    """Jobs that ran and ended, as workloads (started set) with the time they ended."""
    out = []
    for job in data.get("jobs", ()):
        state = str(job.get("job_state", ""))
        start, end = float(job.get("start_time") or 0), float(job.get("end_time") or 0)
        # A job cancelled while it waited ends with start = end and no nodes: it never ran.
        if state not in _ENDED or start <= 0 or end < start or not job.get("nodes"):
            continue
        if site.partitions and job.get("partition") not in site.partitions:
            continue
        read = _job(job, "RUNNING", site, cluster, max_min_runtime_s)
        if read is not None:
            out.append((read.workload, _time(end)))
    return tuple(out)


def _job(
    job: Mapping[str, Any],
    state: str,
    site: SlurmSite,
    cluster: Cluster,
    max_min_runtime_s: float,
) -> SlurmJob | None:
    per_job, gpu_type = gpus_of(job.get("tres_per_job"), site.default_gpu_type)
    per_node, node_type = gpus_of(job.get("tres_per_node"), site.default_gpu_type)
    nodes = max(1, int(job.get("node_count") or 1))
    gpus = per_job or per_node * nodes
    if gpus <= 0:
        return None  # asks for no GPU: not ours to place
    contract = read_contract(job.get("comment"), max_min_runtime_s)
    running = state in _RUNNING
    placed = _allocation(job, site) if running else {}
    account = str(job.get("account") or "")
    budget = site.accounts.get(account)
    problems = [contract.problem] if contract.problem else []
    no_budget = ""
    if account and budget is None:  # else "it names no budget": the account does, unmapped
        no_budget = f"its account {account!r} is not mapped to a budget node (slurm.accounts)"
        problems.append(unfunded_note(no_budget))
    workload = Workload(
        id=WorkloadId(str(job["job_id"])),
        budget=budget,
        gpus=sum(placed.values()) if placed else gpus,
        min_runtime_s=contract.min_runtime_s,
        submitted=_time(job.get("submit_time")),
        resumable=contract.resumable,
        priority=contract.priority,
        topology=contract.topology or cluster.default_topology(gpus, gpu_type or node_type),
        gpu_type=gpu_type or node_type,
        started=_time(job.get("start_time")) if running else None,
        hosts=placed,
    )
    reason = str(job.get("state_reason", "") or "")
    held = state == "PENDING" and reason.startswith("JobHeld")
    blocked = ""
    if state == "PENDING" and not held and reason not in STARTABLE:
        blocked = f"Slurm holds it back ({reason})"  # a dependency, a begin time, a limit...
    elif per_node and nodes > 1 and not _whole_nodes(per_node, gpu_type or node_type, cluster):
        blocked = (
            f"{nodes} nodes x {per_node} GPUs: a job of several nodes takes whole "
            "nodes (--gres=gpu:<all of a node's GPUs> per node)"
        )
    elif running and (not placed or any(h not in cluster.by_name for h in placed)):
        blocked = "runs on nodes alloc does not manage"
    pinned = str(job.get("required_nodes") or "")
    return SlurmJob(workload, held, state, pinned, "; ".join(problems), blocked, no_budget)


def _whole_nodes(per_node: int, gpu_type: str | None, cluster: Cluster) -> bool:
    sizes = {h.gpus for h in cluster.hosts if gpu_type is None or h.gpu_type == gpu_type}
    return per_node in sizes


def _allocation(job: Mapping[str, Any], site: SlurmSite) -> dict[HostName, int]:
    """GPUs per node of a running job: its allocated nodes, in the order of `gres_detail`."""
    resources = job.get("job_resources") or {}
    names = [str(n["nodename"]) for n in resources.get("allocated_nodes") or ()]
    detail = list(job.get("gres_detail") or ())
    out: dict[HostName, int] = {}
    for i, name in enumerate(names):
        gpus, _ = gpus_of(detail[i] if i < len(detail) else None, site.default_gpu_type)
        if gpus:
            out[HostName(name)] = gpus
    return out


def _time(epoch: object) -> datetime:
    return datetime.fromtimestamp(float(epoch or 0), UTC)  # type: ignore[arg-type]
