"""An injected failing wrapper around the local Slurm's commands (tests/slurm_fault_wrapper.py):
a folder of scripts named scontrol, squeue and sinfo, put first on PATH in the environment
the executor under test runs its commands with, that forward to the real commands unless a
rule says to fail the call, answer with garbage or truncated JSON, or hang. The test's own
view of the cluster (tests/slurm_local.py's Cluster) goes to Slurm directly."""

from __future__ import annotations

import fcntl
import json
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WRAPPER = Path(__file__).with_name("slurm_fault_wrapper.py")
COMMANDS = ("scontrol", "squeue", "sinfo")
# What scontrol says when slurmctld does not answer (alloc tries such a call again).
DOWN = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


@dataclass(frozen=True)
class Call:
    t: float  # when the wrapper began (time.time())
    command: str
    args: tuple[str, ...]
    mode: str  # the fault it got, "" for none


class FaultySlurm:
    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.folder = folder
        bin_dir = folder / "bin"
        bin_dir.mkdir(parents=True)
        for name in COMMANDS:
            real = shutil.which(name, path=env.get("PATH"))
            assert real is not None, f"{name} is not on PATH"
            shim = bin_dir / name
            argv = [sys.executable, "-I", str(WRAPPER), str(folder), real]
            shim.write_text(f'#!/bin/sh\nexec {shlex.join(argv)} "$@"\n')
            shim.chmod(0o755)
        (folder / "faults.json").write_text("[]")
        (folder / "calls.jsonl").write_text("")
        self.env = {**env, "PATH": f"{bin_dir}:{env.get('PATH', '')}"}

    def inject(
        self,
        command: str,
        *args: str,
        mode: str = "fail",
        skip: int = 0,
        times: int = 1,
        message: str = DOWN,
        seconds: float = 60.0,
    ) -> None:
        """Calls of `command` with all of `args`: after `skip` of them, `times` get `mode`."""
        rule = dict(
            command=command,
            args=list(args),
            mode=mode,
            skip=skip,
            times=times,
            message=message,
            seconds=seconds,
            seen=0,
            fired=0,
        )
        self._change(lambda rules: [*rules, rule])

    def clear(self) -> None:
        self._change(lambda rules: [])

    def calls(self, command: str | None = None, *args: str) -> list[Call]:
        out = []
        for line in (self.folder / "calls.jsonl").read_text().splitlines():
            c = json.loads(line)
            call = Call(c["t"], c["command"], tuple(c["args"]), c["mode"])
            if (command is None or call.command == command) and all(a in call.args for a in args):
                out.append(call)
        return out

    def _change(self, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
        """The rules changed under the wrappers' lock (they count calls in the same file)."""
        path = self.folder / "faults.json"
        with (self.folder / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            rules = change(json.loads(path.read_text()))
            path.with_suffix(".new").write_text(json.dumps(rules))
            path.with_suffix(".new").replace(path)
