"""The harness that runs the README's tutorials (tests/tutorials.py) must be able to fail: a
shown line the command does not print, a wrong exit status, output in another order."""

from __future__ import annotations

import os
from pathlib import Path

from tests.tutorials import missing, run, tutorials

README = """# x
## Tutorials
### 1. First
Some text.
```console
$ echo 'a   b'; echo c
a b
...
$ cat > f.txt <<'END'
one
END
$ cat f.txt && \\
  echo two
one
two
$ (exit 3)
[exit 3]
```
### 2. Not a tutorial: no console block
```sh
echo no
```
## Reference
### 3. Not under Tutorials
```console
$ false
```
"""


def test_steps_are_read_with_heredocs_continuations_and_exit_status():
    (only,) = tutorials(README)
    assert only.title == "1. First"
    commands = [s.command for s in only.steps]
    assert commands == [
        "echo 'a   b'; echo c",
        "cat > f.txt <<'END'\none\nEND",
        "cat f.txt && \\\n  echo two",
        "(exit 3)",
    ]
    assert only.steps[0].shown == ["a b", "..."]
    assert [s.status for s in only.steps] == [0, 0, 0, 3]


def test_shown_lines_must_appear_in_order():
    assert missing(["a b", "c"], "a   b\nc\n") is None
    assert missing(["c", "a b"], "a b\nc\n") == "a b"
    assert missing(["x ... z"], "x y z\n") is None
    assert missing(["...", "z"], "x\ny\nz\n") is None
    assert missing(["w"], "x\n") == "w"


def test_a_tutorial_runs_in_one_session_and_its_problems_are_reported(tmp_path: Path):
    (only,) = tutorials(README)
    assert run(only, tmp_path, dict(os.environ), 30) == []
    (tmp_path / "g").mkdir()
    wrong = tutorials(README.replace("one\ntwo", "one\nthree").replace("[exit 3]", ""))[0]
    problems = run(wrong, tmp_path / "g", dict(os.environ), 30)
    assert len(problems) == 2
    assert "the README shows 'three'" in problems[0]
    assert "exited 3, not 0" in problems[1]
