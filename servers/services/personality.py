"""Personality: files a create or rebuild names (``personality``, microversions below 2.57) for
the guest to find at boot.

As Nova's libvirt driver (no injection into the image's partitions), the files reach the guest on
its config drive: ``openstack/content/NNNN`` with a ``files`` list (path, content path) in
``meta_data.json`` (``compute.virt.configdrive``). A server without a config drive does not see
them, as a Nova guest without a drive and without the metadata service. They are kept on the
server (``Instance.injected_files``, the contents base64 as sent) because the drive is written
on the host at spawn; a rebuild that names personality replaces them.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any

from cloudcore.core.exceptions import Invalid

from .quotas import quota_check_injected_files


class PersonalityNotDecodable(Invalid):
    message = "Personality content for %(path)s cannot be decoded"


def injected_files_checked(*, project_id: str, personality: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The files to keep on the server, ``[{"path", "contents"}]``.

    Raises ``PersonalityNotDecodable`` (400) for contents that are not base64, then the
    personality quota errors (403, ``quota_check_injected_files``) on the decoded sizes. No files:
    no quota read (a boot without personality costs no statement)."""
    if not personality:
        return []
    decoded: list[tuple[str, bytes]] = []
    for item in personality:
        path, contents = str(item.get("path") or ""), str(item.get("contents") or "")
        try:
            decoded.append((path, base64.b64decode(contents, validate=True)))
        except (binascii.Error, ValueError):
            raise PersonalityNotDecodable(path=path) from None
    quota_check_injected_files(project_id=project_id, files=decoded)
    return [{"path": item[0], "contents": str(p.get("contents") or "")}
            for item, p in zip(decoded, personality, strict=True)]
