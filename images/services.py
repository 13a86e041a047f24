"""Glance's slice: image records (API database) and their bytes (files under IMAGE_STORE_DIR).

Visibility as Glance: ``public`` and ``community`` images are seen by everyone, ``private`` and
``shared`` only by their owner's project (and ``shared`` by its members: in lists once they
accepted); cloud admins see all. Uploads stream to ``<store>/<id>.part``; the bytes are inspected
against the declared ``disk_format`` (``formats``), hashed (md5 checksum, sha512 multihash) and
moved into place. ``glance-direct`` import stages them under ``<store>/staging/<id>`` first.
The tasks API's ``import`` (``image_task_*``) makes an image from a URL's data: the API records
the task, the conductor reads the URL (``fetch``) and stores the data as an upload.
"""
from __future__ import annotations

import hashlib
import logging
import shutil
from collections.abc import Iterable
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from cloudcore.core import policy, stamps
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import CloudcoreError, Conflict, Forbidden, Invalid, NotFound
from cloudcore.core.prepared import prepared_objects
from cloudcore.core.stamps import Remembered
from conductor import rpc as conductor_rpc

from . import fetch, formats
from .models import Image, ImageMember, ImageStatus, ImageTask, TaskStatus
from .policies import TASKS_API_ACCESS

log = logging.getLogger(__name__)

DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
VISIBILITIES = ("public", "private", "shared", "community")
MEMBER_STATUSES = ("pending", "accepted", "rejected")
#: The format of a server snapshot's bytes: the virt driver's guest disks are raw (a qcow2 image is
#: converted when a guest is spawned from it, as Nova does with ``force_raw_images``).
SNAPSHOT_DISK_FORMAT = "raw"
#: Top-level image attributes a client may set; anything else is a custom property.
SETTABLE = {"name", "visibility", "protected", "os_hidden", "min_disk", "min_ram", "disk_format",
            "container_format", "tags"}
READ_ONLY = {"id", "status", "checksum", "os_hash_algo", "os_hash_value", "size", "virtual_size",
             "created_at", "updated_at", "self", "file", "schema", "direct_url", "locations"}
#: Names Glance keeps for itself: these properties, and every property in its ``os_glance`` namespace
#: (the state of its imports), may be neither set nor changed by a client (403).
RESERVED = frozenset({"location", "deleted", "deleted_at"})
RESERVED_NAMESPACE = "os_glance"


class ImageNotFound(NotFound):
    message = "No image found with ID %(image_id)s"


def image_data_path(image_id: str) -> Path:
    return Path(settings.IMAGE_STORE_DIR) / str(image_id)


def _visible(ctx: RequestContext, qs: QuerySet[Image],
             member_statuses: tuple[str, ...] = MEMBER_STATUSES) -> QuerySet[Image]:
    """``qs`` narrowed to what ``ctx`` sees: public and community images, its own, and shared
    images it is a member of with one of ``member_statuses`` (any for a show, ``accepted`` for a
    list, as Glance). Cloud admins see everything."""
    if ctx.is_admin:
        return qs
    return qs.filter(Q(visibility__in=["public", "community"]) | Q(owner=ctx.project_id)
                     | Q(visibility="shared", members__member=ctx.project_id,
                         members__status__in=member_statuses)).distinct()


def _sees(ctx: RequestContext, image: Image) -> bool:
    """``_visible``'s rule (any member status) for one image already read."""
    if ctx.is_admin or image.visibility in ("public", "community") or image.owner == ctx.project_id:
        return True
    return image.visibility == "shared" and image.members.filter(member=ctx.project_id,
                                                                 status__in=MEMBER_STATUSES).exists()


#: the images ``POST /servers`` reads, by id: remembered while no image is written
#: (``cloudcore.core.stamps``; ``images.apps`` watches the rows, ``_images_updated`` bumps it)
IMAGES_STAMP = "images.images"
_images: Remembered[Image] = Remembered(IMAGES_STAMP)


