"""A notification kept by the conductor (a compute host's, decoded from its cast) is encoded to
JSON once for its row and its message on the broker (``cloudcore.core.jsontext``): the row's
stored text and the message's body, content type and encoding are what each writer made of it
before, when each encoded it. A thread publishes its notifications through a producer of its own,
kept between them, and made again after a failed publish (a broker restarted)."""
from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from kombu import Connection, Exchange, Queue

from cloudcore.core import broker as embedded_broker
from cloudcore.core import notifications
from cloudcore.core.jsontext import EncodedJSON
from cloudcore.core.models import NotificationRecord

pytestmark = pytest.mark.django_db(transaction=True)


def _received(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as the conductor's task gets it: decoded from the cast's JSON."""
    return json.loads(json.dumps(message))  # type: ignore[no-any-return]


MESSAGE = _received(notifications.envelope(
    "instance.update", {"display_name": "s\u00e9rveur \u2603", "progress": 0.25, "hint": 2**70 + 1,
                        "locked": False, "task_state": None, "tags": ["a", {"b": [1, 2.5e-7]}]},
    publisher_id="nova-compute:host1", payload_name="InstanceUpdatePayload"))


class _Broker:
    """kombu's memory transport as the Celery app's broker, a queue bound to the notifications
    exchange; ``taken()``: the messages published since, as kombu delivers them."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.bind()

    def bind(self) -> None:
        self.exchange = Exchange(notifications.EXCHANGE, type="topic", durable=False)
        self.queue = Queue("test-notification-encoding", self.exchange, routing_key="versioned_notifications.*",
                           durable=False)
        self.queue(self.conn.default_channel).declare()

    def taken(self) -> list[Any]:
        simple = self.conn.SimpleQueue(self.queue)
        found = []
        while True:
            try:
                message = simple.get(block=False)
            except simple.Empty:
                break
            found.append(message)
            message.ack()
        simple.close()
        return found


def _broker_at(settings: Any, url: str) -> Iterator[_Broker]:
    """The Celery app's broker at ``url`` while the test runs, a queue bound on it."""
    from cloudcore.celery import app

    settings.NOTIFICATIONS_ENABLED, settings.NOTIFICATIONS_KEEP = True, 0
    settings.NOTIFICATIONS_PUBLISH_IN_TESTS = True
    old = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None
    try:
        with Connection(url) as conn:
            found = _Broker(conn)
            found.taken()  # the memory transport's queues are the process's: none left by another test
            yield found
    finally:
        app.conf.broker_url, app._pool, app.amqp._producer_pool = old


@pytest.fixture
def broker(settings: Any) -> Iterator[_Broker]:
    yield from _broker_at(settings, "memory://")


def _stored_text(message_id: str) -> str:
    """The row's payload column as the database holds it (SQLite: the text written)."""
    row = NotificationRecord.objects.get(payload__message_id=message_id)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT payload FROM {NotificationRecord._meta.db_table} WHERE id = %s",  # noqa: S608
                       [row.pk])
        (text,) = cursor.fetchone()
    return text if isinstance(text, str) else json.dumps(text)


def test_a_kept_notification_is_encoded_once(broker: _Broker, monkeypatch: pytest.MonkeyPatch) -> None:
    # given every JSON encoding counted
    encodings = []
    real = json.JSONEncoder.iterencode

    def counted(self: json.JSONEncoder, o: Any, _one_shot: bool = False) -> Any:
        encodings.append(o)
        return real(self, o, _one_shot)

    monkeypatch.setattr(json.JSONEncoder, "iterencode", counted)
    # when the conductor keeps a compute host's notification
    notifications.keep(dict(MESSAGE))
    # then it was encoded once, and still both stored and published
    assert len(encodings) == 1
    monkeypatch.setattr(json.JSONEncoder, "iterencode", real)
    assert NotificationRecord.objects.get(payload__message_id=MESSAGE["message_id"]).payload == MESSAGE
    assert [m.payload for m in broker.taken()] == [MESSAGE]


