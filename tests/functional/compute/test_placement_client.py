"""The compute side reaches placement only over its HTTP API, as the service user: the resource
tracker, start-up and the allocation moves run here inside ``compute_agent(cell)``, where any use
of a placement table (or any other API-database table) raises ``IsolationViolation``; what they
did is then checked through the placement API itself."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cells.context import target_cell
from cells.isolation import compute_agent
from cloudcore.core.models import NotificationRecord
from compute import resource_tracker
from compute.clients import placement as client
from compute.clients import session
from compute.clients.session import service_adapter
from compute.startup import apply_startup, check_startup
from compute.virt.libvirt import LibvirtDriver, write_test_node
from scheduling.models import PlacementChangeStamp
from scheduling.placement import services as placement
from tests.factories import ComputeNodeFactory, ServiceFactory

pytestmark = pytest.mark.django_db(databases="__all__")


class Requests:
    """The HTTP requests the clients send (the token request left out)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str]] = []

    def clear(self) -> None:
        self.sent.clear()


@pytest.fixture
def requests_sent(monkeypatch: pytest.MonkeyPatch) -> Requests:
    seen = Requests()
    original = session._InProcessAdapter.send

    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        if not str(request.url).rstrip("/").endswith("/auth/tokens"):
            seen.sent.append((str(request.method), str(request.url).split("/placement", 1)[-1]))
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(session._InProcessAdapter, "send", send)
    return seen


@pytest.fixture(autouse=True)
def _fresh_tracker_copy() -> Iterator[None]:
    resource_tracker.forget_reported()
    yield
    resource_tracker.forget_reported()


class Driver:
    capabilities = {"supports_rebuild_bfv": True}

    def __init__(self, vcpus: int = 8) -> None:
        self.resources = {"vcpus": vcpus, "memory_mb": 16384, "local_gb": 100}

    def get_available_resource(self) -> dict[str, Any]:
        return dict(self.resources)


def _api(path: str, version: str = "1.28") -> Any:
    resp = service_adapter("placement").get(path, microversion=version)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _node(cells: dict, host: str = "rt-host") -> tuple[Any, Any]:
    service = ServiceFactory(cell=cells["cell1"], host=host)
    return service, ComputeNodeFactory(cell=cells["cell1"], host=host, service=service)


def test_the_tracker_creates_its_provider_over_http_inside_its_cell_agent(cells, requests_sent):
    # given a node in cell1 that placement does not know
    service, node = _node(cells)
    stamp_before = PlacementChangeStamp.objects.filter(id=1).values_list("seq", flat=True).first() or 0
    # when its resource tracker reports as the compute agent of cell1
    with compute_agent(cells["cell1"]):
        writes = resource_tracker.report_to_placement(node=node, service=service, driver=Driver(), refresh=True)
    # then the provider, its inventories and traits are in placement
    assert writes == 2
    provider = _api(f"/resource_providers/{node.uuid}", "1.14")
    assert provider["name"] == node.hypervisor_hostname and provider["parent_provider_uuid"] is None
    inventories = _api(f"/resource_providers/{node.uuid}/inventories")["inventories"]
    assert inventories["VCPU"]["total"] == 8 and inventories["VCPU"]["allocation_ratio"] == 4.0
    assert inventories["MEMORY_MB"]["reserved"] == 512 and inventories["DISK_GB"]["total"] == 100
    assert _api(f"/resource_providers/{node.uuid}/traits", "1.6")["traits"] == ["COMPUTE_NODE",
                                                                              "COMPUTE_REBUILD_BFV"]
    # through the HTTP API, with nova-compute's microversions
    assert ("POST", "/resource_providers") in requests_sent.sent
    assert ("PUT", f"/resource_providers/{node.uuid}/inventories") in requests_sent.sent
    # and the writes bumped the scheduler's change stamp like any placement write
    assert PlacementChangeStamp.objects.get(id=1).seq > stamp_before


def test_an_unchanged_periodic_report_sends_nothing_and_a_change_sends_only_its_put(cells, requests_sent):
    service, node = _node(cells)
    driver = Driver()
    with compute_agent(cells["cell1"]):
        resource_tracker.report_to_placement(node=node, service=service, driver=driver, refresh=True)
        requests_sent.clear()
        # an unchanged node: not one request
        assert resource_tracker.report_to_placement(node=node, service=service, driver=driver) == 0
        assert requests_sent.sent == []
        # the hypervisor grows: one PUT of the inventories, nothing else
        driver.resources["vcpus"] = 16
        assert resource_tracker.report_to_placement(node=node, service=service, driver=driver) == 1
    assert [m for m, _ in requests_sent.sent] == ["PUT"]
    assert _api(f"/resource_providers/{node.uuid}/inventories")["inventories"]["VCPU"]["total"] == 16


def test_a_stale_generation_is_read_again_and_the_write_retried(cells):
    service, node = _node(cells)
    driver = Driver()
    with compute_agent(cells["cell1"]):
        resource_tracker.report_to_placement(node=node, service=service, driver=driver, refresh=True)
    # somebody else writes the provider meanwhile (its generation moves on)
    placement.aggregates_set(rp=node.uuid, aggregates=["6b7f5e0c-0000-4000-8000-000000000001"])
    with target_cell(cells["cell1"]):
        service.disabled = True
        service.save()
    with compute_agent(cells["cell1"]):
        assert resource_tracker.report_to_placement(node=node, service=service, driver=driver) == 1
    assert "COMPUTE_STATUS_DISABLED" in _api(f"/resource_providers/{node.uuid}/traits", "1.6")["traits"]


