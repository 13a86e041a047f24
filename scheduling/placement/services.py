"""Placement services: resource providers, inventories, traits, aggregates, allocations,
usages and allocation candidates (all rows in the API database).

Every write that changes a provider bumps its ``generation`` with a compare-and-swap
``UPDATE ... WHERE generation = <read>``; a caller that passes the generation it last saw gets
``ResourceProviderGenerationConflict`` when somebody else wrote in between.

Allocation writes are atomic: the providers involved are locked (``SELECT ... FOR UPDATE`` on
PostgreSQL; on SQLite the connection opens ``IMMEDIATE`` transactions, which take the database
write lock at ``BEGIN``), capacity is checked against the usage of every other consumer, then
the consumer's allocations are replaced. On PostgreSQL a new consumer's claim outside a
transaction (a build's) sends that transaction's statements in two queries
(``_claim_for_new_consumer``). Capacity of one resource class on one provider is
``(total - reserved) * allocation_ratio``; an amount must also respect ``min_unit``,
``max_unit`` and ``step_size``.

Allocation candidates are computed in SQL: one query selects the providers that can hold the
whole request (a correlated usage sum per inventory row, trait and aggregate sub-selects), a
second loads their inventories with usage, a third their traits. Candidates are single
providers (no nested or sharing provider combinations).
"""
from __future__ import annotations

import json
import re
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, FloatField, IntegerField, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Mod
from django.utils import timezone

from cells.transactions import connection_for
from cloudcore.core.scope import insert_plain_now, plain_insert_statement, split_transaction
from cloudcore.core.serverprepared import server_prepared

from ..models import (
    Aggregate,
    Allocation,
    Consumer,
    Inventory,
    PlacementAggregate,
    PlacementChangeStamp,
    ResourceClass,
    ResourceProvider,
    Trait,
)
from . import standard
from .exceptions import (
    AllocationsNotFound,
    CannotDeleteParentProvider,
    ConsumerGenerationConflict,
    InsufficientCapacity,
    InvalidAllocation,
    InvalidInventory,
    InventoryInUse,
    InventoryNotFound,
    PlacementConflict,
    PlacementInvalid,
    PlacementNotFound,
    ResourceClassNotFound,
    ResourceProviderExists,
    ResourceProviderGenerationConflict,
    ResourceProviderInUse,
    ResourceProviderNotFound,
    TraitNotFound,
)

MAX_INT = 2147483647
ProviderRef = ResourceProvider | str
#: ``{rp_uuid: {resource_class: amount}}``
AllocationMap = Mapping[str, Mapping[str, int]]

INVENTORY_DEFAULTS: dict[str, Any] = {
    "reserved": 0, "min_unit": 1, "max_unit": MAX_INT, "step_size": 1, "allocation_ratio": 1.0,
}
_NAME_RE = re.compile(r"^[A-Z0-9_]+$")

_RPTrait = ResourceProvider.traits.through
_RPAggregate = ResourceProvider.aggregates.through


# --- helpers -------------------------------------------------------------------------------------
def _provider(rp: ProviderRef) -> ResourceProvider:
    if isinstance(rp, ResourceProvider):
        return rp
    found = ResourceProvider.objects.filter(uuid=rp).first()
    if found is None:
        raise ResourceProviderNotFound(uuid=rp)
    return found


def _stamp_statement(*, full: bool = False) -> str:
    """``_stamp_change``'s ``UPDATE``: the stamp's ``seq`` bumped, its (epoch, seq) returned."""
    full_set = ", full_seq = seq + 1" if full else ""
    return f"UPDATE {PlacementChangeStamp._meta.db_table} SET seq = seq + 1{full_set} WHERE id = 1 RETURNING epoch, seq"  # noqa: S608 - table name from the model


def _stamp_change(*, full: bool = False) -> tuple[str, int]:
    """Bump ``PlacementChangeStamp.seq`` (creating the row on the first write): the first lock a
    placement write takes in its transaction (before consumers and providers), so the stamp row
    orders every writer the same way (no lock-order deadlock on PostgreSQL) and readers see the
    writes in ``seq`` order. ``full``: a change the scheduler's provider copy must reload
    everything for (a provider deleted or re-parented). Returns the stamp's (epoch, new seq),
    read by the same statement (``UPDATE ... RETURNING``, SQLite >= 3.35 and PostgreSQL)."""
    with connection_for(PlacementChangeStamp).cursor() as cursor:
        cursor.execute(_stamp_statement(full=full))
        row = cursor.fetchone()
    if row is not None:
        return str(row[0]), int(row[1])
    try:
        with transaction.atomic():
            created = PlacementChangeStamp.objects.create(id=1, seq=1, full_seq=1 if full else 0)
    except IntegrityError:  # created by a concurrent writer in between
        return _stamp_change(full=full)
    return str(created.epoch), 1


#: how many committed claims ``committed_claims`` remembers
CLAIMS_KEPT = 64
_claims_lock = threading.Lock()
#: {(epoch, seq): {provider id: {resource class: amount}}} of the new consumers' allocations
#: this process wrote and committed, oldest first
_claims: dict[tuple[str, int], dict[int, dict[str, int]]] = {}


def _remember_claim(epoch: str, seq: int, wanted: Mapping[tuple[int, str], int]) -> None:
    """On commit of the write stamped ``(epoch, seq)`` whose only change to usage was adding
    ``wanted`` (``{(provider id, class): amount}``) for a consumer that held nothing."""
    added: dict[int, dict[str, int]] = defaultdict(dict)
    for (rp_id, rc), amount in wanted.items():
        added[rp_id][rc] = amount

    def remember() -> None:
        with _claims_lock:
            _claims[(epoch, seq)] = dict(added)
            while len(_claims) > CLAIMS_KEPT:
                del _claims[next(iter(_claims))]

    transaction.on_commit(remember)


def committed_claims(epoch: str, after: int, upto: int) -> list[dict[int, dict[str, int]]] | None:
    """What the writes stamped ``after + 1 .. upto`` added to usage, in order, when every one of
    them was a committed claim of this process for a new consumer (``_remember_claim``); None
    when any was something else (or is forgotten): the provider copy then reads them."""
    with _claims_lock:
        found = [_claims.get((epoch, seq)) for seq in range(after + 1, upto + 1)]
    return None if any(added is None for added in found) else found  # type: ignore[return-value]


def _stamped() -> Subquery:
    """The ``seq`` of this transaction's ``_stamp_change``, for the providers' ``changed_seq``."""
    return Subquery(PlacementChangeStamp.objects.filter(id=1).values("seq")[:1])


def _bump_generation(rp: ResourceProvider, expected: int | None = None) -> None:
    """Bump the provider's generation: a compare-and-swap against ``expected`` when given
    (ResourceProviderGenerationConflict if stale), else unconditionally. Updates ``rp``.
    Callers hold a transaction and have taken no lock in it yet (the change stamp is bumped
    first)."""
    _stamp_change()
    seq = _stamped()
    if expected is None:
        ResourceProvider.objects.filter(id=rp.id).update(generation=F("generation") + 1, changed_seq=seq)
        rp.generation = ResourceProvider.objects.values_list("generation", flat=True).get(id=rp.id)
        return
    changed = ResourceProvider.objects.filter(id=rp.id, generation=expected).update(
        generation=F("generation") + 1, changed_seq=seq)
    if not changed:
        raise ResourceProviderGenerationConflict()
    rp.generation = expected + 1


