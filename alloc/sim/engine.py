"""The event loop. It jumps from event to event (arrivals, completions, ends of protection, host
changes, periodic rounds) and applies each plan through the executor. Everything is a pure
function of the lab, the trace, the configuration and the seed.

Two kinds of rounds, as the controller runs them (models/round.md 9, `alloc.rounds`): a full
round on the clock (`round_interval_s`) and when a host changes state, and an event pass on
arrivals, completions and requeues; both are coalesced (at most one per `min_round_gap_s`, a
full round taking the place of a pass that is due with it). The end of a protection calls no
round unless its host is draining: the next full round rebalances. `rounds="full"` runs a
full round on every event instead (the model before event passes, kept to compare with), and
policies without event passes (the baselines) always do.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Protocol

from alloc.adapters.sim import SimExecutor
from alloc.domain import (
    Action,
    HostName,
    HostState,
    Plan,
    Reservation,
    Snapshot,
    TraceJob,
    WorkloadId,
)
from alloc.ledger import Ledger, LedgerStore, SQLiteStore
from alloc.rounds import ROUND_KINDS, Rounds
from alloc.sim.hosts import FailureModel, HostEvent
from alloc.sim.policies import Planner, RoundPlanner
from alloc.sim.quiet import (
    could_take_place,
    nothing_to_decide,
    on_draining_host,
    waiting_fits_free,
)
from alloc.sim.recorder import Rates, Recorder, RoundRecord
from alloc.sim.world import World
from alloc.solve.validate import validate


class Need(IntEnum):
    """What an event calls for."""

    PASS = 0  # an event pass (a full round when the policy has no passes)
    FULL = 1


class Kind(IntEnum):
    """Event kinds, in the order events of one instant are handled."""

    HOST = 0  # a host changes state
    REPAIRED = 1
    COMPLETE = 2
    ARRIVE = 3
    PROTECTION_END = 4
    FAILURE = 5
    ROUND = 6  # a coalesced round
    PERIODIC = 7  # the periodic rebalancing round


@dataclass(frozen=True, slots=True)
class SimConfig:
    days: float = 30.0
    round_interval_s: float = 300.0  # periodic rebalancing round
    min_round_gap_s: float = 10.0  # rounds triggered by events are coalesced
    checkpoint_interval_s: float | None = None  # None: the lab's policy; else it replaces it
    failures: FailureModel | None = None
    host_events: tuple[HostEvent, ...] = ()
    repair_h: float = 8.0  # a drained unhealthy host is ready again this long after hand-over
    # The contract's policies validate their own plans inside the round (a violation is a bug
    # and raises); the baselines' plans are checked here and their violations counted.
    keeps_contract: bool = True
    skip_quiet_rounds: bool = False  # sound for policies that never preempt without a start
    rounds: str = "events"  # events: event passes between full rounds | full: full rounds only
    validate_passes: bool = False  # also validate every pass's whole plan from scratch

    def __post_init__(self) -> None:
        if self.rounds not in ROUND_KINDS:
            raise ValueError(
                f"rounds: expected one of {', '.join(ROUND_KINDS)}, got {self.rounds!r}"
            )


class OnProgress(Protocol):
    """Told after every instant of simulated time: the time reached (seconds from the start),
    the full rounds and the event passes run so far."""

    def __call__(self, t_s: float, rounds: int, passes: int) -> None: ...


@dataclass
class SimResult:
    lab: Snapshot
    config: SimConfig
    world: World
    recorder: Recorder
    rounds: int = 0  # full rounds run
    passes: int = 0  # event passes run
    skipped_rounds: int = 0
    skipped_passes: int = 0  # passes not run: nothing queued, every host ready
    violations: int = 0
    wall_seconds: float = 0.0
    first_violations: list[str] = field(default_factory=list)
    stopped_at_s: float | None = None  # asked to stop here, before the end (a partial run)

    @property
    def partial(self) -> bool:
        return self.stopped_at_s is not None

    @property
    def horizon_s(self) -> float:
        """The simulated time the run covers: its days, or where it was stopped."""
        if self.stopped_at_s is not None:
            return self.stopped_at_s
        return self.config.days * 86400.0


class Simulation:
    def __init__(
        self,
        lab: Snapshot,
        jobs: list[TraceJob],
        planner: Planner,
        config: SimConfig | None = None,
        store: LedgerStore | None = None,
    ) -> None:
        self.config = config or SimConfig()
        if self.config.checkpoint_interval_s is not None:
            # One interval for both sides: the allocator's rules (costly_to_stop, what a
            # preemption loses) read it from the snapshot's policy, the executor keeps progress
            # by it.
            policy = replace(lab.policy, checkpoint_interval_s=self.config.checkpoint_interval_s)
            lab = replace(lab, policy=policy)
        self.lab = lab
        self.planner = planner
        self.recorder = Recorder(Rates())
        ledger = Ledger(store or SQLiteStore(), lab.policy.lookback_s)
        horizon = self.config.days * 86400.0
        self.world = World(
            lab, [j for j in jobs if j.submitted_s <= horizon], ledger, self.recorder
        )
        self.executor = SimExecutor(self.world, lab.policy.checkpoint_interval_s)
        self.events: list[tuple[float, int, int, object]] = []
        self._seq = 0
        self.last_round_s = float("-inf")
        self.round_pending = False  # a coalesced round is scheduled ...
        self.full_pending = False  # ... and it is a full round
        self.rounds: Rounds | None = None
        if self.config.rounds == "events" and isinstance(planner, RoundPlanner):
            self.rounds = planner.rounds(self.config.validate_passes)
        self.failure_rng = self.config.failures.rng() if self.config.failures else None

    def push(self, t: float, kind: Kind, payload: object = None) -> None:
        self._seq += 1
        heapq.heappush(self.events, (t, int(kind), self._seq, payload))

    def run(
        self, progress: OnProgress | None = None, stop: Callable[[], bool] | None = None
    ) -> SimResult:
        """Run to the end of the configured days, or until `stop()` (asked before each instant
        of simulated time) says to stop: then the run ends at the last instant handled, with
        every event and round of it done, and the result covers the time up to it (a partial
        run: `stopped_at_s`)."""
        started = time.perf_counter()
        result = SimResult(self.lab, self.config, self.world, self.recorder)
        horizon = result.horizon_s
        for sj in self.world.jobs.values():
            if sj.state == "pending":
                self.push(max(0.0, sj.job.submitted_s), Kind.ARRIVE, sj.job.id)
        for sj in self.world.running.values():  # the lab's running workloads
            self.push(sj.seg_start_s + sj.remaining_s, Kind.COMPLETE, (sj.job.id, sj.version))
            if sj.allocated and sj.seg_start_s + sj.job.min_runtime_s > 0:
                self.push(
                    sj.seg_start_s + sj.job.min_runtime_s,
                    Kind.PROTECTION_END,
                    (sj.job.id, sj.version),
                )
        for e in self.config.host_events:
            self.push(e.t_s, Kind.HOST, (e.host, e.state))
        if self.config.failures and self.failure_rng:
            for name in sorted(self.world.hosts):
                failure_t = self.config.failures.next_failure_s(self.failure_rng, 0.0)
                self.push(failure_t, Kind.FAILURE, name)
        self.push(0.0, Kind.PERIODIC)
        while self.events and self.events[0][0] <= horizon:
            if stop is not None and stop():
                result.stopped_at_s = self.world.now_s
                break
            t = self.events[0][0]
            self.world.advance(t)
            round_now = full_now = need_round = False
            while self.events and self.events[0][0] == t:
                _, kind, _, payload = heapq.heappop(self.events)
                if kind == Kind.PERIODIC:
                    round_now = full_now = True
                    self.push(t + self.config.round_interval_s, Kind.PERIODIC)
                elif kind == Kind.ROUND:
                    round_now, self.round_pending = True, False
                    full_now |= self.full_pending
                    self.full_pending = False
                else:
                    need = self._handle(t, Kind(kind), payload)
                    need_round |= need is not None
                    full_now |= need is Need.FULL
            if need_round and not round_now:
                if t - self.last_round_s >= self.config.min_round_gap_s:
                    round_now = True
                else:
                    self.full_pending |= full_now
                    full_now = False
                    if not self.round_pending:
                        self.round_pending = True
                        self.push(self.last_round_s + self.config.min_round_gap_s, Kind.ROUND)
            if round_now:
                full_now |= self.full_pending  # a full round due later goes now instead
                self.full_pending = False
                self._round(t, result, full_now or self.rounds is None)
            if progress:
                progress(t, result.rounds, result.passes)
        end = result.horizon_s
        self.world.advance(end)
        self.recorder.flush()
        self.world.ledger.close(self.world.epoch0 + end)  # work still running is charged
        result.wall_seconds = time.perf_counter() - started
        return result

    def _handle(self, t: float, kind: Kind, payload: object) -> Need | None:
        """Apply one event to the world; what kind of round it calls for, if any."""
        world = self.world
        if kind is Kind.ARRIVE:
            job_id = WorkloadId(str(payload))
            world.arrive(job_id)
            # Unallocated work only takes free GPUs: no room, no round.
            charged = world.charged(world.jobs[job_id].job)
            if charged or waiting_fits_free(world, (), (job_id,)):
                return Need.PASS
            return None
        if kind in (Kind.COMPLETE, Kind.PROTECTION_END):
            assert isinstance(payload, tuple)
            job_id, version = payload
            sj = world.running.get(job_id)
            if sj is None or sj.version != version:
                return None  # stale: the run it belonged to is over
            if kind is Kind.COMPLETE:
                world.complete(job_id)
                return Need.PASS
            # The end of a protection matters at once if the work must go (a draining host);
            # otherwise the next full round rebalances. Full rounds only: as before event
            # passes, a round also when queued allocated work could take its place.
            if on_draining_host(world, sj):
                return Need.FULL
            if self.rounds is None and could_take_place(world, sj):
                return Need.FULL
            return None
        if kind is Kind.HOST:
            assert isinstance(payload, tuple)
            host, state = payload
            world.set_host_state(host, state)
            return Need.FULL
        if kind is Kind.FAILURE:
            name = HostName(str(payload))
            if world.hosts[name].state is HostState.READY and name not in world.removed:
                world.set_host_state(name, HostState.UNHEALTHY)
                return Need.FULL
            return None
        if kind is Kind.REPAIRED:
            name = HostName(str(payload))
            world.set_host_state(name, HostState.READY)
            if self.config.failures and self.failure_rng:
                self.push(
                    self.config.failures.next_failure_s(self.failure_rng, t), Kind.FAILURE, name
                )
            return Need.FULL
        raise AssertionError(kind)

    def _round(self, t: float, result: SimResult, full: bool) -> None:
        self.last_round_s = t
        rates = self.recorder.rates
        world = self.world
        if (
            not full
            and self.config.skip_quiet_rounds
            and self.rounds is not None
            and not world.queued
            and world.trouble == 0
            and self.rounds.fits(world.cluster())
        ):
            # A pass only starts queued work (and lists drained hosts): with nothing queued and
            # every host ready it has nothing to decide. What changed is synced at the next.
            result.skipped_passes += 1
            rates.fits = False
        elif full and self.config.skip_quiet_rounds and nothing_to_decide(world):
            result.skipped_rounds += 1  # nothing can start, even on displaced work's GPUs
            rates.fits = False
        else:
            reserved = self._plan_and_apply(t, result, full)
            rates.fits = waiting_fits_free(self.world, reserved)
        rates.waiting = self.world.startable_queued_gpus()

    def _plan(self, full: bool) -> tuple[Snapshot | None, Plan]:
        """A full round (or the policy's plan) on the world's snapshot, or an event pass on
        what changed since the last one."""
        rounds = self.rounds
        now = self.world.at(self.world.now_s)
        if rounds is not None and not full and rounds.fits(self.world.cluster(), now):
            self._sync()
            snapshot = self.executor.snapshot() if rounds.validate_whole else None
            return snapshot, rounds.event(self.world.at(self.world.now_s), snapshot)
        if rounds is not None and rounds.fits(self.world.cluster()):
            self._sync()  # the state is the snapshot's: the round rebases it
            snapshot = self.executor.snapshot()
            return snapshot, rounds.full(snapshot, synced=True).plan
        snapshot = self.executor.snapshot()
        self.world.touched.clear()  # what the snapshot shows; later changes are synced
        if rounds is not None:
            return snapshot, rounds.full(snapshot).plan
        return snapshot, self.planner(snapshot)

    def _sync(self) -> None:
        """Tell the carried state what the world did since the last sync."""
        assert self.rounds is not None
        world = self.world
        changed, gone = [], []
        for wid in world.touched:
            sj = world.jobs[wid]
            if sj.state == "done":
                gone.append(wid)
            else:
                changed.append(world.workload(sj))
        world.touched.clear()
        self.rounds.sync(changed, gone)

    def _plan_and_apply(self, t: float, result: SimResult, full: bool) -> tuple[Reservation, ...]:
        """Plan, apply, schedule what follows; returns the plan's reservations."""
        began = time.perf_counter()
        snapshot, plan = self._plan(full)
        seconds = time.perf_counter() - began
        problems = []
        if not self.config.keeps_contract:
            assert snapshot is not None
            problems = validate(snapshot, plan)
        if plan.kind == "event":
            result.passes += 1
        else:
            result.rounds += 1
        result.violations += len(problems)
        if problems and len(result.first_violations) < 20:
            at = self.world.at(t).isoformat()
            result.first_violations.extend(f"{at}: {p}" for p in problems)
        report = self.executor.apply(plan)
        if self.rounds is not None and self.rounds.ready:
            self._sync()
        reserved = plan.reservations
        # Preempted work is requeued: like an arrival, it calls for a round (at the next
        # allowed time) if it fits the GPUs left free, e.g. beside the work that displaced it
        # on another host.
        requeued = [r.workload for r in report.results if r.ok and r.action is Action.PREEMPT]
        if (
            requeued
            and not self.round_pending
            and waiting_fits_free(self.world, reserved, requeued)
        ):
            self.round_pending = True
            self.push(t + self.config.min_round_gap_s, Kind.ROUND)
        starts = 0
        for r in report.results:
            if not r.ok or r.action is not Action.START:
                continue
            starts += 1
            sj = self.world.running[r.workload]
            self.push(t + sj.remaining_s, Kind.COMPLETE, (r.workload, sj.version))
            if sj.allocated and sj.job.min_runtime_s > 0:
                self.push(t + sj.job.min_runtime_s, Kind.PROTECTION_END, (r.workload, sj.version))
        for name in plan.drained_hosts:
            if self._hand_over(t, name) and self.rounds is not None:
                self._full_round_soon(t)  # the cluster changed: the carried state is stale
        self.recorder.rounds.append(
            RoundRecord(
                t,
                seconds,
                plan.report.status,
                len(problems),
                starts,
                sum(1 for r in report.results if r.ok and r.action is Action.PREEMPT),
                plan.kind,
            )
        )
        if int(t // 3600) not in self.recorder.ratios:
            self.recorder.ratios[int(t // 3600)] = self.world.leaf_ratios()
        return reserved

    def _full_round_soon(self, t: float) -> None:
        self.full_pending = True
        if not self.round_pending:
            self.round_pending = True
            self.push(t + self.config.min_round_gap_s, Kind.ROUND)

    def _hand_over(self, t: float, name: HostName) -> bool:
        """A drained host goes to repair (unhealthy) or leaves the cluster (retired); True if
        it did."""
        world = self.world
        if world.used.get(name, 0) or world.drained(name) is None:
            return False
        state = world.hosts[name].state
        if state is HostState.RETIRED:
            world.remove(name)
        elif state is HostState.UNHEALTHY:
            world.set_host_state(name, HostState.MAINTENANCE)
            self.push(t + self.config.repair_h * 3600.0, Kind.REPAIRED, name)
        return True
