"""OpenAPI generation (drf-spectacular) for the OpenStack API views.

OpenStack views are plain APIViews with JSON-schema validation, not serializers: where a view
states no ``@extend_schema`` types, its bodies are documented as free-form JSON objects instead of
spectacular giving up on the view. Operation ids name the full path (so ``/flavors`` and
``/flavors/{flavor_id}`` never collide), and ``X-Auth-Token`` is the security scheme.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes


class OpenStackAutoSchema(AutoSchema):
    def _declares_serializer(self) -> bool:
        view = self.view
        return any(callable(getattr(view, name, None)) for name in ("get_serializer", "get_serializer_class")) or \
            getattr(view, "serializer_class", None) is not None

    def get_request_serializer(self) -> Any:
        if self._declares_serializer():
            return super().get_request_serializer()
        return OpenApiTypes.OBJECT if self.method in ("POST", "PUT", "PATCH") else None

    def get_response_serializers(self) -> Any:
        if self._declares_serializer():
            return super().get_response_serializers()
        return OpenApiTypes.OBJECT

    def is_excluded(self) -> bool:
        # Catch-all routes (a service's "missing extension" 404) are not operations.
        return self.path.endswith("/.") or self.path_regex.endswith(".*$") or super().is_excluded()

    def get_operation_id(self) -> str:
        tokens = [t.replace("-", "_").replace(".", "_") for t in self.path.strip("/").split("/") if t]
        tokens = [t.strip("{}") if t.startswith("{") else t for t in tokens] or ["root"]
        suffix = "_slash" if self.path.endswith("/") and len(self.path) > 1 else ""
        return "_".join([self.method.lower(), *tokens]) + suffix

    def get_tags(self) -> list[str]:
        tokens = [t for t in self.path.strip("/").split("/") if t and not t.startswith("{")]
        return tokens[:1] or ["root"]


class KeystoneTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # untyped base
    target_class = "identity.auth.TokenAuthentication"
    name = "keystoneToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "header", "name": "X-Auth-Token",
                "description": "A token from POST /identity/v3/auth/tokens (X-Subject-Token)."}


class BrowserSessionScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]  # untyped base
    target_class = "identity.auth.SessionContextAuthentication"
    name = "browserSession"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {"type": "apiKey", "in": "cookie", "name": "sessionid",
                "description": "A browser session of the console or Django admin (browsable API)."}
