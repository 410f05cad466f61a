"""Hosts over time: failures from a seeded model, or host events from a CSV.

Failure model: every ready host fails (turns `unhealthy`) after an exponential time with the
given mean; an unhealthy host drains under the contract, is handed to repair once empty
(`maintenance`) and comes back `ready` after the repair time, when its next failure is drawn.

Host events CSV: `time,host,state` (time in seconds from the start, or a duration such as
`36h`; state ready, unhealthy, retired or maintenance). A retired host drains, then leaves.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from pathlib import Path

from alloc.domain import HostName, HostState
from alloc.io.durations import parse_duration
from alloc.io.errors import InputError
from alloc.io.limits import bounded_rows, read_input
from alloc.io.names import check_row


@dataclass(frozen=True, slots=True)
class FailureModel:
    mtbf_h: float  # mean time between failures of one host (repair time: SimConfig.repair_h)
    seed: int = 1

    def rng(self) -> random.Random:
        return random.Random(f"failures:{self.seed}")

    def next_failure_s(self, rng: random.Random, now_s: float) -> float:
        return now_s + rng.expovariate(1.0 / (self.mtbf_h * 3600.0))


@dataclass(frozen=True, slots=True)
class HostEvent:
    t_s: float
    host: HostName
    state: HostState


def read_host_events(path: str | Path, hosts: set[str]) -> list[HostEvent]:
    file = str(path)
    text = read_input(path, "utf-8-sig", "a CSV file")
    reader = csv.DictReader(io.StringIO(text))
    columns = reader.fieldnames or []
    check_row(((f"header column {i + 1}", c) for i, c in enumerate(columns)), file, 1)
    if sorted(c.strip() for c in columns) != ["host", "state", "time"]:
        raise InputError(file, "", "expected the columns time,host,state (each once)", 1)
    reader.fieldnames = [c.strip() for c in columns]
    out = []
    for row in bounded_rows(reader, file):
        line = reader.line_num
        if None in row:
            raise InputError(file, "", "the row has more columns than the header", line)
        if any(v is None for v in row.values()):
            raise InputError(file, "", "the row has too few columns", line)
        check_row(row.items(), file, line)
        try:
            t = parse_duration(row["time"])
        except ValueError as exc:
            raise InputError(file, "time", str(exc), line) from None
        name = (row["host"] or "").strip()
        if name not in hosts:
            raise InputError(file, "host", f"unknown host {name!r}", line)
        try:
            state = HostState((row["state"] or "").strip())
        except ValueError:
            raise InputError(
                file,
                "state",
                f"expected ready, unhealthy, retired or maintenance, got {row['state']!r}",
                line,
            ) from None
        out.append(HostEvent(t, HostName(name), state))
    return sorted(out, key=lambda e: (e.t_s, e.host))
