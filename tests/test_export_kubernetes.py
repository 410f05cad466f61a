"""`alloc export --to kubernetes` without a cluster (alloc.adapters.kubernetes.export): the
requests the executor would send for a plan, read from a file of the cluster; every body valid
against the Kubernetes 1.20 API's own OpenAPI schema (tests/data, strict: no unknown field);
the kubectl script quotes every name, so hostile names, labels and annotations stay data.
Every plan is checked against SPEC.md's invariants."""

from __future__ import annotations

import json
import os
import re
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from k8s_local import controller_config

from alloc.adapters.kubernetes.executor import KubernetesExecutor
from alloc.adapters.kubernetes.export import (
    ClusterFile,
    RecordingApi,
    plan_steps,
    render_script,
    render_yaml,
)
from alloc.adapters.kubernetes.read import KubeSite
from alloc.adapters.kubernetes.steps import Step
from alloc.domain import Action, BudgetNode, BudgetPath, BudgetTree, Policy
from alloc.round import run_round
from alloc.solve.validate import validate

SCHEMA = Path(__file__).parent / "data" / "k8s-1.20-openapi.json"
TREE = BudgetTree(BudgetNode("lab", 1.0, (), (BudgetNode("nlp", 0.5), BudgetNode("vision", 0.5))))
SITE = KubeSite(queues={"nlp": BudgetPath("nlp"), "vision": BudgetPath("vision")})
POLICY = Policy(solver="greedy", time_limit_s=5.0)
HOSTILE = [
    "quote'\"",
    "new\nline",
    "$(touch /tmp/alloc-pwned)",
    "`touch /tmp/alloc-pwned`",
    ";rm -rf /tmp/alloc-pwned;",
    "ünïcødé-名前",
    "x" * 5000,
]


