from django.apps import AppConfig


class ComputeConfig(AppConfig):
    """The compute agent: host-local work on a hypervisor (``manage.py compute``), its resource
    tracker and node identity. It owns no models: it works on servers' and hosts' rows in its cell
    through their selectors and services (never their models)."""

    name = "compute"

    def ready(self) -> None:
        # In ready(): these modules import models, which cannot load before the app registry.
        from . import (
            admin_password,
            block_devices,
            consoles,
            cross_cell,
            interfaces,
            live_migration,
            ops,
            pause_suspend_rescue,
            registry,
        )
        from . import tasks as _tasks  # noqa: F401  (registers the compute.* Celery tasks in every process)

        registry.register_modules([ops, block_devices, consoles, cross_cell, pause_suspend_rescue, interfaces,
                                   live_migration, admin_password])
