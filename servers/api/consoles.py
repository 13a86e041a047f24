"""``POST /servers/{id}/remote-consoles`` (2.6+) and ``GET /os-console-auth-tokens/{token}``.

The os-getConsoleOutput and the pre-2.6 ``os-get*Console`` actions are in ``actions.py``; all of
them call ``servers.services.consoles``.
"""
from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cloudcore.core.api.validation import VersionedSchema
from cloudcore.core.api.versioned import Since
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import InstanceInvalidState

from ..services import consoles
from .servers import get_server


def _create(protocols: list[str], types: list[str]) -> dict:
    return {"type": "object", "properties": {"remote_console": {
        "type": "object", "properties": {"protocol": {"type": "string", "enum": protocols},
                                         "type": {"type": "string", "enum": types}},
        "required": ["protocol", "type"], "additionalProperties": False}},
        "required": ["remote_console"], "additionalProperties": False}


REMOTE_CONSOLE = VersionedSchema(
    ("2.6", "2.7", _create(["vnc", "spice", "rdp", "serial"], ["novnc", "xvpvnc", "rdp-html5", "spice-html5",
                                                                 "serial"])),
    # 2.8: VMware's MKS consoles
    ("2.8", None, _create(["vnc", "spice", "rdp", "serial", "mks"], ["novnc", "xvpvnc", "rdp-html5", "spice-html5",
                                                                      "serial", "webmks"])),
)
#: 2.31: an admin may look up every kind of console token (before: RDP ones only)
TOKEN_FEATURES = Since({"any_console_type": (2, 31)})


class RemoteConsolesView(ComputeAPIView):
    available_from = (2, 6)

    def post(self, request: Request, server_id: str) -> Response:
        body = REMOTE_CONSOLE.validate(self.body(), self.version)["remote_console"]
        record = get_server(self.ctx, server_id, version=self.version)
        if record.instance is None or record.cell is None:
            raise InstanceInvalidState(method="remote-consoles", instance_uuid=record.uuid, attr="vm_state",
                                       state="building")
        with target_cell(record.cell):
            url = consoles.server_remote_console(actor=self.ctx, instance=record.instance, cell=record.cell,
                                                 protocol=body["protocol"], console_type=body["type"])
        return Response({"remote_console": {"protocol": body["protocol"], "type": body["type"], "url": url}})


class ConsoleAuthTokenView(ComputeAPIView):
    def get(self, request: Request, console_token: str) -> Response:
        rdp_only = not TOKEN_FEATURES.has("any_console_type", self.version)
        return Response({"console": consoles.console_token_show(actor=self.ctx, token=console_token,
                                                                rdp_only=rdp_only)})
