"""Reading YAML with line numbers for every field, within bounds.

The file is parsed by libyaml (PyYAML's C parser) into events, and the document is built from
them here in one pass, which is what lets every bound hold while reading rather than after:
aliases of lists and mappings (`*name`, the "billion laughs") are refused where they
appear (an alias of a scalar repeats one value and is read), nesting deeper than
`Limits.nesting` and values longer than `Limits.text` are refused at their line, and a key
that appears twice is reported instead of silently overwritten; every text and key is
printable (alloc.io.names: a control or format character is refused at its field). Scalars
are resolved and constructed by PyYAML's safe resolver and constructors (YAML 1.1: `8` is an
int, `yes` a bool), except that times stay strings, so a missing zone is reported instead of
silently assumed UTC.

Line numbers are needed only to report bad input, so the first pass builds the document
alone, and a second pass, run only when an error needs a line, builds the map from field path
to line (a 65,536-GPU instance reads in a third of the time)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from alloc.io.errors import InputError, field_path
from alloc.io.limits import limits, setting
from alloc.io.names import problem, unreadable

try:
    from yaml import CSafeLoader as _Parser
except ImportError:  # PyYAML built without libyaml: the same events, ~10x slower
    from yaml import SafeLoader as _Parser  # type: ignore[assignment]

Path = tuple[object, ...]
_SCALAR_TAGS = {
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "binary")
}
_MAP, _SEQ = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


class _Resolver(yaml.resolver.Resolver):
    pass


_Resolver.yaml_implicit_resolvers = {
    key: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for key, resolvers in yaml.resolver.Resolver.yaml_implicit_resolvers.items()
}
# First characters of a plain scalar that may resolve to something other than text (a number,
# a bool, null, a merge key), "" (an empty plain scalar is null) included: any other plain
# scalar is text without asking the resolver.
_MAYBE_NOT_TEXT = frozenset(k for k, v in _Resolver.yaml_implicit_resolvers.items() if v) | {""}


def read_yaml(text: str, file: str) -> tuple[Any, Mapping[Path, int]]:
    """The document and a map from field path to line number (1-based), built when first
    read."""
    return _Reader(text, file, None).read(), _Lines(text, file)


class _Lines(Mapping[Path, int]):
    """Field path -> line, from a second reading of the file the first time it is asked."""

    def __init__(self, text: str, file: str) -> None:
        self._text, self._file = text, file
        self._lines: dict[Path, int] | None = None

    def _built(self) -> dict[Path, int]:
        if self._lines is None:
            self._lines = {}
            _Reader(self._text, self._file, self._lines).read()
        return self._lines

    def __getitem__(self, path: Path) -> int:
        return self._built()[path]

    def __iter__(self) -> Any:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())


class _Again(Exception):
    """Bad input met by the pass without lines: read again with them to say where."""


class _Collection:
    """A mapping or a sequence being built, where it sits, and (in a mapping) the key whose
    value comes next."""

    __slots__ = ("data", "is_list", "path", "key", "name", "seen")

    def __init__(self, data: dict[Any, Any] | list[Any], path: Path) -> None:
        self.data = data
        self.is_list = isinstance(data, list)
        self.path = path
        self.key: Any = _NO_KEY
        self.name = ""  # the key as written: how the lines know the field
        self.seen: set[object] = set()


_NO_KEY = object()
_STARTS = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_ENDS = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class _Reader:
    """One pass over the events: the document, and with `lines` given, each field's line and
    every error's field path and line; without, an error is `_Again`."""

    def __init__(self, text: str, file: str, lines: dict[Path, int] | None) -> None:
        self.text, self.file, self.lines = text, file, lines
        self.bounds = limits()
        self.resolver = _Resolver()
        self.constructor = yaml.constructor.SafeConstructor()
        self.known: dict[tuple[str | None, str, Any], Any] = {}  # scalars met before
        self.stack: list[_Collection] = []
        self.documents = 0
        self.values = 0  # scalars and collections read
        # anchored scalars: an alias of one repeats one value (PyYAML's dump writes a shared
        # time so), never more than one value per alias, unlike an alias of a collection
        self.anchored: dict[str, Any] = {}
        self.result: Any = None

    def read(self) -> Any:
        try:
            self._events()
        except _Again:
            assert self.lines is None
            _Reader(self.text, self.file, {}).read()  # raises the error with its line
            raise AssertionError("the second reading found no error") from None
        if not self.documents:
            raise InputError(self.file, "", "the file is empty")
        return self.result

    def _events(self) -> None:
        loader = _Parser(self.text)
        scalar, start, put, known, stack = self.scalar, self.start, self.put, self.known, self.stack
        most = self.bounds.text
        try:
            while True:
                event: Any = loader.get_event()
                kind = type(event)
                if kind is yaml.ScalarEvent:
                    self.values += 1
                    text = event.value
                    if (
                        event.tag is None
                        and (not event.implicit[0] or text[:1] not in _MAYBE_NOT_TEXT)
                        and len(text) <= most
                        and text.isprintable()
                    ):
                        value = text  # quoted, or plain and no other type starts so: text
                    else:
                        value = known.get((event.tag, text, event.implicit), _NO_KEY)
                        if value is _NO_KEY:
                            value = scalar(event)
                    if event.anchor is not None:  # a value a later alias may repeat
                        self.anchored[event.anchor] = value
                    put(value, event, None)
                elif kind in _STARTS:
                    start(event, kind is yaml.MappingStartEvent)
                elif kind in _ENDS:
                    stack.pop()
                elif kind is yaml.AliasEvent:
                    if event.anchor not in self.anchored:  # a list or mapping: it could multiply
                        raise self.fail(
                            f"YAML aliases of lists or mappings (*{event.anchor}) are not "
                            "accepted: write the value out",
                            event,
                        )
                    self.values += 1
                    put(self.anchored[event.anchor], event, None)
                elif kind is yaml.DocumentStartEvent:
                    self.documents += 1
                    if self.documents > 1:
                        raise self.fail(
                            "more than one YAML document (a line `---` starts a second one)",
                            event,
                        )
                elif kind is yaml.StreamEndEvent:
                    return
                if self.values > self.bounds.values:
                    raise InputError(
                        self.file,
                        "",
                        f"more than {self.bounds.values:,} values, the most alloc reads"
                        + setting("values"),
                        event.start_mark.line + 1,
                    )
        except yaml.reader.ReaderError as exc:  # a control character outside a quoted escape
            raise unreadable(
                self.text, self.file, _characters(self.text, exc.position), exc.character
            ) from None
        except yaml.YAMLError as exc:
            line, message = _syntax_error(exc, self.text)
            raise InputError(self.file, "", message, line) from None
        finally:
            loader.dispose()

    def fail(self, message: str, event: Any, path: Path | None = None) -> Exception:
        if self.lines is None:
            return _Again()
        where = _where(self.stack) if path is None else path
        field = field_path(where[:8]) + ("[...]" if len(where) > 8 else "")
        return InputError(self.file, field, message, event.start_mark.line + 1)

    def scalar(self, event: Any) -> Any:
        """A scalar's Python value, as PyYAML's safe loader would construct it, remembered: a
        lab's file repeats the same few values (`8`, `h100`, `4h`) thousands of times."""
        if len(event.value) > self.bounds.text:
            raise self.fail(
                f"a value of {len(event.value):,} characters, more than the "
                f"{self.bounds.text:,} alloc reads",
                event,
            )
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag not in _SCALAR_TAGS:
            raise self.fail(f"not valid YAML: the tag {_short(tag)} is not supported here", event)
        node = yaml.ScalarNode(tag, event.value, style=event.style)
        try:
            value = self.constructor.yaml_constructors[tag](self.constructor, node)
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            raise self.fail(f"not valid YAML: {_problem(exc)}", event) from None
        if isinstance(value, str) and not value.isprintable():
            key = self.stack and not self.stack[-1].is_list and self.stack[-1].key is _NO_KEY
            path = (*self.stack[-1].path, event.value) if key else None
            raise self.fail(("the key " if key else "") + str(problem(value)), event, path)
        self.known[(event.tag, event.value, event.implicit)] = value
        return value

    def start(self, event: Any, mapping: bool) -> None:
        if event.tag not in (None, "!", _MAP if mapping else _SEQ):
            raise self.fail(
                f"not valid YAML: the tag {_short(event.tag)} is not supported here", event
            )
        self.values += 1
        if len(self.stack) >= self.bounds.nesting:
            raise self.fail(f"nested more than {self.bounds.nesting} levels deep", event)
        data: dict[Any, Any] | list[Any] = {} if mapping else []
        self.stack.append(_Collection(data, self.put(data, event, data)))

    def put(self, value: Any, event: Any, collection: Any) -> Path:
        """Put a value (a new `collection`, or a scalar's value) where the document expects
        one; the field path of the value (for a mapping's key, of the field it names), which
        is () when the pass keeps no lines."""
        lines = self.lines
        if not self.stack:
            self.result = value
            if lines is not None:
                lines.setdefault((), event.start_mark.line + 1)
            return ()
        top = self.stack[-1]
        path: Path = ()
        if top.is_list:
            if lines is not None:
                path = (*top.path, len(top.data))
                lines.setdefault(path, event.start_mark.line + 1)
            top.data.append(value)  # type: ignore[union-attr]
        elif top.key is not _NO_KEY:
            if lines is not None:
                path = (*top.path, top.name)
            top.data[top.key] = value  # type: ignore[call-overload]
            top.key = _NO_KEY
        elif collection is not None:
            raise self.fail("a key must be a plain name, not a list or a mapping", event)
        else:
            if lines is not None:
                path = (*top.path, event.value)
                lines[path] = event.start_mark.line + 1  # a key's own line wins over its value's
            if value in top.seen:
                raise self.fail("this key appears twice", event, path)
            top.seen.add(value)
            top.key, top.name = value, event.value
        return path


