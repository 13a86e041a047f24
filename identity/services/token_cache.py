"""The roles of validated tokens, remembered per API process so that a request reads the token
row alone (one statement, its user and project joined: revocation, expiry and a disabled user or
project are seen at once) instead of the role table and the two grant tables too.

An entry is keyed by the token's hash (a token's user, project and credential never change) and
holds its roles; it is used while both hold:

- it is younger than ``settings.TOKEN_CACHE_SECONDS``;
- the ``IdentityChangeStamp`` counters, read in the same statement as the token (the global one
  and the token's user's), are still the values read when the entry was filled. Every change
  that can change a token's roles bumps one in the same transaction (``identity_changed``,
  connected to the models' signals so that Django admin's and guardian's writes count too): a
  grant to or from a user, or its groups, bumps that user's; a group's grants, a role or a
  permission changed or deleted bump the global one. So the next request of any process sees
  it, and a grant to one user does not make every other token's roles be read again.

Within one outermost request (``cloudcore.core.scope``: the in-process calls and eager tasks
``POST /servers`` makes) the token row is read once. At most ``MAX_ENTRIES`` tokens are
remembered (least recently used dropped first).

A validated token itself is remembered too (``validated_get``, ``validated_remember``): its user
and the fields of its RequestContext, used until the token expires or the entry is older than
``TOKEN_CACHE_SECONDS``, while the two change stamps, read by one plain statement (no ORM query
to build, no join), have not moved. So everything that can end a valid token bumps its user's
stamp (or the global one) in the transaction that ends it: ``token_revoke``, the revocation of a
user's tokens when the password changes or the user is disabled, and any save or delete of a user
(its own stamp), a project (global) or an application credential (its user's), by signals so that
Django admin's writes count. Under 20 clients booting servers the token row's ORM query was a
fifth of the web process's CPU per ``POST /servers`` (about 1.9 ms of 10 on this machine).
A token revoked by raw SQL that bumps no stamp is still seen once its entry is older than
``TOKEN_CACHE_SECONDS``.
"""
from __future__ import annotations

import datetime
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import BooleanField, F, OuterRef, QuerySet, Subquery, Value
from django.utils import timezone

from cloudcore.core import policy, scope, stamps
from cloudcore.core.prepared import prepared_rows

from ..models import IdentityChangeStamp, Token, User, token_digest

MAX_ENTRIES = 4096
_TOKENS_KEY = "identity.tokens"

GLOBAL = "*"

#: token hash: ((global stamp, user stamp), fresh until, roles)
_entries: OrderedDict[str, tuple[tuple[int, int], float, list[str]]] = OrderedDict()
_lock = threading.Lock()


@dataclass(frozen=True)
class Validated:
    """A validated token: its user (shared by the requests that present it: read, never changed),
    the RequestContext fields but the request id, and what the entry was validated under."""

    user: User
    fields: dict[str, Any]
    stamp: tuple[int, int]
    expires_at: datetime.datetime
    fresh_until: float


#: token hash: the validated token
_validated: OrderedDict[str, Validated] = OrderedDict()


def token_read(value: str) -> Token | None:
    """The stored token of the string ``value`` with its user, project and credential, and the
    change stamp as ``token.change_stamp``, in one statement (once per outermost request)."""
    digest = token_digest(value)

    def read() -> Token | None:
        stamps = IdentityChangeStamp.objects.values("seq")
        return Token.objects.select_related("user", "project", "application_credential").annotate(
            change_stamp=Subquery(stamps.filter(key=GLOBAL)[:1]),
            user_change_stamp=Subquery(stamps.filter(key=OuterRef("user_id"))[:1]),
        ).filter(id_hash=digest).first()

    tokens: dict[str, Token | None] = scope.memoized(_TOKENS_KEY, dict)
    if digest not in tokens:
        tokens[digest] = read()
    token = tokens[digest]
    if token is not None:
        token.value = value
    return token


def identity_changed(user_ids: Iterable[str] | None = None) -> None:
    """The remembered roles of ``user_ids``' tokens (of every token: None) are stale in every
    process: bump their stamps (inside the caller's transaction) and forget this process's
    entries and this request's token reads."""
    for key in (GLOBAL,) if user_ids is None else user_ids:
        _, created = IdentityChangeStamp.objects.get_or_create(key=key, defaults={"seq": 1})
        if not created:
            IdentityChangeStamp.objects.filter(key=key).update(seq=F("seq") + 1)
    if user_ids is None:
        clear()  # (a user's entries end by their stamp: the others stay)
    scope.forget(_TOKENS_KEY)
    policy.changed()  # this request's actor still carries the stamps it was read with


def clear() -> None:
    with _lock:
        _entries.clear()
        _validated.clear()


def _stamps(user_id: str) -> tuple[int, int]:
    """The (global, user) change stamps now, by one statement whose SQL is built once per process
    (``cloudcore.core.prepared``). The statement reads the stamps of the rows processes remember
    too (``cloudcore.core.stamps``), handed over for the rest of the request: its remembered reads
    (the flavor, image, quota limits and default group of a ``POST /servers``) need no statement
    of their own to be checked."""
    seqs: dict[str, int] = {}
    remembered: list[tuple[str, int]] = []
    for key, seq, of_identity in prepared_rows("identity.change_stamps", _stamps_query, (GLOBAL, user_id)):
        if of_identity:
            seqs[key] = seq
        else:
            remembered.append((key, seq))
    stamps.seen(remembered)
    return seqs.get(GLOBAL) or 0, seqs.get(user_id) or 0


