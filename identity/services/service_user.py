"""The cloud's service user: how compute agents authenticate to the other services' APIs.

Nova's compute hosts reach Placement, Glance, Cinder and Neutron with a service user's token;
cloudcore's compute agents do the same (``compute.clients``). The user is a cloud admin (the
``admin`` role on the admin project), created by the demo setup and, in-process, on first use.
"""
from __future__ import annotations

from django.conf import settings

from ..models import Project, User
from .roles import ensure_default_roles, role_assign


def service_user_ensure() -> User:
    """Create (or repair) the service user named by the settings; idempotent."""
    project, _ = Project.objects.get_or_create(name=settings.ADMIN_PROJECT_NAME, domain_id="default")
    user = User.objects.filter(name=settings.SERVICE_USER_NAME, domain_id="default").first()
    if user is None:
        user = User.objects.create_user(settings.SERVICE_USER_NAME, settings.SERVICE_PASSWORD,
                                        default_project=project)
    elif not user.check_password(settings.SERVICE_PASSWORD):
        user.set_password(settings.SERVICE_PASSWORD)
        user.save(update_fields=["password"])
    ensure_default_roles()
    role_assign(user=user, project=project, role="admin")
    return user
