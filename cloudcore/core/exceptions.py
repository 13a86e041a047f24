"""Domain errors. Services raise these; ``cloudcore.core.api.faults`` maps them to Nova's
fault bodies (``{"itemNotFound": {"code": 404, "message": ...}}``) and codes."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any


class CloudcoreError(Exception):
    """Base of every domain error. ``code`` is the HTTP status the API answers with."""

    code = 500
    message = "An unknown exception occurred."

    def __init__(self, message: str | None = None, **kwargs: object) -> None:
        if message is None:
            try:
                message = self.message % kwargs if kwargs else self.message
            except (KeyError, TypeError):
                message = self.message
        self.kwargs = kwargs
        super().__init__(message)

    @property
    def msg(self) -> str:
        return str(self)


class Invalid(CloudcoreError):
    code = 400
    message = "Bad request."


class NotFound(CloudcoreError):
    code = 404
    message = "Resource could not be found."


class Conflict(CloudcoreError):
    code = 409
    message = "There was a conflict when trying to complete your request."


class Forbidden(CloudcoreError):
    code = 403
    message = "Forbidden."


class Unauthorized(CloudcoreError):
    code = 401
    message = "The request you have made requires authentication."


class NotImplementedYet(CloudcoreError):
    code = 501
    message = "Not implemented."


class PolicyNotAuthorized(Forbidden):
    message = "Policy doesn't allow %(action)s to be performed."


class QuotaExceeded(Forbidden):
    message = "Quota exceeded."


class InstanceInvalidState(Conflict):
    message = "Cannot '%(method)s' instance %(instance_uuid)s while it is in %(attr)s %(state)s"


class InstanceIsLocked(Conflict):
    message = "Instance %(instance_uuid)s is locked"


class InstanceNotFound(NotFound):
    message = "Instance %(instance_id)s could not be found."


class NoValidHost(CloudcoreError):
    """The scheduler found no host. When it comes from a scheduling decision, ``shared_trace`` is
    that decision's trace as the scheduler holds it, parts of which it keeps for the next requests
    (an unchanged shortfall answer): read it, never change it. ``trace`` is the same trace as the
    reader's own, which it may change: a copy made when it is first read (``share_trace``'s
    ``own``), so that a reader that only reads (``shared_trace``) costs no copy. Both are None for
    an error without a trace."""

    message = "No valid host was found. %(reason)s"
    shared_trace: dict[str, Any] | None = None
    _own_trace: Callable[[], dict[str, Any]] | None = None
    _trace: dict[str, Any] | None = None

    def share_trace(self, trace: dict[str, Any], *, own: Callable[[], dict[str, Any]]) -> None:
        """Attach ``trace`` (read-only, see the class doc); ``own()`` makes a copy of it that
        shares nothing the scheduler keeps."""
        self.shared_trace, self._own_trace, self._trace = trace, own, None

    @property
    def trace(self) -> dict[str, Any] | None:
        if self._trace is None and self._own_trace is not None:
            self._trace, self._own_trace = self._own_trace(), None
        return self._trace


class ObjectActionError(CloudcoreError):
    message = "Object action %(action)s failed because: %(reason)s"


class InvalidConfiguration(CloudcoreError):
    message = "Configuration is Invalid."


class InvalidNodeConfiguration(InvalidConfiguration):
    message = "Invalid node identity configuration: %(reason)s"


class CellNotTargeted(CloudcoreError):
    """A cell model was used with no cell targeted (a programming error, never a client's)."""

    message = "No cell is targeted; use cells.target_cell() before using %(model)s."


class CellDown(CloudcoreError):
    code = 503
    message = "Cell %(cell)s is not responding."
