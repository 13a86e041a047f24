"""Property-based fuzzing of every operation in ``/api/schema/`` with schemathesis: no request answers 5xx.

The schema is loaded from the WSGI application in-process (``schemathesis.openapi.from_wsgi``) on the
four-host, two-cell test cloud (tests/cloud.py), and every operation is called, as a cloud admin or as the
member ``demo`` (drawn per request like the microversion header), with:

1. schemathesis' own cases, positive and negative, path parameters random (mostly 404s);
2. the same with path parameters naming real objects of the cloud (a server, a flavor, a node, ...),
   DELETE left out so the objects stay for the other operations;
3. bodies shaped like OpenStack requests (``{"<wrapper or action key>": <random JSON>}``), since the
   schema documents most bodies as free-form objects and random keys never reach the handlers, and,
   for the server actions, well-formed actions too, so that the real server moves through its states.

Each pass draws a few derandomized examples per operation; a 5xx is recorded (with a curl line to
replay it) instead of failing at once, so one run reports every broken operation. A client error
on the compute API must moreover be a Nova fault body ``{"<faultName>": {"code": N, "message": M}}``.

``HARDENING_MAX_EXAMPLES`` (default 10) changes the number of examples per operation and pass.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable

ALL = ["default", "cell0", "cell1", "cell2"]

MAX_EXAMPLES = int(os.environ.get("HARDENING_MAX_EXAMPLES", "10"))
VERSION_HEADERS: list[dict[str, str]] = [
    {}, {"OpenStack-API-Version": "compute latest"}, {"OpenStack-API-Version": "compute 2.53"},
    {"OpenStack-API-Version": "placement latest"}, {"OpenStack-API-Version": "volume latest"},
]

# Keys an OpenStack request body is wrapped in, and the action keys of the ``.../action`` endpoints.
WRAPPER_KEYS = [
    "server", "flavor", "keypair", "aggregate", "metadata", "meta", "tags", "extra_specs", "volumeAttachment",
    "events", "auth", "project", "user", "role", "network", "subnet", "port", "volume", "attachment", "image",
    "service", "allocations", "inventories", "resource_provider", "traits", "resource_provider_generation",
    "os:scheduler_hints", "addTenantAccess", "removeTenantAccess", "status", "disabled_reason", "forced_down",
]
VOCABULARY = [
    "name", "type", "id", "uuid", "flavorRef", "imageRef", "networks", "host", "metadata", "min_count",
    "max_count", "block_device_mapping_v2", "availability_zone", "key_name", "user_data", "security_groups",
    "password", "identity", "methods", "scope", "domain", "state", "size", "volumeId", "device", "tag",
    "tenant", "ram", "vcpus", "disk", "public_key", "locked_reason", "adminPass", "flavor_id", "instance_uuid",
    "connector", "mode", "server_uuid", "total", "reserved", "min_unit", "max_unit", "step_size",
    "allocation_ratio", "resources", "consumer_generation", "project_id", "user_id", "generation", "fixed_ips",
    "ip_address", "subnet_id", "cidr", "ip_version", "gateway_ip", "shared", "enabled", "boot_index",
    "source_type", "destination_type", "volume_size", "delete_on_termination", "uuid", "port", "fixed_ip",
    "binding:host_id", "device_id", "device_owner", "visibility", "disk_format", "container_format",
    "os-extend", "new_size", "new_volume", "image_id", "reimage_reserved", "completed", "attach_status",
]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2**33), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "x", "1", "-1", "true", "auto", "none", "HARD", "SOFT", "active", "error", "compute1",
                     "az1", "m1.tiny", "tiny", "10.0.0.5", "2.90", "latest", "\x00", "é" * 300, "a" * 256]),
    st.text(max_size=20),
)


def json_values(known: list[str]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(VOCABULARY)
    leaves = st.one_of(SCALARS, st.sampled_from(known)) if known else SCALARS
    return st.recursive(
        leaves,
        lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=5)),
        max_leaves=12,
    )


def action_keys(path: str) -> list[str]:
    """The keys a request body of ``path`` is expected to start with."""
    from scheduling.api.compute_views import AGGREGATE_ACTIONS
    from servers.api.actions import HANDLERS

    if path.endswith("/servers/{server_id}/action"):
        return sorted(HANDLERS)
    if path.endswith("/os-aggregates/{aggregate_id}/action"):
        return sorted(AGGREGATE_ACTIONS)
    if path.endswith("/flavors/{flavor_id}/action"):
        return ["addTenantAccess", "removeTenantAccess"]
    if "/volume/" in path and path.rstrip("/").endswith("/action"):
        return ["os-extend", "os-reimage", "os-attach", "os-detach", "os-reserve", "os-unreserve",
                "os-begin_detaching", "os-roll_detaching", "os-initialize_connection", "os-terminate_connection",
                "os-reset_status", "os-set_bootable", "os-update_readonly_flag", "os-complete"]
    return WRAPPER_KEYS


def server_actions(objects: dict[str, str]) -> list[dict[str, Any]]:
    """Well-formed server actions, so that the fuzzed server also goes through its states."""
    return [
        {"os-stop": None}, {"os-start": None}, {"reboot": {"type": "HARD"}}, {"reboot": {"type": "soft"}},
        {"lock": None}, {"lock": {"locked_reason": "fuzz"}}, {"unlock": None}, {"shelve": None},
        {"shelveOffload": None}, {"unshelve": None}, {"unshelve": {"availability_zone": "az2"}},
        {"unshelve": {"host": "compute3"}}, {"resize": {"flavorRef": "2"}}, {"confirmResize": None},
        {"revertResize": None}, {"migrate": None}, {"migrate": {"host": "compute4"}},
        {"createImage": {"name": "fuzz-snap"}}, {"rebuild": {"imageRef": objects["image_id"]}},
        {"os-resetState": {"state": "active"}}, {"os-resetState": {"state": "error"}},
        {"changePassword": {"adminPass": "x"}},
    ]


# -- the application and the cloud's objects ------------------------------------------------------------------

@pytest.fixture
def wsgi_app() -> Any:
    """Django's WSGI handler, without the per-request connection recycling the test client also switches off."""
    from django.core.wsgi import get_wsgi_application

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def known_objects(cloud: Any) -> dict[str, str]:
    """Path parameter name -> a real object of the cloud (built through the API where it has one)."""
    from identity.models import Role
    from networks.models import Port
    from scheduling.models import Aggregate
    from servers.models import Flavor
    from tests.apihelpers import make_identity

    admin = cloud.admin()
    server = cloud.create_server(cloud.member(), "fuzz-target", networks="demo-net")
    cloud.put(admin, f"servers/{server['id']}/metadata/k1", {"meta": {"k1": "v1"}})
    cloud.put(admin, f"servers/{server['id']}/tags/t1", version="2.90")
    flavor = Flavor.objects.get(name="m1.tiny")
    cloud.post(admin, f"flavors/{flavor.flavorid}/os-extra_specs", {"extra_specs": {"k1": "v1"}})
    cloud.post(admin, "os-keypairs", {"keypair": {"name": "kp1"}}, version="2.90")
    actions = cloud.get(admin, f"servers/{server['id']}/os-instance-actions").json()["instanceActions"]
    services = cloud.get(admin, "os-services", version="2.53").json()["services"]
    user, project = make_identity("fuzz", project="fuzz", roles=["member"])
    volume = cloud.post(admin, "/volume/v3/volumes", {"volume": {"size": 1, "name": "fuzz-vol"}})
    objects = {
        "server_id": server["id"], "consumer_uuid": server["id"], "flavor_id": flavor.flavorid,
        "image_id": cloud.image_id, "net_id": cloud.network_id, "subnet_id": cloud.subnet_id,
        "uuid": cloud.hosts["compute1"]["node_uuid"], "hypervisor_id": cloud.hosts["compute1"]["node_uuid"],
        "pattern": "compute", "keypair_name": "kp1", "aggregate_id": str(Aggregate.objects.get(name="az1").id),
        "service_id": str(services[0]["id"]), "user_id": str(user.id), "project_id": str(project.id),
        "role_id": str(Role.objects.get(name="member").id), "domain_id": "default", "key": "k1", "tag": "t1",
        "request_id": actions[0]["request_id"], "rc": "VCPU", "name": "CUSTOM_FUZZ", "kind": "image",
    }
    port = Port.objects.filter(device_id=server["id"]).first()
    if port is not None:
        objects["port_id"] = str(port.id)
    if volume.status_code in (200, 202):
        objects["volume_id"] = volume.json()["volume"]["id"]
    return objects


