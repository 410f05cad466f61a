"""`alloc budgets show|set|history --config FILE`: the controller's budget tree and who changed
which share when (alloc.controller.budgets says who may)."""

from __future__ import annotations

import getpass
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from alloc.cli.columns import Column
from alloc.cli.commands import Command, Subcommands
from alloc.cli.common import guarded, out
from alloc.cli.shorten import shorten_end, shorten_middle, shorten_path
from alloc.cli.tables import print_table
from alloc.io import InputError
from alloc.readable import natural_key, number

# Names and owners may be narrowed on a narrow console.
NAME = ((1, 10),)
OWNERS = ((1, 16),)

budgets_app = typer.Typer(
    cls=Subcommands,
    rich_markup_mode=None,
    no_args_is_help=True,
    help="Show and change budget shares.",
)
ConfigOpt = Annotated[
    Path, typer.Option("--config", metavar="FILE", help="Controller config YAML.")
]


def _open(config: Path, absent: bool = False):  # type: ignore[no-untyped-def]
    """The config, its state and the tree with the shares changed since. The state must be
    there (show, history: read-only, nothing is created), but with `absent` (set: a share
    may be set before the controller first runs) an SQLite state not yet there is None, the
    config's tree as it is, and nothing is created until there is a change to record."""
    from alloc.controller.budgets import GovernanceError, with_shares
    from alloc.controller.opening import check_state, open_state, reaching, sqlite_file
    from alloc.io.controller_config import load_controller_config

    settings = load_controller_config(config)
    file = sqlite_file(settings.state_url)
    if absent and file is not None and not file.exists():
        check_state(settings)  # its folder is there
        return settings, None, settings.budgets
    store = open_state(settings, existing=True)
    try:
        with reaching(settings):
            return settings, store, with_shares(settings.budgets, store.shares())
    except GovernanceError as exc:
        store.close()
        raise InputError(str(config), "budgets", str(exc)) from None
    except BaseException:
        store.close()
        raise


@budgets_app.command(
    "show", cls=Command, short_help="The tree: shares, allocations, owners and usage."
)
def show(config: ConfigOpt) -> None:
    """The tree: each node's share of its parent, effective allocation, owners (inherited
    down the tree) and charged GPU-hours over the window."""
    from alloc.controller.budgets import owners_of

    def act() -> None:
        from alloc.controller.opening import reaching

        settings, store, tree = _open(config)
        try:
            with reaching(settings):
                rounds = store.rounds(last=1)
                now = float(rounds[0]["at_s"]) if rounds else time.time()  # type: ignore[arg-type]
                own = store.window_gpu_hours(now, settings.policy.lookback_s)
        finally:
            store.close()
        rows = []
        for path in tree.paths():
            depth = path.count("/") + 1 if path else 0
            name = tree.node(path).name if path else tree.root.name
            usage = sum(
                h for p, h in own.items() if p == path or p.startswith(f"{path}/") or not path
            )
            rows.append(
                [
                    "  " * depth + name,
                    f"{tree.node(path).share:.1%}",
                    f"{tree.effective_allocation(path):.2%}",
                    ", ".join(sorted(owners_of(tree, path), key=natural_key)) or "-",
                    number(usage, 1),
                ]
            )
        print_table(
            out,
            [
                Column("node", shorten=shorten_middle, stages=NAME),
                Column("share", right=True),
                Column("of all", right=True),
                Column("owners", shorten=shorten_end, stages=OWNERS),
                Column("GPU-h", right=True),
            ],
            rows,
            title=f"budgets of {settings.name}",
            legend=[
                "share: of the parent; of all: of the cluster; GPU-h: charged over the window",
                "owners: with those inherited from above",
            ],
        )

    guarded(act)


_NEGATIVE = re.compile(r"-[0-9.]+%?")


