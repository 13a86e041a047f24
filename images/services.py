"""Glance's slice: image records (API database) and their bytes (files under IMAGE_STORE_DIR).

Visibility as Glance: ``public`` and ``community`` images are seen by everyone, ``private`` and
``shared`` only by their owner's project (and ``shared`` by accepted members); cloud admins see
all. Uploads stream to ``<store>/<id>`` while computing the md5 checksum and the sha512 multihash.
"""
from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Forbidden, Invalid, NotFound

from .models import Image, ImageStatus

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
#: Top-level image attributes a client may set; anything else is a custom property.
SETTABLE = {"name", "visibility", "protected", "os_hidden", "min_disk", "min_ram", "disk_format",
            "container_format", "tags"}
READ_ONLY = {"id", "status", "checksum", "os_hash_algo", "os_hash_value", "size", "virtual_size", "owner",
             "created_at", "updated_at", "self", "file", "schema", "direct_url", "locations"}


class ImageNotFound(NotFound):
    message = "No image found with ID %(image_id)s"


def image_data_path(image_id: str) -> Path:
    return Path(settings.IMAGE_STORE_DIR) / str(image_id)


def _visible(ctx: RequestContext, qs: QuerySet[Image]) -> QuerySet[Image]:
    if ctx.is_admin:
        return qs
    return qs.filter(Q(visibility__in=["public", "community"]) | Q(owner=ctx.project_id)
                     | Q(visibility="shared", members__member=ctx.project_id, members__status="accepted")).distinct()


def image_get(ctx: RequestContext, image_id: str) -> Image:
    """The image if ``ctx`` may see it; ImageNotFound (404) otherwise."""
    image = _visible(ctx, Image.objects.filter(id=image_id)).first()
    if image is None:
        raise ImageNotFound(image_id=image_id)
    return image


def image_find(ctx: RequestContext, ref: str) -> Image:
    """The image ``ref`` names (its id, else its name) if ``ctx`` may see it; ImageNotFound."""
    image = _visible(ctx, Image.objects.filter(Q(id=ref) | Q(name=ref))).order_by("-created_at").first()
    if image is None:
        raise ImageNotFound(image_id=ref)
    return image


def image_get_internal(image_id: str) -> Image:
    image = Image.objects.filter(id=image_id).first()
    if image is None:
        raise ImageNotFound(image_id=image_id)
    return image


def _check_owner(ctx: RequestContext, image: Image) -> None:
    if not (ctx.is_admin or (image.owner == ctx.project_id and ctx.is_project_member)):
        raise Forbidden("You are not permitted to modify this image.")


def _validate(fields: dict[str, Any], ctx: RequestContext) -> None:
    if "visibility" in fields:
        if fields["visibility"] not in VISIBILITIES:
            raise Invalid(f"Invalid visibility value: {fields['visibility']}")
        if fields["visibility"] == "public" and not ctx.is_admin:
            raise Forbidden("You are not authorized to complete publicize_image action.")
    if fields.get("disk_format") not in (None, *DISK_FORMATS):
        raise Invalid(f"Invalid disk format '{fields['disk_format']}' for image.")
    if fields.get("container_format") not in (None, *CONTAINER_FORMATS):
        raise Invalid(f"Invalid container format '{fields['container_format']}' for image.")
    for key in ("min_disk", "min_ram"):
        if key in fields and (not isinstance(fields[key], int) or isinstance(fields[key], bool) or fields[key] < 0):
            raise Invalid(f"{key} must be a non-negative integer.")
    if "tags" in fields and (not isinstance(fields["tags"], list)
                             or not all(isinstance(t, str) and len(t) <= 255 for t in fields["tags"])):
        raise Invalid("tags must be a list of strings.")
    if "name" in fields and fields["name"] is not None and (not isinstance(fields["name"], str)
                                                          or len(fields["name"]) > 255):
        raise Invalid("name must be a string of at most 255 characters.")


