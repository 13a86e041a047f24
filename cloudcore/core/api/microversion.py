"""Microversion negotiation (``OpenStack-API-Version: <service> X.Y``), for every API that has one.

A request names its version in ``OpenStack-API-Version`` (``compute 2.53``; several services may
be listed, comma separated) or in a legacy header (compute: ``X-OpenStack-Nova-API-Version``).
No header means the minimum; ``latest`` means the maximum; a malformed string is a 400 and a
version outside the range a 406, both with Nova's messages.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from cloudcore.core.exceptions import CloudcoreError, Invalid

Version = tuple[int, int]
_VERSION_RE = re.compile(r"^([1-9]\d*)\.([1-9]\d*|0)$")


class InvalidAPIVersionString(Invalid):
    message = "API Version String %(version)s is of invalid format. Must be of format MajorNum.MinorNum."


class VersionNotAcceptable(CloudcoreError):
    code = 406
    message = "Version %(version)s is not supported by the API. Minimum is %(min)s and maximum is %(max)s."


def fmt(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def parse(text: str) -> Version:
    """``"2.53"`` -> ``(2, 53)``; InvalidAPIVersionString otherwise."""
    match = _VERSION_RE.match(text.strip())
    if not match:
        raise InvalidAPIVersionString(version=text)
    return int(match.group(1)), int(match.group(2))


@dataclass(frozen=True)
class VersionRange:
    """What one API accepts: ``service`` as named in ``OpenStack-API-Version`` and its range."""

    service: str
    minimum: Version
    maximum: Version
    legacy_header: str | None = None  # e.g. "X-OpenStack-Nova-API-Version"

    def requested(self, headers: Mapping[str, str]) -> str | None:
        """The version string the request asks for, or None when it asks for none."""
        raw = headers.get("OpenStack-API-Version")
        if raw:
            for item in raw.split(","):
                parts = item.strip().split()
                if len(parts) == 2 and parts[0].lower() == self.service:
                    return parts[1]
        if self.legacy_header:
            legacy = headers.get(self.legacy_header)
            if legacy:
                return legacy.strip()
        return None

    def negotiate(self, headers: Mapping[str, str]) -> Version:
        asked = self.requested(headers)
        if asked is None:
            return self.minimum
        if asked.lower() == "latest":
            return self.maximum
        version = parse(asked)
        if not (self.minimum <= version <= self.maximum):
            raise VersionNotAcceptable(version=asked, min=fmt(self.minimum), max=fmt(self.maximum))
        return version

    def response_headers(self, version: Version) -> dict[str, str]:
        headers = {"OpenStack-API-Version": f"{self.service} {fmt(version)}"}
        vary = ["OpenStack-API-Version"]
        if self.legacy_header:
            headers[self.legacy_header] = fmt(version)
            vary.append(self.legacy_header)
        headers["Vary"] = ", ".join(vary)
        return headers


COMPUTE = VersionRange("compute", (2, 1), (2, 105), "X-OpenStack-Nova-API-Version")
VOLUME = VersionRange("volume", (3, 0), (3, 70))
PLACEMENT = VersionRange("placement", (1, 0), (1, 39))


def at_least(version: Version, minimum: str) -> bool:
    """``at_least(request.api_version, "2.91")``."""
    return version >= parse(minimum)
