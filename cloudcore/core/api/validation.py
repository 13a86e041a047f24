"""Strict request-body validation with JSON schemas, per microversion (STYLE rule 15).

``validate(body, schema)`` raises ``ValidationFailed`` (400) with a Nova-style message:
``Invalid input for field/attribute <path>. Value: <value>. <reason>``.
``VersionedSchema`` states, in one place, which schema a request body must match at each
microversion.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import jsonschema
from jsonschema import Draft7Validator

from cloudcore.core.exceptions import Invalid

from .microversion import Version, parse


class ValidationFailed(Invalid):
    message = "Invalid input for request."


def _path(error: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in error.absolute_path)


def _message(error: jsonschema.ValidationError) -> str:
    path = _path(error)
    if error.validator == "additionalProperties" or not path:
        return str(error.message)
    return f"Invalid input for field/attribute {path}. Value: {error.instance}. {error.message}"


def _best(errors: Iterable[jsonschema.ValidationError]) -> jsonschema.ValidationError | None:
    best: jsonschema.ValidationError | None = jsonschema.exceptions.best_match(errors)
    return best


#: the validators of the schemas validated lately, by the schema's identity (the schema kept with its
#: validator, so that its id is not another's meanwhile); the oldest dropped beyond ``_VALIDATORS_KEPT``
_validators: OrderedDict[int, tuple[dict[str, Any], Draft7Validator]] = OrderedDict()
_VALIDATORS_KEPT = 512
_validators_lock = threading.Lock()


def _validator(schema: dict[str, Any]) -> Draft7Validator:
    """The validator of ``schema``, made once while it is kept: making one (its resolver, the
    schema's keywords looked up) cost a sixth of validating a ``POST /servers`` body. A
    validator does not change once made, and is used by several threads at once. A schema is
    not changed once validated against (the module-level schemas, the cached versioned ones)."""
    found = _validators.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    with _validators_lock:
        _validators[id(schema)] = (schema, validator)
        while len(_validators) > _VALIDATORS_KEPT:
            _validators.popitem(last=False)
    return validator


def validate(body: Any, schema: dict[str, Any]) -> Any:
    """Return ``body`` if it matches ``schema``; ValidationFailed (400) otherwise."""
    error = _best(_validator(schema).iter_errors(body))
    if error is not None:
        raise ValidationFailed(_message(error))
    return body


@dataclass(frozen=True)
class SchemaVersion:
    minimum: Version
    maximum: Version
    schema: dict[str, Any]


class VersionedSchema:
    """``VersionedSchema(("2.1", "2.90", schema_a), ("2.91", None, schema_b))``."""

    def __init__(self, *entries: tuple[str, str | None, dict[str, Any]]) -> None:
        self.entries = [
            SchemaVersion(parse(lo), parse(hi) if hi else (99, 99), schema) for lo, hi, schema in entries
        ]

    def schema_for(self, version: Version) -> dict[str, Any] | None:
        for entry in self.entries:
            if entry.minimum <= version <= entry.maximum:
                return entry.schema
        return None

    def validate(self, body: Any, version: Version) -> Any:
        schema = self.schema_for(version)
        if schema is None:
            raise ValidationFailed("This request is not supported at this microversion.")
        return validate(body, schema)


# Reusable fragments ---------------------------------------------------------------------------
NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\s)[\s\S]*(?<!\s)$"}
UUID = {"type": "string", "format": "uuid"}
BOOLEAN = {"type": ["boolean", "string"], "enum": [True, False, "True", "False", "true", "false", "1", "0"]}
NON_NEGATIVE_INT = {"type": ["integer", "string"], "pattern": r"^[0-9]*$", "minimum": 0}
POSITIVE_INT = {"type": ["integer", "string"], "pattern": r"^[0-9]*$", "minimum": 1}
METADATA = {
    "type": "object",
    "patternProperties": {r"^[a-zA-Z0-9-_:. ]{1,255}$": {"type": "string", "maxLength": 255}},
    "additionalProperties": False,
}


#: the words a boolean parameter may be given as (any case), as the services parse them
TRUE_WORDS = frozenset({"true", "1", "yes", "on"})
FALSE_WORDS = frozenset({"false", "0", "no", "off"})


def as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).lower() in TRUE_WORDS


def word_bool(value: Any, *, invalid: str) -> bool:
    """A boolean given as itself or as one of the words (``true``/``false``, ``1``/``0``,
    ``yes``/``no``, ``on``/``off``, any case); ``Invalid(invalid)`` (400) for any other value."""
    if isinstance(value, bool):
        return value
    text = str(value).lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise Invalid(invalid)


def query_int(params: Any, name: str, *, invalid: str, negative: str | None = None,
              default: int | None = None, digits_only: bool = False) -> int | None:
    """A non-negative integer query parameter, ``default`` when absent. ``invalid`` (and
    ``negative`` for a negative integer, when the service words it differently) is the 400's
    message; ``%(name)s`` and ``%(value)s`` in it are filled in. ``digits_only`` follows a
    ``^[0-9]*$`` schema pattern (no sign, no spaces)."""
    raw = params.get(name)
    if raw is None:
        return default
    if digits_only and not str(raw).isdigit():
        raise Invalid(invalid % {"name": name, "value": raw})
    try:
        value = int(raw)
    except (TypeError, ValueError):
        raise Invalid(invalid % {"name": name, "value": raw}) from None
    if value < 0:
        raise Invalid((negative or invalid) % {"name": name, "value": raw})
    return value


def reject_unknown_params(params: Iterable[str], allowed: Iterable[str]) -> None:
    """Nova's strict query-parameter schemas (2.75+): any parameter not in ``allowed`` is a 400."""
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        raise ValidationFailed(
            f"Additional properties are not allowed ({names} {'was' if len(unknown) == 1 else 'were'} unexpected)"
        )
