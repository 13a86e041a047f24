"""Regressions for the 5xx answers the schemathesis run (test_schemathesis.py) found."""
from __future__ import annotations

from typing import Any

import pytest

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


def test_downloading_an_active_image_whose_data_is_missing_is_a_404(cloud: Any) -> None:
    # given the active ``tiny`` image, whose data file is not in the store
    admin = cloud.admin()
    # when its data is downloaded
    response = cloud.get(admin, f"/image/v2/images/{cloud.image_id}/file")
    # then the answer is a 404 (it was a 500: FileNotFoundError in the view)
    assert response.status_code == 404, response.content[:300]


@pytest.mark.parametrize("value", [[None], [{}], "x", 1])
def test_lock_before_273_ignores_a_body_that_is_not_an_object(cloud: Any, value: Any) -> None:
    # given an active server
    client = cloud.member()
    server = cloud.create_server(client, "locked", networks="demo-net")
    # when it is locked at 2.1 with a value Nova does not look at before 2.73
    response = cloud.action(client, server["id"], {"lock": value}, version="2.1")
    # then the lock is taken (it was a 500: AttributeError on list.get)
    assert response.status_code == 202, response.content[:300]
    assert cloud.show(client, server["id"], version="2.9")["locked"] is True


def test_lock_at_273_rejects_a_body_that_is_not_an_object(cloud: Any) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "locked", networks="demo-net")
    response = cloud.action(client, server["id"], {"lock": [None]}, version="2.73")
    assert response.status_code == 400 and "badRequest" in response.json()
