"""Budget governance: only an owner of a node's parent (owners inherited down the tree) may
change its share; every change is audited; the controller's next round uses it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller import StateStore
from alloc.controller.budgets import GovernanceError, check_change, owners_of, with_shares
from alloc.domain import BudgetNode, BudgetTree

TREE = BudgetTree(
    BudgetNode(
        "lab",
        1.0,
        ("director",),
        (
            BudgetNode(
                "nlp",
                0.6,
                ("pm-nlp",),
                (BudgetNode("olmo", 0.7, ("lead-olmo",)), BudgetNode("tulu", 0.3)),
            ),
            BudgetNode("vision", 0.4),
        ),
    )
)


def test_owners_are_inherited_down_the_tree():
    assert owners_of(TREE, "nlp/olmo") == {"director", "pm-nlp", "lead-olmo"}
    assert owners_of(TREE, "vision") == {"director"}


@pytest.mark.parametrize(
    ("path", "share", "user", "problem"),
    [
        ("nlp/olmo", 0.5, "pm-nlp", None),
        ("nlp/olmo", 0.5, "director", None),  # an owner above the parent
        ("nlp", 0.5, "director", None),
        ("nlp/olmo", 0.5, "lead-olmo", "does not own nlp"),  # owns olmo, not its parent
        ("nlp", 0.5, "pm-nlp", "does not own lab, the root, the parent of nlp"),
        ("vision", 0.5, "intern", "does not own lab, the root, the parent of vision"),
        # the user named root is not the root node: the message names the node by its name
        (
            "vision",
            0.5,
            "root",
            "'root' does not own lab, the root, the parent of vision; "
            "who owns it and so may change vision: director",
        ),
        ("nlp/olmo", 0.8, "pm-nlp", "siblings' shares to 110%"),
        ("nlp/gpt", 0.1, "pm-nlp", "no budget node 'nlp/gpt'"),
        ("nlp", 1.5, "director", "between 0% and 100%"),
    ],
)
def test_who_may_change_which_share(path, share, user, problem):
    if problem is None:
        assert check_change(TREE, path, share, user) == TREE.node(path).share
    else:
        with pytest.raises(GovernanceError, match=problem.replace("(", r"\(")):
            check_change(TREE, path, share, user)


def test_changed_shares_make_the_tree_the_controller_uses():
    tree = with_shares(TREE, {"nlp/olmo": 0.5, "gone": 0.2})
    assert tree.node("nlp/olmo").share == 0.5
    assert tree.effective_allocation("nlp/olmo") == pytest.approx(0.3)
    assert tree.node("nlp/tulu").share == 0.3 and tree.node("vision").share == 0.4


CONFIG = """\
name: gov
state: sqlite:///{state}
metrics: {{port: 0}}
budgets:
  name: lab
  owners: [director]
  children:
    - name: nlp
      share: 60%
      owners: [pm-nlp]
      children: [{{name: olmo, share: 70%}}, {{name: tulu, share: 30%}}]
    - {{name: vision, share: 40%}}
