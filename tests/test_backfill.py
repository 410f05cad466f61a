"""Backfill of reserved hosts (issue 15, decision 3; models/round.md 8.5): while hosts are held
for a gang until `ready_at`, allocated work whose minimum runtime ends by then may start there;
it names the gangs (`backfill_for`) and, once past its minimum runtime, holds its GPUs as over
its entitlement while any of them waits, so the gang displaces it exactly when its hosts were
promised.

The hand-derived scenario (8-GPU hosts; block X: h1, h2; block Y: h3, h4; teams a and b with
50% each, a has used 74% of its share over the window, b none):
- b-old holds h1, protected until 2 h, and ends at 2 h; b-other holds h3, protected until 8 h;
  unallocated u-fill holds h4. a-gang (16 GPUs, one block) is blocked: only h2 and h4 are free
  of protected work, in two blocks. Its team is owed 16 GPUs: hosts h1 and h2 are reserved for
  it, ready at 2 h.
- b-short (8 GPUs, minimum 1 h) may start on h2 (its protection ends at 1 h, before 2 h): it
  does, at 0, with `backfill_for: [a-gang]`; b-long (minimum 3 h) may not (it displaces
  u-fill on h4 instead).
- At 2 h b-old ends; b's entitlement is 16 GPUs (b-other 8 + b-short 8), a's 16 (the gang).
  Without the lease b-short would be entitled and ranked ahead of the gang (b's ratio is
  lower): no solver could take h2 from it and the gang would wait on. With it b-short is over
  its entitlement, the gang displaces it (`rebalanced`) and starts on h1 and h2 at 2 h.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import NOW, ago, host, instance, snapshot_of, solve_checked, workload
from test_sim_engine import HOUR, job, simulate

from alloc.domain import Action, HostName, Reason, WorkloadId
from alloc.io import dump_plan, load_plan
from alloc.solve.validate import validate

GANG = WorkloadId("a-gang")
HOSTS = [
    host("h1", block="X", rack="x1"),
    host("h2", block="X", rack="x1"),
    host("h3", block="Y", rack="y1"),
    host("h4", block="Y", rack="y1"),
]
USAGE = {"a": 2000.0, "b": 0.0}  # a: ratio 0.74 over 7 days of 32 GPUs; b: 0


def _start(queued: list[dict]) -> dict:
    running = [
        workload("b-old", 8, "b", "4h", started=ago(hours=2), hosts={"h1": 8}, runtime="2h"),
        workload("b-other", 8, "b", "8h", started=NOW.isoformat(), hosts={"h3": 8}, runtime="20h"),
        workload("u-fill", 8, None, "0", started=ago(hours=1), hosts={"h4": 8}, runtime="20h"),
    ]
    return instance(hosts=HOSTS, workloads=running + queued, usage=USAGE)


QUEUED = [
    workload("a-gang", 16, "a", "4h", submitted=ago(minutes=30)),
    workload("b-long", 8, "b", "3h", submitted=ago(minutes=20)),
    workload("b-short", 8, "b", "1h", submitted=ago(minutes=10)),
]


def test_short_work_backfills_a_reserved_host_and_names_the_gang(solver, tmp_path):
    snap = snapshot_of(_start(QUEUED))
    plan = solve_checked(snap, solver)
    (r,) = plan.reservations
    assert r.workload == GANG and set(r.hosts) == {"h1", "h2"}
    assert r.ready_at == NOW.replace(hour=14)
    short = plan.decision(WorkloadId("b-short"))
    assert short.action is Action.START and dict(short.hosts) == {"h2": 8}
    assert short.backfill_for == (GANG,)
    assert short.protected_until == NOW.replace(hour=13)
    # b-long's protection would end at 15:00, after the hosts are promised: not there; it
    # displaces the unallocated work on h4 instead (invariant 4).
    assert dict(plan.decision(WorkloadId("b-long")).hosts) == {"h4": 8}
    assert plan.decision(WorkloadId("u-fill")).reason is Reason.UNALLOCATED_DISPLACED
    # The lease travels in the plan file.
    (tmp_path / "plan.json").write_text(dump_plan(plan))
    read = load_plan(tmp_path / "plan.json")
    assert read.decision(WorkloadId("b-short")).backfill_for == (GANG,)


def test_validate_rejects_backfill_that_outlasts_the_reservation_or_hides_it(solver):
    snap = snapshot_of(_start(QUEUED))
    plan = solve_checked(snap, solver)

    def with_decision(d):  # type: ignore[no-untyped-def]
        return replace(
            plan, decisions=tuple(d if x.workload == d.workload else x for x in plan.decisions)
        )

    short = plan.decision(WorkloadId("b-short"))
    hidden = validate(snap, with_decision(replace(short, backfill_for=())))
    assert hidden == [
        "b-short: starts as backfill for no gang, but the hosts it takes are reserved for "
        "a-gang (a start names them) (8.5)"
    ]
    long_ = replace(
        plan.decision(WorkloadId("b-long")),
        action=Action.START,
        reason=Reason.UNDER_ALLOCATION,
        hosts={HostName("h2"): 8},
        protected_until=NOW.replace(hour=15),
        backfill_for=(GANG,),
    )
    outlasts = validate(snap, with_decision(long_))
    assert (
        "b-long: starts on h2, reserved for a-gang until 2026-11-30T14:00:00Z, but its minimum "
        "runtime of 3 h from now protects it until 2026-11-30T15:00:00Z (8.5)" in outlasts
    )


def _at_ready(lease: tuple[WorkloadId, ...]):  # type: ignore[no-untyped-def]
    """The round at 2 h (ready_at): b-old has ended; b-short ran 2 h on h2 as backfill."""
    data = instance(
        hosts=HOSTS,
        workloads=[
            workload("b-other", 8, "b", "8h", started=ago(hours=2), hosts={"h3": 8}),
            workload("u-fill", 8, None, "0", started=ago(hours=3), hosts={"h4": 8}),
            workload(
                "b-short",
                8,
                "b",
                "1h",
                started=ago(hours=2),
                submitted=ago(hours=2),
                hosts={"h2": 8},
                **({"backfill_for": list(lease)} if lease else {}),
            ),
            workload("a-gang", 16, "a", "4h", submitted=ago(hours=2, minutes=30)),
        ],
        usage=USAGE,
    )
    return snapshot_of(data)


def test_at_ready_at_the_gang_displaces_its_backfill(solver):
    plan = solve_checked(_at_ready((GANG,)), solver)
    gang = plan.decision(GANG)
    assert gang.action is Action.START and set(gang.hosts) == {"h1", "h2"}
    short = plan.decision(WorkloadId("b-short"))
    assert (short.action, short.reason) == (Action.PREEMPT, Reason.REBALANCED)


def test_without_the_lease_entitled_work_ranked_ahead_keeps_the_gangs_hosts(solver):
    """Why the lease exists: the same round, b-short not started as backfill, is entitled and
    ranked ahead of the gang (b's ratio is lower): it keeps h2, and the gang waits."""
    plan = solve_checked(_at_ready(()), solver)
    assert plan.decision(GANG).action is Action.WAIT
    short = plan.decision(WorkloadId("b-short"))
    assert (short.action, short.reason) == (Action.KEEP, Reason.UNDER_ALLOCATION)


@pytest.mark.parametrize("policy", ["milp", "greedy"])
def test_over_time_backfill_runs_until_ready_at_and_the_gang_starts_exactly_then(policy):
    snap = snapshot_of(_start([]))
    jobs = [
        job("a-gang", "a", 16, 0.0, 4 * HOUR, 4 * HOUR),
        job("b-short", "b", 8, 60.0, 10 * HOUR, HOUR),
    ]
    result = simulate(snap, jobs, policy, days=0.5)
    assert result.violations == 0, result.first_violations
    short = result.world.jobs[WorkloadId("b-short")]
    gang = result.world.jobs[GANG]
    assert short.first_start_s is not None and short.first_start_s <= 300.0
    assert gang.first_start_s == 2 * HOUR
    (p,) = [p for p in result.recorder.preemptions if p.workload == "b-short"]
    assert (p.t_s, p.reason) == (2 * HOUR, "rebalanced")


def test_explain_says_a_start_is_backfill_and_what_it_yields_to():
    from alloc.explain import explain

    snap = snapshot_of(
        _start(
            [
                workload("a-gang", 16, "a", "4h", submitted=ago(minutes=30)),
                workload("b-short", 8, "b", "1h", submitted=ago(minutes=10)),
            ]
        )
    )
    plan = solve_checked(snap, "greedy")
    facts = " ".join(explain(snap, plan, "b-short").facts)
    assert "backfill: it starts on hosts reserved for a-gang (ready at 2026-11-30T14:00:00Z)" in (
        facts
    )
    later = _at_ready((GANG,))
    facts = " ".join(explain(later, solve_checked(later, "greedy"), "b-short").facts)
    assert "it started on hosts reserved for a-gang; past its minimum runtime" in facts
