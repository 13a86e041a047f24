"""Servers and everything that hangs off them.

Cell database: Instance, BlockDeviceMapping, Migration, InstanceAction(+Event), InstanceFault,
Tag, VirtualInterface, InstanceEventRecord. API database: Flavor (+extra specs, access), KeyPair, BuildRequest,
ConsoleAuthToken.
Rows that move between cells keep their uuid; cross-database references are uuid columns.
"""
from __future__ import annotations

import uuid as uuidlib
from typing import Any

from django.db import models
from django.db.models import Q
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from cloudcore.core.exceptions import ObjectActionError
from cloudcore.core.models import (
    ApiModel,
    CellModel,
    CodePointCharField,
    HardLimit,
    JSONField,
    ProjectHardLimit,
    SoftDeleteModel,
    TimestampedModel,
)

from .choices import MigrationStatus, PowerState, VmState


def new_uuid() -> str:
    return str(uuidlib.uuid4())


# --- API database -----------------------------------------------------------------------------


class Flavor(ApiModel, TimestampedModel):
    flavorid = models.CharField(max_length=255, unique=True)
    name = models.CharField(max_length=255, unique=True)
    memory_mb = models.IntegerField()
    vcpus = models.IntegerField()
    root_gb = models.IntegerField(default=0)
    ephemeral_gb = models.IntegerField(default=0)
    swap = models.IntegerField(default=0)
    rxtx_factor = models.FloatField(default=1.0)
    vcpu_weight = models.IntegerField(null=True, blank=True)
    disabled = models.BooleanField(default=False)
    is_public = models.BooleanField(default=True)
    description = models.TextField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name

    def as_dict(self, extra_specs: dict[str, str] | None = None) -> dict[str, Any]:
        """The snapshot stored on an instance (``instance.flavor``) and in request specs
        (``extra_specs``: the flavor's, when the caller read them with it)."""
        return {
            "id": self.id,
            "flavorid": self.flavorid,
            "name": self.name,
            "memory_mb": self.memory_mb,
            "vcpus": self.vcpus,
            "root_gb": self.root_gb,
            "ephemeral_gb": self.ephemeral_gb,
            "swap": self.swap,
            "rxtx_factor": self.rxtx_factor,
            "vcpu_weight": self.vcpu_weight,
            "is_public": self.is_public,
            "disabled": self.disabled,
            "description": self.description,
            "extra_specs": extra_specs if extra_specs is not None
            else {s.key: s.value for s in self.extra_specs.all()},
        }


class FlavorExtraSpec(ApiModel):
    flavor = models.ForeignKey(Flavor, on_delete=models.CASCADE, related_name="extra_specs")
    key = models.CharField(max_length=255)
    value = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["flavor", "key"], name="flavor_extra_spec_key")]


class FlavorProject(ApiModel):
    """Access to a private flavor."""

    flavor = models.ForeignKey(Flavor, on_delete=models.CASCADE, related_name="projects")
    project_id = models.CharField(max_length=255)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["flavor", "project_id"], name="flavor_project")]


class KeyPair(ApiModel, TimestampedModel):
    name = models.CharField(max_length=255)
    user_id = models.CharField(max_length=255, db_index=True)
    fingerprint = models.CharField(max_length=255)
    public_key = models.TextField()
    type = models.CharField(max_length=8, default="ssh")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user_id", "name"], name="keypair_user_name")]


class ConsoleAuthToken(ApiModel):
    """A console token handed out with a console URL (Nova's ``console_auth_tokens``).

    Only the token's SHA-256 is stored. It lives in the API database, not the server's cell (where
    Nova keeps it): the console proxies serve the whole cloud and look a token up without knowing
    its cell, and the compute hosts that answer where a console listens never write the API
    database (the API service writes the row). A token is good until ``expires``.
    """

    token_hash = models.CharField(max_length=64, unique=True)
    console_type = models.CharField(max_length=16)
    host = models.CharField(max_length=255)
    port = models.IntegerField()
    internal_access_path = models.CharField(max_length=255, null=True, blank=True)
    instance_uuid = models.CharField(max_length=36, db_index=True)
    access_url_base = models.CharField(max_length=255)
    created_at = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField(db_index=True)

    def is_expired(self) -> bool:
        return self.expires <= timezone.now()


