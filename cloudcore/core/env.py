"""Typed readers for ``CLOUDCORE_*`` environment settings.

Every option named in DESIGN.md or an issue is read as ``CLOUDCORE_<NAME>``; a bad value stops
start-up with a message naming the variable (settings are validated, never guessed).
"""
from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

PREFIX = "CLOUDCORE_"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(PREFIX + name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(PREFIX + name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{PREFIX}{name}={raw!r} is not a boolean (use true/false)")


def env_int(name: str, default: int, *, minimum: int | None = None) -> int:
    raw = os.environ.get(PREFIX + name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{PREFIX}{name}={raw!r} is not an integer") from exc
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{PREFIX}{name}={value} must be >= {minimum}")
    return value


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(PREFIX + name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{PREFIX}{name}={raw!r} is not a number") from exc
