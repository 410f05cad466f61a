"""The README's tutorials run as written (issue 17): each one's commands in one bash session, in
a fresh folder laid out like a clone (`instances/`, and `../shared/` for the recipes), with this
checkout's `alloc` first on the path; what the README shows after a command must be printed.
The Slurm and Kubernetes tutorials need the local clusters (.ci/run starts them; without them
they are skipped, unless CI requires them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from slurm_local import PLAIN, Cluster, require_slurm

from tests.tutorials import Tutorial, run, tutorials

REPO = Path(__file__).resolve().parents[1]
# The workspace's shared/ folder (the recipes the tutorials start clusters with), found as
# .ci/run finds it.
_CANDIDATES = [os.environ.get("ALLOC_RECIPES", ""), REPO.parent / "shared" / "recipes"]
SHARED = next(
    (Path(d).parent for d in [*_CANDIDATES, "/work/shared/recipes"] if d and Path(d).is_dir()),
    REPO.parent / "shared",
)
ALL = tutorials((REPO / "README.md").read_text(encoding="utf-8"))
_DRY_RUN_FILES = shutil.ignore_patterns("*.db", "*.db-*")


def test_the_readme_has_its_tutorials_in_order():
    titles = [t.title for t in ALL]
    assert [t.split(".")[0] for t in titles] == ["1", "2", "3", "4", "5", "6"], titles
    assert "Slurm" in titles[4] and "Kubernetes" in titles[5]


def _folder(tmp_path: Path) -> Path:
    """A user's clone: instances/ here, the workspace's shared/ beside it. instances/controller/
    is a copy (without the files of an earlier dry run): tutorial 4 keeps its dry run's files
    there, in dry-run/."""
    clone = tmp_path / "alloc"
    (clone / "instances").mkdir(parents=True)
    for entry in (REPO / "instances").iterdir():
        if entry.name == "controller":
            shutil.copytree(entry, clone / "instances" / entry.name, ignore=_DRY_RUN_FILES)
        else:
            (clone / "instances" / entry.name).symlink_to(entry)
    if SHARED.is_dir():
        (tmp_path / "shared").symlink_to(SHARED)
    return clone


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)  # this checkout's alloc, whatever the venv installed
    env.pop("COLUMNS", None)
    return env


def _check(tutorial: Tutorial, tmp_path: Path, timeout_s: float) -> None:
    problems = run(tutorial, _folder(tmp_path), _env(), timeout_s)
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("tutorial", ALL[:4], ids=lambda t: t.title.split(".")[0])
def test_a_tutorial_runs_as_written(tutorial: Tutorial, tmp_path: Path):
    _check(tutorial, tmp_path, timeout_s=900)


def test_the_slurm_tutorial_runs_as_written(tmp_path: Path):
    env = require_slurm()
    if Path(os.environ.get("SLURM_LOCAL_DIR") or "/var/lib/slurm-local") != PLAIN:
        # The tutorial starts (or finds running) the recipe's cluster in $SLURM_LOCAL_DIR, with
        # the ports of the environment: a cluster of one's own is named as the tutorial says.
        pytest.skip(f"the tutorial uses $SLURM_LOCAL_DIR: export it ({PLAIN}) and its ports")
    if not (SHARED / "recipes" / "slurm-local.sh").exists():
        pytest.fail(f"no recipes in {SHARED} (set ALLOC_RECIPES)")
    cluster = Cluster(env, tmp_path / "job.sh")
    cluster.reset()
    try:
        _check(ALL[4], tmp_path, timeout_s=300)
    finally:
        cluster.reset()


def test_the_kubernetes_tutorial_runs_as_written(tmp_path: Path):
    from k8s_local import KUBECONFIG, require_kubernetes

    require_kubernetes()
    folder = Path(os.environ.get("K8S_LOCAL_DIR") or "/var/lib/k8s-local")
    if folder / "kubeconfig" != KUBECONFIG:
        # the tutorial starts (or finds running) the recipe's control plane in $K8S_LOCAL_DIR
        pytest.skip("the tutorial uses $K8S_LOCAL_DIR's kubeconfig: export it and its ports")
    cache = Path(os.environ.get("K8S_LOCAL_CACHE") or "/var/cache/k8s-local")
    kubectl = cache / "bin" / "kubectl"

    def drop_namespace() -> None:
        subprocess.run(
            [
                str(kubectl),
                "--kubeconfig",
                str(KUBECONFIG),
                "delete",
                "namespace",
                "tutorial",
                "--ignore-not-found",
                "--wait=true",
                "--timeout=60s",
            ],
            capture_output=True,
            check=False,
        )

    drop_namespace()
    try:
        _check(ALL[5], tmp_path, timeout_s=300)
    finally:
        drop_namespace()


def test_the_reference_dry_run_sample_is_what_the_controller_prints(tmp_path: Path):
    """The sample under `#### A dry run on simulated time` (outside the tutorials, so never
    run) had lost the leader lease's lines and broke its first line where no output does."""
    import re

    from tests.tutorials import _steps

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("#### A dry run on simulated time") :]
    block = re.search(r"```console\n(.*?)```", section, flags=re.S)
    assert block is not None
    steps = _steps(block.group(1))
    assert any("leads (epoch 1)" in line for line in steps[0].shown)
    _check(Tutorial("dry run (reference)", steps), tmp_path, timeout_s=300)
