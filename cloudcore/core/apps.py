from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "cloudcore.core"
    label = "core"
    verbose_name = "cloudcore kernel"
