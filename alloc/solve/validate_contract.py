"""Each decision of a plan against the time-slicing contract, recomputed from the workload
(SPEC.md invariants 3, 5 and 7; the occupancy the contract gives, the end of the protection a
start or keep carries, keep where it runs), and the shape of a start (`validate_placement`).
Shared by `validate` and the event pass's checks (`validate_event`)."""

from __future__ import annotations

from alloc.domain import Action, Decision, Occupancy, Reason, Snapshot, Workload
from alloc.policy.contract import Standing, runtime_delta, unfunded_because
from alloc.readable import duration, moment
from alloc.solve.problem import HostArrays
from alloc.solve.validate_placement import start_shape, where


def decision_problems(
    snapshot: Snapshot,
    hosts: HostArrays,
    w: Workload,
    d: Decision,
    s: Standing,
    max_rt: float,
) -> list[str]:
    action, occupancy, until = d.action, d.occupancy, d.protected_until
    keep = action is Action.KEEP
    out: list[str] = []
    name = w.id
    if occupancy is not s.occupancy:
        out.append(
            f"{name}: occupancy {occupancy.value}, the contract says {s.occupancy.value} "
            f"({_why_occupancy(snapshot, w, s)}) ({_occupancy_rule(s)})"
        )
    if w.min_runtime_s > max_rt:
        out.append(
            f"{name}: minimum runtime {duration(w.min_runtime_s)} is above max_min_runtime "
            f"{duration(max_rt)} (7)"
        )
    if until is not None:
        if not s.funded:
            out.append(
                f"{name}: protected until {moment(until)}, but unfunded work is never "
                f"protected ({_why_occupancy(snapshot, w, s)}) (5)"
            )
        elif occupancy is Occupancy.UNALLOCATED:
            out.append(
                f"{name}: protected until {moment(until)}, but it is marked unallocated, "
                "and unallocated work is never protected (5)"
            )
    if occupancy is Occupancy.UNALLOCATED and d.reason in _PROTECTED_REASONS:
        out.append(
            f"{name}: {action.value} ({d.reason.value}), but it is unallocated "
            f"({_why_occupancy(snapshot, w, s)}), and unallocated work is never protected (5)"
        )
    if action is Action.PREEMPT:
        out += _maintenance_problems(snapshot, w, d, s)
    if w.running:
        if not keep and action is not Action.PREEMPT:
            out.append(
                f"{name}: running, so it is kept or preempted, not '{action.value}' "
                "(models/round.md 1.2)"
            )
    elif action is not Action.START and action is not Action.WAIT:
        out.append(
            f"{name}: queued, so it starts or waits, not '{action.value}' (models/round.md 1.1)"
        )
    if s.forced is Action.KEEP and not keep:
        if s.forced_reason is Reason.COSTLY_TO_STOP:
            ran = w.running_seconds(snapshot.now)
            interval = snapshot.policy.checkpoint_interval_s
            out.append(
                f"{name}: {action.value}, but it cannot resume and has run {duration(ran)}, "
                f"longer than the checkpoint interval of {duration(interval)}: the contract "
                "keeps it to its end (costly_to_stop) (models/round.md 1.1)"
            )
        else:
            assert s.protected_until is not None
            out.append(
                f"{name}: {action.value}, but it is protected until {moment(s.protected_until)} (3)"
            )
    if s.forced is Action.PREEMPT and keep:
        states = {h: snapshot.cluster.by_name[h].state.value for h in w.hosts}
        bad = ", ".join(f"{h} is {state}" for h, state in states.items() if state != "ready")
        assert s.forced_reason is not None  # a forced action has its reason
        out.append(f"{name}: kept, but {bad} ({s.forced_reason.value}) (1)")
    if keep and d.hosts != w.hosts:
        out.append(
            f"{name}: kept on {where(d.hosts)}, but it runs on {where(w.hosts)} "
            "(models/round.md 1.2)"
        )
    if keep or action is Action.START:
        if occupancy is Occupancy.ALLOCATED:
            start = w.started if w.started is not None else snapshot.now  # running or not
            want = start + runtime_delta(w.min_runtime_s)
            if until != want:
                given = "not protected" if until is None else f"protected until {moment(until)}"
                began = "its start at" if w.running else "now,"
                out.append(
                    f"{name}: {given}, but its minimum runtime of {duration(w.min_runtime_s)} "
                    f"from {began} {moment(start)} protects it until {moment(want)} "
                    "(models/round.md 1.1)"
                )
        if action is Action.START:
            out += start_shape(snapshot, hosts, w, d)
        if d.hosts is not w.hosts:
            out += [
                f"{name}: holds {g} GPUs on {h} (a count above 0 for each host it holds) "
                "(plan format)"
                for h, g in d.hosts.items()
                if g <= 0
            ]
    return out


_PROTECTED_REASONS = frozenset((Reason.PROTECTED, Reason.COSTLY_TO_STOP))


def _maintenance_problems(snapshot: Snapshot, w: Workload, d: Decision, s: Standing) -> list[str]:
    """(3) Work on a host in maintenance is preempted with reason host_maintenance, even when
    protected: an availability event, counted apart from the plan's own preemptions; and no
    preemption the plan chose is passed off as one."""
    down = s.forced_reason is Reason.HOST_MAINTENANCE
    if down == (d.reason is Reason.HOST_MAINTENANCE):
        return []
    states = snapshot.cluster.by_name
    if down:
        hosts = ", ".join(h for h in w.hosts if states[h].state.value == "maintenance")
        return [
            f"{w.id}: preempted ({d.reason.value}), but {hosts} went into maintenance under it: "
            "an availability event, reason host_maintenance (3)"
        ]
    where = ", ".join(f"{h} is {states[h].state.value}" for h in w.hosts if h in states)
    return [
        f"{w.id}: preempted for host_maintenance, but none of its hosts is in maintenance "
        f"({where or 'it runs nowhere'}): a preemption the plan chose, with its own reason (3)"
    ]


def _occupancy_rule(s: Standing) -> str:
    """Unfunded work marked allocated would be charged (5); any other occupancy but the
    contract's breaks the standing of models/round.md 1.1."""
    return "5" if not s.funded else "models/round.md 1.1"


def _why_occupancy(snapshot: Snapshot, w: Workload, s: Standing) -> str:
    unfunded = unfunded_because(snapshot.budgets, w)
    if unfunded is not None:
        return f"{unfunded}, so it is unfunded"
    if w.min_runtime_s == 0:
        return "its minimum runtime is 0"
    return f"funded by {w.budget} with a minimum runtime of {duration(w.min_runtime_s)}"
