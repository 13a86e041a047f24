"""``OS-DCF:diskConfig``: whether the host grows the root partition to the disk (``AUTO``) or
leaves the image's partitions as they are (``MANUAL``), kept as ``Instance.auto_disk_config``.

As Nova: a create or rebuild that names no value takes the image's ``auto_disk_config`` property
(true-ish → AUTO, anything else or absent → MANUAL); an image whose property is ``disabled``
refuses AUTO with 400. A resize or an update that names a value writes it; one that does not keeps
the server's.
"""
from __future__ import annotations

from typing import Any

from cloudcore.core.exceptions import Invalid

_TRUE = frozenset({"1", "t", "true", "on", "y", "yes"})


class AutoDiskConfigDisabledByImage(Invalid):
    message = "Requested image %(image)s has automatic disk resize disabled."


def disk_config_from_api(value: str | None) -> bool | None:
    """The API's ``AUTO``/``MANUAL`` (the schemas allow no other) as the column's value; None when absent."""
    return None if value is None else value == "AUTO"


def disk_config_to_api(auto_disk_config: Any) -> str:
    return "AUTO" if auto_disk_config else "MANUAL"


def auto_disk_config_for_image(image: dict[str, Any] | None, requested: bool | None) -> bool:
    """The server's value when booted or rebuilt from ``image`` with ``requested`` (None: not named).

    Raises ``AutoDiskConfigDisabledByImage`` (400) when AUTO is asked of an image that disables it."""
    raw = ((image or {}).get("properties") or {}).get("auto_disk_config")
    text = str(raw).strip().lower() if raw is not None else ""
    if requested and text == "disabled":
        raise AutoDiskConfigDisabledByImage(image=(image or {}).get("id"))
    return requested if requested is not None else text in _TRUE
