"""A project's tags (Keystone's ``/v3/projects/{project_id}/tags[/{tag}]``).

Tags are strings an operator attaches to a project to find it again (``GET /v3/projects?tags=``);
they mean nothing to the cloud itself. Reading them is for anyone with a role on the project and
for cloud admins (``identity:list_project_tags``, ``identity:get_project_tag``); changing them is
for cloud admins (``identity:create_project_tag``, ``identity:update_project_tags``,
``identity:delete_project_tag``, ``identity:delete_project_tags``), Keystone's defaults. Each
function checks its rule first, then looks the project up.

Domain errors: ``PolicyNotAuthorized`` (403), ``ProjectNotFound`` / ``ProjectTagNotFound`` (404),
``Invalid`` (400) for a tag beyond Keystone's limits (``accounts.project_tags_checked``),
``ProjectImmutable`` (403) for a change to the tags of an immutable project (as Keystone: they are
a change of the project).
"""
from __future__ import annotations

from django.db import IntegrityError, transaction

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from ..models import Project, ProjectTag
from . import accounts


class ProjectTagNotFound(NotFound):
    message = "Could not find project tag: %(tag)s."


def _project(actor: RequestContext, rule: str, project_id: str) -> Project:
    authorize(actor, rule, {"project_id": project_id})
    return accounts.project_get(project_id)


def project_tags_list(*, actor: RequestContext, project_id: str) -> list[str]:
    """The project's tags, in the order they were given."""
    return accounts.project_tag_names(_project(actor, "identity:list_project_tags", project_id))


def project_tag_check(*, actor: RequestContext, project_id: str, tag: str) -> None:
    """Raises ``ProjectTagNotFound`` unless the project has ``tag``."""
    project = _project(actor, "identity:get_project_tag", project_id)
    if not ProjectTag.objects.filter(project=project, name=tag).exists():
        raise ProjectTagNotFound(tag=tag)


def project_tags_replace(*, actor: RequestContext, project_id: str, tags: list[str]) -> list[str]:
    """Make ``tags`` the project's tags (all of them: the others go) and return them."""
    project = accounts.project_mutable_checked(_project(actor, "identity:update_project_tags", project_id))
    tags = accounts.project_tags_checked(tags)
    with transaction.atomic():
        accounts.project_tags_write(project, tags)
    return tags


def project_tag_add(*, actor: RequestContext, project_id: str, tag: str) -> None:
    """Add ``tag`` to the project's tags. As Keystone, a tag the project already has is refused
    (400, a tag list has no repeats), and so is an 81st."""
    project = accounts.project_mutable_checked(_project(actor, "identity:create_project_tag", project_id))
    accounts.project_tags_checked([*accounts.project_tag_names(project), tag])
    try:
        with transaction.atomic():
            ProjectTag.objects.create(project=project, name=tag)
    except IntegrityError:  # the same tag added by another request meanwhile
        raise Invalid(f"Invalid input for field 'tags': {tag!r} is given twice.") from None


def project_tag_remove(*, actor: RequestContext, project_id: str, tag: str) -> None:
    """Remove ``tag`` from the project's tags; ``ProjectTagNotFound`` when it has no such tag."""
    project = accounts.project_mutable_checked(_project(actor, "identity:delete_project_tag", project_id))
    deleted, _ = ProjectTag.objects.filter(project=project, name=tag).delete()
    if not deleted:
        raise ProjectTagNotFound(tag=tag)


def project_tags_clear(*, actor: RequestContext, project_id: str) -> None:
    """Remove every tag of the project."""
    project = accounts.project_mutable_checked(_project(actor, "identity:delete_project_tags", project_id))
    ProjectTag.objects.filter(project=project).delete()
