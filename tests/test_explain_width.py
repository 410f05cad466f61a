"""`alloc explain` fits its prose to COLUMNS (or the terminal), as `alloc status` does: each
line broken at spaces, its continuation lines indented deeper than the line, so sections and
items keep their indent; in a pipe or a log file every line is whole. Before, COLUMNS was
ignored (at 80, 13 of 25 lines of the walkthrough's w00035 were longer) and a terminal's
wrapping put continuation lines at column 0."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from alloc.cli.app import app

ROOT = Path(__file__).resolve().parents[1]
GANG = ["explain", str(ROOT / "instances" / "examples" / "reservation.yaml"), "a-gang"]


def explain_at(columns: int | None) -> list[str]:
    env = {"COLUMNS": str(columns)} if columns else {"COLUMNS": ""}
    result = CliRunner().invoke(app, [*GANG, "--solver", "greedy"], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def test_explain_fits_columns_and_keeps_each_items_indent():
    whole = explain_at(None)
    assert any(len(line) > 80 for line in whole)  # the case is worth testing
    narrow = explain_at(80)
    assert all(len(line) <= 80 for line in narrow), [x for x in narrow if len(x) > 80]
    # Every whole line comes back from its first piece and the continuation lines under it,
    # each continuation deeper than the piece it continues.
    at = 0
    for line in whole:
        first = narrow[at]
        assert indent(first) == indent(line)
        pieces = [first.strip()]
        at += 1
        while len(" ".join(pieces)) < len(line.strip()):
            assert indent(narrow[at]) >= indent(first) + (4 if indent(first) else 2)
            pieces.append(narrow[at].strip())
            at += 1
        assert " ".join(pieces) == line.strip()
    assert at == len(narrow)