def image_create(ctx: RequestContext, **fields: Any) -> Image:
    """Create an image record (status ``queued``); unknown keys become custom properties."""
    bad = READ_ONLY & set(fields) - {"id", "owner"}
    if bad:
        raise Forbidden(f"Attribute '{sorted(bad)[0]}' is read-only.")
    owner = fields.pop("owner", None) or ctx.project_id
    if owner != ctx.project_id and not ctx.is_admin:  # an admin may create an image for another project
        raise Forbidden(f"You are not permitted to create images owned by '{owner}'.")
    _validate(fields, ctx)
    props = {k: v for k, v in fields.items() if k not in SETTABLE and k != "id"}
    for key, value in props.items():
        if not isinstance(value, str | int | float | bool) and value is not None:
            raise Invalid(f"Property {key} must be a string.")
    known = {k: v for k, v in fields.items() if k in SETTABLE}
    if fields.get("id"):
        if Image.all_objects.filter(id=fields["id"]).exists():
            raise Conflict(f"Image with identifier {fields['id']} already exists!")
        known["id"] = str(fields["id"])
    known.setdefault("visibility", "shared")
    return Image.objects.create(owner=owner, properties={k: str(v) for k, v in props.items()}, **known)


def image_list(ctx: RequestContext, *, filters: dict[str, Any], limit: int | None = None, marker: str | None = None,
               sort_key: str = "created_at", sort_dir: str = "desc") -> list[Image]:
    if sort_key not in ("created_at", "updated_at", "name", "id", "size", "status", "disk_format",
                        "container_format", "min_disk", "min_ram", "visibility", "owner"):
        raise Invalid(f"Invalid sort key: {sort_key}.")
    if sort_dir not in ("asc", "desc"):
        raise Invalid(f"Invalid sort direction: {sort_dir}")
    qs = _visible(ctx, Image.objects.all())
    for key in ("name", "status", "owner", "disk_format", "container_format", "id"):
        if filters.get(key):
            qs = qs.filter(**{key: filters[key]})
    if filters.get("visibility"):
        if filters["visibility"] not in (*VISIBILITIES, "all"):
            raise Invalid(f"Invalid visibility value: {filters['visibility']}")
        if filters["visibility"] != "all":
            qs = qs.filter(visibility=filters["visibility"])
    elif not ctx.is_admin:
        qs = qs.exclude(Q(visibility="community") & ~Q(owner=ctx.project_id))
    if filters.get("os_hidden") is not None:
        qs = qs.filter(os_hidden=filters["os_hidden"])
    else:
        qs = qs.filter(os_hidden=False)
    order = [f"-{sort_key}" if sort_dir == "desc" else sort_key, "-id" if sort_dir == "desc" else "id"]
    items = list(qs.order_by(*order))
    if filters.get("tag"):
        items = [i for i in items if filters["tag"] in (i.tags or [])]
    if marker:
        ids = [i.id for i in items]
        if marker not in ids:
            raise NotFound(f"No image found with ID {marker}")
        items = items[ids.index(marker) + 1:]
    return items[:limit] if limit else items


def image_update(ctx: RequestContext, image: Image, changes: Iterable[tuple[str, str, Any]]) -> Image:
    """Apply Glance json-patch operations ``(op, name, value)`` (add/replace/remove)."""
    _check_owner(ctx, image)
    props = dict(image.properties or {})
    updates: dict[str, Any] = {}
    for op, name, value in changes:
        if name in READ_ONLY:
            raise Forbidden(f"Attribute '{name}' is read-only.")
        if op not in ("add", "replace", "remove"):
            raise Invalid(f"Invalid operation: `{op}`")
        if name in SETTABLE:
            if op == "remove":
                raise Forbidden(f"Attribute '{name}' is reserved.")
            updates[name] = value
        elif op == "remove":
            if name not in props:
                raise Conflict(f"Property {name} does not exist.")
            props.pop(name)
        else:
            if op == "replace" and name not in props:
                raise Conflict(f"Property {name} does not exist.")
            props[name] = str(value)
    _validate(updates, ctx)
    if image.status != ImageStatus.QUEUED and {"disk_format", "container_format"} & set(updates):
        raise Forbidden("Attribute container_format can be only replaced for a queued image.")
    for key, value in updates.items():
        setattr(image, key, value)
    image.properties = props
    image.save()
    return image


