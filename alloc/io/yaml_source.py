"""Reading YAML with line numbers for every field, strings kept as written (no implicit
timestamps), and duplicate keys reported instead of silently overwritten."""

from __future__ import annotations

from typing import Any

import yaml

from alloc.io.errors import InputError, field_path
from alloc.io.names import check_tree, unreadable


class _Loader(yaml.SafeLoader):
    pass


# Times stay strings so that a missing zone is reported instead of silently assumed UTC.
_Loader.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def read_yaml(text: str, file: str) -> tuple[Any, dict[tuple[object, ...], int]]:
    """The document and a map from field path to line number (1-based)."""
    try:
        node = yaml.compose(text, Loader=_Loader)
    except yaml.reader.ReaderError as exc:  # a control character outside a quoted escape
        raise unreadable(text, file, exc.position, exc.character) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(file, "", f"not valid YAML: {problem}", line) from None
    if node is None:
        raise InputError(file, "", "the file is empty")
    lines: dict[tuple[object, ...], int] = {}
    _index(node, (), lines, file)
    loader = _Loader(text)
    try:
        data = loader.construct_document(node)
    except yaml.YAMLError as exc:  # e.g. an unknown tag such as !!python/object
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise InputError(file, "", f"not valid YAML: {problem}", line) from None
    except Exception as exc:  # noqa: BLE001 - a tagged value its constructor rejects (!!int abc)
        raise InputError(file, "", f"not valid YAML: {exc}") from None
    finally:
        loader.dispose()
    check_tree(data, file, lines)  # names are printable text (alloc.io.names)
    return data, lines


def _index(
    node: yaml.Node, path: tuple[object, ...], lines: dict[tuple[object, ...], int], file: str
) -> None:
    lines.setdefault(path, node.start_mark.line + 1)  # a key's own line wins over its value's
    if isinstance(node, yaml.MappingNode):
        seen: set[object] = set()
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise InputError(
                    file,
                    field_path(path),
                    "a key must be a plain name, not a list or a mapping",
                    key.start_mark.line + 1,
                )
            name = key.value
            if name in seen:
                raise InputError(
                    file, _join(path, name), "this key appears twice", key.start_mark.line + 1
                )
            seen.add(name)
            lines[(*path, name)] = key.start_mark.line + 1
            _index(value, (*path, name), lines, file)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _index(item, (*path, i), lines, file)


def _join(path: tuple[object, ...], name: object) -> str:
    return field_path((*path, name))


def line_of(lines: dict[tuple[object, ...], int], loc: tuple[object, ...]) -> int | None:
    """The line of the deepest part of `loc` that exists in the file."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