def image_get_remembered(ctx: RequestContext, image_id: str) -> Image:
    """``image_get``'s image, remembered by the process (shared by its threads: read it, do not
    change it)."""
    image = _images.get(image_id, lambda: _image_read(image_id))
    if image is None or not _sees(ctx, image):
        raise ImageNotFound(image_id=image_id)
    return image


def _images_updated(images: QuerySet[Image], **values: Any) -> int:
    """``images.update(**values)``, bumping the images' stamp when a row changed (an update sends no
    ``post_save``, which ``images.apps`` watches); the number of rows updated."""
    updated = images.update(**values)
    if updated:
        stamps.bump(IMAGES_STAMP)
    return updated


def _image_read(image_id: str) -> Image | None:
    found: list[Image] = prepared_objects("images.image_get", _image_by_id, (image_id,))
    return found[0] if found else None


def image_get(ctx: RequestContext, image_id: str) -> Image:
    """The image if ``ctx`` may see it (a member of a shared image may, before accepting it:
    that is how it finds the image to accept); ImageNotFound (404) otherwise. The row is read by
    its id alone and the rule checked on it (a membership read only for another project's shared
    image): the query with ``_visible``'s join and DISTINCT cost ``POST /servers`` a sixth of its
    CPU in the web process to build."""
    image = _image_read(image_id)
    if image is None or not _sees(ctx, image):
        raise ImageNotFound(image_id=image_id)
    return image


def _image_by_id(image_id: str) -> QuerySet[Image]:
    # the statement every POST /servers makes, its SQL built once per process (prepared_objects)
    return Image.objects.filter(id=image_id)


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


def _check_not_reserved(name: str) -> None:
    if name in RESERVED or name.startswith(RESERVED_NAMESPACE):
        raise Forbidden(f"Attribute '{name}' is reserved.")


def _new_image_values(ctx: RequestContext, fields: dict[str, Any]) -> dict[str, Any]:
    """The columns of a new image ``ctx`` asks for with ``fields`` (Glance's image attributes;
    unknown keys are custom properties). A read-only attribute (``status``, ``checksum``, ...) or
    a reserved name (``RESERVED``, the ``os_glance`` namespace) is a 403, as is an owner other than
    the actor's project for a non-admin; a bad value a 400, an id already taken a 409."""
    bad = READ_ONLY & set(fields) - {"id"}
    if bad:
        raise Forbidden(f"Attribute '{sorted(bad)[0]}' is read-only.")
    for name in sorted(fields):
        _check_not_reserved(name)
    fields = dict(fields)
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
    return {"owner": owner, "properties": {k: str(v) for k, v in props.items()}, **known}


def image_create(ctx: RequestContext, **fields: Any) -> Image:
    """Create an image record (status ``queued``) from Glance's attributes (``_new_image_values``:
    what is refused, and how); nothing is created when one is refused."""
    return Image.objects.create(**_new_image_values(ctx, fields))


def image_list(ctx: RequestContext, *, filters: dict[str, Any], limit: int | None = None, marker: str | None = None,
               sort_key: str = "created_at", sort_dir: str = "desc") -> list[Image]:
    if sort_key not in ("created_at", "updated_at", "name", "id", "size", "status", "disk_format",
                        "container_format", "min_disk", "min_ram", "visibility", "owner"):
        raise Invalid(f"Invalid sort key: {sort_key}.")
    if sort_dir not in ("asc", "desc"):
        raise Invalid(f"Invalid sort direction: {sort_dir}")
    member_status = filters.get("member_status") or "accepted"
    if member_status not in (*MEMBER_STATUSES, "all"):
        raise Invalid(f"Invalid status value: {member_status}")
    qs = _visible(ctx, Image.objects.all(),
                  MEMBER_STATUSES if member_status == "all" else (member_status,))
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
    if filters.get("properties"):
        wanted = filters["properties"]
        items = [i for i in items if all((i.properties or {}).get(k) == v for k, v in wanted.items())]
    if marker:
        items = _after(items, marker, NotFound(f"No image found with ID {marker}"))
    return items[:limit] if limit else items