def image_upload(ctx: RequestContext | None, image: Image, chunks: Iterable[bytes]) -> Image:
    """Store the image's bytes: queued → saving → active, with size, checksum and multihash."""
    if ctx is not None:
        _check_owner(ctx, image)
    if image.status not in (ImageStatus.QUEUED, ImageStatus.SAVING):
        raise Conflict(f"Image status transition from {image.status} to saving is not allowed")
    if not image.disk_format or not image.container_format:
        raise Invalid("Properties disk_format, container_format must be set prior to saving data.")
    updated = Image.objects.filter(pk=image.pk, status=ImageStatus.QUEUED).update(status=ImageStatus.SAVING)
    if not updated and image.status != ImageStatus.SAVING:
        raise Conflict("Image is being uploaded by another request.")
    path = image_data_path(image.id)
    path.parent.mkdir(parents=True, exist_ok=True)
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    tmp = path.with_suffix(".part")
    try:
        with open(tmp, "wb") as fh:
            for chunk in chunks:
                fh.write(chunk)
                md5.update(chunk)
                sha512.update(chunk)
                size += len(chunk)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        Image.objects.filter(pk=image.pk).update(status=ImageStatus.QUEUED)
        raise
    image.status, image.size, image.virtual_size = ImageStatus.ACTIVE, size, size
    image.checksum, image.os_hash_algo, image.os_hash_value = md5.hexdigest(), "sha512", sha512.hexdigest()
    image.save()
    return image


def image_activate_from_file(image: Image, source: Path) -> Image:
    """Store ``source``'s bytes as the image's data (snapshots written by a compute host)."""
    def chunks() -> Iterable[bytes]:
        with open(source, "rb") as fh:
            while block := fh.read(1024 * 1024):
                yield block

    return image_upload(None, image, chunks())


def image_download(ctx: RequestContext, image: Image) -> Path:
    if image.status != ImageStatus.ACTIVE:
        raise NotFound("The requested image has no data.") if image.status == ImageStatus.QUEUED else \
            Conflict(f"Image {image.id} is not active.")
    path = image_data_path(image.id)
    if not path.is_file():  # an active image whose data went missing from the store
        raise NotFound("The requested image has no data.")
    return path


def image_delete(ctx: RequestContext, image: Image) -> None:
    _check_owner(ctx, image)
    if image.protected:
        raise Forbidden(f"Image {image.id} is protected and cannot be deleted.")
    with transaction.atomic():
        image.status = ImageStatus.DELETED
        image.deleted = True
        image.deleted_at = timezone.now()
        image.save(update_fields=["status", "deleted", "deleted_at", "updated_at"])
    image_data_path(image.id).unlink(missing_ok=True)


def image_snapshot_create(ctx: RequestContext, *, name: str, instance_uuid: str,
                          properties: dict[str, Any] | None = None, base: Image | None = None) -> Image:
    """A queued snapshot image owned by the server's project (createImage, shelve, resize-temp)."""
    props = {"instance_uuid": instance_uuid, "image_type": "snapshot", **(properties or {})}
    return Image.objects.create(
        name=name, owner=ctx.project_id, visibility="private", status=ImageStatus.QUEUED,
        disk_format=(base.disk_format if base else "raw") or "raw",
        container_format=(base.container_format if base else "bare") or "bare",
        min_disk=base.min_disk if base else 0, min_ram=base.min_ram if base else 0,
        properties={k: str(v) for k, v in props.items()},
    )


def image_tag(ctx: RequestContext, image: Image, tag: str, *, add: bool) -> None:
    _check_owner(ctx, image)
    tags = list(image.tags or [])
    if add and tag not in tags:
        tags.append(tag)
    elif not add:
        if tag not in tags:
            raise NotFound(f"Tag {tag} not found")
        tags.remove(tag)
    image.tags = tags
    image.save(update_fields=["tags", "updated_at"])


def copy_image_file(image_id: str, target: Path) -> None:
    """Copy an image's bytes to ``target`` (a guest disk or a volume)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(image_data_path(image_id), target)


# --- used by cross-cell ---


def image_delete_internal(image_id: str) -> None:
    """Delete an image the cloud made for itself (a cross-cell move's ``<name>-resize-temp``) with
    its data; no owner or protection check, and an image already gone is fine."""
    Image.objects.filter(id=image_id).update(status=ImageStatus.DELETED, deleted=True, deleted_at=timezone.now())
    image_data_path(image_id).unlink(missing_ok=True)
