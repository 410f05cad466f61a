"""The rig of the failover benchmark and test (benchmarks/failover.py): a simulated cluster that
outlives its controllers (alloc.adapters.simcluster, which records who applied what), two
`alloc controller run` processes sharing one state store (an SQLite file, or PostgreSQL), and
for PostgreSQL a proxy per controller through which it reaches the database, cut on demand."""

from __future__ import annotations

import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from sqlalchemy import make_url, text

from alloc.controller.history import Leader, leader
from alloc.controller.lease import lease_metadata
from alloc.controller.state import StateStore
from alloc.controller.tables import metadata
from benchmarks.pg_proxy import Proxy

HERE = Path(__file__).resolve().parent
LAB = """\
now: 2026-11-30T00:00:00Z
cluster:
  name: sim4
  host_groups:
    - {prefix: n, count: 4, gpus: 8, gpu_type: h100, hosts_per_block: 4}
budgets:
  name: lab
  children:
    - {name: nlp, share: 50%}
    - {name: vision, share: 50%}
"""
CONFIG = """\
name: failover
executor: sim
interval: {interval}
event_poll: {poll}
min_round_gap: {gap}
state: {state}
policy: {{solver: greedy}}
budgets:
  name: lab
  children:
    - {{name: nlp, share: 60%}}
    - {{name: vision, share: 40%}}
metrics: {{port: {port}}}
sim: {{lab: lab.yaml, trace: trace.csv, cluster: cluster.db, step: {step}}}
"""


