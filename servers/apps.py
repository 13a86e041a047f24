from django.apps import AppConfig


class ServersConfig(AppConfig):
    name = "servers"

    def ready(self) -> None:
        from cloudcore.core import stamps

        from .services.create import FLAVORS_STAMP
        from .services.quotas import QUOTAS_STAMP

        stamps.watch(FLAVORS_STAMP, "servers.Flavor", "servers.FlavorExtraSpec")
        stamps.watch(QUOTAS_STAMP, "servers.QuotaLimit", "servers.QuotaClass")
