from django.apps import AppConfig


class ConductorConfig(AppConfig):
    """The conductor (``celery -Q conductor``): schedules builds, moves, unshelves; casts to the
    compute hosts through ``compute.rpc``. It owns no models."""

    name = "conductor"

    def ready(self) -> None:
        from . import tasks as _tasks  # noqa: F401  (registers the conductor.* Celery tasks in every process)