class _SetCommand(Command):
    """`alloc budgets set`: a negative share (`-5%`) is one to refuse as the SHARE it is, not
    an unknown option (click read it as one: `no such option: -5`)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        valued = {
            o
            for p in self.params
            if p.param_type_name == "option" and not getattr(p, "is_flag", False)
            for o in p.opts
        }
        for before, arg in zip(["", *args], args, strict=False):
            if arg == "--":  # what follows is an argument: SHARE's own check says it
                break
            if before not in valued and _NEGATIVE.fullmatch(arg):
                from alloc.io.shares import parse_fraction

                try:
                    parse_fraction(arg)
                except ValueError as exc:
                    raise typer.BadParameter(str(exc), ctx=ctx, param_hint="SHARE") from None
        return super().parse_args(ctx, args)


@budgets_app.command("set", cls=_SetCommand)
def set_share(
    path: Annotated[str, typer.Argument(help="Budget node, e.g. nlp/olmo.")],
    share: Annotated[str, typer.Argument(help="Its new share of its parent, e.g. 35%.")],
    as_user: Annotated[
        str, typer.Option("--as", metavar="USER", help="Who makes the change (your user name).")
    ],
    config: ConfigOpt,
) -> None:
    """Change a node's share; only an owner of its parent may. Audited; the controller uses
    it from its next round on."""
    from alloc.controller.budgets import GovernanceError, check_change
    from alloc.domain import BudgetPath
    from alloc.io.shares import exact, parse_fraction

    def act() -> None:
        try:
            new = parse_fraction(share)  # exact: siblings are summed without rounding
        except ValueError as exc:
            raise InputError("", "SHARE", str(exc)) from None
        if not 0 < len(as_user) <= 200 or not as_user.isprintable():
            raise InputError("--as", "", "a user name of 1 to 200 printable characters")
        os_user = getpass.getuser()
        if os_user not in (as_user, "root"):
            raise InputError(
                "--as",
                "",
                f"you are {os_user}: you may act only as yourself (root, the "
                "controller's operator, may act for an owner; both names are audited)",
            )
        from alloc.controller.opening import open_state, reaching

        settings, store, tree = _open(config, absent=True)
        node = BudgetPath(path.strip("/"))
        try:
            old = check_change(tree, node, new, as_user)
        except GovernanceError as exc:
            if store is not None:
                store.close()
            raise InputError("", path, str(exc)) from None
        if exact(old) == new:  # a change of nothing is not a change: nothing recorded
            if store is not None:
                store.close()
            out.print(
                f"{node}: already {old:.1%}; nothing changed, nothing recorded",
                markup=False,
                highlight=False,
            )
            return
        at = time.time()
        store = store or open_state(settings)  # created here: its first record
        try:
            with reaching(settings):
                store.change_share(at, as_user, node, old, float(new), os_user)
        finally:
            store.close()
        out.print(
            f"{node}: {old:.1%} -> {new:.1%} (by {as_user}, "
            f"{datetime.fromtimestamp(at, UTC):%Y-%m-%d %H:%M:%S} UTC)",
            markup=False,
            highlight=False,
        )

    guarded(act)


@budgets_app.command("history", cls=Command)
def history(config: ConfigOpt) -> None:
    """Every change of a share: when, who, which node, old and new."""

    def act() -> None:
        from alloc.controller.opening import reaching

        settings, store, _ = _open(config)
        try:
            with reaching(settings):
                rows = store.budget_history()
        finally:
            store.close()
        if not rows:
            out.print(
                "no change of shares recorded yet (`alloc budgets set` makes one)",
                markup=False,
                highlight=False,
            )
            return
        lines = []
        for r in rows:
            when = datetime.fromtimestamp(float(r["at_s"]), UTC)  # type: ignore[arg-type]
            lines.append(
                [
                    f"{when:%Y-%m-%d %H:%M:%S}",
                    str(r["who"]),
                    str(r["os_user"]),
                    str(r["path"]),
                    f"{float(r['old']):.1%}",  # type: ignore[arg-type]
                    f"{float(r['new']):.1%}",  # type: ignore[arg-type]
                ]
            )
        print_table(
            out,
            [
                Column("when (UTC)"),
                Column("who", shorten=shorten_middle, stages=NAME),
                Column("run by", shorten=shorten_middle, stages=NAME),
                Column("node", shorten=shorten_path, stages=NAME),
                Column("old", right=True),
                Column("new", right=True),
            ],
            lines,
            title="budget changes",
        )

    guarded(act)
