"""Quota limits are read once per request, remembered by the process while their stamp stands
(``cloudcore.core.stamps``), and a request that changes them reads them again."""
from __future__ import annotations

from typing import Any

import pytest

from cloudcore.core import scope, stamps
from cloudcore.core.context import RequestContext
from servers.services import quotas

pytestmark = pytest.mark.django_db


def test_limits_are_read_once_per_request_and_again_after_a_change(django_assert_num_queries: Any) -> None:
    admin = RequestContext.system()
    stamps.bump(quotas.QUOTAS_STAMP)  # (a cloud whose quota rows were written before)
    with scope.request_scope():
        with django_assert_num_queries(2):  # the change stamps; the default class's rows and the project's, one UNION
            first = quotas.quota_limits("p1")
            assert quotas.quota_limits("p1") == first
    with scope.request_scope():
        with django_assert_num_queries(1):  # the change stamps: the rows remembered by the process
            assert quotas.quota_limits("p1") == first
        quotas.quota_set_update(actor=admin, project_id="p1", limits={"instances": 3}, force=True)
        assert quotas.quota_limits("p1")["instances"] == 3
        quotas.quota_class_update(actor=admin, class_name="default", limits={"cores": 7})
        assert quotas.quota_limits("p1")["cores"] == 7
        quotas.quota_set_delete(actor=admin, project_id="p1")
        assert quotas.quota_limits("p1")["instances"] == first["instances"]
