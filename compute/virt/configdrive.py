"""The config drive: what the guest learns about itself, in OpenStack's format, on a small ISO.

Driver-neutral: ``config_drive_files`` builds the drive's files from the instance row and the
``network_info`` the driver spawns with (what the API says about the server: its uuid, name,
hostname, key, user data, zone, project and ports), ``write_config_drive`` lays them out on an
ISO9660 image labelled ``config-2`` (Rock Ridge and Joliet names, as ``genisoimage -r -J`` would)
with pycdlib, and the driver attaches that file as a read-only cdrom. cloud-init (or anything that
mounts the drive) reads ``openstack/latest/meta_data.json``, ``user_data``, ``network_data.json``
and ``vendor_data2.json``.

A server gets a drive when it asked for one (``config_drive: true``, stored as ``"True"``) or when
the operator forces it (``FORCE_CONFIG_DRIVE``), as Nova's ``configdrive.required_by``.
"""
from __future__ import annotations

import base64
import binascii
import io
import ipaddress
import json
from pathlib import Path
from typing import Any

import pycdlib
from django.conf import settings

from .driver import tap_name

LABEL = "config-2"
FILE_NAME = "disk.config"
_LATEST = "openstack/latest"


def config_drive_required(instance: Any) -> bool:
    """Whether the server gets a config drive: it asked for one, or the operator forces it."""
    asked = str(getattr(instance, "config_drive", "") or "").lower() not in ("", "false", "0", "none")
    return asked or bool(getattr(settings, "FORCE_CONFIG_DRIVE", False))


def meta_data(instance: Any) -> dict[str, Any]:
    """``meta_data.json``: the server as the API describes it."""
    keys = []
    public_keys: dict[str, str] = {}
    if getattr(instance, "key_name", None) and getattr(instance, "key_data", None):
        public_keys[instance.key_name] = instance.key_data
        keys.append({"name": instance.key_name, "type": "ssh", "data": instance.key_data})
    return {
        "uuid": str(instance.uuid),
        "name": getattr(instance, "display_name", "") or "",
        "hostname": getattr(instance, "hostname", "") or "",
        "launch_index": int(getattr(instance, "launch_index", 0) or 0),
        "availability_zone": getattr(instance, "availability_zone", None),
        "project_id": getattr(instance, "project_id", "") or "",
        "meta": dict(getattr(instance, "metadata", None) or {}),
        "public_keys": public_keys,
        "keys": keys,
        "devices": [],
    }


def _netmask(cidr: str | None) -> str | None:
    return str(ipaddress.ip_network(cidr, strict=False).netmask) if cidr else None


def network_data(network_info: list[dict[str, Any]]) -> dict[str, Any]:
    """``network_data.json``: one link per port (its MAC) and one network per fixed IP on it."""
    links: list[dict[str, Any]] = []
    networks: list[dict[str, Any]] = []
    for vif in network_info:
        link_id = tap_name(vif["id"])
        net = vif.get("network") or {}
        links.append({"id": link_id, "vif_id": vif["id"], "type": "phy", "mtu": net.get("mtu"),
                      "ethernet_mac_address": vif["address"]})
        for subnet in net.get("subnets") or []:
            for ip in subnet.get("ips") or []:
                if ip.get("type", "fixed") != "fixed":
                    continue
                version = ip.get("version") or ipaddress.ip_address(ip["address"]).version
                default = str(ipaddress.ip_network("0.0.0.0/0" if version == 4 else "::/0").network_address)
                routes: list[dict[str, Any]] = []
                if subnet.get("gateway"):
                    routes.append({"network": default, "netmask": default, "gateway": subnet["gateway"]})
                networks.append({"id": f"network{len(networks)}", "type": f"ipv{version}", "link": link_id,
                                 "ip_address": ip["address"], "netmask": _netmask(subnet.get("cidr")),
                                 "routes": routes, "network_id": net.get("id"), "services": []})
    return {"links": links, "networks": networks, "services": []}


def _user_data(instance: Any) -> bytes | None:
    """The user data as the guest sees it: the API stores it base64-encoded."""
    raw = getattr(instance, "user_data", None)
    if not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return str(raw).encode()


