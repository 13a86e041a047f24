"""The server body of the compute API, per microversion (STYLE rule 15).

Every field is declared once in ``SERVER_FIELDS`` with the microversion range it exists in and,
where Nova guards it, the policy rule that must pass; ``present_server`` renders a record for a
given version and actor. Down-cell stubs (2.69+) have their own minimal shape.
"""
from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from operator import attrgetter
from typing import Any

from django.conf import settings

from cloudcore.core.api.versioned import ByVersion, present, seconds_z, timestamp
from cloudcore.core.api.versioned import Field as VField
from cloudcore.core.context import RequestContext
from cloudcore.core.policy import can

from .choices import PowerState
from .models import (
    BlockDeviceMapping,
    Flavor,
    Instance,
    InstanceAction,
    InstanceActionEvent,
    InstanceGroup,
    KeyPair,
    Migration,
)
from .selectors import ServerRecord
from .services.disk_config import disk_config_to_api
from .status import PROGRESS_STATUSES, shown_vm_state, status_from_state

Version = tuple[int, int]
MAX = (2, 105)


def _ts(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    assert isinstance(value, datetime)
    return seconds_z(value)


def base_url() -> str:
    return settings.PUBLIC_URL.rstrip("/") + "/compute"


def links(kind: str, ident: str, project_scoped: bool = False, *, base: str | None = None) -> list[dict[str, str]]:
    """The self and bookmark links of ``kind``/``ident`` (``base``: ``base_url()``, when the caller
    already has it)."""
    base = base or base_url()
    return [
        {"rel": "self", "href": f"{base}/v2.1/{kind}/{ident}"},
        {"rel": "bookmark", "href": f"{base}/{kind}/{ident}"},
    ]


def host_id(project_id: str, host: str | None) -> str:
    if not host:
        return ""
    return hashlib.sha224((project_id + host).encode()).hexdigest()



def compact_ipv6(value: str | None) -> str:
    """An IPv6 address as Nova shows it: the compact form (``::babe:dc0c:1602`` for
    ``0000:...:babe:220.12.22.2``), whatever form the client sent."""
    if not value:
        return ""
    try:
        return str(ipaddress.IPv6Address(value))
    except ValueError:
        return value

@dataclass
class View:
    """What a field getter sees: the instance-like data, the record, version and actor."""

    record: ServerRecord
    data: dict[str, Any]
    version: Version
    actor: RequestContext
    addresses: dict[str, Any]
    volumes: list[dict[str, Any]]
    tags: list[str]
    fault: dict[str, Any] | None
    host_status: str
    #: The server's RequestSpec (API DB) as a dict: scheduler hints, requested zone (2.96, 2.100).
    spec: dict[str, Any] | None = None
    #: Names of the server's security groups (those of its ports; the requested ones before it has any).
    security_groups: tuple[str, ...] = ()
    #: What the rows of one page share (policy answers by (rule, project), the fields a project's
    #: rows show, the base URL): their checks only differ by the server's project.
    checks: dict[Any, Any] | None = None
    #: ``status`` (worked out once: the progress field's condition asks it too).
    status: str = ""
    #: ``base_url()``.
    base: str = ""
    #: The server's project (``record.project_id``): the target of the policy checks.
    project_id: str = ""

    def can(self, rule: str) -> bool:
        """``policy.can(actor, rule, {"project_id": <the server's project>})``, asked once per page."""
        if self.checks is None:
            return can(self.actor, rule, {"project_id": self.project_id})
        key = (rule, self.project_id)
        known = self.checks.get(key)
        if known is None:
            known = self.checks[key] = can(self.actor, rule, {"project_id": self.project_id})
        return known


_INSTANCE_ATTNAMES: tuple[str, ...] = ()


def instance_data(record: ServerRecord) -> dict[str, Any]:
    """Instance fields as a dict, whether the server is an Instance row or a BuildRequest."""
    global _INSTANCE_ATTNAMES
    if record.instance is not None:
        if not _INSTANCE_ATTNAMES:
            _INSTANCE_ATTNAMES = tuple(f.attname for f in Instance._meta.concrete_fields)
        inst = record.instance
        values = inst.__dict__  # a deferred field is not there: getattr loads it
        return {name: values[name] if name in values else getattr(inst, name) for name in _INSTANCE_ATTNAMES}
    assert record.build_request is not None
    data = dict(record.build_request.instance)
    data.setdefault("vm_state", "building")
    data.setdefault("task_state", "scheduling")
    data.setdefault("power_state", PowerState.NOSTATE)
    data["created_at"] = record.build_request.created_at
    data.setdefault("updated_at", None)
    data.setdefault("host", None)
    data.setdefault("node", None)
    data.setdefault("locked", False)
    data.setdefault("locked_reason", None)
    data.setdefault("launched_at", None)
    data.setdefault("terminated_at", None)
    data.setdefault("progress", 0)
    data.setdefault("root_device_name", None)
    data.setdefault("deleted", False)
    return data


def _status(v: View) -> str:
    return v.status


def _shared(v: View, kind: str, source: Any, make: Callable[[View], Any], also: Any = None) -> Any:
    """``make(v)``, made once per page for the rows whose ``source`` (the flavor or system metadata
    read, one object for the rows of equal stored text: ``RawRows``' ``shared_json``), ``also``
    (what else ``make`` reads of the row), project and version are the same: those rows' entries
    share the value (never changed once made). The memo keeps ``source`` itself, so its id cannot
    be another object's while the page is made."""
    if v.checks is None or not source:
        return make(v)
    key = (kind, id(source), also, v.project_id, v.version)
    known = v.checks.get(key)
    if known is None or known[0] is not source:
        known = v.checks[key] = (source, make(v))
    return known[1]


def _image(v: View) -> Any:
    ref = v.data.get("image_ref")
    if not ref:
        return ""
    if v.version >= (2, 98):
        return _shared(v, "image", v.data.get("system_metadata"), _image_body, ref)
    return _image_body(v)


def _image_body(v: View) -> dict[str, Any]:
    ref = v.data.get("image_ref")
    body: dict[str, Any] = {"id": ref, "links": [{"rel": "bookmark", "href": f"{v.base}/images/{ref}"}]}
    if v.version >= (2, 98):
        sysmeta = v.data.get("system_metadata") or {}
        body["properties"] = {k[6:]: val for k, val in sysmeta.items() if k.startswith("image_")
                              and k[6:] not in ("min_ram", "min_disk", "disk_format", "container_format",
                                                "base_image_ref")}
    return body


def _flavor(v: View) -> dict[str, Any]:
    return _shared(v, "flavor", v.data.get("flavor"), _flavor_body)  # type: ignore[no-any-return]


def _flavor_body(v: View) -> dict[str, Any]:
    flavor = v.data.get("flavor") or {}
    if v.version < (2, 47):
        fid = str(flavor.get("flavorid", ""))
        return {"id": fid, "links": [{"rel": "bookmark", "href": f"{v.base}/flavors/{fid}"}]}
    body = {
        "vcpus": flavor.get("vcpus"),
        "ram": flavor.get("memory_mb"),
        "disk": flavor.get("root_gb"),
        "ephemeral": flavor.get("ephemeral_gb", 0),
        "swap": flavor.get("swap", 0),
        "original_name": flavor.get("name"),
    }

    if v.can("os_compute_api:servers:show:flavor-extra-specs"):
        body["extra_specs"] = flavor.get("extra_specs", {})
    return body


def _host_id(v: View) -> str:
    """``host_id`` of the server's project and host, hashed once per page for each pair."""
    project_id, host = v.data.get("project_id") or "", v.data.get("host")
    if v.checks is None:
        return host_id(project_id, host)
    key = ("hostId", project_id, host)
    known = v.checks.get(key)
    if known is None:
        known = v.checks[key] = host_id(project_id, host)
    return str(known)


def _progress(v: View) -> int | None:
    return v.data.get("progress") or 0


def _fault(v: View) -> dict[str, Any] | None:
    return v.fault


def _admin(v: View) -> bool:
    return v.can("os_compute_api:os-extended-server-attributes")


Getter = Callable[[View], Any]
#: A field as a page shows it: (name, the column shown as it is or None, getter, the condition left
#: to ask per row).
ShownField = tuple[str, str | None, Getter, Callable[[View], bool] | None]
BodyFunction = Callable[[View, Callable[[str], Any]], dict[str, Any]]


@dataclass(frozen=True)
class Field:
    name: str
    getter: Getter
    min_version: Version = (2, 1)
    max_version: Version = MAX
    #: Field shown only when this predicate holds (Nova's policy-guarded attributes).
    when: Callable[[View], bool] | None = None
    #: ``when`` asks only the version and the policy, so it holds for every server of a project
    #: alike: a page asks it once per project.
    policy_only: bool = False
    #: The Instance columns the getter (and ``when``) reads: a list page loads only those of the
    #: fields of its version.
    columns: tuple[str, ...] = ()
    #: Shown in ``GET /servers/detail`` entries too, not only by a show (Nova lists no ``server_groups``).
    in_lists: bool = True


class _Column:
    """The getter of a field that shows one column as it is; a page's rows read it straight from
    their data (``present_server``), without a call per row."""

    __slots__ = ("column",)

    def __init__(self, column: str) -> None:
        self.column = column

    def __call__(self, v: View) -> Any:
        return v.data.get(self.column)


def _d(key: str) -> Getter:
    return _Column(key)


_STATE = ("vm_state", "task_state")

SERVER_FIELDS: tuple[Field, ...] = (
    Field("id", lambda v: v.record.uuid),
    Field("name", _d("display_name"), columns=("display_name",)),
    Field("status", _status, columns=_STATE),
    Field("tenant_id", _d("project_id"), columns=("project_id",)),
    Field("user_id", _d("user_id"), columns=("user_id",)),
    Field("metadata", lambda v: v.data.get("metadata") or {}, columns=("metadata",)),
    Field("hostId", lambda v: _host_id(v), columns=("project_id", "host")),
    Field("image", _image, max_version=(2, 97), columns=("image_ref",)),
    Field("image", _image, (2, 98), columns=("image_ref", "system_metadata")),
    Field("flavor", _flavor, columns=("flavor",)),
    Field("created", lambda v: _ts(v.data.get("created_at")), columns=("created_at",)),
    Field("updated", lambda v: _ts(v.data.get("updated_at") or v.data.get("created_at")),
          columns=("updated_at", "created_at")),
    Field("addresses", lambda v: v.addresses),
    Field("accessIPv4", lambda v: v.data.get("access_ip_v4") or "", columns=("access_ip_v4",)),
    Field("accessIPv6", lambda v: compact_ipv6(v.data.get("access_ip_v6")), columns=("access_ip_v6",)),
    Field("links", lambda v: links("servers", v.record.uuid, base=v.base)),
    Field("OS-DCF:diskConfig", lambda v: disk_config_to_api(v.data.get("auto_disk_config")),
          columns=("auto_disk_config",)),
    Field("progress", _progress, when=lambda v: _status(v) in PROGRESS_STATUSES, columns=("progress", *_STATE)),
    Field("OS-EXT-AZ:availability_zone", lambda v: v.data.get("availability_zone") or "",
          columns=("availability_zone",)),
    Field("config_drive", lambda v: v.data.get("config_drive") or "", columns=("config_drive",)),
    Field("key_name", _d("key_name"), columns=("key_name",)),
    Field("OS-SRV-USG:launched_at", lambda v: timestamp(v.data.get("launched_at")), columns=("launched_at",)),
    Field("OS-SRV-USG:terminated_at", lambda v: timestamp(v.data.get("terminated_at")), columns=("terminated_at",)),
    Field("OS-EXT-SRV-ATTR:host", _d("host"), when=_admin, policy_only=True, columns=("host",)),
    Field("OS-EXT-SRV-ATTR:instance_name", lambda v: f"instance-{v.record.uuid}", when=_admin, policy_only=True),
    Field("OS-EXT-SRV-ATTR:hypervisor_hostname", _d("node"), when=_admin, policy_only=True, columns=("node",)),
    Field("OS-EXT-SRV-ATTR:reservation_id", _d("reservation_id"), (2, 3), when=_admin, policy_only=True,
          columns=("reservation_id",)),
    Field("OS-EXT-SRV-ATTR:launch_index", _d("launch_index"), (2, 3), when=_admin, policy_only=True,
          columns=("launch_index",)),
    Field("OS-EXT-SRV-ATTR:hostname", _d("hostname"), (2, 3),
          when=lambda v: v.version >= (2, 90) or _admin(v), policy_only=True, columns=("hostname",)),
    Field("OS-EXT-SRV-ATTR:kernel_id", _d("kernel_id"), (2, 3), when=_admin, policy_only=True,
          columns=("kernel_id",)),
    Field("OS-EXT-SRV-ATTR:ramdisk_id", _d("ramdisk_id"), (2, 3), when=_admin, policy_only=True,
          columns=("ramdisk_id",)),
    Field("OS-EXT-SRV-ATTR:root_device_name", _d("root_device_name"), (2, 3), when=_admin, policy_only=True,
          columns=("root_device_name",)),
    Field("OS-EXT-SRV-ATTR:user_data", _d("user_data"), (2, 3), when=_admin, policy_only=True,
          columns=("user_data",)),
    Field("OS-EXT-STS:task_state", _d("task_state"), columns=("task_state",)),
    Field("OS-EXT-STS:vm_state", lambda v: shown_vm_state(v.data["vm_state"], v.version), columns=("vm_state",)),
    Field("OS-EXT-STS:power_state", lambda v: v.data.get("power_state") or 0, columns=("power_state",)),
    Field("os-extended-volumes:volumes_attached", lambda v: [
        {"id": vol["id"], **({"delete_on_termination": vol["delete_on_termination"]}
                             if v.version >= (2, 3) else {})} for vol in v.volumes
    ]),
    # Nova shows the groups of the server's ports, and no key at all for a server in none.
    Field("security_groups", lambda v: [{"name": name} for name in v.security_groups],
          when=lambda v: bool(v.security_groups)),
    Field("locked", lambda v: bool(v.data.get("locked")), (2, 9), columns=("locked",)),
    Field("host_status", lambda v: v.host_status, (2, 16), when=lambda v: _host_status_allowed(v),
          policy_only=True),
    Field("description", _d("display_description"), (2, 19), columns=("display_description",)),
    Field("tags", lambda v: v.tags, (2, 26)),
    Field("trusted_image_certificates", lambda v: v.data.get("trusted_certs"), (2, 63), columns=("trusted_certs",)),
    Field("locked_reason", _d("locked_reason"), (2, 73), columns=("locked_reason",)),
    Field("pinned_availability_zone", lambda v: (v.spec or {}).get("availability_zone") or None, (2, 96)),
    Field("server_groups", lambda v: [g["uuid"]] if (g := (v.spec or {}).get("instance_group")) else [], (2, 71),
          in_lists=False),
    Field("scheduler_hints", lambda v: (v.spec or {}).get("scheduler_hints") or {}, (2, 100)),
    Field("fault", _fault, when=lambda v: v.fault is not None),
)

#: What ``render`` reads of a page's rows besides the fields (faults, security groups of servers
#: still building, host status); the selector adds the sort key.
_RENDER_COLUMNS = ("uuid", "project_id", "vm_state", "host")


def _host_status_allowed(v: View) -> bool:
    return v.can("os_compute_api:servers:show:host_status")


def present_server(
    record: ServerRecord,
    *,
    version: Version,
    actor: RequestContext,
    addresses: dict[str, Any] | None = None,
    volumes: list[dict[str, Any]] | None = None,
    tags: list[str] | None = None,
    fault: dict[str, Any] | None = None,
    host_status: str = "",
    spec: dict[str, Any] | None = None,
    security_groups: list[str] | None = None,
    checks: dict[Any, Any] | None = None,
    listing: bool = False,
) -> dict[str, Any]:
    """The ``server`` body (detail shape) of ``record`` for ``version``; with ``listing``, an entry
    of ``GET /servers/detail`` (no field a list does not show). A page passes one ``checks`` dict
    for all its rows, so each policy rule (and which fields a project's rows show) is worked out
    once per project, not per row."""
    if record.down_cell:
        return present_down_cell(record, version=version)
    memo = {} if checks is None else checks
    base = memo.get("base_url")
    if base is None:
        base = memo["base_url"] = base_url()
    project_id = record.project_id
    key = ("fields", version, listing, project_id)
    plan: _Plan | None = memo.get(key)
    if plan is None:
        plan = memo[key] = _plan(_fields_shown(_policy_view(record, version, actor, memo, project_id), listing))
    body_of, columns = plan
    data = _row_data(record, columns, memo)
    view = View(record, data, version, actor, addresses or {}, volumes or [], tags or [],
                fault, host_status, spec, tuple(security_groups or ()), memo,
                status_from_state(data["vm_state"], data.get("task_state"), version), base, project_id)
    return body_of(view, data.get)


#: What renders the rows of one version and project: the body function of the fields they show,
#: and the Instance columns those fields (and ``render``) read.
_Plan = tuple[BodyFunction, frozenset[str]]


def _plan(fields: tuple[Field, ...]) -> _Plan:
    return _body_function(_shown_fields(fields)), _columns_of(fields)


def _policy_view(record: ServerRecord, version: Version, actor: RequestContext, checks: dict[Any, Any],
                 project_id: str) -> View:
    """A ``View`` for the conditions that ask only the version and the policy (``Field.policy_only``):
    no row's data."""
    return View(record, {}, version, actor, {}, [], [], None, "", checks=checks, project_id=project_id)


def _row_data(record: ServerRecord, columns: frozenset[str], memo: dict[Any, Any]) -> dict[str, Any]:
    """The instance's fields as getters read them: an Instance row's own ``__dict__`` when the
    ``columns`` the shown fields read are loaded (no copy; a list page loads only those), else
    ``instance_data``. The rows of a page, read with the same columns (``record.loaded``), are
    compared once (``memo``: a page's ``checks``), not each row's keys (35 lookups a row)."""
    inst = record.instance
    if inst is not None:
        values = inst.__dict__
        loaded = record.loaded
        if loaded is not None:
            key = ("loaded", loaded, columns)
            has = memo.get(key)
            if has is None:
                has = memo[key] = loaded >= columns
            if has:
                return values
        if values.keys() >= columns:
            return values
    return instance_data(record)


_COLUMNS_AT: dict[Version, frozenset[str]] = {}


def _columns_at(version: Version) -> frozenset[str]:
    columns = _COLUMNS_AT.get(version)
    if columns is None:
        columns = _COLUMNS_AT[version] = _columns_of(_fields_at(version))
    return columns


def _columns_of(fields: tuple[Field, ...]) -> frozenset[str]:
    """The Instance columns ``fields`` and ``render`` read."""
    return frozenset({c for f in fields for c in f.columns} | set(_RENDER_COLUMNS))


def list_columns(version: Version, *, actor: RequestContext | None = None, project_id: str | None = None
                 ) -> frozenset[str]:
    """The Instance columns a detail page at ``version`` reads (its fields' and ``render``'s); with
    ``actor`` and ``project_id``, of a page of that project's servers only: the columns of the
    fields the policy shows ``actor`` there (a member reads no administrator's attribute)."""
    if actor is None or project_id is None:
        return _columns_at(version)
    return _columns_of(_fields_shown(_policy_view(ServerRecord(uuid=""), version, actor, {}, project_id), True))


def _fields_shown(view: View, listing: bool) -> tuple[Field, ...]:
    """The fields of ``view``'s version (of a list's entries with ``listing``) that its project's
    rows may show: those whose policy-only condition holds for it."""
    return tuple(f for f in _fields_at(view.version)
                 if (f.in_lists or not listing) and not (f.policy_only and f.when is not None and not f.when(view)))


def _shown_fields(fields: tuple[Field, ...]) -> tuple[ShownField, ...]:
    """``fields`` (``_fields_shown``) as a body function takes them: (name, the column shown as it
    is or None, getter, the condition left to ask per row)."""
    return tuple((f.name, f.getter.column if isinstance(f.getter, _Column) else None, f.getter,
                  None if f.policy_only else f.when) for f in fields)


_BODY_FUNCTIONS: dict[tuple[ShownField, ...], BodyFunction] = {}


def _body_function(shown: tuple[ShownField, ...]) -> BodyFunction:
    """One function that builds the body of the fields ``shown`` (``_shown_fields``) from a row's
    ``View`` and its data's ``get``: a dict display of the getters' calls (and of the columns shown
    as they are), the fields with a per-row condition set after it in table order. Written once per
    process for each set of fields (a few per microversion): a page of 1,000 rows then spends no
    loop, no condition and no call on a field beyond its own getter's."""
    body = _BODY_FUNCTIONS.get(shown)
    if body is not None:
        return body
    names: dict[str, Any] = {}
    lines = ["def body(v, get):", "    b = {"]
    opened = True
    for i, (name, column, getter, when) in enumerate(shown):
        value = f"get({column!r})" if column is not None else f"g{i}(v)"
        names[f"g{i}"] = getter
        if when is not None:
            names[f"w{i}"] = when
            if opened:
                lines.append("    }")
                opened = False
            lines += [f"    if w{i}(v):", f"        b[{name!r}] = {value}"]
        elif opened:
            lines.append(f"        {name!r}: {value},")
        else:
            lines.append(f"    b[{name!r}] = {value}")
    if opened:
        lines.append("    }")
    lines.append("    return b")
    # the source is made of this module's field names and column names only, never of request data
    exec("\n".join(lines), names)  # noqa: S102
    body = _BODY_FUNCTIONS[shown] = names["body"]
    return body


_FIELDS_AT: dict[Version, tuple[Field, ...]] = {}


def _fields_at(version: Version) -> tuple[Field, ...]:
    """``SERVER_FIELDS`` that exist at ``version``, in order."""
    fields = _FIELDS_AT.get(version)
    if fields is None:
        fields = _FIELDS_AT[version] = tuple(f for f in SERVER_FIELDS if f.min_version <= version <= f.max_version)
    return fields


def server_field_at(name: str, version: Version, *, listing: bool = False) -> bool:
    """Whether ``SERVER_FIELDS`` has ``name`` at ``version`` (in a list's entries with ``listing``),
    so its extras are worth loading."""
    return any(f.name == name and f.min_version <= version <= f.max_version and (f.in_lists or not listing)
               for f in SERVER_FIELDS)


#: Before 2.75 Nova answers ``PUT /servers/{id}`` and a rebuild with a reduced server: without these
#: fields and without the extended attributes (names with these prefixes).
UPDATE_FULL_SINCE: Version = (2, 75)
_UPDATE_HIDDEN_PREFIXES = ("OS-EXT-AZ:", "OS-EXT-SRV-ATTR:", "OS-SRV-USG:", "OS-EXT-STS:", "os-extended-volumes:")
_UPDATE_HIDDEN = {"config_drive", "host_status", "key_name", "security_groups", "server_groups"}


def basic_addresses(addresses: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Nova's basic address view: ``version`` and ``addr`` only (no ``OS-EXT-IPS`` attributes), as
    ``/servers/{id}/ips`` and the reduced update/rebuild answer show addresses."""
    return {label: [{"version": a["version"], "addr": a["addr"]} for a in entries]
            for label, entries in addresses.items()}


def present_updated_server(body: dict[str, Any], *, version: Version, rebuild: bool = False) -> dict[str, Any]:
    """The answer to ``PUT /servers/{id}`` and to a rebuild: the detail body, reduced before 2.75
    (no extended attributes, and the basic address view: no ``OS-EXT-IPS`` attributes), but for
    what earlier microversions added to these answers: a rebuild's ``key_name`` from 2.54, and
    ``server_groups`` in both from 2.71."""
    if version >= UPDATE_FULL_SINCE:
        return body
    kept = {"key_name"} if rebuild and version >= (2, 54) else set()
    if version >= (2, 71):
        kept.add("server_groups")
    reduced = {k: v for k, v in body.items()
               if k in kept or (k not in _UPDATE_HIDDEN and not k.startswith(_UPDATE_HIDDEN_PREFIXES))}
    if "addresses" in reduced:
        reduced["addresses"] = basic_addresses(reduced["addresses"])
    return reduced


def present_server_brief(record: ServerRecord) -> dict[str, Any]:
    """The ``GET /servers`` (non-detail) entry."""
    name = ""
    if record.instance is not None:
        name = record.instance.display_name
    elif record.build_request is not None:
        name = record.build_request.instance.get("display_name", "")
    return {"id": record.uuid, "name": name, "links": links("servers", record.uuid)}


def present_down_cell(record: ServerRecord, *, version: Version) -> dict[str, Any]:
    """A server whose cell does not answer (2.69+): what the API database knows."""
    body: dict[str, Any] = {
        "id": record.uuid,
        "status": "UNKNOWN",
        "tenant_id": record.mapping.project_id if record.mapping else "",
        "links": links("servers", record.uuid),
    }
    if record.mapping is not None:
        body["created"] = _ts(record.mapping.created_at)
    return body


def present_down_cell_show(record: ServerRecord, *, version: Version, spec: dict[str, Any]) -> dict[str, Any]:
    """``GET /servers/{id}`` of a server whose cell does not answer (2.69+): the stub plus what the
    API database knows (the RequestSpec ``spec``: flavor, image, zone); 2.71 ``server_groups``."""
    body = present_down_cell(record, version=version)
    flavor = spec.get("flavor") or {}
    image = spec.get("image") or {}
    body["user_id"] = record.mapping.user_id if record.mapping else None
    body["image"] = {"id": image["id"], "links": [links("images", image["id"])[1]]} if image.get("id") else ""
    body["flavor"] = {"vcpus": flavor.get("vcpus"), "ram": flavor.get("memory_mb"), "disk": flavor.get("root_gb"),
                      "ephemeral": flavor.get("ephemeral_gb", 0), "swap": flavor.get("swap", 0),
                      "original_name": flavor.get("name"), "extra_specs": flavor.get("extra_specs", {})}
    body["OS-EXT-AZ:availability_zone"] = spec.get("availability_zone") or "UNKNOWN"
    body["OS-EXT-STS:power_state"] = 0
    body.update(present(DOWN_CELL_SHOW_FIELDS, record, version))
    return body


DOWN_CELL_SHOW_FIELDS: tuple[VField[ServerRecord], ...] = (
    VField("server_groups", lambda r: [], since=(2, 71)),
)


# --- os-migrations --------------------------------------------------------------------------------
MIGRATION_FIELDS: tuple[VField[Migration], ...] = (
    VField("id", attrgetter("id")),
    VField("status", attrgetter("status")),
    VField("instance_uuid", attrgetter("instance_uuid")),
    VField("source_node", attrgetter("source_node")),
    VField("source_compute", attrgetter("source_compute")),
    VField("dest_node", attrgetter("dest_node")),
    VField("dest_compute", attrgetter("dest_compute")),
    VField("dest_host", attrgetter("dest_host")),
    VField("old_instance_type_id", attrgetter("old_instance_type_id")),
    VField("new_instance_type_id", attrgetter("new_instance_type_id")),
    VField("created_at", lambda m: timestamp(m.created_at)),
    VField("updated_at", lambda m: timestamp(m.updated_at)),
    VField("migration_type", attrgetter("migration_type"), since=(2, 23)),
    VField("uuid", attrgetter("uuid"), since=(2, 59)),
    VField("user_id", attrgetter("user_id"), since=(2, 80)),
    VField("project_id", attrgetter("project_id"), since=(2, 80)),
)


#: the fields of a migration (``MIGRATION_FIELDS``, ``SERVER_MIGRATION_FIELDS``) that name hosts:
#: null for a reader whom the list's ``...:index:host`` rule does not allow (a project manager)
MIGRATION_HOST_FIELDS = ("source_node", "source_compute", "dest_node", "dest_compute", "dest_host")


def without_hosts(body: dict[str, Any]) -> dict[str, Any]:
    """A migration's ``body`` with its host fields null (Nova keeps the keys)."""
    return {**body, **{name: None for name in MIGRATION_HOST_FIELDS if name in body}}


#: ``GET /servers/{id}/migrations[/{id}]`` (2.23+): a live migration in progress
SERVER_MIGRATION_FIELDS: tuple[VField[Migration], ...] = (
    VField("created_at", lambda m: timestamp(m.created_at)),
    VField("dest_compute", attrgetter("dest_compute")),
    VField("dest_host", attrgetter("dest_host")),
    VField("dest_node", attrgetter("dest_node")),
    VField("disk_processed_bytes", attrgetter("disk_processed")),
    VField("disk_remaining_bytes", attrgetter("disk_remaining")),
    VField("disk_total_bytes", attrgetter("disk_total")),
    VField("id", attrgetter("id")),
    VField("memory_processed_bytes", attrgetter("memory_processed")),
    VField("memory_remaining_bytes", attrgetter("memory_remaining")),
    VField("memory_total_bytes", attrgetter("memory_total")),
    VField("server_uuid", attrgetter("instance_uuid")),
    VField("source_compute", attrgetter("source_compute")),
    VField("source_node", attrgetter("source_node")),
    VField("status", attrgetter("status")),
    VField("updated_at", lambda m: timestamp(m.updated_at)),
    VField("uuid", attrgetter("uuid"), since=(2, 59)),
    VField("user_id", attrgetter("user_id"), since=(2, 80)),
    VField("project_id", attrgetter("project_id"), since=(2, 80)),
)


# --- os-instance-actions --------------------------------------------------------------------------
INSTANCE_ACTION_FIELDS: tuple[VField[InstanceAction], ...] = (
    VField("action", attrgetter("action")),
    VField("instance_uuid", attrgetter("instance_uuid")),
    VField("message", attrgetter("message")),
    VField("project_id", attrgetter("project_id")),
    VField("request_id", attrgetter("request_id")),
    VField("start_time", lambda a: timestamp(a.start_time)),
    VField("user_id", attrgetter("user_id")),
    VField("updated_at", lambda a: timestamp(a.updated_at or a.start_time), since=(2, 58)),
)


@dataclass(frozen=True)
class EventView:
    """An instance action event as the API shows it to one actor (what its policies let it see)."""

    event: InstanceActionEvent
    project_id: str
    #: ``os_compute_api:os-instance-actions:events`` passes: traceback and host are shown.
    with_host_details: bool
    #: ``os_compute_api:os-instance-actions:events:details`` passes.
    with_details: bool


INSTANCE_ACTION_EVENT_FIELDS: tuple[VField[EventView], ...] = (
    VField("event", attrgetter("event.event")),
    VField("start_time", lambda e: timestamp(e.event.start_time)),
    VField("finish_time", lambda e: timestamp(e.event.finish_time)),
    VField("result", attrgetter("event.result")),
    VField("traceback", attrgetter("event.traceback"), when=attrgetter("with_host_details")),
    VField("hostId", lambda e: host_id(e.project_id, e.event.host), since=(2, 62)),
    VField("host", lambda e: e.event.host or "", since=(2, 62), when=attrgetter("with_host_details")),
    VField("details", attrgetter("event.details"), since=(2, 84), when=attrgetter("with_details")),
)


# --- os-volume_attachments ------------------------------------------------------------------------
VOLUME_ATTACHMENT_FIELDS: tuple[VField[BlockDeviceMapping], ...] = (
    VField("device", attrgetter("device_name")),
    VField("serverId", attrgetter("instance_uuid")),
    VField("volumeId", attrgetter("volume_id")),
    VField("id", attrgetter("volume_id"), until=(2, 88)),
    VField("tag", attrgetter("tag"), since=(2, 70)),
    VField("delete_on_termination", attrgetter("delete_on_termination"), since=(2, 79)),
    VField("attachment_id", attrgetter("attachment_id"), since=(2, 89)),
    VField("bdm_uuid", attrgetter("uuid"), since=(2, 89)),
)


# --- os-interface ---------------------------------------------------------------------------------
#: An interface is ``servers.services.interfaces``' dict of a port (``id``, ``network_id``,
#: ``mac_address``, ``status``, ``fixed_ips``) with its VIF's ``tag`` (shown from 2.70).
INTERFACE_ATTACHMENT_FIELDS: tuple[VField[dict[str, Any]], ...] = (
    VField("fixed_ips", lambda i: [dict(f) for f in i["fixed_ips"]]),
    VField("mac_addr", lambda i: i["mac_address"]),
    VField("net_id", lambda i: i["network_id"]),
    VField("port_id", lambda i: i["id"]),
    VField("port_state", lambda i: i["status"]),
    VField("tag", lambda i: i.get("tag"), since=(2, 70)),
)


# --- os-keypairs ----------------------------------------------------------------------------------
def _ts_naive_micro(value: Any) -> str | None:
    return value.replace(tzinfo=None).strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


_KEYPAIR_KEY: tuple[VField[KeyPair], ...] = (
    VField("name", attrgetter("name")),
    VField("public_key", attrgetter("public_key")),
    VField("fingerprint", attrgetter("fingerprint")),
)
_KEYPAIR_TYPE: VField[KeyPair] = VField("type", attrgetter("type"), since=(2, 2))
#: An entry of ``GET /os-keypairs`` (wrapped in ``{"keypair": ...}``).
KEYPAIR_BRIEF_FIELDS = (*_KEYPAIR_KEY, _KEYPAIR_TYPE)
#: ``GET /os-keypairs/{name}``.
KEYPAIR_FIELDS: tuple[VField[KeyPair], ...] = (
    *_KEYPAIR_KEY,
    VField("user_id", attrgetter("user_id")),
    VField("created_at", lambda k: _ts_naive_micro(k.created_at)),
    VField("updated_at", lambda k: _ts_naive_micro(k.updated_at)),
    VField("deleted", lambda k: False),
    VField("deleted_at", lambda k: None),
    VField("id", attrgetter("id")),
    _KEYPAIR_TYPE,
)
#: ``POST /os-keypairs`` (``private_key`` is added when the key was generated).
KEYPAIR_CREATED_FIELDS = (*_KEYPAIR_KEY, VField("user_id", attrgetter("user_id")), _KEYPAIR_TYPE)
KEYPAIR_CREATE_STATUS = ByVersion({(2, 1): 200, (2, 2): 201})
KEYPAIR_DELETE_STATUS = ByVersion({(2, 1): 202, (2, 2): 204})


# --- flavors --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ShownFlavor:
    """A flavor as shown to one actor (``extra_specs`` only with the extra-specs index rule)."""

    flavor: Flavor
    with_extra_specs: bool = False


_FLAVOR_BRIEF: tuple[VField[ShownFlavor], ...] = (
    VField("id", attrgetter("flavor.flavorid")),
    VField("name", attrgetter("flavor.name")),
    VField("links", lambda f: links("flavors", f.flavor.flavorid)),
)
_FLAVOR_DESCRIPTION: VField[ShownFlavor] = VField("description", attrgetter("flavor.description"), since=(2, 55))
#: An entry of ``GET /flavors``.
FLAVOR_BRIEF_FIELDS = (*_FLAVOR_BRIEF, _FLAVOR_DESCRIPTION)
#: ``GET /flavors/detail`` entries and ``/flavors/{id}``: 2.55 ``description``, 2.61
#: ``extra_specs`` (policy permitting), 2.75 a zero ``swap`` is ``0`` instead of ``""``; 2.102 drops
#: ``rxtx_factor`` and ``OS-FLV-DISABLED:disabled``.
FLAVOR_FIELDS: tuple[VField[ShownFlavor], ...] = (
    _FLAVOR_BRIEF[0], _FLAVOR_BRIEF[1],
    VField("ram", attrgetter("flavor.memory_mb")),
    VField("disk", attrgetter("flavor.root_gb")),
    VField("vcpus", attrgetter("flavor.vcpus")),
    _FLAVOR_BRIEF[2],
    VField("OS-FLV-EXT-DATA:ephemeral", attrgetter("flavor.ephemeral_gb")),
    VField("OS-FLV-DISABLED:disabled", attrgetter("flavor.disabled"), until=(2, 101)),
    VField("os-flavor-access:is_public", attrgetter("flavor.is_public")),
    VField("swap", lambda f: f.flavor.swap or "", until=(2, 74)),
    VField("swap", attrgetter("flavor.swap"), since=(2, 75)),
    VField("rxtx_factor", attrgetter("flavor.rxtx_factor"), until=(2, 101)),
    _FLAVOR_DESCRIPTION,
    VField("extra_specs", lambda f: {s.key: s.value for s in f.flavor.extra_specs.all()}, since=(2, 61),
           when=attrgetter("with_extra_specs")),
)


# --- os-server-groups -----------------------------------------------------------------------------
@dataclass
class GroupView:
    """A server group with its live members (``services.server_groups.live_members``)."""

    group: InstanceGroup
    members: list[str]


#: ``{"server_group": ...}`` of ``/os-server-groups``: ``policies`` (a list of one) and
#: ``metadata`` until 2.63, ``policy`` and ``rules`` from 2.64, the owner from 2.13.
SERVER_GROUP_FIELDS: tuple[VField[GroupView], ...] = (
    VField("id", lambda v: v.group.uuid),
    VField("name", lambda v: v.group.name),
    VField("policies", lambda v: [v.group.policy], until=(2, 63)),
    VField("policy", lambda v: v.group.policy, since=(2, 64)),
    VField("rules", lambda v: dict(v.group.rules or {}), since=(2, 64)),
    VField("members", lambda v: list(v.members)),
    VField("metadata", lambda v: {}, until=(2, 63)),
    VField("project_id", lambda v: v.group.project_id, since=(2, 13)),
    VField("user_id", lambda v: v.group.user_id, since=(2, 13)),
)
