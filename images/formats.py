"""What an image file really is, read from its bytes, never from what the client declared.

Format checks are a security boundary: a qcow2 file uploaded as ``raw`` would be handed to QEMU
as a raw disk by one consumer and opened as qcow2 (following its backing file, reading the
host's files) by another. So, as Glance does since its 2024 format-inspection change, the bytes
of every upload are inspected with oslo.utils' format inspector (the library Glance and Nova use;
pure Python, the file is never opened by QEMU here):

* the detected format must be the declared ``disk_format`` (a raw disk carrying a GPT partition
  table is still ``raw``); formats the inspector cannot recognise (``ami``, ``aki``, ``ari``,
  ``ploop``) are not checked, as in Glance;
* the file must pass the inspector's safety checks: a qcow2 with a backing file or an external
  data file is refused (CVE-2024-32498 and friends).

Both refusals are 400s, the image stays ``queued`` and the bytes are discarded.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from oslo_utils.imageutils import format_inspector

from cloudcore.core.exceptions import Invalid

#: The declared formats whose content the inspector can recognise (others are taken as declared).
INSPECTED = frozenset({"raw", "qcow2", "vhd", "vhdx", "vmdk", "vdi", "iso"})
#: A detected format that stands for a declared one (a raw disk image with a partition table).
SAME_AS = {"gpt": "raw"}


class ImageFormatMismatch(Invalid):
    message = "Image content does not match disk_format %(disk_format)s"


class ImageUnsafe(Invalid):
    message = "Image does not pass safety check: %(reason)s"


@dataclass(frozen=True)
class Inspection:
    """The format the bytes are in and the guest-visible size of the disk they hold."""

    disk_format: str
    virtual_size: int


def inspect(path: Path, declared: str | None) -> Inspection | None:
    """Check the file at ``path`` against ``declared``; None for formats that are not inspected.

    Raises ImageFormatMismatch when the content is another format (or several at once) and
    ImageUnsafe when it fails a safety check (qcow2 backing file or data file, ...)."""
    if declared not in INSPECTED:
        return None
    try:
        found = format_inspector.detect_file_format(str(path))
    except format_inspector.ImageFormatError:  # several formats at once: one header hidden in another
        raise ImageFormatMismatch(disk_format=declared) from None
    if found is None:
        raise ImageFormatMismatch(disk_format=declared)
    detected = SAME_AS.get(str(found), str(found))
    if detected != declared:
        raise ImageFormatMismatch(disk_format=declared)
    try:
        found.safety_check()
    except format_inspector.SafetyCheckFailed as exc:
        raise ImageUnsafe(reason=", ".join(sorted(str(v) for v in exc.failures.values())) or str(exc)) from None
    except format_inspector.ImageFormatError as exc:
        raise ImageUnsafe(reason=str(exc)) from None
    # the inspector reads only what it needs: a raw disk's size is the whole file's
    size = path.stat().st_size if detected == "raw" else int(found.virtual_size or 0)
    return Inspection(disk_format=detected, virtual_size=size)


def convert(source: Path, target: Path, *, source_format: str, target_format: str) -> None:
    """``qemu-img convert`` (Debian's qemu-utils): a qcow2 image to the raw disk a guest boots
    from, or a raw volume to the qcow2 image a client asked for. The source was inspected when it
    was stored (no backing file), and its format is given explicitly so QEMU never probes it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(  # noqa: S603 - fixed argv, paths only
        ["qemu-img", "convert", "-f", source_format, "-O", target_format, str(source), str(target)],  # noqa: S607
        check=True, capture_output=True, timeout=600,
    )
