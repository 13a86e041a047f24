from django.apps import AppConfig


class VolumesConfig(AppConfig):
    name = "volumes"

    def ready(self) -> None:
        # Registers the volume worker's tasks with Celery in every process: volumes.rpc sends them
        # by name (a worker also finds them through autodiscovery; an eager test run does not).
        from celery.signals import worker_ready

        from . import tasks  # noqa: F401
        from .worker import on_worker_ready

        # the volume worker heartbeats its block storage services (a no-op in other workers)
        worker_ready.connect(on_worker_ready, weak=False)
