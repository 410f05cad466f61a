"""Output into a pipe whose reader has gone (`alloc queue ... | head -1`, once head has its
line) ends the command quietly with 141, as git and squeue end (SIGPIPE, which a shell reports
as 128 + 13): no traceback, no "internal error", whichever way the output was written (a rich
table, `sys.stdout.write` of a plan flushed at exit, typer's help)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = str(Path(__file__).resolve().parents[1] / "instances" / "examples" / "reservation.yaml")


def into_a_closed_pipe(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `alloc ARGS` with stdout a pipe no one reads: its read end is closed before the
    program starts, so its first write fails (deterministically, unlike `| head -1`)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(
            [sys.executable, "-m", "alloc.cli.app", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["solve", EXAMPLE], id="a summary printed by rich"),
        pytest.param(["solve", EXAMPLE, "--json"], id="a plan written and flushed at exit"),
        pytest.param(["explain", EXAMPLE, "a-gang"], id="an explanation"),
        pytest.param(["schema"], id="the schema"),
        pytest.param(["--help"], id="the help"),
    ],
)
def test_a_closed_stdout_ends_the_command_quietly_with_141(args):
    done = into_a_closed_pipe(*args)
    assert done.returncode == 141, done.stderr
    assert done.stderr == ""


def test_bad_input_is_still_said_on_stderr_when_stdout_is_closed(tmp_path):
    done = into_a_closed_pipe("solve", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2
    assert "no such file" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("unbuffered", ["", "1"], ids=["buffered", "PYTHONUNBUFFERED=1"])
def test_a_reader_that_goes_away_in_the_middle_of_the_output_ends_it_with_141(unbuffered):
    # `PYTHONUNBUFFERED=1 alloc queue huge.yaml | head -1` ended 0: unbuffered, Python writes
    # a text with one write call and drops, without an error, what the kernel did not take
    # once the reader had gone. Here the output (~170 kB, one write) is more than a pipe
    # holds, so the program is in the middle of writing when the reader closes its end.
    env = dict(os.environ, PYTHONUNBUFFERED=unbuffered)
    command = [sys.executable, "-m", "alloc.cli.app", "generate", "--hosts", "1000"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as running:
        assert running.stdout is not None and running.stderr is not None
        assert len(os.read(running.stdout.fileno(), 100)) == 100  # head has its line
        running.stdout.close()
        said = running.stderr.read().decode()
        assert running.wait(timeout=120) == 141, said
    assert said == ""
