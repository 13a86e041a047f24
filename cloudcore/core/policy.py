"""Policy: one registry of named rules, one entry point (STYLE rule 14).

Every rule has Nova's (or Glance's, Cinder's, ...) name, a default check, a description and the
operations it guards. Apps register theirs in ``<app>/policies.py``. Services call
``authorize(actor, rule, target)`` (raises ``PolicyNotAuthorized``, 403 "Policy doesn't allow
<rule> to be performed.") or ``can(...)`` (a bool, for presentation choices).

Defaults are Nova's secure-RBAC personas. ``target`` is the resource's owner
(``{"project_id": ..., "user_id": ...}``); without one the actor's own project is assumed.

Operator overrides go through django-guardian: a rule's permission (a ``Permission`` whose
codename is the rule name, on the ``identity.Project`` content type) can be granted
- globally to a user or group (Django model permission): the rule passes everywhere for them;
- for one project to a user or group (guardian object permission on the Project): the rule
  passes for that project's resources;
- for one project alone (to the project's members group, ``project-members:<id>``, which holds
  every user with a role on the project): the rule passes for every member, for that project's
  resources.
A grant only ever widens a rule; it never takes a right away.

Taking a right away is an override of the rule's check in the policy file (``POLICY_FILE``,
``<var>/policy.yaml`` by default; OpenStack's ``policy.yaml``): ``rule: check`` with a check of
``CHECKS`` (or oslo.policy's ``"!"`` for nobody and ``""`` / ``"@"`` for anyone), written by
``manage.py policy override``. The override replaces the rule's default, so it narrows
(``os_compute_api:servers:create: admin``) as well as widens; grants still widen on top of it, for
the users, groups and projects they name. Every process re-reads the file when it changes (one
``stat`` per request, no database query); an unknown check in the file denies (fail closed).

The kernel knows the Project model only by its content type's natural key
(``GRANT_CONTENT_TYPE``) and the user model through ``AUTH_USER_MODEL``: it sits below
``identity`` and imports none of it; keeping the members group in step with role assignments is
``identity.services.roles``' job.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudcore.core import scope
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import PolicyNotAuthorized

if TYPE_CHECKING:
    from django.contrib.auth.models import Group, Permission
    from django.contrib.contenttypes.models import ContentType

log = logging.getLogger(__name__)

Target = dict[str, Any]
Check = Callable[[RequestContext, Target], bool]


def _same_project(actor: RequestContext, target: Target) -> bool:
    return actor.project_id is not None and target.get("project_id") == actor.project_id


def _has(actor: RequestContext, role: str) -> bool:
    return role in actor.roles


def _admin(actor: RequestContext, target: Target) -> bool:
    return actor.is_admin


def _project_reader(actor: RequestContext, target: Target) -> bool:
    return _same_project(actor, target) and actor.is_project_reader


def _project_member(actor: RequestContext, target: Target) -> bool:
    return _same_project(actor, target) and actor.is_project_member


def _project_manager(actor: RequestContext, target: Target) -> bool:
    return _same_project(actor, target) and actor.is_project_manager


def _project_admin(actor: RequestContext, target: Target) -> bool:
    return _same_project(actor, target) and actor.is_project_admin


def _owner_user(actor: RequestContext, target: Target) -> bool:
    return actor.user_id is not None and target.get("user_id") == actor.user_id


#: The default checks a rule may name (Nova's personas). ``nobody`` denies everyone, cloud admins
#: included (only a grant opens it); ``any`` allows every authenticated actor.
CHECKS: dict[str, Check] = {
    "any": lambda actor, target: True,
    "nobody": lambda actor, target: False,
    "admin": _admin,
    "service_or_admin": lambda a, t: _admin(a, t) or _has(a, "service") or a.is_service,
    "project_reader": _project_reader,
    "project_member": _project_member,
    "project_manager": _project_manager,
    "project_admin": _project_admin,
    "project_reader_or_admin": lambda a, t: _admin(a, t) or _project_reader(a, t),
    "project_member_or_admin": lambda a, t: _admin(a, t) or _project_member(a, t),
    # Nova's project manager persona (its 2025.2 defaults): moves a project's servers, never naming a host
    "project_manager_or_admin": lambda a, t: _admin(a, t) or _project_manager(a, t),
    "project_admin_or_admin": lambda a, t: _admin(a, t) or _project_admin(a, t),
    # Glance's reading of a metadata definitions namespace: its own project's readers, or any
    # project's when the target (``visibility``) is public
    "project_reader_or_admin_or_public": lambda a, t: _admin(a, t) or _project_reader(a, t)
    or (a.is_project_reader and t.get("visibility") == "public"),
    "admin_or_owner_user": lambda a, t: _admin(a, t) or _owner_user(a, t),
    "owner_user": _owner_user,
}


#: oslo.policy's spellings of "nobody" and "anyone", accepted in the policy file.
CHECK_ALIASES = {"!": "nobody", "": "any", "@": "any"}


@dataclass(frozen=True)
class Rule:
    name: str
    check: str
    description: str
    operations: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def default_allows(self, actor: RequestContext, target: Target) -> bool:
        return CHECKS[self.check](actor, target)

    @property
    def effective_check(self) -> str:
        """The check in force: the policy file's override of this rule, else its default."""
        return overrides().get(self.name, self.check)

    def check_allows(self, actor: RequestContext, target: Target) -> bool:
        """Does the check in force (override or default) allow ``actor`` on ``target``?"""
        return CHECKS[self.effective_check](actor, target)


