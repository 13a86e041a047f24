"""QoS specs through Cinder's API: admin-only CRUD, keys set and deleted, association with volume
types (seen in the type's ``qos_specs_id``), and deletion refused while associated unless forced."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
Q = "/volume/v3/qos-specs"
T = "/volume/v3/types"


def _create(admin: Any, **body: Any) -> dict[str, Any]:
    created = call(admin, "post", Q, {"qos_specs": body})
    assert created.status_code == 200, created.content
    return created.json()


def test_admin_manages_qos_specs_and_their_keys(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    # when an admin creates QoS specs with a consumer and two keys
    created = _create(admin, name="silver", consumer="front-end", total_iops_sec="500", read_bytes_sec="1024")
    specs = created["qos_specs"]
    # then Cinder's body comes back, with its links
    assert set(specs) == {"id", "name", "consumer", "specs"}
    assert (specs["name"], specs["consumer"], specs["specs"]) == (
        "silver", "front-end", {"total_iops_sec": "500", "read_bytes_sec": "1024"})
    assert [link["rel"] for link in created["links"]] == ["self", "bookmark"]
    # and it is shown and listed
    assert call(admin, "get", f"{Q}/{specs['id']}").json()["qos_specs"] == specs
    assert specs in call(admin, "get", Q).json()["qos_specs"]
    # when a key is set and the consumer changed, the answer names what changed
    updated = call(admin, "put", f"{Q}/{specs['id']}", {"qos_specs": {"total_iops_sec": "900", "consumer": "both"}})
    assert updated.status_code == 200 and updated.json() == {"qos_specs": {"total_iops_sec": "900", "consumer": "both"}}
    # and a key is deleted
    assert call(admin, "put", f"{Q}/{specs['id']}/delete_keys", {"keys": ["read_bytes_sec"]}).status_code == 202
    shown = call(admin, "get", f"{Q}/{specs['id']}").json()["qos_specs"]
    assert (shown["consumer"], shown["specs"]) == ("both", {"total_iops_sec": "900"})
    # a key the specs lack is a 404 and changes nothing
    missing = call(admin, "put", f"{Q}/{specs['id']}/delete_keys", {"keys": ["total_iops_sec", "nope"]})
    assert missing.status_code == 404 and "itemNotFound" in missing.json()
    assert call(admin, "get", f"{Q}/{specs['id']}").json()["qos_specs"]["specs"] == {"total_iops_sec": "900"}
    # a taken name is a 409, a bad consumer or no name a 400, an unknown id a 404
    assert call(admin, "post", Q, {"qos_specs": {"name": "silver"}}).status_code == 409
    bad = call(admin, "post", Q, {"qos_specs": {"name": "x", "consumer": "middle"}})
    assert bad.status_code == 400 and "consumer" in bad.json()["badRequest"]["message"]
    assert call(admin, "post", Q, {"qos_specs": {"consumer": "both"}}).status_code == 400
    assert call(admin, "get", f"{Q}/no-such-id").status_code == 404
    # and a member may do none of it
    for method, path, body in [("get", Q, None), ("get", f"{Q}/{specs['id']}", None),
                               ("post", Q, {"qos_specs": {"name": "mine"}}),
                               ("put", f"{Q}/{specs['id']}", {"qos_specs": {"a": "b"}}),
                               ("delete", f"{Q}/{specs['id']}", None)]:
        refused = call(member, method, path, body)
        assert refused.status_code == 403, (method, path, refused.content)
        assert "volume_extension:qos_specs_manage" in refused.json()["forbidden"]["message"]
    # when the admin deletes them, they are gone
    assert call(admin, "delete", f"{Q}/{specs['id']}").status_code == 202
    assert call(admin, "get", f"{Q}/{specs['id']}").status_code == 404


def test_associations_show_on_the_type_and_guard_deletion(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    gold = _create(admin, name="gold", total_iops_sec="2000")["qos_specs"]
    bronze = _create(admin, name="bronze")["qos_specs"]
    vt = call(admin, "post", T, {"volume_type": {"name": "fast"}}).json()["volume_type"]
    other = call(admin, "post", T, {"volume_type": {"name": "slow"}}).json()["volume_type"]
    # when the admin associates gold with two types
    for type_id in (vt["id"], other["id"]):
        assert call(admin, "get", f"{Q}/{gold['id']}/associate?vol_type_id={type_id}").status_code == 202
    # then the associations list them and the type shows its qos_specs_id to admins only
    associations = call(admin, "get", f"{Q}/{gold['id']}/associations").json()["qos_associations"]
    assert associations == [{"association_type": "volume_type", "name": "fast", "id": vt["id"]},
                            {"association_type": "volume_type", "name": "slow", "id": other["id"]}]
    assert call(admin, "get", f"{T}/{vt['id']}").json()["volume_type"]["qos_specs_id"] == gold["id"]
    assert "qos_specs_id" not in call(member, "get", f"{T}/{vt['id']}").json()["volume_type"]
    # a type associated with gold cannot take bronze, an unknown type is a 404, no type a 400
    taken = call(admin, "get", f"{Q}/{bronze['id']}/associate?vol_type_id={vt['id']}")
    assert taken.status_code == 400 and gold["id"] in taken.json()["badRequest"]["message"]
    assert call(admin, "get", f"{Q}/{bronze['id']}/associate?vol_type_id=nope").status_code == 404
    assert call(admin, "get", f"{Q}/{bronze['id']}/associate").status_code == 400
    # deleting associated specs is refused unless forced
    refused = call(admin, "delete", f"{Q}/{gold['id']}")
    assert refused.status_code == 400 and "still associated" in refused.json()["badRequest"]["message"]
    # when one type is disassociated, the other stays
    assert call(admin, "get", f"{Q}/{gold['id']}/disassociate?vol_type_id={vt['id']}").status_code == 202
    assert call(admin, "get", f"{T}/{vt['id']}").json()["volume_type"]["qos_specs_id"] is None
    assert [a["id"] for a in call(admin, "get", f"{Q}/{gold['id']}/associations").json()["qos_associations"]] == [
        other["id"]]
    # and disassociate_all frees the last one
    assert call(admin, "get", f"{Q}/{gold['id']}/disassociate_all").status_code == 202
    assert call(admin, "get", f"{Q}/{gold['id']}/associations").json() == {"qos_associations": []}
    # a forced delete of associated specs disassociates the type
    assert call(admin, "get", f"{Q}/{bronze['id']}/associate?vol_type_id={vt['id']}").status_code == 202
    assert call(admin, "delete", f"{Q}/{bronze['id']}?force=True").status_code == 202
    assert call(admin, "get", f"{T}/{vt['id']}").json()["volume_type"]["qos_specs_id"] is None
