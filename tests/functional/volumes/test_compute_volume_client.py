"""The compute agent's way to Cinder (``compute.clients.volumes``): the attachments API of 3.44
and ``os-reimage`` over HTTP as the service user, from inside a compute agent that may not touch
the volume rows itself (``cells.isolation``)."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.conftest import IMAGE_A, IMAGE_B

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def member_volume(cloud: Any) -> str:
    from cloudcore.core.context import RequestContext
    from volumes import services

    owner = RequestContext(user_id="u1", project_id="demo", roles=["member"])
    return services.volume_create(owner, size=1, image_id=cloud.image_a, run_now=True).id


def test_attachment_lifecycle_over_the_api_from_a_compute_agent(bfv: Any) -> None:
    from cells.isolation import IsolationViolation, compute_agent
    from compute.clients import volumes as cinder
    from volumes.models import Volume, VolumeAttachment

    vid = member_volume(bfv)
    with compute_agent(bfv.cells["cell1"]):
        # the agent cannot read or write the volume rows: every step below goes through the API
        with pytest.raises(IsolationViolation):
            Volume.objects.filter(pk=vid).update(status="in-use")
        # an attachment without connector only reserves the volume
        att = cinder.attachment_create(volume_id=vid, instance_uuid="11111111-2222-3333-4444-555555555555")
        assert att.status == "reserved" and att.connection_info == {}
        assert cinder.volume_get(volume_id=vid).status == "reserved"
        # the host connector (with the mount point, as nova sends it) gives the connection_info
        att = cinder.attachment_update(attachment_id=att.id, connector={"host": "compute1", "initiator": "iqn.x"},
                                       mountpoint="/dev/vdb")
        assert att.status == "attaching" and att.connection_info["data"]["volume_id"] == vid
        cinder.attachment_complete(attachment_id=att.id)
        vol = cinder.volume_get(volume_id=vid)
        assert vol.status == "in-use" and vol.project_id == "demo" and vol.size == 1
    row = VolumeAttachment.objects.get(pk=att.id)
    assert row.mountpoint == "/dev/vdb" and row.attached_host == "compute1"
    with compute_agent(bfv.cells["cell1"]):
        cinder.attachment_delete(attachment_id=att.id)
        assert cinder.volume_get(volume_id=vid).status == "available"
        cinder.volume_delete(volume_id=vid)
    assert Volume.objects.get(pk=vid).status == "deleting" or not Volume.objects.filter(pk=vid).exists()


def test_refusals_are_service_call_failures_with_cinders_fault(bfv: Any) -> None:
    from compute.clients import volumes as cinder
    from compute.clients.session import ServiceCallFailed

    vid = member_volume(bfv)
    cinder.attachment_create(volume_id=vid, instance_uuid="11111111-2222-3333-4444-555555555555",
                             connector={"host": "compute1"})
    # a second server cannot take a volume that is not multiattach
    with pytest.raises(ServiceCallFailed, match="400.*status must be available"):
        cinder.attachment_create(volume_id=vid, instance_uuid="66666666-2222-3333-4444-555555555555")
    # an attached volume is not deleted, nor reimaged without reimage_reserved
    with pytest.raises(ServiceCallFailed, match="400"):
        cinder.volume_delete(volume_id=vid)
    with pytest.raises(ServiceCallFailed, match="400"):
        cinder.volume_reimage(volume_id=vid, image_id=bfv.image_b)
    with pytest.raises(ServiceCallFailed, match="404"):
        cinder.volume_get(volume_id="no-such-volume")


def test_boot_and_delete_of_a_volume_backed_server_by_a_compute_agent(bfv: Any) -> None:
    """The compute half of a volume-backed server's life run as the compute agent of its cell:
    it attaches and releases the volumes over Cinder's API (a direct write of a volume row would
    raise IsolationViolation)."""
    from django.test import TestCase

    from cells.context import target_cell
    from cells.isolation import compute_agent
    from cloudcore.core.context import RequestContext
    from compute.block_devices import detach_all_volumes, prep_block_devices
    from compute.clients import volumes as cinder
    from servers.models import BlockDeviceMapping, Instance
    from tests.functional.volumes.test_rebuild_bfv import boot_bfv, root_volume
    from volumes.backends import get_backend
    from volumes.models import Volume

    client = bfv.member()
    server = boot_bfv(bfv, client)
    bdm, vol = root_volume(bfv, server["id"])
    # the conductor created the root volume in the server's project
    assert vol.project_id == bfv.instance(server["id"]).project_id
    cell = bfv.cells[bfv.hosts[bfv.instance(server["id"]).host]["cell"]]
    ctx = RequestContext.system()
    with compute_agent(cell), target_cell(cell):
        instance = Instance.objects.get(uuid=server["id"])
        # a host attaching the root volume anew (a new attachment, then connector + complete)
        cinder.attachment_delete(attachment_id=str(bdm.attachment_id))
        BlockDeviceMapping.objects.filter(pk=bdm.pk).update(attachment_id=None)
        info = prep_block_devices(ctx, instance)
        assert info["block_device_mapping"][0]["connection_info"]["data"]["volume_id"] == vol.id
    assert Volume.objects.get(pk=vol.id).status == "in-use"
    assert vol.attachments.filter(deleted=False).get().id != bdm.attachment_id
    with TestCase.captureOnCommitCallbacks(execute=True):  # Cinder frees the volume after its commit
        with compute_agent(cell), target_cell(cell):
            detach_all_volumes(ctx, instance)
    # every attachment is gone and the delete_on_termination volume with it
    assert not Volume.objects.filter(pk=vol.id).exists()
    assert not get_backend().path(vol.id).exists()


def test_reimage_of_the_root_volume_by_a_compute_agent(bfv: Any) -> None:
    """The volume half of a volume-backed rebuild as the compute agent: the reimage request goes to
    Cinder's API and the agent waits for ``volume-reimaged`` in its own cell's database."""
    from cells.context import target_cell
    from cells.isolation import compute_agent
    from cloudcore.core.context import RequestContext
    from compute import rebuild_bfv
    from servers.models import Instance, InstanceEventRecord
    from tests.functional.volumes.test_rebuild_bfv import boot_bfv, root_volume, volume_bytes

    client = bfv.member()
    server = boot_bfv(bfv, client)
    _bdm, vol = root_volume(bfv, server["id"])
    assert volume_bytes(vol.id, len(IMAGE_A)) == IMAGE_A
    host = bfv.instance(server["id"]).host
    cell = bfv.cells[bfv.hosts[host]["cell"]]
    with compute_agent(cell), target_cell(cell):
        instance = Instance.objects.get(uuid=server["id"])
        rebuild_bfv.rebuild_volume_backed(RequestContext.system(), instance, image_id=bfv.image_b, admin_pass=None,
                                          driver=bfv.driver(host))
        assert not InstanceEventRecord.objects.filter(instance_uuid=server["id"]).exists()
    bdm, vol = root_volume(bfv, server["id"])
    assert vol.status == "in-use" and vol.image_id == bfv.image_b
    assert volume_bytes(vol.id, len(IMAGE_B)) == IMAGE_B
    assert vol.attachments.filter(deleted=False).count() == 1
