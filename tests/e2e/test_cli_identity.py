"""End to end: the real ``openstack`` CLI (python-openstackclient) against a live cloudcore web
process (gunicorn) set up as ``make run`` does (migrate + demo_setup, clouds.yaml); application
credentials with the CLI's ``v3applicationcredential`` auth type and openstacksdk's."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .cloud import ROOT, free_port, make_env

pytestmark = pytest.mark.slow


def _ensure_openstackclient() -> str:
    exe = shutil.which("openstack", path=str(Path(sys.executable).parent))
    if exe is None:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "python-openstackclient==10.5.0"], check=True)
        exe = shutil.which("openstack", path=str(Path(sys.executable).parent))
    assert exe, "python-openstackclient could not be installed"
    return exe


class WebCloud:
    def __init__(self, var_dir: Path) -> None:
        self.var_dir = var_dir
        self.port = free_port()
        self.env = make_env(var_dir, self.port)
        self.exe = _ensure_openstackclient()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = var_dir / "web.log"

    def manage(self, *args: str) -> None:
        subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, check=True,
                       capture_output=True, timeout=300)

    def start(self) -> None:
        self.manage("migrate", "--verbosity", "0")
        self.manage("demo_setup")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "cloudcore.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
             "--workers", "1", "--threads", "4"],
            cwd=ROOT, env=self.env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/identity/v3", timeout=2):  # noqa: S310
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"web did not start:\n{self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def openstack(self, *args: str, cloud: str = "cloudcore-demo",
                  check: bool = True) -> subprocess.CompletedProcess[str]:
        """``openstack <args>`` as ``cloud`` of clouds.yaml (none when empty: the arguments carry
        the authentication); with ``check`` false, a failure is returned instead of asserted."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(OS_CLIENT_CONFIG_FILE=str(self.var_dir / "clouds.yaml"))
        if cloud:
            env["OS_CLOUD"] = cloud
        result = subprocess.run([self.exe, *args], env=env, capture_output=True, text=True, timeout=180)
        assert result.returncode == 0 or not check, (
            f"openstack {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}\n"
            f"{self.log.read_text(errors='replace')[-3000:]}"
        )
        return result

    def openstack_json(self, *args: str, cloud: str = "cloudcore-demo") -> Any:
        return json.loads(self.openstack(*args, "-f", "json", cloud=cloud).stdout)

    @property
    def auth_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/identity/v3"


@pytest.fixture(scope="module")
def web_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebCloud]:
    cloud = WebCloud(Path(tmp_path_factory.mktemp("cli-identity")))
    cloud.start()
    try:
        yield cloud
    finally:
        cloud.stop()


def test_token_issue(web_cloud: WebCloud) -> None:
    token = web_cloud.openstack_json("token", "issue")
    assert token["id"] and token["project_id"] and token["user_id"]
    admin_token = web_cloud.openstack_json("token", "issue", cloud="cloudcore-admin")
    assert admin_token["project_id"] != token["project_id"]


def test_flavor_list(web_cloud: WebCloud) -> None:
    flavors = web_cloud.openstack_json("flavor", "list")
    assert {f["Name"] for f in flavors} >= {"m1.tiny", "m1.small", "m1.medium", "m1.large"}
    tiny = next(f for f in flavors if f["Name"] == "m1.tiny")
    assert (tiny["RAM"], tiny["Disk"], tiny["VCPUs"]) == (512, 1, 1)


def test_keypair_create_with_public_key(web_cloud: WebCloud, tmp_path: Path) -> None:
    key = tmp_path / "id.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example\n")
    created = web_cloud.openstack_json("keypair", "create", "--public-key", str(key), "k1")
    assert created["name"] == "k1"
    assert created["fingerprint"] == "f6:8f:5a:72:42:10:e2:eb:c0:26:02:c7:a2:e0:f8:03"
    assert [k["Name"] for k in web_cloud.openstack_json("keypair", "list")] == ["k1"]


def test_availability_zone_list_compute(web_cloud: WebCloud) -> None:
    # a member falls back from the (admin-only) detail to the plain list; the admin gets details
    web_cloud.openstack_json("availability", "zone", "list", "--compute")
    zones = web_cloud.openstack_json("availability", "zone", "list", "--compute", cloud="cloudcore-admin")
    assert isinstance(zones, list)


def test_admin_identity_and_flavor_commands(web_cloud: WebCloud) -> None:
    admin = "cloudcore-admin"
    project = web_cloud.openstack_json("project", "create", "e2e-project", cloud=admin)
    web_cloud.openstack_json("user", "create", "--password", "pw", "--project", "e2e-project", "e2e-user",
                             cloud=admin)
    web_cloud.openstack("role", "add", "--project", "e2e-project", "--user", "e2e-user", "member", cloud=admin)
    assignments = web_cloud.openstack_json("role", "assignment", "list", "--names", "--project", "e2e-project",
                                           cloud=admin)
    assert [(a["Role"], a["User"]) for a in assignments] == [("member", "e2e-user@Default")]
    flavor = web_cloud.openstack_json("flavor", "create", "--ram", "256", "--disk", "1", "--vcpus", "1",
                                      "--private", "e2e-private", cloud=admin)
    web_cloud.openstack("flavor", "set", "--project", project["id"], "--property", "hw:cpu_policy=dedicated",
                        "e2e-private", cloud=admin)
    shown = web_cloud.openstack_json("flavor", "show", flavor["id"], cloud=admin)
    assert shown["access_project_ids"] == [project["id"]]
    assert shown["properties"] == {"hw:cpu_policy": "dedicated"}
    # a member of another project does not see the private flavor
    assert "e2e-private" not in {f["Name"] for f in web_cloud.openstack_json("flavor", "list")}
    aggregate = web_cloud.openstack_json("aggregate", "create", "--zone", "e2e-az", "e2e-agg", cloud=admin)
    assert aggregate["availability_zone"] == "e2e-az"
    web_cloud.openstack("aggregate", "delete", "e2e-agg", cloud=admin)
    web_cloud.openstack("flavor", "delete", "e2e-private", cloud=admin)
    assert {e["Service Type"] for e in web_cloud.openstack_json("endpoint", "list", cloud=admin)} >= {
        "compute", "identity", "image", "network", "placement", "volumev3", "block-storage"}


