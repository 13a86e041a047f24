"""Host aggregates and availability zones, mirrored into placement."""
from __future__ import annotations

import pytest

from scheduling.placement import services as placement
from scheduling.services import aggregates as svc
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_zone_rules_and_placement_mirroring(compute_host):
    # given two hosts in cell1 and cell2, and a zone aggregate az1
    node1 = compute_host("compute1", cell="cell1")
    compute_host("compute2", cell="cell2")
    az1 = svc.aggregate_create(name="agg1", availability_zone="az1")
    # then hosts are in the default zone until added
    assert svc.host_availability_zone("compute1") == "nova"
    # when compute1 joins az1, then its zone is az1 and its provider is in the placement aggregate
    svc.aggregate_add_host(aggregate=az1.id, host="compute1")
    assert svc.host_availability_zone("compute1") == "az1"
    assert placement.aggregates_get(rp=node1.uuid) == [az1.uuid]
    assert svc.aggregate_uuids_for_zone("az1") == [az1.uuid]
    # when added twice, then conflict
    with pytest.raises(svc.AggregateHostExists):
        svc.aggregate_add_host(aggregate=az1, host="compute1")
    # when a second zone aggregate takes compute1, then conflict (one zone per host)
    az2 = svc.aggregate_create(name="agg2", availability_zone="az2")
    with pytest.raises(svc.InvalidAggregateActionAdd, match="already in availability zone"):
        svc.aggregate_add_host(aggregate=az2, host="compute1")
    # but a plain aggregate can take it, and setting az2 on that aggregate is refused
    plain = svc.aggregate_create(name="plain")
    svc.aggregate_add_host(aggregate=plain, host="compute1")
    with pytest.raises(svc.InvalidAggregateActionUpdateMeta):
        svc.aggregate_set_metadata(aggregate=plain, metadata={"availability_zone": "az2"})
    svc.aggregate_set_metadata(aggregate=plain, metadata={"ssd": "true"})
    assert svc.host_aggregates_metadata(["compute1"])["compute1"]["ssd"] == {"true"}
    # when an unknown host is added, then not found; a non-member removed, then not found
    with pytest.raises(svc.ComputeHostNotFound):
        svc.aggregate_add_host(aggregate=az1, host="nope")
    with pytest.raises(svc.AggregateHostNotFound):
        svc.aggregate_remove_host(aggregate=az1, host="compute2")
    # when a non-empty aggregate is deleted, then refused; emptied, then gone from placement
    with pytest.raises(svc.InvalidAggregateActionDelete):
        svc.aggregate_delete(aggregate=az1)
    svc.aggregate_remove_host(aggregate=az1, host="compute1")
    assert placement.aggregates_get(rp=node1.uuid) == [plain.uuid]
    svc.aggregate_delete(aggregate=az1)
    with pytest.raises(svc.AggregateNotFound):
        svc.aggregate_get(az1.id)
    # duplicate names conflict
    with pytest.raises(svc.AggregateNameExists):
        svc.aggregate_create(name="agg2")


def test_available_zones_lists_enabled_compute_hosts(compute_host):
    compute_host("compute1", cell="cell1")
    compute_host("compute2", cell="cell2")
    compute_host("compute3", cell="cell2", disabled=True)
    agg = svc.aggregate_create(name="agg1", availability_zone="az1")
    agg = svc.aggregate_add_host(aggregate=agg, host="compute1")
    # the cheap membership test (no full load) and the full list agree
    assert "az1" in svc.available_zones() and "nova" in svc.available_zones()
    assert "az2" not in svc.available_zones()
    zones = svc.available_zones()
    assert list(zones) == [("az1", ["compute1"]), ("nova", ["compute2"])]
    assert "az1" in zones and "nova" in zones and "az2" not in zones and len(zones) == 2
    # a zone whose only hosts are disabled is not available
    empty = svc.aggregate_create(name="agg3", availability_zone="az3")
    svc.aggregate_add_host(aggregate=empty, host="compute3")
    assert not svc.zone_available("az3") and svc.zone_available("nova")
    detail = {(z.zone, z.host): z for z in svc.zone_services()}
    assert detail[("az3", "compute3")].available is False and detail[("az3", "compute3")].active is True
    assert svc.aggregate_to_dict(agg)["hosts"] == ["compute1"]


