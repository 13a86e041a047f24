from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "identity"

    def ready(self) -> None:
        from . import policies  # noqa: F401
