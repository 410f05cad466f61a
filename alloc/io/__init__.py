"""Files <-> domain values; all validation of user input lives here. Each name is imported
when first used (PEP 562): `from alloc.io.errors import InputError` does not load the
instance reader (pydantic)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from alloc.lazy import names_from

# The instance file's JSON Schema as `alloc schema` prints it: generated from alloc.io.schema's
# models (`python -m alloc.io.schema` rewrites it; a test checks it is current), shipped so that
# printing it needs no pydantic.
SCHEMA_FILE = Path(__file__).with_name("instance.schema.json")

_WHERE = {
    "InputError": "alloc.io.errors",
    "dump_instance": "alloc.io.instance_out",
    "dump_plan": "alloc.io.plan_json",
    "json_schema": "alloc.io.schema",
    "load_instance": "alloc.io.instance",
    "load_plan": "alloc.io.plan_json",
    "parse_instance": "alloc.io.instance",
    "plan_to_dict": "alloc.io.plan_json",
}
__all__ = [
    "SCHEMA_FILE",
    "InputError",
    "dump_instance",
    "dump_plan",
    "json_schema",
    "load_instance",
    "load_plan",
    "parse_instance",
    "plan_to_dict",
]

if TYPE_CHECKING:
    from alloc.io.errors import InputError
    from alloc.io.instance import load_instance, parse_instance
    from alloc.io.instance_out import dump_instance
    from alloc.io.plan_json import dump_plan, load_plan, plan_to_dict
    from alloc.io.schema import json_schema

__getattr__, __dir__ = names_from(__name__, _WHERE)
