from django.apps import AppConfig


class ConductorConfig(AppConfig):
    """The conductor (``celery -Q conductor``): schedules builds, moves, unshelves; casts to the
    compute hosts through ``compute.rpc``. It owns no models."""

    name = "conductor"

    def ready(self) -> None:
        # ready() imports: these modules import models, which needs the app registry loaded
        from cloudcore.core import notifications

        from . import rpc
        from . import tasks as _tasks  # noqa: F401  (registers the conductor.* Celery tasks in every process)

        # a compute agent's notifications reach the API database through the conductor
        notifications.hand_off_with(rpc.notification_handoff, together=rpc.notifications_handoff)