class QuotaLimit(ProjectHardLimit):
    """A project's own hard limit for one resource (Nova's ``quotas`` table).

    A project without a row for a resource takes the ``default`` quota class's limit.
    """

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project_id", "resource"], name="quota_project_resource")]


class QuotaClass(HardLimit):
    """A quota class's hard limit for one resource (Nova's ``quota_classes``); only ``default``
    is used. A resource without a row takes the built-in default (``servers.services.quotas``)."""

    class_name = models.CharField(max_length=255, db_index=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["class_name", "resource"], name="quota_class_resource")]


class BuildRequest(ApiModel, TimestampedModel):
    """A server accepted by the API but not yet scheduled to a cell; ``instance`` is the
    serialised instance the API shows meanwhile."""

    instance_uuid = models.CharField(max_length=36, unique=True)
    project_id = models.CharField(max_length=255, db_index=True)
    instance = models.JSONField(default=dict)
    block_device_mappings = models.JSONField(default=list)
    tags = models.JSONField(default=list)
    #: Actions (with events) and faults of a server that left cell0 to be scheduled again
    #: (``services.history``): restored in the cell it lands in.
    history = models.JSONField(default=dict, blank=True)


class InstanceGroup(ApiModel, TimestampedModel):
    """A server group: its members are placed by ``policy`` (affinity, anti-affinity and their
    soft variants); ``rules`` holds ``max_server_per_host`` for anti-affinity (2.64)."""

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    name = models.CharField(max_length=255)
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    policy = models.CharField(max_length=32)
    rules = models.JSONField(default=dict)

    class Meta:
        ordering = ["id"]


class InstanceGroupMember(ApiModel, TimestampedModel):
    """A server in a group (one group per server, as in Nova)."""

    group = models.ForeignKey(InstanceGroup, on_delete=models.CASCADE, related_name="members")
    instance_uuid = models.CharField(max_length=36, unique=True)


# --- Cell databases ---------------------------------------------------------------------------


