"""The request context as a task's argument (``RequestContext.to_dict``): what ``dataclasses.asdict``
gives without the grants' stamp, its roles a list of their own, and back by ``from_dict``."""
from __future__ import annotations

from dataclasses import asdict

from cloudcore.core.context import RequestContext


def test_to_dict_is_asdict_without_the_grants_stamp_and_its_roles_a_copy() -> None:
    # given a context with every field set to something other than its default
    ctx = RequestContext(user_id="u", project_id="p", roles=["member", "reader"], is_admin=True, request_id="req-1",
                         user_name="un", project_name="pn", is_service=True, application_credential_id="ac",
                         application_credential_restricted=True, grants_stamp=(1, 2))
    expected = asdict(ctx)
    del expected["grants_stamp"]
    # when it is made a task's argument
    data = ctx.to_dict()
    # then it is asdict's dict (the fields in their order), the stamp left out
    assert data == expected and list(data) == list(expected)
    # and its roles are its own list
    data["roles"].append("admin")
    assert ctx.roles == ["member", "reader"]
    # and the task rebuilds the same context, but for the stamp
    assert RequestContext.from_dict(ctx.to_dict()) == RequestContext(**{**asdict(ctx), "grants_stamp": None})
