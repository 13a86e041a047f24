"""Filters, weighers and request parsing on plain host states (no database)."""
from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.utils import timezone

from scheduling.filters import (
    AggregateInstanceExtraSpecsFilter,
    AvailabilityZoneFilter,
    ComputeFilter,
    ImagePropertiesFilter,
    RequestedDestinationFilter,
    SourceCellFilter,
    extra_spec_matches,
    filter_hosts,
)
from scheduling.host_state import HostState, RequestView
from scheduling.placement.services import capacity
from scheduling.weights import CrossCellWeigher, RAMWeigher, normalize, weigh_hosts


def host(name="h1", cell="cell-a", ram=(4096, 0), disk=(100, 0), vcpu=(8, 0), **kw):
    service = kw.pop("service", SimpleNamespace(disabled=False, forced_down=False, last_seen_up=timezone.now()))
    return HostState(host=name, nodename=kw.pop("nodename", name), uuid=f"uuid-{name}", cell_uuid=cell,
                     service=service, resources={
                         "MEMORY_MB": {"capacity": ram[0], "used": ram[1]},
                         "DISK_GB": {"capacity": disk[0], "used": disk[1]},
                         "VCPU": {"capacity": vcpu[0], "used": vcpu[1]}}, **kw)


def req(**spec):
    return RequestView(spec)


def test_capacity_math():
    assert capacity(16, 0, 4.0) == 64
    assert capacity(4, 1, 2.0) == 6
    assert capacity(16384, 512, 1.5) == 23808


def test_resources_from_flavor():
    flavor = {"vcpus": 2, "memory_mb": 1024, "root_gb": 10, "ephemeral_gb": 5, "swap": 1500,
              "extra_specs": {"resources:VGPU": "1", "resources:VCPU": "0"}}
    assert req(flavor=flavor).resources() == {"MEMORY_MB": 1024, "DISK_GB": 17, "VGPU": 1}
    assert req(flavor=flavor, is_bfv=True).resources()["DISK_GB"] == 7


def test_traits_from_flavor_and_image():
    view = req(flavor={"extra_specs": {"trait:HW_CPU_X86_AVX2": "required", "trait:CUSTOM_X": "forbidden"}},
               image={"properties": {"trait:STORAGE_DISK_SSD": "required", "traits_required": ["CUSTOM_Y"]}})
    assert view.traits() == ({"HW_CPU_X86_AVX2", "STORAGE_DISK_SSD", "CUSTOM_Y"}, {"CUSTOM_X"})


@pytest.mark.parametrize(("fields", "passes"), [
    ({"disabled": False, "forced_down": False, "age": 0}, True),
    ({"disabled": True, "forced_down": False, "age": 0}, False),
    ({"disabled": False, "forced_down": True, "age": 0}, False),
    ({"disabled": False, "forced_down": False, "age": 3600}, False),
    (None, False),
])
def test_compute_filter(fields, passes):
    # the heartbeat is stamped when the test runs, not when it is collected (a long suite ages it)
    service = None if fields is None else SimpleNamespace(
        disabled=fields["disabled"], forced_down=fields["forced_down"],
        last_seen_up=timezone.now() - timedelta(seconds=fields["age"]))
    assert ComputeFilter().host_passes(host(service=service), req()) is passes


def test_availability_zone_filter():
    h = host(availability_zone="az1")
    assert AvailabilityZoneFilter().host_passes(h, req(availability_zone="az1"))
    assert not AvailabilityZoneFilter().host_passes(h, req(availability_zone="nova"))
    assert AvailabilityZoneFilter().host_passes(h, req(availability_zone=None))
    assert AvailabilityZoneFilter().host_passes(h, req(availability_zone="az1:h1"))


def test_requested_destination_and_source_cell_filters():
    h = host(name="h1", cell="c1", nodename="n1")
    assert RequestedDestinationFilter().host_passes(h, req(requested_destination={"host": "h1", "node": "n1"}))
    assert not RequestedDestinationFilter().host_passes(h, req(requested_destination={"node": "n2"}))
    assert not RequestedDestinationFilter().host_passes(h, req(requested_destination={"cell": {"uuid": "c2"}}))
    assert not SourceCellFilter().host_passes(h, req(instance_cell_uuid="c2"))
    assert SourceCellFilter().host_passes(h, req(instance_cell_uuid="c2", allow_cross_cell_move=True))


