"""Nova fault bodies: every error an API answers is ``{"<faultName>": {"code": N, "message": M}}``.

DRF's exception handler is replaced by ``exception_handler`` so that domain errors
(``cloudcore.core.exceptions``), DRF errors and Django's 404s all come out in this shape.
"""
from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

from cloudcore.core.exceptions import CloudcoreError

log = logging.getLogger(__name__)

FAULT_NAMES = {
    400: "badRequest",
    401: "unauthorized",
    403: "forbidden",
    404: "itemNotFound",
    405: "badMethod",
    409: "conflictingRequest",
    413: "overLimit",
    415: "badMediaType",
    429: "overLimit",
    500: "computeFault",
    501: "notImplemented",
    503: "serviceUnavailable",
}


def fault_body(code: int, message: str) -> dict[str, Any]:
    name = FAULT_NAMES.get(code, "computeFault")
    return {name: {"code": code, "message": message}}


def fault_response(code: int, message: str, headers: dict[str, str] | None = None) -> JsonResponse:
    response = JsonResponse(fault_body(code, message), status=code)
    for key, value in (headers or {}).items():
        response[key] = value
    return response


def _drf_message(detail: Any) -> str:
    if isinstance(detail, dict):
        parts = [f"{k}: {_drf_message(v)}" for k, v in detail.items()]
        return "; ".join(parts)
    if isinstance(detail, list):
        return " ".join(_drf_message(d) for d in detail)
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler producing Nova fault bodies."""
    if isinstance(exc, CloudcoreError):
        code, message = exc.code, str(exc)
        if code >= 500:
            log.error("request failed: %s", message, exc_info=exc)
    elif isinstance(exc, Http404):
        code, message = 404, str(exc) or "The resource could not be found."
    elif isinstance(exc, PermissionDenied):
        code, message = 403, str(exc) or "Forbidden."
    elif isinstance(exc, drf_exceptions.NotAuthenticated | drf_exceptions.AuthenticationFailed):
        code, message = 401, "The request you have made requires authentication."
    elif isinstance(exc, drf_exceptions.MethodNotAllowed):
        code, message = 405, "There was no method to process this request."
    elif isinstance(exc, drf_exceptions.ParseError):
        code, message = 400, "Malformed request body"
    elif isinstance(exc, drf_exceptions.UnsupportedMediaType):
        code, message = 415, "Unsupported Content-Type"
    elif isinstance(exc, drf_exceptions.APIException):
        code, message = exc.status_code, _drf_message(exc.detail)
    else:
        return None
    view = context.get("view")
    shape = getattr(view, "error_body", None)
    response = Response(shape(code, message) if callable(shape) else fault_body(code, message), status=code)
    if code == 401:
        from django.conf import settings

        response["WWW-Authenticate"] = f'Keystone uri="{str(settings.PUBLIC_URL).rstrip("/")}/identity"'
    return response
