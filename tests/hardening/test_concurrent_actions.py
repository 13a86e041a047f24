"""Twenty simultaneous requests of one state-changing action on one server: exactly one wins.

Against the live cloud (``manage.py run_cloud``: gunicorn with several workers and threads, real
conductor and compute workers) over plain HTTP, so that the requests really race in different
processes and threads on the cell database. ``claim_task_state``'s compare-and-swap UPDATE must let
exactly one request through (202) and answer the other nineteen with Nova's 409
``conflictingRequest``; the server must end in the state the one winner asked for, with one
instance action recorded for it.

os-stop and os-start are used because the outcome does not depend on timing: once a stop has won,
the server is no longer ACTIVE (task ``powering-off``, then SHUTOFF), so a late request is a 409 too.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any

import pytest

from tests.e2e.cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PARALLEL = 20
VERSION = {"OpenStack-API-Version": "compute 2.90"}


def http(method: str, url: str, *, token: str | None = None, body: Any = None,
         headers: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, dict[str, str], Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)  # noqa: S310
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("X-Auth-Token", token)
    for key, value in (headers or {}).items():
        request.add_header(key, value)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            status, raw, got = response.status, response.read(), dict(response.headers)
    except urllib.error.HTTPError as error:
        status, raw, got = error.code, error.read(), dict(error.headers)
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    return status, got, parsed


def issue_token(cloud: LiveCloud, user: str, password: str, project: str) -> str:
    body = {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {
            "name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}},
    }}
    status, headers, answer = http("POST", f"{cloud.url}/identity/v3/auth/tokens", body=body)
    assert status == 201, (status, answer)
    return headers["X-Subject-Token"]


def wait_for(predicate: Any, what: str, cloud: LiveCloud, timeout: float = 90) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        ok, last = predicate()
        if ok:
            return last
        time.sleep(0.5)
    raise AssertionError(f"{what}: last seen {last}\n{cloud.tail(40)}")


@pytest.fixture(scope="module")
def api(live_cloud: LiveCloud) -> dict[str, Any]:
    """Tokens of demo (member) and admin, the compute endpoint, and the demo objects' IDs, once the hosts are up."""
    admin = issue_token(live_cloud, "admin", "admin-secret", "admin")
    demo = issue_token(live_cloud, "demo", "demo-secret", "demo")
    compute = f"{live_cloud.url}/compute/v2.1"

    def hosts_up() -> tuple[bool, Any]:
        _status, _h, body = http("GET", f"{compute}/os-services", token=admin)
        up = [s["host"] for s in (body or {}).get("services", []) if s.get("state") == "up"
              and s.get("binary") == "nova-compute"]
        return len(up) == 4, up

    wait_for(hosts_up, "four compute hosts up", live_cloud)
    _s, _h, flavors = http("GET", f"{compute}/flavors", token=demo)
    _s, _h, images = http("GET", f"{live_cloud.url}/image/v2/images?name=tiny", token=demo)
    _s, _h, networks = http("GET", f"{live_cloud.url}/network/v2.0/networks?name=demo-net", token=demo)
    return {
        "cloud": live_cloud, "compute": compute, "admin": admin, "demo": demo,
        "flavor": next(f["id"] for f in flavors["flavors"] if f["name"] == "m1.tiny"),
        "image": next(i["id"] for i in images["images"] if i["name"] == "tiny"),
        "network": next(n["id"] for n in networks["networks"] if n["name"] == "demo-net"),
    }


def create_active_server(api: dict[str, Any], name: str) -> str:
    body = {"server": {"name": name, "flavorRef": api["flavor"], "imageRef": api["image"],
                       "networks": [{"uuid": api["network"]}]}}
    status, _h, answer = http("POST", f"{api['compute']}/servers", token=api["demo"], body=body, headers=VERSION)
    assert status == 202, (status, answer)
    server_id = answer["server"]["id"]
    wait_for_status(api, server_id, "ACTIVE")
    return server_id


