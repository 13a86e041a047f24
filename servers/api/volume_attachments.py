"""``/servers/{id}/os-volume_attachments``: fields per microversion (2.70 ``tag``, 2.79
``delete_on_termination``, 2.89 ``attachment_id``/``bdm_uuid`` and no ``id``); from 2.101 the attach
answers 202 with no body."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cells.context import target_cell
from cloudcore.core.api.paging import offset_page
from cloudcore.core.api.versioned import present
from cloudcore.core.policy import authorize

from ..models import BlockDeviceMapping
from ..presenter import VOLUME_ATTACHMENT_FIELDS
from ..services import volume_attachments as service
from ..services.power import target
from .schemas import VOLUME_ATTACH, VOLUME_ATTACH_FEATURES, VOLUME_ATTACHMENT_UPDATE
from .subresource import ServerSubresourceView


def render(bdm: BlockDeviceMapping, version: tuple[int, int]) -> dict[str, Any]:
    return present(VOLUME_ATTACHMENT_FIELDS, bdm, version)


class VolumeAttachmentsView(ServerSubresourceView):
    query_parameters = frozenset({"limit", "offset"})

    def get(self, request: Request, server_id: str) -> Response:
        record = self.server(server_id)
        authorize(self.ctx, "os_compute_api:os-volumes-attachments:index", target(record.instance))
        with target_cell(record.cell):
            bdms = service.volume_bdms(record.instance)
        return Response({"volumeAttachments": [render(b, self.v) for b in offset_page(bdms, request.query_params)]})

    def post(self, request: Request, server_id: str) -> Response:
        body = VOLUME_ATTACH.validate(self.body(), self.v)["volumeAttachment"]
        record = self.server(server_id)
        with target_cell(record.cell):
            bdm = service.volume_attach(actor=self.ctx, instance=record.instance, cell=record.cell,
                                        volume_id=body["volumeId"], device=body.get("device"), tag=body.get("tag"),
                                        delete_on_termination=bool(body.get("delete_on_termination", False)),
                                        multiattach_supported=VOLUME_ATTACH_FEATURES.has("multiattach", self.v))
        if VOLUME_ATTACH_FEATURES.has("accepted_no_body", self.v):
            return Response(status=202)
        return Response({"volumeAttachment": render(bdm, self.v)})


class VolumeAttachmentView(ServerSubresourceView):
    def get(self, request: Request, server_id: str, volume_id: str) -> Response:
        record = self.server(server_id)
        authorize(self.ctx, "os_compute_api:os-volumes-attachments:show", target(record.instance))
        with target_cell(record.cell):
            bdm = service.bdm_for_volume(record.instance, volume_id)
        return Response({"volumeAttachment": render(bdm, self.v)})

    def put(self, request: Request, server_id: str, volume_id: str) -> Response:
        body = VOLUME_ATTACHMENT_UPDATE.validate(self.body(), self.v)["volumeAttachment"]
        record = self.server(server_id)
        with target_cell(record.cell):
            service.volume_attachment_update(actor=self.ctx, instance=record.instance, volume_id=volume_id,
                                             changes=body)
        return Response(status=202)

    def delete(self, request: Request, server_id: str, volume_id: str) -> Response:
        record = self.server(server_id)
        with target_cell(record.cell):
            service.volume_detach(actor=self.ctx, instance=record.instance, cell=record.cell, volume_id=volume_id)
        return Response(status=202)
