"""The real local Slurm the integration tests drive (started by .ci/run with
../shared/recipes/slurm-local.sh: 4 nodes of 8 GPUs as generic resources). Tests that need it
are skipped when it is not running, unless ALLOC_REQUIRE_SLURM=1 (set by .ci/run), where its
absence fails them."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from alloc.adapters.slurm.commands import SlurmCommands, env_from_file

# gpu-node[1-4], 8 GPUs each, no type; ALLOC_TEST_SLURM_PLAIN names another folder of the same
# shape (a cluster of one's own, started with its own SLURM_LOCAL_DIR and ports)
PLAIN = Path(os.environ.get("ALLOC_TEST_SLURM_PLAIN") or "/var/lib/slurm-local")
# h100-a, h100-b (8 x h100) and a100-a, a100-b (4 x a100); started by .ci/run beside the first
# (ALLOC_TEST_SLURM_TYPED names another folder of that shape)
TYPED = Path(os.environ.get("ALLOC_TEST_SLURM_TYPED") or "/var/lib/slurm-local-typed")


def slurm_env(folder: Path) -> dict[str, str] | None:
    """This process's environment plus a local Slurm's (SLURM_CONF...), None without it."""
    env_file = folder / "env.sh"
    if not env_file.exists():
        return None
    env = env_from_file(env_file)
    try:
        up = subprocess.run(["sinfo", "-h"], env=env, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return env if up.returncode == 0 else None


def require_slurm(folder: Path = PLAIN) -> dict[str, str]:
    env = slurm_env(folder)
    if env is None:
        if os.environ.get("ALLOC_REQUIRE_SLURM") == "1":
            pytest.fail(f"ALLOC_REQUIRE_SLURM=1 but no local Slurm answers ({folder})")
        pytest.skip(f"no local Slurm in {folder} (.ci/run starts it)")
    return env


class Cluster:
    """Submit, inspect and reset the local Slurm; every call is an argv list, no shell."""

    def __init__(self, env: dict[str, str], script: Path) -> None:
        self.env = env
        self.script = script
        self.commands = SlurmCommands(env=env, timeout_s=15)

    def run(self, *argv: str) -> str:
        return self.commands.run(*argv, retry=False)

    def sbatch(
        self,
        account: str,
        gres: str,
        nodes: int = 1,
        comment: str = "",
        name: str = "job",
        hold: bool = True,
    ) -> str:
        """A job of `nodes` nodes with `gres` each (e.g. gpu:8, gpu:a100:4); its id."""
        argv = [
            "sbatch",
            "--parsable",
            "-A",
            account,
            "-J",
            name,
            "-N",
            str(nodes),
            f"--gres={gres}",
            "--comment",
            comment,
            "--output",
            "/dev/null",
        ]
        if hold:
            argv.append("--hold")
        return self.run(*argv, str(self.script)).strip().split(";")[0]

    def jobs(self) -> dict[str, dict]:
        data = self.commands.json("squeue")
        return {str(j["job_id"]): j for j in data["jobs"]}

    def wait(self, test, timeout_s: float = 30.0) -> dict[str, dict]:
        """Poll squeue until test(jobs) holds; the jobs."""
        deadline = time.monotonic() + timeout_s
        while True:
            jobs = self.jobs()
            if test(jobs):
                return jobs
            if time.monotonic() > deadline:
                brief = jobs_brief(jobs)
                raise AssertionError(f"Slurm did not get there in {timeout_s} s: {brief}")
            time.sleep(0.3)

    def reset(self) -> None:
        """No jobs, every node in service."""
        subprocess.run(
            ["scancel", "--full", "-u", "root"], env=self.env, check=False, capture_output=True
        )
        nodes = self.commands.json("sinfo")["nodes"]
        for n in nodes:
            if n.get("state_flags") or n.get("state") != "idle":
                subprocess.run(
                    ["scontrol", "update", f"NodeName={n['name']}", "State=RESUME"],
                    env=self.env,
                    check=False,
                    capture_output=True,
                )
        self.wait(
            lambda jobs: (
                not [
                    j
                    for j in jobs.values()
                    if j["job_state"] in ("PENDING", "RUNNING", "COMPLETING")
                ]
            )
        )


def jobs_brief(jobs: dict[str, dict]) -> list[tuple]:
    return [
        (i, j["job_state"], j.get("state_reason"), j.get("nodes"))
        for i, j in jobs.items()
        if j["job_state"] in ("PENDING", "RUNNING", "COMPLETING")
    ]


def cluster_of(folder: Path, tmp_path_factory) -> Iterator[Cluster]:  # type: ignore[no-untyped-def]
    """A fixture's body: the local Slurm in `folder`, emptied before and after the test."""
    env = require_slurm(folder)
    script = tmp_path_factory.mktemp("slurm") / "job.sh"
    script.write_text("#!/bin/bash\nsleep 600\n")
    cluster = Cluster(env, script)
    cluster.reset()
    yield cluster
    cluster.reset()
