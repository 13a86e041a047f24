"""DRF authentication by Keystone token (``X-Auth-Token``): ``request.user`` is the identity
User, ``request.auth`` the RequestContext every service takes as ``actor``."""
from __future__ import annotations

from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.exceptions import AuthenticationFailed

from cloudcore.core.exceptions import Unauthorized

from .services.tokens import context_for_token


class TokenAuthentication(BaseAuthentication):
    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        token = request.META.get("HTTP_X_AUTH_TOKEN")
        if not token:
            return None
        try:
            user, ctx = context_for_token(token, request_id=getattr(request, "request_id", None))
        except Unauthorized:
            raise AuthenticationFailed("The request you have made requires authentication.") from None
        return user, ctx

    def authenticate_header(self, request: Any) -> str:
        return 'Keystone uri="/identity"'
