"""Host filters run after placement: each says whether one host may take the request.

Placement already guaranteed capacity, traits and zone aggregates; these check what placement
does not know: service liveness, zones of hosts without a zone aggregate, the requested
destination, image properties and aggregate metadata against flavor extra specs.
"""
from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from functools import partial

from hosts.services.servicegroup import service_is_up

from .host_state import HostState, RequestView
from .trace import SchedulingTrace


class BaseFilter:
    name = "BaseFilter"

    def applies(self, request: RequestView) -> bool:
        """Can this filter reject any host for ``request``? When not, ``filter_hosts`` lets every
        host through without asking each one (a request that names no zone, destination, image
        property or aggregate extra spec costs nothing per host)."""
        return True

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        raise NotImplementedError

    def reason(self, host: HostState, request: RequestView) -> str:
        """Why ``host`` does not pass (asked only of hosts that did not, for the trace)."""
        return "rejected"


class ComputeFilter(BaseFilter):
    """The node's nova-compute service is up and enabled."""

    name = "ComputeFilter"

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        service = host.service
        if service is None or service.disabled:
            return False
        return host.service_up if host.service_up is not None else service_is_up(service)

    def reason(self, host: HostState, request: RequestView) -> str:
        service = host.service
        if service is None:
            return "no nova-compute service"
        if service.disabled:
            why = getattr(service, "disabled_reason", None)
            return f"service disabled ({why})" if why else "service disabled"
        return "service forced down" if getattr(service, "forced_down", False) else "service down"


class AvailabilityZoneFilter(BaseFilter):
    """The host is in the requested zone (its zone aggregate's, or the default zone)."""

    name = "AvailabilityZoneFilter"

    def applies(self, request: RequestView) -> bool:
        return bool(request.availability_zone)

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        zone = request.availability_zone
        return not zone or zone in host.availability_zone.split(",")

    def reason(self, host: HostState, request: RequestView) -> str:
        return f"in {host.availability_zone}, {request.availability_zone} requested"


class RequestedDestinationFilter(BaseFilter):
    """``requested_destination`` host / node / cell."""

    name = "RequestedDestinationFilter"

    def applies(self, request: RequestView) -> bool:
        return bool(request.destination_host or request.destination_node or request.destination_cell)

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        if request.destination_host and host.host != request.destination_host:
            return False
        if request.destination_node and host.nodename != request.destination_node:
            return False
        cell = request.destination_cell
        return not cell or cell in (host.cell_uuid, host.cell_name)

    def reason(self, host: HostState, request: RequestView) -> str:
        if request.destination_host and host.host != request.destination_host:
            return f"host {request.destination_host} requested"
        if request.destination_node and host.nodename != request.destination_node:
            return f"node {request.destination_node} requested"
        return f"in cell {host.cell_name or host.cell_uuid}, cell {request.destination_cell} requested"


class SourceCellFilter(BaseFilter):
    """A move that may not cross cells stays in the instance's cell."""

    name = "SourceCellFilter"

    def applies(self, request: RequestView) -> bool:
        return bool(request.source_cell) and not request.allow_cross_cell_move

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        source = request.source_cell
        return not source or request.allow_cross_cell_move or host.cell_uuid == source

    def reason(self, host: HostState, request: RequestView) -> str:
        return f"in cell {host.cell_name or host.cell_uuid}, the move may not leave cell {request.source_cell}"


_ARCH_ALIASES = {"i386": "i686", "i486": "i686", "i586": "i686", "amd64": "x86_64", "x64": "x86_64",
                 "arm64": "aarch64"}
_HV_COMPATIBLE = {"kvm": {"kvm", "qemu"}, "qemu": {"qemu", "kvm"}}


class ImagePropertiesFilter(BaseFilter):
    """Image ``hw_architecture``/``architecture`` and ``img_hv_type``/``hypervisor_type`` match
    the node (unknown node facts pass)."""

    name = "ImagePropertiesFilter"

    def applies(self, request: RequestView) -> bool:
        props = request.image_props
        return any(props.get(key) for key in ("hw_architecture", "architecture", "img_hv_type", "hypervisor_type"))

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

    def reason(self, host: HostState, request: RequestView) -> str:
        props = request.image_props
        arch = props.get("hw_architecture") or props.get("architecture")
        hv_type = props.get("img_hv_type") or props.get("hypervisor_type")
        return f"host {host.cpu_arch}/{host.hypervisor_type}, image wants {arch or 'any'}/{hv_type or 'any'}"


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