def test_demo_zones_and_providers_created_later_join_them(cells):
    # given the demo zones set up before any compute host started
    from scheduling import demo

    lines: list[str] = []
    demo.setup(lines.append)
    demo.setup(lines.append)  # idempotent
    assert lines == ["scheduling: created availability zone az1", "scheduling: created availability zone az2"]
    assert svc.host_availability_zone("compute3") == "az2"
    # when the resource tracker creates compute1's provider, then it is in az1's placement aggregate
    rp = placement.provider_ensure(uuid="11111111-0000-0000-0000-000000000001", name="compute1", host="compute1")
    assert placement.aggregates_get(rp=rp.uuid) == svc.aggregate_uuids_for_zone("az1")
    # and ensuring again changes nothing
    assert placement.provider_ensure(uuid=rp.uuid, name="compute1", host="compute1").uuid == rp.uuid


def test_zone_change_refused_under_running_servers_and_empty_zone(compute_host, cells):
    from tests.factories import InstanceFactory

    compute_host("compute1", cell="cell1")
    agg = svc.aggregate_create(name="agg1", availability_zone="az1")
    svc.aggregate_add_host(aggregate=agg, host="compute1")
    # given a server on compute1, when the zone changes, then refused (same name is fine)
    InstanceFactory(cell=cells["cell1"], host="compute1")
    with pytest.raises(svc.InvalidAggregateActionUpdateMeta, match="contain instances"):
        svc.aggregate_set_metadata(aggregate=agg, metadata={"availability_zone": "az9"})
    with pytest.raises(svc.InvalidAggregateActionUpdate, match="contain instances"):
        svc.aggregate_update(aggregate=agg, availability_zone="az9")
    svc.aggregate_update(aggregate=agg, name="renamed", availability_zone="az1")
    # and an empty zone name is refused
    with pytest.raises(svc.InvalidAggregateActionUpdateMeta, match="empty named"):
        svc.aggregate_set_metadata(aggregate=agg, metadata={"availability_zone": None})


def test_unchanged_internal_writes_keep_the_generation(cells):
    from .conftest import make_provider

    rp = make_provider("n")
    before = placement.provider_get(uuid=rp.uuid).generation
    inventory = placement.inventories_get(rp=rp.uuid)
    placement.inventories_set(rp=rp.uuid, inventories=inventory)
    placement.traits_set(rp=rp.uuid, traits=[])
    placement.aggregates_set(rp=rp.uuid, aggregates=[])
    assert placement.provider_get(uuid=rp.uuid).generation == before
    # but a write with a generation (the API) always bumps it, as Placement does
    placement.traits_set(rp=rp.uuid, traits=[], generation=before)
    assert placement.provider_get(uuid=rp.uuid).generation == before + 1


def test_sync_aggregates_command(compute_host, cells):
    from django.core.management import call_command

    from scheduling.models import AggregateHost

    # given an aggregate whose placement mirror was lost, and a member that is not a mapped host
    node = compute_host("compute1", cell="cell1")
    agg = svc.aggregate_create(name="agg1", availability_zone="az1")
    svc.aggregate_add_host(aggregate=agg, host="compute1")
    placement.aggregates_set(rp=node.uuid, aggregates=[])
    # when synced, then the provider is back in the aggregate
    call_command("placement", "sync_aggregates")
    assert placement.aggregates_get(rp=node.uuid) == [agg.uuid]
    # and an unmapped member makes it exit 4
    AggregateHost.objects.create(aggregate=agg, host="ghost")
    with pytest.raises(SystemExit) as exc:
        call_command("placement", "sync_aggregates")
    assert exc.value.code == 4
