"""Services and endpoints on behalf of an actor (Keystone's ``/v3/services`` and
``/v3/endpoints``).

Listed are the cloud's own services and endpoints (``catalog.own_services``,
``catalog.own_endpoints``: worked out from the settings, never rows) and those operators
registered (``Service``, ``Endpoint`` rows), which reach the catalog of the tokens issued after
(``catalog.catalog``). The cloud's own ones cannot be changed or deleted through the API: they are
what the cloud is (its processes answer at those URLs), so an update or a delete of one is
refused with 403 (``OwnCatalogEntryUnchangeable``) and nothing changes. An operator may still
register further endpoints of the cloud's own services (an internal URL, another region).

Keystone's rules: an endpoint's interface is ``public``, ``internal`` or ``admin`` and its URL is
required (the view's schema); its ``service_id`` and its ``region_id`` (when given) must exist
(400, Keystone's "Expecting to find ..."); the legacy ``region`` attribute without ``region_id``
names a region that is created when missing (Keystone's compatibility with v2 clients); a URL may
hold the substitutions ``catalog.URL_SUBSTITUTIONS`` only (400). Deleting a service deletes its
endpoints. Ids are always made here (Keystone ignores a client's id for both).

Reading and writing them is for cloud admins (Keystone's defaults: ``identity:list_services``,
``identity:get_service``, ``identity:create_service``, ..., ``identity:delete_endpoint``); each
function checks its rule first.
"""
from __future__ import annotations

from typing import Any, TypeVar

from django.db import transaction
from django.db.models import QuerySet

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Forbidden, Invalid, NotFound
from cloudcore.core.policy import authorize

from ..models import Endpoint, Service
from . import regions
from .catalog import is_own_endpoint, is_own_service, own_endpoints, own_services, url_substitutions_unknown


class ServiceNotFound(NotFound):
    message = "Could not find service: %(service_id)s."


class EndpointNotFound(NotFound):
    message = "Could not find endpoint: %(endpoint_id)s."


class ReferenceInvalid(Invalid):
    message = ("Expecting to find %(attribute)s in %(target)s. The server could not comply with the request "
               "since it is either malformed or otherwise incorrect. The client is assumed to be in error.")


class EndpointURLInvalid(Invalid):
    message = "Cannot create an endpoint with an invalid URL: %(url)s."


class OwnCatalogEntryUnchangeable(Forbidden):
    message = "The %(kind)s %(entry_id)s is one of this cloud's own; it cannot be changed or deleted."


Entry = TypeVar("Entry", Service, Endpoint)


def _get(entry_id: str, own: list[Entry], rows: QuerySet[Entry], missing: NotFound) -> Entry:
    """The one of the cloud's own entries ``own`` or of the ``rows`` whose id is ``entry_id``;
    raises ``missing`` when there is none."""
    found = next((entry for entry in own if entry.id == entry_id), None) or rows.filter(id=entry_id).first()
    if found is None:
        raise missing
    return found


# --- services -------------------------------------------------------------------------------------


def service_get(service_id: str) -> Service:
    """The service ``service_id`` (no policy). Raises ``ServiceNotFound``."""
    return _get(service_id, own_services(), Service.objects.all(), ServiceNotFound(service_id=service_id))


def service_show(*, actor: RequestContext, service_id: str) -> Service:
    authorize(actor, "identity:get_service")
    return service_get(service_id)


def service_list(*, actor: RequestContext, service_type: str | None = None, name: str | None = None) -> list[Service]:
    """The cloud's own services, then the registered ones; only those of ``service_type`` and
    ``name`` when given."""
    authorize(actor, "identity:list_services")
    found = [*own_services(), *Service.objects.order_by("created_at", "id")]
    return [s for s in found if service_type in (None, s.type) and name in (None, s.name)]


def service_create(*, actor: RequestContext, service_type: str, name: str = "", enabled: bool = True,
                   extra: dict[str, Any] | None = None) -> Service:
    """Register a service. Raises ``PolicyNotAuthorized`` (``identity:create_service``)."""
    authorize(actor, "identity:create_service")
    return Service.objects.create(type=service_type, name=name, enabled=enabled, extra=extra or {})


def service_update(*, actor: RequestContext, service_id: str, changes: dict[str, Any]) -> Service:
    """Change a registered service's ``type``, ``name``, ``enabled`` or extra attributes (any
    other key). Raises ``PolicyNotAuthorized`` (``identity:update_service``), ``ServiceNotFound``,
    ``OwnCatalogEntryUnchangeable`` (403) for one of the cloud's own."""
    authorize(actor, "identity:update_service")
    service = _service_for_write(service_id)
    changes = dict(changes)
    for field in ("type", "name", "enabled"):
        if field in changes:
            setattr(service, field, changes.pop(field))
    service.extra = {**service.extra, **changes}
    service.save()
    return service


