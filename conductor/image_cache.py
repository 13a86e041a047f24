"""An aggregate's image pre-caching (``POST /os-aggregates/{id}/images``, 2.81; Nova's
``cache_images``): the conductor asks each host of the aggregate, one after the other (Nova's
default ``precache_concurrency`` of 1), to fetch the images into its image cache
(``compute.rpc.cache_images``), and tells how it went in notifications:
``aggregate.cache_images.start``, one ``aggregate.cache_images.progress`` per host (the images it
holds now, those it could not cache, and ``index`` of ``total`` hosts), then
``aggregate.cache_images.end``.

A host whose compute service is down (or that is mapped to no cell) is skipped: its images count
as failed in its progress notification. A host that cannot be reached or does not answer in time
counts every image as failed, and the others go on."""
from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from cells.context import target_cell
from cells.selectors import host_mappings
from cloudcore.core import notifications
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError
from compute import rpc as compute_rpc
from hosts.selectors import service_for_host
from hosts.services.servicegroup import service_is_up
from scheduling.services import aggregates

log = logging.getLogger(__name__)

#: what a host answers for an image it holds now (the others count as failed)
CACHED = ("cached", "existing")


def cache_images(ctx: RequestContext, *, aggregate_id: int, image_ids: list[str]) -> None:
    """Ask every host of the aggregate to cache ``image_ids`` (see the module doc)."""
    try:
        aggregate = aggregates.aggregate_get(aggregate_id)
    except CloudcoreError:
        log.info("aggregate %s is gone: its image pre-caching is dropped", aggregate_id)
        return
    whole = aggregates.aggregate_payload(aggregate)
    hosts = list(whole["hosts"])
    _notify("start", whole, "AggregatePayload", "1.1")
    mappings = host_mappings(hosts)
    tally: Counter[str] = Counter()
    for index, host in enumerate(hosts, start=1):
        result = _cache_on(ctx, host, mappings.get(host), image_ids)
        tally.update(result.values())
        _notify("progress", {
            "id": whole["id"], "uuid": whole["uuid"], "name": whole["name"], "host": host,
            "images_cached": [i for i, status in result.items() if status in CACHED],
            "images_failed": [i for i, status in result.items() if status not in CACHED],
            "index": index, "total": len(hosts)}, "AggregateCachePayload", "1.0")
    log.info("image pre-caching of %s on the %d hosts of aggregate %s: %s", ",".join(image_ids), len(hosts),
             whole["name"], dict(tally))
    _notify("end", whole, "AggregatePayload", "1.1")


def _cache_on(ctx: RequestContext, host: str, mapping: Any, image_ids: list[str]) -> dict[str, str]:
    """What ``host`` answers for each image (``skipped`` when it is down, ``error`` when it does
    not answer)."""
    if mapping is None:
        return dict.fromkeys(image_ids, "skipped")
    with target_cell(mapping.cell):
        service = service_for_host(host)
        up = service is not None and service_is_up(service)
    if not up:
        log.info("skipping the image pre-caching on %s: its compute service is down", host)
        return dict.fromkeys(image_ids, "skipped")
    try:
        answer = compute_rpc.cache_images(ctx=ctx, host=host, image_ids=image_ids)
    except CloudcoreError as exc:  # not delivered, no answer in time, or failed
        log.warning("image pre-caching on %s failed: %s", host, exc)
        return dict.fromkeys(image_ids, "error")
    return {image_id: answer.get(image_id, "error") for image_id in image_ids}


def _notify(phase: str, payload: dict[str, Any], payload_name: str, version: str) -> None:
    notifications.notify(f"aggregate.cache_images.{phase}", payload, payload_name=payload_name, version=version,
                         publisher_id=notifications.publisher("nova-conductor"))
