"""Names in the files alloc reads are printable text (README, "Names"): every workload id,
host name, budget name and path, owner, GPU type, block, rack and every other text of an
instance, a scenario or a controller config, every field of a trace or host-event CSV, and
the ids and host names of a plan. A name with a character `alloc.printable` does not display
(a control such as ESC or a tab, a format character such as U+202E, a line separator) is bad
input: the file, the line, the field and what is wrong, e.g. `contains a control character
(U+001B ESCAPE) at position 3` (positions count characters from 1)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from alloc.io.errors import InputError, field_path
from alloc.printable import describe, first_hidden

__all__ = ["check_name", "check_row", "problem", "unreadable", "yaml_field"]


def problem(text: str) -> str | None:
    """What makes `text` no name (`contains a control character (U+001B ESCAPE) at position
    3`); None when it is printable text."""
    at = first_hidden(text)
    if at is None:
        return None
    return f"contains {describe(text[at])} at position {at + 1}"


def check_name(text: str, file: str, field: str, line: int | None = None) -> None:
    """InputError naming `file`, `line` and `field` when `text` is not printable text."""
    wrong = problem(text)
    if wrong is not None:
        raise InputError(file, field, wrong, line)


def check_row(cells: Iterable[tuple[str | None, object]], file: str, line: int) -> None:
    """Every (column, value) of one CSV row (the header's line is 1), each value as the
    readers take it: without the white space around it (what is not text, such as the extra
    cells `csv.DictReader` gathers under None, is left to the reader)."""
    for column, value in cells:
        if isinstance(column, str) and isinstance(value, str):
            check_name(value.strip(), file, column, line)


# What PyYAML's reader refuses in a file (yaml.reader.Reader.NON_PRINTABLE).
_UNREADABLE = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def unreadable(text: str, file: str, position: int, character: object) -> InputError:
    """The error for a YAML text its reader refused at character `position` (the line, the
    field and the column, and what the character is)."""
    row = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    what = describe(chr(character)) if isinstance(character, int) else "a character"
    where = yaml_field(text, position)
    return InputError(file, where, f"contains {what} at column {column}", row)


def yaml_field(text: str, position: int) -> str:
    """The field path of what is at character `position` of a YAML text that the YAML reader
    refused for a control character there (`workloads[0].id`); "" when none is found."""
    import yaml

    try:
        node = yaml.compose(_UNREADABLE.sub("_", text), Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return ""
    loc: tuple[object, ...] = ()
    while node is not None:
        if isinstance(node, yaml.MappingNode):
            pairs = [(k.value, k, v) for k, v in node.value]
        elif isinstance(node, yaml.SequenceNode):
            pairs = [(i, v, v) for i, v in enumerate(node.value)]
        else:
            break
        found = None
        for name, key, value in pairs:
            if key.start_mark.index <= position < key.end_mark.index and key is not value:
                raw = text[key.start_mark.index : key.end_mark.index]  # with what was refused
                return field_path((*loc, raw))  # in a key: the key's own path
            if value.start_mark.index <= position < value.end_mark.index:
                found = name, value
        if found is None:
            break
        loc, node = (*loc, found[0]), found[1]
    return field_path(loc)