_REGISTRY: dict[str, Rule] = {}


class UnknownRule(LookupError):
    """A programming error: a rule was checked that nobody registered."""


def register(
    name: str, check: str, description: str, operations: Iterable[tuple[str, str]] = ()
) -> Rule:
    """Register (or re-register identically) a rule; ``check`` is a key of ``CHECKS``."""
    if check not in CHECKS:
        raise ValueError(f"unknown default check {check!r} for rule {name}")
    rule = Rule(name, check, description, tuple(operations))
    _REGISTRY[name] = rule
    return rule


_DISCOVERED = False
_DISCOVERING = False
#: held while the policies are imported: a gunicorn thread that checks a rule while another is
#: still importing must wait for every rule, not see a half-filled registry ("unknown rule", 500)
_DISCOVERY_LOCK = threading.RLock()


def autodiscover() -> None:
    """Import ``<app>.policies`` of every installed app once, so that every rule is registered
    before the first check whatever imported what (apps need no ``ready()`` hook for it). Thread
    safe: ``_DISCOVERED`` is set only once every module is imported, under ``_DISCOVERY_LOCK``
    (re-entrant: a policies module that checks a rule while being imported does not deadlock)."""
    global _DISCOVERED, _DISCOVERING
    if _DISCOVERED:
        return
    import importlib

    from django.apps import apps

    if not apps.ready:
        return
    with _DISCOVERY_LOCK:
        if _DISCOVERED or _DISCOVERING:  # the second: this thread, from inside a policies import
            return
        _DISCOVERING = True
        try:
            for config in apps.get_app_configs():
                try:
                    importlib.import_module(f"{config.name}.policies")
                except ModuleNotFoundError as exc:
                    if exc.name != f"{config.name}.policies":
                        raise
            _DISCOVERED = True
        finally:
            _DISCOVERING = False


def rules() -> list[Rule]:
    autodiscover()
    return sorted(_REGISTRY.values(), key=lambda r: r.name)


def get_rule(name: str) -> Rule:
    try:
        return _REGISTRY[name]
    except KeyError:
        autodiscover()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownRule(name) from None


def _target(actor: RequestContext, target: Target | None) -> Target:
    if target is None:
        return {"project_id": actor.project_id, "user_id": actor.user_id}
    return target


def can(actor: RequestContext, rule: str, target: Target | None = None) -> bool:
    """Does ``rule`` allow ``actor`` to act on ``target``? Its check (the policy file's override,
    else the default) first, then grants."""
    definition = get_rule(rule)
    resolved = _target(actor, target)
    if actor.is_service:
        return True
    if definition.check_allows(actor, resolved):
        return True
    return granted(actor, rule, resolved)


def authorize(actor: RequestContext, rule: str, target: Target | None = None) -> None:
    """Raise PolicyNotAuthorized (403) unless ``can``."""
    if not can(actor, rule, target):
        raise PolicyNotAuthorized(action=rule)


# --- overrides: the policy file -------------------------------------------------------------


def policy_file() -> Path:
    from django.conf import settings

    return Path(settings.POLICY_FILE)


#: (the file's identity: path, inode, mtime, size) and the overrides read from it.
_FILE_CACHE: tuple[tuple[Any, ...], dict[str, str]] = ((), {})


def _read_overrides(path: Path) -> dict[str, str]:
    import yaml

    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        log.error("policy file %s is not a mapping of rule: check; every rule it may name is denied", path)
        return dict.fromkeys((r.name for r in rules()), "nobody")
    out: dict[str, str] = {}
    for name, check in data.items():
        spelled = CHECK_ALIASES.get(str(check).strip(), str(check).strip()) if check is not None else "any"
        if spelled not in CHECKS:
            log.error("policy file %s: unknown check %r for %s; the rule is denied", path, check, name)
            spelled = "nobody"
        out[str(name)] = spelled
    return out


