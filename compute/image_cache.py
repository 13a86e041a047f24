"""A compute host's part of an aggregate's image pre-caching (``POST /os-aggregates/{id}/images``,
2.81; ``conductor.image_cache`` asks each host of the aggregate): each image is fetched into the
host's image cache ahead of the spawns that will want it, so that they need not wait for it.

Per image the host answers as Nova's do: ``cached`` (fetched now), ``existing`` (it was there),
``unsupported`` (the driver keeps no image cache) or ``error`` (logged; the others go on). A
pre-cached image is an ordinary entry of the cache: the cache's cleaner removes it once no disk
has been based on it for ``CLOUDCORE_REMOVE_UNUSED_ORIGINAL_MINIMUM_AGE_SECONDS``, as Nova's
image cache manager ages pre-cached images with the rest.
"""
from __future__ import annotations

import logging

from .build import image_meta
from .drivers import driver_for

log = logging.getLogger(__name__)


def cache_images(*, host: str, image_ids: list[str]) -> dict[str, str]:
    """Fetch ``image_ids`` into ``host``'s image cache, one after the other; what became of each."""
    cache = getattr(driver_for(host), "cache_image", None)
    results: dict[str, str] = {}
    for image_id in image_ids:
        if cache is None:
            results[image_id] = "unsupported"
            continue
        try:
            meta = image_meta(image_id)
            results[image_id] = "cached" if cache(image_meta=meta) else "existing"
        except Exception as exc:
            log.error("could not cache image %s on %s: %s", image_id, host, exc)
            results[image_id] = "error"
    log.info("image pre-caching on %s: %s", host, results)
    return results
