"""Placement domain errors. Each carries ``placement_code``, the ``code`` of Placement's error
body (``placement.undefined_code`` unless Placement names a more specific one)."""
from __future__ import annotations

from cloudcore.core.exceptions import Conflict, Invalid, NotFound

UNDEFINED = "placement.undefined_code"
CONCURRENT_UPDATE = "placement.concurrent_update"
INVENTORY_INUSE = "placement.inventory.inuse"
PROVIDER_INUSE = "placement.resource_provider.inuse"
PROVIDER_CANNOT_DELETE_PARENT = "placement.resource_provider.cannot_delete_parent"
DUPLICATE_NAME = "placement.duplicate_name"


class PlacementNotFound(NotFound):
    placement_code = UNDEFINED


class PlacementInvalid(Invalid):
    placement_code = UNDEFINED


class PlacementConflict(Conflict):
    placement_code = UNDEFINED


class ResourceProviderNotFound(PlacementNotFound):
    message = "No resource provider with uuid %(uuid)s found"


class ResourceProviderExists(PlacementConflict):
    placement_code = DUPLICATE_NAME
    message = "Conflicting resource provider %(field)s: %(value)s already exists."


class ResourceProviderGenerationConflict(PlacementConflict):
    placement_code = CONCURRENT_UPDATE
    message = "resource provider generation conflict"


class ResourceProviderInUse(PlacementConflict):
    placement_code = PROVIDER_INUSE
    message = "Unable to delete resource provider %(uuid)s: Resource provider has allocations."


class CannotDeleteParentProvider(PlacementConflict):
    placement_code = PROVIDER_CANNOT_DELETE_PARENT
    message = "Unable to delete parent resource provider %(uuid)s: It has child resource providers."


class ResourceClassNotFound(PlacementInvalid):
    message = "No such resource class %(name)s."


class TraitNotFound(PlacementInvalid):
    message = "No such trait(s): %(names)s"


class InvalidInventory(PlacementInvalid):
    message = "Unable to update inventory for resource provider %(uuid)s: %(reason)s"


class InventoryInUse(PlacementConflict):
    placement_code = INVENTORY_INUSE
    message = ("Inventory for '%(resource_classes)s' on resource provider '%(uuid)s' in use.")


class InventoryNotFound(PlacementNotFound):
    message = "No inventory of class %(resource_class)s found for resource provider %(uuid)s"


class InvalidAllocation(PlacementInvalid):
    message = "Invalid allocation: %(reason)s"


class InsufficientCapacity(PlacementConflict):
    """Over capacity or inventory constraints (min/max unit, step size) violated: Placement's
    409 "Unable to allocate inventory"."""

    message = "Unable to allocate inventory: %(reason)s"


class ConsumerGenerationConflict(PlacementConflict):
    placement_code = CONCURRENT_UPDATE
    message = "consumer generation conflict - expected %(expected)s but got %(got)s"


class AllocationsNotFound(PlacementNotFound):
    message = "No allocations for consumer '%(consumer)s'"
