"""The leader lease: of the controllers pointed at one state store, only the one holding the
lease acts (models/failover.md).

The lease is one row of the state store: its holder, its epoch (the fencing token: each
takeover adds one) and when it expires, by the database's clock (one clock for every
controller, whatever their own say). The holder renews it every quarter of its duration (a
thread: a long solve does not lose it) and right before the executor acts; a standby takes it
once it has expired, with the next epoch. Every write of the holder's ledger, plans and
actions first checks, in the same transaction, that the row still names it with its epoch
(`StateStore.fence`): a holder paused or cut off past its lease, then back, has every write
refused, and an executor that can check the epoch itself (`Fenced`) refuses its actions too.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    cast,
    event,
    extract,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql.elements import ColumnElement

from alloc.controller.state import StateStore

log = logging.getLogger("alloc.controller")

lease_metadata = MetaData()
leadership = Table(
    "leadership",
    lease_metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),  # one row: 0
    Column("holder", String(200), nullable=False),
    Column("epoch", Integer, nullable=False),  # 0: never held
    Column("since_s", Float, nullable=False),  # the database's clock, epoch seconds
    Column("renewed_s", Float, nullable=False),
    Column("expires_s", Float, nullable=False),
)
ROW = leadership.c.id == 0


class NotLeader(Exception):
    """This controller does not hold the lease (any more): it must not act."""


def db_now(engine: Engine) -> ColumnElement[float]:
    """The database's clock in epoch seconds (SQLite: the machine's, which every controller of
    an SQLite file shares)."""
    name = engine.dialect.name
    if name == "postgresql":
        return cast(extract("epoch", func.clock_timestamp()), Float)
    if name == "sqlite":
        return (func.julianday("now") - 2440587.5) * 86400.0
    return literal(time.time())  # another database: this machine's clock at the call


class Lease:
    """This controller's side of the lease; `duration_s` long, renewed and retried every
    quarter of it. `on_change(change, epoch)` is told when it is `taken`, `lost` (another
    controller took it, or it ran out) or `released` (a clean stop: `release`)."""

    def __init__(
        self,
        store: StateStore,
        holder: str,
        duration_s: float,
        on_change: Callable[[str, int], None] | None = None,
    ) -> None:
        self.store, self.holder, self.duration_s = store, holder, duration_s
        self.retry_s = duration_s / 4
        self.on_change = on_change
        self.epoch = 0  # the epoch held; 0: a standby
        self.seen = 0  # the latest epoch this controller has seen
        self._valid_until = 0.0  # by this process's monotonic clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        engine = store.engine
        if engine.dialect.name == "postgresql":
            # A session idle inside a transaction (its controller paused, or cut off) holds
            # the lease's row locked: the server ends it well before the lease expires.
            ms = max(100, int(duration_s * 500))
            event.listen(engine, "connect", lambda conn, _: _set_idle_timeout(conn, ms))
            engine.dispose()  # connections opened so far, without the timeout
        _create(engine)
        store.fence = self._fence

    @property
    def held(self) -> bool:
        return self.epoch > 0

    def acquire(self) -> bool:
        """The lease held: taken with the next epoch if it has expired (a database that does
        not answer: not taken, logged). True when held."""
        if self.held:
            return True
        began = time.monotonic()
        engine = self.store.engine
        now = db_now(engine)
        try:
            with engine.begin() as db:
                taken = db.execute(
                    update(leadership)
                    .where(ROW, leadership.c.expires_s < now)
                    .values(
                        holder=self.holder,
                        epoch=leadership.c.epoch + 1,
                        since_s=now,
                        renewed_s=now,
                        expires_s=now + self.duration_s,
                    )
                ).rowcount
                holder, epoch = db.execute(
                    select(leadership.c.holder, leadership.c.epoch).where(ROW)
                ).one()
        except DBAPIError as exc:
            log.warning("cannot read the leader lease: %s", exc)
            return False
        self.seen = max(self.seen, epoch)
        if taken != 1 or holder != self.holder:
            return False
        with self._lock:
            self.epoch, self._valid_until = epoch, began + self.duration_s
        if self._beat is None:
            self._beat = threading.Thread(target=self._renewing, name="lease", daemon=True)
            self._beat.start()
        if self.on_change is not None:
            self.on_change("taken", epoch)
        return True

    def confirm(self) -> int:
        """Right before the executor acts: the lease renewed under the same epoch, with at least
        half of it left by this process's clock (a renewal slowed down by the network is not
        acted on); else NotLeader. The epoch."""
        epoch = self._renew()
        if time.monotonic() > self._valid_until - self.duration_s / 2:
            raise NotLeader(f"the lease (epoch {epoch}) was confirmed too slowly to act on")
        return epoch

    def check(self) -> None:
        """Between two actions of one apply: NotLeader unless the lease is held with at least
        a quarter of it left by this process's clock (no database call: the renewing thread
        keeps it so while the database answers; cut off or paused, it runs out)."""
        if not self.epoch or time.monotonic() > self._valid_until - self.duration_s / 4:
            raise NotLeader(
                f"the lease (epoch {self.epoch}) is no longer held long enough to act on: "
                "the rest of the plan is not applied"
            )

    def release(self) -> None:
        """Stop renewing and let a standby take the lease at once (a clean stop)."""
        self._stop.set()
        epoch = self.epoch
        if not epoch:
            return
        self._lose(epoch, "released")
        try:
            with self.store.engine.begin() as db:
                # renewed and expired at one moment: `alloc status` tells a released lease
                # from one that ran out (alloc.controller.history.Leader.released)
                now = db.execute(select(db_now(self.store.engine))).scalar_one()
                db.execute(
                    update(leadership)
                    .where(ROW, leadership.c.holder == self.holder, leadership.c.epoch == epoch)
                    .values(renewed_s=now, expires_s=now)
                )
        except DBAPIError as exc:  # it expires by itself
            log.warning("cannot release the leader lease: %s", exc)

    def _renew(self) -> int:
        began = time.monotonic()
        epoch = self.epoch
        if not epoch:
            raise NotLeader("this controller does not hold the lease")
        now = db_now(self.store.engine)
        with self.store.engine.begin() as db:
            renewed = db.execute(
                update(leadership)
                .where(ROW, leadership.c.holder == self.holder, leadership.c.epoch == epoch)
                .values(renewed_s=now, expires_s=now + self.duration_s)
            ).rowcount
        if renewed != 1:
            self._lose(epoch)
            raise NotLeader(f"the lease (epoch {epoch}) was taken by another controller")
        with self._lock:
            if self.epoch == epoch:
                self._valid_until = max(self._valid_until, began + self.duration_s)
        return epoch

    def _renewing(self) -> None:
        """The heartbeat: renew every `retry_s`; a lease not renewed by the time it would
        expire (the database out of reach) is given up: a standby may hold it by then."""
        while not self._stop.wait(self.retry_s):
            epoch = self.epoch
            if not epoch:
                continue
            try:
                self._renew()
            except NotLeader:
                pass
            except Exception as exc:  # noqa: BLE001 - the database out of reach: try again
                log.warning("cannot renew the leader lease: %s", exc)
                if time.monotonic() > self._valid_until:
                    self._lose(epoch)

    def _fence(self, db: Connection) -> None:
        """First in every write of the holder's (StateStore.fence): the row still names this
        controller with its epoch, and stays locked so until the write commits."""
        epoch = self.epoch
        if not epoch:
            raise NotLeader("this controller does not hold the lease: nothing is written")
        same = db.execute(
            update(leadership)
            .where(ROW, leadership.c.holder == self.holder, leadership.c.epoch == epoch)
            .values(epoch=leadership.c.epoch)
        ).rowcount
        if same != 1:
            self._lose(epoch)
            raise NotLeader(f"the lease (epoch {epoch}) was taken by another controller")

    def _lose(self, epoch: int, change: str = "lost") -> None:
        with self._lock:
            if self.epoch != epoch:
                return
            self.epoch = 0
        if self.on_change is not None:
            self.on_change(change, epoch)


def _create(engine: Engine) -> None:
    """The lease's table and row, once (two controllers starting together: one creates)."""
    for attempt in range(5):
        try:
            lease_metadata.create_all(engine)
            with engine.begin() as db:
                if db.execute(select(leadership.c.id).where(ROW)).first() is None:
                    db.execute(
                        insert(leadership).values(
                            id=0, holder="", epoch=0, since_s=0.0, renewed_s=0.0, expires_s=0.0
                        )
                    )
            return
        except DBAPIError:
            if attempt == 4:
                raise
            time.sleep(0.1 * (attempt + 1))


def _set_idle_timeout(conn: object, ms: int) -> None:
    cursor = conn.cursor()  # type: ignore[attr-defined]
    cursor.execute(f"SET idle_in_transaction_session_timeout = {int(ms)}")
    cursor.close()
    conn.commit()  # type: ignore[attr-defined]
