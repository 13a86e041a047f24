"""Request-body validation (``cloudcore.core.api.validation.validate``): a schema's validator is made
once while the schema is kept, and gives the answers a new one gives; a schema of the same content
but another object gets its own; the servers API's versioned schemas are one object per version."""
from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft7Validator

from cloudcore.core.api import validation
from cloudcore.core.api.validation import ValidationFailed, validate
from servers.api.schemas import create_schema


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"name": validation.NAME, "ip": {"type": "string", "format": "ipv4"}},
            "required": ["name"], "additionalProperties": False}


def test_a_schemas_validator_is_made_once_and_answers_as_a_new_one(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[Any] = []

    class Counting:  # the validators validate makes, counted
        FORMAT_CHECKER = Draft7Validator.FORMAT_CHECKER

        def __new__(cls, schema: dict[str, Any], **kwargs: Any) -> Any:
            made.append(schema)
            return Draft7Validator(schema, **kwargs)

    monkeypatch.setattr(validation, "Draft7Validator", Counting)
    schema, same_content = _schema(), _schema()
    # when bodies are validated against one schema, and against another of the same content
    assert validate({"name": "vm"}, schema) == {"name": "vm"}
    for body, message in [({"name": " vm"}, "Invalid input for field/attribute name. Value:  vm."),
                          ({"name": "vm", "ip": "300.1.1.1"}, "Invalid input for field/attribute ip."),
                          ({}, "'name' is a required property"),
                          ({"name": "vm", "x": 1}, "Additional properties are not allowed")]:
        with pytest.raises(ValidationFailed) as raised:
            validate(body, schema)
        assert str(raised.value).startswith(message)
    validate({"name": "vm"}, same_content)
    # then each schema's validator was made once, and the format checks still apply
    assert made == [schema, same_content] and made[0] is schema and made[1] is same_content


def test_the_oldest_validators_go_beyond_those_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation, "_VALIDATORS_KEPT", 3)
    monkeypatch.setattr(validation, "_validators", type(validation._validators)())
    schemas = [_schema() for _ in range(5)]
    for schema in schemas:
        validate({"name": "vm"}, schema)
    assert [kept for kept, _ in validation._validators.values()] == schemas[2:]


def test_the_create_schema_of_a_version_is_one_object() -> None:
    assert create_schema((2, 90)) is create_schema((2, 90)) and create_schema((2, 90)) is not create_schema((2, 89))