class Instance(CellModel, SoftDeleteModel):
    """A server in a cell.

    Invariant (seed 2): ``node`` never changes without ``compute_id`` changing with it, and an
    instance is never created on a node without its ``compute_id``; ``save()`` refuses both with
    ``ObjectActionError``.
    """

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    project_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255)
    # the text sort keys of the server list (``CodePointCharField``: ordered as the cells' merge orders them)
    display_name = CodePointCharField(max_length=255, blank=True, default="")
    display_description = models.TextField(null=True, blank=True)
    hostname = CodePointCharField(max_length=255, blank=True, default="")
    vm_state = CodePointCharField(max_length=255, default=VmState.BUILDING, db_index=True)
    task_state = CodePointCharField(max_length=255, null=True, blank=True)
    power_state = models.IntegerField(default=PowerState.NOSTATE)
    host = CodePointCharField(max_length=255, null=True, blank=True, db_index=True)
    node = CodePointCharField(max_length=255, null=True, blank=True)
    compute = models.ForeignKey(
        "hosts.ComputeNode", null=True, blank=True, on_delete=models.DO_NOTHING,
        db_constraint=False, related_name="instances",
    )
    launched_on = models.CharField(max_length=255, null=True, blank=True)
    availability_zone = CodePointCharField(max_length=255, null=True, blank=True)
    image_ref = models.CharField(max_length=255, blank=True, default="")
    kernel_id = models.CharField(max_length=255, blank=True, default="")
    ramdisk_id = models.CharField(max_length=255, blank=True, default="")
    flavor = JSONField(default=dict)
    old_flavor = JSONField(null=True, blank=True)
    new_flavor = JSONField(null=True, blank=True)
    memory_mb = models.IntegerField(default=0)
    vcpus = models.IntegerField(default=0)
    root_gb = models.IntegerField(default=0)
    ephemeral_gb = models.IntegerField(default=0)
    key_name = CodePointCharField(max_length=255, null=True, blank=True)
    key_data = models.TextField(null=True, blank=True)
    user_data = models.TextField(null=True, blank=True)
    metadata = JSONField(default=dict)
    system_metadata = JSONField(default=dict)
    migration_context = JSONField(null=True, blank=True)
    locked = models.BooleanField(default=False)
    locked_by = models.CharField(max_length=16, null=True, blank=True)
    locked_reason = models.CharField(max_length=255, null=True, blank=True)
    hidden = models.BooleanField(default=False, db_index=True)
    launched_at = models.DateTimeField(null=True, blank=True)
    terminated_at = models.DateTimeField(null=True, blank=True)
    scheduled_at = models.DateTimeField(null=True, blank=True)
    launch_index = models.IntegerField(default=0)
    reservation_id = models.CharField(max_length=255, blank=True, default="")
    root_device_name = models.CharField(max_length=255, null=True, blank=True)
    config_drive = models.CharField(max_length=255, blank=True, default="")
    access_ip_v4 = models.CharField(max_length=64, null=True, blank=True)
    access_ip_v6 = models.CharField(max_length=64, null=True, blank=True)
    #: ``OS-DCF:diskConfig``: AUTO (True) or MANUAL (False), see ``services.disk_config``.
    auto_disk_config = models.BooleanField(default=False)
    #: personality (below 2.57): ``[{"path", "contents" (base64)}]`` for the config drive, see
    #: ``services.personality``.
    injected_files = JSONField(default=list, blank=True)
    progress = models.IntegerField(default=0)
    admin_password_set = models.BooleanField(default=False)
    trusted_certs = JSONField(null=True, blank=True)
    cleaned = models.BooleanField(default=False)

    class Meta(SoftDeleteModel.Meta):
        indexes = [
            models.Index(fields=["project_id", "deleted"]),
            # A project's list page in the API's default order (created_at newest first, then uuid
            # ascending, Nova's tie-breaker; the index read backwards): read from the index up to the
            # page's limit, where the project_id index made SQLite sort every row of the project
            # (5,000 per cell for a page of 1,000 of 10,000 servers).
            models.Index(fields=["project_id", "created_at", "-uuid"]),
            models.Index(fields=["host", "node", "deleted"]),
            models.Index(fields=["compute", "deleted"]),
            models.Index(fields=["created_at", "id"]),
        ]

    def __str__(self) -> str:
        return f"{self.display_name} ({self.uuid})"

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Instance:
        # (no receiver at all: a look at the lists, cheaper than asking has_listeners per row)
        if len(values) == len(field_names) and ((not pre_init.receivers and not post_init.receivers)
                                                or not (pre_init.has_listeners(cls) or post_init.has_listeners(cls))):
            # A whole row, or the columns a list page reads (1,000 per page, ``only()``): the
            # attributes straight into __dict__, where Model.__init__ would put them one setattr at
            # a time (a column not read is left out of __dict__, deferred, as Model.__init__ does).
            obj = cls.__new__(cls)
            obj.__dict__.update(zip(field_names, values, strict=True))
            obj._state = ModelState()
            obj._state.adding = False
            obj._state.db = db
        else:
            obj = super().from_db(db, field_names, values)
        values_in = obj.__dict__
        if "node" in values_in and "compute_id" in values_in:  # deferred: save() reads them then
            obj._loaded_node = values_in["node"]
            obj._loaded_compute_id = values_in["compute_id"]
        return obj

    def save(self, *args: Any, **kwargs: Any) -> None:
        self._check_node_linkage()
        super().save(*args, **kwargs)
        self._node_linkage_saved()

    def _node_linkage_saved(self) -> None:
        """What was saved is the linkage the next save checks against."""
        self._loaded_node = self.node
        self._loaded_compute_id = self.compute_id

    def _check_node_linkage(self) -> None:
        if self._state.adding:
            if self.node and self.compute_id is None:
                raise ObjectActionError(
                    action="create", reason="cannot create an instance on a node without compute_id"
                )
            return
        loaded_node = getattr(self, "_loaded_node", self.node)
        loaded_compute_id = getattr(self, "_loaded_compute_id", self.compute_id)
        if self.node != loaded_node and self.node and self.compute_id == loaded_compute_id:
            raise ObjectActionError(
                action="save", reason="node changed but compute_id was not updated"
            )

    # Cheap predicates -------------------------------------------------------------------------
    @property
    def is_volume_backed(self) -> bool:
        return not self.image_ref

    @property
    def flavor_name(self) -> str:
        return str(self.flavor.get("name", ""))


