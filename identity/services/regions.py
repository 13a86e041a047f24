"""Keystone regions (``/v3/regions``): the cloud's own region and those operators register.

The cloud's own region (``catalog.REGION``, the region of every endpoint of the cloud's own
catalog) always exists and is listed first; it is no row, and changing or deleting it is refused
(403: it holds the cloud's endpoints, which is also why Keystone would refuse to delete it). The
others are ``Region`` rows. A region may name a parent (``parent_region_id``): it must exist
(404 otherwise, as Keystone) and an update may not make a region its own ancestor (400, Keystone's
``CircularRegionHierarchyError``). Deleting a region deletes its child regions with it, as Keystone
does, unless it or one of them has endpoints (403, Keystone's ``RegionDeletionError``).

Reading regions is for every authenticated user (``identity:get_region``,
``identity:list_regions``); writing them for cloud admins (``identity:create_region``,
``identity:update_region``, ``identity:delete_region``), Keystone's defaults. Each function checks
its rule first.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize

from ..models import Endpoint, Region, new_id
from .catalog import REGION

#: the length of ``Region.id`` (Keystone's region id column)
MAX_REGION_ID_LENGTH = 255

#: ``region_list``'s ``parent_region_id`` when the caller does not filter on it
ANY_PARENT: Any = object()


class RegionNotFound(NotFound):
    message = "Could not find region: %(region_id)s."


class RegionConflict(Conflict):
    message = "Conflict occurred attempting to store region - Duplicate ID, %(region_id)s."


class CircularRegionHierarchy(Invalid):
    message = "The specified parent region %(parent_region_id)s would create a circular region hierarchy."


class RegionDeletionError(Forbidden):
    message = "Unable to delete region %(region_id)s because it or its child regions have associated endpoints."


class OwnRegionUnchangeable(Forbidden):
    message = "Region %(region_id)s is this cloud's own region; it cannot be changed."


def own_region() -> Region:
    """The cloud's own region (never saved)."""
    return Region(id=REGION, description="", parent_region_id=None, extra={})


def is_own(region_id: str) -> bool:
    return region_id == REGION


def region_get(region_id: str) -> Region:
    """The region ``region_id`` (no policy: for other services' checks). Raises ``RegionNotFound``."""
    if is_own(region_id):
        return own_region()
    region = Region.objects.filter(id=region_id).first()
    if region is None:
        raise RegionNotFound(region_id=region_id)
    return region


def region_exists(region_id: str) -> bool:
    return is_own(region_id) or Region.objects.filter(id=region_id).exists()


def region_ensure(region_id: str) -> None:
    """Make the region ``region_id`` unless it exists (no policy: Keystone creates the region an
    endpoint names by its legacy ``region`` attribute, for the endpoint's creator)."""
    if not region_exists(region_id):
        Region.objects.get_or_create(id=region_id)


def region_show(*, actor: RequestContext, region_id: str) -> Region:
    authorize(actor, "identity:get_region")
    return region_get(region_id)


def region_list(*, actor: RequestContext, parent_region_id: str | None = ANY_PARENT) -> list[Region]:
    """Every region, the cloud's own first; only the children of ``parent_region_id`` when given."""
    authorize(actor, "identity:list_regions")
    regions = [own_region(), *Region.objects.order_by("created_at", "id")]
    if parent_region_id is not ANY_PARENT:
        regions = [r for r in regions if r.parent_region_id == parent_region_id]
    return regions


def region_create(*, actor: RequestContext, region_id: str | None = None, description: str | None = None,
                  parent_region_id: str | None = None, extra: dict[str, Any] | None = None) -> Region:
    """A new region, ``region_id`` or a new id. Raises ``PolicyNotAuthorized``
    (``identity:create_region``), ``Invalid`` (400) for an id longer than
    ``MAX_REGION_ID_LENGTH``, ``RegionConflict`` (409) for an id taken, ``RegionNotFound`` (404)
    for an unknown parent."""
    authorize(actor, "identity:create_region")
    region_id = region_id or new_id()
    if len(region_id) > MAX_REGION_ID_LENGTH:
        raise Invalid(f"Invalid input for field 'id': a region id has at most {MAX_REGION_ID_LENGTH} characters.")
    if region_exists(region_id):
        raise RegionConflict(region_id=region_id)
    if parent_region_id is not None and not region_exists(parent_region_id):
        raise RegionNotFound(region_id=parent_region_id)
    try:
        with transaction.atomic():
            return Region.objects.create(id=region_id, description=description or "",
                                         parent_region_id=parent_region_id, extra=extra or {})
    except IntegrityError:  # made by another request meanwhile
        raise RegionConflict(region_id=region_id) from None


def region_update(*, actor: RequestContext, region_id: str, changes: dict[str, Any]) -> Region:
    """Change a region's ``description``, ``parent_region_id`` (None: no parent) or extra
    attributes (any other key of ``changes``). Raises ``PolicyNotAuthorized``
    (``identity:update_region``), ``RegionNotFound`` (the region or the new parent),
    ``CircularRegionHierarchy`` (400), ``OwnRegionUnchangeable`` (403)."""
    authorize(actor, "identity:update_region")
    changes = dict(changes)
    with transaction.atomic():
        region = _for_write(region_id)
        if "description" in changes:
            region.description = changes.pop("description") or ""
        if "parent_region_id" in changes:
            parent_id = changes.pop("parent_region_id")
            if parent_id is not None:
                _check_parent(region.id, parent_id)
            region.parent_region_id = parent_id
        region.extra = {**region.extra, **changes}
        region.save()
    return region


def _check_parent(region_id: str, parent_id: str) -> None:
    """Raises ``RegionNotFound`` unless ``parent_id`` exists, ``CircularRegionHierarchy`` when
    ``region_id`` is ``parent_id`` or one of its ancestors."""
    parents = dict(Region.objects.values_list("id", "parent_region_id"))
    if not is_own(parent_id) and parent_id not in parents:
        raise RegionNotFound(region_id=parent_id)
    seen: set[str] = set()
    ancestor: str | None = parent_id
    while ancestor is not None and ancestor not in seen:
        if ancestor == region_id:
            raise CircularRegionHierarchy(parent_region_id=parent_id)
        seen.add(ancestor)
        ancestor = parents.get(ancestor)


def region_delete(*, actor: RequestContext, region_id: str) -> None:
    """Delete a region and, as Keystone, its child regions (all the way down). Raises
    ``PolicyNotAuthorized`` (``identity:delete_region``), ``RegionNotFound``,
    ``RegionDeletionError`` (403) when it or a child region has endpoints (the cloud's own region
    has the cloud's endpoints)."""
    authorize(actor, "identity:delete_region")
    if is_own(region_id):
        raise RegionDeletionError(region_id=region_id)
    with transaction.atomic():
        region = _for_write(region_id)
        doomed = _subtree(region.id)
        if Endpoint.objects.filter(region_id__in=doomed).exists():
            raise RegionDeletionError(region_id=region_id)
        Region.objects.filter(id__in=doomed).delete()


def _for_write(region_id: str) -> Region:
    if is_own(region_id):
        raise OwnRegionUnchangeable(region_id=region_id)
    region = Region.objects.select_for_update().filter(id=region_id).first()
    if region is None:
        raise RegionNotFound(region_id=region_id)
    return region


def _subtree(region_id: str) -> set[str]:
    """``region_id`` and every region below it."""
    children: dict[str | None, list[str]] = {}
    for child, parent in Region.objects.values_list("id", "parent_region_id"):
        children.setdefault(parent, []).append(child)
    found, todo = {region_id}, [region_id]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
