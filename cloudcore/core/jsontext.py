"""A JSON object encoded once for every writer of it.

A notification the conductor keeps (``cloudcore.core.notifications.keep``) is encoded twice with the
same ``json.dumps`` and its default options: for its row's ``JSONField`` (Django's encoding, no
encoder of the field's own) and for its message on the broker (kombu's ``json`` serializer, whose
encoder only differs for values JSON has no type for). Each encoding was about a sixth of the
conductor's work per notification. ``EncodedJSON`` is the object (a ``dict``, equal to it) with
that text, made once: ``cloudcore.core.scope``'s plain INSERT writes the text as the column's value,
and the publish sends it as the message body, the same bytes as before. Anything else that reads it
sees the dict (the ORM's ``save`` encodes it again, to the same text).
"""
from __future__ import annotations

import json
from typing import Any


class EncodedJSON(dict[str, Any]):
    """``value`` (a dict of JSON types only: what ``json.loads`` gives) and ``text``, its
    ``json.dumps``. Not to be changed once made (the text would no longer be its encoding)."""

    __slots__ = ("text",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def encoded(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` with its text (``EncodedJSON``), or ``value`` itself when ``json.dumps`` refuses
    it (a value JSON has no type for: each writer then encodes it as it did, or fails as it did)."""
    try:
        return EncodedJSON(value, json.dumps(value))
    except (TypeError, ValueError):
        return value


class TextEncoder(json.JSONEncoder):
    """The encoder a backend's ``adapt_json_value`` is given for an ``EncodedJSON``: its text."""

    def encode(self, o: Any) -> str:
        if type(o) is EncodedJSON:
            return o.text
        return super().encode(o)
