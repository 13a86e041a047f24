"""The base of the views under ``/servers/{id}/...`` that act on a server placed in a cell."""
from __future__ import annotations

from typing import Any

from cloudcore.core.api.views import ComputeAPIView

from ..selectors import ServerNotFound, server_get


class ServerSubresourceView(ComputeAPIView):
    @property
    def v(self) -> tuple[int, int]:
        return (self.version[0], self.version[1])

    def server(self, server_id: str) -> Any:
        """The server visible to the caller (a ``ServerRecord`` whose ``instance`` and ``cell`` are set:
        404 while it is only a build request)."""
        record = server_get(self.ctx, server_id)
        if record.instance is None or record.cell is None:
            raise ServerNotFound(instance_id=server_id)
        return record
