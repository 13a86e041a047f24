"""The trace of each scheduling decision (issue 22): clouds with known shortfalls, the exact trace,
the words a user reads, the record kept with the request and the notification's summary."""
from __future__ import annotations

import pytest

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from cloudcore.core.models import NotificationRecord
from scheduling.models import SchedulingTraceRecord
from scheduling.placement import services as placement
from scheduling.scheduler import select_destinations
from scheduling.services import aggregates
from scheduling.services.traces import trace_record_get
from scheduling.trace import trace_text
from tests.conftest import ALL_DATABASES
from tests.functional.scheduling.test_scheduler import spec

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

CTX = RequestContext(user_id="u1", project_id="p1", request_id="req-trace-1")


def flavor(memory_mb=2048, vcpus=2, root_gb=10, extra_specs=None):
    return {"vcpus": vcpus, "memory_mb": memory_mb, "root_gb": root_gb, "ephemeral_gb": 0, "swap": 0,
            "extra_specs": extra_specs or {}}


def failed_trace(request_spec, uuids=("i1",)):
    with pytest.raises(NoValidHost) as raised:
        select_destinations(CTX, request_spec, list(uuids), return_alternates=True)
    return raised.value, raised.value.trace


def test_ram_short_everywhere_names_the_shortfall_and_the_nearest_host(compute_host):
    # given two hosts, the larger with 4096 MB
    compute_host("small", cell="cell1", memory_mb=2048)
    compute_host("large", cell="cell2", memory_mb=4096)
    # when a server asks for 8192 MB
    exc, trace = failed_trace(spec(flavor=flavor(memory_mb=8192)))
    # then the user reads the shortfall in words, without a host name
    assert str(exc) == ("No valid host was found. There are not enough hosts available. "
                        "Not enough RAM: needs 8192 MB, the most free on any host is 4096 MB.")
    assert "large" not in str(exc)
    # and the trace says placement found nothing, why, and which host was nearest
    shortfall = trace["placement"]["shortfall"]
    assert trace["placement"]["candidates"] == 0 and trace["result"] == "no_valid_host"
    assert shortfall["providers"] == 2
    assert shortfall["resources"] == {"MEMORY_MB": {"requested": 8192, "short_on": 2, "most_free": 4096}}
    assert [(n["host"], n["short"]) for n in shortfall["nearest"]] == [("large", {"MEMORY_MB": 4096}),
                                                                       ("small", {"MEMORY_MB": 6144})]
    assert trace["filters"] == [] and trace["selections"] == []
    # and it is kept with the request
    record = trace_record_get(instance_uuid="i1")
    assert record.request_id == "req-trace-1" and record.result == "no_valid_host"
    assert record.trace["placement"]["shortfall"]["resources"]["MEMORY_MB"]["most_free"] == 4096


def test_a_disabled_host_is_named_by_the_compute_filter(compute_host):
    # given a disabled host with room and an enabled one without
    compute_host("off", cell="cell1", memory_mb=65536, disabled=True)
    compute_host("on", cell="cell2", memory_mb=4096)
    exc, trace = failed_trace(spec(flavor=flavor(memory_mb=8192)))
    # then placement offered the disabled host, and ComputeFilter took it out, saying why
    assert trace["placement"] == {"candidates": 1}
    compute = trace["filters"][0]
    assert compute == {"name": "ComputeFilter", "in": 1, "out": 1, "more": 0,
                       "rejected": [{"host": "off", "node": compute["rejected"][0]["node"],
                                     "reason": "service disabled"}]}
    assert str(exc).endswith("The hosts with room are disabled or down.")
    assert "off: ComputeFilter: service disabled" in trace_text(trace)


def test_availability_zone_mismatch_names_the_zones(compute_host):
    # given the only host with room is in az1
    compute_host("a1", cell="cell1", memory_mb=16384)
    compute_host("n1", cell="cell2", memory_mb=1024)
    az = aggregates.aggregate_create(name="az1-agg", availability_zone="az1")
    aggregates.aggregate_add_host(aggregate=az, host="a1")
    # when the default zone is asked for
    exc, trace = failed_trace(spec(availability_zone="nova", flavor=flavor(memory_mb=8192)))
    # then the zone filter rejected it with both zones named
    zone_step = next(f for f in trace["filters"] if f["name"] == "AvailabilityZoneFilter")
    assert [(r["host"], r["reason"]) for r in zone_step["rejected"]] == [("a1", "in az1, nova requested")]
    assert str(exc).endswith("No host with room is in the requested availability zone.")
    # and a zone that does not exist is said so
    exc, trace = failed_trace(spec(availability_zone="nowhere"))
    assert trace["placement"]["shortfall"] == {"unknown_zone": "nowhere"}
    assert str(exc).endswith("Availability zone nowhere has no hosts.")


