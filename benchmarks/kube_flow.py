"""Pods through the controller on the real local Kubernetes control plane, end to end (issue 16):
`.venv/bin/python -m benchmarks.kube_flow [--pods 1000] [--kills 0] [--nodes 28]`.

The control plane of ../shared/recipes/k8s-local.sh (v1.20, no kubelet) gets `--nodes` more
fake 8-GPU nodes; `--pods` pods of two queues are submitted at once for `alloc`'s scheduler
(single pods of 1-8 GPUs, gangs of two 8-GPU pods, a tenth without a contract, so preemptible);
the real controller (`alloc controller run`, a process of its own, state in SQLite) places
them; an emulated kubelet (`Kubelet`, a thread here) marks each bound pod Running and, after
the seconds its annotation `bench.alloc.dev/runtime` says, Succeeded. With `--kills N` the
controller is killed with SIGKILL N times at random moments and started again.

At the end (`check`): every workload ended Succeeded exactly once (none lost), no workload ran
twice at once, every run answers a start of a recorded plan (once per planned start), every
pod's `alloc.dev/preemptions` equals the evictions it went through (each eviction followed by a
requeue), and the controller's ledger equals what the API showed, run by run (start and end
within 3 s: the API keeps whole seconds, the kubelet looks every 0.2 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alloc.adapters.kubernetes.api import KubeApi, KubeConnection
from alloc.adapters.kubernetes.times import read_time

HERE = Path(__file__).resolve().parent
KUBECONFIG = os.environ.get("ALLOC_TEST_KUBECONFIG", "/var/lib/k8s-local/kubeconfig")
RUNTIME = "bench.alloc.dev/runtime"
NODE_PREFIX = "flow-gpu-"
TOLERANCE_S = 1.5  # the API keeps whole seconds; the kubelet watches
BEGIN, END = "<!-- kube-flow:begin -->", "<!-- kube-flow:end -->"
CONFIG = """\
name: kube-flow
executor: kubernetes
interval: {interval}s
event_poll: 0.2s
min_round_gap: 0.5s
state: sqlite:///{state}
policy: {{solver: {solver}, time_limit: 5s}}
budgets:
  name: lab
  children:
    - {{name: nlp, share: 60%}}
    - {{name: vision, share: 40%}}
metrics: {{port: 0}}
kubernetes:
  kubeconfig: {kubeconfig}
  namespaces: [{ns}]
  queues: {{{ns}/nlp: nlp, {ns}/vision: vision}}
  timeout: 30s
