"""Slurm's own commands, run without a shell: every argument is passed as one argv entry, so
job names, comments or account names with quotes, `;`, `$( )` or newlines are data, never
code.

Each call has a timeout (a command that hangs is killed). A call that fails for a reason
worth another try (the controller busy, down or unreachable), hangs, or answers with output
that does not read (garbage, truncated JSON) is tried again after an exponential backoff with
jitter (`backoff_s` doubled each time, capped at `max_backoff_s`, each wait drawn between
half of it and all of it), at most `attempts` times in all (alloc.adapters.retry, shared with
the Kubernetes executor); when it still fails it raises `SlurmError` with the command's own
message (the round that needed it reports the failure; nothing half-applied is hidden). Every
failed attempt is logged and kept as an `ExecutorFault` until `take_faults()` hands it on (the
controller counts and records them); a refusal (`Invalid job id`) too, given up at once.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from alloc.adapters.base import ClusterError, FaultKind
from alloc.adapters.retry import Failed, Retrier

T = TypeVar("T")


class SlurmError(ClusterError):
    def __init__(self, argv: Sequence[str], message: str) -> None:
        self.argv = tuple(argv)
        self.message = message.strip()
        super().__init__(f"{' '.join(argv[:3])}: {self.message}")


@dataclass(kw_only=True)
class SlurmCommands(Retrier):
    """Retrier's `attempts`, `backoff_s` (0.5 s), `max_backoff_s` (30 s), `sleep`, `rng` and
    `faults` (alloc.adapters.retry), and:"""

    timeout_s: float = 10.0
    env: Mapping[str, str] | None = None  # e.g. SLURM_CONF; None: this process's environment
    log: logging.Logger = field(default=logging.getLogger("alloc.slurm"), repr=False, compare=False)

    def run(self, *argv: str, retry: bool = True) -> str:
        """stdout of the command; SlurmError after the last failed attempt."""
        return self._tried(argv, lambda out: out, retry)

    def json(self, *argv: str) -> dict[str, Any]:
        """The command's `--json` answer, an object; output that does not read is a fault
        like a failure (tried again)."""
        return self._tried((*argv, "--json"), _object)

    def _tried(self, argv: Sequence[str], parse: Callable[[str], T], retry: bool = True) -> T:
        try:
            return self.call(_command(argv), lambda: parse(self._once(argv)), retry)
        except Failed as failed:
            raise SlurmError(argv, failed.message) from None

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
            raise Failed(FaultKind.TIMEOUT, f"no answer within {self.timeout_s:g} s") from None
        except OSError as e:  # the command is not installed
            raise Failed(FaultKind.FAILED, str(e), again=False) from None
        if done.returncode == 0:
            return done.stdout
        message = done.stderr or done.stdout or f"exit code {done.returncode}"
        raise Failed(FaultKind.FAILED, message, again=_transient(message))


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
        raise Failed(FaultKind.UNPARSABLE, f"unreadable JSON: {e}") from None
    if not isinstance(data, dict):
        raise Failed(FaultKind.UNPARSABLE, "unexpected JSON: not an object")
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
