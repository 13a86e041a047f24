"""The acting user of a request, task or command (Nova's RequestContext).

API authentication (``identity.auth``) builds one from a token and puts it in ``request.auth``;
services take it as ``actor``; Celery tasks rebuild it from ``to_dict()``.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field, fields
from typing import Any


def new_request_id() -> str:
    return f"req-{uuid.uuid4()}"


@dataclass
class RequestContext:
    user_id: str | None
    project_id: str | None
    roles: list[str] = field(default_factory=list)
    #: True for a cloud admin (``admin`` role on the admin project) or a system actor.
    is_admin: bool = False
    request_id: str = field(default_factory=new_request_id)
    user_name: str | None = None
    project_name: str | None = None
    #: True for internal actors (workers, the conductor, manage.py commands).
    is_service: bool = False
    #: The application credential the token was issued for, if any (Keystone's token
    #: ``application_credential``), and whether it is restricted (it may then not manage
    #: application credentials).
    application_credential_id: str | None = None
    application_credential_restricted: bool = False
    #: The identity change stamps read with the actor's token (``identity.services.token_cache``):
    #: while they are unchanged the actor's policy grants are too, so ``policy.grants_for`` may
    #: reuse the grants this process loaded at the same stamps. None (no token, a task, a
    #: command): grants are loaded per actor. Never sent to a task (``to_dict``).
    grants_stamp: tuple[int, int] | None = None

    @property
    def is_project_admin(self) -> bool:
        return "admin" in self.roles

    # Keystone's tokens list the implied roles too (admin > manager > member > reader); these also
    # hold for a context made by hand with only the higher role

    @property
    def is_project_manager(self) -> bool:
        return bool({"admin", "manager"} & set(self.roles))

    @property
    def is_project_member(self) -> bool:
        return bool({"admin", "manager", "member"} & set(self.roles))

    @property
    def is_project_reader(self) -> bool:
        return bool({"admin", "manager", "member", "reader"} & set(self.roles))

    def to_dict(self) -> dict[str, Any]:
        """The context as a task's argument: every field but ``grants_stamp`` (a task runs later: it
        loads the grants of its own time), ``roles`` a copy; what ``dataclasses.asdict`` gives (the
        other fields are strings, booleans or None), without its deep copy of every value (25 µs a
        cast, where this takes 1)."""
        data = {name: getattr(self, name) for name in _SENT_FIELDS}
        data["roles"] = list(self.roles)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RequestContext:
        return cls(**data)

    @classmethod
    def system(cls, request_id: str | None = None) -> RequestContext:
        """An internal actor with every right (conductor, compute workers, commands)."""
        return cls(
            user_id=None, project_id=None, roles=["admin"], is_admin=True, is_service=True,
            request_id=request_id or new_request_id(),
        )


#: the fields ``to_dict`` sends
_SENT_FIELDS = tuple(f.name for f in fields(RequestContext) if f.name != "grants_stamp")
