"""factory_boy factories. Cell-model factories take ``cell=`` (a CellMapping or name) and
create the row inside ``target_cell(cell)``."""
from __future__ import annotations

from typing import Any

import factory

from cells.context import target_cell
from hosts.models import ComputeNode, Service
from servers.choices import PowerState, VmState
from servers.models import Flavor, Instance, InstanceAction, Migration


class CellFactory(factory.django.DjangoModelFactory):
    """Base of the cell-model factories: ``Factory(cell=cell1, ...)``."""

    class Meta:
        abstract = True

    @classmethod
    def _create(cls, model_class: type, *args: Any, cell: Any = None, **kwargs: Any) -> Any:
        if cell is None:
            raise TypeError(f"{cls.__name__} needs cell=")
        with target_cell(cell):
            return super()._create(model_class, *args, **kwargs)


class FlavorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Flavor

    flavorid = factory.Sequence(lambda n: f"flavor-{n}")
    name = factory.Sequence(lambda n: f"m1.test{n}")
    memory_mb = 512
    vcpus = 1
    root_gb = 1


class ServiceFactory(CellFactory):
    class Meta:
        model = Service

    host = factory.Sequence(lambda n: f"compute{n}")
    binary = "nova-compute"
    topic = "compute"


class ComputeNodeFactory(CellFactory):
    class Meta:
        model = ComputeNode

    uuid = factory.Faker("uuid4")
    host = factory.Sequence(lambda n: f"compute{n}")
    hypervisor_hostname = factory.LazyAttribute(lambda o: o.host)
    vcpus = 8
    memory_mb = 16384
    local_gb = 100


class InstanceFactory(CellFactory):
    class Meta:
        model = Instance

    project_id = "project-a"
    user_id = "user-a"
    display_name = factory.Sequence(lambda n: f"server-{n}")
    vm_state = VmState.ACTIVE
    power_state = PowerState.RUNNING
    flavor = factory.LazyFunction(lambda: {"name": "m1.tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1})
    vcpus = 1
    memory_mb = 512
    root_gb = 1


class MigrationFactory(CellFactory):
    class Meta:
        model = Migration

    instance_uuid = factory.Faker("uuid4")
    migration_type = "resize"


class InstanceActionFactory(CellFactory):
    class Meta:
        model = InstanceAction

    instance_uuid = factory.Faker("uuid4")
    action = "create"
    request_id = factory.Sequence(lambda n: f"req-{n:08d}")
