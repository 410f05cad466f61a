"""The quoting of the scripts `alloc export` writes (alloc.adapters.shell): any text (but NUL,
which no argument can hold) comes back from bash as the very same one argument, and a quoted
argument shows no control character to a person reading the script."""

from __future__ import annotations

import subprocess

from hypothesis import given, settings
from hypothesis import strategies as st

from alloc.adapters.shell import comment, quote

HOSTILE = [
    "",
    "plain",
    "quote'\"",
    "new\nline",
    "cr\rhides",
    "\x1b[2Jescape",
    "rtl\u202eevil",
    "$(touch /tmp/alloc-pwned)",
    "`id`;rm -rf /",
    "-V",
    "ünïcødé 名前 🚀",
    "x" * 10_000,
]


def echoed(args: list[str]) -> list[str]:
    script = "printf '%s\\0' " + " ".join(quote(a) for a in args)
    out = subprocess.run(["bash", "-c", script], capture_output=True, check=True).stdout
    return out.decode("utf-8", "surrogateescape").split("\0")[:-1]


def test_hostile_arguments_come_back_unchanged_and_show_no_control_character():
    assert echoed(HOSTILE) == HOSTILE
    for arg in HOSTILE:
        assert quote(arg).isprintable()
        assert comment(arg, None).isprintable()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0")),
        min_size=1,
        max_size=5,
    )
)
def test_any_text_comes_back_unchanged(args):
    assert echoed(args) == args