# -- the run -------------------------------------------------------------------------------------------------

def run_operation(strategy: st.SearchStrategy[Any], headers: st.SearchStrategy[dict[str, str]],
                  call: Callable[[Any, dict[str, str]], None]) -> None:
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck), print_blob=False)
    @given(case=strategy, headers=headers)
    def examples(case: Any, headers: dict[str, str]) -> None:
        call(case, headers)

    try:
        examples()
    except Unsatisfiable:  # e.g. no way to make a request without parameters and body invalid
        pass


@pytest.mark.slow
@pytest.mark.django_db(databases=ALL, transaction=True)
def test_no_operation_of_the_openapi_schema_answers_5xx(cloud: Any, wsgi_app: Any) -> None:
    import schemathesis
    from schemathesis import GenerationMode

    from identity.services.tokens import token_issue
    from tests.apihelpers import make_identity

    # given the cloud with real objects (the server is demo's) and the tokens of a cloud admin and of demo
    objects = known_objects(cloud)
    tokens = [token_issue(user=user, project=project).value for user, project in (
        make_identity("admin", project="admin", roles=["admin"]), make_identity("demo", project="demo"))]
    headers = st.builds(lambda version, token: {"X-Auth-Token": token, **version},
                        st.sampled_from(VERSION_HEADERS), st.sampled_from(tokens))
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", wsgi_app)
    server_errors: list[str] = []
    bad_faults: list[str] = []
    calls = 0
    statuses: Counter[int] = Counter()

    def call(case: Any, headers: dict[str, str]) -> None:
        nonlocal calls
        calls += 1
        response = case.call(headers=headers)
        label = f"{case.operation.label}: {response.status_code}"
        statuses[response.status_code] += 1
        if response.status_code == 501 and _is_nova_fault(response.text, 501):
            pass  # a documented "not implemented" (changePassword to a guest agent that does not answer, as in Nova)
        elif response.status_code >= 500:
            server_errors.append(f"{label} {response.text[:300]!r}\n    {case.as_curl_command()}")
        elif (400 <= response.status_code and case.operation.path.startswith("/compute/")
              and not _is_nova_fault(response.text, response.status_code)):
            bad_faults.append(f"{label} {response.text[:200]!r}\n    {case.as_curl_command()}")

    # when every operation is called with schemathesis' cases, with real objects, and with OpenStack-like bodies
    for result in schema.get_all_operations():
        operation = result.ok()
        wanted = {p.name: objects[p.name] for p in operation.path_parameters if p.name in objects}
        strategies = [operation.as_strategy(GenerationMode.POSITIVE)]
        if operation.body:  # path parameters are free strings: only bodies can be made invalid
            strategies.append(operation.as_strategy(GenerationMode.NEGATIVE))
        if wanted and operation.method.upper() != "DELETE":
            strategies.append(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=wanted))
        if operation.body and operation.method.upper() != "DELETE":
            bodies = st.dictionaries(st.sampled_from(action_keys(operation.path)),
                                     json_values(list(objects.values())), min_size=1, max_size=1)
            if operation.path.endswith("/servers/{server_id}/action"):
                bodies = st.one_of(bodies, st.sampled_from(server_actions(objects)))
            base = operation.as_strategy(GenerationMode.POSITIVE, path_parameters=wanted or None)
            strategies.append(st.builds(_with_body, base, bodies))
        for strategy in strategies:
            run_operation(strategy, headers, call)

    # then no request answered 5xx, and the compute API's errors are Nova faults
    print(f"{calls} requests, by status: {dict(sorted(statuses.items()))}")
    assert calls > 500
    assert not server_errors, f"{len(server_errors)} of {calls} requests answered 5xx:\n" + "\n".join(server_errors)
    assert not bad_faults, f"{len(bad_faults)} compute errors without a Nova fault body:\n" + "\n".join(bad_faults)


