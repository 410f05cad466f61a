"""Output files written whole or not at all: each is written under a temporary name in its
folder and renamed into place, so an interrupted command (Ctrl-C, a crash) leaves every file
either as it was or complete, never half-written."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(path: Path, mode: int = 0o666) -> Iterator[Path]:
    """A temporary path beside `path` for the block to write; renamed to `path` when the
    block ends, removed if it raises. The file has `mode` less the umask (as open() would
    create it) before it appears under its name."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, mode & ~mask)  # as open() would create it, not mkstemp's owner-only
        os.close(fd)
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_atomically(path: Path, text: str, mode: int = 0o666) -> None:
    """Write `text` (UTF-8) to `path` whole or not at all."""
    with atomic_path(path, mode) as tmp:
        tmp.write_text(text, encoding="utf-8")
