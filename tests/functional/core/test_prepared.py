"""A hot query's SQL built once per process (``cloudcore.core.prepared``) gives the ORM's rows for
every argument, and a query whose arguments Django transforms is left to the ORM."""
from __future__ import annotations

from typing import Any

import pytest
from django.db.models import QuerySet

from cloudcore.core import prepared
from servers.models import QuotaLimit

pytestmark = pytest.mark.django_db


def _limits(project_id: str) -> QuerySet[Any]:
    return QuotaLimit.objects.filter(project_id=project_id).values_list("resource", "hard_limit").order_by("resource")


def test_each_call_gets_its_own_arguments_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    # given limits of two projects and nothing prepared yet
    monkeypatch.setattr(prepared, "_statements", {})
    QuotaLimit.objects.create(project_id="p1", resource="instances", hard_limit=7)
    QuotaLimit.objects.create(project_id="p1", resource="cores", hard_limit=3)
    QuotaLimit.objects.create(project_id="p2", resource="instances", hard_limit=1)
    # when both are read through one prepared statement
    rows = {project: prepared.prepared_rows("test.limits", _limits, (project,)) for project in ("p1", "p2", "p3")}
    # then each has the ORM's rows, and the SQL was built once
    assert rows == {project: list(_limits(project)) for project in ("p1", "p2", "p3")}
    assert rows["p1"] == [("cores", 3), ("instances", 7)] and rows["p3"] == []
    assert prepared._statements["test.limits"] is not None


def test_an_argument_the_orm_transforms_is_not_prepared(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a query whose argument becomes something else on its way to the database (an int)
    monkeypatch.setattr(prepared, "_statements", {})
    QuotaLimit.objects.create(project_id="p1", resource="instances", hard_limit=7)

    def over(limit: str) -> QuerySet[Any]:
        return QuotaLimit.objects.filter(hard_limit__gt=int(limit) if limit.isdigit() else 0).values_list("resource")

    # when it is read, then the ORM answers each time
    assert prepared.prepared_rows("test.over", over, ("5",)) == [("instances",)]
    assert prepared.prepared_rows("test.over", over, ("9",)) == []
    assert prepared._statements["test.over"] is None