def _resource_class_ids(names: Iterable[str]) -> dict[str, int]:
    """Ids of the named resource classes, creating standard ones on first use."""
    wanted = set(names)
    found = dict(ResourceClass.objects.filter(name__in=wanted).values_list("name", "id"))
    for name in sorted(wanted - found.keys()):
        if name not in standard.RESOURCE_CLASSES:
            raise ResourceClassNotFound(name=name)
        found[name] = ResourceClass.objects.get_or_create(name=name)[0].id
    return found


def _trait_ids(names: Iterable[str]) -> dict[str, int]:
    """Ids of the named traits, creating standard ones on first use; TraitNotFound otherwise."""
    wanted = set(names)
    found = dict(Trait.objects.filter(name__in=wanted).values_list("name", "id"))
    missing = sorted(n for n in wanted - found.keys() if n not in standard.TRAITS)
    if missing:
        raise TraitNotFound(names=", ".join(missing))
    for name in sorted(wanted - found.keys()):
        found[name] = Trait.objects.get_or_create(name=name)[0].id
    return found


def capacity(total: int, reserved: int, allocation_ratio: float) -> int:
    """What can be allocated from one inventory: ``int((total - reserved) * allocation_ratio)``."""
    return int((total - reserved) * allocation_ratio)


def _usage_subquery() -> Subquery:
    """Correlated ``SUM(used)`` of the allocations against the outer inventory row."""
    qs = Allocation.objects.filter(
        resource_provider_id=OuterRef("resource_provider_id"), resource_class_id=OuterRef("resource_class_id")
    )
    return Subquery(
        qs.order_by().values("resource_provider_id").annotate(total_used=Sum("used")).values("total_used"),
        output_field=IntegerField(),
    )


def _inventories_with_usage() -> QuerySet[Any, Any]:
    # Inventory rows annotated with ``used`` and ``cap`` (django-stubs cannot name that type)
    return Inventory.objects.annotate(
        used=Coalesce(_usage_subquery(), Value(0)),
        cap=(F("total") - F("reserved")) * F("allocation_ratio"),
    )


# --- resource providers --------------------------------------------------------------------------
def provider_get(*, uuid: str) -> ResourceProvider:
    """The provider with ``uuid``; ResourceProviderNotFound otherwise."""
    return _provider(uuid)


def provider_exists(*, uuid: str) -> bool:
    return ResourceProvider.objects.filter(uuid=uuid).exists()


def provider_create(*, name: str, uuid: str | None = None, parent_uuid: str | None = None) -> ResourceProvider:
    """Create a provider (a root unless ``parent_uuid``). Raises ResourceProviderExists for a
    duplicate name or uuid, PlacementInvalid for an unknown parent."""
    parent = None
    if parent_uuid:
        parent = ResourceProvider.objects.filter(uuid=parent_uuid).first()
        if parent is None:
            raise PlacementInvalid(f"The parent resource provider {parent_uuid} does not exist.")
    if ResourceProvider.objects.filter(name=name).exists():
        raise ResourceProviderExists(field="name", value=name)
    if uuid and ResourceProvider.objects.filter(uuid=uuid).exists():
        raise ResourceProviderExists(field="uuid", value=uuid)
    try:
        with transaction.atomic():
            _stamp_change()
            rp = ResourceProvider(name=name, parent=parent)
            if uuid:
                rp.uuid = uuid
            rp.save()
            rp.root_id = parent.root_id if parent is not None and parent.root_id else (parent.id if parent else rp.id)
            ResourceProvider.objects.filter(id=rp.id).update(root_id=rp.root_id, changed_seq=_stamped())
    except IntegrityError as exc:
        raise ResourceProviderExists(field="name or uuid", value=f"{name} / {uuid}") from exc
    return rp


def provider_ensure(
    *, uuid: str, name: str, parent_uuid: str | None = None, host: str | None = None,
) -> ResourceProvider:
    """The provider with ``uuid``, created (or renamed to ``name``) as needed: what the
    resource tracker calls for each compute node (provider uuid = node uuid). With ``host``, a
    new provider joins the placement aggregates of the host's aggregates (zones)."""
    rp = ResourceProvider.objects.filter(uuid=uuid).first()
    if rp is None:
        rp = provider_create(name=name, uuid=uuid, parent_uuid=parent_uuid)
        if host:
            host_aggregates_join(host=host, providers=[rp.uuid])
            rp.refresh_from_db()
        return rp
    if rp.name != name:
        provider_update(rp=rp, name=name)
    return rp


def provider_update(
    *, rp: ProviderRef, name: str | None = None, parent_uuid: str | None = None, generation: int | None = None,
) -> ResourceProvider:
    """Rename and/or set the parent of a provider. With ``generation``, conflict if stale.
    A provider cannot become its own descendant."""
    rp = _provider(rp)
    with transaction.atomic():
        _stamp_change(full=True)  # the tree of other providers may change
        if generation is not None and generation != rp.generation:
            raise ResourceProviderGenerationConflict()
        if name is not None and name != rp.name:
            if ResourceProvider.objects.filter(name=name).exclude(id=rp.id).exists():
                raise ResourceProviderExists(field="name", value=name)
            rp.name = name
        if parent_uuid is not None and (rp.parent is None or rp.parent.uuid != parent_uuid):
            parent = ResourceProvider.objects.filter(uuid=parent_uuid).first()
            if parent is None:
                raise PlacementInvalid(f"The parent resource provider {parent_uuid} does not exist.")
            if parent.root_id == rp.root_id and _is_descendant(parent, rp):
                raise PlacementInvalid("creating loop in the provider tree is not allowed.")
            rp.parent = parent
            rp.root_id = parent.root_id or parent.id
            ResourceProvider.objects.filter(root_id=rp.id).exclude(id=rp.id).update(root_id=rp.root_id)
        rp.save()
        _bump_generation(rp)
    return rp


def _is_descendant(candidate: ResourceProvider, ancestor: ResourceProvider) -> bool:
    node: ResourceProvider | None = candidate
    while node is not None:
        if node.id == ancestor.id:
            return True
        node = node.parent
    return False


def provider_delete(*, rp: ProviderRef) -> None:
    """Delete a provider with its inventories, traits and aggregate links.
    Conflict while it has allocations or children."""
    rp = _provider(rp)
    with transaction.atomic():
        _stamp_change(full=True)
        if Allocation.objects.filter(resource_provider=rp).exists():
            raise ResourceProviderInUse(uuid=rp.uuid)
        if ResourceProvider.objects.filter(parent=rp).exists():
            raise CannotDeleteParentProvider(uuid=rp.uuid)
        Inventory.objects.filter(resource_provider=rp).delete()
        rp.traits.clear()
        rp.aggregates.clear()
        ResourceProvider.objects.filter(id=rp.id).update(root=None)
        ResourceProvider.objects.filter(id=rp.id).delete()


def provider_list(
    *, name: str | None = None, uuid: str | None = None, member_of: list[list[str]] | None = None,
    resources: Mapping[str, int] | None = None, required_traits: Iterable[str] = (),
    forbidden_traits: Iterable[str] = (), in_tree: str | None = None, required_any: list[list[str]] | None = None,
    forbidden_aggregates: Iterable[str] = (),
) -> QuerySet[ResourceProvider]:
    """Providers matching every given filter (Placement's ``GET /resource_providers``)."""
    qs = _candidate_queryset(
        resources=resources or {}, required_traits=required_traits, forbidden_traits=forbidden_traits,
        member_of=member_of, in_tree=in_tree, required_any=required_any, forbidden_aggregates=forbidden_aggregates,
    )
    if name is not None:
        qs = qs.filter(name=name)
    if uuid is not None:
        qs = qs.filter(uuid=uuid)
    return qs.select_related("parent", "root").order_by("id")