def _aggregate_key(spec_key: str) -> str | None:
    """The aggregate metadata key a flavor extra spec is matched against (unscoped, or scoped
    ``aggregate_instance_extra_specs:``); None for an extra spec of another scope."""
    scope, _, rest = spec_key.partition(":")
    if not rest:
        return spec_key
    return rest if scope == AGGREGATE_SCOPE else None


class AggregateInstanceExtraSpecsFilter(BaseFilter):
    """Flavor extra specs scoped ``aggregate_instance_extra_specs:`` (or unscoped) must match the
    metadata of the host's aggregates."""

    name = "AggregateInstanceExtraSpecsFilter"

    def applies(self, request: RequestView) -> bool:
        return any(_aggregate_key(key) is not None for key in request.extra_specs)

    def host_passes(self, host: HostState, request: RequestView) -> bool:
        for spec_key, requirement in request.extra_specs.items():
            key = _aggregate_key(spec_key)
            if key is None:
                continue
            values = host.aggregate_metadata.get(key)
            if not values:
                return False
            if not any(extra_spec_matches(v, requirement) for v in values):
                return False
        return True

    def reason(self, host: HostState, request: RequestView) -> str:
        for spec_key, requirement in request.extra_specs.items():
            key = _aggregate_key(spec_key)
            if key is None:
                continue
            values = host.aggregate_metadata.get(key)
            if not values or not any(extra_spec_matches(v, requirement) for v in values):
                return f"aggregate metadata {key}={','.join(sorted(values or [])) or '(none)'}, " \
                       f"flavor wants {requirement}"
        return "rejected"


DEFAULT_FILTERS: tuple[BaseFilter, ...] = (
    ComputeFilter(), AvailabilityZoneFilter(), RequestedDestinationFilter(), SourceCellFilter(),
    ImagePropertiesFilter(), AggregateInstanceExtraSpecsFilter(),
)


def filter_hosts(
    hosts: Iterable[HostState], request: RequestView, filters: Iterable[BaseFilter] = DEFAULT_FILTERS,
    log: list[str] | None = None, trace: SchedulingTrace | None = None,
) -> list[HostState]:
    """Ignored hosts out; forced hosts/nodes (when any match) skip the filters, as in Nova;
    everything else through every filter in order. ``log`` collects "<filter>: n -> m" lines;
    ``trace`` records each step with the hosts it rejected and why."""
    remaining = list(hosts)
    ignore = {h.lower() for h in request.ignore_hosts}
    if ignore:
        remaining = _step(remaining, "ignore_hosts", lambda h: h.host.lower() not in ignore,
                          lambda h: "in ignore_hosts", trace)
    force_hosts = {h.lower() for h in request.force_hosts}
    force_nodes = {n.lower() for n in request.force_nodes}
    if force_hosts or force_nodes:
        before = len(remaining)
        forced = _step(remaining, "forced hosts/nodes",
                       lambda h: (not force_hosts or h.host.lower() in force_hosts)
                       and (not force_nodes or h.nodename.lower() in force_nodes),
                       lambda h: "not a forced host/node", trace)
        if log is not None:
            log.append(f"forced hosts/nodes: {before} -> {len(forced)}")
        return forced
    for flt in filters:
        before = len(remaining)
        if flt.applies(request):
            remaining = _step(remaining, flt.name, partial(flt.host_passes, request=request),
                              partial(flt.reason, request=request), trace)
        elif trace is not None:
            trace.filtered(flt.name, before, [], partial(flt.reason, request=request))
        if log is not None:
            log.append(f"{flt.name}: {before} -> {len(remaining)}")
        if not remaining:
            break
    return remaining


def _step(hosts: list[HostState], name: str, passes: Callable[[HostState], bool],
          reason: Callable[[HostState], str], trace: SchedulingTrace | None) -> list[HostState]:
    if trace is None:
        return [h for h in hosts if passes(h)]
    kept: list[HostState] = []
    out: list[HostState] = []
    for host in hosts:
        (kept if passes(host) else out).append(host)
    trace.filtered(name, len(hosts), out, reason)
    return kept


def rejections(hosts: Iterable[HostState], request: RequestView,
               filters: Iterable[BaseFilter] = DEFAULT_FILTERS) -> dict[int, list[str]]:
    """``{id(host): ["<filter>: <reason>", ...]}`` with every filter each host fails (not only the
    first): what the dry run needs to say which single change would let a host in."""
    filters = list(filters)
    return {id(h): [f"{f.name}: {f.reason(h, request)}" for f in filters if not f.host_passes(h, request)]
            for h in hosts}
