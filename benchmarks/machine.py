"""The machine and the software a benchmark ran on, for the header of RESULTS.md."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


def _cmd(*args: str) -> str:
    try:
        return subprocess.run(args, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return "?"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _ram_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return None


def _ortools_version() -> str:
    try:
        import ortools

        return str(ortools.__version__)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - reported, not fatal
        return "?"


def machine(repo: Path) -> dict[str, Any]:
    dirty = _cmd("git", "-C", str(repo), "status", "--porcelain", "--", "alloc")
    return {
        "date": _cmd("date"),
        "uname": _cmd("uname", "-a"),
        "cpu_model": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": _ram_gib(),
        "python": platform.python_version(),
        "ortools": _ortools_version(),
        "git_commit": _cmd("git", "-C", str(repo), "rev-parse", "--short", "HEAD"),
        "alloc_dirty": bool(dirty),
        "loadavg_start": os.getloadavg(),
    }


def publish(
    name: str,
    results: list[dict[str, Any]],
    render: Any,
    markers: tuple[str, str],
) -> str:
    """Write `results` to benchmarks/results-`name`.json and `render(results, line)` (line: the
    date, machine and commit) as its section of benchmarks/RESULTS.md; the section."""
    from benchmarks.simulation import with_section

    here = Path(__file__).resolve().parent
    info = machine(here.parent)
    line = (
        f"{info['date']}; {info['cpu_model']}, {info['cores']} cores, "
        f"alloc at commit {info['git_commit']}"
    )
    section = str(render(results, line))
    (here / f"results-{name}.json").write_text(json.dumps(results, indent=1) + "\n")
    md = here / "RESULTS.md"
    md.write_text(with_section(md.read_text(encoding="utf-8"), section, markers))
    return section


@contextmanager
def checkout_of(repo: Path, commit: str) -> Iterator[tuple[Path, Path]]:
    """(the checkout of `commit` in a temporary git worktree, a scratch folder beside it),
    both removed when the block ends: the "before" side of benchmarks that compare commits."""
    with tempfile.TemporaryDirectory() as tmp:
        scratch = Path(tmp)
        old = scratch / "before"
        subprocess.run(
            ["git", "-C", str(repo), "worktree", "add", "--detach", str(old), commit],
            check=True,
            capture_output=True,
        )
        try:
            yield old, scratch
        finally:
            subprocess.run(
                ["git", "-C", str(repo), "worktree", "remove", "--force", str(old)], check=False
            )
