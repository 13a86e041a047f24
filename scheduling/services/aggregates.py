"""Host aggregates and availability zones (Nova's os-aggregates / os-availability-zone), API DB.

An aggregate with metadata key ``availability_zone`` makes an availability zone; a host belongs
to at most one zone (Nova's rule: adding a host, or setting a zone on an aggregate whose hosts
are already in another zone, is refused). A host in no zone aggregate is in
``settings.DEFAULT_AVAILABILITY_ZONE`` ("nova"); non-compute services are in the internal zone.

Every aggregate is mirrored into placement: its uuid is a placement aggregate of the resource
providers of its hosts' compute nodes, so the scheduler can ask placement for ``member_of``.

Public API (keyword-only, ``aggregate`` is an Aggregate or its id/uuid):

- ``aggregate_get(aggregate_id) -> Aggregate`` / ``aggregate_list() -> list[Aggregate]``
- ``aggregate_create(*, name, availability_zone=None) -> Aggregate``
- ``aggregate_update(*, aggregate, name=None, availability_zone=UNSET) -> Aggregate``
- ``aggregate_delete(*, aggregate) -> None``
- ``aggregate_add_host(*, aggregate, host) -> Aggregate`` / ``aggregate_remove_host(...)``
- ``aggregate_set_metadata(*, aggregate, metadata: {key: value or None}) -> Aggregate``
- ``aggregate_to_dict(aggregate) -> dict`` (Nova's aggregate body fields)
- ``aggregate_payload(aggregate) -> dict`` (Nova's ``AggregatePayload`` of its notifications)

Every write sends Nova's versioned notifications around it, ``aggregate.<action>.start`` and
``.end`` (``create``, ``update_prop``, ``update_metadata``, ``add_host``, ``remove_host``,
``delete``), from ``nova-api``, with the ``AggregatePayload`` of the aggregate before the write and
after it (a create's start has no id, hosts or metadata yet but the zone asked for).
- ``host_availability_zone(host) -> str``; ``hosts_availability_zones(hosts) -> {host: zone}``
- ``available_zones() -> ZoneList`` (``[(zone, [hosts])]`` of enabled compute services;
  ``"az1" in available_zones()`` tests a name cheaply), ``zone_available(zone) -> bool``
- ``zone_services() -> list[ZoneService]`` (every service with its zone, enabled and up flags:
  what ``os-availability-zone/detail`` shows)
- ``aggregate_uuids_for_zone(zone) -> list[str]`` (placement ``member_of`` for a zone)
- ``aggregates_sync_host(host, providers=None) -> list[str]`` (re-mirror a host into placement)
- ``aggregates_sync_all(dry_run=False) -> SyncReport`` (``manage.py placement sync_aggregates``)
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from cells import selectors as cell_selectors
from cells.context import target_cell
from cells.scatter import CellFailure, scatter_gather
from cloudcore.core import notifications
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from hosts import selectors as host_selectors
from hosts.services.servicegroup import service_is_up
from servers import selectors as server_selectors

if TYPE_CHECKING:
    from hosts.models import Service

from ..models import Aggregate, AggregateHost, AggregateMetadata, PlacementAggregate, ResourceProvider
from ..placement import services as placement

AZ_KEY = "availability_zone"
UNSET: Any = object()


def internal_zone() -> str:
    return getattr(settings, "INTERNAL_SERVICE_AVAILABILITY_ZONE", "internal")


class AggregateNotFound(NotFound):
    message = "Aggregate %(aggregate_id)s could not be found."


class AggregateNameExists(Conflict):
    message = "Aggregate %(aggregate_name)s already exists."


class AggregateHostExists(Conflict):
    message = "Aggregate %(aggregate_id)s already has host %(host)s."


class AggregateHostNotFound(NotFound):
    message = "Aggregate %(aggregate_id)s has no host %(host)s."


class ComputeHostNotFound(NotFound):
    message = "Compute host %(host)s could not be found."


class InvalidAggregateActionAdd(Conflict):
    """Nova answers 409 for a host that would end up in two zones."""

    message = "Cannot add host to aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionDelete(Invalid):
    message = "Cannot remove aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionUpdate(Invalid):
    message = "Cannot update aggregate %(aggregate_id)s. Reason: %(reason)s."


class InvalidAggregateActionUpdateMeta(Invalid):
    message = "Cannot update metadata of aggregate %(aggregate_id)s. Reason: %(reason)s."


# --- reads -----------------------------------------------------------------------------------------
def aggregate_get(aggregate_id: int | str) -> Aggregate:
    """A live aggregate by id or uuid; AggregateNotFound otherwise."""
    qs = Aggregate.objects.prefetch_related("hosts", "metadata")
    found = None
    if isinstance(aggregate_id, int) or str(aggregate_id).isdigit():
        found = qs.filter(id=int(aggregate_id)).first()
    if found is None:
        found = qs.filter(uuid=str(aggregate_id)).first()
    if found is None:
        raise AggregateNotFound(aggregate_id=aggregate_id)
    return found


def _agg(aggregate: Aggregate | int | str) -> Aggregate:
    """A fresh copy (prefetched hosts/metadata of a caller's object may be stale)."""
    return aggregate_get(aggregate.id if isinstance(aggregate, Aggregate) else aggregate)


def aggregate_list() -> list[Aggregate]:
    return list(Aggregate.objects.prefetch_related("hosts", "metadata").order_by("id"))


def aggregate_metadata(aggregate: Aggregate) -> dict[str, str]:
    return {m.key: m.value for m in aggregate.metadata.all()}


def aggregate_hosts(aggregate: Aggregate) -> list[str]:
    return sorted(h.host for h in aggregate.hosts.all())


def aggregate_zone(aggregate: Aggregate) -> str | None:
    return aggregate_metadata(aggregate).get(AZ_KEY)


def aggregate_to_dict(aggregate: Aggregate) -> dict[str, Any]:
    """Nova's aggregate fields (the API picks per microversion; ``uuid`` from 2.41)."""
    return {
        "id": aggregate.id, "uuid": aggregate.uuid, "name": aggregate.name,
        "availability_zone": aggregate_zone(aggregate), "hosts": aggregate_hosts(aggregate),
        "metadata": aggregate_metadata(aggregate), "created_at": aggregate.created_at,
        "updated_at": aggregate.updated_at, "deleted_at": aggregate.deleted_at, "deleted": aggregate.deleted,
    }


def aggregate_payload(aggregate: Aggregate) -> dict[str, Any]:
    """Nova's ``AggregatePayload`` (1.1) of the aggregate as it is now."""
    return {"id": aggregate.id, "uuid": str(aggregate.uuid), "name": aggregate.name,
            "hosts": aggregate_hosts(aggregate), "metadata": aggregate_metadata(aggregate)}


def _notify(action: str, phase: str, payload: dict[str, Any]) -> None:
    notifications.notify(f"aggregate.{action}.{phase}", payload, publisher_id=notifications.publisher("nova-api"),
                         payload_name="AggregatePayload", version="1.1")


def hosts_availability_zones(hosts: Iterable[str]) -> dict[str, str]:
    """``{host: zone}`` for many hosts in one query (several zones of one host joined by ',')."""
    hosts = list(hosts)
    zones: dict[str, set[str]] = defaultdict(set)
    rows = AggregateMetadata.objects.filter(
        key=AZ_KEY, aggregate__deleted=False, aggregate__hosts__host__in=hosts
    ).values_list("aggregate__hosts__host", "value")
    for host, zone in rows:
        zones[host].add(zone)
    default = settings.DEFAULT_AVAILABILITY_ZONE
    return {h: ",".join(sorted(zones[h])) if zones.get(h) else default for h in hosts}


def host_availability_zone(host: str) -> str:
    """The zone of ``host``: its zone aggregate's, else DEFAULT_AVAILABILITY_ZONE."""
    return hosts_availability_zones([host])[host]


def aggregate_uuids_for_zone(zone: str) -> list[str]:
    """Uuids of the aggregates defining ``zone`` (empty for the default zone without one)."""
    return sorted(AggregateMetadata.objects.filter(key=AZ_KEY, value=zone, aggregate__deleted=False)
                  .values_list("aggregate__uuid", flat=True))


def host_aggregates_metadata(hosts: Iterable[str]) -> dict[str, dict[str, set[str]]]:
    """``{host: {key: {values}}}`` over every aggregate of each host, one query (filters use it)."""
    result: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    rows = AggregateMetadata.objects.filter(aggregate__deleted=False, aggregate__hosts__host__in=list(hosts)) \
        .values_list("aggregate__hosts__host", "key", "value")
    for host, key, value in rows:
        result[host][key].add(value)
    return result


@dataclass(frozen=True)
class ZoneService:
    zone: str
    host: str
    binary: str
    available: bool  # enabled
    active: bool  # up
    updated_at: datetime | None


class ZoneList(Sequence[Any]):  # of (zone, hosts) pairs; `in` also takes a zone name
    """``[(zone, [hosts]), ...]`` of the zones with an enabled compute service, computed on
    first iteration; ``"az1" in zones`` answers through ``zone_available`` without loading every
    service (what a server create asks)."""

    def __init__(self) -> None:
        self._items: list[tuple[str, list[str]]] | None = None

    def _load(self) -> list[tuple[str, list[str]]]:
        if self._items is None:
            hosts: dict[str, set[str]] = defaultdict(set)
            for svc in zone_services():
                if svc.binary == "nova-compute" and svc.available:
                    hosts[svc.zone].add(svc.host)
            self._items = [(zone, sorted(hosts[zone])) for zone in sorted(hosts)]
        return self._items

    def __contains__(self, item: object) -> bool:
        if isinstance(item, str):
            return item in self.names() if self._items is not None else zone_available(item)
        return item in self._load()

    def __getitem__(self, index: Any) -> Any:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[tuple[str, list[str]]]:
        return iter(self._load())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __repr__(self) -> str:
        return f"ZoneList({self._load()!r})"

    def names(self) -> list[str]:
        return [zone for zone, _hosts in self._load()]


def _enabled_compute_exists(*, hosts: list[str] | None = None, exclude_hosts: list[str] | None = None) -> bool:
    """Is there, in some cell (cell0 aside), a live enabled nova-compute service on one of
    ``hosts`` or, with ``exclude_hosts``, outside those hosts?"""

    def probe(cell: Any) -> bool:
        return host_selectors.enabled_compute_service_exists(hosts=hosts, exclude_hosts=exclude_hosts)

    cells = cell_selectors.cell_list(cell0=False)
    return any(result is True for result in scatter_gather(probe, cells).values())


def zone_available(zone: str) -> bool:
    """Does ``zone`` have an enabled compute service? One API-DB query and an EXISTS per cell.
    The default zone holds the hosts in no zone aggregate."""
    rows = list(AggregateMetadata.objects.filter(key=AZ_KEY, aggregate__deleted=False)
                .values_list("value", "aggregate__hosts__host"))
    zone_hosts = {host for value, host in rows if value == zone and host}
    if zone_hosts and _enabled_compute_exists(hosts=sorted(zone_hosts)):
        return True
    if zone != settings.DEFAULT_AVAILABILITY_ZONE:
        return False
    in_some_zone = sorted({host for _value, host in rows if host})
    return _enabled_compute_exists(exclude_hosts=in_some_zone)


def zone_services() -> list[ZoneService]:
    """Every live service of every cell (cell0 excluded) with its zone: compute services in
    their aggregate's zone (or the default), the others in the internal zone."""

    def load(cell: Any) -> list[Service]:
        return host_selectors.service_list()

    cells = cell_selectors.cell_list(cell0=False)
    services = [s for result in scatter_gather(load, cells).values() if not isinstance(result, CellFailure)
                for s in result]
    zones = hosts_availability_zones({s.host for s in services if s.binary == "nova-compute"})

    return sorted(
        (ZoneService(zone=zones[s.host] if s.binary == "nova-compute" else internal_zone(), host=s.host,
                     binary=s.binary, available=not s.disabled, active=service_is_up(s),
                     updated_at=s.updated_at or s.created_at) for s in services),
        key=lambda z: (z.zone, z.host, z.binary),
    )


def available_zones() -> ZoneList:
    """Zones with at least one enabled compute service: ``[(zone, [hosts])]`` sorted by name,
    loaded when iterated; ``zone in available_zones()`` is a cheap check (``zone_available``)."""
    return ZoneList()


# --- writes ----------------------------------------------------------------------------------------
def _check_name_free(name: str, exclude_id: int | None = None) -> None:
    qs = Aggregate.objects.filter(name=name)
    if exclude_id is not None:
        qs = qs.exclude(id=exclude_id)
    if qs.exists():
        raise AggregateNameExists(aggregate_name=name)


def _zone_conflicts(aggregate: Aggregate, zone: str, hosts: Iterable[str]) -> list[str]:
    """Zones other than ``zone`` that ``hosts`` are in through other aggregates."""
    return sorted(set(
        AggregateMetadata.objects.filter(key=AZ_KEY, aggregate__deleted=False, aggregate__hosts__host__in=list(hosts))
        .exclude(aggregate_id=aggregate.id).exclude(value=zone).values_list("value", flat=True)
    ))


def _check_zone_change(aggregate: Aggregate, zone: str | None, error: type[Invalid | Conflict],
                       hosts: Iterable[str] | None = None, check_instances: bool = False) -> None:
    """Nova's rules for giving ``aggregate`` (or ``hosts`` joining it) the zone ``zone``: not
    empty (None included: a zone is not removed by nulling it), no host in another zone, and
    (``check_instances``) no change under running servers."""
    if not zone:
        raise error(aggregate_id=aggregate.id,
                    reason=f"Aggregate {aggregate.name} does not support empty named availability zone")
    hosts = list(hosts) if hosts is not None else aggregate_hosts(aggregate)
    conflicts = _zone_conflicts(aggregate, zone, hosts)
    if conflicts:
        raise error(aggregate_id=aggregate.id,
                    reason=f"One or more hosts already in availability zone(s) {conflicts}")
    if check_instances and zone != aggregate_zone(aggregate) and _hosts_have_instances(hosts):
        raise error(aggregate_id=aggregate.id, reason="One or more hosts contain instances in this zone")


def _hosts_have_instances(hosts: list[str]) -> bool:
    """Does any live instance run on ``hosts``, in any cell (cell0 aside)? A server's zone is
    fixed at boot, so the zone of a host with servers must not change under them."""
    if not hosts:
        return False

    cells = cell_selectors.cell_list(cell0=False)
    results = scatter_gather(lambda cell: server_selectors.instances_on_hosts_exist(hosts), cells)
    return any(r is True or isinstance(r, CellFailure) for r in results.values())


def aggregate_create(*, name: str, availability_zone: str | None = None) -> Aggregate:
    """Create an aggregate (a zone when ``availability_zone``). AggregateNameExists (409)."""
    with transaction.atomic():
        _check_name_free(name)
        aggregate = Aggregate(name=name)
        _notify("create", "start", {"id": None, "uuid": aggregate.uuid, "name": name, "hosts": None,
                                    "metadata": {AZ_KEY: availability_zone} if availability_zone else None})
        aggregate.save()
        if availability_zone is not None:
            AggregateMetadata.objects.create(aggregate=aggregate, key=AZ_KEY, value=availability_zone)
    created = aggregate_get(aggregate.id)
    _notify("create", "end", aggregate_payload(created))
    return created


def aggregate_update(*, aggregate: Aggregate | int | str, name: str | None = None,
                     availability_zone: str | None = UNSET) -> Aggregate:
    """Rename and/or change the zone (None or "" is refused, as in Nova). A zone its hosts' other aggregates
    contradict, or a zone change while its hosts run servers, is InvalidAggregateActionUpdate
    (400)."""
    aggregate = _agg(aggregate)
    with transaction.atomic():
        if name is not None and name != aggregate.name:
            _check_name_free(name, exclude_id=aggregate.id)
            aggregate.name = name
            _notify("update_prop", "start", aggregate_payload(aggregate))
            aggregate.save(update_fields=["name"])
            _notify("update_prop", "end", aggregate_payload(aggregate))
        if availability_zone is not UNSET:
            _check_zone_change(aggregate, availability_zone, InvalidAggregateActionUpdate, check_instances=True)
            _write_metadata_notified(aggregate, {AZ_KEY: availability_zone})
    return aggregate_get(aggregate.id)


def aggregate_delete(*, aggregate: Aggregate | int | str) -> None:
    """Soft-delete an empty aggregate (InvalidAggregateActionDelete while it has hosts) and
    drop it from placement."""
    aggregate = _agg(aggregate)
    if aggregate.hosts.exists():
        raise InvalidAggregateActionDelete(aggregate_id=aggregate.id, reason="Host aggregate is not empty")
    payload = aggregate_payload(aggregate)
    _notify("delete", "start", payload)
    with transaction.atomic():
        AggregateMetadata.objects.filter(aggregate=aggregate).delete()
        aggregate.deleted = True
        aggregate.deleted_at = timezone.now()
        aggregate.save(update_fields=["deleted", "deleted_at"])
    _notify("delete", "end", payload)

    PlacementAggregate.objects.filter(uuid=aggregate.uuid, providers__isnull=True).delete()


def _check_host_exists(host: str) -> None:
    if not cell_selectors.host_is_mapped(host):
        raise ComputeHostNotFound(host=host)


def aggregate_add_host(*, aggregate: Aggregate | int | str, host: str, require_mapped: bool = True) -> Aggregate:
    """Add a mapped compute host. ComputeHostNotFound (404), AggregateHostExists (409),
    InvalidAggregateActionAdd (409) when the host is already in another zone. Mirrors the
    aggregate onto the host's resource providers. ``require_mapped=False`` (demo set-up, before
    the hosts have started) accepts a host not mapped yet; its providers join the placement
    aggregates when they are created (``placement.provider_ensure(host=...)``)."""
    aggregate = _agg(aggregate)
    if require_mapped:
        _check_host_exists(host)
    with transaction.atomic():
        if AggregateHost.objects.filter(aggregate=aggregate, host=host).exists():
            raise AggregateHostExists(aggregate_id=aggregate.id, host=host)
        zone = aggregate_zone(aggregate)
        if zone is not None:
            _check_zone_change(aggregate, zone, InvalidAggregateActionAdd, hosts=[host])
        _notify("add_host", "start", aggregate_payload(aggregate))
        AggregateHost.objects.create(aggregate=aggregate, host=host)

    placement.aggregate_add_providers(aggregate_uuid=aggregate.uuid, providers=_host_providers(host))
    added = aggregate_get(aggregate.id)
    _notify("add_host", "end", aggregate_payload(added))
    return added


def aggregate_remove_host(*, aggregate: Aggregate | int | str, host: str) -> Aggregate:
    """Remove a host (ComputeHostNotFound, AggregateHostNotFound: 404) and its providers from
    the placement aggregate."""
    aggregate = _agg(aggregate)
    _check_host_exists(host)
    if host not in aggregate_hosts(aggregate):
        raise AggregateHostNotFound(aggregate_id=aggregate.id, host=host)
    _notify("remove_host", "start", aggregate_payload(aggregate))
    deleted, _ = AggregateHost.objects.filter(aggregate=aggregate, host=host).delete()
    if not deleted:  # removed meanwhile by another request
        raise AggregateHostNotFound(aggregate_id=aggregate.id, host=host)

    placement.aggregate_remove_providers(aggregate_uuid=aggregate.uuid, providers=_host_providers(host))
    removed = aggregate_get(aggregate.id)
    _notify("remove_host", "end", aggregate_payload(removed))
    return removed


def aggregate_set_metadata(*, aggregate: Aggregate | int | str, metadata: Mapping[str, str | None]) -> Aggregate:
    """Merge ``metadata`` (a None value deletes the key). Setting ``availability_zone`` that
    the hosts' other aggregates contradict, or changing it while the hosts run servers, is
    InvalidAggregateActionUpdateMeta (400)."""
    aggregate = _agg(aggregate)
    with transaction.atomic():
        if AZ_KEY in metadata:
            _check_zone_change(aggregate, metadata[AZ_KEY], InvalidAggregateActionUpdateMeta, check_instances=True)
        _write_metadata_notified(aggregate, metadata)
    return aggregate_get(aggregate.id)


def _write_metadata_notified(aggregate: Aggregate, metadata: Mapping[str, str | None]) -> None:
    """``_write_metadata`` inside ``aggregate.update_metadata.start`` and ``.end``."""
    _notify("update_metadata", "start", aggregate_payload(aggregate))
    _write_metadata(aggregate, metadata)
    _notify("update_metadata", "end", aggregate_payload(_agg(aggregate)))


def _write_metadata(aggregate: Aggregate, metadata: Mapping[str, str | None]) -> None:
    for key, value in metadata.items():
        if value is None:
            AggregateMetadata.objects.filter(aggregate=aggregate, key=key).delete()
        else:
            AggregateMetadata.objects.update_or_create(aggregate=aggregate, key=key, defaults={"value": str(value)})
    Aggregate.objects.filter(id=aggregate.id).update(updated_at=timezone.now())


def aggregates_sync_host(host: str, providers: Iterable[str] | None = None) -> list[str]:
    """Put ``host``'s resource providers (or the given provider uuids) into the placement
    aggregate of every host aggregate of ``host``; returns the aggregate uuids. For a provider
    created after its host joined aggregates."""

    targets = list(providers) if providers is not None else _host_providers(host)
    return placement.host_aggregates_join(host=host, providers=targets)


@dataclass
class SyncReport:
    """What ``aggregates_sync_all`` did: hosts synced, and the problems Nova's
    ``placement sync_aggregates`` reports (unmapped hosts, hosts without compute nodes or
    without providers)."""

    synced: list[str]
    unmapped: list[str]
    without_nodes: list[str]
    without_providers: list[str]


def aggregates_sync_all(*, dry_run: bool = False) -> SyncReport:
    """Mirror every host aggregate into placement (Nova's ``nova-manage placement
    sync_aggregates``): each member host's providers join the aggregate's placement aggregate."""
    report = SyncReport([], [], [], [])
    hosts = sorted(set(AggregateHost.objects.filter(aggregate__deleted=False).values_list("host", flat=True)))
    mappings = cell_selectors.host_mappings(hosts)
    for host in hosts:
        mapping = mappings.get(host)
        if mapping is None:
            report.unmapped.append(host)
            continue
        with target_cell(mapping.cell):
            node_uuids = host_selectors.compute_node_uuids(host)
        if not node_uuids:
            report.without_nodes.append(host)
            continue
        providers = list(ResourceProvider.objects.filter(uuid__in=node_uuids).values_list("uuid", flat=True))
        if len(providers) < len(node_uuids):
            report.without_providers.append(host)
        if providers and not dry_run:
            aggregates_sync_host(host, providers=providers)
        report.synced.append(host)
    return report


def _host_providers(host: str) -> list[str]:
    """Uuids of the resource providers of ``host``'s compute nodes (provider uuid = node uuid),
    plus a provider named after the host."""
    uuids: set[str] = set()
    mapping = cell_selectors.host_mapping_get(host)
    if mapping is not None:
        with target_cell(mapping.cell):
            uuids.update(host_selectors.compute_node_uuids(host))
    return list(ResourceProvider.objects.filter(uuid__in=uuids).values_list("uuid", flat=True)) + list(
        ResourceProvider.objects.filter(name=host).exclude(uuid__in=uuids).values_list("uuid", flat=True)
    )
