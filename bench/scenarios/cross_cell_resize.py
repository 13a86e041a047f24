"""Cross-cell resize: a server booted in cell1 is resized into cell2 (cell1's hosts disabled, rule
``compute:servers:resize:cross_cell`` granted to the project, as the functional test does), then
confirmed; another one is resized and reverted. Everything runs in-process through the compute API
with eager tasks and the libvirt ``test:///default`` driver (``tests.cloud``), so one request carries
the whole conductor + source + destination flow.

Reports wall time per request and the control-plane time, i.e. the wall time less the image copy
(the source snapshot written by the driver plus its upload into the image store), and the SQL
statements per request and per move counted with ``CaptureQueriesContext`` on every database (the
API database and both cells)."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

DESCRIPTION = "cross-cell resize cell1 -> cell2 in-process: resize+confirm, resize+revert (time, SQL per move)"
RULE = "compute:servers:resize:cross_cell"
ROUNDS, QUICK_ROUNDS = 5, 1


def _enable_only(cloud: Any, cell: str) -> None:
    from cells.context import target_cell
    from hosts.models import Service

    for name in ("cell1", "cell2"):
        with target_cell(cloud.cells[name]):
            Service.objects.update(disabled=name != cell)


class ImageCopyClock:
    """Seconds spent copying the image: the drivers' ``snapshot`` and the image store upload."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - started
        return timed


@contextmanager
def image_copy_clock(cloud: Any) -> Iterator[ImageCopyClock]:
    from images import services as image_services

    clock = ImageCopyClock()
    original_activate = image_services.image_activate_from_file
    originals = {host: driver.snapshot for host, driver in cloud.drivers.items()}
    image_services.image_activate_from_file = clock.wrap(original_activate)  # type: ignore[assignment]
    for host, driver in cloud.drivers.items():
        driver.snapshot = clock.wrap(originals[host])
    try:
        yield clock
    finally:
        image_services.image_activate_from_file = original_activate  # type: ignore[assignment]
        for host, driver in cloud.drivers.items():
            driver.snapshot = originals[host]


def _measured(cloud: Any, call: Callable[[], Any], expect: int) -> dict[str, Any]:
    from bench.env import capture_queries

    with image_copy_clock(cloud) as clock, capture_queries() as queries:
        started = time.perf_counter()
        response = call()
        wall = time.perf_counter() - started
    assert response.status_code == expect, (response.status_code, response.content[:2000])
    return {"wall_ms": wall * 1000, "image_copy_ms": clock.seconds * 1000,
            "control_ms": (wall - clock.seconds) * 1000, "sql": queries.total, "sql_by_db": queries.by_alias}


def _one_move(cloud: Any, client: Any, flavor: Any, name: str, finish: str) -> dict[str, Any]:
    """Boot ``name`` in cell1, resize it into cell2, then ``finish`` (confirmResize/revertResize)."""
    _enable_only(cloud, "cell1")
    server = cloud.create_server(client, name)
    assert cloud.cell_of(server["id"]) == "cell1", "the server should boot in cell1"
    _enable_only(cloud, "cell2")
    resize = _measured(cloud, lambda: cloud.action(client, server["id"], {"resize": {"flavorRef": flavor.flavorid}}),
                       202)
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "VERIFY_RESIZE" and cloud.cell_of(server["id"]) == "cell2", shown.get("fault")
    done = _measured(cloud, lambda: cloud.action(client, server["id"], {finish: None}),
                     204 if finish == "confirmResize" else 202)
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ACTIVE", shown.get("fault")
    assert cloud.cell_of(server["id"]) == ("cell2" if finish == "confirmResize" else "cell1")
    return {"resize": resize, "finish": done}


def _summary(moves: list[dict[str, Any]]) -> dict[str, Any]:
    def med(part: str, key: str) -> float:
        return float(statistics.median(m[part][key] for m in moves))

    total_control = [m["resize"]["control_ms"] + m["finish"]["control_ms"] for m in moves]
    total_sql = [m["resize"]["sql"] + m["finish"]["sql"] for m in moves]
    return {
        "rounds": len(moves),
        "resize_wall_ms": med("resize", "wall_ms"), "resize_control_ms": med("resize", "control_ms"),
        "resize_image_copy_ms": med("resize", "image_copy_ms"), "resize_sql": med("resize", "sql"),
        "finish_wall_ms": med("finish", "wall_ms"), "finish_control_ms": med("finish", "control_ms"),
        "finish_sql": med("finish", "sql"),
        "move_control_ms": float(statistics.median(total_control)), "move_sql": float(statistics.median(total_sql)),
        "move_sql_max": max(total_sql),
        "sql_by_db": {part: moves[-1][part]["sql_by_db"] for part in ("resize", "finish")},
    }


def run(env: Any) -> dict[str, Any]:
    from cloudcore.core import policy
    from identity.models import Project
    from tests.cloud import build_cloud

    rounds = QUICK_ROUNDS if env.quick else ROUNDS
    # Room for every round's servers (the moved copies stay) on the four hosts.
    cloud = build_cloud(env.cells, vcpus=64, memory_mb=65536, disk_gb=400)
    try:
        client = cloud.member()
        policy.grant(RULE, project=Project.objects.get(name="demo"))
        bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
        confirms = [_one_move(cloud, client, bigger, f"confirm-{i}", "confirmResize") for i in range(rounds)]
        reverts = [_one_move(cloud, client, bigger, f"revert-{i}", "revertResize") for i in range(rounds)]
    finally:
        cloud.teardown()
    result = {
        "rounds": rounds, "confirm": _summary(confirms), "revert": _summary(reverts),
        "method": "in-process through the compute API (DRF test client), eager Celery tasks, libvirt test:///default "
                  "driver per host (tests.cloud), image-backed m1.tiny -> 2 vCPU/1 GiB/2 GB flavor, one port on "
                  "demo-net; image copy = driver snapshot + image store upload, timed and subtracted",
    }
    print(f"   {rounds} round(s) each; medians; control = wall time less image copy")
    print(f"   {'move':>16} {'resize ms':>10} {'finish ms':>10} {'control ms':>11} {'img copy ms':>12} "
          f"{'SQL resize':>11} {'SQL finish':>11} {'SQL/move':>9}")
    for label, key in (("resize+confirm", "confirm"), ("resize+revert", "revert")):
        r = result[key]
        print(f"   {label:>16} {r['resize_wall_ms']:>10.1f} {r['finish_wall_ms']:>10.1f} {r['move_control_ms']:>11.1f} "
              f"{r['resize_image_copy_ms']:>12.2f} {r['resize_sql']:>11.0f} {r['finish_sql']:>11.0f} "
              f"{r['move_sql']:>9.0f}", flush=True)
    return result
