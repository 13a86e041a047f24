"""A compute host's build hands its notifications to the conductor together: two casts
(``conductor.record_notifications``) with the six envelopes of a build, in the order they were
emitted (the four up to the spawn before the guest is spawned, the last two at the end), instead of
one cast each (``cloudcore.core.notifications.handed_off_together``; issue 23
item 2: each cast cost the host a Celery message and the conductor a task). The conductor keeps and
publishes every one of them, unchanged and in that order, as it kept and published each alone; a
failed build's notifications reach it before the build goes back to it (the reschedule)."""
from __future__ import annotations

from typing import Any

import pytest

from cloudcore.core import notifications
from cloudcore.core.models import NotificationRecord
from conductor import rpc as conductor_rpc
from tests.cloud import Cloud
from tests.notifications import published_notifications

pytestmark = pytest.mark.django_db(databases="__all__")

BUILD = ["instance.create.start", *["instance.update"] * 4, "instance.create.end"]


@pytest.fixture
def casts(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The conductor's notification casts, as sent (then delivered for real)."""
    sent: dict[str, list[Any]] = {"one": [], "together": []}
    one, together = conductor_rpc.record_notification, conductor_rpc.record_notifications

    def record_one(*, message: dict[str, Any]) -> None:
        sent["one"].append(message)
        one(message=message)

    def record_together(*, messages: list[dict[str, Any]]) -> None:
        sent["together"].append(list(messages))
        together(messages=messages)

    monkeypatch.setattr(conductor_rpc, "record_notification", record_one)
    monkeypatch.setattr(conductor_rpc, "record_notifications", record_together)
    return sent


def _of(server_id: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["payload"]["nova_object.data"].get("uuid") == server_id]


def _spying(spawn: Any, casts: dict[str, list[Any]], seen: list[list[str]]) -> Any:
    """``spawn`` that first notes the event types of the notification casts sent so far."""
    def spied(**kwargs: Any) -> Any:
        seen.extend([m["event_type"] for m in batch] for batch in casts["together"])
        return spawn(**kwargs)
    return spied


def test_a_build_inside_an_agent_sends_its_six_notifications_in_two_casts_and_each_is_delivered(
        cloud: Cloud, settings: Any, casts: dict[str, list[Any]], monkeypatch: pytest.MonkeyPatch) -> None:
    # given the compute hosts run as their cells' agents, and the notifications published for
    # real on an in-memory broker that a consumer of versioned_notifications.info reads
    settings.COMPUTE_ISOLATION = True
    cast_before_spawn: list[list[str]] = []
    for host in cloud.hosts:
        driver = cloud.driver(host)
        monkeypatch.setattr(driver, "spawn", _spying(driver.spawn, casts, cast_before_spawn))
    with published_notifications(settings, "test-notifications-together") as received:
        # when a server is built
        sid = cloud.create_server(cloud.member(), "together")["id"]
    # then its host cast its six notifications to the conductor in two messages, in Nova's order,
    # and none alone: those up to the spawn before the guest was spawned (they say the build
    # started), the last two when it was done
    before, after = [_of(sid, batch) for batch in casts["together"] if _of(sid, batch)]
    assert cast_before_spawn == [BUILD[:4]]
    sent = before + after
    assert [m["event_type"] for m in before] == BUILD[:4] and [m["event_type"] for m in after] == BUILD[4:]
    assert _of(sid, casts["one"]) == []
    states = [m["payload"]["nova_object.data"]["state_update"]["new_task_state"] for m in sent[1:5]]
    assert states == ["networking", "block_device_mapping", "spawning", None]
    # and the conductor kept every one of them, unchanged and in that order
    ids = [m["message_id"] for m in sent]
    records = NotificationRecord.objects.filter(payload__message_id__in=ids).order_by("id")
    assert [r.payload for r in records] == sent
    assert [(r.event_type, r.priority, r.publisher_id) for r in records] == [
        (m["event_type"], m["priority"], m["publisher_id"]) for m in sent]
    # and published every one of them, unchanged and in that order
    assert [m for m in received if m["message_id"] in ids] == sent


def test_a_failed_builds_notifications_reach_the_conductor_before_its_reschedule(
        cloud: Cloud, settings: Any, casts: dict[str, list[Any]]) -> None:
    # given the compute hosts run as their cells' agents, and the next spawn of both hosts of az1 fails
    settings.COMPUTE_ISOLATION = True
    for host in ("compute1", "compute2"):
        cloud.driver(host).fail_spawns = 1
    # when a server is built there (its build fails on one host, goes back to the conductor, which
    # casts it to the other, where it fails again)
    client = cloud.member()
    sid = cloud.create_server(client, "retried", availability_zone="az1")["id"]
    cloud.wait_for_status(client, sid, "ERROR")
    # then each attempt cast its notifications up to its spawn together, from its own host
    first, second = [_of(sid, batch) for batch in casts["together"] if _of(sid, batch)]
    assert [m["event_type"] for m in first] == [m["event_type"] for m in second] == BUILD[:4]
    assert {m["publisher_id"] for m in first} != {m["publisher_id"] for m in second}
    # and the conductor kept them in that order, the first attempt's before the build went back to
    # it, then its own instance.create.error
    kept = [(r["message_id"], r["event_type"]) for r in _of(sid, cloud.notifications())]
    hosts = [(m["message_id"], m["event_type"]) for m in first + second]
    assert [k for k in kept if k in hosts] == hosts
    assert kept.index(hosts[-1]) < [event_type for _, event_type in kept].index("instance.create.error")


def test_outside_an_agent_the_held_notifications_are_kept_in_place_in_their_order(
        casts: dict[str, list[Any]]) -> None:
    # given no compute agent (the API side), when notifications are emitted together, one in a
    # block inside the first
    with notifications.handed_off_together():
        first = notifications.notify("flavor.test.first", {"uuid": "u-1"})
        with notifications.handed_off_together():
            second = notifications.notify("flavor.test.second", {"uuid": "u-1"})
        # then nothing is kept before the outermost block ends
        assert not NotificationRecord.objects.filter(event_type__startswith="flavor.test.").exists()
    # then the conductor got no cast, and both were kept where they were emitted, in their order
    assert casts == {"one": [], "together": []}
    assert first is not None and second is not None
    records = NotificationRecord.objects.filter(event_type__startswith="flavor.test.").order_by("id")
    assert [r.payload for r in records] == [first, second]


def test_a_block_that_raises_still_hands_off_what_it_held(casts: dict[str, list[Any]]) -> None:
    # when a notification is emitted in a block that then fails
    with pytest.raises(RuntimeError), notifications.handed_off_together():
        notifications.notify("flavor.test.failed", {"uuid": "u-2"})
        raise RuntimeError("the build failed")
    # then it was kept all the same
    assert NotificationRecord.objects.filter(event_type="flavor.test.failed").count() == 1
