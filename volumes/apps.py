from django.apps import AppConfig


class VolumesConfig(AppConfig):
    name = "volumes"

    def ready(self) -> None:
        # Registers the volume worker's tasks with Celery in every process: volumes.rpc sends them
        # by name (a worker also finds them through autodiscovery; an eager test run does not).
        from . import tasks  # noqa: F401