"""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Workload:
    name: str
    gpus: int  # per pod
    size: int  # pods
    runtime_s: float
    allocated: bool


def submit(api: KubeApi, namespace: str, pods: int, rng: random.Random) -> dict[str, Workload]:
    """`pods` pods: singles of 1-8 GPUs and gangs of two 8-GPU pods, a tenth unallocated."""
    out: dict[str, Workload] = {}
    made = 0
    while made < pods:
        gpus, size = rng.choice([(1, 1), (2, 1), (4, 1), (8, 1), (8, 2)])
        size = min(size, pods - made)
        name = f"w{made:04d}"
        w = Workload(name, gpus, size, round(rng.uniform(2.0, 8.0), 1), rng.random() >= 0.1)
        annotations = {RUNTIME: str(w.runtime_s)}
        if w.allocated:
            annotations["alloc.dev/min-runtime"] = rng.choice(["1s", "3s"])
        labels = {"alloc.dev/queue": rng.choice(["nlp", "vision"])}
        if size > 1:
            labels["alloc.dev/workload"] = name
            annotations["alloc.dev/gang-size"] = str(size)
        for k in range(size):
            body = {
                "metadata": {
                    "name": name if size == 1 else f"{name}-{k}",
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": {
                    "schedulerName": "alloc",
                    "terminationGracePeriodSeconds": 0,
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "m",
                            "image": "train",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}},
                        }
                    ],
                },
            }
            api.create(namespace, body)
        out[name] = w
        made += size
    return out


@dataclass
class PodLife:
    """One pod (by uid) as the kubelet saw it."""

    uid: str
    name: str
    workload: str
    node: str
    bound_s: float  # the API's PodScheduled time (whole seconds: what the ledger reads)
    running_s: float  # when the kubelet saw it bound and started it (events in API order)
    ended_s: float | None = None
    how: str = ""  # succeeded | gone (evicted or deleted)
    gpus: int = 0


@dataclass
class Kubelet:
    """Emulates the kubelets of every node: bound pods run, then succeed after their runtime.
    It watches the namespace's pods (every change, in order: a pod bound and evicted between
    two looks is not missed) and ticks every 0.1 s for the runs that are done."""

    api: KubeApi
    namespace: str
    lives: dict[str, PodLife] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    runtimes: dict[str, float] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # pods of each workload's gang

    def run(self) -> None:
        ticker = threading.Thread(target=self._tick, daemon=True)
        ticker.start()
        from kubernetes import watch

        version = ""
        while not self.stop.is_set():
            try:
                stream = watch.Watch().stream(
                    self.api.core.list_namespaced_pod,
                    self.namespace,
                    resource_version=version or None,
                    timeout_seconds=5,
                    _request_timeout=30,
                )
                for event in stream:
                    pod = self.api.client.sanitize_for_serialization(event["object"])
                    version = pod["metadata"].get("resourceVersion") or version
                    self._seen(pod, event["type"])
                    if self.stop.is_set():
                        break
            except Exception as e:  # noqa: BLE001 - reported at the end; watch again
                if "410" in str(e) or "Expired" in str(e):
                    version = ""
                else:
                    self.errors.append(f"{type(e).__name__}: {e}"[:300])
                time.sleep(0.1)
        ticker.join(timeout=5)

    def _seen(self, pod: dict[str, Any], kind: str) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        uid, node, now = meta["uid"], spec.get("nodeName"), time.time()
        with self.lock:
            life = self.lives.get(uid)
            if kind == "DELETED" or meta.get("deletionTimestamp"):
                if life is not None and life.ended_s is None:
                    life.ended_s, life.how = now, "gone"
                return
            if not node or life is not None:
                return
            scheduled = next(
                (
                    _seconds(read_time(c.get("lastTransitionTime")))
                    for c in status.get("conditions") or ()
                    if c.get("type") == "PodScheduled" and c.get("status") == "True"
                ),
                None,
            )
            labels = meta.get("labels") or {}
            workload = labels.get("alloc.dev/workload") or meta["name"]
            gpus = sum(
                int((c.get("resources") or {}).get("limits", {}).get("nvidia.com/gpu", 0))
                for c in spec.get("containers") or ()
            )
            life = PodLife(uid, meta["name"], workload, node, scheduled or now, now, gpus=gpus)
            self.lives[uid] = life
            notes = meta.get("annotations") or {}
            self.runtimes[uid] = float(notes.get(RUNTIME, "1"))
            self.sizes[workload] = int(notes.get("alloc.dev/gang-size", "1"))
        self._status(meta["name"], "Running", life)

    def _tick(self) -> None:
        while not self.stop.is_set():
            now = time.time()
            with self.lock:
                # A gang's pods make progress together, once all are running (distributed
                # training waits for every rank); a pod bound alone just waits.
                running: dict[str, list[PodLife]] = {}
                for life in self.lives.values():
                    if life.ended_s is None:
                        running.setdefault(life.workload, []).append(life)
                done = [
                    life
                    for workload, lives in running.items()
                    if len(lives) >= self.sizes.get(workload, 1)
                    for life in lives
                    if now - max(x.running_s for x in lives) >= self.runtimes[life.uid]
                ]
            for life in done:
                try:
                    at = self._status(life.name, "Succeeded", life)
                except Exception as e:  # noqa: BLE001 - reported at the end
                    self.errors.append(f"{type(e).__name__}: {e}"[:300])
                    continue
                with self.lock:
                    if at is not None and life.ended_s is None:
                        life.ended_s, life.how = at, "succeeded"  # what the API says
            self.stop.wait(0.1)

    def _status(self, name: str, phase: str, life: PodLife) -> float | None:
        """Report the phase: when it was so (the time written in it), None when the pod left
        meanwhile (an eviction)."""
        started = datetime.fromtimestamp(life.running_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        at = time.time()
        now = datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        state: dict[str, Any] = {"running": {"startedAt": started}}
        if phase == "Succeeded":
            state = {"terminated": {"exitCode": 0, "startedAt": started, "finishedAt": now}}
        status = {
            "phase": phase,
            "startTime": started,
            "conditions": [
                {"type": "Ready", "status": str(phase == "Running"), "lastTransitionTime": now}
            ],
            "containerStatuses": [
                {
                    "name": "m",
                    "ready": phase == "Running",
                    "restartCount": 0,
                    "image": "train",
                    "imageID": "",
                    "state": state,
                }
            ],
        }
        # Only the pod of this uid: its requeued copy has the same name.
        patch = {"metadata": {"uid": life.uid}, "status": status}
        try:
            self.api.core.patch_namespaced_pod_status(
                name, self.namespace, patch, _request_timeout=30
            )
        except Exception as e:  # noqa: BLE001 - the pod left meanwhile (an eviction)
            text = str(e)
            gone = any(code in text for code in ("404", "Not Found", "409", "Conflict"))
            if gone or ("422" in text and "uid" in text.lower()):  # another pod of the name
                return None
            raise
        return at


def add_nodes(api: KubeApi, count: int) -> list[str]:
    names = [f"{NODE_PREFIX}{i:02d}" for i in range(count)]
    res = {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"}
    for name in names:
        try:
            api.core.create_node({"metadata": {"name": name}})
        except Exception as e:  # noqa: BLE001 - left over from an interrupted run
            if "409" not in str(e) and "AlreadyExists" not in str(e):
                raise
        ready = {"type": "Ready", "status": "True", "lastTransitionTime": _now()}
        api.core.patch_node_status(
            name, {"status": {"capacity": res, "allocatable": res, "conditions": [ready]}}
        )
    return names


def controller(config: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as sink:
        return subprocess.Popen(
            [sys.executable, "-m", "alloc.cli.app", "controller", "run", "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            cwd=HERE.parent,
        )


def rounds_recorded(state: Path) -> int:
    """Rounds a controller recorded in its SQLite state, read as a killed writer left it
    (read-write: reading rolls back a journal it left)."""
    if not state.exists():
        return 0
    for _ in range(100):
        try:
            with sqlite3.connect(state, timeout=5) as db:
                return int(db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0])
        except sqlite3.OperationalError as e:
            if "no such table" in str(e):
                return 0
            time.sleep(0.05)
    raise RuntimeError("the state database stayed busy")


def flow(
    api: KubeApi,
    pods: int,
    kills: int,
    nodes: int,
    seed: int = 1,
    solver: str = "greedy",
    workdir: Path | None = None,
    timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """Run the pods through the controller (killed `kills` times) and check the outcome."""
    import tempfile

    rng = random.Random(seed)
    namespace = f"flow-{uuid.uuid4().hex[:6]}"
    # Absolute: a relative sqlite:/// state in the config lies beside the config, and
    # rounds_recorded's beside the working folder.
    work = Path(workdir or tempfile.mkdtemp(prefix="kube-flow-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    for old in ("state.db", "controller.log"):  # a run of its own, whatever was there
        (work / old).unlink(missing_ok=True)
    state, config, log = work / "state.db", work / "controller.yaml", work / "controller.log"
    config.write_text(
        CONFIG.format(interval=2, state=state, solver=solver, kubeconfig=KUBECONFIG, ns=namespace)
    )
    api.core.create_namespace({"metadata": {"name": namespace}})
    extra = add_nodes(api, nodes)
    kubelet = Kubelet(api, namespace)
    thread = threading.Thread(target=kubelet.run, daemon=True)
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(300):  # the namespace's service account token
            accounts = api.core.list_namespaced_service_account(namespace).items
            if accounts and accounts[0].secrets:
                break
            time.sleep(0.1)
        workloads = submit(api, namespace, pods, rng)
        began = time.monotonic()
        thread.start()
        proc = controller(config, log)
        killed = 0
        while killed < kills:
            before = rounds_recorded(state)
            while rounds_recorded(state) <= before and proc.poll() is None:
                time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.5))
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            killed += 1
            proc = controller(config, log)
        while time.monotonic() - began < timeout_s:
            done = _succeeded(api, namespace)
            if len(done) >= pods or proc.poll() is not None:
                break
            time.sleep(1.0)
        seconds = time.monotonic() - began
        time.sleep(3.0)  # the controller's last sightings of what ended
        proc.terminate()
        proc.wait(timeout=60)
        proc = None
        kubelet.stop.set()
        thread.join(timeout=30)
        result = check(api, namespace, workloads, kubelet, state)
        result.update(
            pods=pods,
            workloads=len(workloads),
            kills=killed,
            nodes=nodes + 4,
            seconds=round(seconds, 1),
            solver=solver,
            kubelet_errors=kubelet.errors[:5],
        )
        return result
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        kubelet.stop.set()
        remove_namespace(api, namespace)
        for name in extra:
            api.core.delete_node(name)


def _succeeded(api: KubeApi, namespace: str) -> list[str]:
    found = api.core.list_namespaced_pod(namespace, _request_timeout=30).items
    return [p.metadata.name for p in found if p.status and p.status.phase == "Succeeded"]


Run = tuple[float, float, str, frozenset[str]]  # start, end, how it ended, nodes


def gang_runs(lives: list[PodLife], size: int) -> tuple[list[Run], list[str]]:
    """When all `size` pods of a workload were bound at once (start as the API says, end,
    how it ended, its nodes), and what should never be: more pods of it bound than it has, a
    pod name bound twice at once. The sweep is in the order the kubelet saw the changes (the
    API's whole-second times cannot order an eviction and a re-binding in one second)."""
    problems = []
    by_name: dict[str, list[PodLife]] = {}
    for life in lives:
        by_name.setdefault(life.name, []).append(life)
    for name, mine in by_name.items():
        spans = sorted((life.running_s, _end(life)) for life in mine)
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)):
            problems.append(f"{name}: bound twice at once {spans}")
    events = sorted(
        [(life.running_s, 1, life) for life in lives] + [(_end(life), -1, life) for life in lives],
        key=lambda e: (e[0], e[1]),
    )
    runs: list[Run] = []
    live: dict[str, PodLife] = {}
    count, start, nodes = 0, 0.0, frozenset[str]()
    for at, delta, life in events:
        count += delta
        if delta == 1:
            live[life.uid] = life
        if count > size:
            problems.append(f"{count} pods of a gang of {size} bound at {at:.1f}")
        if delta == 1 and count == size:
            start = min(x.bound_s for x in live.values())
            nodes = frozenset(x.node for x in live.values())
        elif delta == -1 and count == size - 1:
            runs.append((start, at, life.how, nodes))
        if delta == -1:
            live.pop(life.uid, None)
    return runs, problems


