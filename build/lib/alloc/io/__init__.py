"""Files <-> domain values; all validation of user input lives here."""

from alloc.io.errors import InputError
from alloc.io.instance import load_instance, parse_instance
from alloc.io.instance_out import dump_instance
from alloc.io.plan_json import dump_plan, load_plan, plan_to_dict
from alloc.io.schema import json_schema

__all__ = [
    "InputError",
    "dump_instance",
    "dump_plan",
    "json_schema",
    "load_instance",
    "load_plan",
    "parse_instance",
    "plan_to_dict",
]
