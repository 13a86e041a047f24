"""The one API layer every cloudcore HTTP API is built on (STYLE rule 12, NetBox-style).

``OpenStackAPIView`` authenticates the Keystone token (``X-Auth-Token``), negotiates the
microversion of its service (``version_range``), gives handlers ``self.ctx`` (the
RequestContext every service takes as ``actor``) and ``request.api_version``, and stamps every
response, errors included, with the request id and the version headers. Errors come out as
Nova fault bodies through ``cloudcore.core.api.faults.exception_handler``; APIs with another
error shape (placement, glance, neutron) override ``fault_response``.

Subclasses: ``ComputeAPIView`` (compute 2.1-2.105) and ``UnversionedAPIView``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson
from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import BasePermission
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.encoders import JSONEncoder
from rest_framework.views import APIView

from cloudcore.core.context import RequestContext, new_request_id
from cloudcore.core.exceptions import NotFound

from . import microversion
from .faults import fault_body
from .microversion import Version, VersionRange
from .schema import OpenStackAutoSchema
from .validation import reject_unknown_params

#: From this compute microversion every GET's query string is checked: a parameter the endpoint
#: does not take is a 400 (before it, unknown parameters are ignored, as Nova's lax schemas do).
STRICT_QUERY_FROM: Version = (2, 102)


class HasToken(BasePermission):
    """Authenticated through a valid token (``request.auth`` is a RequestContext)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, RequestContext)


#: Floats orjson writes in another notation than Python's ``repr``: below 1e-4 (``1e-7`` for ``1e-07``,
#: ``0.00001`` for ``1e-05``), and in older orjson versions also from 1e16 (``1e16`` for ``1e+16``; the
#: installed one is asked once): a number token right after ``:``, ``,`` or ``[`` (or alone), up to ``,``,
#: ``}``, ``]`` or the end, with such an exponent, or with four zeros after ``0.``. The exponent is searched
#: first and its mantissa checked by hand: a regular expression that starts at every ``:`` and ``,`` takes
#: longer than orjson on a 1,000-server page. A negative exponent is searched from ``e-`` (the regular
#: expression scans for the two letters; a page of uuids and words has an ``e`` in every few bytes, each
#: one a match to start: 9% of a 1,000-server page's instructions when every exponent was searched).
_NEGATIVE_EXPONENT = re.compile(rb"e-[0-9]+(?=[,}\]]|$)")
_ANY_EXPONENT = re.compile(rb"e-?[0-9]+(?=[,}\]]|$)")
_EXPONENT = _NEGATIVE_EXPONENT if orjson.dumps(1e16) == b"1e+16" else _ANY_EXPONENT
_SMALL = re.compile(rb"(?:^|[:,\[])-?0\.0000[0-9]*(?:$|[,}\]])")
_MANTISSA = frozenset(b"0123456789.")
_BEFORE_NUMBER = frozenset(b":,[")


def _other_float_notation(out: bytes) -> bool:
    """Whether orjson's ``out`` may hold a float Python writes otherwise (also true for a string that
    looks like one: then the body is encoded again by the standard library, slower but never different)."""
    for match in _EXPONENT.finditer(out):
        start = i = match.start()
        while i and out[i - 1] in _MANTISSA:
            i -= 1
        if i == start:
            continue
        if i and out[i - 1] == ord("-"):
            i -= 1
        if i == 0 or out[i - 1] in _BEFORE_NUMBER:
            return True
    return b"0.0000" in out and _SMALL.search(out) is not None


_ORJSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


class OpenStackJSONRenderer(JSONRenderer):
    """JSON as OpenStack clients expect it (no DRF-specific charset parameter games), encoded by
    orjson (a 1,000-server detail page in ~1 ms instead of ~11): the same bytes as DRF's renderer
    (compact, UTF-8 unescaped, keys in insertion order, ``\u2028``/``\u2029`` escaped, datetimes,
    decimals, UUIDs and lazy strings as DRF's encoder writes them). What orjson cannot write the
    same way goes through DRF's renderer: an indented answer (the browsable API), non-string keys,
    integers beyond 64 bits, floats outside [1e-4, 1e16). One difference is left: a NaN or infinite
    float is ``null`` where the standard library refuses it (a 500)."""

    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None,
               renderer_context: Mapping[str, Any] | None = None) -> bytes:
        if data is None or not (self.compact and self.strict and not self.ensure_ascii) \
                or self.get_indent(accepted_media_type or "", renderer_context or {}) is not None:
            return self._drf(data, accepted_media_type, renderer_context)
        try:
            out = orjson.dumps(data, default=JSONEncoder().default, option=_ORJSON_OPTIONS)
        except orjson.JSONEncodeError:
            return self._drf(data, accepted_media_type, renderer_context)
        if _other_float_notation(out):
            return self._drf(data, accepted_media_type, renderer_context)
        # U+2028 and U+2029 start with the byte E2, which most pages (ASCII) lack: looked for by
        # memchr, where the search of two bytes walks a 1,000-server page 30 times slower
        if b"\xe2" in out and b"\xe2\x80" in out:  # one scan, where two replaces would make two
            out = out.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return out

    def _drf(self, data: Any, accepted_media_type: str | None, renderer_context: Mapping[str, Any] | None) -> bytes:
        """DRF's own rendering, for what orjson would write differently."""
        return bytes(super().render(data, accepted_media_type, renderer_context))


