"""Compute version documents (``/compute/``, ``/compute/v2/`` and ``/compute/v2.1/``) and the compute 404."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.exceptions import NotFound

from . import microversion
from .views import ComputeAPIView, PublicMixin

V21_UPDATED = "2013-07-23T11:33:21Z"


def _base() -> str:
    return settings.PUBLIC_URL.rstrip("/") + "/compute"


def v21_document() -> dict[str, Any]:
    rng = microversion.COMPUTE
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": microversion.fmt(rng.maximum),
        "min_version": microversion.fmt(rng.minimum),
        "updated": V21_UPDATED,
        "links": [{"rel": "self", "href": f"{_base()}/v2.1/"}],
    }


def v20_document() -> dict[str, Any]:
    """The legacy v2.0 entry: listed, and its own document followable, as clients check."""
    return {
        "id": "v2.0", "status": "SUPPORTED", "version": "", "min_version": "",
        "updated": "2011-01-21T11:33:21Z", "links": [{"rel": "self", "href": f"{_base()}/v2/"}],
    }


def _detailed(doc: dict[str, Any], media_version: str) -> dict[str, Any]:
    """A version list entry as its own document: a ``describedby`` link and its media type."""
    doc["links"].append({"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"})
    doc["media-types"] = [
        {"base": "application/json", "type": f"application/vnd.openstack.compute+json;version={media_version}"}
    ]
    return doc


class ComputeVersionsView(PublicMixin, ComputeAPIView):
    """``GET /compute/``: v2.0 (supported) then v2.1 (current)."""

    query_parameters = None

    def get(self, request: Request) -> Response:
        return Response({"versions": [v20_document(), v21_document()]})


class ComputeVersionView(PublicMixin, ComputeAPIView):
    """``GET /compute/v2.1/``."""

    query_parameters = None

    def get(self, request: Request) -> Response:
        return Response({"version": _detailed(v21_document(), "2.1")})


class ComputeV20VersionView(PublicMixin, ComputeAPIView):
    """``GET /compute/v2/``: only the legacy version's document (its API is served under v2.1)."""

    query_parameters = None

    def get(self, request: Request) -> Response:
        return Response({"version": _detailed(v20_document(), "2")})


class ComputeNotFoundView(ComputeAPIView):
    """Any compute path nobody serves: Nova's 404 fault (a missing extension), never HTML."""

    query_parameters = None

    def dispatch_missing(self) -> None:
        raise NotFound("The resource could not be found.")

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.dispatch_missing()
        raise AssertionError

    post = put = delete = patch = get