def test_missing_trait(compute_host):
    # given hosts with room but none with the trait the flavor requires
    compute_host("a", cell="cell1")
    compute_host("b", cell="cell2")
    placement.trait_create(name="CUSTOM_GPU")
    exc, trace = failed_trace(spec(flavor=flavor(extra_specs={"trait:CUSTOM_GPU": "required"})))
    shortfall = trace["placement"]["shortfall"]
    assert shortfall["traits_missing"] == {"CUSTOM_GPU": 2} and shortfall["resources"] == {}
    assert trace["request"]["required_traits"] == ["CUSTOM_GPU"]
    assert str(exc).endswith("No host has the required trait CUSTOM_GPU.")
    assert [n["missing_traits"] for n in shortfall["nearest"]] == [["CUSTOM_GPU"], ["CUSTOM_GPU"]]


def test_a_full_cell_only_counts_its_own_hosts(compute_host, cells):
    # given cell1 full (2 x 2048 MB) and cell2 with room
    compute_host("c1a", cell="cell1", memory_mb=2048)
    compute_host("c1b", cell="cell1", memory_mb=2048)
    compute_host("c2a", cell="cell2", memory_mb=65536)
    # when the request must land in cell1
    exc, trace = failed_trace(spec(flavor=flavor(memory_mb=4096), requested_destination={"cell": "cell1"}))
    # then only cell1's providers were looked at, both short
    shortfall = trace["placement"]["shortfall"]
    assert shortfall["providers"] == 2
    assert shortfall["resources"] == {"MEMORY_MB": {"requested": 4096, "short_on": 2, "most_free": 2048}}
    assert {n["host"] for n in shortfall["nearest"]} == {"c1a", "c1b"}
    assert "needs 4096 MB, the most free on any host is 2048 MB" in str(exc)


def test_a_successful_decision_records_weights_choice_alternates_and_notifies(compute_host):
    compute_host("big", cell="cell1", memory_mb=32768)
    compute_host("mid", cell="cell1", memory_mb=16384)
    compute_host("off", cell="cell1", memory_mb=65536, disabled=True)
    [selections] = select_destinations(CTX, spec(), ["i9"], return_alternates=True)
    assert selections[0].service_host == "big"
    assert SchedulingTraceRecord.objects.filter(instance_uuid="i9").count() == 1
    trace = trace_record_get(instance_uuid="i9").trace
    assert trace["result"] == "selected" and trace["placement"] == {"candidates": 3}
    assert [(f["name"], f["in"], f["out"]) for f in trace["filters"]][:2] == [("ComputeFilter", 3, 1),
                                                                              ("AvailabilityZoneFilter", 2, 0)]
    assert [w["host"] for w in trace["weights"]] == ["big", "mid"]
    assert trace["weights"][0]["scores"]["RAMWeigher"] == 1.0 and trace["weights"][1]["scores"]["RAMWeigher"] == 0.0
    assert trace["selections"] == [{"instance_uuid": "i9", "host": "big", "node": selections[0].nodename,
                                    "cell": "cell1", "alternates": [{"host": "mid", "node": selections[1].nodename}]}]
    end = NotificationRecord.objects.filter(event_type="scheduler.select_destinations.end").get()
    summary = end.payload["payload"]["nova_object.data"]["scheduling_trace"]
    assert summary["chosen"] == [{"host": "big", "alternates": ["mid"]}] and summary["candidates"] == 3


def test_rejected_hosts_are_bounded(compute_host, settings):
    settings.SCHEDULER_TRACE_HOSTS = 2
    for index in range(4):
        compute_host(f"off{index}", cell="cell1", disabled=True)
    _exc, trace = failed_trace(spec())
    step = trace["filters"][0]
    assert (step["out"], len(step["rejected"]), step["more"]) == (4, 2, 2)
    assert len(trace["placement"]) == 1 and "... and 2 more" in trace_text(trace)


def test_a_record_is_written_without_a_sequence_write_on_sqlite(compute_host):
    """The record's id is SQLite's rowid without AUTOINCREMENT (``RowidAutoField``): its
    transaction writes no ``sqlite_sequence`` row; ids still follow the records' order."""
    from django.db import connections, router

    compute_host("small", cell="cell1", memory_mb=2048)
    for uuid in ("i1", "i2"):
        failed_trace(spec(flavor=flavor(memory_mb=8192)), uuids=(uuid,))
    first, second = (trace_record_get(instance_uuid=uuid) for uuid in ("i1", "i2"))
    assert first.id < second.id
    connection = connections[router.db_for_write(SchedulingTraceRecord)]
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_sequence WHERE name = %s", [SchedulingTraceRecord._meta.db_table])
        assert cursor.fetchone() == (0,)
