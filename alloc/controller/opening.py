"""Opening what a controller config names, for every command that uses it (`controller run`,
`status`, `queue --config`, `explain --config`, `budgets`): its state database and its
cluster, each said in one line when it cannot be used (README, exit codes).

- An SQLite state in a folder that does not exist, or a state URL that names no database
  alloc can open, is bad input (InputError, exit 2), as `-o` into a missing folder is.
- A missing folder is said the same way by every command (create it first).
- A read-only command (`existing`) on a simulated cluster's config whose SQLite state file or
  cluster file does not exist in a folder that does says that the controller has not run
  (exit 2), and creates neither: an empty state would read as an empty queue. On a real
  cluster's (Slurm, Kubernetes) it reads the cluster with an empty ledger (`unwritten`: the
  controller has not run, so nothing was charged yet), in memory: its queue is worth seeing
  before the first round, and nothing is created.
- A state URL whose driver is not installed says what to install (`alloc[postgres]`).
- A database server or a cluster that cannot be reached is neither bad input nor an internal
  error: Unreachable (exit 1), one line, with the URL's password never shown."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from alloc.adapters.base import ClusterError
from alloc.controller.state import StateStore
from alloc.io.controller_config import ControllerSettings
from alloc.io.errors import InputError, Unreachable

__all__ = ["check_cluster", "check_state", "open_state", "reaching", "sqlite_file", "unwritten"]


def sqlite_file(url: str) -> Path | None:
    """The file of an SQLite state URL (`sqlite:///conf/state.db` -> conf/state.db); None for
    another database, an in-memory one or an SQLite URI (`sqlite:///file:...`)."""
    scheme, sep, rest = url.partition(":///")
    if not sep or scheme.split("+")[0] != "sqlite":
        return None
    file = rest.partition("?")[0]
    if not file or file == ":memory:" or file.startswith("file:"):
        return None
    return Path(file)


def _ran(config: str) -> str:
    return f"has the controller run? (alloc controller run --config {config})"


def open_state(settings: ControllerSettings, existing: bool = False) -> StateStore:
    """The state store of the config; with `existing` (a read-only command) only one that is
    there (an SQLite file is not created). InputError for a state that cannot be used,
    Unreachable for a database server that does not answer."""
    check_state(settings, existing)
    config, url = settings.file, settings.state_url
    file = sqlite_file(url)
    if existing and unwritten(settings) is not None:
        return StateStore("sqlite://")  # a real cluster's before its first round: in memory
    try:
        return StateStore(url)
    except OperationalError as exc:
        if file is None:  # a server: not the config's fault
            raise _unreachable_state(settings, exc) from None
        raise InputError(config, "state", f"cannot open {file}: {_one_line(exc)}") from None
    except ImportError as exc:  # the URL's driver is not installed
        message = f"cannot open {hidden(url)}: {_no_driver(url, exc)}"
        raise InputError(config, "state", message) from None
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy: a bad URL, an unknown driver
        message = f"cannot open {hidden(url)}: {_one_line(exc)}"
        raise InputError(config, "state", message) from None


def _no_driver(url: str, exc: ImportError) -> str:
    """What to install for a URL whose driver is missing: the `postgres` extra
    (pyproject.toml) for psycopg, the default driver of `postgresql://`."""
    module = (exc.name or "").split(".")[0]
    if module == "psycopg":
        return "the PostgreSQL driver is not installed: pip install 'alloc[postgres]'"
    if module.startswith("psycopg"):  # psycopg2, named by the URL: not what the extra installs
        return (
            f"the PostgreSQL driver {module} is not installed: pip install {module}, or use "
            "a postgresql+psycopg:// URL and pip install 'alloc[postgres]'"
        )
    return f"its driver is not installed (no module named {module or exc})"


def check_state(settings: ControllerSettings, existing: bool = False) -> None:
    """Before anything is opened or created: an SQLite state's folder is there, and with
    `existing` (a read-only command) its file too."""
    config, file = settings.file, sqlite_file(settings.state_url)
    if file is None:
        return
    if not file.parent.is_dir():  # the same for every command: no run could have made it
        message = f"cannot open {file}: the folder {file.parent} does not exist (create it first)"
        raise InputError(config, "state", message)
    if existing and not file.exists() and settings.executor == "sim":
        raise InputError(config, "state", f"no state at {file}: {_ran(config)}")


def unwritten(settings: ControllerSettings) -> Path | None:
    """The SQLite state file of a real cluster's config (Slurm, Kubernetes) that the
    controller has not written yet, else None: read-only commands read such a cluster with
    an empty ledger, and say so."""
    file = sqlite_file(settings.state_url)
    if file is None or settings.executor == "sim" or file.exists():
        return None
    return file


def check_cluster(settings: ControllerSettings) -> None:
    """For a read-only command: the simulated cluster's file is there (it would be created,
    empty, by opening it). Other clusters are read where they run."""
    if settings.executor == "sim" and settings.sim is not None:
        file = settings.sim.cluster
        if not file.exists():
            message = f"no simulated cluster at {file}: {_ran(settings.file)}"
            raise InputError(settings.file, "sim.cluster", message)


@contextmanager
def reaching(settings: ControllerSettings) -> Iterator[None]:
    """Inside it, a cluster that does not answer (ClusterError) or a database server that
    stops answering is Unreachable, in one line."""
    try:
        yield
    except ClusterError as exc:
        message = f"cannot reach the cluster of {settings.file}: {_one_line(exc)}"
        raise Unreachable(message) from None
    except OperationalError as exc:
        if sqlite_file(settings.state_url) is not None:
            raise
        raise _unreachable_state(settings, exc) from None


def hidden(url: str) -> str:
    """The URL with its password, if any, as `***`."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - not a URL SQLAlchemy reads: shown as written
        return url


def _unreachable_state(settings: ControllerSettings, exc: OperationalError) -> Unreachable:
    what = _one_line(exc)
    password = _password(settings.state_url)
    if password:
        what = what.replace(password, "***")
    return Unreachable(
        f"cannot reach the state database of {settings.file} ({hidden(settings.state_url)}): "
        + what
    )


def _password(url: str) -> str | None:
    try:
        return make_url(url).password  # type: ignore[return-value]
    except Exception:  # noqa: BLE001
        return None


def _one_line(exc: BaseException) -> str:
    """What went wrong, on one line: the driver's own message (not SQLAlchemy's wrapping, its
    SQL and its link to sqlalche.me), its lines joined (`...: Connection refused; Is the
    server running on that host ...?`)."""
    cause = getattr(exc, "orig", None) or exc
    lines = [" ".join(line.split()) for line in str(cause).splitlines()]
    return "; ".join(line for line in lines if line)
