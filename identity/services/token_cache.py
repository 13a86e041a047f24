"""The roles of validated tokens, remembered per API process so that a request reads the token
row alone (one statement, its user and project joined: revocation, expiry and a disabled user or
project are seen at once) instead of the role table and the two grant tables too.

An entry is keyed by the token's hash (a token's user, project and credential never change) and
holds its roles; it is used while both hold:

- it is younger than ``settings.TOKEN_CACHE_SECONDS``;
- ``IdentityChangeStamp.seq``, read in the same statement as the token, is still the value read
  when the entry was filled. Every identity change that can narrow a token's roles (a role
  assigned or removed, a group's members, a user, project, role or credential saved or deleted,
  a revocation) bumps it in the same transaction (``identity_changed``, connected to those
  models' signals so that Django admin's and guardian's writes count too), so the next request
  of any process sees it.

Within one outermost request (``cloudcore.core.scope``: the in-process calls and eager tasks
``POST /servers`` makes) the token row is read once. At most ``MAX_ENTRIES`` tokens are
remembered (least recently used dropped first).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Subquery

from cloudcore.core import scope

from ..models import IdentityChangeStamp, Token, token_digest

MAX_ENTRIES = 4096
_TOKENS_KEY = "identity.tokens"

_entries: OrderedDict[str, tuple[int, float, list[str]]] = OrderedDict()  # digest: (stamp, fresh until, roles)
_lock = threading.Lock()


def token_read(value: str) -> Token | None:
    """The stored token of the string ``value`` with its user, project and credential, and the
    change stamp as ``token.change_stamp``, in one statement (once per outermost request)."""
    digest = token_digest(value)

    def read() -> Token | None:
        stamp = IdentityChangeStamp.objects.filter(id=1).values("seq")[:1]
        return Token.objects.select_related("user", "project", "application_credential") \
            .annotate(change_stamp=Subquery(stamp)).filter(id_hash=digest).first()

    tokens: dict[str, Token | None] = scope.memoized(_TOKENS_KEY, dict)
    if digest not in tokens:
        tokens[digest] = read()
    token = tokens[digest]
    if token is not None:
        token.value = value
    return token


def identity_changed() -> None:
    """Every process's remembered roles are stale: bump the stamp (inside the caller's
    transaction) and forget this process's entries and this request's token reads."""
    if not IdentityChangeStamp.objects.filter(id=1).update(seq=F("seq") + 1):
        IdentityChangeStamp.objects.get_or_create(id=1, defaults={"seq": 1})
    clear()
    scope.forget(_TOKENS_KEY)


def clear() -> None:
    with _lock:
        _entries.clear()


def roles_of(token: Token) -> list[str] | None:
    """The remembered roles of a token read by ``token_read``, or None."""
    digest, stamp = token.id_hash, getattr(token, "change_stamp", None) or 0
    with _lock:
        entry = _entries.get(digest)
        if entry is None:
            return None
        if entry[0] != stamp or entry[1] <= time.monotonic():
            del _entries[digest]
            return None
        _entries.move_to_end(digest)
        return list(entry[2])


def remember(token: Token, roles: list[str]) -> None:
    seconds = settings.TOKEN_CACHE_SECONDS
    if seconds <= 0:
        return
    stamp = getattr(token, "change_stamp", None) or 0
    with _lock:
        _entries[token.id_hash] = (stamp, time.monotonic() + seconds, list(roles))
        _entries.move_to_end(token.id_hash)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


#: (app label, model name) whose writes may change a token's roles; a new or deleted Token does not.
WATCHED = {
    ("identity", "user"), ("identity", "project"), ("identity", "role"), ("identity", "group"),
    ("identity", "applicationcredential"), ("identity", "token"),
    ("guardian", "userobjectpermission"), ("guardian", "groupobjectpermission"),
    ("auth", "group"), ("auth", "permission"),
}


def on_save(sender: type[models.Model], instance: Any, created: bool = False, **kwargs: Any) -> None:
    if not (created and sender is Token) and not kwargs.get("raw"):
        identity_changed()


def on_delete(sender: type[models.Model], **kwargs: Any) -> None:
    # not connected for Token: a deleted token was expired or revoked already (token_flush), or
    # went with its user, project or credential, whose own deletion counts
    identity_changed()


def on_m2m(sender: Any, action: str, **kwargs: Any) -> None:
    # a user's Django groups (Keystone groups, project members) or a credential's roles
    if action in ("post_add", "post_remove", "post_clear"):
        identity_changed()