def show(api: dict[str, Any], server_id: str) -> dict[str, Any]:
    status, _h, answer = http("GET", f"{api['compute']}/servers/{server_id}", token=api["demo"], headers=VERSION)
    assert status == 200, (status, answer)
    return answer["server"]


def wait_for_status(api: dict[str, Any], server_id: str, wanted: str) -> dict[str, Any]:
    def reached() -> tuple[bool, Any]:
        server = show(api, server_id)
        if server["status"] == "ERROR":
            raise AssertionError(f"{server_id} went to ERROR: {server.get('fault')}")
        return server["status"] == wanted and server["OS-EXT-STS:task_state"] is None, (
            server["status"], server["OS-EXT-STS:task_state"])

    return wait_for(reached, f"{server_id} {wanted}", api["cloud"])


def race(api: dict[str, Any], server_id: str, action: dict[str, Any]) -> list[tuple[int, Any]]:
    """PARALLEL threads released together, each POSTing ``action`` once; their (status, body)."""
    barrier = threading.Barrier(PARALLEL)
    results: list[tuple[int, Any]] = [(0, None)] * PARALLEL
    url = f"{api['compute']}/servers/{server_id}/action"

    def one(index: int) -> None:
        barrier.wait()
        try:
            status, _h, answer = http("POST", url, token=api["demo"], body=action, headers=VERSION)
        except OSError as error:  # a refused or dropped connection is a failure of its own kind
            status, answer = -1, repr(error)
        results[index] = (status, answer)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def instance_actions(api: dict[str, Any], server_id: str, action: str) -> list[dict[str, Any]]:
    status, _h, answer = http("GET", f"{api['compute']}/servers/{server_id}/os-instance-actions", token=api["demo"],
                              headers=VERSION)
    assert status == 200, (status, answer)
    return [a for a in answer["instanceActions"] if a["action"] == action]


@pytest.mark.parametrize(("action", "before", "after", "recorded"), [
    ({"os-stop": None}, "ACTIVE", "SHUTOFF", "stop"),
    ({"os-start": None}, "SHUTOFF", "ACTIVE", "start"),
])
def test_twenty_simultaneous_requests_have_exactly_one_winner(api: dict[str, Any], action: dict[str, Any],
                                                              before: str, after: str, recorded: str) -> None:
    # given a server in the state the action starts from
    server_id = create_active_server(api, f"race-{recorded}")
    if before == "SHUTOFF":
        status, _h, answer = http("POST", f"{api['compute']}/servers/{server_id}/action", token=api["demo"],
                                  body={"os-stop": None}, headers=VERSION)
        assert status == 202, (status, answer)
        wait_for_status(api, server_id, "SHUTOFF")
    # when twenty requests of the action arrive at once
    started = time.monotonic()
    results = race(api, server_id, action)
    elapsed = time.monotonic() - started
    # then exactly one is accepted and the nineteen others are Nova's 409 conflictingRequest
    codes = Counter(status for status, _body in results)
    assert codes == Counter({202: 1, 409: PARALLEL - 1}), (codes, [r for r in results if r[0] not in (202, 409)],
                                                           elapsed)
    for status, body in results:
        if status == 409:
            assert body["conflictingRequest"]["code"] == 409, body
            assert "while it is in" in body["conflictingRequest"]["message"], body
    # and the server ends where the one winner sent it, with one instance action for it
    wait_for_status(api, server_id, after)
    assert len(instance_actions(api, server_id, recorded)) == 1
    # and it still answers the opposite action normally (nothing was left claimed)
    opposite = {"os-start": None} if after == "SHUTOFF" else {"os-stop": None}
    status, _h, answer = http("POST", f"{api['compute']}/servers/{server_id}/action", token=api["demo"],
                              body=opposite, headers=VERSION)
    assert status == 202, (status, answer)
    wait_for_status(api, server_id, before)
