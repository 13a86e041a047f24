"""The servers app's window on the image and network services.

Every call goes to ``images.services`` / ``networks.services`` when those provide the function;
while one of them does not (yet) exist, a minimal database-backed stand-in answers instead, so
the build flow keeps working against the images and networks tables alone.
"""
from __future__ import annotations

import importlib
import ipaddress
import secrets
from pathlib import Path
from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound


def _service(module: str, name: str) -> Any:
    try:
        mod = importlib.import_module(module)
    except ImportError:
        return None
    return getattr(mod, name, None)


class _ImageNotFound(NotFound):
    message = "Image %(image_id)s could not be found."


# --- images -----------------------------------------------------------------------------------------
def image_get(ctx: RequestContext, image_id: str) -> Any:
    fn = _service("images.services", "image_get")
    if fn is not None:
        return fn(ctx, image_id)
    from images.models import Image

    image = Image.objects.filter(id=image_id, deleted=False).first()
    if image is None or not (image.visibility in ("public", "community") or ctx.is_admin
                             or image.owner == ctx.project_id):
        raise _ImageNotFound(image_id=image_id)
    return image


def image_get_internal(image_id: str) -> Any:
    fn = _service("images.services", "image_get_internal")
    if fn is not None:
        return fn(image_id)
    from images.models import Image

    image = Image.objects.filter(id=image_id).first()
    if image is None:
        raise _ImageNotFound(image_id=image_id)
    return image


def image_data_path(image_id: str) -> Path:
    fn = _service("images.services", "image_data_path")
    if fn is not None:
        return Path(fn(image_id))
    from django.conf import settings

    return Path(settings.VAR_DIR) / "images" / image_id


# --- networks ---------------------------------------------------------------------------------------
def networks_available_to(*, project_id: str) -> list[Any]:
    fn = _service("networks.services", "networks_available_to")
    if fn is not None:
        return list(fn(project_id=project_id))
    from django.db.models import Q

    from networks.models import Network

    return list(Network.objects.filter(Q(project_id=project_id) | Q(shared=True), external=False)
                .order_by("-project_id", "created_at"))


def _mac() -> str:
    return "fa:16:3e:" + ":".join(f"{secrets.randbelow(256):02x}" for _ in range(3))


def port_create_for_instance(ctx: RequestContext, *, network_id: str, instance_uuid: str, host: str | None,
                             fixed_ip: str | None, project_id: str) -> Any:
    fn = _service("networks.services", "port_create_for_instance")
    if fn is not None:
        return fn(ctx, network_id=network_id, instance_uuid=instance_uuid, host=host, fixed_ip=fixed_ip,
                  project_id=project_id)
    from django.db import transaction

    from networks.models import IPAllocation, Network, Port

    network = Network.objects.get(id=network_id)
    with transaction.atomic():
        port = Port.objects.create(network=network, project_id=project_id, mac_address=_mac(),
                                   device_id=instance_uuid, device_owner="compute:nova",
                                   binding_host_id=host or "", status="ACTIVE", binding_vif_type="ovs")
        for subnet in network.subnets.all().order_by("ip_version", "id"):
            used = set(IPAllocation.objects.filter(subnet=subnet).values_list("ip_address", flat=True))
            if fixed_ip:
                if fixed_ip in used:
                    raise Invalid(f"Fixed IP {fixed_ip} is already in use.")
                if ipaddress.ip_address(fixed_ip) in ipaddress.ip_network(subnet.cidr, strict=False):
                    IPAllocation.objects.create(port=port, subnet=subnet, ip_address=fixed_ip)
                continue
            gateway = subnet.gateway_ip
            for addr in ipaddress.ip_network(subnet.cidr, strict=False).hosts():
                text = str(addr)
                if text != gateway and text not in used:
                    IPAllocation.objects.create(port=port, subnet=subnet, ip_address=text)
                    break
    return port


def port_bind(port_id: str, host: str | None, *, device_id: str) -> Any:
    fn = _service("networks.services", "port_bind")
    if fn is not None:
        return fn(port_id, host, device_id=device_id)
    from networks.models import Port

    Port.objects.filter(id=port_id).update(binding_host_id=host or "", device_id=device_id,
                                           device_owner="compute:nova", status="ACTIVE")
    return Port.objects.get(id=port_id)


def ports_unbind_and_delete_for_instance(instance_uuid: str) -> None:
    fn = _service("networks.services", "ports_unbind_and_delete_for_instance")
    if fn is not None:
        fn(instance_uuid)
        return
    from networks.models import Port

    Port.objects.filter(device_id=instance_uuid).delete()


def network_info(instance_uuid: str) -> list[dict[str, Any]]:
    fn = _service("networks.services", "network_info")
    if fn is not None:
        return list(fn(instance_uuid))
    from networks.models import Port

    out = []
    for port in Port.objects.filter(device_id=instance_uuid).select_related("network").prefetch_related(
            "fixed_ips__subnet"):
        out.append({
            "id": port.id, "address": port.mac_address, "network": {"id": port.network_id,
                                                                    "label": port.network.name},
            "ips": [{"address": a.ip_address, "version": a.subnet.ip_version} for a in port.fixed_ips.all()],
        })
    return out


def addresses_for_instances(instance_uuids: list[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """``{uuid: {network name: [{"addr", "version", "OS-EXT-IPS:type", "OS-EXT-IPS-MAC:mac_addr"}]}}``,
    one query for the whole page."""
    if not instance_uuids:
        return {}
    fn = _service("networks.services", "addresses_for_instances")
    if fn is not None:
        return dict(fn(instance_uuids))
    from networks.models import IPAllocation

    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    rows = (IPAllocation.objects.filter(port__device_id__in=instance_uuids)
            .values_list("port__device_id", "port__network__name", "ip_address", "subnet__ip_version",
                         "port__mac_address").order_by("port__created_at", "id"))
    for device_id, net_name, ip, version, mac in rows:
        out.setdefault(device_id, {}).setdefault(net_name, []).append(
            {"addr": ip, "version": version, "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": mac})
    return out


def instance_uuids_with_ip(*, ip: str | None = None, ip6: str | None = None) -> set[str]:
    """Instances with a fixed IP matching ``ip`` (IPv4) / ``ip6`` (IPv6), as regular expressions
    (Nova's ``ip``/``ip6`` list filters)."""
    import re

    fn = _service("networks.services", "instance_uuids_with_ip")
    if fn is not None:
        return set(fn(ip=ip, ip6=ip6))
    from networks.models import IPAllocation

    out: set[str] = set()
    for pattern, version in ((ip, 4), (ip6, 6)):
        if not pattern:
            continue
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise Invalid(f"Invalid regular expression {pattern!r}") from exc
        rows = IPAllocation.objects.filter(subnet__ip_version=version).exclude(port__device_id="")\
            .values_list("port__device_id", "ip_address")
        out.update(device for device, addr in rows if regex.search(addr))
    return out


def port_unbind(port_id: str) -> None:
    """Detach a port the user created from its server (it survives the server, as in Nova)."""
    fn = _service("networks.services", "port_unbind")
    if fn is not None:
        fn(port_id)
        return
    from networks.models import Port

    Port.objects.filter(id=port_id).update(device_id="", device_owner="", binding_host_id="", status="DOWN",
                                           binding_vif_type="unbound")
