from django.apps import AppConfig
from django.db.models.signals import post_migrate

from cells.transactions import is_api_db


def _sync_policy_permissions(sender: AppConfig, using: str | None = None, **kwargs: object) -> None:
    # Every rule gets its Permission so that Django admin can grant it; API database only.
    if not is_api_db(using):
        return
    from .services.policy_admin import sync_rule_permissions  # a model module: not before apps are ready

    sync_rule_permissions()


class IdentityConfig(AppConfig):
    name = "identity"

    def ready(self) -> None:
        from . import policies  # noqa: F401  - registers identity's rules once the app registry is ready

        post_migrate.connect(_sync_policy_permissions, sender=self, dispatch_uid="identity-policy-permissions")
