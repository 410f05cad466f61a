"""Write tests/data/k8s-1.20-openapi.json: the part of the Kubernetes 1.20 API's own OpenAPI
(swagger 2.0) document that `alloc`'s requests touch: the operations of
alloc.adapters.kubernetes.steps and every definition their bodies reach, descriptions left
out. The source is the server's `api/openapi-spec/swagger.json` (in the source tree
../shared/recipes/k8s-local.sh builds from, or `kubectl get --raw /openapi/v2` of a 1.20
server).

    python tests/data/extract_k8s_openapi.py \
        /var/cache/k8s-local/src/kubernetes-1.20.2/api/openapi-spec/swagger.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OPERATIONS = {
    "/api/v1/namespaces/{namespace}/pods": ["post"],
    "/api/v1/namespaces/{namespace}/pods/{name}": ["patch", "delete"],
    "/api/v1/namespaces/{namespace}/pods/{name}/binding": ["post"],
    "/api/v1/namespaces/{namespace}/pods/{name}/eviction": ["post"],
    "/api/v1/nodes/{name}": ["patch"],
    "/api/v1/namespaces/{namespace}/configmaps": ["post"],
    "/api/v1/namespaces/{namespace}/configmaps/{name}": ["put", "delete"],
}
ROOTS = ["io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Node"]  # what merge patches patch


def main(source: str) -> None:
    doc = json.loads(Path(source).read_text())
    definitions = doc["definitions"]
    paths: dict[str, Any] = {}
    for path, methods in OPERATIONS.items():
        for method in methods:
            op = doc["paths"][path][method]
            params = op.get("parameters", []) + doc["paths"][path].get("parameters", [])
            body = [p for p in params if p.get("in") == "body"]
            paths.setdefault(path, {})[method] = {
                "body": body[0]["schema"] if body else None,
                "query": sorted(p["name"] for p in params if p.get("in") == "query"),
            }
    seen: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref":
                    name = value.rsplit("/", 1)[-1]
                    if name not in seen:
                        seen.add(name)
                        walk(definitions[name])
                else:
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(paths)
    for root in ROOTS:
        seen.add(root)
        walk(definitions[root])

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "description"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    out = {
        "info": doc["info"],
        "source": "/".join(Path(source).parts[-4:]),
        "paths": paths,
        "definitions": {name: strip(definitions[name]) for name in sorted(seen)},
    }
    target = Path(__file__).with_name("k8s-1.20-openapi.json")
    target.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"{target}: {len(paths)} paths, {len(seen)} definitions")


if __name__ == "__main__":
    main(sys.argv[1])
