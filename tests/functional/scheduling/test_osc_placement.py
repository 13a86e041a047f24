"""The real ``openstack resource provider ...`` CLI (osc-placement) against a real web process:
provider create/list/show/delete, inventories, traits, aggregates, allocations, usages and
allocation candidates, and a member's 403."""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cloud() -> Iterator[dict[str, str]]:
    if not (BIN / "openstack").exists():
        pytest.skip("python-openstackclient is not installed")
    var_dir = Path(tempfile.mkdtemp(prefix="cloudcore-osc-placement-"))
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDCORE_", "DJANGO_", "OS_"))}
    env.update(CLOUDCORE_VAR_DIR=str(var_dir), CLOUDCORE_PUBLIC_URL=f"http://127.0.0.1:{port}",
               CLOUDCORE_ADMIN_PASSWORD="admin-pw", CLOUDCORE_DEMO_PASSWORD="demo-pw",
               DJANGO_SETTINGS_MODULE="cloudcore.settings")
    manage = [sys.executable, "manage.py"]
    for command in (["migrate", "-v0"], ["demo_setup"]):
        subprocess.run(manage + command, cwd=ROOT, env=env, check=True, capture_output=True, timeout=300)
    log = open(var_dir / "web.log", "wb")  # noqa: SIM115 - closed below
    web = subprocess.Popen(manage + ["runserver", f"127.0.0.1:{port}", "--noreload"], cwd=ROOT, env=env,
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/placement/", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or web.poll() is not None:
                    raise RuntimeError((var_dir / "web.log").read_text()[-3000:]) from None
                time.sleep(0.3)
        yield {**env, "OS_CLIENT_CONFIG_FILE": str(var_dir / "clouds.yaml")}
    finally:
        web.terminate()
        web.wait(10)
        log.close()
        shutil.rmtree(var_dir, ignore_errors=True)


def osc(env: dict[str, str], *args: str, cloud: str = "cloudcore-admin", version: str | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [str(BIN / "openstack"), "--os-cloud", cloud]
    if version:
        argv += ["--os-placement-api-version", version]
    result = subprocess.run(argv + list(args), env=env, capture_output=True, text=True, timeout=120)
    if check and result.returncode != 0:
        raise AssertionError(f"openstack {' '.join(args)} failed: {result.stderr}")
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> object:
    return json.loads(result.stdout)


def test_resource_provider_commands(cloud):
    # given a provider created with the CLI (1.0: 201 + Location, which the client follows)
    created = as_json(osc(cloud, "resource", "provider", "create", "node-cli", "-f", "json"))
    rp = created["uuid"]
    assert created["name"] == "node-cli"
    # when inventories are set, then they are listed with usage
    osc(cloud, "resource", "provider", "inventory", "set", rp, "--resource", "VCPU=8",
        "--resource", "VCPU:allocation_ratio=4.0", "--resource", "MEMORY_MB=4096")
    inventory = {row["resource_class"]: row for row in as_json(
        osc(cloud, "resource", "provider", "inventory", "list", rp, "-f", "json"))}
    assert inventory["VCPU"]["total"] == 8 and inventory["VCPU"]["allocation_ratio"] == 4.0
    # traits and aggregates
    osc(cloud, "trait", "create", "CUSTOM_CLI", version="1.6")
    osc(cloud, "resource", "provider", "trait", "set", rp, "--trait", "CUSTOM_CLI", version="1.6")
    agg = "11111111-2222-3333-4444-555555555555"
    generation = as_json(osc(cloud, "resource", "provider", "show", rp, "-f", "json"))["generation"]
    osc(cloud, "resource", "provider", "aggregate", "set", rp, "--aggregate", agg, "--generation",
        str(generation), version="1.19")
    # allocations, usages, candidates
    consumer = "99999999-2222-3333-4444-555555555555"
    osc(cloud, "resource", "provider", "allocation", "set", consumer, "--allocation", f"rp={rp},VCPU=2",
        "--project-id", "p1", "--user-id", "u1", version="1.12")
    usage = {row["resource_class"]: row["usage"] for row in as_json(
        osc(cloud, "resource", "usage", "show", "p1", "-f", "json", version="1.9"))}
    assert usage == {"VCPU": 2}
    candidates = as_json(osc(cloud, "allocation", "candidate", "list", "--resource", "VCPU=4", "--required",
                             "CUSTOM_CLI", "--member-of", agg, "-f", "json", version="1.29"))
    assert [c["resource provider"] for c in candidates] == [rp]
    # a provider with allocations cannot be deleted; without them it can
    refused = osc(cloud, "resource", "provider", "delete", rp, check=False)
    assert refused.returncode != 0 and "has allocations" in refused.stderr
    osc(cloud, "resource", "provider", "allocation", "delete", consumer)
    osc(cloud, "resource", "provider", "delete", rp)
    assert as_json(osc(cloud, "resource", "provider", "list", "-f", "json")) == []


def test_member_is_refused(cloud):
    result = osc(cloud, "resource", "provider", "list", cloud="cloudcore-demo", check=False)
    assert result.returncode != 0
    assert "Policy does not allow placement:resource_providers:list to be performed" in result.stderr
