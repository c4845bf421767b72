"""Validating a call's arguments against its tool's JSON Schema, and their digest."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Iterable, Mapping

from jsonschema import Draft202012Validator

from arkme.kernel.errors import InvalidArguments


def integral_numbers(value: Any) -> Any:
    """``value`` with every integral number as an ``int``.

    JSON has one number type: ``5.0`` is the integer 5, and JSON Schema's ``integer`` accepts it.
    Tools index and slice with their integer arguments, so they get ints, and a call means the
    same whichever way its client wrote the number. ``value`` itself is returned when nothing
    changes, so the common call copies nothing.
    """
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        items = {key: integral_numbers(item) for key, item in value.items()}
        return value if all(items[key] is value[key] for key in value) else items
    if isinstance(value, list):
        changed = [integral_numbers(item) for item in value]
        return value if all(new is old for new, old in zip(changed, value, strict=True)) else changed
    return value


def arguments_digest(tool_name: str, arguments: Any) -> str:
    canonical = json.dumps([tool_name, integral_numbers(arguments)], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _field(path: Iterable[str | int]) -> str:
    name = ""
    for part in path:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name


def validate_arguments(validator: Draft202012Validator, arguments: Any) -> dict[str, Any]:
    """The arguments as the tool takes them (integral numbers as ints), or ``400
    invalid_arguments`` naming every offending argument (``workspace_paths[3]``)."""
    if not isinstance(arguments, dict):
        raise InvalidArguments("arguments must be a JSON object.", fields=["arguments"])
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(map(str, e.absolute_path)))
    if not errors:
        return integral_numbers(arguments)  # type: ignore[no-any-return]
    fields: list[str] = []
    schema_properties = validator.schema.get("properties", {}) if isinstance(validator.schema, Mapping) else {}
    for error in errors:
        base = _field(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = error.schema.get("properties", schema_properties)
            names = [key for key in error.instance if key not in allowed]
            fields.extend(f"{base}.{key}" if base else key for key in names)
        elif error.validator == "required" and isinstance(error.instance, dict):
            names = [key for key in error.validator_value if key not in error.instance]
            fields.extend(f"{base}.{key}" if base else key for key in names)
        else:
            fields.append(base or "arguments")
    fields = list(dict.fromkeys(fields))
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    message = (
        "Unknown arguments: " + ", ".join(f for f in fields if f) + "."
        if unknown and len(unknown) == len(errors)
        else "Invalid arguments: " + ", ".join(fields) + "."
    )
    raise InvalidArguments(message, fields=fields)