def _with_body(case: Any, body: dict[str, Any]) -> Any:
    case.body = body
    case.media_type = "application/json"
    return case


def _is_nova_fault(text: str, code: int) -> bool:
    try:
        body = json.loads(text)
    except ValueError:
        return False
    if not isinstance(body, dict) or len(body) != 1:
        return False
    fault = next(iter(body.values()))
    return isinstance(fault, dict) and fault.get("code") == code and isinstance(fault.get("message"), str)


WALK = [
    {"os-stop": None}, {"os-start": None}, {"reboot": {"type": "SOFT"}}, {"lock": None}, {"unlock": None},
    {"shelve": None}, {"unshelve": None}, {"shelve": None}, {"shelveOffload": None},
    {"unshelve": {"host": "compute3"}}, {"resize": {"flavorRef": "2"}}, {"confirmResize": None},
    {"resize": {"flavorRef": "1"}}, {"revertResize": None}, {"migrate": None}, {"confirmResize": None},
    {"createImage": {"name": "walk-snap"}}, {"rebuild": {"imageRef": "IMAGE"}}, {"os-resetState": {"state": "error"}},
    {"reboot": {"type": "HARD"}}, {"os-resetState": {"state": "active"}}, {"changePassword": {"adminPass": "x"}},
]


@pytest.mark.django_db(databases=ALL)
@pytest.mark.parametrize("version", ["2.1", "2.53", "latest"])
def test_a_server_walked_through_its_states_twice_never_answers_5xx(cloud: Any, version: str) -> None:
    # given an active server of a member and a cloud admin
    member, admin = cloud.member(), cloud.admin()
    server = cloud.create_server(member, "walker", networks="demo-net")
    answers: list[tuple[str, int]] = []
    # when every action is asked twice in a row (the second usually in the wrong state), by member and admin
    for body in WALK:
        if "rebuild" in body:
            body = {"rebuild": {"imageRef": cloud.image_id}}
        for client in (member, member, admin):
            response = cloud.action(client, server["id"], body, version=version)
            answers.append((next(iter(body)), response.status_code))
            # then every answer is a success or a Nova fault with a 4xx code (changePassword may be 501)
            assert response.status_code < 500 or (response.status_code, next(iter(body))) == (501, "changePassword"), (
                body, response.status_code, response.content[:300])
            if response.status_code >= 400:
                assert _is_nova_fault(response.content.decode(), response.status_code), response.content[:300]
    assert sum(1 for _key, code in answers if code in (200, 202, 204)) >= len(WALK) // 2, answers
