from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    name = "scheduling"

    def ready(self) -> None:
        from . import policies  # noqa: F401  - registers scheduling's rules once the app registry is ready
