"""Host filters run after placement: each says whether one host may take the request.

Placement already guaranteed capacity, traits and zone aggregates; these check what placement
does not know: service liveness, zones of hosts without a zone aggregate, the requested
destination, image properties and aggregate metadata against flavor extra specs.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterable

from hosts.services.servicegroup import service_is_up

from .host_state import HostState, RequestView


class BaseFilter:
    name = "BaseFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        raise NotImplementedError


class ComputeFilter(BaseFilter):
    """The node's nova-compute service is up and enabled."""

    name = "ComputeFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        service = host.service
        if service is None or service.disabled:
            return False
        return host.service_up if host.service_up is not None else service_is_up(service)


class AvailabilityZoneFilter(BaseFilter):
    """The host is in the requested zone (its zone aggregate's, or the default zone)."""

    name = "AvailabilityZoneFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        zone = request.availability_zone
        return not zone or zone in host.availability_zone.split(",")


class RequestedDestinationFilter(BaseFilter):
    """``requested_destination`` host / node / cell."""

    name = "RequestedDestinationFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        if request.destination_host and host.host != request.destination_host:
            return False
        if request.destination_node and host.nodename != request.destination_node:
            return False
        cell = request.destination_cell
        return not cell or cell in (host.cell_uuid, host.cell_name)


class SourceCellFilter(BaseFilter):
    """A move that may not cross cells stays in the instance's cell."""

    name = "SourceCellFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        source = request.source_cell
        return not source or request.allow_cross_cell_move or host.cell_uuid == source


_ARCH_ALIASES = {"i386": "i686", "i486": "i686", "i586": "i686", "amd64": "x86_64", "x64": "x86_64",
                 "arm64": "aarch64"}
_HV_COMPATIBLE = {"kvm": {"kvm", "qemu"}, "qemu": {"qemu", "kvm"}}


class ImagePropertiesFilter(BaseFilter):
    """Image ``hw_architecture``/``architecture`` and ``img_hv_type``/``hypervisor_type`` match
    the node (unknown node facts pass)."""

    name = "ImagePropertiesFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        props = request.image_props
        arch = props.get("hw_architecture") or props.get("architecture")
        if arch and host.cpu_arch:
            wanted = _ARCH_ALIASES.get(str(arch).lower(), str(arch).lower())
            have = _ARCH_ALIASES.get(host.cpu_arch.lower(), host.cpu_arch.lower())
            if wanted != have:
                return False
        hv_type = props.get("img_hv_type") or props.get("hypervisor_type")
        if hv_type and host.hypervisor_type:
            wanted_hv = str(hv_type).lower()
            if wanted_hv not in _HV_COMPATIBLE.get(host.hypervisor_type.lower(), {host.hypervisor_type.lower()}):
                return False
        return True


AGGREGATE_SCOPE = "aggregate_instance_extra_specs"
_OPS: dict[str, Callable[[str, str], bool]] = {
    "s==": operator.eq, "s!=": operator.ne, "s<": operator.lt, "s<=": operator.le, "s>": operator.gt,
    "s>=": operator.ge, "<in>": lambda have, want: want in have,
}
_NUMERIC_OPS: dict[str, Callable[[float, float], bool]] = {
    "=": operator.ge, "==": operator.eq, "!=": operator.ne, ">=": operator.ge, "<=": operator.le,
}


def extra_spec_matches(have: str, requirement: str) -> bool:
    """Nova's extra-spec operators: ``s==``, ``s!=``, ``<in>``, ``<or>``, ``<all-in>``,
    numeric ``=`` (at least), ``==``, ``!=``, ``>=``, ``<=``; a bare string is equality."""
    words = requirement.split()
    if not words:
        return have == requirement
    op, args = words[0], words[1:]
    if op == "<or>":
        return have in [w for w in args if w != "<or>"]
    if op == "<all-in>":
        return all(a in have for a in args)
    if op in _OPS and args:
        return _OPS[op](have, " ".join(args))
    if op in _NUMERIC_OPS and args:
        try:
            return _NUMERIC_OPS[op](float(have), float(args[0]))
        except ValueError:
            return False
    return have == requirement


class AggregateInstanceExtraSpecsFilter(BaseFilter):
    """Flavor extra specs scoped ``aggregate_instance_extra_specs:`` (or unscoped) must match the
    metadata of the host's aggregates."""

    name = "AggregateInstanceExtraSpecsFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        for key, requirement in request.extra_specs.items():
            scope, _, rest = key.partition(":")
            if rest:
                if scope != AGGREGATE_SCOPE:
                    continue
                key = rest
            values = host.aggregate_metadata.get(key)
            if not values:
                return False
            if not any(extra_spec_matches(v, requirement) for v in values):
                return False
        return True


DEFAULT_FILTERS: tuple[BaseFilter, ...] = (
    ComputeFilter(), AvailabilityZoneFilter(), RequestedDestinationFilter(), SourceCellFilter(),
    ImagePropertiesFilter(), AggregateInstanceExtraSpecsFilter(),
)


def filter_hosts(
    hosts: Iterable[HostState], request: RequestView, filters: Iterable[BaseFilter] = DEFAULT_FILTERS,
    log: list[str] | None = None,
) -> list[HostState]:
    """Ignored hosts out; forced hosts/nodes (when any match) skip the filters, as in Nova;
    everything else through every filter in order. ``log`` collects "<filter>: n -> m" lines."""
    remaining = list(hosts)
    ignore = {h.lower() for h in request.ignore_hosts}
    if ignore:
        remaining = [h for h in remaining if h.host.lower() not in ignore]
    force_hosts = {h.lower() for h in request.force_hosts}
    force_nodes = {n.lower() for n in request.force_nodes}
    if force_hosts or force_nodes:
        forced = [h for h in remaining
                  if (not force_hosts or h.host.lower() in force_hosts)
                  and (not force_nodes or h.nodename.lower() in force_nodes)]
        if log is not None:
            log.append(f"forced hosts/nodes: {len(remaining)} -> {len(forced)}")
        return forced
    for flt in filters:
        before = len(remaining)
        remaining = [h for h in remaining if flt.host_passes(h, request)]
        if log is not None:
            log.append(f"{flt.name}: {before} -> {len(remaining)}")
        if not remaining:
            break
    return remaining
