"""The README's tutorials as tests (issue 17): every `console` block under `## Tutorials` is run
as a new user would paste it, one bash session per tutorial, and what the README shows after a
command must appear in what it prints, so a tutorial cannot rot.

In a block, a line starting with `$ ` is a command (a heredoc or a trailing backslash carries it
over the next lines); the lines after it, up to the next command, are what it prints. Each shown
line must appear in the output, in that order, with runs of spaces matching any run of spaces
and `...` inside a line matching anything; a line that is only `...` skips any output. A command
must exit 0 unless the README shows its status as `[exit N]` (its last shown line).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TUTORIALS_HEADING = "## Tutorials"
_HEREDOC = re.compile(r"<<-?\s*'?\"?([A-Za-z_]+)'?\"?")
_EXIT = re.compile(r"^\[exit (\d+)\]$")


@dataclass
class Step:
    command: str
    shown: list[str] = field(default_factory=list)

    @property
    def status(self) -> int:
        if self.shown and (m := _EXIT.match(self.shown[-1].strip())):
            return int(m.group(1))
        return 0


@dataclass
class Tutorial:
    title: str
    steps: list[Step]


def tutorials(readme: str) -> list[Tutorial]:
    """The `### ` sections under `## Tutorials`, each with the steps of its console blocks."""
    start = readme.index(TUTORIALS_HEADING)
    end = readme.find("\n## ", start + len(TUTORIALS_HEADING))
    part = readme[start : end if end >= 0 else len(readme)]
    found = []
    for section in re.split(r"\n(?=### )", part)[1:]:
        title = section.splitlines()[0].removeprefix("### ").strip()
        blocks = re.findall(r"```console\n(.*?)```", section, flags=re.S)
        steps = [s for b in blocks for s in _steps(b)]
        if steps:
            found.append(Tutorial(title, steps))
    return found


def _steps(block: str) -> list[Step]:
    steps: list[Step] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if steps:
                steps[-1].shown.append(line)
            i += 1
            continue
        command = [line[2:]]
        heredoc = _HEREDOC.search(line[2:])
        while command[-1].endswith("\\") and i + 1 < len(lines):
            i += 1
            command.append(lines[i])
        if heredoc:
            marker = heredoc.group(1)
            while i + 1 < len(lines):
                i += 1
                command.append(lines[i])
                if lines[i].strip() == marker:
                    break
        steps.append(Step("\n".join(command)))
        i += 1
    return steps


def _pattern(line: str) -> re.Pattern[str]:
    """`...` matches anything (the spaces around it included); a run of spaces any run."""
    parts = [r"\s+".join(map(re.escape, p.split())) for p in line.split("...")]
    return re.compile(".*".join(parts))


def missing(shown: list[str], output: str) -> str | None:
    """The first shown line not found in `output` after the previous one's match, or None."""
    out_lines = output.splitlines()
    at = 0
    for line in shown:
        if not line.strip() or line.strip() == "..." or _EXIT.match(line.strip()):
            continue
        pattern = _pattern(line)
        while at < len(out_lines) and not pattern.search(out_lines[at]):
            at += 1
        if at == len(out_lines):
            return line
        at += 1
    return None


_MARK = "@@alloc-tutorial-step"


def run(tutorial: Tutorial, cwd: Path, env: dict[str, str], timeout_s: float) -> list[str]:
    """Run the steps in one bash session in `cwd`; the problems found (empty: all as shown)."""
    script = []
    for n, step in enumerate(tutorial.steps):
        script.append(f"echo '{_MARK} {n} begin'")
        script.append(step.command)
        script.append(f'echo "{_MARK} {n} end $?"')
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    outputs: dict[int, tuple[str, int]] = {}
    for m in re.finditer(
        rf"^{_MARK} (\d+) begin\n(.*?)^{_MARK} \1 end (\d+)$", done.stdout, flags=re.S | re.M
    ):
        outputs[int(m.group(1))] = (m.group(2), int(m.group(3)))
    problems = []
    for n, step in enumerate(tutorial.steps):
        first = step.command.splitlines()[0]
        if n not in outputs:
            problems.append(f"{first!r} did not finish; output:\n{done.stdout[-3000:]}")
            break
        output, status = outputs[n]
        if status != step.status:
            problems.append(f"{first!r} exited {status}, not {step.status}:\n{output[-3000:]}")
            continue
        absent = missing(step.shown, output)
        if absent is not None:
            problems.append(f"{first!r}: the README shows {absent!r}, not printed:\n{output}")
    return problems