def _stamps_query(global_key: str, user_key: str) -> QuerySet[IdentityChangeStamp, tuple[str, int, bool]]:
    identity = IdentityChangeStamp.objects.filter(key__in=[global_key, user_key]).values_list(
        "key", "seq", Value(True, output_field=BooleanField()))
    others = stamps.stamps_query().values_list("key", "value", Value(False, output_field=BooleanField()))
    return identity.union(others, all=True)


def validated_get(value: str) -> Validated | None:
    """The remembered validation of the token string ``value`` if it still holds (see the module
    docstring), else None (the caller validates it again)."""
    digest = token_digest(value)
    with _lock:
        entry = _validated.get(digest)
    if entry is None:
        return None
    if entry.fresh_until <= time.monotonic() or entry.expires_at <= timezone.now() \
            or _stamps(entry.user.id) != entry.stamp:
        with _lock:
            if _validated.get(digest) is entry:
                del _validated[digest]
        return None
    with _lock:
        if digest in _validated:
            _validated.move_to_end(digest)
    return entry


def validated_remember(token: Token, fields: dict[str, Any]) -> None:
    """Remember ``token`` (read by ``token_read`` and found valid) with its RequestContext ``fields``."""
    seconds = settings.TOKEN_CACHE_SECONDS
    if seconds <= 0:
        return
    entry = Validated(user=token.user, fields={**fields, "roles": list(fields["roles"])}, stamp=stamp_of(token),
                      expires_at=token.expires_at,
                      fresh_until=time.monotonic() + seconds)
    with _lock:
        _validated[token.id_hash] = entry
        _validated.move_to_end(token.id_hash)
        while len(_validated) > MAX_ENTRIES:
            _validated.popitem(last=False)


def stamp_of(token: Token) -> tuple[int, int]:
    """The (global, user) change stamps read with ``token`` by ``token_read``."""
    return getattr(token, "change_stamp", None) or 0, getattr(token, "user_change_stamp", None) or 0


def roles_of(token: Token) -> list[str] | None:
    """The remembered roles of a token read by ``token_read``, or None."""
    digest, stamp = token.id_hash, stamp_of(token)
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
    stamp = stamp_of(token)
    with _lock:
        _entries[token.id_hash] = (stamp, time.monotonic() + seconds, list(roles))
        _entries.move_to_end(token.id_hash)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


#: (app label, model name) of the rows a token's roles and its user's policy grants are made of. A
#: user's, project's, token's or credential's own fields need no stamp: they come with the token
#: row, read on every request.
WATCHED = {
    ("identity", "role"), ("identity", "group"), ("guardian", "userobjectpermission"),
    ("guardian", "groupobjectpermission"), ("auth", "group"), ("auth", "permission"),
}


def _users_of(instance: Any) -> list[str] | None:
    """Whose roles a write of ``instance`` can change: one user for a direct grant, everyone
    (None) otherwise."""
    user_id = getattr(instance, "user_id", None) if instance.__class__._meta.model_name == "userobjectpermission" \
        else None
    return [user_id] if user_id else None


def on_save(sender: type[models.Model], instance: Any, created: bool = False, **kwargs: Any) -> None:
    # a new role, group or permission grants nobody anything yet; a new grant does
    if kwargs.get("raw") or (created and sender._meta.model_name != "userobjectpermission"
                             and sender._meta.model_name != "groupobjectpermission"):
        return
    identity_changed(_users_of(instance))


def on_delete(sender: type[models.Model], instance: Any, **kwargs: Any) -> None:
    identity_changed(_users_of(instance))


def on_account_write(sender: type[models.Model], instance: Any, created: bool = False, **kwargs: Any) -> None:
    """A user, project or application credential saved or deleted: the validated tokens it can end
    (a user's, a credential's user's; a project's: everyone's). A new one ends none."""
    if kwargs.get("raw") or created:
        return
    if isinstance(instance, User):
        identity_changed([str(instance.pk)])
    elif getattr(instance, "user_id", None):
        identity_changed([str(instance.user_id)])
    else:
        identity_changed()


def on_m2m(sender: Any, instance: Any, action: str, reverse: bool, model: Any = None, pk_set: Any = None,
           **kwargs: Any) -> None:
    """A user's Django groups (Keystone groups, project members), a user's or a group's model
    permissions (global policy grants), a credential's roles."""
    if action not in ("post_add", "post_remove", "post_clear"):
        return
    if isinstance(instance, User):  # its groups or permissions
        identity_changed([str(instance.pk)])
    elif model is User and pk_set:  # users added to (removed from) a group, given (losing) a permission
        identity_changed([str(pk) for pk in pk_set])
    elif not reverse and getattr(instance, "user_id", None):  # a credential's roles: its user's
        identity_changed([str(instance.user_id)])
    else:  # a group's permissions, a role's credentials, a cleared relation: whoever held them
        identity_changed()