# --- inventories ---------------------------------------------------------------------------------
def _validated_inventory(rp: ResourceProvider, rc: str, data: Mapping[str, Any]) -> dict[str, Any]:
    values = {**INVENTORY_DEFAULTS, **{k: v for k, v in data.items() if k in INVENTORY_DEFAULTS or k == "total"}}
    if "total" not in values:
        raise InvalidInventory(uuid=rp.uuid, reason=f"'total' is a required property of {rc}")
    try:
        for key in ("total", "reserved", "min_unit", "max_unit", "step_size"):
            values[key] = int(values[key])
        values["allocation_ratio"] = float(values["allocation_ratio"])
    except (TypeError, ValueError) as exc:
        raise InvalidInventory(uuid=rp.uuid, reason=f"invalid value for {rc}: {exc}") from exc
    if values["total"] < 1 or values["min_unit"] < 1 or values["max_unit"] < 1 or values["step_size"] < 1:
        raise InvalidInventory(uuid=rp.uuid, reason=f"total, min_unit, max_unit and step_size of {rc} must be >= 1")
    if values["reserved"] < 0 or values["allocation_ratio"] <= 0:
        raise InvalidInventory(uuid=rp.uuid, reason=f"invalid reserved or allocation_ratio for {rc}")
    if values["reserved"] > values["total"]:
        raise InvalidInventory(
            uuid=rp.uuid,
            reason=f"Invalid inventory for '{rc}' on resource provider '{rp.uuid}'. "
            "The reserved value is greater than total.",
        )
    if values["min_unit"] > values["max_unit"]:
        raise InvalidInventory(uuid=rp.uuid, reason=f"min_unit of {rc} is greater than max_unit")
    return values


def inventories_get(*, rp: ProviderRef) -> dict[str, dict[str, Any]]:
    """``{resource_class: {total, reserved, min_unit, max_unit, step_size, allocation_ratio}}``."""
    rp = _provider(rp)
    return {
        inv["resource_class__name"]: {k: inv[k] for k in ("total", *INVENTORY_DEFAULTS)}
        for inv in Inventory.objects.filter(resource_provider=rp).values("resource_class__name", "total",
                                                                          *INVENTORY_DEFAULTS)
    }


def inventories_set(
    *, rp: ProviderRef, inventories: Mapping[str, Mapping[str, Any]], generation: int | None = None,
) -> ResourceProvider:
    """Replace all inventories of ``rp`` by ``inventories`` (``{rc: {"total": ..., ...}}``;
    omitted fields take Placement's defaults). Removing a class that has allocations is
    InventoryInUse; ``generation`` given and stale is a conflict. Bumps the generation (without
    ``generation``, identical inventories write nothing: the resource tracker's periodic case)."""
    rp = _provider(rp)
    with transaction.atomic():
        validated = {rc: _validated_inventory(rp, rc, data) for rc, data in inventories.items()}
        rc_ids = _resource_class_ids(validated)
        existing = {inv.resource_class_id: inv for inv in Inventory.objects.filter(resource_provider=rp)}
        removed = set(existing) - set(rc_ids.values())
        if removed:
            in_use = sorted(
                Allocation.objects.filter(resource_provider=rp, resource_class_id__in=removed)
                .values_list("resource_class__name", flat=True).distinct()
            )
            if in_use:
                raise InventoryInUse(resource_classes=", ".join(in_use), uuid=rp.uuid)
        unchanged = not removed and all(
            rc_ids[rc] in existing and all(getattr(existing[rc_ids[rc]], k) == v for k, v in values.items())
            for rc, values in validated.items()
        )
        if unchanged and generation is None:
            return rp  # the resource tracker's periodic report: nothing to write
        _bump_generation(rp, generation)
        Inventory.objects.filter(resource_provider=rp, resource_class_id__in=removed).delete()
        for rc, values in validated.items():
            inv = existing.get(rc_ids[rc])
            if inv is None:
                Inventory.objects.create(resource_provider=rp, resource_class_id=rc_ids[rc], **values)
            elif any(getattr(inv, k) != v for k, v in values.items()):
                for key, value in values.items():
                    setattr(inv, key, value)
                inv.save()
    return rp


def inventory_set_one(
    *, rp: ProviderRef, resource_class: str, data: Mapping[str, Any], generation: int | None = None,
    create_only: bool = False,
) -> ResourceProvider:
    """Create or update the inventory of one class (``create_only``: conflict if it exists)."""
    rp = _provider(rp)
    current = inventories_get(rp=rp)
    if create_only and resource_class in current:
        raise PlacementConflict(
            f"Inventory for {resource_class} on resource provider {rp.uuid} already exists."
        )
    if not create_only and resource_class not in current:
        raise InventoryNotFound(resource_class=resource_class, uuid=rp.uuid)
    current[resource_class] = dict(data)
    return inventories_set(rp=rp, inventories=current, generation=generation)


def inventory_delete(*, rp: ProviderRef, resource_class: str, generation: int | None = None) -> ResourceProvider:
    """Remove the inventory of one class (InventoryNotFound, InventoryInUse)."""
    rp = _provider(rp)
    current = inventories_get(rp=rp)
    if resource_class not in current:
        raise InventoryNotFound(resource_class=resource_class, uuid=rp.uuid)
    del current[resource_class]
    return inventories_set(rp=rp, inventories=current, generation=generation)


# --- traits ----------------------------------------------------------------------------------------
def trait_list(*, names: Iterable[str] | None = None, startswith: str | None = None,
               associated: bool | None = None) -> list[str]:
    """Every trait: the standard ones and the custom ones created, filtered like ``GET /traits``."""
    db_names = set(Trait.objects.values_list("name", flat=True))
    result = set(standard.TRAITS) | db_names
    if names is not None:
        result &= set(names)
    if startswith:
        result = {n for n in result if n.startswith(startswith)}
    if associated is not None:
        used = set(_RPTrait.objects.values_list("trait__name", flat=True).distinct())
        result = result & used if associated else result - used
    return sorted(result)


def trait_exists(*, name: str) -> bool:
    return name in standard.TRAITS or Trait.objects.filter(name=name).exists()


def trait_create(*, name: str) -> bool:
    """Create custom trait ``name`` (``CUSTOM_[A-Z0-9_]+``); True if it was created."""
    if not standard.is_custom(name) or not _NAME_RE.match(name) or len(name) > 255:
        raise PlacementInvalid(
            'The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix '
            '"CUSTOM_" and use following characters: "A"-"Z", "0"-"9" and "_"'
        )
    return Trait.objects.get_or_create(name=name)[1]


def trait_delete(*, name: str) -> None:
    """Delete a custom trait; standard traits cannot be deleted, used ones conflict."""
    if not standard.is_custom(name):
        raise PlacementInvalid(f"Cannot delete standard trait {name}.")
    trait = Trait.objects.filter(name=name).first()
    if trait is None:
        raise PlacementNotFound(f"No such trait(s): {name}")
    if _RPTrait.objects.filter(trait=trait).exists():
        raise PlacementConflict(f"The trait {name} is in use by a resource provider.")
    trait.delete()


def traits_get(*, rp: ProviderRef) -> list[str]:
    rp = _provider(rp)
    return sorted(rp.traits.values_list("name", flat=True))


def traits_set(*, rp: ProviderRef, traits: Iterable[str], generation: int | None = None) -> ResourceProvider:
    """Replace the traits of ``rp``; unknown traits are TraitNotFound. Bumps the generation
    (without ``generation``, an unchanged set writes nothing)."""
    rp = _provider(rp)
    ids = _trait_ids(traits)
    if generation is None and set(ids) == set(traits_get(rp=rp)):
        return rp
    with transaction.atomic():
        _bump_generation(rp, generation)
        rp.traits.set(list(ids.values()))
    return rp