_OVERRIDES_KEY = "policy.overrides"


def overrides() -> dict[str, str]:
    """The policy file's ``{rule: check}`` overrides (empty without a file), re-read when the
    file changes: its ``stat`` is looked at once per outermost request (``cloudcore.core.scope``;
    per call outside one), not once per check, so the next request sees a change."""
    return scope.memoized(_OVERRIDES_KEY, _overrides_now)


def _overrides_now() -> dict[str, str]:
    global _FILE_CACHE
    path = policy_file()
    try:
        st = path.stat()
    except FileNotFoundError:
        return {}
    key = (str(path), st.st_ino, st.st_mtime_ns, st.st_size)
    if _FILE_CACHE[0] != key:
        _FILE_CACHE = (key, _read_overrides(path))
    return _FILE_CACHE[1]


def override_set(rule: str, check: str | None) -> None:
    """Override ``rule``'s check in the policy file (``None``: back to its default). The file is
    replaced atomically, so a process reading it never sees half of it."""
    import yaml

    get_rule(rule)
    spelled = CHECK_ALIASES.get(check, check) if check is not None else None
    if spelled is not None and spelled not in CHECKS:
        raise ValueError(f"unknown check {check!r}; one of {', '.join(sorted(CHECKS))}")
    path = policy_file()
    current = dict(overrides())
    if spelled is None:
        current.pop(rule, None)
    else:
        current[rule] = spelled
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("# cloudcore policy overrides (rule: check), written by manage.py policy override\n"
                   + (yaml.safe_dump(dict(sorted(current.items())), default_flow_style=False) if current else ""))
    os.replace(tmp, path)
    scope.forget(_OVERRIDES_KEY)


# --- grants through django-guardian ---------------------------------------------------------


#: (app label, model) of the model whose content type carries every rule's Permission.
GRANT_CONTENT_TYPE = ("identity", "project")


def members_group_name(project_id: str) -> str:
    return f"project-members:{project_id}"


def _grant_content_type() -> ContentType:
    from django.contrib.contenttypes.models import ContentType

    return ContentType.objects.get_by_natural_key(*GRANT_CONTENT_TYPE)


def permission_for(rule: str, *, create: bool = False) -> Permission | None:
    """The Permission standing for ``rule`` (created on demand when ``create``)."""
    from django.contrib.auth.models import Permission

    get_rule(rule)
    content_type = _grant_content_type()
    if create:
        perm, _ = Permission.objects.get_or_create(
            codename=rule, content_type=content_type, defaults={"name": f"Policy rule {rule}"[:255]}
        )
        return perm
    return Permission.objects.filter(codename=rule, content_type=content_type).first()


#: Bumped by every grant/revoke of this process (and every identity change it sees), so that
#: grants cached on an actor or for a stamp are recomputed after a change.
_GENERATION = 0

#: The most grants remembered per process (least recently used dropped first).
MAX_REMEMBERED_GRANTS = 4096


@dataclass(frozen=True)
class Grants:
    """Every rule granted to one user: globally, and per project id."""

    everywhere: frozenset[str] = frozenset()
    per_project: dict[str, frozenset[str]] = field(default_factory=dict)

    def allows(self, rule: str, project_id: Any) -> bool:
        if rule in self.everywhere:
            return True
        return bool(project_id) and rule in self.per_project.get(str(project_id), frozenset())


def _load_grants(user_id: str) -> Grants:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.db.models import Q
    from guardian.models import GroupObjectPermission, UserObjectPermission

    user = get_user_model().objects.filter(id=user_id, enabled=True).first()
    if user is None:
        return Grants()
    group_ids = list(user.groups.values_list("id", flat=True))
    content_type = _grant_content_type()
    everywhere = set(
        Permission.objects.filter(content_type=content_type)
        .filter(Q(user=user) | Q(group__id__in=group_ids)).values_list("codename", flat=True)
    )
    per_project: dict[str, set[str]] = {}
    rows = list(UserObjectPermission.objects.filter(user=user, content_type=content_type)
                .values_list("object_pk", "permission__codename"))
    if group_ids:
        rows += list(GroupObjectPermission.objects.filter(group_id__in=group_ids, content_type=content_type)
                     .values_list("object_pk", "permission__codename"))
    for object_pk, codename in rows:
        per_project.setdefault(str(object_pk), set()).add(codename)
    return Grants(frozenset(everywhere), {pk: frozenset(names) for pk, names in per_project.items()})


