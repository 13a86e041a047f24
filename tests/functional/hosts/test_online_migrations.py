"""db online_data_migrations fills Instance.compute_id and ComputeNode.service_id (Nova's codes)."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.utils import timezone

from cells.context import target_cell
from servers.models import Instance
from tests.factories import ComputeNodeFactory, InstanceFactory, ServiceFactory

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def run(*args: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("db", "online_data_migrations", *args, stdout=out, stderr=err)
        return 0, out.getvalue()
    except SystemExit as exc:
        return int(exc.code or 0), out.getvalue() + err.getvalue()


def test_compute_ids_filled_in_batches_deleted_rows_included(cells: dict) -> None:
    service = ServiceFactory(cell=cells["cell1"], host="h1")
    node = ComputeNodeFactory(cell=cells["cell1"], host="h1", hypervisor_hostname="h1", service=service)
    made = []
    for n in range(5):
        inst = InstanceFactory(cell=cells["cell1"], host="h1", node=None)
        with target_cell(cells["cell1"]):
            Instance.all_objects.filter(pk=inst.pk).update(node="h1", deleted=(n == 0),
                                                            deleted_at=timezone.now() if n == 0 else None)
        made.append(inst.pk)
    assert run("--max-count", "3")[0] == 1
    code, out = run("--max-count", "3")
    assert code == 0 and "2 migrated" in out
    with target_cell(cells["cell1"]):
        assert set(Instance.all_objects.filter(pk__in=made).values_list("compute_id", flat=True)) == {node.id}


def test_missing_node_is_an_error_and_bad_count_127(cells: dict) -> None:
    inst = InstanceFactory(cell=cells["cell2"], host="gone", node=None)
    with target_cell(cells["cell2"]):
        Instance.all_objects.filter(pk=inst.pk).update(node="gone")
    assert run()[0] == 2
    assert run("--max-count", "0")[0] == 127
    assert run("--max-count", "x")[0] == 127