def service_delete(*, actor: RequestContext, service_id: str) -> None:
    """Delete a registered service and its endpoints. Raises ``PolicyNotAuthorized``
    (``identity:delete_service``), ``ServiceNotFound``, ``OwnCatalogEntryUnchangeable`` (403)."""
    authorize(actor, "identity:delete_service")
    service = _service_for_write(service_id)
    with transaction.atomic():
        Endpoint.objects.filter(service_id=service.id).delete()
        service.delete()


def _service_for_write(service_id: str) -> Service:
    if is_own_service(service_id):
        raise OwnCatalogEntryUnchangeable(kind="service", entry_id=service_id)
    return service_get(service_id)


# --- endpoints ------------------------------------------------------------------------------------


def endpoint_get(endpoint_id: str) -> Endpoint:
    """The endpoint ``endpoint_id`` (no policy). Raises ``EndpointNotFound``."""
    return _get(endpoint_id, own_endpoints(), Endpoint.objects.all(), EndpointNotFound(endpoint_id=endpoint_id))


def endpoint_show(*, actor: RequestContext, endpoint_id: str) -> Endpoint:
    authorize(actor, "identity:get_endpoint")
    return endpoint_get(endpoint_id)


def endpoint_list(*, actor: RequestContext, service_id: str | None = None, interface: str | None = None,
                  region_id: str | None = None) -> list[Endpoint]:
    """The cloud's own endpoints, then the registered ones; only those matching the filters given."""
    authorize(actor, "identity:list_endpoints")
    found = [*own_endpoints(), *Endpoint.objects.order_by("created_at", "id")]
    return [e for e in found if service_id in (None, e.service_id) and interface in (None, e.interface)
            and region_id in (None, e.region_id)]


def endpoint_create(*, actor: RequestContext, service_id: str, interface: str, url: str,
                    region_id: str | None = None, region: str | None = None, enabled: bool = True,
                    extra: dict[str, Any] | None = None) -> Endpoint:
    """Register an endpoint of a service (a registered one or one of the cloud's own). ``region``
    (legacy, without ``region_id``) names a region that is created when missing. Raises
    ``PolicyNotAuthorized`` (``identity:create_endpoint``), ``ReferenceInvalid`` (400) for an
    unknown service or region_id, ``EndpointURLInvalid`` (400)."""
    authorize(actor, "identity:create_endpoint")
    endpoint = Endpoint(service_id=service_id, interface=interface, url=url, enabled=enabled, extra=extra or {})
    with transaction.atomic():
        endpoint.region_id = _region_of(region_id, region)
        _check(endpoint)
        endpoint.save()
    return endpoint


def endpoint_update(*, actor: RequestContext, endpoint_id: str, changes: dict[str, Any]) -> Endpoint:
    """Change a registered endpoint's ``service_id``, ``interface``, ``url``, ``region_id`` (or
    legacy ``region``), ``enabled`` or extra attributes (any other key), with the checks of
    ``endpoint_create``. Raises ``PolicyNotAuthorized`` (``identity:update_endpoint``),
    ``EndpointNotFound``, ``OwnCatalogEntryUnchangeable`` (403) for one of the cloud's own,
    ``ReferenceInvalid``, ``EndpointURLInvalid``."""
    authorize(actor, "identity:update_endpoint")
    if is_own_endpoint(endpoint_id):
        raise OwnCatalogEntryUnchangeable(kind="endpoint", entry_id=endpoint_id)
    endpoint = endpoint_get(endpoint_id)
    changes = dict(changes)
    with transaction.atomic():
        if "region_id" in changes or "region" in changes:
            endpoint.region_id = _region_of(changes.pop("region_id", None), changes.pop("region", None))
        for field in ("service_id", "interface", "url", "enabled"):
            if field in changes:
                setattr(endpoint, field, changes.pop(field))
        endpoint.extra = {**endpoint.extra, **changes}
        _check(endpoint)
        endpoint.save()
    return endpoint


def endpoint_delete(*, actor: RequestContext, endpoint_id: str) -> None:
    """Delete a registered endpoint. Raises ``PolicyNotAuthorized`` (``identity:delete_endpoint``),
    ``EndpointNotFound``, ``OwnCatalogEntryUnchangeable`` (403)."""
    authorize(actor, "identity:delete_endpoint")
    if is_own_endpoint(endpoint_id):
        raise OwnCatalogEntryUnchangeable(kind="endpoint", entry_id=endpoint_id)
    endpoint_get(endpoint_id).delete()


def _region_of(region_id: str | None, region: str | None) -> str | None:
    """The endpoint's region id: ``region_id``, else the legacy ``region``, made when missing."""
    if region_id is None and region is not None:
        regions.region_ensure(region)
        return region
    return region_id


def _check(endpoint: Endpoint) -> None:
    if endpoint.region_id is not None and not regions.region_exists(endpoint.region_id):
        raise ReferenceInvalid(attribute="endpoint region_id", target="region table")
    try:
        service_get(endpoint.service_id)
    except ServiceNotFound:
        raise ReferenceInvalid(attribute="endpoint service_id", target="service table") from None
    if url_substitutions_unknown(endpoint.url):
        raise EndpointURLInvalid(url=endpoint.url)
