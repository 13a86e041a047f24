"""Volume type encryption (Cinder's ``/types/{type_id}/encryption``, admins): a type's encryption
spec (``provider``, ``cipher``, ``key_size``, ``control_location``); volumes created with the type
are ``encrypted``. As Cinder, a spec is created, changed and deleted only while no volume has the
type (400 otherwise), and a type has at most one.

What an encrypted volume means for a guest is the compute's business: Nova asks a key manager
(Barbican) for the volume's key and has libvirt open the LUKS device. Cloudcore has no key manager
and its compute attaches volume files as they are, so it refuses to attach an encrypted volume
(``servers.services.volume_attachments.check_encryption_supported``) rather than hand the guest
what would be plaintext.
"""
from __future__ import annotations

from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from .models import Volume, VolumeType, VolumeTypeEncryption

#: Where the encryption happens (Cinder's choices).
CONTROL_LOCATIONS = ("front-end", "back-end")
#: The fields of a spec a request may set.
SPEC_FIELDS = ("provider", "cipher", "key_size", "control_location")


class EncryptionNotFound(NotFound):
    message = "Volume type encryption for type %(type_id)s does not exist."


class EncryptionExists(Invalid):
    message = "Volume type encryption for type %(type_id)s already exists."


def _authorize(ctx: RequestContext, action: str) -> None:
    authorize(ctx, f"volume_extension:volume_type_encryption:{action}",
              {"project_id": ctx.project_id, "user_id": ctx.user_id})


def _in_use(vt: VolumeType, verb: str) -> None:
    if Volume.objects.filter(volume_type=vt).exists():
        raise Invalid(f"Cannot {verb} encryption specification. Volume type in use.")


def _checked(spec: dict[str, Any]) -> dict[str, Any]:
    if "control_location" in spec and spec["control_location"] not in CONTROL_LOCATIONS:
        raise Invalid(f"Invalid input received: Valid control location are: {', '.join(CONTROL_LOCATIONS)}")
    if spec.get("key_size") is not None and int(spec["key_size"]) < 0:
        raise Invalid("Invalid input received: key_size must be a non-negative integer.")
    return {k: spec[k] for k in SPEC_FIELDS if k in spec}


def encryption_get(ctx: RequestContext, vt: VolumeType) -> VolumeTypeEncryption | None:
    """The type's spec, or None (Cinder answers ``{}`` for a type without one)."""
    _authorize(ctx, "get")
    return VolumeTypeEncryption.objects.filter(volume_type=vt).first()


def encryption_create(ctx: RequestContext, vt: VolumeType, *, spec: dict[str, Any]) -> VolumeTypeEncryption:
    """Give ``vt`` an encryption spec (``provider`` required, ``control_location`` front-end by
    default). Raises Invalid while the type has volumes, EncryptionExists for a second spec."""
    _authorize(ctx, "create")
    _in_use(vt, "create")
    if VolumeTypeEncryption.objects.filter(volume_type=vt).exists():
        raise EncryptionExists(type_id=vt.id)
    fields = _checked(spec)
    return VolumeTypeEncryption.objects.create(volume_type=vt, **fields)


def encryption_update(ctx: RequestContext, vt: VolumeType, *, spec: dict[str, Any]) -> VolumeTypeEncryption:
    """Change the fields ``spec`` names. Raises Invalid while the type has volumes,
    EncryptionNotFound where it has no spec."""
    _authorize(ctx, "update")
    _in_use(vt, "update")
    enc = VolumeTypeEncryption.objects.filter(volume_type=vt).first()
    if enc is None:
        raise EncryptionNotFound(type_id=vt.id)
    fields = _checked(spec)
    for key, value in fields.items():
        setattr(enc, key, value)
    enc.save()
    return enc


def encryption_delete(ctx: RequestContext, vt: VolumeType) -> None:
    """Remove the type's spec. Raises Invalid while the type has volumes, EncryptionNotFound where
    it has none."""
    _authorize(ctx, "delete")
    enc = VolumeTypeEncryption.objects.filter(volume_type=vt).first()
    if enc is None:
        raise EncryptionNotFound(type_id=vt.id)
    _in_use(vt, "delete")
    enc.delete()
