"""What the commands that open a controller's state and cluster say when they cannot (README,
exit codes): a state in a folder that does not exist, or not there yet for a command that
only reads it, is bad input (2) and nothing is created; a database server or a cluster that
does not answer is said in one line as such (1), never as an internal error; a run of
`--rounds N` in which rounds failed exits 1. And what `alloc status` says of a ledger whose
runs ended since the last round."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sim2 import write_lab
from typer.testing import CliRunner

from alloc.cli.app import app

CONFIG = """\
name: sim2
executor: sim
interval: 0.01
state: {state}
policy: {{solver: greedy}}
budgets:
  name: lab
  owners: [{user}]
  children: [{{name: nlp, share: 50%}}, {{name: vision, share: 50%}}]
metrics: {{port: 0}}
sim: {{lab: lab.yaml, trace: trace.csv, cluster: fresh/cluster.db, step: 15m}}
"""
READ_ONLY = [
    ["status"],
    ["queue"],
    ["explain", "a"],
    ["budgets", "show"],
    ["budgets", "history"],
]
READ_ONLY_IDS = ["status", "queue", "explain", "budgets show", "budgets history"]


def alloc(*args: str | Path):
    return CliRunner().invoke(app, [str(a) for a in args])


def configured(folder: Path, state: str) -> Path:
    import getpass

    write_lab(folder)
    (folder / "fresh").mkdir(exist_ok=True)
    path = folder / "c.yaml"
    path.write_text(CONFIG.format(state=state, user=getpass.getuser()))
    return path


def command(words: list[str], config: Path) -> list[str | Path]:
    """`alloc WORDS` with `--config` after the command (and before explain's workload)."""
    head = 2 if words[0] in ("budgets", "controller") else 1
    return [*words[:head], "--config", config, *words[head:]]


def written(folder: Path) -> list[str]:
    """The files in fresh/, but SQLite's -wal and -shm beside a database, which come and go
    as connections to it close (a run's engine may be disposed of later)."""
    return sorted(
        p.name for p in (folder / "fresh").iterdir() if not p.name.endswith(("-wal", "-shm"))
    )


@pytest.mark.parametrize("words", [*READ_ONLY, ["controller", "run"]], ids=[*READ_ONLY_IDS, "run"])
def test_an_sqlite_state_in_a_folder_that_does_not_exist_is_bad_input(tmp_path, words):
    config = configured(tmp_path, "sqlite:////nonexist/dir/state.db")
    args = [*command(words, config), *(["--rounds", "1"] if words[0] == "controller" else [])]
    result = alloc(*args)
    assert result.exit_code == 2, result.output
    line = " ".join(result.stderr.split())
    assert line.startswith(f"error: {config}: state: cannot open /nonexist/dir/state.db: ")
    # Every command says the same: no run could have made the folder, so not "has the
    # controller run?" (that is for a missing file in a folder that is there).
    assert line.endswith("the folder /nonexist/dir does not exist (create it first)")
    assert "has the controller run" not in line
    assert "internal error" not in line
    assert written(tmp_path) == []  # not even the simulated cluster's file


@pytest.mark.parametrize("words", READ_ONLY, ids=READ_ONLY_IDS)
def test_a_read_only_command_on_a_state_never_written_says_so_and_creates_nothing(tmp_path, words):
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    result = alloc(*command(words, config))
    assert result.exit_code == 2, result.output
    assert " ".join(result.stderr.split()) == (
        f"error: {config}: state: no state at {tmp_path}/fresh/state.db: has the controller "
        f"run? (alloc controller run --config {config})"
    )
    assert written(tmp_path) == []


def test_a_read_only_command_on_a_simulated_cluster_never_created_says_so(tmp_path):
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    for file in (tmp_path / "fresh").glob("cluster.db*"):  # rm fresh/cluster.db*
        file.unlink()
    for words in READ_ONLY[:3]:
        result = alloc(*command(words, config))
        assert result.exit_code == 2, result.output
        assert f"sim.cluster: no simulated cluster at {tmp_path}/fresh/cluster.db: has the " in (
            " ".join(result.stderr.split())
        )
        assert "cluster.db" not in written(tmp_path)


def test_budgets_set_creates_the_state_only_to_record_a_change(tmp_path):
    """A share may be set before the controller first runs: `budgets set` creates the state
    to record it, but a change it refuses creates nothing."""
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    import getpass

    me = getpass.getuser()
    refused = alloc("budgets", "set", "nlp", "120%", "--as", me, "--config", config)
    assert refused.exit_code == 2, refused.output
    assert written(tmp_path) == []
    done = alloc("budgets", "set", "nlp", "40%", "--as", me, "--config", config)
    assert done.exit_code == 0, done.output
    assert written(tmp_path) == ["state.db"]
    assert alloc("budgets", "history", "--config", config).exit_code == 0


def test_a_refused_dry_run_writes_nothing(tmp_path):
    """A state left by an earlier run whose simulated cluster was since removed: the dry run
    is refused before the cluster's file is created again."""
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    run = ["controller", "run", "--config", config, "--clock", "simulated"]
    assert alloc(*run, "--rounds", "3").exit_code == 0
    for file in (tmp_path / "fresh").glob("cluster.db*"):  # rm fresh/cluster.db*
        file.unlink()
    result = alloc(*run, "--rounds", "3")
    assert result.exit_code == 2, result.output
    assert "it holds rounds up to 2026-11-30 00:" in result.stderr
    assert "an earlier run's" in result.stderr
    assert written(tmp_path) == ["state.db"]


@pytest.mark.parametrize(
    "words",
    [*READ_ONLY, ["controller", "run"], ["budgets", "set"]],
    ids=[*READ_ONLY_IDS, "run", "budgets set"],
)
def test_a_state_database_that_does_not_answer_is_said_in_one_line_with_exit_1(tmp_path, words):
    pytest.importorskip("psycopg")
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    url = "postgresql+psycopg://nobody:sekrit@127.0.0.1:1/x"  # nothing listens on port 1
    config.write_text(config.read_text().replace("sqlite:///fresh/state.db", url))
    before = written(tmp_path)
    args = command(words, config)
    if words[0] == "controller":
        args += ["--rounds", "1"]
    if words == ["budgets", "set"]:
        import getpass

        args = ["budgets", "set", "nlp", "40%", "--as", getpass.getuser(), "--config", config]
    result = alloc(*args)
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith(
        f"error: cannot reach the state database of {config} "
        "(postgresql+psycopg://nobody:***@127.0.0.1:1/x): "
    )
    assert "refused" in result.stderr.lower()
    assert len(result.stderr.splitlines()) == 1
    for never in ("\\n", "\\t", "sqlalche.me", "sekrit", "internal error", "OperationalError"):
        assert never not in result.stderr, never
    assert written(tmp_path) == before


@pytest.mark.parametrize(
    ("url", "said"),
    [
        (
            "postgresql://nobody:sekrit@127.0.0.1:1/x",
            "the PostgreSQL driver is not installed: pip install 'alloc[postgres]'",
        ),
        (
            "postgresql+psycopg://nobody:sekrit@127.0.0.1:1/x",
            "the PostgreSQL driver is not installed: pip install 'alloc[postgres]'",
        ),
        (
            "postgresql+psycopg2://nobody:sekrit@127.0.0.1:1/x",
            "the PostgreSQL driver psycopg2 is not installed: pip install psycopg2, or use a "
            "postgresql+psycopg:// URL and pip install 'alloc[postgres]'",
        ),
    ],
    ids=["postgresql", "psycopg", "psycopg2"],
)
def test_a_postgresql_state_without_its_driver_says_what_to_install(
    tmp_path, monkeypatch, url, said
):
    """Not `No module named 'psycopg'`: the extra that installs it (pyproject.toml)."""
    import sys

    monkeypatch.setitem(sys.modules, "psycopg", None)  # `import psycopg` fails
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    config = configured(tmp_path, url)
    result = alloc("controller", "run", "--config", config, "--rounds", "1")
    assert result.exit_code == 2, result.output
    shown = url.replace("sekrit", "***")
    assert " ".join(result.stderr.split()) == (
        f"error: {config}: state: cannot open {shown}: {said}"
    )


def _unreachable(monkeypatch, error: Exception) -> None:
    """The config's cluster answers nothing: every read of it fails with `error`."""
    import alloc.controller.build as build

    real = build.executor_for

    def cut_off(settings, kind=None, **options):
        executor = real(settings, kind, **options)

        def snapshot():
            raise error

        executor.snapshot = snapshot
        return executor

    monkeypatch.setattr(build, "executor_for", cut_off)


def _errors():
    from alloc.adapters.kubernetes.api import KubeError
    from alloc.adapters.slurm.commands import SlurmError

    return {
        "slurm": SlurmError(["sinfo", "--json"], "no answer within 10 s"),
        "kubernetes": KubeError("list nodes", 0, "no answer: NewConnectionError(...)"),
    }


@pytest.mark.parametrize("words", READ_ONLY[:3], ids=READ_ONLY_IDS[:3])
@pytest.mark.parametrize("kind", ["slurm", "kubernetes"])
def test_a_cluster_that_does_not_answer_is_said_in_one_line_with_exit_1(
    tmp_path, monkeypatch, words, kind
):
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    assert alloc("controller", "run", "--config", config, "--rounds", "1").exit_code == 0
    error = _errors()[kind]
    _unreachable(monkeypatch, error)
    result = alloc(*command(words, config))
    assert result.exit_code == 1, result.output
    assert result.stderr == f"error: cannot reach the cluster of {config}: {error}\n"


def test_a_run_of_n_rounds_in_which_rounds_failed_exits_1_saying_how_many(tmp_path, monkeypatch):
    """`--rounds N` is run to check something: a failed round is not a pass (without
    --rounds the controller carries on through failed rounds)."""
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    _unreachable(monkeypatch, _errors()["slurm"])
    result = alloc("controller", "run", "--config", config, "--rounds", "2")
    assert result.exit_code == 1, result.output
    lines = result.stderr.splitlines()
    # One line per failed round: a log warning printed each a second time, with the error's
    # class name (`round failed: SlurmError: sinfo --json: ...`) in one of the two.
    failed = [line for line in lines if "failed" in line]
    assert failed == ["round failed: sinfo --json: no answer within 10 s"] * 2 + [
        "2 of the 2 rounds failed (--rounds 2)"
    ]


def test_the_ledger_says_runs_that_ended_since_the_last_round_are_open_until_the_next(tmp_path):
    """After a scancel of everything, `running: none` and `2 running` in the ledger
    contradicted each other: the ledger closes them at the next round, and says so."""
    config = configured(tmp_path, "sqlite:///fresh/state.db")
    assert alloc("controller", "run", "--config", config, "--rounds", "2").exit_code == 0
    with sqlite3.connect(tmp_path / "fresh" / "cluster.db") as db:  # cancelled, every job
        db.execute("UPDATE jobs SET state = 'done', hosts = '{}' WHERE state = 'running'")
    status = alloc("status", "--config", config)
    assert status.exit_code == 0, status.output
    text = " ".join(status.stdout.split())
    assert "running: none" in text
    assert "ledger: 2 runs (0 running; 2 more open until the next round sees them ended)" in text
