"""An application credential boots a server, end to end with the real ``openstack`` CLI against
the live cloud: demo creates a member credential, a clouds.yaml cloud with
``auth_type: v3applicationcredential`` and nothing else (no user, no password, no project)
creates, shows and deletes a server, and the credential is deleted."""
from __future__ import annotations

import pytest
import yaml

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
APPCRED_CLOUD = "cloudcore-demo-appcred"


def add_appcred_cloud(cloud: LiveCloud, credential: dict[str, str]) -> None:
    config = yaml.safe_load(cloud.clouds_yaml.read_text())
    demo = config["clouds"]["cloudcore-demo"]
    config["clouds"][APPCRED_CLOUD] = {
        "auth_type": "v3applicationcredential",
        "auth": {"auth_url": demo["auth"]["auth_url"], "application_credential_id": credential["ID"],
                 "application_credential_secret": credential["Secret"]},
        "identity_api_version": 3, "region_name": demo["region_name"], "interface": "public",
    }
    cloud.clouds_yaml.write_text(yaml.safe_dump(config, sort_keys=False))


def test_application_credential_boots_a_server(live_cloud: LiveCloud) -> None:
    cloud = live_cloud.wait_computes_up()
    # given demo's application credential with the member role
    credential = cloud.openstack_json("application", "credential", "create", "--role", "member", "e2e-boot")
    add_appcred_cloud(cloud, credential)
    # when the credential alone boots a server
    created = cloud.openstack_json("server", "create", "--flavor", "m1.tiny", "--image", "tiny", "--network",
                                   "demo-net", "--wait", "appcred-vm", cloud=APPCRED_CLOUD)
    # then it is ACTIVE in demo's project, and demo's password sees it too
    assert created["status"] == "ACTIVE"
    assert created["project_id"] == credential["Project ID"]
    assert cloud.openstack_json("server", "show", "appcred-vm")["id"] == created["id"]
    cloud.openstack("server", "delete", "--wait", "appcred-vm", cloud=APPCRED_CLOUD)
    # once deleted, the credential authenticates no more
    cloud.openstack("application", "credential", "delete", "e2e-boot")
    assert cloud.openstack("server", "list", cloud=APPCRED_CLOUD, check=False).returncode != 0