def _after(rows: list[Any], marker: str, missing: CloudcoreError) -> list[Any]:
    """The rows after the one whose id is ``marker`` (``missing`` raised when none is)."""
    ids = [row.id for row in rows]
    if marker not in ids:
        raise missing
    return rows[ids.index(marker) + 1:]


def image_update(ctx: RequestContext, image: Image, changes: Iterable[tuple[str, str, Any]]) -> Image:
    """Apply Glance json-patch operations ``(op, name, value)`` (add/replace/remove), all or none.

    Read-only attributes and reserved names are a 403. Only a cloud admin may give the image to
    another project (``owner``, a string or null): the owner's project may not (403), as in Glance."""
    _check_owner(ctx, image)
    props = dict(image.properties or {})
    updates: dict[str, Any] = {}
    for op, name, value in changes:
        if name in READ_ONLY:
            raise Forbidden(f"Attribute '{name}' is read-only.")
        _check_not_reserved(name)
        if op not in ("add", "replace", "remove"):
            raise Invalid(f"Invalid operation: `{op}`")
        if name == "owner":
            if op == "remove":
                raise Forbidden("Attribute 'owner' is reserved.")
            if not ctx.is_admin:
                raise Forbidden("Owner can't be updated by non admin.")
            if value is not None and (not isinstance(value, str) or len(value) > 255):
                raise Invalid("owner must be a string of at most 255 characters or null.")
            updates[name] = value
        elif name in SETTABLE:
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


def _claim(image: Image, *, source: str, target: str) -> None:
    """Move ``image`` from ``source`` to ``target`` status with a compare-and-swap update, so two
    concurrent uploads (or stage and upload) cannot both write its bytes."""
    if not _images_updated(Image.objects.filter(pk=image.pk, status=source), status=target):
        raise Conflict(f"Image status transition from {image.status} to {target} is not allowed")
    image.status = target


