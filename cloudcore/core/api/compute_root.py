"""Compute version documents (``/compute/`` and ``/compute/v2.1/``) and the compute 404."""
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


class ComputeVersionsView(PublicMixin, ComputeAPIView):
    """``GET /compute/``: v2.0 (supported) then v2.1 (current)."""
    query_parameters = None

    def get(self, request: Request) -> Response:
        v20 = {
            "id": "v2.0", "status": "SUPPORTED", "version": "", "min_version": "",
            "updated": "2011-01-21T11:33:21Z", "links": [{"rel": "self", "href": f"{_base()}/v2/"}],
        }
        return Response({"versions": [v20, v21_document()]})


class ComputeVersionView(PublicMixin, ComputeAPIView):
    """``GET /compute/v2.1/``."""
    query_parameters = None

    def get(self, request: Request) -> Response:
        doc = v21_document()
        doc["links"].append({"rel": "describedby", "type": "text/html", "href": "https://docs.openstack.org/"})
        doc["media-types"] = [
            {"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2.1"}
        ]
        return Response({"version": doc})


class ComputeNotFoundView(ComputeAPIView):
    """Any compute path nobody serves: Nova's 404 fault (a missing extension), never HTML."""
    query_parameters = None

    def dispatch_missing(self) -> None:
        raise NotFound("The resource could not be found.")

    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        self.dispatch_missing()
        raise AssertionError

    post = put = delete = patch = get