def trace(seed: int, hours: float) -> str:
    """Both teams and unallocated work, 1-16 GPUs, runs of 5 to 40 minutes, resumable or not,
    12 an hour over `hours` simulated hours (about 90% of the 32 GPUs asked for): starts,
    preemptions and rebalancing all along."""
    r = random.Random(seed)
    rows = ["id,budget,gpus,submitted,runtime,min_runtime,resumable,priority,topology"]
    for i in range(int(12 * hours)):
        budget = r.choice(["nlp", "nlp", "vision", ""])
        min_runtime = 0 if not budget or r.random() < 0.2 else r.choice([300, 600, 1200])
        rows.append(
            f"j{i:04d},{budget},{r.choice([1, 2, 4, 8, 8, 16])},"
            f"{r.uniform(0, hours * 3600):.0f},{r.uniform(300, 2400):.0f},{min_runtime},"
            f"{r.choice(['true', 'false'])},{r.choice([0, 1])},"
        )
    return "\n".join(rows) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Rig:
    """Two controller slots, `a` and `b`, each a config (its own /metrics port and, with
    PostgreSQL, its own proxy), sharing the state and the simulated cluster in `folder`."""

    def __init__(
        self,
        folder: Path,
        postgres: str | None = None,
        interval_s: float = 1.0,
        seed: int = 1,
        hours: float = 12.0,
    ) -> None:
        self.folder, self.interval_s, self.hours = folder, interval_s, hours
        (folder / "lab.yaml").write_text(LAB)
        (folder / "trace.csv").write_text(trace(seed, hours))
        self.cluster = folder / "cluster.db"
        self.proxies: dict[str, Proxy] = {}
        self.ports = {slot: free_port() for slot in "ab"}
        urls = {slot: f"sqlite:///{folder / 'state.db'}" for slot in "ab"}
        self.url = urls["a"]
        if postgres:
            self.url = postgres
            reset(postgres)
            real = make_url(postgres)
            sockets = str(real.query["host"])
            target = f"{sockets}/.s.PGSQL.{real.query.get('port', 5432)}"
            for slot in "ab":  # a short folder: a unix socket's path has 107 bytes at most
                proxied = Path(f"/tmp/alloc-failover-{os.getpid()}-{slot}")
                self.proxies[slot] = Proxy(proxied, target)
                query = {**real.query, "host": str(proxied), "application_name": f"alloc-{slot}"}
                urls[slot] = real.set(query=query).render_as_string(hide_password=False)
        for slot in "ab":
            self.config(slot).write_text(
                CONFIG.format(
                    interval=f"{interval_s}s",
                    poll="0.2s",
                    gap=f"{interval_s / 2}s",
                    state=urls[slot],
                    port=self.ports[slot],
                    step="1m",
                )
            )
        # The end: one controller alone, quick rounds of long steps, to the end of the work.
        (folder / "drain.yaml").write_text(
            CONFIG.format(interval=0.01, poll=0, gap=0, state=self.url, port=0, step="5m")
        )
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.ids: dict[str, str] = {}
        self.started = 0
        self.store = StateStore(self.url)

    def config(self, slot: str) -> Path:
        return self.folder / f"controller-{slot}.yaml"

    def start(self, slot: str, ready: bool = True) -> str:
        """A controller in this slot under a new id (`a0`, `a1`, ...); with `ready`, once it
        leads or stands by."""
        self.ids[slot] = f"{slot}{self.started}"
        self.started += 1
        log = self.folder / f"{self.ids[slot]}.log"
        with log.open("wb") as sink:
            self.procs[slot] = controller(self.config(slot), "--id", self.ids[slot], stderr=sink)
        deadline = time.monotonic() + 60
        while ready and time.monotonic() < deadline:
            said = log.read_text(errors="replace")
            if "leads" in said or "standing by" in said:
                return self.ids[slot]
            if self.procs[slot].poll() is not None:
                raise RuntimeError(f"{self.ids[slot]} ended: {said}")
            time.sleep(0.05)
        if ready:
            raise RuntimeError(f"{self.ids[slot]} did not start within 60 s")
        return self.ids[slot]

    def signal(self, slot: str, sig: signal.Signals) -> None:
        os.kill(self.procs[slot].pid, sig)
        if sig is signal.SIGKILL:
            self.procs[slot].wait()

    def leader(self) -> Leader | None:
        return leader(self.store)

    def slot_of(self, holder: str) -> str:
        return holder[0]

    def locked(self) -> bool:
        """Whether an SQLite file of the rig is held by a transaction (a controller paused
        inside one would keep every other from writing it: models/failover.md)."""
        files = [self.cluster] + ([] if self.proxies else [self.folder / "state.db"])
        for f in files:
            db = sqlite3.connect(str(f), timeout=0, isolation_level=None)
            try:
                db.execute("BEGIN EXCLUSIVE")
                db.execute("ROLLBACK")
            except sqlite3.OperationalError:
                return True
            finally:
                db.close()
        return False

    def terminate_backends(self, slot: str) -> int:
        with self.store.engine.begin() as db:
            rows = db.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE application_name = :name"
                ),
                {"name": f"alloc-{slot}"},
            ).all()
        return len(rows)

    def stop(self) -> None:
        """Both controllers stopped (SIGTERM: each ends its round and lets the lease go)."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.terminate()
        for proc in self.procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def drain(self) -> None:
        """The rest of the work, one controller alone, until nothing is left."""
        for _ in range(10):
            if unfinished_jobs(self.cluster) == 0:
                return
            with sqlite3.connect(str(self.cluster), timeout=30) as db:
                (now_s,) = db.execute("SELECT now_s FROM clock").fetchone()
            rounds = int(max(0.0, self.hours * 3600 - now_s) / 300) + 12  # 5 min a round
            done = controller(self.folder / "drain.yaml", "--id", "drain", "--rounds", str(rounds))
            assert done.wait(timeout=600) == 0, "the draining controller failed"
        raise RuntimeError(f"{unfinished_jobs(self.cluster)} jobs never ended")

    def close(self) -> None:
        self.stop()
        self.store.close()
        for proxy in self.proxies.values():
            proxy.close()


def controller(
    config: Path, *args: str, stderr: IO[bytes] | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "alloc.cli.app", "controller", "run", "--config", str(config)]
        + list(args),
        stdout=subprocess.DEVNULL,
        stderr=stderr if stderr is not None else subprocess.DEVNULL,
        cwd=HERE.parent,
    )


def unfinished_jobs(cluster: Path) -> int:
    with sqlite3.connect(str(cluster), timeout=30) as db:
        return int(db.execute("SELECT COUNT(*) FROM jobs WHERE state != 'done'").fetchone()[0])


def reset(url: str) -> None:
    """An empty PostgreSQL database for a run: the state's tables and the lease's dropped."""
    store = StateStore(url)
    try:
        lease_metadata.drop_all(store.engine)
        metadata.drop_all(store.engine)
    finally:
        store.close()