def test_application_credential_create_use_delete(web_cloud: WebCloud) -> None:
    # given demo's application credential with the member role
    created = web_cloud.openstack_json("application", "credential", "create", "--role", "member",
                                       "--description", "e2e", "e2e-app")
    assert created["Name"] == "e2e-app" and created["Secret"] and created["Unrestricted"] is False
    assert [r["name"] for r in created["Roles"]] == ["member"]
    demo_project = web_cloud.openstack_json("token", "issue")["project_id"]
    assert created["Project ID"] == demo_project
    listed = web_cloud.openstack_json("application", "credential", "list")
    assert [c["Name"] for c in listed] == ["e2e-app"]
    appcred = ("--os-auth-type", "v3applicationcredential", "--os-auth-url", web_cloud.auth_url,
               "--os-identity-api-version", "3", "--os-region-name", "RegionOne",
               "--os-application-credential-id", created["ID"], "--os-application-credential-secret",
               created["Secret"])
    # when the CLI authenticates with it alone, then it acts in demo's project
    token = web_cloud.openstack_json(*appcred, "token", "issue", cloud="")
    assert token["project_id"] == demo_project
    assert web_cloud.openstack_json(*appcred, "server", "list", cloud="") == []
    # a restricted credential cannot make another one
    refused = web_cloud.openstack(*appcred, "application", "credential", "create", "child", cloud="", check=False)
    assert refused.returncode != 0 and "not allowed for managing additional application credentials" in (
        refused.stdout + refused.stderr)
    # openstacksdk with auth_type=v3applicationcredential too
    import openstack

    conn = openstack.connect(auth_type="v3applicationcredential", auth_url=web_cloud.auth_url,
                             application_credential_id=created["ID"],
                             application_credential_secret=created["Secret"], region_name="RegionOne",
                             identity_api_version="3")
    try:
        assert list(conn.compute.servers()) == []
        assert conn.current_project_id == demo_project
    finally:
        conn.close()
    # when it is deleted, then it authenticates no more
    web_cloud.openstack("application", "credential", "delete", "e2e-app")
    assert web_cloud.openstack_json("application", "credential", "list") == []
    assert web_cloud.openstack(*appcred, "server", "list", cloud="", check=False).returncode != 0


def test_token_revoke(web_cloud: WebCloud) -> None:
    token = web_cloud.openstack_json("token", "issue")["id"]
    request = urllib.request.Request(f"{web_cloud.auth_url}/auth/catalog", headers={"X-Auth-Token": token})
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        assert response.status == 200
    web_cloud.openstack("token", "revoke", token)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)  # noqa: S310
    assert refused.value.code == 401


def test_group_with_a_project_role(web_cloud: WebCloud) -> None:
    admin = "cloudcore-admin"
    web_cloud.openstack_json("group", "create", "--description", "operators", "e2e-ops", cloud=admin)
    web_cloud.openstack_json("user", "create", "--password", "gpw", "e2e-grouped", cloud=admin)
    web_cloud.openstack("group", "add", "user", "e2e-ops", "e2e-grouped", cloud=admin)
    contains = web_cloud.openstack("group", "contains", "user", "e2e-ops", "e2e-grouped", cloud=admin)
    assert "e2e-grouped in group e2e-ops" in contains.stdout
    web_cloud.openstack("role", "add", "--group", "e2e-ops", "--project", "demo", "reader", cloud=admin)
    assignments = web_cloud.openstack_json("role", "assignment", "list", "--names", "--group", "e2e-ops",
                                           cloud=admin)
    assert [(a["Role"], a["Group"], a["Project"]) for a in assignments] == [
        ("reader", "e2e-ops@Default", "demo@Default")]
    # the member of the group holds the role: a token scoped to demo
    token = web_cloud.openstack_json(
        "--os-auth-type", "password", "--os-auth-url", web_cloud.auth_url, "--os-identity-api-version", "3",
        "--os-username", "e2e-grouped", "--os-password", "gpw", "--os-project-name", "demo",
        "--os-user-domain-name", "Default", "--os-project-domain-name", "Default", "token", "issue", cloud="")
    assert token["project_id"]
    web_cloud.openstack("role", "remove", "--group", "e2e-ops", "--project", "demo", "reader", cloud=admin)
    web_cloud.openstack("group", "remove", "user", "e2e-ops", "e2e-grouped", cloud=admin)
    web_cloud.openstack("group", "delete", "e2e-ops", cloud=admin)
