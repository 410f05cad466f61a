"""Slurm's own commands, run without a shell: every argument is passed as one argv entry, so
job names, comments or account names with quotes, `;`, `$( )` or newlines are data, never
code.

Each call has a timeout (a command that hangs is killed). A call that fails for a reason
worth another try (the controller busy, down or unreachable), hangs, or answers with output
that does not read (garbage, truncated JSON) is tried again after an exponential backoff with
jitter (`backoff_s` doubled each time, capped at `max_backoff_s`, each wait drawn between
half of it and all of it), at most `attempts` times in all; when it still fails it raises
`SlurmError` with the command's own message (the round that needed it reports the failure;
nothing half-applied is hidden). Every failed attempt is logged and kept as an
`ExecutorFault` until `take_faults()` hands it on (the controller counts and records them).
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from alloc.adapters.base import ExecutorFault, FaultKind

log = logging.getLogger("alloc.slurm")
T = TypeVar("T")


class SlurmError(RuntimeError):
    def __init__(self, argv: Sequence[str], message: str) -> None:
        self.argv = tuple(argv)
        self.message = message.strip()
        super().__init__(f"{' '.join(argv[:3])}: {self.message}")


class _Failed(Exception):
    def __init__(self, kind: FaultKind, message: str, again: bool = True) -> None:
        self.kind, self.message, self.again = kind, message.strip(), again


@dataclass
class SlurmCommands:
    timeout_s: float = 10.0
    attempts: int = 3
    backoff_s: float = 0.5  # the first wait; doubled after each failed attempt
    env: Mapping[str, str] | None = None  # e.g. SLURM_CONF; None: this process's environment
    sleep: Callable[[float], None] = time.sleep
    max_backoff_s: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    faults: list[ExecutorFault] = field(default_factory=list)  # not yet taken

    def run(self, *argv: str, retry: bool = True) -> str:
        """stdout of the command; SlurmError after the last failed attempt."""
        return self._tried(argv, lambda out: out, retry)

    def json(self, *argv: str) -> dict[str, Any]:
        """The command's `--json` answer, an object; output that does not read is a fault
        like a failure (tried again)."""
        return self._tried((*argv, "--json"), _object)

    def take_faults(self) -> tuple[ExecutorFault, ...]:
        taken, self.faults = tuple(self.faults), []
        return taken

    def _tried(self, argv: Sequence[str], parse: Callable[[str], T], retry: bool = True) -> T:
        attempts = max(1, self.attempts if retry else 1)
        delay = self.backoff_s
        for attempt in range(1, attempts + 1):
            try:
                return parse(self._once(argv))
            except _Failed as failed:
                last = attempt == attempts or not failed.again
                wait = None if last else self._jittered(delay)
                self._fault(argv, failed, attempt, wait)
                if wait is None:
                    raise SlurmError(argv, failed.message) from None
                self.sleep(wait)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _once(self, argv: Sequence[str]) -> str:
        try:
            done = subprocess.run(
                list(argv),
                capture_output=True,
                text=True,
                timeout=self.timeout_s,
                env=dict(self.env) if self.env is not None else None,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise _Failed(FaultKind.TIMEOUT, f"no answer within {self.timeout_s:g} s") from None
        except OSError as e:  # the command is not installed
            raise _Failed(FaultKind.FAILED, str(e), again=False) from None
        if done.returncode == 0:
            return done.stdout
        message = done.stderr or done.stdout or f"exit code {done.returncode}"
        raise _Failed(FaultKind.FAILED, message, again=_transient(message))

    def _jittered(self, delay: float) -> float:
        """Between half the backoff and all of it (so each wait is at least the last one)."""
        capped = min(delay, self.max_backoff_s)
        return capped / 2 + self.rng.uniform(0.0, capped / 2)

    def _fault(
        self, argv: Sequence[str], failed: _Failed, attempt: int, wait: float | None
    ) -> None:
        command = _command(argv)
        fault = ExecutorFault(failed.kind, command, failed.message[:500], attempt, wait)
        self.faults.append(fault)
        del self.faults[:-1000]  # nobody took them: keep the last ones
        then = "given up" if wait is None else f"again in {wait:.2f} s"
        log.warning(
            "%s: %s (attempt %d, %s): %s", command, failed.kind, attempt, then, fault.message
        )


def _command(argv: Sequence[str]) -> str:
    """The call, shortly: the program, its subcommand and whether it asked for JSON
    ("scontrol requeuehold", "squeue --json"); no job id or host name."""
    parts = [argv[0]]
    if len(argv) > 1 and argv[1].isalpha():
        parts.append(argv[1])
    if "--json" in argv[1:]:
        parts.append("--json")
    return " ".join(parts)


def _object(out: str) -> dict[str, Any]:
    try:
        data = json.loads(out)
    except json.JSONDecodeError as e:
        raise _Failed(FaultKind.UNPARSABLE, f"unreadable JSON: {e}") from None
    if not isinstance(data, dict):
        raise _Failed(FaultKind.UNPARSABLE, "unexpected JSON: not an object")
    return data


def _transient(message: str) -> bool:
    """Errors worth another attempt: the controller is busy, down or unreachable."""
    lowered = message.lower()
    return any(
        s in lowered
        for s in (
            "timed out",
            "unable to contact",
            "connection refused",
            "try again",
            "busy",
            "slurm_persist_conn",
            "socket",
            "communications",
        )
    )


def env_from_file(path: str | Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) plus the `export NAME=value` lines of a
    shell file such as the `env.sh` a Slurm installation leaves (SLURM_CONF...)."""
    env = dict(os.environ if base is None else base)
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("export ") and "=" in line:
            key, value = line[len("export ") :].split("=", 1)
            env[key.strip()] = value.strip().strip('"').strip("'")
    return env
