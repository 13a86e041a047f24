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
        _connect_token_cache()
        _watch_catalog()


def _connect_token_cache() -> None:
    """Identity writes end the validated tokens of every process (``services.token_cache``) and
    the policy grants they remember (``cloudcore.core.policy.grants_for``). A
    signal rather than a call in each service: Django admin and guardian's helpers write these
    rows too, and a token cache that misses one of them would keep a revoked right alive."""
    from django.apps import apps
    from django.contrib.auth.models import Group
    from django.db.models.signals import m2m_changed, post_delete, post_save

    from .models import ApplicationCredential, Project, User
    from .services import token_cache

    # per model: a delete receiver on every model would cost other models their fast deletes
    for app_label, model_name in token_cache.WATCHED:
        model = apps.get_model(app_label, model_name)
        post_save.connect(token_cache.on_save, sender=model,
                          dispatch_uid=f"identity-token-cache-save-{app_label}-{model_name}")
        post_delete.connect(token_cache.on_delete, sender=model,
                            dispatch_uid=f"identity-token-cache-delete-{app_label}-{model_name}")
    for model in (User, Project, ApplicationCredential):
        post_save.connect(token_cache.on_account_write, sender=model,
                          dispatch_uid=f"identity-token-cache-account-save-{model.__name__}")
        post_delete.connect(token_cache.on_account_write, sender=model,
                            dispatch_uid=f"identity-token-cache-account-delete-{model.__name__}")
    for through in (User.groups.through, User.user_permissions.through, Group.permissions.through,
                    ApplicationCredential.roles.through):
        m2m_changed.connect(token_cache.on_m2m, sender=through, dispatch_uid=f"identity-token-cache-{through.__name__}")


def _watch_catalog() -> None:
    """A write of a registered service or endpoint (the API, Django admin) makes every process
    read the catalog's rows again (``services.catalog``)."""
    from cloudcore.core import stamps

    from .services.catalog import CATALOG_STAMP

    stamps.watch(CATALOG_STAMP, "identity.Service", "identity.Endpoint")
