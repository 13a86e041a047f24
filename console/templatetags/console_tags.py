from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """``{{ server|get_item:"OS-EXT-SRV-ATTR:host" }}`` for keys templates cannot spell."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None
