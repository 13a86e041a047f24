"""Placement usage over time: the periodic audit samples it (whole cloud and per cell, bounded),
and the overview draws it as an inline SVG chart with a point per sample."""
from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from conductor.tasks import servers_periodic_task
from scheduling.models import PlacementUsageSample
from scheduling.services.usage_samples import placement_usage_sample_take, placement_usage_samples

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def test_the_periodic_audit_samples_placement_usage(cloud: Any) -> None:
    # given a server of m1.tiny (1 vCPU, 512 MB, 1 GB) in cell1
    cloud.create_server(cloud.member(), "s1", availability_zone="az1")
    # when the beat's periodic task runs
    assert servers_periodic_task()["usage_sampled"] == 1
    # then one sample holds the cloud's and each cell's used amount and capacity
    (sample,) = placement_usage_samples()
    assert sample.usage["cloud"]["VCPU"][0] == 1 and sample.usage["cloud"]["VCPU"][1] >= 16
    assert sample.usage["cell1"]["VCPU"][0] == 1 and sample.usage["cell2"]["VCPU"][0] == 0
    assert sample.usage["cloud"]["MEMORY_MB"][0] == 512 and sample.usage["cloud"]["DISK_GB"][0] == 1
    # and a second run within the interval takes no other sample
    assert servers_periodic_task()["usage_sampled"] == 0
    assert PlacementUsageSample.objects.count() == 1


def test_samples_are_bounded(cloud: Any, settings: Any) -> None:
    settings.PLACEMENT_USAGE_SAMPLES_KEPT = 3
    start = timezone.now()
    for minute in range(5):
        assert placement_usage_sample_take(now=start + timedelta(minutes=10 * minute)) is not None
    kept = placement_usage_samples()
    assert [s.taken_at for s in kept] == [start + timedelta(minutes=10 * m) for m in (2, 3, 4)]


def test_the_overview_draws_a_point_per_sample(cloud: Any) -> None:
    start = timezone.now() - timedelta(hours=1)
    placement_usage_sample_take(now=start)
    cloud.create_server(cloud.member(), "s1", availability_zone="az2")
    placement_usage_sample_take(now=start + timedelta(minutes=30))
    client = login("admin", "admin", ["admin"])
    # when the admin looks at the overview
    body = client.get("/").content.decode()
    # then each resource class has a used and a capacity line with two points, the used one rising
    chart = body.split('id="usage-chart"')[1].split("</section>")[0]
    assert chart.count("<svg") == 3 and chart.count('<circle class="point"') == 6
    vcpu = chart.split('data-resource="VCPU"')[1].split("</figure>")[0]
    used = re.search(r'<polyline class="used" points="([^"]+)"', vcpu).group(1).split()
    assert len(used) == 2 and float(used[1].split(",")[1]) < float(used[0].split(",")[1])
    assert "1 / 16" in vcpu
    # and a cell's scope shows that cell's usage only
    cell = client.get("/?usage=cell1").content.decode().split('id="usage-chart"')[1].split("</section>")[0]
    assert "0 / 8" in cell.split('data-resource="VCPU"')[1].split("</figure>")[0]


def test_the_overview_says_when_there_is_nothing_to_draw(cloud: Any) -> None:
    body = login("admin", "admin", ["admin"]).get("/").content.decode()
    assert "No usage samples yet" in body
