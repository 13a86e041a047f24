"""A hot query's SQL built once per process (``cloudcore.core.prepared``) gives the ORM's rows (or
model instances) for every argument, and a query whose arguments Django transforms, or whose rows
hold more than one model, is left to the ORM."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connections
from django.db.models import F, QuerySet

from cells.models import CellMapping, InstanceMapping
from cloudcore.core import prepared
from images.models import Image
from servers.models import Flavor, FlavorExtraSpec, QuotaLimit

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


def _fields(obj: Any, *annotations: str) -> dict[str, Any]:
    values = {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}
    return {**values, **{name: getattr(obj, name) for name in annotations}, "_db": obj._state.db,
            "_adding": obj._state.adding}


def _image(image_id: str) -> QuerySet[Any]:
    return Image.objects.filter(id=image_id)


def test_prepared_objects_are_the_orms_instances(monkeypatch: pytest.MonkeyPatch) -> None:
    # given images with converted columns (JSON, booleans, a date) and nothing prepared yet
    monkeypatch.setattr(prepared, "_object_statements", {})
    first = Image.objects.create(name="a", status="active", visibility="public", protected=True,
                                 properties={"hw_disk_bus": "virtio", "n": 3}, tags=["x"])
    second = Image.objects.create(name="b", status="queued", properties={})
    # when each is read through one prepared statement (and an id nobody has)
    found = {i: prepared.prepared_objects("test.image", _image, (i,)) for i in (first.id, second.id, "nobody")}
    # then each is the ORM's instance, field by field (converted values included), and the
    # statement was prepared
    assert found["nobody"] == []
    for image in (first, second):
        [obj] = found[image.id]
        assert type(obj) is Image
        assert _fields(obj) == _fields(Image.objects.get(id=image.id))
    assert found[first.id][0].properties == {"hw_disk_bus": "virtio", "n": 3}
    assert found[first.id][0].protected is True
    assert prepared._object_statements["test.image"] is not None


def _flavor_specs(flavorid: str) -> QuerySet[Any]:
    return Flavor.objects.filter(flavorid=flavorid).annotate(
        spec_key=F("extra_specs__key"), spec_value=F("extra_specs__value")).order_by("extra_specs__id")


def test_prepared_objects_carry_annotations_of_a_join(monkeypatch: pytest.MonkeyPatch) -> None:
    # given a flavor with two extra specs and one without
    monkeypatch.setattr(prepared, "_object_statements", {})
    flavor = Flavor.objects.create(flavorid="f1", name="f1", vcpus=2, memory_mb=64, root_gb=1)
    FlavorExtraSpec.objects.create(flavor=flavor, key="hw:cpu_policy", value="dedicated")
    FlavorExtraSpec.objects.create(flavor=flavor, key="quota:disk_read_bytes_sec", value="10")
    Flavor.objects.create(flavorid="f2", name="f2", vcpus=1, memory_mb=32, root_gb=1)
    # when both are read through one prepared statement
    rows = {ref: prepared.prepared_objects("test.flavor", _flavor_specs, (ref,)) for ref in ("f1", "f2")}
    # then a row per spec (a row with no spec for the other), as the ORM gives them
    for ref in ("f1", "f2"):
        assert [_fields(r, "spec_key", "spec_value") for r in rows[ref]] == [
            _fields(r, "spec_key", "spec_value") for r in _flavor_specs(ref)]
    assert [(r.spec_key, r.spec_value) for r in rows["f1"]] == [("hw:cpu_policy", "dedicated"),
                                                                ("quota:disk_read_bytes_sec", "10")]
    assert [(r.flavorid, r.spec_key) for r in rows["f2"]] == [("f2", None)]


def test_objects_read_with_their_related_ones_are_the_orms(monkeypatch: pytest.MonkeyPatch) -> None:
    # given rows with a related row (select_related, an inner join), servers' mappings with a cell
    # and without one (a nullable key: an outer join), and nothing prepared yet
    monkeypatch.setattr(prepared, "_object_statements", {})
    flavor = Flavor.objects.create(flavorid="f1", name="f1", vcpus=2, memory_mb=64, root_gb=1)
    FlavorExtraSpec.objects.create(flavor=flavor, key="k", value="v")
    cell = CellMapping.objects.create(name="c1", database_connection="sqlite:///c1")
    InstanceMapping.objects.create(instance_uuid="u1", cell=cell, project_id="p")
    InstanceMapping.objects.create(instance_uuid="u2", cell=None, project_id="p")

    def joined(key: str) -> QuerySet[Any]:
        return FlavorExtraSpec.objects.filter(key=key).select_related("flavor")

    def mapping(uuid: str) -> QuerySet[Any]:
        return InstanceMapping.objects.filter(instance_uuid=uuid).select_related("cell")

    def values(key: str) -> QuerySet[Any]:
        return FlavorExtraSpec.objects.filter(key=key).values("value")

    # when they are read through prepared statements
    [spec] = prepared.prepared_objects("test.joined", joined, ("k",))
    with_cell, without = (prepared.prepared_objects("test.mapping", mapping, (u,))[0] for u in ("u1", "u2"))
    # then the related instances came with the rows, as the ORM's (no statement to reach them)
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(record):
        assert _fields(spec.flavor) == _fields(Flavor.objects.get(id=flavor.id))
        assert _fields(with_cell.cell) == _fields(CellMapping.objects.get(id=cell.id))
        assert without.cell is None
    assert len(statements) == 2  # the two reads of the ORM's instances above
    assert _fields(spec) == _fields(joined("k")[0]) and _fields(with_cell) == _fields(mapping("u1")[0])
    # and both statements were prepared; a query of values is left to the ORM
    assert prepared.prepared_objects("test.values", values, ("k",)) == [{"value": "v"}]
    assert prepared._object_statements["test.joined"] is not None
    assert prepared._object_statements["test.mapping"] is not None
    assert prepared._object_statements["test.values"] is None


def test_raw_rows_become_the_orms_instances_when_asked() -> None:
    # given images, one made at a whole second (SQLite's text of it has no fraction)
    first = Image.objects.create(name="a", status="active", properties={"n": 3}, protected=True)
    second = Image.objects.create(name="b", status="queued", properties={})
    Image.objects.filter(id=second.id).update(created_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    queryset = Image.objects.only("id", "name", "created_at", "properties", "protected").order_by("name")
    # when the rows of a query of some columns are read as the database gives them
    rows = prepared.RawRows(queryset)
    raw = rows.rows()
    # then each becomes, when asked, the ORM's instance (the other columns deferred alike), and a
    # column's value is the ORM's
    orm = list(queryset)
    made = [rows.instance(row) for row in raw]
    assert [type(obj) for obj in made] == [Image, Image]
    assert [{k: v for k, v in obj.__dict__.items() if k != "_state"} for obj in made] == [
        {k: v for k, v in obj.__dict__.items() if k != "_state"} for obj in orm]
    assert [obj._state.db for obj in made] == [obj._state.db for obj in orm]
    assert [rows.value(row, "created_at") for row in raw] == [obj.created_at for obj in orm]
    assert [rows.value(row, "id") for row in raw] == [first.id, second.id]
    assert repr(made[1].created_at) == repr(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC))
    assert made[0].properties == {"n": 3} and made[0].protected is True
    assert [rows.value(row, "protected") for row in raw] == [True, False]
    # and a query no row can meet (an empty IN list) reads nothing
    assert prepared.RawRows(Image.objects.filter(id__in=[])).rows() == []


def test_raw_rows_with_shared_json_read_each_json_text_once() -> None:
    # given images of which two store the same JSON text and a third another one
    for name, properties in (("a", {"os": "linux", "n": [1, 2]}), ("b", {"os": "linux", "n": [1, 2]}),
                             ("c", {"os": "bsd"})):
        Image.objects.create(name=name, status="active", properties=properties)
    queryset = Image.objects.only("id", "name", "properties").order_by("name")
    # when their rows are made instances with the JSON values shared, and without
    shared_rows = prepared.RawRows(queryset, shared_json=True)
    shared = [shared_rows.instance(row) for row in shared_rows.rows()]
    plain_rows = prepared.RawRows(queryset)
    plain = [plain_rows.instance(row) for row in plain_rows.rows()]
    # then the values are the ORM's either way
    orm = [image.properties for image in queryset]
    assert [image.properties for image in shared] == [image.properties for image in plain] == orm
    assert orm == [{"os": "linux", "n": [1, 2]}, {"os": "linux", "n": [1, 2]}, {"os": "bsd"}]
    # and the equal texts were read once (one object), where each row has its own otherwise
    assert shared[0].properties is shared[1].properties and shared[1].properties is not shared[2].properties
    assert plain[0].properties is not plain[1].properties


def test_raw_rows_on_sqlite_read_the_module_converted_columns_as_stored() -> None:
    # given an image, and its columns the sqlite3 module converts itself (a datetime, a boolean)
    Image.objects.create(name="a", status="active", protected=True)
    queryset = Image.objects.only("id", "name", "created_at", "protected")
    rows = prepared.RawRows(queryset)
    if connections[rows.database].vendor != "sqlite":
        pytest.skip("the declared types read by the sqlite3 module are SQLite's")
    # when its rows are read as the database gives them
    raw = rows.rows()
    # then those columns come as SQLite stores them (no declared type: read as +column), the others
    # as they are, and Django's converters alone make them the ORM's values
    assert '+"images_image"."created_at"' in rows.reader.sql and '+"images_image"."protected"' in rows.reader.sql
    assert '+"images_image"."name"' not in rows.reader.sql
    positions = {name: position for position, name in enumerate(rows.reader.attnames)}
    assert isinstance(raw[0][positions["created_at"]], str) and raw[0][positions["protected"]] == 1
    orm = queryset.get()
    assert rows.value(raw[0], "created_at") == orm.created_at and rows.value(raw[0], "protected") is True


def test_sqlite_datetime_texts_read_as_djangos_converter_reads_them() -> None:
    # given SQLite's converter of a datetime column and the one-call reading in its place
    connection = connections["default"]
    if connection.vendor != "sqlite":
        pytest.skip("the converter replaced is SQLite's")
    django_reads = connection.ops.convert_datetimefield_value
    faster = prepared._faster(django_reads, connection)
    assert faster is not django_reads
    # when values as SQLite's decoding gives them (naive datetimes) and texts as SQLite holds them
    # (and some it may hold otherwise) are read, then each reads as Django reads it, zone included
    for value in ("2026-11-25 10:45:26", "2026-11-25 10:45:26.000001", "2026-11-25 10:45:26.5",
                  "2026-11-25T10:45:26.123456", "2026-11-25 10:45:26+02:00", "2026-11-25 10:45:26.5+00:00",
                  "2026-11-25", "0001-01-01 00:00:00", None, datetime(2026, 1, 1, tzinfo=UTC),
                  datetime(2026, 11, 25, 10, 45, 26), datetime(2026, 11, 25, 10, 45, 26, 123456),
                  datetime(2026, 11, 25, 10, 45, 26, 5, fold=1), datetime(1, 1, 1)):
        read, django_read = faster(value, None, connection), django_reads(value, None, connection)
        assert repr(read) == repr(django_read), value
        assert getattr(read, "fold", None) == getattr(django_read, "fold", None), value


def _limit_of(project_id: str, resource: str) -> QuerySet[Any]:
    return QuotaLimit.objects.filter(project_id=project_id, resource=resource)


def test_a_prepared_update_writes_what_the_orms_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    # given limits of two projects and no update prepared yet
    monkeypatch.setattr(prepared, "_update_statements", {})
    QuotaLimit.objects.create(project_id="p1", resource="instances", hard_limit=7)
    QuotaLimit.objects.create(project_id="p2", resource="instances", hard_limit=1)
    # when each project's limit is updated through one prepared statement
    counts = [prepared.prepared_update("test.limit", _limit_of, (project, "instances"), hard_limit=limit)
              for project, limit in (("p1", 70), ("p2", 10), ("p3", 5))]
    # then each row has its own value, the counts are the ORM's, and the SQL was built once
    assert counts == [1, 1, 0]
    assert dict(QuotaLimit.objects.values_list("project_id", "hard_limit")) == {"p1": 70, "p2": 10}
    assert list(prepared._update_statements) == [("test.limit", ("hard_limit",), ())]


def test_a_prepared_update_of_none_and_of_an_expression(monkeypatch: pytest.MonkeyPatch) -> None:
    # given an image with a name
    monkeypatch.setattr(prepared, "_update_statements", {})
    image = Image.objects.create(name="named", status="active", visibility="public", owner="admin")

    def the_image(image_id: str) -> QuerySet[Any]:
        return Image.objects.filter(id=image_id)

    # when its name is set to None (NULL in the SQL: a statement of its own), then back, then to an
    # expression (the ORM's to write)
    assert prepared.prepared_update("test.image", the_image, (str(image.id),), name=None) == 1
    assert Image.objects.get(id=image.id).name is None
    assert prepared.prepared_update("test.image", the_image, (str(image.id),), name="again") == 1
    assert Image.objects.get(id=image.id).name == "again"
    assert prepared.prepared_update("test.image", the_image, (str(image.id),), name=F("owner")) == 1
    # then each wrote what the ORM writes, the expression's left to the ORM
    assert Image.objects.get(id=image.id).name == "admin"
    assert prepared._update_statements[("test.image", ("name",), ("name",))] is not None
    assert prepared._update_statements[("test.image", ("name",), ())] is not None


def test_a_prepared_update_of_a_foreign_key_by_its_attname(monkeypatch: pytest.MonkeyPatch) -> None:
    # given an extra spec of one flavor (a foreign key set by its attname, as callers of the
    # task-state claim set ``compute_id``)
    monkeypatch.setattr(prepared, "_update_statements", {})
    small, large = (Flavor.objects.create(flavorid=name, name=name, vcpus=1, memory_mb=64, root_gb=1)
                    for name in ("small", "large"))
    FlavorExtraSpec.objects.create(flavor=small, key="hw:cpu_policy", value="dedicated")

    def spec(key: str) -> QuerySet[Any]:
        return FlavorExtraSpec.objects.filter(key=key)

    # when it is moved to the other flavor twice through one prepared statement
    assert prepared.prepared_update("test.spec", spec, ("hw:cpu_policy",), flavor_id=large.id, value="shared") == 1
    assert FlavorExtraSpec.objects.get().flavor_id == large.id
    assert prepared.prepared_update("test.spec", spec, ("hw:cpu_policy",), flavor_id=small.id, value="mixed") == 1
    # then it has the flavor and value of the last call
    assert list(FlavorExtraSpec.objects.values_list("flavor_id", "value")) == [(small.id, "mixed")]
    assert prepared._update_statements[("test.spec", ("flavor_id", "value"), ())] is not None