class BlockDeviceMapping(CellModel, SoftDeleteModel):
    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    instance_uuid = models.CharField(max_length=36, db_index=True)
    source_type = models.CharField(max_length=255)
    destination_type = models.CharField(max_length=255)
    device_name = models.CharField(max_length=255, null=True, blank=True)
    device_type = models.CharField(max_length=255, null=True, blank=True)
    disk_bus = models.CharField(max_length=255, null=True, blank=True)
    guest_format = models.CharField(max_length=255, null=True, blank=True)
    boot_index = models.IntegerField(null=True, blank=True)
    delete_on_termination = models.BooleanField(default=False)
    image_id = models.CharField(max_length=36, null=True, blank=True)
    snapshot_id = models.CharField(max_length=36, null=True, blank=True)
    volume_id = models.CharField(max_length=36, null=True, blank=True)
    volume_size = models.IntegerField(null=True, blank=True)
    volume_type = models.CharField(max_length=255, null=True, blank=True)
    attachment_id = models.CharField(max_length=36, null=True, blank=True)
    connection_info = models.JSONField(null=True, blank=True)
    no_device = models.BooleanField(default=False)
    tag = models.CharField(max_length=255, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        pass

    @property
    def is_root(self) -> bool:
        return self.boot_index == 0

    @property
    def is_volume(self) -> bool:
        return self.destination_type == "volume"


class Migration(CellModel, SoftDeleteModel):
    """A move of an instance (resize, cold or live migration, evacuation).

    Invariant (seed 2): ``dest_node`` never changes without ``dest_compute_id`` changing too.
    """

    uuid = models.CharField(max_length=36, unique=True, default=new_uuid)
    instance_uuid = models.CharField(max_length=36, db_index=True)
    source_compute = models.CharField(max_length=255, null=True, blank=True)
    source_node = models.CharField(max_length=255, null=True, blank=True)
    dest_compute = models.CharField(max_length=255, null=True, blank=True)
    dest_node = models.CharField(max_length=255, null=True, blank=True)
    dest_host = models.CharField(max_length=255, null=True, blank=True)
    dest_compute_id = models.BigIntegerField(null=True, blank=True)
    status = models.CharField(max_length=255, default=MigrationStatus.PRE_MIGRATING, db_index=True)
    migration_type = models.CharField(max_length=32)
    old_instance_type_id = models.IntegerField(null=True, blank=True)
    new_instance_type_id = models.IntegerField(null=True, blank=True)
    old_flavor = models.JSONField(null=True, blank=True)
    new_flavor = models.JSONField(null=True, blank=True)
    cross_cell_move = models.BooleanField(default=False)
    hidden = models.BooleanField(default=False)
    user_id = models.CharField(max_length=255, null=True, blank=True)
    project_id = models.CharField(max_length=255, null=True, blank=True)
    memory_total = models.BigIntegerField(null=True, blank=True)
    memory_processed = models.BigIntegerField(null=True, blank=True)
    memory_remaining = models.BigIntegerField(null=True, blank=True)
    disk_total = models.BigIntegerField(null=True, blank=True)
    disk_processed = models.BigIntegerField(null=True, blank=True)
    disk_remaining = models.BigIntegerField(null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        indexes = [models.Index(fields=["instance_uuid", "status"])]

    @classmethod
    def from_db(cls, db: str | None, field_names: Any, values: Any) -> Migration:
        obj = super().from_db(db, field_names, values)
        obj._loaded_dest_node = obj.__dict__.get("dest_node")
        obj._loaded_dest_compute_id = obj.__dict__.get("dest_compute_id")
        return obj

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            loaded = getattr(self, "_loaded_dest_node", self.dest_node)
            loaded_id = getattr(self, "_loaded_dest_compute_id", self.dest_compute_id)
            if self.dest_node != loaded and self.dest_node and self.dest_compute_id == loaded_id:
                raise ObjectActionError(
                    action="save", reason="dest_node changed but dest_compute_id was not updated"
                )
        super().save(*args, **kwargs)
        self._loaded_dest_node = self.dest_node
        self._loaded_dest_compute_id = self.dest_compute_id


class InstanceAction(CellModel, SoftDeleteModel):
    instance_uuid = models.CharField(max_length=36, db_index=True)
    action = models.CharField(max_length=255)
    request_id = models.CharField(max_length=255, db_index=True)
    user_id = models.CharField(max_length=255, null=True, blank=True)
    project_id = models.CharField(max_length=255, null=True, blank=True)
    start_time = models.DateTimeField(default=timezone.now)
    finish_time = models.DateTimeField(null=True, blank=True)
    message = models.CharField(max_length=255, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        indexes = [models.Index(fields=["instance_uuid", "request_id"])]


class InstanceActionEvent(CellModel, SoftDeleteModel):
    action = models.ForeignKey(InstanceAction, on_delete=models.CASCADE, related_name="events")
    event = models.CharField(max_length=255)
    start_time = models.DateTimeField(default=timezone.now)
    finish_time = models.DateTimeField(null=True, blank=True)
    result = models.CharField(max_length=255, null=True, blank=True)
    traceback = models.TextField(null=True, blank=True)
    host = models.CharField(max_length=255, null=True, blank=True)
    details = models.TextField(null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        pass


class InstanceFault(CellModel, SoftDeleteModel):
    instance_uuid = models.CharField(max_length=36, db_index=True)
    code = models.IntegerField()
    message = models.CharField(max_length=255)
    details = models.TextField(null=True, blank=True)
    host = models.CharField(max_length=255, null=True, blank=True)

    class Meta(SoftDeleteModel.Meta):
        pass


class Tag(CellModel):
    instance_uuid = models.CharField(max_length=36, db_index=True)
    tag = models.CharField(max_length=80)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["instance_uuid", "tag"], name="tag_per_instance")]


class VirtualInterface(CellModel, SoftDeleteModel):
    """A port attached to an instance (the port lives in the network service)."""

    uuid = models.CharField(max_length=36, default=new_uuid)
    instance_uuid = models.CharField(max_length=36, db_index=True)
    port_id = models.CharField(max_length=36, db_index=True)
    network_id = models.CharField(max_length=36, null=True, blank=True)
    address = models.CharField(max_length=255, null=True, blank=True)
    tag = models.CharField(max_length=255, null=True, blank=True)
    #: The user brought the port (a ``port_id`` request): deleting the server only unbinds it; the
    #: ports made for the server are deleted with it (Nova's ``preserve_on_delete``).
    preserve_on_delete = models.BooleanField(default=False)

    class Meta(SoftDeleteModel.Meta):
        constraints = [
            models.UniqueConstraint(
                fields=["instance_uuid", "port_id"], condition=Q(deleted=False), name="vif_live"
            )
        ]


class InstanceEventRecord(CellModel):
    """An external event a compute operation waits for (``volume-reimaged``, ``volume-extended``...).

    The waiter (the compute agent) creates the row (``received=False``) before it starts the
    operation that will cause the event; ``os-server-external-events`` marks it received (or
    creates it received when it arrives first, e.g. in eager tests). The row lives in the
    instance's cell database: the API reaches every cell, the compute only its own (as in Nova the
    event travels from the API to the instance's compute host), and no worker slot is held by a
    blocking RPC: the waiter polls its row with a timeout.
    """

    instance_uuid = models.CharField(max_length=36, db_index=True)
    name = models.CharField(max_length=64)
    tag = models.CharField(max_length=255, default="")
    status = models.CharField(max_length=16, default="completed")
    received = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
