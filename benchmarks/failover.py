"""Failover (issue 18, point 5): two `alloc controller run` processes share one state store and
drive one simulated cluster (benchmarks/failover_rig.py); the leader is killed (SIGKILL) at
random moments, paused (SIGSTOP) past its lease and resumed, cut from PostgreSQL (the proxy it
reaches the database through closes its connections) and has its sessions ended
(pg_terminate_backend), again and again. Each time the standby must run a round within two
intervals; at the end the ledger must equal, run for run, what the cluster ran, and no plan of
an epoch of the leader lease older than one that had acted may have been applied.

    python -m benchmarks.failover              # 30 kills, 5 pauses; PostgreSQL (5 cuts, 5
                                               # session ends) if $ALLOC_TEST_POSTGRES_URL
    python -m benchmarks.failover --kills 10 --backends sqlite

Takeover: from the kill, pause or cut to the first round the other controller applied, by the
wall clock (the cluster records every apply with its time, holder and epoch).
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alloc.adapters import fence
from alloc.adapters.simcluster import SimCluster
from alloc.io import load_instance
from benchmarks.failover_rig import Rig
from benchmarks.machine import publish

BEGIN, END = "<!-- failover:begin -->", "<!-- failover:end -->"


def next_apply(rig: Rig, after_s: float, not_by: str = "") -> tuple[float, str] | None:
    """The first plan applied after `after_s` (wall clock), by another controller than
    `not_by` if given: (when, by whom)."""
    with sqlite3.connect(str(rig.cluster), timeout=30) as db:
        try:
            row = db.execute(
                "SELECT wall_s, holder FROM applies WHERE refused = 0 AND wall_s > ? "
                "AND holder != ? ORDER BY id LIMIT 1",
                (after_s, not_by),
            ).fetchone()
        except sqlite3.OperationalError:  # no plan applied yet
            return None
    return (float(row[0]), str(row[1])) if row else None


def acting(rig: Rig) -> str:
    """The leader once it is applying rounds (one applied from now on) and the other controller
    stands by."""
    deadline = time.monotonic() + 120
    now = time.time()
    while time.monotonic() < deadline:
        held = rig.leader()
        if held is not None and held.valid and all(p.poll() is None for p in rig.procs.values()):
            mine = next_apply(rig, now)
            if mine is not None and mine[1] == held.holder:
                return held.holder
        time.sleep(0.05)
    raise RuntimeError("no controller applied a round within 120 s")


def takeover(rig: Rig, at_s: float, victim: str) -> tuple[float | None, str]:
    """Seconds from `at_s` to the first round another controller applied (None: none within
    30 intervals), and who."""
    deadline = time.monotonic() + 30 * rig.interval_s
    while time.monotonic() < deadline:
        found = next_apply(rig, at_s, victim)
        if found is not None:
            return found[0] - at_s, found[1]
        time.sleep(0.02)
    return None, ""


def chaos(rig: Rig, plan: list[str], rng: random.Random) -> list[dict[str, Any]]:
    """Each event of `plan` (kill, pause, cut, blip) on the leader at a random moment of its
    rounds; its takeover measured. Both slots must be running."""
    lease_s = rig.interval_s  # the configs' lease: the interval (at least 1 s)
    events = []
    for kind in plan:
        victim = acting(rig)
        slot = rig.slot_of(victim)
        time.sleep(rng.uniform(0.0, 1.5 * rig.interval_s))
        at_s = time.time()
        if kind == "kill":
            rig.signal(slot, signal.SIGKILL)
        elif kind == "pause":
            while True:  # not inside an SQLite transaction: that would hold every writer
                at_s = time.time()
                rig.signal(slot, signal.SIGSTOP)
                if not rig.locked():
                    break
                rig.signal(slot, signal.SIGCONT)
                time.sleep(0.005)
        elif kind == "cut":
            rig.proxies[slot].cut()
        else:
            rig.terminate_backends(slot)
        took, successor = takeover(rig, at_s, victim) if kind != "blip" else (None, "")
        if kind == "kill":
            rig.start(slot)
        elif kind == "pause":
            time.sleep(lease_s)  # past its lease (taken over already), then on again
            rig.signal(slot, signal.SIGCONT)
        elif kind == "cut":
            time.sleep(lease_s)
            rig.proxies[slot].restore()
        events.append(dict(kind=kind, victim=victim, successor=successor, takeover_s=took))
    return events


def check(rig: Rig) -> dict[str, Any]:
    """What the cluster ran against the ledger, and who applied what (after `rig.drain`)."""
    cluster = SimCluster(rig.cluster, load_instance(rig.folder / "lab.yaml"))
    ran = sorted(cluster.runs())
    cluster.close()
    ledger = sorted(
        (r.workload, r.started_s, r.ended_s, r.gpus, r.budget) for r in rig.store.runs()
    )
    spans: dict[str, list[tuple[float, float | None]]] = {}
    for job, start, end, _, _ in ran:
        spans.setdefault(job, []).append((start, end))
    overlapping = 0  # jobs started while they ran
    for runs in spans.values():
        runs.sort()
        pairs = zip(runs, runs[1:], strict=False)
        overlapping += any(end is None or end > start for (_, end), (start, _) in pairs)
    applied = fence.history(rig.cluster)
    twice = top = 0
    holders: dict[int, set[str]] = {}
    for a in applied:
        if a.refused:
            continue
        if a.epoch < top:  # a plan of an older epoch after a newer one had acted
            twice += len(a.actions)
        top = max(top, a.epoch)
        holders.setdefault(a.epoch, set()).add(a.holder)
    return dict(
        runs=len(ran),
        ledger_equals_cluster=ledger == ran,
        jobs_run_twice_at_once=overlapping,
        applies=sum(not a.refused for a in applied),
        actions_changed=sum(c for a in applied for _, _, c in a.actions),
        applied_twice=twice,
        epochs_with_two_holders=sum(len(h) > 1 for h in holders.values()),
        epochs=len(holders),
        stale_plans_refused=sum(a.refused for a in applied),
    )


def measure(
    folder: Path,
    postgres: str | None,
    plan: list[str],
    seed: int = 1,
    interval_s: float = 1.0,
    hours: float = 12.0,
    before: Callable[[Rig], None] | None = None,
) -> dict[str, Any]:
    """One run of `plan` against a fresh rig in `folder` (`before` looks at it once both
    controllers run): the events and the checks."""
    rig = Rig(folder, postgres, interval_s, seed, hours)
    try:
        rig.start("a")
        rig.start("b")
        if before is not None:
            before(rig)
        began = time.monotonic()
        events = chaos(rig, plan, random.Random(seed))
        seconds = time.monotonic() - began
        rig.stop()
        rig.drain()
        result = check(rig)
    finally:
        rig.close()
    took = [e["takeover_s"] for e in events if e["kind"] != "blip"]
    timed = [t for t in took if t is not None]
    return dict(
        backend="postgresql" if postgres else "sqlite",
        interval_s=interval_s,
        bound_s=2 * interval_s,
        counts={k: plan.count(k) for k in ("kill", "pause", "cut", "blip")},
        chaos_seconds=seconds,
        takeover_median_s=statistics.median(timed) if timed else None,
        takeover_max_s=max(timed) if timed else None,
        takeovers_missing=len(took) - len(timed),
        over_bound=sum(t > 2 * interval_s for t in timed),
        events=events,
        **result,
    )


def schedule(kills: int, pauses: int, cuts: int, blips: int, seed: int) -> list[str]:
    plan = ["kill"] * kills + ["pause"] * pauses + ["cut"] * cuts + ["blip"] * blips
    random.Random(seed).shuffle(plan)
    return plan


def render(results: list[dict[str, Any]], line: str) -> str:
    rows = [
        "| state | events | takeover median s | takeover max s | max by event s | bound s | "
        "over bound | applied twice | stale plans refused by the cluster | ledger = cluster | "
        "runs | epochs |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        counts = ", ".join(f"{n} {k}s" for k, n in r["counts"].items() if n)
        by: dict[str, list[float]] = {}
        for e in r["events"]:
            if e["takeover_s"] is not None:
                by.setdefault(e["kind"], []).append(e["takeover_s"])
        worst = ", ".join(f"{k} {max(t):.2f}" for k, t in sorted(by.items()))
        rows.append(
            f"| {r['backend']} | {counts} | {r['takeover_median_s']:.2f} | "
            f"{r['takeover_max_s']:.2f} | {worst} | {r['bound_s']:.0f} | {r['over_bound']} | "
            f"{r['applied_twice']} | {r['stale_plans_refused']} | "
            f"{'yes' if r['ledger_equals_cluster'] else '**NO**'} | {r['runs']} | {r['epochs']} |"
        )
    return "\n".join(
        [
            BEGIN,
            "",
            "## Failover (issue 18, point 5)",
            "",
            f"{line}. `python -m benchmarks.failover`: two `alloc controller run` processes "
            f"(interval and leader lease {results[0]['interval_s']:.0f} s, event passes on)"
            " share the state and drive one simulated cluster; the leader is "
            "killed with SIGKILL at random moments of its rounds, paused with SIGSTOP past its "
            "lease then resumed, cut from PostgreSQL (its proxy closes every connection for one "
            "lease) or has its sessions ended (pg_terminate_backend, a *blip*: no takeover "
            "needed). Takeover: from the event to the first round the other controller applied "
            "(wall clock). *Applied twice*: actions of a plan applied under an epoch older than "
            "one that had acted. *Stale plans refused*: plans a resumed leader sent after its "
            "last lease check that the cluster's epoch check refused. Then one controller runs "
            "the rest of the work; the ledger is compared run by run with what the cluster ran.",
            "",
            *rows,
            "",
            END,
            "",
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=30)
    parser.add_argument("--pauses", type=int, default=5)
    parser.add_argument("--cuts", type=int, default=5, help="PostgreSQL only")
    parser.add_argument("--blips", type=int, default=5, help="PostgreSQL only")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--backends", default="postgresql,sqlite")
    args = parser.parse_args()
    postgres = os.environ.get("ALLOC_TEST_POSTGRES_URL")
    results = []
    for backend in args.backends.split(","):
        if backend == "postgresql" and not postgres:
            print("no $ALLOC_TEST_POSTGRES_URL (.ci/postgres start prints one): PostgreSQL skipped")
            continue
        pg = backend == "postgresql"
        plan = schedule(
            args.kills, args.pauses, args.cuts if pg else 0, args.blips if pg else 0, args.seed
        )
        with tempfile.TemporaryDirectory() as tmp:
            results.append(measure(Path(tmp), postgres if pg else None, plan, args.seed))
        print({k: v for k, v in results[-1].items() if k != "events"}, flush=True)
    print(publish("failover", results, render, (BEGIN, END)))


if __name__ == "__main__":
    main()
