"""What the controller's state says it has done so far, for `alloc status`: its rounds by kind
and solver status over the time they span (wall or simulated: the times the rounds were
stamped with), the actions carried out, the ledger's runs and charged GPU-hours, the
executor's faults (alloc.controller.faults), and which controller leads (the leader lease,
alloc.controller.lease)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import and_, func, inspect, select

from alloc.controller.faults import fault_lines
from alloc.controller.lease import ROW, db_now, leadership
from alloc.controller.state import StateStore
from alloc.controller.tables import actions, decisions, rounds, runs
from alloc.domain import Action, Reason
from alloc.readable import counted, natural_key
from alloc.report.fmt import duration


def recorded_with_leader(
    store: StateStore, unseen: int = 0, ended: int = 0, simulated: bool = False
) -> list[str]:
    """`recorded`, and which controller leads."""
    now = leader(store)
    lines = recorded(store, unseen, ended, simulated)
    return lines + ([leader_line(now, simulated)] if now is not None else [])


def recorded(
    store: StateStore, unseen: int = 0, ended: int = 0, simulated: bool = False
) -> list[str]:
    """Lines on the rounds, actions, ledger and faults recorded; none when nothing was.
    `unseen`: work running that the ledger has not seen yet (a round opens its run when it
    sees it running, the round after its start), said beside the ledger's count; `ended`:
    runs the ledger holds open of work no longer running (the next round closes them).
    `simulated`: the rounds were stamped with a simulated cluster's time, said so."""
    with store.engine.connect() as db:
        by_kind = {
            str(kind): (int(n), float(first), float(last))
            for kind, n, first, last in db.execute(
                select(
                    rounds.c.kind, func.count(), func.min(rounds.c.at_s), func.max(rounds.c.at_s)
                ).group_by(rounds.c.kind)
            )
        }
        statuses: dict[str, int] = dict(
            db.execute(
                select(rounds.c.status, func.count())
                .group_by(rounds.c.status)
                .order_by(rounds.c.status)
            ).all()
        )
        done: dict[str, int] = dict(
            db.execute(
                select(actions.c.action, func.count())
                .where(actions.c.ok)
                .group_by(actions.c.action)
            ).all()
        )
        # Preemptions of work whose host went into maintenance: availability events, apart.
        down = db.execute(
            select(func.count())
            .select_from(actions)
            .join(
                decisions,
                and_(
                    decisions.c.round_id == actions.c.round_id,
                    decisions.c.workload == actions.c.workload,
                ),
            )
            .where(
                actions.c.ok,
                actions.c.action == Action.PREEMPT.value,
                decisions.c.reason == Reason.HOST_MAINTENANCE.value,
            )
        ).scalar_one()
        ran, running = db.execute(
            select(func.count(), func.count().filter(runs.c.ended_s.is_(None)))
        ).one()
    if not by_kind:
        return fault_lines(store)
    first = min(f for _, f, _ in by_kind.values())
    last = max(t for _, _, t in by_kind.values())
    full, passes = by_kind.get("full", (0,))[0], by_kind.get("event", (0,))[0]
    charged = store.window_gpu_hours(last, last - first)
    kept = ", ".join(f"{s} {n}" for s, n in statuses.items())
    lines = [
        f"rounds: {full + passes} from {_at(first)} to {_at(last)} ({duration(last - first)}"
        + ("; simulated time" if simulated else "")
        + "): "
        f"{counted(full, 'full round')}, {counted(passes, 'event pass', 'event passes')} "
        f"({kept}); carried out: starts "
        f"{done.get('start', 0)}, preemptions {done.get('preempt', 0) - down}"
        + (f", and apart {down} as hosts went into maintenance" if down else ""),
        f"ledger: {counted(ran, 'run')} ({running - ended} running"
        + (f"; {ended} more open until the next round sees them ended" if ended else "")
        + (f"; {unseen} more running, not yet seen by a round" if unseen else "")
        + "); charged "
        "GPU-hours: "
        + (
            ", ".join(
                f"{b} {h:,.1f}" for b, h in sorted(charged.items(), key=lambda c: natural_key(c[0]))
            )
            or "none"
        ),
    ]
    return lines + fault_lines(store)


@dataclass(frozen=True, slots=True)
class Leader:
    """The lease as the state store holds it, with the database's clock as it was read."""

    holder: str
    epoch: int
    since_s: float
    renewed_s: float
    expires_s: float
    now_s: float

    @property
    def valid(self) -> bool:
        return self.epoch > 0 and self.expires_s > self.now_s

    @property
    def released(self) -> bool:
        """Given up by its holder at a clean stop (Lease.release sets its renewal and its
        expiry to the same moment; a renewal sets the expiry a lease's length later)."""
        return self.expires_s <= self.renewed_s


def leader(store: StateStore) -> Leader | None:
    """The lease as the state holds it; None when no controller ever held it."""
    with store.engine.connect() as db:
        if not inspect(db).has_table("leadership"):
            return None
        row = db.execute(select(leadership, db_now(store.engine)).where(ROW)).first()
    if row is None or row[2] == 0:
        return None
    _, holder, epoch, since, renewed, expires, now = row
    return Leader(holder, epoch, since, renewed, expires, float(now))


def leader_line(now: Leader, simulated: bool = False) -> str:
    """`leader: ctl-a (epoch 3) since ..., lease renewed 0.2 s ago`, or who held it last and
    whether it released the lease or the lease ran out. The lease's times are the database's
    (wall) clock: said so beside rounds stamped with `simulated` time."""
    clock = " (wall clock)" if simulated else ""
    if now.valid:
        return (
            f"leader: {now.holder} (epoch {now.epoch}) since {_at(now.since_s)}; lease renewed "
            f"{_ago(now.now_s - now.renewed_s)} ago, valid {_ago(now.expires_s - now.now_s)} "
            f"more{clock}"
        )
    if now.released:
        return (
            f"leader: none: {now.holder} (epoch {now.epoch}) released the lease "
            f"{_ago(now.now_s - now.expires_s)} ago{clock}"
        )
    return (
        f"leader: none: the lease of {now.holder} (epoch {now.epoch}) ended "
        f"{_ago(now.now_s - now.expires_s)} ago{clock} (a standby, if any, takes it within a "
        "quarter of the lease)"
    )


def _ago(seconds: float) -> str:
    return f"{max(0.0, seconds):.1f} s" if seconds < 60 else duration(seconds)


def _at(epoch_s: float) -> str:
    return f"{datetime.fromtimestamp(epoch_s, UTC):%Y-%m-%d %H:%M:%S} UTC"