"""


def test_budgets_set_is_audited_and_refused_to_non_owners(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    runner = CliRunner()
    ok = runner.invoke(
        app, ["budgets", "set", "nlp/olmo", "50%", "--as", "pm-nlp", "--config", str(config)]
    )
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout.startswith("nlp/olmo: 70.0% -> 50.0% (by pm-nlp,")
    refused = runner.invoke(
        app, ["budgets", "set", "vision", "50%", "--as", "pm-nlp", "--config", str(config)]
    )
    assert refused.exit_code == 2
    assert (
        "'pm-nlp' does not own lab, the root, the parent of vision; who owns it and so may "
        "change vision: director" in " ".join(refused.stderr.split())
    )
    shown = runner.invoke(app, ["budgets", "show", "--config", str(config)])
    assert shown.exit_code == 0, shown.stderr
    (olmo,) = [line for line in shown.stdout.splitlines() if "olmo" in line]
    assert "50.0%" in olmo and "30.00%" in olmo and "director, pm-nlp" in olmo
    history = runner.invoke(app, ["budgets", "history", "--config", str(config)])
    assert "pm-nlp" in history.stdout and "nlp/olmo" in history.stdout
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    (change,) = store.budget_history()
    assert (change["who"], change["path"], change["old"], change["new"]) == (
        "pm-nlp",
        "nlp/olmo",
        0.7,
        0.5,
    )
    store.close()


def test_a_user_acts_only_as_themselves_unless_root(tmp_path: Path, monkeypatch):
    import getpass

    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    monkeypatch.setattr(getpass, "getuser", lambda: "alice")
    runner = CliRunner()
    posing = runner.invoke(
        app, ["budgets", "set", "nlp/olmo", "50%", "--as", "pm-nlp", "--config", str(config)]
    )
    assert posing.exit_code == 2
    assert "you are alice: you may act only as yourself" in posing.stderr
    herself = runner.invoke(
        app, ["budgets", "set", "nlp/olmo", "50%", "--as", "alice", "--config", str(config)]
    )
    assert herself.exit_code == 2 and "'alice' does not own nlp" in herself.stderr
    monkeypatch.setattr(getpass, "getuser", lambda: "root")
    ok = runner.invoke(
        app, ["budgets", "set", "nlp/olmo", "50%", "--as", "pm-nlp", "--config", str(config)]
    )
    assert ok.exit_code == 0, ok.stderr
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    (change,) = store.budget_history()
    assert (change["who"], change["os_user"]) == ("pm-nlp", "root")
    store.close()


def test_nobody_may_change_a_node_nobody_owns_and_the_message_says_how_to_name_owners():
    # Tutorial 5's config named no owners: `--as root` was told "who owns it: nobody". root
    # acts for an owner; with none, the change stays refused, saying how to name one.
    bare = BudgetTree(
        BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.6), BudgetNode("vision", 0.4)))
    )
    for user in ("root", "director"):
        with pytest.raises(GovernanceError) as refused:
            check_change(bare, "nlp", 0.5, user)
        said = str(refused.value)
        assert "nobody owns lab, the root, the parent of nlp" in said
        assert "`owners: [USER]` on lab" in said


def _budgets(config: Path, *args: str):
    command, *rest = args
    return CliRunner().invoke(app, ["budgets", command, "--config", str(config), *rest])


def test_setting_the_share_a_node_has_records_nothing(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    same = _budgets(config, "set", "nlp/olmo", "70", "--as", "pm-nlp")
    assert same.exit_code == 0, same.stderr
    assert "nlp/olmo: already 70.0%" in same.stdout and "->" not in same.stdout
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    assert store.budget_history() == []
    store.close()
    # a non-owner is still refused, whatever the share
    assert _budgets(config, "set", "nlp/olmo", "70%", "--as", "intern").exit_code == 2


def test_an_empty_history_says_so(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    StateStore(f"sqlite:///{tmp_path / 's.db'}").close()  # a state the controller wrote
    history = _budgets(config, "history")
    assert history.exit_code == 0, history.stderr
    assert history.stdout.strip().startswith("no change of shares recorded yet")


@pytest.mark.parametrize(
    "args",
    [
        ["nlp/olmo", "-5%", "--as", "pm-nlp"],
        ["nlp/olmo", "-5"],
        ["nlp/olmo", "--as", "pm-nlp", "--", "-5%"],  # after --, an argument as it is
    ],
)
def test_a_negative_share_is_a_bad_share_not_an_unknown_option(tmp_path: Path, args):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    if "--as" not in args:
        args = [*args, "--as", "pm-nlp"]
    refused = _budgets(config, "set", *args)
    assert refused.exit_code == 2
    said = " ".join(refused.stderr.split())
    assert "SHARE: a share is between 0% and 100%" in said and "-5" in said
    assert "no such option" not in said
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    assert store.budget_history() == []
    store.close()


def test_a_value_of_an_option_may_look_like_a_negative_number(tmp_path: Path):
    config = tmp_path / "c.yaml"
    config.write_text(CONFIG.format(state=tmp_path / "s.db"))
    odd = _budgets(config, "set", "nlp/olmo", "--as", "-5", "50%")
    assert odd.exit_code == 2 and "'-5' does not own nlp" in odd.stderr
