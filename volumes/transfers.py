"""Volume transfers (Cinder's ``/os-volume-transfer`` and, from 3.55, ``/volume-transfers``): the
owner of an ``available`` volume offers it (the volume is ``awaiting-transfer``) and gets an auth
key once; another project presenting the transfer's id and that key takes the volume, with its
snapshots unless the transfer says ``no_snapshots``. Deleting the transfer gives the volume back
to ``available``. Quota usage follows the volume (it is counted from the rows)."""
from __future__ import annotations

import hashlib
import hmac
import secrets

from django.utils import timezone

from cells.transactions import api_atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from .models import Snapshot, Volume, VolumeStatus, VolumeTransfer
from .quotas import quota_check

AWAITING_TRANSFER = "awaiting-transfer"


class TransferNotFound(NotFound):
    message = "Transfer %(transfer_id)s could not be found."


def _hash(salt: str, key: str) -> str:
    return hashlib.sha256(f"{salt}{key}".encode()).hexdigest()


def _rule(ctx: RequestContext, rule: str, project_id: str) -> None:
    authorize(ctx, rule, {"project_id": project_id, "user_id": ctx.user_id})


def transfer_create(ctx: RequestContext, vol: Volume, *, name: str | None,
                    no_snapshots: bool = False) -> tuple[VolumeTransfer, str]:
    """Offer ``vol``; returns the transfer and its auth key (shown this once)."""
    _rule(ctx, "volume:create_transfer", vol.project_id)
    key, salt = secrets.token_hex(8), secrets.token_hex(8)
    with api_atomic():
        if not Volume.objects.filter(pk=vol.pk, status=VolumeStatus.AVAILABLE).update(
                status=AWAITING_TRANSFER, updated_at=timezone.now()):
            raise Invalid(f"Invalid volume: status must be available (status {vol.status}).")
        transfer = VolumeTransfer.objects.create(volume=vol, name=name, salt=salt, crypt_hash=_hash(salt, key),
                                                 source_project_id=vol.project_id, no_snapshots=no_snapshots)
    return transfer, key


def _pending(ctx: RequestContext, transfer_id: str, *, own: bool) -> VolumeTransfer:
    """The pending transfer ``transfer_id``; with ``own``, only one of the caller's project (or
    any for an admin)."""
    transfer = VolumeTransfer.objects.filter(pk=transfer_id, accepted=False).select_related("volume").first()
    if transfer is None or (own and not ctx.is_admin and transfer.source_project_id != ctx.project_id):
        raise TransferNotFound(transfer_id=transfer_id)
    return transfer


def transfer_get(ctx: RequestContext, transfer_id: str) -> VolumeTransfer:
    transfer = _pending(ctx, transfer_id, own=True)
    _rule(ctx, "volume:get_transfer", transfer.source_project_id)
    return transfer


def transfer_list(ctx: RequestContext, *, all_tenants: bool = False) -> list[VolumeTransfer]:
    _rule(ctx, "volume:get_all_transfers", ctx.project_id)
    qs = VolumeTransfer.objects.filter(accepted=False).select_related("volume").order_by("created_at", "id")
    if not (ctx.is_admin and all_tenants):
        qs = qs.filter(source_project_id=ctx.project_id)
    return list(qs)


def transfer_delete(ctx: RequestContext, transfer_id: str) -> None:
    transfer = _pending(ctx, transfer_id, own=True)
    _rule(ctx, "volume:delete_transfer", transfer.source_project_id)
    with api_atomic():
        Volume.objects.filter(pk=transfer.volume_id, status=AWAITING_TRANSFER).update(
            status=VolumeStatus.AVAILABLE, updated_at=timezone.now())
        transfer.soft_delete()


def transfer_accept(ctx: RequestContext, transfer_id: str, *, auth_key: str) -> VolumeTransfer:
    """Take the volume (and its snapshots unless ``no_snapshots``) into the caller's project.
    Raises Invalid for a wrong key, OverQuota when the caller's project has no room for it."""
    transfer = _pending(ctx, transfer_id, own=False)
    _rule(ctx, "volume:accept_transfer", ctx.project_id)
    if not hmac.compare_digest(transfer.crypt_hash, _hash(transfer.salt, str(auth_key))):
        raise Invalid(f"Invalid auth key: Attempt to transfer {transfer.volume_id} with invalid auth key.")
    vol = transfer.volume
    snaps = Snapshot.objects.filter(volume=vol)
    moved_snaps = [] if transfer.no_snapshots else list(snaps)
    quota_check(str(ctx.project_id), volumes=1, snapshots=len(moved_snaps),
                gigabytes=vol.size + sum(s.size for s in moved_snaps), volume_size=vol.size)
    now = timezone.now()
    with api_atomic():
        Volume.objects.filter(pk=vol.pk).update(project_id=ctx.project_id, user_id=ctx.user_id,
                                                status=VolumeStatus.AVAILABLE, updated_at=now)
        if moved_snaps:
            snaps.update(project_id=ctx.project_id, user_id=ctx.user_id, updated_at=now)
        VolumeTransfer.objects.filter(pk=transfer.pk).update(accepted=True, destination_project_id=ctx.project_id,
                                                             updated_at=now)
        transfer.soft_delete()
    transfer.accepted, transfer.destination_project_id = True, ctx.project_id
    return transfer