def traits_add(*, rp: ProviderRef, traits: Iterable[str]) -> ResourceProvider:
    """Add traits to ``rp`` keeping the others (resource tracker convenience)."""
    rp = _provider(rp)
    return traits_set(rp=rp, traits=set(traits_get(rp=rp)) | set(traits))


def traits_remove(*, rp: ProviderRef, traits: Iterable[str]) -> ResourceProvider:
    rp = _provider(rp)
    return traits_set(rp=rp, traits=set(traits_get(rp=rp)) - set(traits))


# --- aggregates ------------------------------------------------------------------------------------
def aggregates_get(*, rp: ProviderRef) -> list[str]:
    rp = _provider(rp)
    return sorted(rp.aggregates.values_list("uuid", flat=True))


def aggregates_set(*, rp: ProviderRef, aggregates: Iterable[str], generation: int | None = None) -> ResourceProvider:
    """Replace the placement aggregates (uuids) of ``rp``; bumps the generation (without
    ``generation``, an unchanged set writes nothing)."""
    rp = _provider(rp)
    uuids = sorted(set(aggregates))
    if generation is None and uuids == aggregates_get(rp=rp):
        return rp
    with transaction.atomic():
        _bump_generation(rp, generation)
        existing = dict(PlacementAggregate.objects.filter(uuid__in=uuids).values_list("uuid", "id"))
        for agg_uuid in uuids:
            if agg_uuid not in existing:
                existing[agg_uuid] = PlacementAggregate.objects.get_or_create(uuid=agg_uuid)[0].id
        rp.aggregates.set(list(existing.values()))
    return rp


def aggregate_add_providers(*, aggregate_uuid: str, providers: Iterable[ProviderRef]) -> None:
    """Add ``aggregate_uuid`` to each provider's aggregates (host aggregate mirroring)."""
    for rp in providers:
        current = aggregates_get(rp=rp)
        if aggregate_uuid not in current:
            aggregates_set(rp=rp, aggregates=[*current, aggregate_uuid])


def host_aggregates_join(*, host: str, providers: Iterable[ProviderRef]) -> list[str]:
    """Put ``providers`` into the placement aggregate of every host aggregate of ``host``;
    returns those aggregates' uuids (a provider created after its host joined aggregates)."""
    uuids = sorted(Aggregate.objects.filter(hosts__host=host).values_list("uuid", flat=True))
    for aggregate_uuid in uuids:
        aggregate_add_providers(aggregate_uuid=aggregate_uuid, providers=providers)
    return uuids


def aggregate_remove_providers(*, aggregate_uuid: str, providers: Iterable[ProviderRef]) -> None:
    for rp in providers:
        current = aggregates_get(rp=rp)
        if aggregate_uuid in current:
            aggregates_set(rp=rp, aggregates=[a for a in current if a != aggregate_uuid])


# --- usages ----------------------------------------------------------------------------------------
def provider_usages(*, rp: ProviderRef) -> dict[str, int]:
    """``{resource_class: used}`` for every class ``rp`` has inventory or allocations of."""
    rp = _provider(rp)
    usages = {name: 0 for name in Inventory.objects.filter(resource_provider=rp)
              .values_list("resource_class__name", flat=True)}
    for name, used in (Allocation.objects.filter(resource_provider=rp).values("resource_class__name")
                       .annotate(total=Sum("used")).values_list("resource_class__name", "total")):
        usages[name] = int(used or 0)
    return usages


def project_usages(*, project_id: str, user_id: str | None = None) -> dict[str, int]:
    """``{resource_class: used}`` summed over the consumers of a project (and user)."""
    qs = Allocation.objects.filter(consumer__project_id=project_id)
    if user_id:
        qs = qs.filter(consumer__user_id=user_id)
    return {name: int(total or 0) for name, total in qs.values("resource_class__name")
            .annotate(total=Sum("used")).values_list("resource_class__name", "total")}


# --- allocations -----------------------------------------------------------------------------------
@dataclass
class ConsumerAllocations:
    """What ``allocations_get`` returns (Placement's ``GET /allocations/{consumer}``)."""

    consumer_uuid: str
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)
    project_id: str | None = None
    user_id: str | None = None
    consumer_generation: int | None = None
    consumer_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "allocations": {rp: {"generation": self.generations[rp], "resources": res}
                            for rp, res in self.allocations.items()},
            "project_id": self.project_id, "user_id": self.user_id,
            "consumer_generation": self.consumer_generation,
        }


def allocations_get(*, consumer_uuid: str) -> ConsumerAllocations:
    """The consumer's allocations; empty (not an error) for an unknown consumer."""
    consumer = Consumer.objects.filter(uuid=consumer_uuid).first()
    result = ConsumerAllocations(consumer_uuid=consumer_uuid)
    if consumer is None:
        return result
    result.project_id, result.user_id = consumer.project_id, consumer.user_id
    result.consumer_generation, result.consumer_type = consumer.generation, consumer.consumer_type
    rows = Allocation.objects.filter(consumer=consumer).values_list(
        "resource_provider__uuid", "resource_provider__generation", "resource_class__name", "used"
    )
    for rp_uuid, generation, rc, used in rows:
        result.allocations.setdefault(rp_uuid, {})[rc] = used
        result.generations[rp_uuid] = generation
    return result


def provider_allocations(*, rp: ProviderRef) -> dict[str, dict[str, int]]:
    """``{consumer_uuid: {resource_class: used}}`` against ``rp``."""
    rp = _provider(rp)
    result: dict[str, dict[str, int]] = defaultdict(dict)
    for consumer, rc, used in Allocation.objects.filter(resource_provider=rp).values_list(
        "consumer__uuid", "resource_class__name", "used"
    ):
        result[consumer][rc] = used
    return dict(result)


def _check_fits(rows: list[dict[str, Any]], wanted: dict[tuple[int, str], int], uuids: dict[int, str]) -> None:
    by_key = {(r["resource_provider_id"], r["resource_class__name"]): r for r in rows}
    for (rp_id, rc), amount in sorted(wanted.items()):
        inv = by_key.get((rp_id, rc))
        where = f"'{rc}' on resource provider '{uuids[rp_id]}'"
        if inv is None:
            raise InsufficientCapacity(reason=f"Inventory for {where} invalid.")
        if amount < inv["min_unit"] or amount > inv["max_unit"] or amount % inv["step_size"]:
            raise InsufficientCapacity(
                reason=f"Unable to create allocation for {where}. "
                "The requested amount would violate inventory constraints."
            )
        if inv["used"] + amount > capacity(inv["total"], inv["reserved"], inv["allocation_ratio"]):
            raise InsufficientCapacity(
                reason=f"Unable to create allocation for {where}. The requested amount would exceed the capacity."
            )


def _check_amounts(allocations: AllocationMap) -> None:
    """InvalidAllocation unless every amount is an integer >= 1."""
    for rp_uuid, resources in allocations.items():
        for rc, amount in resources.items():
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
                raise InvalidAllocation(reason=f"amount of {rc} on {rp_uuid} must be an integer >= 1")