def test_its_row_and_message_are_the_bytes_each_writer_made_before(broker: _Broker) -> None:
    # given the message as kombu's json serializer publishes it, and its JSONField encoding
    from cloudcore.celery import app

    with app.producer_or_acquire() as producer:
        producer.publish(MESSAGE, exchange=broker.exchange, routing_key="versioned_notifications.info",
                         declare=[broker.exchange], serializer="json", retry=False)
    (before,) = broker.taken()
    # when the conductor keeps it
    notifications.keep(dict(MESSAGE))
    # then the published body, its content type and encoding are the same bytes
    (after,) = broker.taken()
    assert after.body == before.body
    assert (after.content_type, after.content_encoding) == (before.content_type, before.content_encoding)
    assert after.delivery_info["routing_key"] == "versioned_notifications.info"
    assert after.payload == MESSAGE
    # and the row holds what the JSONField writes of the dict (on PostgreSQL: the same jsonb)
    if connection.vendor == "sqlite":
        assert _stored_text(MESSAGE["message_id"]) == json.dumps(MESSAGE)
    else:
        assert json.loads(_stored_text(MESSAGE["message_id"])) == MESSAGE
    assert NotificationRecord.objects.get(payload__message_id=MESSAGE["message_id"]).payload == MESSAGE


def test_a_message_json_has_no_type_for_is_published_as_before(broker: _Broker) -> None:
    # given a notification emitted in-process holding a UUID object (kombu's encoder marks its type)
    server = uuid.uuid4()
    message = {**MESSAGE, "message_id": str(uuid.uuid4()), "payload": {"uuid": server}}
    # when it is kept
    notifications.keep(message)
    # then it is published as kombu's serializer makes it (read back as the UUID); the row, which
    # JSON refuses, is not stored
    (published,) = broker.taken()
    assert published.payload == message and b'"__type__": "uuid"' in published.body
    assert not NotificationRecord.objects.filter(payload__message_id=message["message_id"]).exists()


def test_an_encoded_object_saved_by_the_orm_is_its_dict() -> None:
    # given an encoded message saved through the ORM (not the plain INSERT)
    row = NotificationRecord.objects.create(event_type="x", priority="INFO", publisher_id="p",
                                            payload=EncodedJSON(MESSAGE, json.dumps(MESSAGE)))
    # then the dict is stored
    assert NotificationRecord.objects.get(pk=row.pk).payload == MESSAGE


def _kept(event_type: str) -> dict[str, Any]:
    message = {**MESSAGE, "message_id": str(uuid.uuid4()), "event_type": event_type}
    notifications.keep(message)
    return message


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A real redis-server (the embedded broker's); yields its URL and a function that restarts it
    (empty: it keeps nothing)."""
    socket = embedded_broker.embedded_socket_path(tmp_path)
    try:
        argv = embedded_broker.redis_server_argv(socket, tmp_path / "redis")
    except RuntimeError as exc:
        pytest.skip(str(exc))
    servers = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)]  # noqa: S603

    def restart() -> None:
        servers[-1].terminate()
        servers[-1].wait(timeout=10)
        socket.unlink(missing_ok=True)
        servers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT))  # noqa: S603
        assert embedded_broker.wait_ready(socket, timeout=20)

    try:
        assert embedded_broker.wait_ready(socket, timeout=20)
        yield embedded_broker.embedded_url(tmp_path), restart
    finally:
        servers[-1].terminate()
        servers[-1].wait(timeout=10)


def test_notifications_reach_redis_again_after_it_restarted(settings: Any, redis_server: tuple[str, Any]) -> None:
    # given notifications published to a real Redis through the thread's producer
    url, restart = redis_server
    for found in _broker_at(settings, url):
        first = _kept("instance.update.first")
        assert [m.payload for m in found.taken()] == [first]
        # when Redis restarts (empty: the consumer binds its queue again)
        restart()
        found.conn.close()
        found.conn = Connection(url)
        found.bind()
        _kept("instance.update.maybe-lost")  # the held connection may find out only now
        found.taken()
        last = _kept("instance.update.last")
        # then the next notifications are published again
        assert [m.payload for m in found.taken()] == [last]
