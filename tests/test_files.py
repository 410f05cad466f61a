"""Output files are written whole or not at all (alloc.io.files): an interrupted write (Ctrl-C,
an error) leaves the file as it was and no temporary file beside it."""

from __future__ import annotations

import os

import pytest

from alloc.io.files import atomic_path, write_atomically


def test_a_file_is_replaced_whole(tmp_path):
    path = tmp_path / "sub" / "metrics.json"
    write_atomically(path, "{}\n")
    write_atomically(path, '{"partial": true}\n')
    assert path.read_text(encoding="utf-8") == '{"partial": true}\n'
    assert [p.name for p in path.parent.iterdir()] == ["metrics.json"]


@pytest.mark.parametrize("error", [KeyboardInterrupt, OSError])
def test_an_interrupted_write_leaves_the_old_file_and_nothing_else(tmp_path, error):
    path = tmp_path / "report.html"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(error), atomic_path(path) as tmp:
        tmp.write_text("half of the new", encoding="utf-8")
        raise error
    assert path.read_text(encoding="utf-8") == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_new_file_has_the_mode_open_would_give_it(tmp_path):
    mask = os.umask(0o027)
    try:
        write_atomically(tmp_path / "a.csv", "x\n")
    finally:
        os.umask(mask)
    assert (tmp_path / "a.csv").stat().st_mode & 0o777 == 0o640