def allocations_put(
    *, consumer_uuid: str, allocations: AllocationMap, project_id: str, user_id: str,
    consumer_generation: int | None = None, enforce_consumer_generation: bool = False,
    consumer_type: str = "INSTANCE",
) -> None:
    """Replace every allocation of ``consumer_uuid`` by ``allocations`` (``{rp_uuid: {rc: n}}``;
    empty deletes them), atomically.

    ``enforce_consumer_generation`` (Placement >= 1.28): ``consumer_generation`` must be the
    consumer's current generation, or None for a consumer that does not exist yet; otherwise
    ConsumerGenerationConflict. Raises InsufficientCapacity (over capacity, constraints, no such
    inventory), InvalidAllocation (unknown provider, amount < 1), ResourceClassNotFound.
    Bumps the generation of every provider touched and of the consumer.
    """
    _check_amounts(allocations)
    if allocations and (consumer_generation is None or not enforce_consumer_generation) \
            and _claim_for_new_consumer(consumer_uuid, allocations, project_id, user_id, consumer_type):
        return
    with transaction.atomic():
        epoch, seq = _stamp_change()
        created = False
        consumer: Consumer | None
        if allocations:
            consumer, created = _consumer_for_write(consumer_uuid, project_id, user_id, consumer_type)
        else:
            consumer = Consumer.objects.select_for_update().filter(uuid=consumer_uuid).first()
        if enforce_consumer_generation:
            current = consumer.generation if consumer is not None and not created else None
            if current != consumer_generation:
                raise ConsumerGenerationConflict(
                    expected="null" if consumer_generation is None else consumer_generation,
                    got="null" if current is None else current,
                )
        old_rp_ids = set(
            Allocation.objects.filter(consumer=consumer).values_list("resource_provider_id", flat=True)
        ) if consumer is not None and not created else set()
        if not allocations:
            _delete_consumer(consumer, old_rp_ids)
            return
        by_uuid = _lock_and_bump(list(allocations), seq)
        for rp_uuid in allocations:
            if rp_uuid not in by_uuid:
                raise InvalidAllocation(reason=f"Allocation for resource provider '{rp_uuid}' that does not exist.")
        rc_names = {rc for res in allocations.values() for rc in res}
        wanted = {(by_uuid[u], rc): n for u, res in allocations.items() for rc, n in res.items()}
        with connection_for(Inventory).cursor() as cursor:  # (raw: the ORM's query cost more to build than to run)
            cursor.execute(*_claim_read_statement(consumer_uuid, list(by_uuid), sorted(rc_names)))
            rows = _claim_inventories(cursor.fetchall())
        # the classes come with their inventories; one with none is looked up (an unknown one
        # is ResourceClassNotFound) before ``_check_fits`` says it has no inventory
        rc_ids = {row["resource_class__name"]: row["resource_class_id"] for row in rows}
        if not rc_names <= rc_ids.keys():
            rc_ids.update(_resource_class_ids(rc_names - rc_ids.keys()))
        _check_fits(rows, wanted, {rp_id: uuid for uuid, rp_id in by_uuid.items()})
        if created:
            _remember_claim(epoch, seq, wanted)
        else:
            assert consumer is not None  # allocations to write: _consumer_for_write gave one
            Allocation.objects.filter(consumer=consumer).delete()
            Consumer.objects.filter(id=consumer.id).update(
                generation=F("generation") + 1, project_id=project_id, user_id=user_id, consumer_type=consumer_type,
            )
        # the rows bulk_create would store, in one plain INSERT (their ids are not needed)
        insert_plain_now([
            Allocation(resource_provider_id=rp_id, consumer=consumer, resource_class_id=rc_ids[rc], used=n)
            for (rp_id, rc), n in wanted.items()
        ])
        _bump_generations(old_rp_ids - set(by_uuid.values()))


#: the columns of ``_claim_read_statement``'s rows after the stamp's, the consumer's and the
#: provider's uuid: an inventory with its usage, as ``allocations_put`` reads it
_CLAIM_READ_COLUMNS = ("resource_provider_id", "resource_class__name", "resource_class_id", "total", "reserved",
                       "min_unit", "max_unit", "step_size", "allocation_ratio", "used")


def _claim_read_statement(consumer_uuid: str, uuids: list[str], rc_names: list[str]) -> tuple[str, list[Any]]:
    """What ``_claim_for_new_consumer`` reads once its locks are taken, in one statement: per
    inventory of the classes ``rc_names`` on the providers ``uuids``, the change stamp's (epoch,
    seq), the consumer's id and whether this transaction inserted it, the provider's uuid, then
    the inventory and the usage of every other consumer against it (``_CLAIM_READ_COLUMNS``). No
    row when the stamp's row is not made yet, the consumer does not exist, or none of those
    inventories exists. Also ``allocations_put``'s read (the same statement on every backend)."""
    providers, classes = ", ".join(["%s"] * len(uuids)), ", ".join(["%s"] * len(rc_names))
    return (server_prepared(  # (planning it took longer than running it: prepared once per connection)
        "SELECT s.epoch, s.seq, c.id, c.updated_at IS NULL, rp.uuid, i.resource_provider_id, rc.name, "  # noqa: S608 - table names from the models
        "i.resource_class_id, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size, i.allocation_ratio, "
        f"COALESCE((SELECT SUM(a.used) FROM {Allocation._meta.db_table} a WHERE a.resource_provider_id = "
        "i.resource_provider_id AND a.resource_class_id = i.resource_class_id AND a.consumer_id <> c.id), 0) "
        f"FROM {PlacementChangeStamp._meta.db_table} s, {Consumer._meta.db_table} c, "
        f"{ResourceProvider._meta.db_table} rp JOIN {Inventory._meta.db_table} i ON i.resource_provider_id = rp.id "
        f"JOIN {ResourceClass._meta.db_table} rc ON rc.id = i.resource_class_id "
        f"WHERE s.id = 1 AND c.uuid = %s AND rp.uuid IN ({providers}) AND rc.name IN ({classes})"),
        [consumer_uuid, *uuids, *rc_names])