def test_a_provider_gone_from_placement_is_created_again_after_the_failed_report(cells):
    service, node = _node(cells)
    driver = Driver()
    with compute_agent(cells["cell1"]):
        resource_tracker.report_to_placement(node=node, service=service, driver=driver, refresh=True)
    placement.provider_delete(rp=node.uuid)
    driver.resources["vcpus"] = 4
    with compute_agent(cells["cell1"]):
        with pytest.raises(session.ServiceCallFailed, match="404"):
            resource_tracker.report_to_placement(node=node, service=service, driver=driver)
        assert resource_tracker.report_to_placement(node=node, service=service, driver=driver) == 2
    assert _api(f"/resource_providers/{node.uuid}/inventories")["inventories"]["VCPU"]["total"] == 4


def test_start_up_inside_the_agent_registers_in_the_cell_and_the_conductor_maps_the_host(cells, tmp_path: Path,
                                                                                      settings):
    # given a host added to a zone before it ever started (the demo's set-up), its address set
    settings.MY_IP = "198.51.100.7"
    from cells import selectors as cell_selectors
    from scheduling.services import aggregates

    zone = aggregates.aggregate_create(name="az9", availability_zone="az9")
    aggregates.aggregate_add_host(aggregate=zone, host="fresh1", require_mapped=False)
    write_test_node(tmp_path, hostname="fresh1", vcpus=4, memory_mb=8192, disk_gb=40)
    driver = LibvirtDriver(host="fresh1", uri=f"test://{tmp_path / 'node.xml'}", state_path=tmp_path)
    # when it starts as the compute agent of cell1 (which may not touch the API database)
    with compute_agent(cells["cell1"]):
        plan = check_startup(host="fresh1", cell=cells["cell1"], driver=driver, state_path=tmp_path)
        _service, node = apply_startup(plan, driver=driver, state_path=tmp_path)
    # then the conductor mapped it, its provider is in placement and in the zone's aggregate
    mapping = cell_selectors.host_mapping_get("fresh1")
    assert mapping is not None and mapping.cell_id == cells["cell1"].id
    assert _api(f"/resource_providers/{node.uuid}/inventories")["inventories"]["VCPU"]["total"] == 4
    assert _api(f"/resource_providers/{node.uuid}/aggregates", "1.19")["aggregates"] == [str(zone.uuid)]
    with target_cell(cells["cell1"]):
        node.refresh_from_db()
    assert node.mapped == 1
    # and its node reports the host's address (the hypervisor's host_ip)
    assert node.host_ip == "198.51.100.7"
    # and its new service was announced, as itself (service.create; no zone: the agent reads no API database)
    created = [r.payload for r in NotificationRecord.objects.filter(event_type="service.create")]
    assert [(c["publisher_id"], c["payload"]["nova_object.data"]["host"]) for c in created] == [
        ("nova-compute:fresh1", "fresh1")]
    assert created[0]["payload"]["nova_object.data"]["availability_zone"] is None


def _provider(name: str) -> str:
    rp = placement.provider_create(name=name)
    placement.inventories_set(rp=rp, inventories={"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}})
    return str(rp.uuid)


def test_allocations_go_back_from_the_migration_to_the_server_in_one_post(cells, requests_sent):
    source, dest = _provider("src"), _provider("dst")
    instance, migration = "1f7c0a52-0000-4000-8000-00000000000a", "1f7c0a52-0000-4000-8000-00000000000b"
    placement.allocations_put(consumer_uuid=migration, allocations={source: {"VCPU": 2, "MEMORY_MB": 512}},
                              project_id="p", user_id="u", consumer_type="MIGRATION")
    placement.allocations_put(consumer_uuid=instance, allocations={dest: {"VCPU": 4, "MEMORY_MB": 1024}},
                              project_id="p", user_id="u")
    with compute_agent(cells["cell1"]):
        client.allocations_back_to_server(instance_uuid=instance, migration_uuid=migration, project_id="p",
                                          user_id="u")
    assert ("POST", "/allocations") in requests_sent.sent
    assert _api(f"/allocations/{instance}")["allocations"] == {
        source: {"generation": placement.provider_get(uuid=source).generation,
                 "resources": {"VCPU": 2, "MEMORY_MB": 512}}}
    assert _api(f"/allocations/{migration}")["allocations"] == {}
    assert placement.provider_usages(rp=dest) == {"VCPU": 0, "MEMORY_MB": 0}


def test_a_migration_holding_nothing_leaves_the_server_with_nothing(cells):
    dest = _provider("dst")
    instance = "1f7c0a52-0000-4000-8000-00000000000c"
    placement.allocations_put(consumer_uuid=instance, allocations={dest: {"VCPU": 1}}, project_id="p", user_id="u")
    with compute_agent(cells["cell1"]):
        client.allocations_back_to_server(instance_uuid=instance, migration_uuid="no-such-migration",
                                          project_id="p", user_id="u")
        assert client.allocations_get(consumer_uuid=instance).allocations == {}
        # and deleting what is not there is no error
        assert client.allocations_delete(consumer_uuid=instance) is False


def test_allocations_put_and_get_carry_the_consumer_generation(cells):
    rp = _provider("one")
    consumer = "1f7c0a52-0000-4000-8000-00000000000d"
    with compute_agent(cells["cell1"]):
        client.allocations_put(consumer_uuid=consumer, allocations={rp: {"VCPU": 2}}, project_id="p", user_id="u",
                               consumer_generation=None)
        held = client.allocations_get(consumer_uuid=consumer)
        assert held.allocations == {rp: {"VCPU": 2}} and held.consumer_generation == 1
        with pytest.raises(session.ServiceCallFailed, match="409"):
            client.allocations_put(consumer_uuid=consumer, allocations={rp: {"VCPU": 3}}, project_id="p",
                                   user_id="u", consumer_generation=None)
        assert client.allocations_delete(consumer_uuid=consumer) is True