def _end(life: PodLife) -> float:
    return life.ended_s if life.ended_s is not None else float("inf")


def node_overload(lives: list[PodLife], capacity: int = 8) -> list[str]:
    """Moments a node held more GPUs of these pods than it has (in the order seen)."""
    by_node: dict[str, list[tuple[float, int]]] = {}
    for life in lives:
        by_node.setdefault(life.node, []).extend(
            [(life.running_s, life.gpus), (_end(life), -life.gpus)]
        )
    out = []
    for node, events in by_node.items():
        used = 0
        for at, delta in sorted(events, key=lambda e: (e[0], e[1])):
            used += delta
            if used > capacity:
                out.append(f"{node}: {used} GPUs at {at:.1f}")
                break
    return out


def check(
    api: KubeApi, namespace: str, workloads: dict[str, Workload], kubelet: Kubelet, state: Path
) -> dict[str, Any]:
    """The outcome against what the API showed (see the module's doc)."""
    from alloc.controller.state import StateStore

    pods = api.client.sanitize_for_serialization(api.core.list_namespaced_pod(namespace))["items"]
    final = {p["metadata"]["name"]: p for p in pods}
    problems: list[str] = node_overload(list(kubelet.lives.values()))
    lost = duplicated = 0
    by_workload: dict[str, list[PodLife]] = {}
    for life in kubelet.lives.values():
        by_workload.setdefault(life.workload, []).append(life)
    prefix = f"{namespace}/"
    store = StateStore(f"sqlite:///{state}")
    ledger: dict[str, list[tuple[float, float | None, int, bool]]] = {}
    for r in store.runs():
        if str(r.workload).startswith(prefix):
            ledger.setdefault(str(r.workload)[len(prefix) :], []).append(
                (r.started_s, r.ended_s, r.gpus, r.charged)
            )
    starts: dict[str, list[tuple[float, frozenset[str]]]] = {}
    with store.engine.connect() as db:
        rows = db.exec_driver_sql(
            "SELECT d.workload, d.hosts, r.at_s FROM decisions d "
            "JOIN rounds r ON r.id = d.round_id WHERE d.action = 'start'"
        ).fetchall()
    store.close()
    for workload, hosts, at_s in rows:
        if str(workload).startswith(prefix):
            planned = json.loads(hosts) if isinstance(hosts, str) else hosts
            starts.setdefault(str(workload)[len(prefix) :], []).append(
                (float(at_s), frozenset(planned))
            )
    runs_total = evictions = 0
    for name, w in workloads.items():
        names = [name] if w.size == 1 else [f"{name}-{k}" for k in range(w.size)]
        phases = [(final.get(n) or {}).get("status", {}).get("phase") for n in names]
        if phases != ["Succeeded"] * w.size:
            lost += 1
            problems.append(f"{name}: ended {phases}")
        runs, wrong = gang_runs(by_workload.get(name, []), w.size)
        runs_total += len(runs)
        evictions += sum(1 for run in runs if run[2] == "gone")
        if wrong or sum(1 for run in runs if run[2] == "succeeded") != 1:
            duplicated += 1
            problems += [f"{name}: {x}" for x in wrong] or [
                f"{name}: {[run[2] for run in runs]} runs"
            ]
        # once per planned start: each run answers a distinct start, decided before it
        # began, on the nodes it ran on
        unused = sorted(starts.get(name, []), key=lambda t: t[0])
        for start, _, _, nodes in sorted(runs, key=lambda r: r[0]):
            match = next((t for t in unused if t[0] <= start + TOLERANCE_S and t[1] == nodes), None)
            if match is None:
                problems.append(f"{name}: a run at {start:.1f} on {sorted(nodes)} no plan started")
                break
            unused.remove(match)
        # each eviction followed by a requeue: the pod came back with its count one higher
        for n in names:
            gone = sum(
                1 for life in by_workload.get(name, []) if life.name == n and life.how == "gone"
            )
            notes = ((final.get(n) or {}).get("metadata") or {}).get("annotations") or {}
            if int(notes.get("alloc.dev/preemptions", "0")) != gone:
                problems.append(
                    f"{n}: evicted {gone} times, requeued {notes.get('alloc.dev/preemptions', 0)}"
                )
        # the ledger equals what the API showed: each run, its GPUs, whether it is charged,
        # and the GPU-seconds in all
        recorded = sorted(ledger.get(name, []))
        spans = sorted(runs, key=lambda r: r[0])
        if len(recorded) != len(spans):
            problems.append(f"{name}: ledger {len(recorded)} runs, API {len(spans)}")
            continue
        gpus = w.gpus * w.size
        for (s, e, how, _), (ls, le, lg, charged) in zip(spans, recorded, strict=True):
            if le is None or abs(ls - s) > TOLERANCE_S or abs(le - e) > TOLERANCE_S:
                problems.append(f"{name}: ledger {ls:.1f}-{le} against API {s:.1f}-{e:.1f} ({how})")
            if lg != gpus or charged != w.allocated:
                problems.append(f"{name}: ledger {lg} GPUs charged {charged}, pods {gpus}")
        api_s = sum(e - s for s, e, _, _ in spans) * gpus
        ledger_s = sum((le or 0) - ls for ls, le, _, _ in recorded) * gpus
        if abs(api_s - ledger_s) > gpus * (1.0 + 0.05 * api_s / gpus):
            problems.append(f"{name}: ledger {ledger_s:.0f} GPU-s, API {api_s:.0f}")
    errors = kubelet.errors
    return {
        "lost": lost,
        "duplicated": duplicated,
        "runs": runs_total,
        "evictions": evictions,
        "problems": len(problems) + len(errors),
        "first_problems": (problems + errors)[:10],
    }