def _claim_inventories(read: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The inventories with their usage from ``_claim_read_statement``'s rows, as ``_check_fits`` takes them."""
    return [dict(zip(_CLAIM_READ_COLUMNS, row[5:], strict=True)) for row in read]


def _claim_for_new_consumer(consumer_uuid: str, allocations: AllocationMap, project_id: str, user_id: str,
                            consumer_type: str) -> bool:
    """``allocations_put`` for a consumer that does not exist yet (a build's claim) on PostgreSQL
    outside a transaction, in two round trips where its transaction took seven (``BEGIN``, the
    stamp, the consumer, the providers, the usage, the allocations, ``COMMIT``): the same
    statements, in the same order and transaction (``split_transaction``), the first query
    ``BEGIN``, the stamp, the consumer and the providers (their locks taken in that order) and
    one read of the stamp, the consumer and the inventories with their usage (its snapshot taken
    once the locks are held, as the usage read's was); the capacity checked in Python; the second
    query the allocations and ``COMMIT``. InsufficientCapacity as ``allocations_put`` raises it
    (nothing written). False, having written nothing, for anything else (not PostgreSQL in
    autocommit, the consumer exists, a provider or an inventory asked for does not, the stamp's
    row is not made yet): ``allocations_put``'s transaction then does what it does."""
    uuids = list(allocations)
    rc_names = sorted({rc for resources in allocations.values() for rc in resources})
    with split_transaction(connection_for(Allocation).alias) as split:
        if split is None:
            return False
        read = split.first([(_stamp_statement(), None),
                            _consumer_statement(consumer_uuid, project_id, user_id, consumer_type),
                            _lock_and_bump_statement(uuids, None),
                            _claim_read_statement(consumer_uuid, uuids, rc_names)])
        if not read or not read[0][3]:  # nothing found, or the consumer holds allocations already
            return False
        epoch, seq, consumer_id = str(read[0][0]), int(read[0][1]), read[0][2]
        by_uuid = {str(row[4]): row[5] for row in read}
        if not by_uuid.keys() >= allocations.keys():
            return False
        rows = _claim_inventories(read)
        wanted = {(by_uuid[u], rc): n for u, resources in allocations.items() for rc, n in resources.items()}
        if not wanted.keys() <= {(row["resource_provider_id"], row["resource_class__name"]) for row in rows}:
            return False
        _check_fits(rows, wanted, {rp_id: uuid for uuid, rp_id in by_uuid.items()})
        rc_ids = {row["resource_class__name"]: row["resource_class_id"] for row in rows}
        split.last([plain_insert_statement([
            Allocation(resource_provider_id=rp_id, consumer_id=consumer_id, resource_class_id=rc_ids[rc], used=n)
            for (rp_id, rc), n in wanted.items()])])
    _remember_claim(epoch, seq, wanted)  # committed: at once
    return True


def _consumer_statement(consumer_uuid: str, project_id: str, user_id: str, consumer_type: str) -> tuple[str, list[Any]]:
    """``_consumer_for_write``'s statement and parameters: the consumer inserted, or its
    ``updated_at`` touched (the row locked either way); its id, generation and ``updated_at``
    (None: inserted by this statement) returned."""
    now = connection_for(Consumer).ops.adapt_datetimefield_value(timezone.now())
    return (f"INSERT INTO {Consumer._meta.db_table} "  # noqa: S608 - table name from the model
            "(created_at, updated_at, uuid, project_id, user_id, consumer_type, generation) "
            "VALUES (%s, NULL, %s, %s, %s, %s, 1) ON CONFLICT (uuid) DO UPDATE SET updated_at = EXCLUDED.created_at "
            "RETURNING id, generation, updated_at", [now, consumer_uuid, project_id, user_id, consumer_type])


def _consumer_for_write(consumer_uuid: str, project_id: str, user_id: str, consumer_type: str) -> tuple[Consumer, bool]:
    """The consumer ``consumer_uuid`` locked for the rest of the transaction, and whether this
    created it: a new one is inserted as Placement creates it (generation 0, bumped by the write
    to 1), an existing one only has ``updated_at`` touched (the caller writes its generation and
    owner). One ``INSERT ... ON CONFLICT DO UPDATE ... RETURNING`` where ``SELECT ... FOR
    UPDATE`` then an ``INSERT`` took two; a failed check rolls a new consumer back with the rest."""
    connection = connection_for(Consumer)
    with connection.cursor() as cursor:
        cursor.execute(*_consumer_statement(consumer_uuid, project_id, user_id, consumer_type))
        consumer_id, generation, updated_at = cursor.fetchone()
    consumer = Consumer(id=consumer_id, uuid=consumer_uuid, project_id=project_id, user_id=user_id,
                        consumer_type=consumer_type, generation=generation)
    consumer._state.adding, consumer._state.db = False, connection.alias
    return consumer, updated_at is None


def allocations_set_many(
    *, consumers: Mapping[str, Mapping[str, Any]], enforce_consumer_generation: bool = False,
) -> None:
    """Placement's ``POST /allocations``: replace the allocations of several consumers in one
    transaction (``{consumer_uuid: {"allocations": {rp: {rc: n}}, "project_id", "user_id",
    "consumer_generation", "consumer_type"}}``). Consumers whose allocations become empty are
    written first, so moving allocations between consumers does not trip over its own usage.
    Any error rolls every consumer back."""
    order = sorted(consumers, key=lambda c: bool(consumers[c].get("allocations")))
    with transaction.atomic():
        for consumer_uuid in order:
            entry = consumers[consumer_uuid]
            allocations_put(
                consumer_uuid=consumer_uuid, allocations=entry.get("allocations") or {},
                project_id=entry["project_id"], user_id=entry["user_id"],
                consumer_generation=entry.get("consumer_generation"),
                enforce_consumer_generation=enforce_consumer_generation,
                consumer_type=entry.get("consumer_type") or "INSTANCE",
            )


def _lock_and_bump_statement(uuids: list[str], seq: int | None) -> tuple[str, list[Any]]:
    """``_lock_and_bump``'s ``UPDATE`` and parameters (``seq`` None: the stamp's, as this
    transaction's ``_stamp_change`` left it, read by the statement)."""
    marks = ", ".join(["%s"] * len(uuids))
    stamped = f"(SELECT seq FROM {PlacementChangeStamp._meta.db_table} WHERE id = 1)" if seq is None else "%s"  # noqa: S608 - table name from the model
    return (f"UPDATE {ResourceProvider._meta.db_table} SET generation = generation + 1, "  # noqa: S608 - table names from the models
            f"changed_seq = {stamped} WHERE uuid IN ({marks}) RETURNING uuid, id",
            [*([] if seq is None else [seq]), *uuids])


def _lock_and_bump(uuids: list[str], seq: int) -> dict[str, int]:
    """``{uuid: id}`` of the providers ``uuids`` that exist, locked for the rest of the
    transaction and their generation bumped (stamped ``seq``, the transaction's change stamp) by
    the one ``UPDATE ... RETURNING`` that locks them: what ``SELECT ... FOR UPDATE`` then a
    generation bump at the end did in two statements (a failed check rolls the bump back)."""
    with connection_for(ResourceProvider).cursor() as cursor:
        cursor.execute(*_lock_and_bump_statement(uuids, seq))
        return {str(uuid): int(rp_id) for uuid, rp_id in cursor.fetchall()}


def _bump_generations(rp_ids: set[int]) -> None:
    """Bump the generation of each provider (callers have stamped their transaction first)."""
    if rp_ids:
        ResourceProvider.objects.filter(id__in=rp_ids).update(
            generation=F("generation") + 1, changed_seq=_stamped())


def _delete_consumer(consumer: Consumer | None, rp_ids: set[int]) -> None:
    if consumer is None:
        return
    Allocation.objects.filter(consumer=consumer).delete()
    consumer.delete()
    _bump_generations(rp_ids)


def allocations_delete(*, consumer_uuid: str, missing_ok: bool = True) -> bool:
    """Delete every allocation of ``consumer_uuid`` and the consumer. Returns whether there was
    anything; with ``missing_ok=False`` an unknown consumer raises AllocationsNotFound."""
    with transaction.atomic():
        _stamp_change()
        consumer = Consumer.objects.select_for_update().filter(uuid=consumer_uuid).first()
        rp_ids = set(
            Allocation.objects.filter(consumer=consumer).values_list("resource_provider_id", flat=True)
        ) if consumer is not None else set()
        if not rp_ids:
            if consumer is not None:
                consumer.delete()
            if not missing_ok:
                raise AllocationsNotFound(consumer=consumer_uuid)
            return False
        _delete_consumer(consumer, rp_ids)
    return True


def _allocation_request_map(allocation_request: Any) -> dict[str, dict[str, int]]:
    """``{"allocations": {rp: {"resources": {...}}}}`` (dict or JSON text) -> ``{rp: {rc: n}}``."""
    if isinstance(allocation_request, str):
        allocation_request = json.loads(allocation_request)
    if not isinstance(allocation_request, Mapping):
        raise InvalidAllocation(reason="allocation request must be an object")
    allocs = allocation_request.get("allocations", allocation_request)
    return {rp: dict(entry.get("resources", entry)) for rp, entry in allocs.items()}


def claim_allocation_request(
    *, consumer_uuid: str, allocation_request: Any, project_id: str, user_id: str,
    consumer_type: str = "INSTANCE",
) -> bool:
    """Claim an allocation candidate (``{"allocations": {rp_uuid: {"resources": {...}}}}``, dict
    or JSON) for ``consumer_uuid``, replacing what it held. False when it no longer fits (a
    concurrent claim won, or the inventory changed); the consumer's allocations are then
    unchanged. A None/empty request claims nothing and returns True."""
    if not allocation_request:
        return True
    try:
        wanted = _allocation_request_map(allocation_request)
        allocations_put(consumer_uuid=consumer_uuid, allocations=wanted, project_id=project_id,
                        user_id=user_id, consumer_type=consumer_type)
    except (InsufficientCapacity, InvalidAllocation, ResourceProviderGenerationConflict, ResourceClassNotFound):
        return False
    return True


def claim_allocation_requests(
    *, claims: list[tuple[str, Any]], project_id: str, user_id: str, consumer_type: str = "INSTANCE",
) -> bool:
    """Claim one allocation candidate per consumer (``[(consumer_uuid, allocation_request)]``, as
    ``claim_allocation_request`` takes each), all or none, in one transaction: what a
    multi-instance request claims. The consumers are checked in order as if claimed one after
    the other (each sees the usage of those before it). False when any no longer fits; nothing
    is then claimed. New consumers (the usual case) cost a fixed number of statements whatever
    their number; when one already exists (or is named twice), each is written by
    ``allocations_put`` in turn (a later claim of a consumer replaces its earlier one)."""
    wanted = [(consumer, _allocation_request_map(request)) for consumer, request in claims if request]
    if not wanted:
        return True
    try:
        for _consumer, allocations in wanted:
            _check_amounts(allocations)
        with transaction.atomic():
            _stamp_change()
            names = [c for c, _a in wanted]
            if len(set(names)) < len(names) or Consumer.objects.filter(uuid__in=names).exists():
                for consumer, allocations in wanted:
                    allocations_put(consumer_uuid=consumer, allocations=allocations, project_id=project_id,
                                    user_id=user_id, consumer_type=consumer_type)
                return True
            rp_uuids = sorted({rp for _c, allocations in wanted for rp in allocations})
            providers = list(ResourceProvider.objects.select_for_update().filter(uuid__in=rp_uuids).order_by("id"))
            if len(providers) != len(rp_uuids):
                return False
            id_of = {rp.uuid: rp.id for rp in providers}
            rc_names = {rc for _c, allocations in wanted for res in allocations.values() for rc in res}
            rc_ids = _resource_class_ids(rc_names)
            rows = list(
                _inventories_with_usage()
                .filter(resource_provider_id__in=list(id_of.values()), resource_class__name__in=rc_names)
                .values("resource_provider_id", "resource_class__name", "total", "reserved", "min_unit",
                        "max_unit", "step_size", "allocation_ratio", "used")
            )
            uuids = {rp.id: rp.uuid for rp in providers}
            by_key = {(r["resource_provider_id"], r["resource_class__name"]): r for r in rows}
            per_consumer = []
            for consumer, allocations in wanted:
                amounts = {(id_of[u], rc): n for u, res in allocations.items() for rc, n in res.items()}
                _check_fits(rows, amounts, uuids)
                for key, n in amounts.items():  # the next consumer sees this one's usage
                    by_key[key]["used"] += n
                per_consumer.append((consumer, amounts))
            Consumer.objects.bulk_create([
                Consumer(uuid=consumer, project_id=project_id, user_id=user_id, consumer_type=consumer_type,
                         generation=1) for consumer, _a in per_consumer])
            consumer_ids = dict(Consumer.objects.filter(uuid__in=[c for c, _a in per_consumer])
                                .values_list("uuid", "id"))
            Allocation.objects.bulk_create([
                Allocation(resource_provider_id=rp_id, consumer_id=consumer_ids[consumer],
                           resource_class_id=rc_ids[rc], used=n)
                for consumer, amounts in per_consumer for (rp_id, rc), n in amounts.items()])
            _bump_generations(set(id_of.values()))
    except (InsufficientCapacity, InvalidAllocation, ResourceProviderGenerationConflict, ResourceClassNotFound):
        return False
    return True


def allocations_move(
    *, from_consumer_uuid: str, to_consumer_uuid: str, project_id: str | None = None,
    user_id: str | None = None, consumer_type: str = "MIGRATION",
) -> bool:
    """Move every allocation of ``from_consumer_uuid`` to ``to_consumer_uuid`` (merged with
    what the target already holds), atomically: Nova's swap of an instance's source-host
    allocations to its migration record at the start of a resize/migration, and back on revert.
    Total usage does not change, so no capacity check. Returns False if the source holds
    nothing (nothing changes)."""
    with transaction.atomic():
        _stamp_change()
        source = Consumer.objects.select_for_update().filter(uuid=from_consumer_uuid).first()
        rows = list(Allocation.objects.filter(consumer=source).values_list(
            "resource_provider_id", "resource_class_id", "used")) if source is not None else []
        if source is None or not rows:
            return False
        target = Consumer.objects.select_for_update().filter(uuid=to_consumer_uuid).first()
        if target is None:
            target = Consumer.objects.create(
                uuid=to_consumer_uuid, project_id=project_id or source.project_id,
                user_id=user_id or source.user_id, consumer_type=consumer_type,
            )
        merged: dict[tuple[int, int], int] = defaultdict(int)
        for rp_id, rc_id, used in [*rows, *Allocation.objects.filter(consumer=target).values_list(
                "resource_provider_id", "resource_class_id", "used")]:
            merged[(rp_id, rc_id)] += used
        Allocation.objects.filter(consumer__in=[source, target]).delete()
        Allocation.objects.bulk_create([
            Allocation(resource_provider_id=rp_id, resource_class_id=rc_id, consumer=target, used=used)
            for (rp_id, rc_id), used in merged.items()
        ])
        Consumer.objects.filter(id=target.id).update(generation=F("generation") + 1)
        source.delete()
        _bump_generations({rp_id for rp_id, _rc, _u in rows})
    return True


# --- allocation candidates -------------------------------------------------------------------------
def _can_take(rc_id: int, amount: int) -> Exists:
    """The outer provider has an inventory of class ``rc_id`` that can take ``amount`` more
    (capacity and constraints). A correlated EXISTS, so that with ``ORDER BY id LIMIT n`` the
    database stops after the first ``n`` providers that fit instead of computing the usage of
    every inventory row first."""
    return Exists(
        _inventories_with_usage()
        .annotate(step_rem=Mod(Value(amount), F("step_size")))
        .filter(resource_provider_id=OuterRef("id"), resource_class_id=rc_id, min_unit__lte=amount,
                max_unit__gte=amount)
        .filter(Q(step_size=1) | Q(step_rem=0))
        .filter(cap__gte=F("used") + Value(amount, output_field=FloatField()))
    )


def _candidate_queryset(
    *, resources: Mapping[str, int], required_traits: Iterable[str] = (), forbidden_traits: Iterable[str] = (),
    member_of: list[list[str]] | None = None, in_tree: str | None = None,
    provider_uuids: Iterable[str] | None = None, required_any: list[list[str]] | None = None,
    forbidden_aggregates: Iterable[str] = (),
) -> QuerySet[ResourceProvider]:
    qs = ResourceProvider.objects.all()
    rc_ids = _resource_class_ids(resources) if resources else {}  # unknown classes: an error
    for rc, amount in sorted(resources.items()):
        qs = qs.filter(_can_take(rc_ids[rc], int(amount)))
    required, forbidden = sorted(set(required_traits)), sorted(set(forbidden_traits))
    if required or forbidden:
        _trait_ids_known(required + forbidden)
    for trait in required:
        qs = qs.filter(id__in=_RPTrait.objects.filter(trait__name=trait).values("resourceprovider_id"))
    if forbidden:
        qs = qs.exclude(id__in=_RPTrait.objects.filter(trait__name__in=forbidden).values("resourceprovider_id"))
    for any_trait in required_any or []:
        _trait_ids_known(list(any_trait))
        qs = qs.filter(id__in=_RPTrait.objects.filter(trait__name__in=list(any_trait)).values("resourceprovider_id"))
    for any_of in member_of or []:
        qs = qs.filter(id__in=_RPAggregate.objects.filter(placementaggregate__uuid__in=list(any_of))
                       .values("resourceprovider_id"))
    not_in = sorted(set(forbidden_aggregates))
    if not_in:
        qs = qs.exclude(id__in=_RPAggregate.objects.filter(placementaggregate__uuid__in=not_in)
                        .values("resourceprovider_id"))
    if in_tree:
        root = ResourceProvider.objects.filter(uuid=in_tree).values_list("root_id", flat=True).first()
        qs = qs.filter(root_id=root) if root is not None else qs.none()
    if provider_uuids is not None:
        qs = qs.filter(uuid__in=list(provider_uuids))
    return qs


def _trait_ids_known(names: list[str]) -> None:
    missing = set(names) - set(standard.TRAITS)
    if missing:
        found = set(Trait.objects.filter(name__in=missing).values_list("name", flat=True))
        if missing - found:
            raise TraitNotFound(names=", ".join(sorted(missing - found)))


@dataclass
class AllocationCandidates:
    """Placement's answer: one allocation request per fitting provider, and a summary (capacity,
    used, traits) of each provider named in them."""

    allocation_requests: list[dict[str, Any]]
    provider_summaries: dict[str, dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"allocation_requests": self.allocation_requests, "provider_summaries": self.provider_summaries}


def allocation_candidates(
    *, resources: Mapping[str, int], required_traits: Iterable[str] = (), forbidden_traits: Iterable[str] = (),
    member_of: list[list[str]] | None = None, in_tree: str | None = None, limit: int | None = None,
    provider_uuids: Iterable[str] | None = None, required_any: list[list[str]] | None = None,
    forbidden_aggregates: Iterable[str] = (), randomize: bool = False, copy: Any = None,
) -> AllocationCandidates:
    """Providers that can hold all of ``resources`` (``{rc: n}``) at once, with every required
    trait, one of each ``required_any`` list, and none of the forbidden ones, in at least one
    aggregate of each ``member_of`` list and none of ``forbidden_aggregates``, in the tree of
    ``in_tree``, and (internal callers) among ``provider_uuids``; at most ``limit``, the first
    by provider id or, with ``randomize``, a random sample (Nova's
    ``randomize_allocation_candidates``: spreads load when ``limit`` cuts the list). Unknown
    resource classes or traits raise ResourceClassNotFound / TraitNotFound. Three SQL queries
    whatever the number of providers.

    ``copy``: an in-memory copy of placement (``placement.cache.ProviderCache``, the scheduler's)
    answers instead of SQL, identically (it supports neither ``in_tree``, ``required_any`` nor
    ``forbidden_aggregates``)."""
    if copy is not None:
        if in_tree or required_any or forbidden_aggregates:
            raise ValueError("the provider cache answers without in_tree, required_any, forbidden_aggregates")
        answer: AllocationCandidates = copy.allocation_candidates(
            resources=resources, required_traits=required_traits, forbidden_traits=forbidden_traits,
            member_of=member_of, limit=limit, provider_uuids=provider_uuids, randomize=randomize)
        return answer
    resources = {rc: int(n) for rc, n in resources.items() if int(n) > 0}
    if not resources:
        raise PlacementInvalid("Badly formed resources parameter. Expected resources query string parameter "
                               "in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string.")
    qs = _candidate_queryset(
        resources=resources, required_traits=required_traits, forbidden_traits=forbidden_traits,
        member_of=member_of, in_tree=in_tree, provider_uuids=provider_uuids, required_any=required_any,
        forbidden_aggregates=forbidden_aggregates,
    ).order_by("?" if randomize else "id").values_list("id", flat=True)
    ids = list(qs[:limit] if limit else qs)
    if not ids:
        return AllocationCandidates([], {})
    summaries: dict[str, dict[str, Any]] = {}
    uuid_of: dict[int, str] = {}
    for row in _inventories_with_usage().filter(resource_provider_id__in=ids).values_list(
        "resource_provider_id", "resource_provider__uuid", "resource_provider__parent__uuid",
        "resource_provider__root__uuid", "resource_class__name", "total", "reserved", "allocation_ratio", "used",
    ):
        rp_id, rp_uuid, parent_uuid, root_uuid, rc, total, reserved, ratio, used = row
        uuid_of[rp_id] = rp_uuid
        summary = summaries.setdefault(rp_uuid, {
            "resources": {}, "traits": [], "parent_provider_uuid": parent_uuid,
            "root_provider_uuid": root_uuid or rp_uuid,
        })
        summary["resources"][rc] = {"capacity": capacity(total, reserved, ratio), "used": int(used)}
    for rp_id, trait in _RPTrait.objects.filter(resourceprovider_id__in=ids).values_list(
        "resourceprovider_id", "trait__name"
    ):
        summaries[uuid_of[rp_id]]["traits"].append(trait)
    for summary in summaries.values():
        summary["traits"].sort()
    requests = [
        {"allocations": {uuid_of[rp_id]: {"resources": dict(resources)}}} for rp_id in ids if rp_id in uuid_of
    ]
    return AllocationCandidates(requests, summaries)


# --- resource classes ------------------------------------------------------------------------------
def resource_class_list() -> list[str]:
    """Standard classes and the custom ones created."""
    return sorted(set(standard.RESOURCE_CLASSES) | set(ResourceClass.objects.values_list("name", flat=True)))


def resource_class_create(*, name: str) -> bool:
    """Create custom class ``name`` (``CUSTOM_[A-Z0-9_]+``); True if it was created."""
    if not standard.is_custom(name) or not _NAME_RE.match(name) or len(name) > 255:
        raise PlacementInvalid(f"Resource class name {name} is invalid: it must start with CUSTOM_ and "
                               "use only A-Z, 0-9 and _.")
    return ResourceClass.objects.get_or_create(name=name)[1]


def project_usages_by_type(*, project_id: str, user_id: str | None = None) -> dict[str, dict[str, int]]:
    """Placement >= 1.38: ``{"all": {consumer_count, rc: n}, "<consumer_type>": {...}}``."""
    qs = Allocation.objects.filter(consumer__project_id=project_id)
    consumers = Consumer.objects.filter(project_id=project_id, allocations__isnull=False)
    if user_id:
        qs = qs.filter(consumer__user_id=user_id)
        consumers = consumers.filter(user_id=user_id)
    result: dict[str, dict[str, int]] = {"all": {"consumer_count": 0}}
    for ctype, count in consumers.values("consumer_type").annotate(n=Count("id", distinct=True)).values_list(
        "consumer_type", "n"
    ):
        result.setdefault(ctype, {})["consumer_count"] = count
        result["all"]["consumer_count"] += count
    for ctype, rc, total in qs.values("consumer__consumer_type", "resource_class__name").annotate(
        total=Sum("used")
    ).values_list("consumer__consumer_type", "resource_class__name", "total"):
        result.setdefault(ctype, {"consumer_count": 0})[rc] = int(total or 0)
        result["all"][rc] = result["all"].get(rc, 0) + int(total or 0)
    return result
