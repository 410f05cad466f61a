"""Slurm's own commands, run without a shell: every argument is passed as one argv entry, so
job names, comments or account names with quotes, `;`, `$( )` or newlines are data, never
code. Each call has a timeout; a failed or hung call is retried with exponential backoff and,
when it still fails, raises `SlurmError` with the command's own message (the round that
needed it reports the failure; nothing half-applied is hidden)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class SlurmError(RuntimeError):
    def __init__(self, argv: Sequence[str], message: str) -> None:
        self.argv = tuple(argv)
        self.message = message.strip()
        super().__init__(f"{' '.join(argv[:3])}: {self.message}")


@dataclass
class SlurmCommands:
    timeout_s: float = 10.0
    attempts: int = 3
    backoff_s: float = 0.5  # doubled after each failed attempt
    env: Mapping[str, str] | None = None  # e.g. SLURM_CONF; None: this process's environment
    sleep: Callable[[float], None] = time.sleep

    def run(self, *argv: str, retry: bool = True) -> str:
        """stdout of the command; SlurmError after the last failed attempt."""
        delay = self.backoff_s
        attempts = self.attempts if retry else 1
        message = ""
        for attempt in range(attempts):
            if attempt:
                self.sleep(delay)
                delay *= 2
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
                message = f"no answer within {self.timeout_s:g} s"
                continue
            except OSError as e:  # the command is not installed
                raise SlurmError(argv, str(e)) from None
            if done.returncode == 0:
                return done.stdout
            message = done.stderr or done.stdout or f"exit code {done.returncode}"
            if not _transient(message):
                break
        raise SlurmError(argv, message)

    def json(self, *argv: str) -> dict[str, Any]:
        out = self.run(*argv, "--json")
        try:
            data = json.loads(out)
        except json.JSONDecodeError as e:
            raise SlurmError(argv, f"unreadable JSON: {e}") from None
        if not isinstance(data, dict):
            raise SlurmError(argv, "unexpected JSON: not an object")
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
