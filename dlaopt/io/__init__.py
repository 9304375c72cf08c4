"""Instance and solution files: loading with located errors, saving, and the instance JSON Schema."""

from dlaopt.io.instance import (
    Instance,
    instance_from_dict,
    load_instance,
    make_instance_document,
    save_document,
)
from dlaopt.io.schema import SHIPPED_SCHEMA_PATH, instance_schema, write_schema
from dlaopt.io.solution import load_solution_document, save_solution_document, validate_solution_document

__all__ = [
    "SHIPPED_SCHEMA_PATH",
    "Instance",
    "instance_from_dict",
    "instance_schema",
    "load_instance",
    "load_solution_document",
    "make_instance_document",
    "save_document",
    "save_solution_document",
    "validate_solution_document",
    "write_schema",
]
