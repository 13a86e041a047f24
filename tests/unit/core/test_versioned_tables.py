"""The declarative microversion tables (``cloudcore.core.api.versioned``)."""
from __future__ import annotations

from operator import itemgetter

from cloudcore.core.api.versioned import ByVersion, Field, Since, field_at, present

FIELDS = (
    Field("id", itemgetter("id")),
    Field("old", itemgetter("id"), until=(2, 52)),
    Field("uuid", itemgetter("uuid"), since=(2, 53)),
    Field("secret", itemgetter("secret"), when=lambda d: d["admin"]),
)


def test_present_keeps_the_fields_of_the_version_in_table_order():
    # given an object
    obj = {"id": 1, "uuid": "u", "secret": "s", "admin": False}
    # when presented either side of 2.53, then each field appears in its range only
    assert present(FIELDS, obj, (2, 52)) == {"id": 1, "old": 1}
    assert list(present(FIELDS, obj, (2, 53))) == ["id", "uuid"]
    # and a guarded field only when its predicate holds
    assert present(FIELDS, {**obj, "admin": True}, (2, 1)) == {"id": 1, "old": 1, "secret": "s"}
    assert field_at(FIELDS, "uuid", (2, 53)) and not field_at(FIELDS, "uuid", (2, 52))


def test_since_filters_names_by_version():
    # given query parameters of which two appeared later
    table = Since({"limit": (2, 59), "user_id": (2, 80)})
    params = {"limit": "1", "user_id": "u", "status": "done"}
    # then below their version they are dropped; unlisted names always stay
    assert table.only(params, (2, 58)) == {"status": "done"}
    assert table.only(params, (2, 80)) == params
    assert table.names_at((2, 59)) == {"limit"} and table.has("status", (2, 1))


def test_by_version_picks_the_value_in_force():
    status = ByVersion({(2, 1): 200, (2, 2): 201})
    assert (status.at((2, 1)), status.at((2, 2)), status.at((2, 90))) == (200, 201, 201)