def node(name: str, gpus: int = 8, **meta: Any) -> dict[str, Any]:
    return {
        "kind": "Node",
        "metadata": {"name": name, **meta},
        "spec": {},
        "status": {
            "allocatable": {"nvidia.com/gpu": str(gpus)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def pod(
    name: str,
    namespace: str,
    gpus: int = 8,
    node_name: str | None = None,
    min_runtime: str | None = "1h",
    **labels: str,
) -> dict[str, Any]:
    annotations = {"alloc.dev/min-runtime": min_runtime} if min_runtime else {}
    spec: dict[str, Any] = {
        "schedulerName": "alloc",
        "containers": [
            {"name": "m", "image": "x", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
        ],
    }
    if node_name:
        spec["nodeName"] = node_name
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name[:20]}",
            "creationTimestamp": "2026-12-02T11:00:00Z",
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def export_of(tmp_path: Path, items: list[dict[str, Any]]) -> tuple[list[Step], Any]:
    """Solve a round over the cluster in the file, check the plan, export it."""
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    cluster = ClusterFile(path)
    snapshot = KubernetesExecutor(SITE, TREE, RecordingApi(cluster), POLICY).snapshot()
    plan = run_round(snapshot)
    assert validate(snapshot, plan) == []
    steps, report = plan_steps(plan, SITE, TREE, POLICY, cluster)
    return steps, (plan, report)


@cache
def _schema() -> dict[str, Any]:
    doc = json.loads(SCHEMA.read_text())

    def strict(node: Any) -> Any:
        """Unknown fields are errors (kubectl --validate=strict): every object that lists its
        properties allows no other."""
        if isinstance(node, dict):
            out = {k: strict(v) for k, v in node.items()}
            if "properties" in out and "additionalProperties" not in out:
                out["additionalProperties"] = False
            return out
        if isinstance(node, list):
            return [strict(v) for v in node]
        return node

    doc["definitions"] = strict(doc["definitions"])
    return doc


def _validate_body(ref: str, body: Any, partial: bool) -> None:
    doc = _schema()
    definitions = doc["definitions"]
    if partial:  # a merge patch: any part of the object; null removes a field
        definitions = json.loads(json.dumps(definitions).replace('"required":', '"_required":'))
        body = _without_nulls(body)
    jsonschema.Draft4Validator({"$ref": ref, "definitions": definitions}).validate(body)


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    return value


def check_against_the_api(step: Step) -> None:
    """The request is an operation of the 1.20 API, with known query parameters and a body its
    schema accepts."""
    paths = _schema()["paths"]
    template = next(
        (t for t in paths if re.fullmatch(re.sub(r"\{[^}]+\}", "[^/]+", t), step.path)), None
    )
    assert template is not None, step.path
    operation = paths[template].get(step.method.lower())
    assert operation is not None, (step.method, template)
    assert {k for k, _ in step.query} <= set(operation["query"])
    if step.method == "PATCH":
        kind = "Node" if template.startswith("/api/v1/nodes") else "Pod"
        _validate_body(f"#/definitions/io.k8s.api.core.v1.{kind}", step.body, partial=True)
    elif step.body is not None:
        _validate_body(operation["body"]["$ref"], step.body, partial=False)


def lab(namespace: str = "nlp") -> list[dict[str, Any]]:
    """Four nodes: an unallocated bare pod on each of three, a gang of two waiting, a node in
    repair that alloc cordoned, one cordoned by someone to drain."""
    items = [node(f"n{i}") for i in range(1, 4)]
    items.append(
        node(
            "n4",
            annotations={"alloc.dev/cordoned": "true"},
        )
    )
    items.append(node("n5"))
    items[-1]["spec"] = {"unschedulable": True}
    items += [pod(f"free-{i}", namespace, node_name=f"n{i}", min_runtime=None) for i in (1, 2, 3)]
    items += [pod(f"g-{i}", "vision", **{"alloc.dev/workload": "g"}) for i in range(2)]
    return items


def test_every_request_of_an_exported_plan_is_valid_against_the_api_s_schema(tmp_path):
    steps, (plan, report) = export_of(tmp_path, lab())
    assert report.failed == ()
    kinds = {(s.method, s.path.rsplit("/", 1)[-1]) for s in steps}
    # the gang started (annotate + bind), unallocated work evicted and requeued (a note, the
    # eviction, the deletion, the copy), the repaired node uncordoned, the cordoned one drained
    assert ("POST", "binding") in kinds and ("POST", "eviction") in kinds
    assert ("POST", "pods") in kinds and ("POST", "configmaps") in kinds
    assert ("PATCH", "n4") in kinds and ("PATCH", "n5") in kinds
    for step in steps:
        check_against_the_api(step)


def test_a_body_the_api_would_refuse_is_caught_by_the_check():
    bad = Step("bind", "POST", "/api/v1/namespaces/a/pods/b/binding", {"target": {"nme": "x"}})
    with pytest.raises(jsonschema.ValidationError):
        check_against_the_api(bad)
    with pytest.raises(AssertionError):
        check_against_the_api(Step("x", "POST", "/api/v1/namespaces/a/pods/b/exec", {}))


def test_the_yaml_stream_reads_back_as_the_requests(tmp_path):
    steps, _ = export_of(tmp_path, lab())
    docs = [d for d in yaml.safe_load_all(render_yaml(steps, "header\nline two")) if d]
    assert [(d["method"], d["path"], d.get("body")) for d in docs] == [
        (s.method, s.url, json.loads(json.dumps(s.body)) if s.body is not None else None)
        for s in steps
    ]


def fake_kubectl(tmp_path: Path) -> Path:
    """A kubectl that records its argv (and stdin) NUL-separated, one call per line."""
    script = tmp_path / "kubectl"
    log = tmp_path / "calls"
    script.write_text(
        "#!/usr/bin/env bash\n"
        f'{{ printf "%s\\0" "$@"; if [[ " $* " == *" -f - "* ]]; then printf "stdin=%s\\0" '
        f'"$(cat)"; fi; printf "\\n"; }} >> {log}\n'
    )
    script.chmod(0o755)
    return script


def calls(tmp_path: Path) -> list[list[str]]:
    text = (tmp_path / "calls").read_text()
    return [line.split("\0") for line in text.split("\0\n") if line]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_names_in_the_cluster_stay_data_in_the_script(tmp_path, name):
    pwned = Path("/tmp/alloc-pwned")
    pwned.unlink(missing_ok=True)
    items = [node(f"n{i}") for i in range(1, 3)]
    items.append(node(name))  # a node named by a hostile hand, drained
    items[-1]["spec"] = {"unschedulable": True}
    items.append(pod(name, "nlp", node_name="n1", min_runtime=None, **{"alloc.dev/queue": name}))
    items[-1]["metadata"]["annotations"]["note"] = name
    items.append(pod("owed" + name[:40], "vision"))
    items.append(pod("owed2", "vision"))
    steps, (plan, report) = export_of(tmp_path, items)
    assert any(d.action is Action.PREEMPT for d in plan.decisions)
    script = render_script(steps, f"plan of {name}")
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
    path = tmp_path / "alloc-plan.sh"
    path.write_text(script)
    env = {**os.environ, "KUBECTL": str(fake_kubectl(tmp_path))}
    done = subprocess.run(["bash", str(path)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert not pwned.exists()
    got = calls(tmp_path)
    assert len(got) == len(steps)
    for argv, step in zip(got, steps, strict=True):
        if step.method == "POST":
            assert argv[:3] == ["create", "--raw", step.url]
            assert json.loads(argv[-1].removeprefix("stdin=")) == json.loads(json.dumps(step.body))
        elif step.method == "DELETE":
            assert argv == ["delete", "--raw", step.url]
        else:
            resource, namespace, target = step.target
            assert argv[:2] == ["patch", f"{resource}/{target}"]
            assert json.loads(argv[argv.index("-p") + 1]) == json.loads(json.dumps(step.body))
    for line in script.splitlines():
        assert not line.startswith("#") or "\n" not in line  # comments stay one line each


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[1, 2", "neither JSON nor YAML"),
        ('{"kind": "Pod"}', "expected a List of objects"),
        ('{"items": [1]}', "expected a List of objects"),
    ],
)
def test_a_cluster_file_that_does_not_read_is_refused_with_the_reason(tmp_path, text, problem):
    path = tmp_path / "cluster.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=problem):
        ClusterFile(path)


def test_a_cluster_file_that_is_a_folder_is_named_once(tmp_path):
    from alloc.io import InputError

    with pytest.raises(InputError) as caught:
        ClusterFile(tmp_path)
    assert str(caught.value) == f"{tmp_path}: is a folder, expected a file of kubectl get -o json"


def cli_setup(tmp_path: Path) -> tuple[Path, Path, Path, list[Step]]:
    """A plan of the lab's cluster file, the config, and the requests it exports to."""
    from alloc.io import dump_plan

    steps, (plan, _) = export_of(tmp_path, lab())
    (tmp_path / "plan.json").write_text(dump_plan(plan))
    config = tmp_path / "controller.yaml"
    config.write_text(controller_config(tmp_path / "s.db", tmp_path / "none"))
    return tmp_path / "plan.json", config, tmp_path / "cluster.json", steps


def cli(*args: object):
    from typer.testing import CliRunner

    from alloc.cli.app import app

    return CliRunner().invoke(app, ["export", *map(str, args)])


def test_the_command_prints_the_requests_of_a_plan_for_a_cluster_file(tmp_path):
    plan, config, cluster, steps = cli_setup(tmp_path)
    result = cli(plan, "--to", "kubernetes", "--config", config, "--cluster", cluster)
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [(d["method"], d["path"]) for d in docs] == [(s.method, s.url) for s in steps]
    assert f"cluster: {cluster} (a file of the cluster)" in result.stdout


def test_the_command_writes_the_yaml_and_an_executable_script_into_a_folder(tmp_path):
    plan, config, cluster, steps = cli_setup(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    args = ["--to", "kubernetes", "--config", config, "--cluster", cluster, "-o", out]
    result = cli(plan, *args)
    assert result.exit_code == 0, result.output
    assert f"{len(steps)} requests (dry run: nothing was sent)" in result.output
    assert (out / "alloc-plan.sh").stat().st_mode & 0o111
    assert subprocess.run(["bash", "-n", str(out / "alloc-plan.sh")]).returncode == 0
    assert len([d for d in yaml.safe_load_all((out / "alloc-plan.yaml").read_text()) if d]) == len(
        steps
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--cluster", "{cluster}"], "--config: required with --to kubernetes: the controller"),
        (["--config", "{config}", "--cluster", "{cluster}", "--apply"], "leave out --cluster"),
        (["--config", "{config}", "--cluster", "{plan}"], "expected a List of objects"),
        (
            ["--config", "{config}", "--cluster", "{cluster}", "-o", "{missing}"],
            "does not exist (create it first)",
        ),
    ],
)
def test_bad_export_arguments_are_bad_input_and_write_nothing(tmp_path, extra, message):
    plan, config, cluster, _ = cli_setup(tmp_path)
    names = {"cluster": cluster, "config": config, "plan": plan, "missing": tmp_path / "nope"}
    before = sorted(tmp_path.rglob("*"))
    result = cli(plan, "--to", "kubernetes", *[a.format(**names) for a in extra])
    assert result.exit_code == 2, result.output
    assert message in result.output + result.stderr
    assert sorted(tmp_path.rglob("*")) == before


def test_a_cluster_file_is_only_for_kubernetes(tmp_path):
    plan, _, cluster, _ = cli_setup(tmp_path)
    result = cli(plan, "--to", "slurm", "--cluster", cluster)
    assert result.exit_code == 2 and "only for --to kubernetes" in result.output + result.stderr