def _where(stack: list[_Collection]) -> Path:
    if not stack:
        return ()
    top = stack[-1]
    if top.is_list:
        return (*top.path, len(top.data))
    return top.path if top.key is _NO_KEY else (*top.path, top.name)


def _characters(text: str, offset: int) -> int:
    """The character index of `offset`, which libyaml counts in bytes of UTF-8 (PyYAML's own
    reader, in characters)."""
    if _Parser is yaml.SafeLoader:
        return offset
    return len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore"))


def _short(tag: str) -> str:
    """A tag as it is written in a file: tag:yaml.org,2002:python/object -> !!python/object."""
    return tag.replace("tag:yaml.org,2002:", "!!", 1)


def _syntax_error(exc: yaml.YAMLError, text: str) -> tuple[int | None, str]:
    """The line (1-based) of YAML that does not parse, and what is wrong there. The parser
    says where it gave up (`problem_mark`), which is not always the line to mend:

    - at the end of the file (a quote, list or mapping never closed), it is the line after
      the last, which no editor shows: the line where what is unclosed opens (the
      `context_mark`: `while scanning a quoted scalar`), else the file's last line;
    - a key without its colon (`now 2026-11-30`) is read on as text up to the next line's
      colon: `could not find expected ':'` (at the next line; the key's line is the
      context's) or `mapping values are not allowed` (at the next line's colon, when the
      key is the first of its mapping): the line where that text starts, the key's.

    What the parser was reading is said after the problem, with its line when that is
    another: `did not find expected ',' or ']' (in a flow sequence from line 3)`."""
    problem_mark = getattr(exc, "problem_mark", None)
    context_mark = getattr(exc, "context_mark", None)
    context = str(getattr(exc, "context", None) or "")
    problem = _problem(exc)
    last = _last_line(text)
    line = problem_mark.line + 1 if problem_mark is not None else None
    opened = context_mark.line + 1 if context_mark is not None else None
    if line is not None and line > last:  # the end of the file
        line = opened if opened is not None and opened <= last else last
    elif context == "while scanning a simple key" and opened is not None:
        line = opened
    elif problem.startswith("mapping values are not allowed") and line is not None:
        line = min(line, _plain_text_start(text) or line)
    message = f"not valid YAML: {problem}"
    what = _READING.get(context.split(" a ", 1)[-1].split(" an ", 1)[-1], "")
    if what:
        if opened is not None and opened != line and opened <= last:
            what += f" from line {opened}"
        message += f" (in {what})"
    return line, message


