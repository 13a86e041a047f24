"""Settings for the test suite: cloudcore's settings with a private var dir and three
pre-declared cell databases (``cell0``, ``cell1``, ``cell2``), each its own test database.

Set ``CLOUDCORE_DATABASE_URL`` and ``CLOUDCORE_CELL_DATABASES`` to run on PostgreSQL
(``make test-postgres`` does).
"""
import os
import tempfile

_var = os.environ.setdefault("CLOUDCORE_VAR_DIR", tempfile.mkdtemp(prefix="cloudcore-test-"))
os.environ.setdefault(
    "CLOUDCORE_CELL_DATABASES",
    ",".join(f"{name}=sqlite:///{_var}/{name}.sqlite3" for name in ("cell0", "cell1", "cell2")),
)
os.environ.setdefault("CLOUDCORE_CELERY_EAGER", "true")
# Tasks run eagerly in-process; nothing of the suite's own process talks to a broker.
os.environ.setdefault("CLOUDCORE_BROKER_URL", "memory://")
os.environ.setdefault("CLOUDCORE_CELL_SCATTER_INLINE", "true")
os.environ.setdefault("CLOUDCORE_SECRET_KEY", "test-only-secret-key-not-for-production")

from cloudcore.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# The compute agents' HTTP calls (compute.clients) are served by this process (not put in the
# environment: clouds the e2e tests start are real processes that use real HTTP).
SERVICE_TRANSPORT = "inprocess"


def _shared_cache_readers_do_not_wait(sender, connection, **kwargs):  # type: ignore[no-untyped-def]
    """Django's SQLite test databases live in memory with a shared cache, where SQLite locks whole
    tables and a reader meets a writer's lock at once ("database table is locked"), with no busy
    wait. Tests with a worker thread (a Celery worker, a live server) read while it writes; in
    read-uncommitted mode a shared-cache reader neither takes nor waits for table locks. Files on
    disk (every cloud the e2e tests start, and ``make run``) use WAL instead and are not touched."""
    if connection.vendor == "sqlite" and "mode=memory" in str(connection.settings_dict.get("NAME", "")):
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA read_uncommitted = 1")


from django.db.backends.signals import connection_created  # noqa: E402

connection_created.connect(_shared_cache_readers_do_not_wait, dispatch_uid="cloudcore-test-read-uncommitted")

# The suite's SQLite databases are in memory, where cloudcore's SQLite engine (which queues a
# process's writers of a database file) changes nothing; pytest-django's xdist support recognises
# in-memory SQLite test databases by Django's own engine name only (with another name it makes a
# file name of the database URL's path for each worker, which cannot be opened).
for _db in DATABASES.values():  # noqa: F405
    if _db.get("ENGINE") == "cloudcore.core.sqlite3":
        _db["ENGINE"] = "django.db.backends.sqlite3"
