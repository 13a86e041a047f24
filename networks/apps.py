from typing import Any

from django.apps import AppConfig


def _default_group_of_new_project(sender: Any, instance: Any, created: bool, raw: bool = False, **_kwargs: Any) -> None:
    """A project gets its ``default`` security group when it is made (by the identity API, a
    command, the demo), not at its first boot: the first boots of a new project arrive together
    (a client's burst, Ansible's loops), and each of them found no group and tried to make it, one
    write transaction after another behind the winner's. Projects made before keep getting theirs
    at first use (``secgroups.default_group_for``)."""
    if created and not raw:
        from .secgroups import default_group_for

        default_group_for(instance.id)


class NetworksConfig(AppConfig):
    name = "networks"

    def ready(self) -> None:
        from django.db.models.signals import post_save

        # the model named, not imported: identity's models are its own (its services and selectors are
        # the other apps' way in)
        post_save.connect(_default_group_of_new_project, sender="identity.Project",
                          dispatch_uid="networks.default_group")

        from cloudcore.core import stamps

        from .secgroups import DEFAULT_GROUPS_STAMP

        stamps.watch(DEFAULT_GROUPS_STAMP, "networks.SecurityGroup", when=lambda group: group.is_default)