class OpenStackContentNegotiation(DefaultContentNegotiation):
    """OpenStack clients send odd ``Accept`` headers (openstacksdk sends an empty one on some
    actions); an API that only speaks JSON answers JSON rather than 406."""

    def select_renderer(  # type: ignore[override]  # DRF indexes the renderers: a list, not any iterable
        self, request: Request, renderers: list[Any], format_suffix: str | None = None,
    ) -> Any:
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except NotAcceptable:
            return renderers[0], renderers[0].media_type


class OpenStackAPIView(APIView):
    version_range: VersionRange | None = None
    #: Extra response header carrying the request id (compute: ``x-compute-request-id``).
    extra_request_id_header: str | None = None
    renderer_classes = [OpenStackJSONRenderer, BrowsableAPIRenderer]
    schema = OpenStackAutoSchema()
    content_negotiation_class = OpenStackContentNegotiation

    def get_authenticators(self) -> list[Any]:
        # settings.API_AUTHENTICATION_CLASSES names them (identity's, above this kernel): the token
        # first (API clients); then a logged-in browser session, so that the browsable API works
        # when an endpoint is opened in a browser after logging in to the console.
        return [import_string(path)() for path in settings.API_AUTHENTICATION_CLASSES]

    def get_permissions(self) -> list[BasePermission]:
        return [HasToken()]

    # -- request set-up --------------------------------------------------------------------
    # The negotiated version and the request id ride on the request objects as plain attributes
    # (DRF's Request and Django's HttpRequest declare neither).
    def initialize_request(self, request: Any, *args: Any, **kwargs: Any) -> Request:
        request.request_id = new_request_id()
        return super().initialize_request(request, *args, **kwargs)

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        request.api_version = self._negotiate(request)
        super().initial(request, *args, **kwargs)
        if isinstance(request.auth, RequestContext):
            request.auth.request_id = request._request.request_id

    def _negotiate(self, request: Any) -> Version | None:
        if self.version_range is None:
            return None
        request._request.api_version = None
        version = self.version_range.negotiate(request.headers)
        request._request.api_version = version
        return version

    def error_body(self, code: int, message: str) -> dict[str, Any]:
        """The body of an error answer; Nova's fault body unless an API overrides it
        (Keystone's ``{"error": {...}}``, placement's ``{"errors": [...]}``, ...)."""
        return fault_body(code, message)

    # -- helpers for handlers ----------------------------------------------------------------
    @property
    def ctx(self) -> RequestContext:
        auth = self.request.auth
        assert isinstance(auth, RequestContext)
        return auth

    @property
    def version(self) -> Version:
        return getattr(self.request, "api_version", None) or (
            self.version_range.minimum if self.version_range else (0, 0)
        )

    def body(self) -> Any:
        """The parsed JSON body; None when the request has no body at all."""
        data = self.request.data
        if data == {} and not int(self.request.META.get("CONTENT_LENGTH") or 0):
            return None
        return data

    # -- response stamping ------------------------------------------------------------------
    def finalize_response(self, request: Request, response: Response, *args: Any, **kwargs: Any) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        request_id = getattr(request._request, "request_id", None) or new_request_id()
        response["x-openstack-request-id"] = request_id
        if self.extra_request_id_header:
            response[self.extra_request_id_header] = request_id
        if self.version_range is not None:
            version = getattr(request._request, "api_version", None) or self.version_range.minimum
            for key, value in self.version_range.response_headers(version).items():
                response[key] = value
        return response


class ComputeAPIView(OpenStackAPIView):
    version_range = microversion.COMPUTE
    extra_request_id_header = "x-compute-request-id"
    #: The microversions a resource exists in (``available_until`` included): outside them it does
    #: not exist (404, as Nova answers for a route its microversion does not have), whoever asks.
    available_from: Version | None = None
    available_until: Version | None = None
    #: The query parameters a GET takes; from ``STRICT_QUERY_FROM`` any other is a 400. None: the
    #: handler checks its own (the server and flavor lists, strict since 2.75 with their own sets).
    query_parameters: frozenset[str] | None = frozenset()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if ((self.available_from is not None and self.version < self.available_from)
                or (self.available_until is not None and self.version > self.available_until)):
            raise NotFound("The resource could not be found.")
        if (request.method == "GET" and self.query_parameters is not None
                and self.version >= STRICT_QUERY_FROM):
            reject_unknown_params(request.query_params.keys(), self.query_parameters)


class ComputeProxyAPIView(ComputeAPIView):
    """Nova's proxies of the other services (``/images``, ``/os-networks``, ``/os-volumes``,
    ``/os-security-groups``, ...): gone from 2.36 (404), as in Nova."""

    available_until = (2, 35)


class UnversionedAPIView(OpenStackAPIView):
    version_range = None


class PublicMixin:
    """No token needed (version documents)."""

    def get_authenticators(self) -> list[Any]:
        return []

    def get_permissions(self) -> list[BasePermission]:
        return []
