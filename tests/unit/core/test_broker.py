"""The embedded broker: a real redis-server on a unix socket under var/, and the requeue of the
messages a killed worker had taken (kombu's Redis transport keeps them in its ``unacked`` hash)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from cloudcore.core import broker


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    try:
        argv = broker.redis_server_argv(broker.embedded_socket_path(tmp_path), tmp_path / "redis")
    except RuntimeError as exc:
        pytest.skip(str(exc))
    server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        assert broker.wait_ready(broker.embedded_socket_path(tmp_path), timeout=20)
        yield broker.embedded_url(tmp_path)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_socket_path_is_under_var_or_short_when_var_is_deep(tmp_path: Path) -> None:
    assert broker.embedded_socket_path(tmp_path) == tmp_path / "redis.sock"
    deep = tmp_path / ("x" * 120)
    path = broker.embedded_socket_path(deep)
    assert len(str(path)) <= 100 and path == broker.embedded_socket_path(deep)  # stable: every process agrees


def _publish(url: str, queue: str, task: str) -> None:
    from kombu import Connection, Exchange, Queue

    with Connection(url) as conn:
        q = Queue(queue, Exchange(queue, "direct"), routing_key=queue)
        conn.Producer().publish({"args": []}, exchange=q.exchange, routing_key=queue, declare=[q],
                                headers={"task": task}, serializer="json")


def _take_and_die(url: str, queue: str) -> None:
    """A worker that takes one message without acknowledging it, then is killed with SIGKILL."""
    script = textwrap.dedent(f"""
        import os, signal
        from kombu import Connection, Exchange, Queue
        with Connection({url!r}) as conn:
            q = Queue({queue!r}, Exchange({queue!r}, "direct"), routing_key={queue!r})(conn.default_channel)
            assert q.get(no_ack=False) is not None
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert result.returncode == -9, result.stderr.decode()


def test_a_killed_workers_messages_go_back_on_its_queue_and_no_other(redis_url: str) -> None:
    import redis

    # given a conductor message and a compute message, each taken by a worker that was then killed
    _publish(redis_url, "conductor", "conductor.schedule_and_build_instances")
    _publish(redis_url, "compute.compute1", "compute.run_operation")
    _take_and_die(redis_url, "conductor")
    _take_and_die(redis_url, "compute.compute1")
    client = redis.Redis(unix_socket_path=redis_url.removeprefix("redis+socket://"))
    assert client.hlen("unacked") == 2 and client.llen("conductor") == 0
    # when the conductor's unacknowledged messages are requeued
    requeued = broker.requeue_unacked(redis_url, ["conductor"])
    # then the conductor's message is back on its queue, marked redelivered; the compute one is untouched
    assert requeued == ["conductor.schedule_and_build_instances"]
    assert client.llen("conductor") == 1 and client.hlen("unacked") == 1
    assert b'"redelivered": true' in client.lindex("conductor", 0)
    assert broker.requeue_unacked(redis_url, ["conductor"]) == []


def _run_cloud(tmp_path: Path, path_env: str) -> subprocess.CompletedProcess[str]:
    import os

    root = Path(__file__).resolve().parents[3]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLOUDCORE_", "DJANGO_"))}
    env.update({"PATH": path_env, "CLOUDCORE_VAR_DIR": str(tmp_path)})
    return subprocess.run([sys.executable, "manage.py", "run_cloud", "--bind", "127.0.0.1:1"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_run_cloud_without_redis_says_why_and_exits_non_zero(tmp_path: Path) -> None:
    # given a machine where redis-server is not on the PATH
    result = _run_cloud(tmp_path, str(Path(sys.executable).parent))
    # then make run stops at once, saying why, with a non-zero status and nothing left running
    assert result.returncode != 0
    assert "redis-server is not installed" in result.stderr, result.stderr
    assert not (tmp_path / "api.sqlite3").exists()  # it stopped before touching a database


def test_run_cloud_refuses_a_var_dir_whose_redis_already_answers(tmp_path: Path, redis_url: str) -> None:
    # given a cloud's Redis already answering on this var dir's socket (redis_url lives in tmp_path)
    import os

    result = _run_cloud(tmp_path, os.environ["PATH"])
    assert result.returncode != 0
    assert "another cloud runs with this var dir" in result.stderr, result.stderr