def _receive(chunks: Iterable[bytes], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as fh:
        for chunk in chunks:
            fh.write(chunk)


def _store(image: Image, received: Path) -> Image:
    """Make the bytes at ``received`` the image's data: inspect them against the declared
    ``disk_format`` (ImageFormatMismatch / ImageUnsafe, see ``formats``), hash them (md5 checksum,
    sha512 multihash), move them into the store and activate the image: only from the status it
    has here (a compare-and-swap), so that an image deleted while its data came in stays deleted
    (Conflict, its data dropped) instead of coming back active."""
    found = formats.inspect(received, image.disk_format)
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    with open(received, "rb") as fh:
        while block := fh.read(1024 * 1024):
            md5.update(block)
            sha512.update(block)
            size += len(block)
    stored = image_data_path(image.id)
    received.replace(stored)
    values = {"status": ImageStatus.ACTIVE, "size": size, "virtual_size": found.virtual_size if found else size,
              "checksum": md5.hexdigest(), "os_hash_algo": "sha512", "os_hash_value": sha512.hexdigest(),
              "updated_at": timezone.now()}
    if not _images_updated(Image.objects.filter(pk=image.pk, status=image.status, deleted=False), **values):
        stored.unlink(missing_ok=True)
        raise Conflict(f"Image {image.id} changed while its data was stored (deleted?): the data is dropped")
    for field, value in values.items():
        setattr(image, field, value)
    return image


def _require_formats(image: Image) -> None:
    if not image.disk_format or not image.container_format:
        raise Invalid("Properties disk_format, container_format must be set prior to saving data.")


def image_upload(ctx: RequestContext | None, image: Image, chunks: Iterable[bytes]) -> Image:
    """Store the image's bytes: queued → saving → active, with size, checksum and multihash.

    The content is inspected before the image activates; bytes that are not the declared
    ``disk_format`` (or an unsafe qcow2) are discarded with a 400 and the image stays queued."""
    if ctx is not None:
        _check_owner(ctx, image)
    _require_formats(image)
    _claim(image, source=ImageStatus.QUEUED, target=ImageStatus.SAVING)
    tmp = image_data_path(image.id).with_suffix(".part")
    try:
        _receive(chunks, tmp)
        return _store(image, tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        _images_updated(Image.objects.filter(pk=image.pk), status=ImageStatus.QUEUED)
        image.status = ImageStatus.QUEUED
        raise


# --- interoperable image import: glance-direct (in the request) and web-download (by the conductor) ---

IMPORT_METHODS = ("glance-direct", "web-download")
#: the type of the task a ``web-download`` import runs as (Glance's name; not for ``POST /v2/tasks``)
IMAGE_IMPORT_TASK = "api_image_import"


def staging_path(image_id: str) -> Path:
    return Path(settings.IMAGE_STORE_DIR) / "staging" / str(image_id)


def image_stage(ctx: RequestContext, image: Image, chunks: Iterable[bytes]) -> Image:
    """``PUT /v2/images/{id}/stage``: keep the bytes in the staging area (queued → uploading);
    ``image_import`` makes them the image's data."""
    _check_owner(ctx, image)
    _claim(image, source=ImageStatus.QUEUED, target=ImageStatus.UPLOADING)
    target = staging_path(image.id)
    try:
        _receive(chunks, target)
    except BaseException:
        target.unlink(missing_ok=True)
        _images_updated(Image.objects.filter(pk=image.pk), status=ImageStatus.QUEUED)
        raise
    image.size = target.stat().st_size
    image.save(update_fields=["size", "updated_at"])
    return image


def image_import(ctx: RequestContext, image: Image, *, method: Any) -> Image:
    """``POST /v2/images/{id}/import``. ``glance-direct``: the staged bytes are inspected and
    stored (uploading → importing → active), in this request. Content that is not the declared
    format is refused (400) like an upload, its staged bytes dropped and the image queued again.
    ``web-download``: see ``_web_download``."""
    _check_owner(ctx, image)
    name = method.get("name") if isinstance(method, dict) else None
    if name not in IMPORT_METHODS:
        raise Invalid(f"Import method {name} is not valid." if name else "Import request requires a 'method' field.")
    if name == "web-download":
        return _web_download(ctx, image, method)
    if image.status != ImageStatus.UPLOADING or not staging_path(image.id).is_file():
        raise Conflict("Image needs to be staged before 'glance-direct' method can be used")
    _require_import_formats(image)
    _claim(image, source=ImageStatus.UPLOADING, target=ImageStatus.IMPORTING)
    staged = staging_path(image.id)
    try:
        return _store(image, staged)
    except BaseException:
        _import_undone(image, staged)
        raise


def _require_import_formats(image: Image) -> None:
    """Either import method needs the image's formats first: Glance's 409, not the upload's 400."""
    for field in ("disk_format", "container_format"):
        if not getattr(image, field):
            raise Conflict(f"'{field}' needs to be set before import")


def _import_undone(image: Image, staged: Path) -> None:
    """An import that failed (either method): its staged bytes dropped and the image, if it is still
    ``importing`` (not deleted meanwhile), queued again without data."""
    staged.unlink(missing_ok=True)
    _images_updated(Image.objects.filter(pk=image.pk, status=ImageStatus.IMPORTING), status=ImageStatus.QUEUED,
                    size=None)
    image.status, image.size = ImageStatus.QUEUED, None


def _web_download(ctx: RequestContext, image: Image, method: dict[str, Any]) -> Image:
    """``web-download``: a queued image with its formats set is claimed ``importing`` and an
    ``api_image_import`` task (the image's task list shows it) is run by the conductor once this
    commits (``image_task_run``): the data at ``uri`` is read as a tasks API import reads its URL
    (``images.fetch``: http(s), allowed ports, global addresses, bounded) into the staging area and
    stored as ``glance-direct`` stores it (active). If it cannot be, the image is queued again and the
    task ends ``failure`` with the reason. A ``uri`` missing or refused by those rules is a 400 here."""
    uri = method.get("uri")
    if not uri:
        raise Invalid("URI for web-download does not exist in request")
    try:
        fetch.check_url(uri)
    except Invalid as exc:
        raise Invalid(f"URI for web-download does not pass filtering: {uri} ({exc})") from None
    if image.status != ImageStatus.QUEUED:
        raise Conflict("Image needs to be in 'queued' state to use 'web-download' method")
    _require_import_formats(image)
    with transaction.atomic():
        _claim(image, source=ImageStatus.QUEUED, target=ImageStatus.IMPORTING)
        task = ImageTask.objects.create(type=IMAGE_IMPORT_TASK, owner=image.owner or ctx.project_id or "",
                                        input={"image_id": image.id, "import_req": {"method": method}},
                                        image_id=image.id, request_id=ctx.request_id, user_id=ctx.user_id)
    transaction.on_commit(partial(conductor_rpc.image_task_run, ctx=ctx, task_id=task.id))
    return image


def image_activate_from_file(image: Image, source: Path) -> Image:
    """Store ``source``'s bytes as the image's data (snapshots written by a compute host)."""
    def chunks() -> Iterable[bytes]:
        with open(source, "rb") as fh:
            while block := fh.read(1024 * 1024):
                yield block

    return image_upload(None, image, chunks())


def image_deactivate(ctx: RequestContext, image: Image, *, active: bool) -> Image:
    """Glance's ``actions/deactivate`` (``active`` False) and ``actions/reactivate``: an active
    image's data can no longer be downloaded (except by admins) nor booted or copied into a
    volume, until it is reactivated. Either is a no-op on an image already in the target state."""
    _check_owner(ctx, image)
    target, source = (ImageStatus.ACTIVE, ImageStatus.DEACTIVATED) if active else \
        (ImageStatus.DEACTIVATED, ImageStatus.ACTIVE)
    if image.status == target:
        return image
    if image.status != source:
        verb = "reactivate" if active else "deactivate"
        raise Forbidden(f"Not allowed to {verb} image in status '{image.status}'")
    _claim(image, source=source, target=target)
    return image


def image_download(ctx: RequestContext, image: Image) -> Path | None:
    """The file holding the image's data; None while it has none (queued, or its data still on
    its way: Glance answers those with 204 and no body). A deactivated image's data is for admins
    only (403); an active image whose file went missing from the store is a 404."""
    if image.status == ImageStatus.DEACTIVATED and not ctx.is_admin:
        raise Forbidden("The requested image has been deactivated. Image data download is forbidden.")
    if image.status not in (ImageStatus.ACTIVE, ImageStatus.DEACTIVATED):
        return None
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
    staging_path(image.id).unlink(missing_ok=True)


def image_snapshot_create(ctx: RequestContext, *, name: str, instance_uuid: str,
                          properties: dict[str, Any] | None = None, base: Image | None = None) -> Image:
    """A queued snapshot image owned by the server's project (createImage, shelve, resize-temp).

    Its ``disk_format`` is ``SNAPSHOT_DISK_FORMAT`` whatever the base image's: that is what the
    compute uploads (its guest disks are raw, see ``compute.virt.libvirt``), and the upload is
    inspected like any other."""
    props = {"instance_uuid": instance_uuid, "image_type": "snapshot", **(properties or {})}
    return Image.objects.create(
        name=name, owner=ctx.project_id, visibility="private", status=ImageStatus.QUEUED,
        disk_format=SNAPSHOT_DISK_FORMAT,
        container_format=(base.container_format if base else "bare") or "bare",
        min_disk=base.min_disk if base else 0, min_ram=base.min_ram if base else 0,
        properties={k: str(v) for k, v in props.items()},
    )


def image_properties_only_create(ctx: RequestContext, *, name: str, properties: dict[str, Any], min_disk: int = 0,
                                 min_ram: int = 0) -> Image:
    """An ``active`` image with no data (size 0, ``raw``/``bare``, the hashes of nothing) owned by
    ``ctx``'s project, private: a volume-backed server's snapshot, whose ``block_device_mapping``
    property names the volume snapshots that hold its disks (Nova activates such an image by
    uploading zero bytes, which forces those formats)."""
    return Image.objects.create(
        name=name, owner=ctx.project_id, visibility="private", status=ImageStatus.ACTIVE,
        disk_format="raw", container_format="bare", size=0, virtual_size=0, min_disk=min_disk, min_ram=min_ram,
        checksum=hashlib.md5(b"", usedforsecurity=False).hexdigest(), os_hash_algo="sha512",
        os_hash_value=hashlib.sha512(b"").hexdigest(),
        properties={k: str(v) for k, v in properties.items()},
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
    _images_updated(Image.objects.filter(id=image_id), status=ImageStatus.DELETED, deleted=True,
                    deleted_at=timezone.now())
    image_data_path(image_id).unlink(missing_ok=True)


# --- members: sharing a ``shared`` image with other projects (Glance's image members) ---


class ImageMemberNotFound(NotFound):
    message = "%(member_id)s is not a member of image %(image_id)s"


def _shared_only(image: Image) -> None:
    if image.visibility != "shared":
        raise Forbidden("Only shared images have members.")


def image_member_create(ctx: RequestContext, image: Image, *, member: Any) -> ImageMember:
    """The image's owner shares it with project ``member`` (status ``pending`` until that project
    accepts). Only ``shared`` images have members (403); a second membership is a 409."""
    _check_owner(ctx, image)
    _shared_only(image)
    if not isinstance(member, str) or not member or len(member) > 255:
        raise Invalid("Member to be added not specified")
    with transaction.atomic():
        if image.members.filter(member=member).exists():
            raise Conflict(f"Member {member} is duplicated for image {image.id}")
        return ImageMember.objects.create(image=image, member=member)


def image_member_list(ctx: RequestContext, image: Image) -> list[ImageMember]:
    """The owner (or an admin) sees every member; a member sees only its own membership."""
    _shared_only(image)
    qs = image.members.order_by("created_at", "member")
    if not (ctx.is_admin or image.owner == ctx.project_id):
        qs = qs.filter(member=ctx.project_id)
    return list(qs)


def image_member_get(ctx: RequestContext, image: Image, member_id: str) -> ImageMember:
    found = [m for m in image_member_list(ctx, image) if m.member == member_id]
    if not found:
        raise ImageMemberNotFound(member_id=member_id, image_id=image.id)
    return found[0]


def image_member_update(ctx: RequestContext, image: Image, member_id: str, *, status: Any) -> ImageMember:
    """The member project accepts, rejects or puts back to pending its membership; nobody else
    may (not even the owner: whether a shared image shows in a project's list is its choice)."""
    membership = image_member_get(ctx, image, member_id)
    if member_id != ctx.project_id:
        raise Forbidden("You are not permitted to modify 'status' on this image member.")
    if status not in MEMBER_STATUSES:
        raise Invalid(f"Invalid status: {status!r}; must be one of {', '.join(MEMBER_STATUSES)}.")
    membership.status = status
    membership.save(update_fields=["status", "updated_at"])
    return membership


def image_member_delete(ctx: RequestContext, image: Image, member_id: str) -> None:
    """The owner stops sharing the image with ``member_id``."""
    _check_owner(ctx, image)
    image_member_get(ctx, image, member_id).delete()


# --- tasks (Glance's /v2/tasks): the legacy ``import`` of an image from a URL, run by the conductor ---

TASK_TYPES = ("import",)
TASK_STATUSES = (TaskStatus.PENDING, TaskStatus.PROCESSING, TaskStatus.SUCCESS, TaskStatus.FAILURE)
TASK_SORT_KEYS = ("created_at", "updated_at", "id", "type", "status", "owner", "expires_at")
#: what an ``import`` task's input must hold
IMPORT_INPUT = ("import_from", "import_from_format", "image_properties")


class ImageTaskNotFound(NotFound):
    message = "Task with the given id %(task_id)s was not found"


def _tasks_api(ctx: RequestContext) -> None:
    if not policy.can(ctx, TASKS_API_ACCESS):
        raise Forbidden(f"You are not authorized to complete {TASKS_API_ACCESS} action.")


def image_task_create(ctx: RequestContext, *, task_type: Any, task_input: Any) -> ImageTask:
    """A ``pending`` task, run by the conductor once it is committed (``image_task_run``).

    Only ``import`` is a type (400 otherwise). Its input must name an http(s) URL (``import_from``),
    the format of the data there (``import_from_format``) and the attributes of the image to make
    (``image_properties``), refused at once (400, 403) where ``image_create`` would refuse them for
    ``ctx``. Policy ``tasks_api_access`` (cloud admins) first."""
    _tasks_api(ctx)
    if task_type not in TASK_TYPES:
        raise Invalid(f"Invalid type value: {task_type}")
    if not isinstance(task_input, dict):
        raise Invalid("Task input must be a JSON object.")
    for key in IMPORT_INPUT:
        if key not in task_input:
            raise Invalid(f"Input does not contain '{key}' field")
    fetch.check_url(task_input["import_from"])
    if task_input["import_from_format"] not in DISK_FORMATS:
        raise Invalid(f"Invalid import_from_format: {task_input['import_from_format']}")
    if not isinstance(task_input["image_properties"], dict):
        raise Invalid("image_properties must be a JSON object.")
    _new_image_values(ctx, task_input["image_properties"])
    if not ctx.project_id:
        raise Forbidden("You are not permitted to create this task with owner as: None")
    task = ImageTask.objects.create(type=task_type, owner=ctx.project_id, input=task_input,
                                    request_id=ctx.request_id, user_id=ctx.user_id)
    transaction.on_commit(partial(conductor_rpc.image_task_run, ctx=ctx, task_id=task.id))
    return task


def image_task_get(ctx: RequestContext, task_id: str) -> ImageTask:
    """The task if ``ctx`` may use the tasks API and see it (its project's, or any for an admin)."""
    _tasks_api(ctx)
    task = ImageTask.objects.filter(id=task_id).first()
    if task is None or not (ctx.is_admin or task.owner == ctx.project_id):
        raise ImageTaskNotFound(task_id=task_id)
    return task


def image_task_list(ctx: RequestContext, *, status: str | None = None, task_type: str | None = None,
                    limit: int | None = None, marker: str | None = None, sort_key: str = "created_at",
                    sort_dir: str = "desc") -> list[ImageTask]:
    """The tasks ``ctx`` sees (its project's; an admin all), filtered, sorted and paged as Glance's."""
    _tasks_api(ctx)
    if status and status not in TASK_STATUSES:
        raise Invalid(f"Invalid status value: {status}")
    if task_type and task_type not in (*TASK_TYPES, IMAGE_IMPORT_TASK):
        raise Invalid(f"Invalid type value: {task_type}")
    if sort_key not in TASK_SORT_KEYS:
        raise Invalid(f"Invalid sort key: {sort_key}")
    if sort_dir not in ("asc", "desc"):
        raise Invalid(f"Invalid sort direction: {sort_dir}")
    qs = ImageTask.objects.all() if ctx.is_admin else ImageTask.objects.filter(owner=ctx.project_id)
    if status:
        qs = qs.filter(status=status)
    if task_type:
        qs = qs.filter(type=task_type)
    prefix = "-" if sort_dir == "desc" else ""
    tasks = list(qs.order_by(f"{prefix}{sort_key}", f"{prefix}id"))
    if marker:
        tasks = _after(tasks, marker, Invalid(f"Invalid marker. Task {marker} could not be found."))
    return tasks[:limit] if limit is not None else tasks


def image_tasks_of(image: Image) -> list[ImageTask]:
    """``GET /v2/images/{id}/tasks`` (2.12): the tasks that made ``image``, oldest first (whoever
    may see the image sees them)."""
    return list(ImageTask.objects.filter(image_id=image.id).order_by("created_at", "id"))


def _task_finish(task: ImageTask, status: str, *, result: dict[str, Any] | None = None, message: str = "") -> None:
    now = timezone.now()
    ImageTask.objects.filter(id=task.id, status=TaskStatus.PROCESSING).update(
        status=status, result=result, message=message, updated_at=now,
        expires_at=now + timedelta(hours=settings.IMAGE_TASK_TIME_TO_LIVE))


def image_task_run(ctx: RequestContext, *, task_id: str) -> None:
    """Run a ``pending`` task (the conductor, after the API's commit): claimed ``processing`` with a
    compare-and-swap (a message delivered twice runs it once), then, as ``ctx`` (who created it):

    1. the image is created from ``image_properties`` (queued; the task's ``image_id``);
    2. the data at ``import_from`` is read (``images.fetch``: http(s) only, bounded in size and
       time) and stored as an upload is (inspected against ``disk_format``, hashed): active;
    3. ``success`` with ``result`` ``{"image_id": ...}``.

    Any step refused or failed: the image (if made) is deleted and the task ends ``failure`` with
    the reason as its ``message`` (a URL that does not resolve, an HTTP error, data that is not
    the declared format ...). A task not pending (already run, or gone) is left alone."""
    if not ImageTask.objects.filter(id=task_id, status=TaskStatus.PENDING).update(
            status=TaskStatus.PROCESSING, updated_at=timezone.now()):
        log.info("image task %s is not pending: not run again", task_id)
        return
    task = ImageTask.objects.get(id=task_id)
    if task.type == IMAGE_IMPORT_TASK:
        _web_download_run(task)
        return
    image: Image | None = None
    try:
        image = image_create(ctx, **task.input["image_properties"])
        ImageTask.objects.filter(id=task.id).update(image_id=image.id)
        image_upload(ctx, image, fetch.fetch(task.input["import_from"], max_bytes=settings.IMAGE_IMPORT_MAX_BYTES,
                                             timeout=settings.IMAGE_IMPORT_TIMEOUT))
    except Exception as exc:  # every failure ends the task: none may stay 'processing'
        if not isinstance(exc, CloudcoreError):
            log.exception("image task %s failed", task_id)
        if image is not None:
            image_delete_internal(image.id)
        _task_finish(task, TaskStatus.FAILURE, message=str(exc) or type(exc).__name__)
        return
    _task_finish(task, TaskStatus.SUCCESS, result={"image_id": image.id})


def _web_download_run(task: ImageTask) -> None:
    """The conductor's part of a ``web-download`` import (``_web_download``): the image, still
    ``importing``, gets the data at the task's ``uri`` (staged, then stored); any failure queues it
    again without data and ends the task ``failure`` with the reason."""
    image = Image.objects.filter(id=task.image_id, status=ImageStatus.IMPORTING).first()
    if image is None:  # deleted (or its status changed) before the conductor came to it
        _task_finish(task, TaskStatus.FAILURE, message=f"Image {task.image_id} is no longer importing")
        return
    staged = staging_path(image.id)
    try:
        _receive(fetch.fetch(task.input["import_req"]["method"]["uri"], max_bytes=settings.IMAGE_IMPORT_MAX_BYTES,
                             timeout=settings.IMAGE_IMPORT_TIMEOUT), staged)
        _store(image, staged)
    except Exception as exc:  # every failure ends the task: none may stay 'processing'
        if not isinstance(exc, CloudcoreError):
            log.exception("image import task %s failed", task.id)
        _import_undone(image, staged)
        _task_finish(task, TaskStatus.FAILURE, message=str(exc) or type(exc).__name__)
        return
    _task_finish(task, TaskStatus.SUCCESS, result={"image_id": image.id})