def _injected_files(instance: Any) -> list[tuple[str, bytes]]:
    """The personality files (``Instance.injected_files``, base64 as the API took them), decoded."""
    out = []
    for item in getattr(instance, "injected_files", None) or []:
        try:
            out.append((str(item["path"]), base64.b64decode(item["contents"], validate=True)))
        except (binascii.Error, ValueError, KeyError, TypeError):
            continue  # the API refused what does not decode: nothing of the kind is stored
    return out


def config_drive_files(instance: Any, network_info: list[dict[str, Any]]) -> dict[str, bytes]:
    """The drive's files, path -> bytes (paths relative to the drive's root). Personality files are
    ``openstack/content/NNNN``, listed with their guest paths in ``meta_data.json``'s ``files``."""
    meta = meta_data(instance)
    injected = _injected_files(instance)
    if injected:
        meta["files"] = [{"path": path, "content_path": f"/content/{index:04d}"}
                         for index, (path, _) in enumerate(injected)]
    files = {
        f"{_LATEST}/meta_data.json": json.dumps(meta).encode(),
        f"{_LATEST}/network_data.json": json.dumps(network_data(network_info)).encode(),
        f"{_LATEST}/vendor_data.json": b"{}",
        f"{_LATEST}/vendor_data2.json": b"{}",
    }
    user_data = _user_data(instance)
    if user_data is not None:
        files[f"{_LATEST}/user_data"] = user_data
    for index, (_, content) in enumerate(injected):
        files[f"openstack/content/{index:04d}"] = content
    return files


def _iso_name(part: str, *, is_file: bool) -> str:
    """An ISO9660 level-3 name for ``part`` (the Rock Ridge and Joliet names keep the real one)."""
    name = "".join(c if c.isalnum() else "_" for c in part.upper().replace(".", "\0")).replace("\0", ".")
    if not is_file:
        return name.replace(".", "_")[:31]
    stem, dot, ext = name.rpartition(".")
    if not dot:
        stem, ext = name, ""
    return f"{stem[:26]}.{ext[:3]};1"


def write_config_drive(files: dict[str, bytes], target: Path) -> Path:
    """Write ``files`` as an ISO9660 image labelled ``config-2`` at ``target`` (world-readable: the
    hypervisor process opens it)."""
    iso = pycdlib.PyCdlib()
    iso.new(interchange_level=3, joliet=3, rock_ridge="1.09", vol_ident=LABEL)
    made: set[str] = set()
    try:
        for path in sorted(files):
            parts = path.split("/")
            for depth in range(1, len(parts)):
                directory = "/".join(parts[:depth])
                if directory not in made:
                    iso.add_directory("/" + "/".join(_iso_name(p, is_file=False) for p in parts[:depth]),
                                      rr_name=parts[depth - 1], joliet_path="/" + directory)
                    made.add(directory)
            iso_path = "/" + "/".join([*(_iso_name(p, is_file=False) for p in parts[:-1]),
                                       _iso_name(parts[-1], is_file=True)])
            data = files[path]
            iso.add_fp(io.BytesIO(data), len(data), iso_path, rr_name=parts[-1], joliet_path="/" + path)
        target.parent.mkdir(parents=True, exist_ok=True)
        iso.write(str(target))
    finally:
        iso.close()
    target.chmod(0o644)
    return target


def read_config_drive(path: Path) -> tuple[str, dict[str, bytes]]:
    """A config drive's volume label and files (by their Rock Ridge names): for tests and operators."""
    iso = pycdlib.PyCdlib()
    iso.open(str(path))
    out: dict[str, bytes] = {}
    try:
        for dirname, _dirs, names in iso.walk(rr_path="/"):
            for name in names:
                rr_path = f"{dirname.rstrip('/')}/{name}"
                buf = io.BytesIO()
                iso.get_file_from_iso_fp(buf, rr_path=rr_path)
                out[rr_path.lstrip("/")] = buf.getvalue()
        label = iso.pvd.volume_identifier.decode().strip()
    finally:
        iso.close()
    return label, out