# What the parser was reading (its `context`, `while parsing a flow sequence`), in the words
# of alloc's messages.
_READING = {
    "quoted scalar": "a quoted value",
    "plain scalar": "a value",
    "block scalar": "a block of text",
    "simple key": "a key",
    "flow sequence": "a [...] list",
    "flow mapping": "a {...} mapping",
    "flow node": "a value",
    "block mapping": "a mapping",
    "block collection": "a list",
    "block node": "a value",
    "anchor": "an anchor",
    "alias": "an alias",
    "tag": "a tag",
    "directive": "a directive",
}


def _last_line(text: str) -> int:
    """The number of the file's last line that holds anything (1 for an empty file)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n").split("\n")
    return max(1, len(lines))


def _plain_text_start(text: str) -> int | None:
    """The line (1-based) where the last unquoted text before a YAML scanner's error starts:
    the key written without its colon that the scanner read on into the next line. None when
    that text is a value on its key's line (`now: x` then an over-indented `   bad: 1`): the
    line the parser names, where the colon is not allowed, is then the one to mend (a value
    on the lines below its key, `cluster:` then `  name c`, is a nested key without colon)."""
    last, after_colon = None, False
    previous: yaml.Token | None = None
    try:
        for token in yaml.scan(text, Loader=_Parser):
            if isinstance(token, yaml.ScalarToken) and token.plain:
                after_colon = (
                    isinstance(previous, yaml.ValueToken)
                    and previous.start_mark.line == token.start_mark.line
                )
                last = token
            previous = token
    except yaml.YAMLError:
        pass
    return last.start_mark.line + 1 if last is not None and not after_colon else None


def _problem(exc: Exception) -> str:
    return str(getattr(exc, "problem", None) or exc)


def line_of(lines: Mapping[Path, int], loc: Path) -> int | None:
    """The line of the deepest part of `loc` that exists in the file."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
