"""A task message's printable copy of its arguments (``argsrepr``/``kwargsrepr``: task events, log
lines) names the keyword arguments without their values (``cloudcore.celery``): no token or admin
password in the headers, and no repr of the context built per cast. The arguments themselves
travel whole."""
from __future__ import annotations

from cloudcore.celery import app


def test_a_cast_s_headers_name_its_arguments_without_their_values() -> None:
    # given a cast's arguments: a context with a token and an admin password
    kwargs = {"ctx": {"auth_token": "secret-token", "roles": ["member"]}, "instance_uuids": ["u1"],
              "admin_pass": "secret-pass"}
    # when Celery builds its message
    message = app.amqp.as_task_v2("task-id", "conductor.schedule_and_build_instances", (), kwargs)
    # then the headers name the arguments only, and the body carries them as given
    headers = message.headers
    assert headers["argsrepr"] == "()"
    assert headers["kwargsrepr"] == "{'ctx': ..., 'instance_uuids': ..., 'admin_pass': ...}"
    assert "secret" not in repr(headers)
    args, body_kwargs, _embed = message.body
    assert list(args) == [] and body_kwargs == kwargs


def test_positional_arguments_are_counted_and_a_given_repr_is_kept() -> None:
    # when a message with positional arguments is built, and one with its own reprs
    counted = app.amqp.as_task_v2("t1", "servers.periodic", ("a", "b"), None)
    given = app.amqp.as_task_v2("t2", "servers.periodic", ("a",), {"k": 1}, argsrepr="('a',)", kwargsrepr="{'k': 1}")
    none = app.amqp.as_task_v2("t3", "servers.periodic", (), {"ctx": {"auth_token": "secret"}},
                               argsrepr=None, kwargsrepr=None)
    # then the first says how many there were, the second keeps what its caller gave, and a None
    # passed by name is the same as none passed
    assert (counted.headers["argsrepr"], counted.headers["kwargsrepr"]) == ("<2 positional>", "{}")
    assert (none.headers["argsrepr"], none.headers["kwargsrepr"]) == ("()", "{'ctx': ...}")
    assert (given.headers["argsrepr"], given.headers["kwargsrepr"]) == ("('a',)", "{'k': 1}")
