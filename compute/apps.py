from django.apps import AppConfig


class ComputeConfig(AppConfig):
    """The compute agent: host-local work on a hypervisor (``manage.py compute``), its resource
    tracker and node identity. It owns no models: it works on servers' and hosts' rows in its cell."""

    name = "compute"
