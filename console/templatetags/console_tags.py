from typing import Any

from django import template
from django.http import QueryDict
from django.utils.html import format_html

register = template.Library()


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """``{{ server|get_item:"OS-EXT-SRV-ATTR:host" }}`` for keys templates cannot spell."""
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None


def _with(query: QueryDict, **changes: Any) -> str:
    params = query.copy()
    for key, value in changes.items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = str(value)
    return params.urlencode()


@register.simple_tag(takes_context=True)
def query_with(context: Any, **changes: Any) -> str:
    """The current query string with ``changes`` applied (``None`` drops a key): ``?{% query_with
    marker=last %}`` keeps the filters and the sort while paging."""
    return _with(context["request"].GET, **changes)


@register.simple_tag(takes_context=True)
def sort_th(context: Any, key: str, label: str) -> str:
    """A sortable column heading: a link that sorts by ``key`` (server-side), ascending first and
    the other way on a second click; paging starts again at the first page."""
    query = context["request"].GET
    current, direction = query.get("sort", ""), query.get("dir", "asc")
    flip = "desc" if current == key and direction == "asc" else "asc"
    mark = ("▲" if direction == "asc" else "▼") if current == key else ""
    aria = ("ascending" if direction == "asc" else "descending") if current == key else "none"
    return format_html('<th aria-sort="{}"><a href="?{}">{} <span class="sort-mark">{}</span></a></th>', aria,
                       _with(query, sort=key, dir=flip, marker=None, page=None), label, mark)


@register.filter
def split_words(text: str) -> list[str]:
    """``{% for st in "ACTIVE BUILD"|split_words %}``: a literal list in a template."""
    return text.split()


@register.filter
def api_time(stamp: Any) -> str:
    """An API timestamp (``2026-11-24T07:03:38.123456`` or with ``Z``) as ``2026-11-24 07:03:38``."""
    if not stamp:
        return ""
    return str(stamp).replace("T", " ").replace("Z", "")[:19]
