"""The scheduler benchmark's building blocks on the test databases (keeps ``make bench`` from
rotting): population, and SQL statements per request that do not grow with the providers."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from bench.env import count_queries
from bench.scenarios import scheduler as scenario
from scheduling.models import ResourceProvider
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_statements_per_request_do_not_grow_with_providers(cells):
    env = SimpleNamespace(cells=cells)
    small = scenario.populate(env, 10) or scenario.measure(env, 10, requests=3)
    assert ResourceProvider.objects.count() == 10
    large = scenario.populate(env, 60) or scenario.measure(env, 60, requests=3)
    assert ResourceProvider.objects.count() == 60
    assert large["queries_max"] <= small["queries_max"] < 40


def test_count_queries_counts_every_connection(cells):
    from cells.context import target_cell
    from hosts.models import Service

    with count_queries() as counter:
        ResourceProvider.objects.count()
        with target_cell(cells["cell1"]):
            Service.objects.count()
    assert counter.by_alias == {"default": 1, "cell1": 1}


def test_where_the_time_goes_times_each_step_and_puts_them_back(cells):
    import scheduling.scheduler as scheduler_module
    from scheduling.placement import services as placement

    env = SimpleNamespace(cells=cells)
    scenario.populate(env, 10)
    before = (scheduler_module.filter_hosts, placement.allocation_candidates)
    phases = scenario.where_the_time_goes(requests=2)
    steps = {p["step"]: p["ms"] for p in phases}
    assert len(steps) == len(scenario.PHASES) + 2
    assert steps["total"] > 0 and steps["filters"] > 0 and steps["claim in placement"] > 0
    assert (scheduler_module.filter_hosts, placement.allocation_candidates) == before


def test_the_trace_scenario_times_its_parts(cells):
    from bench.scenarios import scheduling_trace as trace_scenario
    from scheduling.models import SchedulingTraceBody, SchedulingTraceRecord

    env = SimpleNamespace(cells=cells)
    scenario.populate(env, 10)
    placed = trace_scenario._row(10, "placed", trace_scenario._measured(requests=2, replays=3))
    failed = trace_scenario._row(10, "no valid host", trace_scenario._measured(
        trace_scenario._impossible_spec(), requests=2, replays=3))
    parts = {p["step"]: p["ms"] for p in placed["parts"]}
    # the trace rows are made in the request and written with the notifications when it ends: their
    # part of that transaction is counted, and their INSERT alone shown (not counted again)
    (insert,) = [ms for step, ms in parts.items() if step.startswith("  (the scope's transaction")]
    assert parts["trace: record rows made (written at the scope's end)"] > 0
    assert parts[trace_scenario.RECORD] > 0 and insert > 0
    assert parts["trace: weights of the best hosts"] > 0
    shortfall = "trace: shortfall over every provider (no valid host only)"
    assert parts[shortfall] == 0
    assert {p["step"]: p["ms"] for p in failed["parts"]}[shortfall] > 0
    assert 0 < placed["share_pct"] < 100 and placed["trace_ms"] < placed["total_ms"]
    assert placed["trace_ms"] == pytest.approx(sum(ms for step, ms in parts.items() if step.startswith("trace:")))
    # 2 requests each, then 3 replays of the last one's trace rows
    assert SchedulingTraceRecord.objects.count() == 2 * (2 + 3)
    # a body per placed request (it names the server), and per replay of one (as the request
    # wrote it); one for the same failure asked twice, found by its replays
    assert SchedulingTraceBody.objects.count() == (2 + 3) + 1
    assert "a new body each" in next(p["step"] for p in placed["parts"] if p["step"].startswith("  ("))
    assert "the body stored already" in next(p["step"] for p in failed["parts"] if p["step"].startswith("  ("))


def test_the_trace_record_is_all_the_trace_transaction_with_notifications_off(cells, settings):
    from bench.scenarios import scheduling_trace as trace_scenario

    scenario.populate(SimpleNamespace(cells=cells), 10)
    settings.NOTIFICATIONS_ENABLED = True
    with trace_scenario._scope_writes() as writes:
        scenario.where_the_time_goes(1, trace_scenario.PARTS, trace_scenario._impossible_spec())
    shared, _insert = trace_scenario._record_cost(writes.last, replays=3)
    settings.NOTIFICATIONS_ENABLED = False
    with trace_scenario._scope_writes() as writes:
        scenario.where_the_time_goes(1, trace_scenario.PARTS, trace_scenario._impossible_spec())
    # the scope's transaction held the trace rows alone (its body, stored already, and its
    # record): all of it is the trace's
    assert [(model.__name__, len(rows)) for model, rows in writes.last[0][1]] == [("SchedulingTraceBody", 1),
                                                                                  ("SchedulingTraceRecord", 1)]
    alone, insert = trace_scenario._record_cost(writes.last, replays=3)
    assert alone == 1.0 and insert > 0 and writes.seconds > 0
    # with the start notification in it, a part of it
    assert 0 < shared <= 1.0



def test_the_trace_cost_sees_the_group_commit_of_the_scope(cells):
    # given the rows a scope hands to the group commit (the path outside a transaction: a
    # scheduler in a worker, the bench's requests)
    from bench.scenarios import scheduling_trace as trace_scenario
    from cloudcore.core import scope
    from scheduling.models import SchedulingTraceBody, SchedulingTraceRecord

    body = SchedulingTraceBody(digest="d" * 32, body="{}")
    record = SchedulingTraceRecord(instance_uuid="u", request_id="r", result="no_valid_host", message="",
                                   body_digest="d" * 32)
    batch = [scope._Pending([(SchedulingTraceBody, [body]), (SchedulingTraceRecord, [record])],
                            {SchedulingTraceBody: True, SchedulingTraceRecord: False})]
    # when the bench watches the scope's writes while the group commit writes them
    with trace_scenario._scope_writes() as writes:
        assert scope._write_batch("default", batch)
    # then it saw that transaction, its rows and how each model is written, and timed it
    database, groups, plain = writes.last[0]
    assert database == "default" and writes.seconds > 0
    assert [(model, rows) for model, rows in groups] == [(SchedulingTraceBody, [body]),
                                                         (SchedulingTraceRecord, [record])]
    assert plain == {SchedulingTraceBody: True, SchedulingTraceRecord: False}
    assert SchedulingTraceRecord.objects.filter(body_digest="d" * 32).count() == 1

def test_sql_by_step_names_the_step_on_the_stack(cells):
    from bench.env import sql_by_step
    from identity.auth import TokenAuthentication
    from identity.services import token_cache
    from identity.services.tokens import token_issue
    from tests.apihelpers import make_identity

    user, project = make_identity("bench-steps")
    token = token_issue(user=user, project=project).value
    token_cache.clear()
    with sql_by_step() as steps:
        ResourceProvider.objects.count()  # a test's own query: no step of a boot
        TokenAuthentication().authenticate(SimpleNamespace(META={"HTTP_X_AUTH_TOKEN": token}))
    assert steps == {"other": 1, "token validation": 4}  # the token, then its roles (three)