def render(results: list[dict[str, Any]], info: str) -> str:
    lines = [
        BEGIN,
        "",
        "## Pods through the controller on the real local Kubernetes control plane (issue 16)",
        "",
        f"`.venv/bin/python -m benchmarks.kube_flow`; {info}. The controller is a process of "
        "its own (`alloc controller run`, 2 s interval, event passes on changes); an emulated "
        "kubelet runs each bound pod for its runtime (2-8 s) and marks it Succeeded.",
        "",
        "| pods | workloads | nodes x 8 GPUs | controller kills (SIGKILL) | wall s | runs | "
        "evictions (requeued) | lost | duplicated | ledger or plan mismatches | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ok = r["lost"] == 0 and r["duplicated"] == 0 and r["problems"] == 0
        lines.append(
            f"| {r['pods']} | {r['workloads']} | {r['nodes']} | {r['kills']} | {r['seconds']} | "
            f"{r['runs']} | {r['evictions']} | {r['lost']} | {r['duplicated']} | "
            f"{r['problems']} | {'met' if ok else 'NOT MET'} |"
        )
    lines += [
        "",
        "Checked against what the API showed (the kubelet watches every pod change): every "
        "workload ended Succeeded exactly once (none lost); no pod name bound twice at once, no "
        "gang with more pods bound than it has, no node holding more than its 8 GPUs; each run "
        "answers a distinct start of a recorded plan, made before it, on the nodes it ran on; "
        "each eviction was followed by a requeue (the pod came back pending with "
        "`alloc.dev/preemptions` one higher); the ledger equals the API run by run (start and "
        f"end within {TOLERANCE_S} s: the API keeps whole seconds; GPUs; charged exactly when "
        "the pod declared a contract) and in GPU-seconds per workload (within 1 s per GPU and "
        "5 %).",
        "",
        END,
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    from benchmarks.machine import publish

    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--kills", default="0,20", help="runs: kills in each, comma-separated")
    parser.add_argument("--nodes", type=int, default=28)
    parser.add_argument("--solver", default="greedy")
    args = parser.parse_args()
    api = KubeApi(KubeConnection(KUBECONFIG, timeout_s=30.0))
    results = []
    for kills in (int(k) for k in args.kills.split(",")):
        result = flow(api, args.pods, kills, args.nodes, solver=args.solver)
        print(json.dumps(result), flush=True)
        results.append(result)
    print(publish("kube-flow", results, render, (BEGIN, END)))


if __name__ == "__main__":
    main()


def remove_namespace(api: KubeApi, namespace: str) -> None:
    """Delete the namespace and wait until none of its pods is left: pods bound to a node
    without a kubelet are removed at once, and a round that follows must not find them still
    holding GPUs (alloc counts other namespaces' pods as held)."""
    api.core.delete_namespace(namespace, grace_period_seconds=0)
    for _ in range(600):
        pods = api.core.list_namespaced_pod(namespace).items
        if not pods:
            return
        for pod in pods:
            with contextlib.suppress(Exception):  # gone meanwhile
                api.core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
        time.sleep(0.1)
    raise RuntimeError(f"the pods of {namespace} stayed")


def _seconds(at: datetime | None) -> float | None:
    return at.timestamp() if at is not None else None
