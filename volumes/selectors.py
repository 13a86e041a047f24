"""Reads of volumes and attachments for the other apps (which never query ``volumes.models``
themselves). No policy check here: callers are the cloud's own services (the conductor)."""
from __future__ import annotations

from .models import Volume, VolumeAttachment

# --- used by cross-cell ---


def attachment_find(attachment_id: str | None) -> VolumeAttachment | None:
    """The live attachment ``attachment_id``, or None (none given, or it is gone)."""
    return VolumeAttachment.objects.filter(pk=attachment_id, deleted=False).first() if attachment_id else None


# --- used by server create ---


def volume_find(volume_id: str) -> Volume | None:
    """The live volume ``volume_id``, or None."""
    return Volume.objects.filter(pk=volume_id).first()