class _RememberedGrants:
    """Grants loaded by this process, by (user, the actor's identity change stamps, generation).

    The stamps come with the actor's token (``RequestContext.grants_stamp``, read in the token's
    statement) and every write that can change a user's grants bumps them in its own transaction
    (identity's signal receivers: guardian's object permissions, a user's or group's model
    permissions, group membership, a permission changed or deleted). So a request whose stamps
    are those of a remembered entry may use it, whichever process changed what: the next request
    after a grant or revoke carries new stamps and loads again. An entry also ends after
    ``settings.TOKEN_CACHE_SECONDS`` (a write made without signals, e.g. raw SQL, is seen then)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[tuple[Any, ...], tuple[float, Grants]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> Grants | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= time.monotonic():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: tuple[Any, ...], grants: Grants) -> None:
        from django.conf import settings

        seconds = settings.TOKEN_CACHE_SECONDS
        if seconds <= 0:
            return
        with self._lock:
            self._entries[key] = (time.monotonic() + seconds, grants)
            self._entries.move_to_end(key)
            while len(self._entries) > MAX_REMEMBERED_GRANTS:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


_REMEMBERED = _RememberedGrants()


def grants_for(actor: RequestContext) -> Grants:
    """The grants of the actor's user: those this process loaded at the actor's identity change
    stamps (no query, ``_RememberedGrants``), else loaded (4 queries) and kept on the actor for
    the rest of its request, until a grant or revoke in this process changes them."""
    if not actor.user_id:
        return Grants()
    key = (_GENERATION, actor.user_id)
    cached = getattr(actor, "_policy_grants", None)
    if cached is not None and cached[0] == key:
        found: Grants = cached[1]
        return found
    shared_key = (actor.user_id, actor.grants_stamp, _GENERATION) if actor.grants_stamp is not None else None
    grants = _REMEMBERED.get(shared_key) if shared_key is not None else None
    if grants is None:
        grants = _load_grants(actor.user_id)
        if shared_key is not None:
            _REMEMBERED.put(shared_key, grants)
    try:
        object.__setattr__(actor, "_policy_grants", (key, grants))
    except (AttributeError, TypeError):  # an actor type that takes no attributes: no cache
        pass
    return grants


def granted(actor: RequestContext, rule: str, target: Target) -> bool:
    """Is there a guardian grant of ``rule`` for this actor (globally or on the target project)?"""
    return grants_for(actor).allows(rule, target.get("project_id"))


def changed() -> None:
    """Forget the grants cached on actors of this process and remembered by it (after any grant,
    revoke or change of membership)."""
    global _GENERATION
    _GENERATION += 1
    _REMEMBERED.clear()


def project_members_group(project_id: str) -> Group:
    from django.contrib.auth.models import Group

    return Group.objects.get_or_create(name=members_group_name(project_id))[0]


def grant(rule: str, *, user: Any = None, group: Any = None, project: Any = None) -> None:
    """Grant ``rule``: to a user or group, globally or for ``project``; with only ``project``,
    to every member of that project (for that project's resources)."""
    from guardian.shortcuts import assign_perm

    perm = permission_for(rule, create=True)
    assert perm is not None  # noqa: S101 - created above
    if user is None and group is None:
        if project is None:
            raise ValueError("grant needs a user, a group or a project")
        group = project_members_group(project.id)
    holder = user if user is not None else group
    if project is None:
        assign_perm(perm, holder)
    else:
        assign_perm(perm, holder, project)
    changed()


def revoke(rule: str, *, user: Any = None, group: Any = None, project: Any = None) -> None:
    from guardian.shortcuts import remove_perm

    perm = permission_for(rule)
    if perm is None:
        return
    if user is None and group is None:
        if project is None:
            raise ValueError("revoke needs a user, a group or a project")
        group = project_members_group(project.id)
    holder = user if user is not None else group
    if project is None:
        remove_perm(perm, holder)
    else:
        remove_perm(perm, holder, project)
    changed()


def grants_of(rule: str) -> list[dict[str, Any]]:
    """Who holds a grant of ``rule``: ``[{"user"|"group": name, "project": id or None}]``."""
    from guardian.models import GroupObjectPermission, UserObjectPermission

    perm = permission_for(rule)
    if perm is None:
        return []
    out: list[dict[str, Any]] = []
    for u in perm.user_set.all():
        out.append({"user": u.name, "project": None})
    for g in perm.group_set.all():
        out.append({"group": g.name, "project": None})
    for uop in UserObjectPermission.objects.filter(permission=perm).select_related("user"):
        out.append({"user": uop.user.name, "project": uop.object_pk})
    for gop in GroupObjectPermission.objects.filter(permission=perm).select_related("group"):
        out.append({"group": gop.group.name, "project": gop.object_pk})
    return out
