"""A YAML file that does not parse names the line to mend: the line a person finds in their
editor, never the one after the file's last (where the parser stops on a quote, list or
mapping left open) nor the one after a key written without its colon (where the parser finds
the next colon). Both passes of the reader (alloc.io.yaml_source: the fast one without lines,
and the one with them, which says where the fast one found a problem) name the same line.

Each case's line is the one marked `<-` in its comment."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.io import InputError, parse_instance
from alloc.io.yaml_source import _Reader, read_yaml

NOW = "now: 2026-11-30T12:00:00Z\n"

SYNTAX = [
    pytest.param(
        'now: "2026-11-30T12:00:00Z\ncluster: {}\n',  # <- 1: the quote opens and never closes
        1,
        "end of stream (in a quoted value)",
        id="a quote left open on the first line",
    ),
    pytest.param(
        NOW + 'cluster: {}\nbudgets: "lab\n',  # <- 3
        3,
        "end of stream (in a quoted value)",
        id="a quote left open on the last line",
    ),
    pytest.param(
        NOW + 'cluster: {}\nbudgets: "lab',  # <- 3, and no newline at the end
        3,
        "end of stream (in a quoted value)",
        id="a quote left open on a last line without its newline",
    ),
    pytest.param(
        NOW + "workloads: [a, b\n",  # <- 2
        2,
        "did not find expected ',' or ']' (in a [...] list)",
        id="a list left open on the last line",
    ),
    pytest.param(
        NOW + "workloads: [\n",  # <- 2
        2,
        "not valid YAML",
        id="a list opened at the end of the last line",
    ),
    pytest.param(
        "now 2026-11-30T12:00:00Z\ncluster: {}\n",  # <- 1: the key has no colon
        1,
        "mapping values are not allowed",
        id="a key without its colon on the first line",
    ),
    pytest.param(
        NOW + "cluster {}\n",  # <- 2
        2,
        "could not find expected ':' (in a key)",
        id="a key without its colon on the last line",
    ),
    pytest.param(
        NOW + "cluster {}\nbudgets: {}\n",  # <- 2
        2,
        "could not find expected ':' (in a key)",
        id="a key without its colon between two others",
    ),
    pytest.param(
        "now: x\n   bad: 1\n",  # <- 2: over-indented, read on as the value of line 1
        2,
        "mapping values are not allowed",
        id="an over-indented line after a value: its own line, as the parser says",
    ),
    pytest.param(
        "a: 1\nnow: x\n    bad: 1\n",  # <- 3
        3,
        "mapping values are not allowed",
        id="an over-indented line after a value, lower down",
    ),
    pytest.param(
        "cluster:\n  name c\n  hosts: []\n",  # <- 2: the first key of a nested mapping
        2,
        "mapping values are not allowed",
        id="a nested key without its colon",
    ),
    pytest.param(
        NOW + "cluster:\n  name: c\n hosts: []\n",  # <- 4
        4,
        "did not find expected key (in a mapping from line 1)",
        id="a key indented less than its siblings",
    ),
    pytest.param(
        NOW + "cluster:\n\tname: c\n",  # <- 3
        3,
        "cannot start any token",
        id="a tab as indentation",
    ),
    pytest.param(
        NOW + "cluster: {name: c\nbudgets: {}\n",  # <- 3, where the parser finds the colon
        3,
        "(in a {...} mapping from line 2)",
        id="a mapping left open says where it opens",
    ),
    pytest.param(
        'now: 2026-11-30T12:00:00Z\r\ncluster: "c\r\n',  # <- 2
        2,
        "end of stream",
        id="Windows line ends",
    ),
]


@pytest.mark.parametrize(("text", "line", "said"), SYNTAX)
def test_yaml_that_does_not_parse_names_the_line_to_mend(text, line, said):
    with pytest.raises(InputError) as caught:
        parse_instance(text, "lab.yaml")
    error = caught.value
    assert (error.line, error.field) == (line, ""), str(error)
    assert error.message.startswith("not valid YAML: "), str(error)
    assert said in error.message, str(error)


@pytest.mark.parametrize(("text", "line", "said"), SYNTAX)
def test_both_passes_of_the_reader_name_the_same_line(text, line, said):
    for lines in (None, {}):
        with pytest.raises(InputError) as caught:
            _Reader(text, "lab.yaml", lines).read()
        assert caught.value.line == line, (lines, str(caught.value))


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        pytest.param("now: 1\nnow: 2\n", 2, "now", id="a key twice, the second on the last line"),
        pytest.param("a: 1\nb: 2\na: 3", 3, "a", id="a key twice on a last line without newline"),
        pytest.param("now: !!python/object x\nb: 1\n", 1, "now", id="a tag on the first line"),
        pytest.param("a: &x [1]\nb: *x\n", 2, "b", id="an alias of a list on the last line"),
    ],
)
def test_a_problem_found_by_the_fast_pass_is_said_at_its_line_by_the_second(text, line, field):
    """The fast pass finds these without lines and reads the file again with them."""
    with pytest.raises(InputError) as caught:
        read_yaml(text, "lab.yaml")
    assert (caught.value.line, caught.value.field) == (line, field), str(caught.value)


def test_the_line_named_on_the_command_line_is_the_line_in_the_file(tmp_path):
    path = tmp_path / "lab.yaml"
    path.write_text(NOW + "cluster:\n  name: c\nbudgets: [lab\n")  # <- 4, the file's last
    result = CliRunner().invoke(app, ["solve", str(path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {path}:4: not valid YAML: "), result.stderr
    assert len(path.read_text().splitlines()) == 4
