"""A YAML file validated against its pydantic model, and every problem as an `InputError` that
names the file, the line and the field path (SPEC.md, exit code 2). Shared by the instance,
scenario and controller-configuration readers."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args

from pydantic import BaseModel, ValidationError

from alloc.io.errors import InputError, field_path
from alloc.io.limits import read_input
from alloc.io.schema import InstanceIn
from alloc.io.yaml_source import line_of, read_yaml


class Reporter:
    def __init__(self, file: str, lines: Mapping[tuple[object, ...], int]) -> None:
        self.file = file
        self.lines = lines

    def error(self, loc: tuple[object, ...], message: str) -> InputError:
        return InputError(self.file, field_path(loc), message, line_of(self.lines, loc))


def read_text(path: str | Path) -> str:
    """A UTF-8 file's text; InputError naming the file when it cannot be read."""
    return read_input(path, kind="a YAML file")


M = TypeVar("M", bound=BaseModel)


def load_model(path: str | Path, model: type[M], what: str) -> tuple[M, Reporter]:
    """A YAML file read and validated as `model` (`what` says what a valid one is when the
    file is not a mapping), and the reporter that names its lines."""
    file = str(path)
    data, lines = read_yaml(read_text(path), file)
    report = Reporter(file, lines)
    if not isinstance(data, dict):
        raise report.error((), what)
    try:
        return model.model_validate(data), report
    except ValidationError as exc:
        raise first_error(exc, report, model=model) from None


def first_error(
    exc: ValidationError,
    report: Reporter,
    at: tuple[object, ...] = (),
    model: type[BaseModel] = InstanceIn,
) -> InputError:
    """The error to report of a failed validation of `model`: an unknown field first (a typo
    such as `gpu:` also makes the intended field missing; name the typo, on its line)."""
    errors = exc.errors()
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    return report.error((*at, *first["loc"]), _pydantic_message(first, model))


def _pydantic_message(error: Any, model: type[BaseModel]) -> str:
    kind = error["type"]
    given = error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        fields = _fields_at(error["loc"], model)
        close = difflib.get_close_matches(str(error["loc"][-1]), fields, n=1)
        if close:
            hint = f"; did you mean {close[0]!r}?"
        elif fields:
            hint = f"; expected one of {', '.join(fields)}"
        else:
            hint = ""
        if model is InstanceIn:
            return f"unknown field{hint} (see `alloc schema` for the fields an instance has)"
        return f"unknown field{hint}"
    message = str(error["msg"])
    if message.startswith("Value error, "):
        return message.removeprefix("Value error, ")
    message = message[0].lower() + message[1:]
    shown = repr(given)
    if "input" in error and not isinstance(given, dict | list) and len(shown) <= 80:
        return f"{message} (got {shown})"
    return message


def _fields_at(loc: tuple[object, ...], root: type[BaseModel]) -> list[str]:
    """The field names of the model that holds the field at `loc` (for "did you mean")."""
    model: Any = root
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = getattr(model, "model_fields", {})
        if part not in fields:
            return []
        annotation: Any = fields[part].annotation
        while not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            args = [a for a in get_args(annotation) if a is not type(None)]
            if not args:
                return []
            annotation = args[-1]  # list[X] -> X, dict[K, X] -> X, X | None -> X
        model = annotation
    return list(getattr(model, "model_fields", {}))
