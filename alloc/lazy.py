"""Names a package gives when first used (PEP 562), so that importing it loads nothing heavy:
`__getattr__, __dir__ = names_from(__name__, {"name": "module", ...})`."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def names_from(
    package: str, where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module `__getattr__` and `__dir__` of `package` for the names `where` places."""

    def getattr_(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(where[name]), name)
        setattr(sys.modules[package], name, value)  # found once, then a plain attribute
        return value

    def dir_() -> list[str]:
        return sorted([*vars(sys.modules[package]), *where])

    return getattr_, dir_