def test_image_properties_filter():
    h = host(hypervisor_type="QEMU", cpu_arch="x86_64")
    assert ImagePropertiesFilter().host_passes(h, req(image={"properties": {"hw_architecture": "amd64"}}))
    assert not ImagePropertiesFilter().host_passes(h, req(image={"properties": {"architecture": "aarch64"}}))
    assert ImagePropertiesFilter().host_passes(h, req(image={"properties": {"img_hv_type": "kvm"}}))
    assert not ImagePropertiesFilter().host_passes(h, req(image={"hypervisor_type": "xen"}))


def test_aggregate_instance_extra_specs_filter_and_operators():
    h = host(aggregate_metadata={"ssd": {"true"}, "cpus": {"16"}})
    flt = AggregateInstanceExtraSpecsFilter()
    assert flt.host_passes(h, req(flavor={"extra_specs": {"aggregate_instance_extra_specs:ssd": "true",
                                                           "hw:cpu_policy": "dedicated"}}))
    assert not flt.host_passes(h, req(flavor={"extra_specs": {"aggregate_instance_extra_specs:ssd": "false"}}))
    assert not flt.host_passes(h, req(flavor={"extra_specs": {"gpu": "yes"}}))
    assert extra_spec_matches("16", ">= 8") and not extra_spec_matches("4", "= 8")
    assert extra_spec_matches("b", "<or> a <or> b") and extra_spec_matches("abc", "<in> b")
    assert extra_spec_matches("x", "s== x")


def test_filter_hosts_ignore_and_force_bypass_filters():
    disabled = SimpleNamespace(disabled=True, forced_down=False, last_seen_up=timezone.now())
    hosts = [host("a"), host("b", service=disabled), host("c")]
    assert [h.host for h in filter_hosts(hosts, req(ignore_hosts=["A"]))] == ["c"]
    assert [h.host for h in filter_hosts(hosts, req(force_hosts=["b"]))] == ["b"]
    assert filter_hosts(hosts, req(force_hosts=["zzz"])) == []


def test_normalize_and_ram_weigher_spreads():
    assert normalize([1, 1]) == [0.0, 0.0]
    assert normalize([0, 5, 10]) == [0.0, 0.5, 1.0]
    hosts = [host("small", ram=(4096, 0)), host("big", ram=(8192, 0)), host("used", ram=(8192, 6000))]
    assert [h.host for h in weigh_hosts(hosts, req(), [RAMWeigher()])] == ["big", "small", "used"]


@pytest.mark.parametrize(("multiplier", "first"), [(1000000.0, "src"), (-1000000.0, "other")])
def test_cross_cell_weigher_stays_or_drains(settings, multiplier, first):
    settings.CROSS_CELL_MOVE_WEIGHT_MULTIPLIER = multiplier
    hosts = [host("other", cell="c2", ram=(65536, 0)), host("src", cell="c1", ram=(1024, 0))]
    assert weigh_hosts(hosts, req(instance_cell_uuid="c1"))[0].host == first
    # not a move: the weigher gives nothing, RAM decides
    assert CrossCellWeigher().raw(hosts[1], req()) == 0.0
    assert weigh_hosts(hosts, req())[0].host == "other"


def test_host_state_fits_and_consume():
    h = host(vcpu=(2, 0))
    shared = h.resources  # as placement's provider copy hands it to every request
    assert h.fits({"VCPU": 2}) and not h.fits({"VCPU": 3}) and not h.fits({"VGPU": 1})
    h.consume({"VCPU": 2})
    assert not h.fits({"VCPU": 1})
    # what the host state was given is left as it was (the next request reads it again)
    assert shared["VCPU"] == {"capacity": 2, "used": 0} and h.resources["VCPU"]["used"] == 2
