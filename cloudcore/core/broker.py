"""The Celery broker of the embedded cloud: a private ``redis-server`` under ``var/``.

``make run`` (``manage.py run_cloud``) starts Redis itself unless ``CLOUDCORE_BROKER_URL`` points the
cloud at an external one. The private server listens on a unix socket only (no TCP port, so two
clouds on one machine never meet), keeps nothing on disk, and stops with the cloud. Every process
finds it the same way: the settings derive the socket path from ``CLOUDCORE_VAR_DIR``.

Kombu's filesystem transport is not used anywhere: it reads message files while another process is
still writing them (kombu issue 1551), which killed the conductor of the first version.
"""
from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: unix socket paths longer than this do not fit in ``sockaddr_un``
_MAX_SOCKET_PATH = 100


def embedded_socket_path(var_dir: Path) -> Path:
    """Where the embedded Redis listens: ``<var>/redis.sock``, or a short path under /tmp named
    after the var dir when that one is too long for a unix socket."""
    path = Path(var_dir) / "redis.sock"
    if len(str(path)) <= _MAX_SOCKET_PATH:
        return path
    digest = hashlib.sha1(str(var_dir).encode()).hexdigest()[:16]  # noqa: S324 - a name, not security
    return Path("/tmp") / f"cloudcore-redis-{digest}.sock"  # noqa: S108 - private socket, mode 700


def embedded_url(var_dir: Path) -> str:
    return f"redis+socket://{embedded_socket_path(var_dir)}"


def redis_server_argv(socket: Path, data_dir: Path) -> list[str]:
    """``redis-server`` in the foreground on ``socket`` only, with no persistence.

    Raises RuntimeError when Redis is not installed."""
    exe = shutil.which("redis-server")
    if not exe:
        raise RuntimeError("redis-server is not installed (the Makefile installs Debian's redis-server; "
                           "or set CLOUDCORE_BROKER_URL to an external Redis)")
    data_dir.mkdir(parents=True, exist_ok=True)
    return [exe, "--port", "0", "--unixsocket", str(socket), "--unixsocketperm", "700",
            "--save", "", "--appendonly", "no", "--daemonize", "no", "--dir", str(data_dir),
            "--logfile", "", "--databases", "16"]


def ping(socket: Path, timeout: float = 1.0) -> bool:
    import redis

    client = redis.Redis(unix_socket_path=str(socket), socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        return bool(client.ping())
    except (redis.RedisError, OSError):
        return False
    finally:
        client.close()


def wait_ready(socket: Path, *, timeout: float, alive: Callable[[], bool] | None = None) -> bool:
    """Wait until Redis answers on ``socket``; ``alive`` (a callable) says whether to keep waiting."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ping(socket):
            return True
        if alive is not None and not alive():
            return False
        time.sleep(0.1)
    return False


def requeue_unacked(url: str, queues: list[str]) -> list[str]:
    """Put back on their queues the messages that a dead worker had taken but not acknowledged.

    Tasks are acknowledged late (after they ran), so a worker killed mid-task leaves its message in
    Redis' ``unacked`` hash, where kombu would restore it only after the visibility timeout (an
    hour). A supervised restart knows the worker died: its messages are requeued at once, as RabbitMQ
    requeues a lost consumer's messages, and the restarted worker runs them again (redelivered).
    Only messages routed to ``queues`` are touched: in the embedded cloud each of those queues has
    exactly the one worker that died. Returns the names of the tasks requeued.
    """
    import json

    from kombu import Connection

    wanted = set(queues)
    requeued: list[str] = []
    with Connection(url) as conn:
        channel: Any = conn.default_channel  # kombu's Redis channel: client, unacked_key, qos
        client = channel.client
        for tag, raw in client.hgetall(channel.unacked_key).items():
            try:
                message, _exchange, routing_key = json.loads(raw)
            except (TypeError, ValueError):
                continue
            if routing_key not in wanted:
                continue
            channel.qos.restore_by_tag(tag.decode() if isinstance(tag, bytes) else tag, client, leftmost=False)
            requeued.append(str((message.get("headers") or {}).get("task", "?")))
    return requeued
