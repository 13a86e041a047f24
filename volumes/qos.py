"""QoS specs (Cinder's ``/qos-specs``): admins create named limits for a consumer and associate
them with volume types; a type has at most one set of QoS specs (its ``qos_specs_id``).

Every operation is admin-only (Cinder's ``volume_extension:qos_specs_manage:*``). Specs still
associated with a type cannot be deleted (400) unless forced, which disassociates them first. A
type associated with some specs cannot be associated with others (400) before it is
disassociated.
"""
from __future__ import annotations

from typing import Any

from django.db import IntegrityError

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize

from .models import QosSpecs, VolumeType

CONSUMERS = ("front-end", "back-end", "both")


class QosSpecsNotFound(NotFound):
    message = "No such QoS spec %(specs_id)s."


def _rule(ctx: RequestContext, rule: str) -> None:
    authorize(ctx, f"volume_extension:qos_specs_manage:{rule}", {"project_id": ctx.project_id, "user_id": ctx.user_id})


def _consumer(value: Any) -> str:
    if value not in CONSUMERS:
        raise Invalid(f"Invalid input received: Valid consumer of QoS specs are: {list(CONSUMERS)}")
    return str(value)


def _check_specs(specs: dict[str, Any]) -> dict[str, str]:
    for key, value in specs.items():
        if not isinstance(key, str) or not 0 < len(key) <= 255 or not isinstance(value, str | int | float) \
                or isinstance(value, bool) or len(str(value)) > 255:
            raise Invalid(f"Invalid input received: QoS spec {key!r}: keys and values must be strings of 1 to "
                          "255 characters.")
    return {key: str(value) for key, value in specs.items()}


def qos_specs_get(ctx: RequestContext, specs_id: str) -> QosSpecs:
    """The specs by id (admin). Raises QosSpecsNotFound (404)."""
    _rule(ctx, "get")
    specs = QosSpecs.objects.filter(pk=specs_id).first()
    if specs is None:
        raise QosSpecsNotFound(specs_id=specs_id)
    return specs


def qos_specs_list(ctx: RequestContext) -> list[QosSpecs]:
    _rule(ctx, "get_all")
    return list(QosSpecs.objects.order_by("created_at", "id"))


def qos_specs_create(ctx: RequestContext, *, name: str, consumer: str = "back-end",
                     specs: dict[str, Any] | None = None) -> QosSpecs:
    """Create QoS specs (admin). Raises Invalid (400) for an empty name, an unknown consumer or a
    spec that is not a short string, Conflict (409) when the name is taken."""
    _rule(ctx, "create")
    name = name.strip()
    if not name:
        raise Invalid("Invalid input received: QoS specs name can not be empty.")
    values = _check_specs(specs or {})
    try:
        with api_atomic():
            return QosSpecs.objects.create(name=name, consumer=_consumer(consumer), specs=values)
    except IntegrityError:
        raise Conflict(f"QoS Specs {name} already exists.") from None


def qos_specs_update(ctx: RequestContext, qos: QosSpecs, *, specs: dict[str, Any]) -> dict[str, str]:
    """Merge ``specs`` into the specs (admin); a ``consumer`` key changes the consumer instead."""
    _rule(ctx, "update")
    specs = dict(specs)
    consumer = _consumer(specs.pop("consumer")) if "consumer" in specs else None
    values = _check_specs(specs)
    with api_atomic():
        locked = QosSpecs.objects.select_for_update().get(pk=qos.pk)
        locked.specs = {**(locked.specs or {}), **values}
        if consumer is not None:
            locked.consumer = consumer
        locked.save(update_fields=["specs", "consumer", "updated_at"])
    return {**values, **({"consumer": consumer} if consumer is not None else {})}


def qos_specs_delete_keys(ctx: RequestContext, qos: QosSpecs, *, keys: list[str]) -> None:
    """Remove ``keys`` from the specs (admin); a key the specs lack is a 404 and nothing changes."""
    _rule(ctx, "update")
    with api_atomic():
        locked = QosSpecs.objects.select_for_update().get(pk=qos.pk)
        for key in keys:
            if key not in (locked.specs or {}):
                raise NotFound(f"QoS spec {key} could not be found in QoS specs {qos.id}.")
        locked.specs = {k: v for k, v in locked.specs.items() if k not in keys}
        locked.save(update_fields=["specs", "updated_at"])


def qos_specs_delete(ctx: RequestContext, qos: QosSpecs, *, force: bool = False) -> None:
    """Delete the specs (admin). Still associated with a type: refused (400) unless ``force``,
    which disassociates every type first."""
    _rule(ctx, "delete")
    with api_atomic():
        associated = VolumeType.objects.filter(qos_specs=qos)
        if associated.exists():
            if not force:
                raise Invalid(f"QoS Specs {qos.id} is still associated with entities.")
            associated.update(qos_specs=None)
        qos.delete()


def qos_specs_associations(ctx: RequestContext, qos: QosSpecs) -> list[VolumeType]:
    """The volume types the specs are associated with (admin)."""
    _rule(ctx, "get_all")
    return list(qos.volume_types.order_by("name"))


def _type(type_id: str | None) -> VolumeType:
    if not type_id:
        raise Invalid("Volume Type id must not be None.")
    vt = VolumeType.objects.filter(pk=type_id).first()
    if vt is None:
        raise NotFound(f"Volume type {type_id} could not be found.")
    return vt


def qos_specs_associate(ctx: RequestContext, qos: QosSpecs, *, type_id: str | None) -> None:
    """Associate the specs with a type (admin). 404 for an unknown type, 400 for a type already
    associated with other specs."""
    _rule(ctx, "update")
    with api_atomic():
        vt = _type(type_id)
        if vt.qos_specs_id not in (None, qos.id):
            raise Invalid(f"Invalid volume type: Type {vt.id} is already associated with another qos specs: "
                          f"{vt.qos_specs_id}")
        VolumeType.objects.filter(pk=vt.pk).update(qos_specs=qos)


def qos_specs_disassociate(ctx: RequestContext, qos: QosSpecs, *, type_id: str | None) -> None:
    """Disassociate the specs from a type (admin); 404 for an unknown type."""
    _rule(ctx, "update")
    with api_atomic():
        vt = _type(type_id)
        VolumeType.objects.filter(pk=vt.pk, qos_specs=qos).update(qos_specs=None)


def qos_specs_disassociate_all(ctx: RequestContext, qos: QosSpecs) -> None:
    _rule(ctx, "update")
    VolumeType.objects.filter(qos_specs=qos).update(qos_specs=None)
