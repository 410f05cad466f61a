"""Sibling shares sum to at most 100%, exactly (issue 18, point 3d): a sum above 100% by any
amount is bad input, in an instance, a what-if scenario, a controller config and a share changed
with `alloc budgets set`; a sum of exactly 100% that floats cannot add exactly (10% + 20% + 70%
is 1.0000000000000002 in floats) is not. Generated trees round their shares down to 0.1% so
they stay valid, and the YAML writer writes every share as the exact decimal it stands for."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import instance, snapshot_of
from typer.testing import CliRunner

from alloc.cli.app import app
from alloc.controller import StateStore
from alloc.controller.budgets import GovernanceError, check_change, with_shares
from alloc.generate import GeneratorSpec, generate
from alloc.io import InputError, dump_instance, parse_instance
from alloc.io.controller_config import load_controller_config
from alloc.io.scenario import load_scenario
from alloc.io.shares import exact, over_100, percent_text


def tree(*shares: str) -> dict[str, Any]:
    names = "abcdefghijklmnopqrstuvwxyz"
    children = [{"name": names[i], "share": s} for i, s in enumerate(shares)]
    return {"name": "root", "children": children}


JUST_OVER = tree("60%", "40.0000001%")
EXACTLY_FULL = [
    pytest.param(("10%", "20%", "70%"), id="10+20+70, which floats sum to 1.0000000000000002"),
    pytest.param(("33.3%", "33.3%", "33.4%"), id="33.3+33.3+33.4"),
    pytest.param(tuple(["0.1%"] * 10 + ["99%"]), id="ten times 0.1 and 99"),
    pytest.param(("99.9999999%", "0.0000001%"), id="a share of a millionth of a percent"),
]


def refusal(text: str, file: str = "lab.yaml") -> InputError:
    with pytest.raises(InputError) as caught:
        parse_instance(text, file)
    return caught.value


def test_siblings_above_100_percent_by_a_ten_millionth_of_a_percent_are_bad_input():
    err = refusal(yaml.safe_dump(instance(budgets=JUST_OVER), sort_keys=False))
    assert err.field == "budgets.children"
    assert err.line is not None
    assert err.message == (
        "shares of root's children sum to 100.0000001% (a 60% + b 40.0000001%), more than 100%"
    )


def test_a_share_above_100_percent_by_a_ten_millionth_is_bad_input():
    err = refusal(yaml.safe_dump(instance(budgets=tree("100.0000001%")), sort_keys=False))
    assert err.field == "budgets.children[0].share"
    assert "between 0% and 100%" in err.message


@pytest.mark.parametrize("shares", EXACTLY_FULL)
def test_siblings_summing_to_exactly_100_percent_are_accepted_and_written_back_exactly(shares):
    snapshot = snapshot_of(instance(budgets=tree(*shares)))
    written = dump_instance(snapshot)
    again = parse_instance(written, "again.yaml")
    children = again.budgets.root.children
    assert [c.share for c in children] == [c.share for c in snapshot.budgets.root.children]
    assert [percent_text(c.share) for c in children] == [s for s in shares]
    assert sum(exact(c.share) for c in children) == 1


def test_the_writer_keeps_every_digit_of_a_share():
    # It wrote f"{share * 100:g}": six significant digits, 12.3456789% became 12.3457%.
    snapshot = snapshot_of(instance(budgets=tree("12.3456789%", "87.6543211%")))
    text = dump_instance(snapshot)
    assert "share: 12.3456789%" in text and "share: 87.6543211%" in text


def test_a_scenario_whose_siblings_are_above_100_percent_is_bad_input(tmp_path: Path):
    path = tmp_path / "alt.yaml"
    path.write_text(yaml.safe_dump({"budgets": JUST_OVER}, sort_keys=False))
    with pytest.raises(InputError) as caught:
        load_scenario(path, snapshot_of(instance()))
    err = caught.value
    assert (err.file, err.field) == (str(path), "budgets.children")
    assert "100.0000001%" in err.message


CONFIG = """\
name: gov
state: sqlite:///{state}
metrics: {{port: 0}}
budgets:
  name: lab
  owners: [director]
  children:
{children}
"""


def config_file(tmp_path: Path, *children: str) -> Path:
    path = tmp_path / "c.yaml"
    lines = "\n".join(f"    - {c}" for c in children)
    path.write_text(CONFIG.format(state=tmp_path / "s.db", children=lines))
    return path


def test_a_controller_config_whose_siblings_are_above_100_percent_is_bad_input(tmp_path: Path):
    path = config_file(tmp_path, "{name: a, share: 60%}", "{name: b, share: 40.0000001%}")
    with pytest.raises(InputError) as caught:
        load_controller_config(path)
    assert (caught.value.field, caught.value.line) == ("budgets.children", 7)


def budgets_set(config: Path, path: str, share: str) -> Any:
    return CliRunner().invoke(
        app, ["budgets", "set", path, share, "--as", "director", "--config", str(config)]
    )


def test_budgets_set_refuses_a_share_that_brings_siblings_above_100_percent_by_any_amount(
    tmp_path: Path, monkeypatch
):
    import getpass

    monkeypatch.setattr(getpass, "getuser", lambda: "root")
    config = config_file(
        tmp_path, "{name: a, share: 10%}", "{name: b, share: 20%}", "{name: c, share: 60%}"
    )
    over = budgets_set(config, "c", "70.0000001%")
    assert over.exit_code == 2
    assert "would bring its siblings' shares to 100.0000001% of lab, the root" in over.stderr
    full = budgets_set(config, "c", "70%")  # 0.1 + 0.2 + 0.7: exactly 100%
    assert full.exit_code == 0, full.stderr
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    assert store.shares() == {"c": 0.7}
    store.close()


def test_check_change_sums_the_tree_and_the_new_share_exactly():
    budgets = snapshot_of(
        instance(budgets={**tree("10%", "20%", "60%"), "owners": ["director"]})
    ).budgets
    assert check_change(budgets, "c", Decimal("0.7"), "director") == 0.6
    with pytest.raises(GovernanceError, match=r"100\.0000001%"):
        check_change(budgets, "c", Decimal("0.700000001"), "director")


def test_shares_changed_before_the_config_was_edited_cannot_overfill_the_tree():
    # c was set to 70% beside 10% and 20%; then the config gave b 30%: 110% with the change.
    edited = snapshot_of(instance(budgets=tree("10%", "30%", "60%"))).budgets
    with pytest.raises(GovernanceError, match=r"sum to 110% with the changes .* \(c 70%\)"):
        with_shares(edited, {"c": 0.7})
    assert with_shares(edited, {"c": 0.6}).node("c").share == 0.6


def test_budgets_show_names_the_config_when_changes_made_before_an_edit_overfill_it(
    tmp_path: Path,
):
    config = config_file(
        tmp_path, "{name: a, share: 10%}", "{name: b, share: 30%}", "{name: c, share: 60%}"
    )
    store = StateStore(f"sqlite:///{tmp_path / 's.db'}")
    store.change_share(0.0, "director", "c", 0.6, 0.7)
    store.close()
    shown = CliRunner().invoke(app, ["budgets", "show", "--config", str(config)])
    assert shown.exit_code == 2
    assert shown.stderr.startswith(
        f"error: {config}: budgets: the shares of the children of lab, the root sum to"
    )


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_generated_trees_round_shares_down_to_a_tenth_of_a_percent_and_stay_valid(seed, tmp_path):
    snapshot = generate(GeneratorSpec(hosts=8, levels=(7, 30, 90), seed=seed))
    tree_ = snapshot.budgets
    for path in tree_.paths():
        shares = [tree_.node(c).share for c in tree_.children(path)]
        assert over_100(shares) is None
        for s in shares:
            assert (exact(s) * 1000) % 1 == 0  # whole tenths of a percent
    again = parse_instance(dump_instance(snapshot), "g.yaml").budgets
    assert {p: again.node(p).share for p in again.paths()} == {
        p: tree_.node(p).share for p in tree_.paths()
    }
