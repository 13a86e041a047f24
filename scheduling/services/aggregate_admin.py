"""Host aggregates on behalf of an actor (``/os-aggregates``): the policy entry of the
aggregate writes.

Each function checks its ``os_compute_api:os-aggregates:*`` rule first (Nova checks it before it
even parses the id), then resolves the aggregate id (an integer, 400 otherwise; 404 when no live
aggregate has it) and calls the operation of ``aggregates``, which keeps the aggregate, its zone
and the placement aggregates in step. In-process callers that act as the deployment itself (the
demo cloud, tests) call ``aggregates`` directly.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize
from conductor import rpc as conductor_rpc
from images.services import image_get

from ..models import Aggregate
from . import aggregates

UNSET: Any = aggregates.UNSET


def _rule(action: str) -> str:
    return f"os_compute_api:os-aggregates:{action}"


def _integer_id(aggregate_id: str) -> int:
    """A URL's aggregate id as an integer (any, negative ones too: then simply not found);
    ``Invalid`` (400) otherwise."""
    try:
        return int(aggregate_id)
    except ValueError:
        raise Invalid("Invalid input received: id must be an integer.") from None


def aggregate_by_api_id(aggregate_id: str) -> Aggregate:
    """The live aggregate of a URL id: ``Invalid`` (400) unless it is an integer,
    ``AggregateNotFound`` (404)."""
    return aggregates.aggregate_get(_integer_id(aggregate_id))


def aggregate_create(*, actor: RequestContext, name: str, availability_zone: str | None = None) -> Aggregate:
    """Create an aggregate (a zone when ``availability_zone``). Raises ``PolicyNotAuthorized``
    (``...:create``), ``AggregateNameExists`` (409)."""
    authorize(actor, _rule("create"))
    return aggregates.aggregate_create(name=name, availability_zone=availability_zone)


def aggregate_update(*, actor: RequestContext, aggregate_id: str, name: str | None = None,
                     availability_zone: str | None = UNSET) -> Aggregate:
    """Rename and/or re-zone an aggregate (see ``aggregates.aggregate_update``). Raises
    ``PolicyNotAuthorized`` (``...:update``), ``Invalid``, ``AggregateNotFound``, and what the
    update raises."""
    authorize(actor, _rule("update"))
    return aggregates.aggregate_update(aggregate=aggregate_by_api_id(aggregate_id), name=name,
                                       availability_zone=availability_zone)


def aggregate_delete(*, actor: RequestContext, aggregate_id: str) -> None:
    """Soft-delete an empty aggregate. Raises ``PolicyNotAuthorized`` (``...:delete``),
    ``Invalid``, ``AggregateNotFound``, ``InvalidAggregateActionDelete`` (409) while it has hosts."""
    authorize(actor, _rule("delete"))
    aggregates.aggregate_delete(aggregate=aggregate_by_api_id(aggregate_id))


def aggregate_add_host(*, actor: RequestContext, aggregate_id: str, host: str) -> Aggregate:
    """Add a compute host. Raises ``PolicyNotAuthorized`` (``...:add_host``), ``Invalid``,
    ``AggregateNotFound``, and what ``aggregates.aggregate_add_host`` raises."""
    authorize(actor, _rule("add_host"))
    return aggregates.aggregate_add_host(aggregate=aggregate_by_api_id(aggregate_id), host=host)


def aggregate_remove_host(*, actor: RequestContext, aggregate_id: str, host: str) -> Aggregate:
    """Remove a compute host. Raises ``PolicyNotAuthorized`` (``...:remove_host``), ``Invalid``,
    ``AggregateNotFound``, and what ``aggregates.aggregate_remove_host`` raises."""
    authorize(actor, _rule("remove_host"))
    return aggregates.aggregate_remove_host(aggregate=aggregate_by_api_id(aggregate_id), host=host)


def aggregate_set_metadata(*, actor: RequestContext, aggregate_id: str,
                           metadata: Mapping[str, str | None]) -> Aggregate:
    """Merge metadata (None deletes a key). Raises ``PolicyNotAuthorized`` (``...:set_metadata``),
    ``Invalid``, ``AggregateNotFound``, and what ``aggregates.aggregate_set_metadata`` raises."""
    authorize(actor, _rule("set_metadata"))
    return aggregates.aggregate_set_metadata(aggregate=aggregate_by_api_id(aggregate_id), metadata=metadata)


class DuplicateImages(Invalid):
    message = "Duplicate images in request"


class ImageToCacheNotFound(Invalid):
    message = "Image %(image_id)s could not be found."


def aggregate_cache_images(*, actor: RequestContext, aggregate_id: str, image_ids: list[str]) -> None:
    """Ask the hosts of the aggregate to fetch ``image_ids`` into their image caches (2.81, Nova's
    image pre-caching; ``conductor.image_cache`` does it in the background), in Nova's order of
    checks. Raises ``PolicyNotAuthorized`` (``compute:aggregates:images``), ``Invalid`` (an id
    that is not an integer), ``DuplicateImages``, ``AggregateNotFound`` (404),
    ``ImageToCacheNotFound`` (400: an image the actor cannot see)."""
    authorize(actor, "compute:aggregates:images", {})
    number = _integer_id(aggregate_id)
    if len(set(image_ids)) != len(image_ids):
        raise DuplicateImages()
    aggregate = aggregates.aggregate_get(number)
    for image_id in image_ids:
        try:
            image_get(actor, image_id)
        except NotFound:
            raise ImageToCacheNotFound(image_id=image_id) from None
    conductor_rpc.cache_images(ctx=actor, aggregate_id=aggregate.id, image_ids=image_ids)
