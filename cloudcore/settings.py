"""cloudcore settings: everything comes from ``CLOUDCORE_*`` environment variables.

Defaults give the embedded single-machine cloud: SQLite files under ``var/`` and the private
``redis-server`` that ``run_cloud`` starts there as the broker. Production sets
``CLOUDCORE_DATABASE_URL`` (PostgreSQL), cell databases through ``cell_v2 create_cell`` and
``CLOUDCORE_BROKER_URL`` (Redis).
"""
from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from cells.dburl import SQLITE_ENGINE, database_config, no_database, sqlite_url, url_map
from cloudcore.core.broker import embedded_url as embedded_broker_url
from cloudcore.core.env import env_bool, env_float, env_int, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("VAR_DIR", str(BASE_DIR / "var"))).resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    configured = env_str("SECRET_KEY", "")
    if configured:
        return configured
    path = VAR_DIR / "secret_key"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(50))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("DEBUG", False)
# Opt-in per-thread cProfile of the web process (cloudcore.core.profiling), written under this
# directory; empty (the default) profiles nothing. ``make bench``'s live scenario sets it.
PROFILE_DIR = env_str("PROFILE_DIR", "")
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "*").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    # cloudcore apps first: `cells` overrides `migrate` so that it also migrates every cell.
    "cloudcore.core",
    "cells",
    "identity",
    "hosts",
    "scheduling",
    "servers",
    "compute",
    "conductor",
    "images",
    "volumes",
    "networks",
    "console",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "guardian",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # One scope per outermost request: reads memoised and writes batched for the whole request
    # (the in-process calls and eager tasks it makes included).
    "cloudcore.core.scope.RequestScopeMiddleware",
    # Serves /static/ under gunicorn too (collected into STATIC_ROOT by run_cloud).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "cloudcore.urls"
WSGI_APPLICATION = "cloudcore.wsgi.application"
APPEND_SLASH = False

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Databases -------------------------------------------------------------------------------
# `default` is the API database. Cell databases are registered at run time from CellMapping
# rows (cells.registry); CLOUDCORE_CELL_DATABASES ("name=url,name=url") pre-declares cell
# connections under their cell names, which the test suite uses to get one test database per cell.
#
# An isolated compute process (``manage.py compute``, DESIGN.md section 4) is given only its own
# cell: CLOUDCORE_COMPUTE_CELL (the cell's uuid), CLOUDCORE_COMPUTE_CELL_NAME (optional) and
# CLOUDCORE_COMPUTE_CELL_DATABASE_URL, and no CLOUDCORE_DATABASE_URL. Its `default` is then an empty
# in-memory SQLite database, so that a use of the API database fails loudly (the router refuses it
# first: the process is the compute agent of that cell, cells.isolation).
COMPUTE_CELL = env_str("COMPUTE_CELL", "")
COMPUTE_CELL_NAME = env_str("COMPUTE_CELL_NAME", "")
COMPUTE_CELL_DATABASE_URL = env_str("COMPUTE_CELL_DATABASE_URL", "")
if bool(COMPUTE_CELL) != bool(COMPUTE_CELL_DATABASE_URL):
    raise ImproperlyConfigured("CLOUDCORE_COMPUTE_CELL and CLOUDCORE_COMPUTE_CELL_DATABASE_URL go together "
                               "(an isolated compute process: its cell and that cell's database)")
if COMPUTE_CELL_DATABASE_URL:
    if env_str("DATABASE_URL", "") or env_str("CELL_DATABASES", ""):
        raise ImproperlyConfigured("an isolated compute process (CLOUDCORE_COMPUTE_CELL) gets only its cell's "
                                   "database: unset CLOUDCORE_DATABASE_URL and CLOUDCORE_CELL_DATABASES")
    DATABASES = {"default": no_database()}
else:
    DATABASES = {"default": database_config(env_str("DATABASE_URL", sqlite_url(VAR_DIR / "api.sqlite3")))}
    DATABASES.update({name: database_config(url) for name, url in url_map(env_str("CELL_DATABASES", "")).items()})
DATABASE_ROUTERS = ["cells.router.CellRouter"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
CELL_TIMEOUT = env_float("CELL_TIMEOUT", 60.0)
CELL_SCATTER_INLINE = env_bool("CELL_SCATTER_INLINE", False)
# Threads per cell, in each process, for the calls made in every cell at once (server lists, quota
# counts; cells.scatter): kept, each with its database connections.
CELL_SCATTER_THREADS = env_int("CELL_SCATTER_THREADS", 2, minimum=1)

AUTH_USER_MODEL = "identity.User"
# User names are unique per domain (Keystone); the console and admin log in within the default domain.
SILENCED_SYSTEM_CHECKS = ["auth.W004"]
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row
GUARDIAN_MONKEY_PATCH_USER = False
LOGIN_URL = "/login/"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
# run_cloud collects into STATIC_ROOT; with the finders as well, a web process started without
# collectstatic (runserver, a bare gunicorn) still serves the console's CSS and JS.
WHITENOISE_USE_FINDERS = True

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_RENDERER_CLASSES": [
        "rest_framework.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "cloudcore.core.api.faults.exception_handler",
}
#: Authenticators of every OpenStack API view (cloudcore.core.api.views.OpenStackAPIView), in order.
API_AUTHENTICATION_CLASSES = [
    "identity.auth.TokenAuthentication",
    "identity.auth.SessionContextAuthentication",
]
SPECTACULAR_SETTINGS = {
    "TITLE": "cloudcore",
    "DESCRIPTION": "Compute cloud control plane speaking the OpenStack compute API.",
    "VERSION": "2.105",
    "SERVE_INCLUDE_SCHEMA": False,
}

# --- Celery ----------------------------------------------------------------------------------
# Redis is the broker (DESIGN.md section 1). Unset, it is the private redis-server that run_cloud
# starts under var/ (unix socket only, no persistence); CLOUDCORE_BROKER_URL names an external one.
CELERY_BROKER_URL = env_str("BROKER_URL", "") or embedded_broker_url(VAR_DIR)
EMBEDDED_BROKER = not env_str("BROKER_URL", "")
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_EAGER", False)
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_DEFAULT_QUEUE = "conductor"
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A worker that loses the broker (Redis restarted) reconnects, also at start-up, with no retry limit.
# Tasks running then go on (a thread pool cannot cancel them); their late acks fail and are only
# logged (cloudcore.celery guards kombu's Redis channel against its closed connection).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
CELERY_TASK_IGNORE_RESULT = True
# Celery's Django fixup closes every database connection around each task unless this many tasks
# have not run yet; cloudcore.celery closes them as Django does around a request instead (those
# past CONN_MAX_AGE, i.e. CLOUDCORE_DB_CONN_MAX_AGE, or unusable).
CELERY_DB_REUSE_MAX = 2**62
# The results of the few tasks that answer (the conductor's synchronous calls to a compute host,
# ``compute.rpc._call``) go back through the broker's Redis; the caller forgets each one it read.
# (kombu's in-process ``memory://`` broker, the tests', gets the in-process result store.)
CELERY_RESULT_BACKEND = "cache+memory://" if CELERY_BROKER_URL.startswith("memory://") else CELERY_BROKER_URL
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"

# --- Compute options (Nova's names and defaults) ----------------------------------------------
USE_PENDING_STATE = env_bool("USE_PENDING_STATE", False)
SHELVED_OFFLOAD_TIME = env_int("SHELVED_OFFLOAD_TIME", 0)
# Seconds a deleted server stays SOFT_DELETED (restorable) before the periodic reclaim deletes it;
# 0: a delete is immediate (Nova's reclaim_instance_interval).
RECLAIM_INSTANCE_INTERVAL = env_int("RECLAIM_INSTANCE_INTERVAL", 0, minimum=0)
CROSS_CELL_MOVE_WEIGHT_MULTIPLIER = env_float("CROSS_CELL_MOVE_WEIGHT_MULTIPLIER", 1000000.0)
REIMAGE_TIMEOUT_PER_GB = env_int("REIMAGE_TIMEOUT_PER_GB", 20, minimum=1)
# how long a host waits for a volume created for a block device to become available (checks, seconds)
BLOCK_DEVICE_ALLOCATE_RETRIES = env_int("BLOCK_DEVICE_ALLOCATE_RETRIES", 60, minimum=0)
BLOCK_DEVICE_ALLOCATE_RETRIES_INTERVAL = env_int("BLOCK_DEVICE_ALLOCATE_RETRIES_INTERVAL", 3, minimum=0)
# How long the conductor waits for a compute host's answer to a synchronous call (the steps of a
# cross-cell move); a result nobody read is dropped after twice that.
LONG_RPC_TIMEOUT = env_int("LONG_RPC_TIMEOUT", 1800, minimum=1)
# How long the API waits for a compute host's answer to a short call (Nova's rpc_response_timeout):
# a guest's diagnostics, an interface attach.
RPC_RESPONSE_TIMEOUT = env_int("RPC_RESPONSE_TIMEOUT", 60, minimum=1)
CELERY_RESULT_EXPIRES = 2 * LONG_RPC_TIMEOUT
# Threads of the conductor worker (run_cloud): each waiting cross-cell move holds one, and a build
# spends much of its time waiting (SQLite write locks, the broker); see docs/processes.md.
CONDUCTOR_CONCURRENCY = env_int("CONDUCTOR_CONCURRENCY", 4, minimum=2)
# What run_cloud starts (docs/processes.md): gunicorn worker processes (each runs Python on one
# core at a time: one per core) and threads per worker (requests served at once by one process,
# mostly waiting on SQLite, PostgreSQL round trips and the broker), and the task threads of each
# compute host's worker.
WEB_WORKERS = env_int("WEB_WORKERS", max(2, os.cpu_count() or 1), minimum=1)
WEB_THREADS = env_int("WEB_THREADS", 8, minimum=1)
# Each web worker starts all its threads, with their database connections, Celery result backend
# and broker producers, before it accepts connections (cloudcore.webworker); false: gunicorn's
# plain threaded worker, whose threads make those at their first requests.
WEB_PREPARE_THREADS = env_bool("WEB_PREPARE_THREADS", True)
# How long (ms) a thread of the web and worker processes runs Python before it must hand the GIL to
# a thread that waits for it (Python's default: 5 ms). Their threads mostly wait on SQLite, Redis
# and sockets, and each of those waits ends by taking the GIL back: behind a thread running Python,
# up to the whole interval each time, tens of times per request (see docs/processes.md).
GIL_SWITCH_INTERVAL_MS = env_float("GIL_SWITCH_INTERVAL_MS", 1.0)
# The web and worker processes move the objects left once start-up is over into the garbage
# collector's permanent generation, so that its full collections no longer walk them
# (cloudcore/core/heap.py, docs/processes.md).
GC_FREEZE = env_bool("GC_FREEZE", True)
COMPUTE_CONCURRENCY = env_int("COMPUTE_CONCURRENCY", 8, minimum=1)
# The niceness (0-19) the Celery workers (conductor, computes, volume) raise themselves to when they
# start, so that on a busy machine the web process's requests get the CPU first and the workers catch
# up (docs/processes.md). 0: the priority they were started with. By default 10 where the worker's
# database is PostgreSQL and 0 where it is SQLite, whose one write lock a niced worker would hold
# while the web waits for it. (Lower case: a name of this module, not a setting.)
worker_database = database_config(COMPUTE_CELL_DATABASE_URL) if COMPUTE_CELL_DATABASE_URL else DATABASES["default"]
WORKER_NICE = env_int("WORKER_NICE", 0 if worker_database["ENGINE"] == SQLITE_ENGINE else 10, minimum=0)
# A compute task runs as the compute agent of its cell (cells.isolation): any use of the API
# database or another cell's is refused.
COMPUTE_ISOLATION = env_bool("COMPUTE_ISOLATION", True)
RESIZE_CONFIRM_WINDOW = env_int("RESIZE_CONFIRM_WINDOW", 0, minimum=0)
TASK_STATE_TIMEOUT = env_int("TASK_STATE_TIMEOUT", 3600, minimum=60)
PERIODIC_INTERVAL = env_int("PERIODIC_INTERVAL", 60, minimum=1)
ALLOW_RESIZE_TO_SAME_HOST = env_bool("ALLOW_RESIZE_TO_SAME_HOST", False)
SERVICE_DOWN_TIME = env_int("SERVICE_DOWN_TIME", 60, minimum=1)
REPORT_INTERVAL = env_int("REPORT_INTERVAL", 10, minimum=1)
# Nova's image cache manager: how often a compute host removes the cached images (<state_path>/_base)
# no instance disk is based on, once unused for at least the minimum age (seconds; 0 = never)
IMAGE_CACHE_MANAGER_INTERVAL = env_int("IMAGE_CACHE_MANAGER_INTERVAL", 2400, minimum=0)
REMOVE_UNUSED_ORIGINAL_MINIMUM_AGE_SECONDS = env_int("REMOVE_UNUSED_ORIGINAL_MINIMUM_AGE_SECONDS", 86400,
                                                     minimum=0)
# Seconds a compute's resource tracker trusts its copy of its providers in placement before it
# reads them again (0: never; a failed write still makes it read them again).
RESOURCE_PROVIDER_ASSOCIATION_REFRESH = env_int("RESOURCE_PROVIDER_ASSOCIATION_REFRESH", 300, minimum=0)
MAX_ATTEMPTS = env_int("MAX_ATTEMPTS", 3, minimum=1)
DEFAULT_AVAILABILITY_ZONE = env_str("DEFAULT_AVAILABILITY_ZONE", "nova")
DEFAULT_SCHEDULE_ZONE = env_str("DEFAULT_SCHEDULE_ZONE", "") or None
CPU_ALLOCATION_RATIO = env_float("CPU_ALLOCATION_RATIO", 4.0)
RAM_ALLOCATION_RATIO = env_float("RAM_ALLOCATION_RATIO", 1.0)
DISK_ALLOCATION_RATIO = env_float("DISK_ALLOCATION_RATIO", 1.0)
RESERVED_HOST_MEMORY_MB = env_int("RESERVED_HOST_MEMORY_MB", 512, minimum=0)
RESERVED_HOST_DISK_MB = env_int("RESERVED_HOST_DISK_MB", 0, minimum=0)
RESERVED_HOST_CPUS = env_int("RESERVED_HOST_CPUS", 0, minimum=0)
TOKEN_EXPIRATION = env_int("TOKEN_EXPIRATION", 3600, minimum=1)
# How long a validated token (its user, project and roles) is reused without reading it again;
# any identity change (revocation, role, user, project, credential) ends it in every process at
# the next request (identity.services.token_cache); 0 turns the cache off.
TOKEN_CACHE_SECONDS = env_int("TOKEN_CACHE_SECONDS", 300, minimum=0)
ADMIN_PROJECT_NAME = env_str("ADMIN_PROJECT_NAME", "admin")
NOTIFICATIONS_ENABLED = env_bool("NOTIFICATIONS_ENABLED", True)
NOTIFICATIONS_KEEP = env_int("NOTIFICATIONS_KEEP", 2000, minimum=0)
QUOTA_INSTANCES = env_int("QUOTA_INSTANCES", 10, minimum=-1)
QUOTA_CORES = env_int("QUOTA_CORES", 20, minimum=-1)
QUOTA_RAM = env_int("QUOTA_RAM", 51200, minimum=-1)
#: Neutron's default quotas on security groups and their rules, per project (-1: unlimited).
QUOTA_SECURITY_GROUP = env_int("QUOTA_SECURITY_GROUP", 10, minimum=-1)
QUOTA_SECURITY_GROUP_RULE = env_int("QUOTA_SECURITY_GROUP_RULE", 100, minimum=-1)
#: Neutron's default quotas on networks, subnets, ports, routers and floating IPs, per project.
QUOTA_NETWORK = env_int("QUOTA_NETWORK", 100, minimum=-1)
QUOTA_SUBNET = env_int("QUOTA_SUBNET", 100, minimum=-1)
QUOTA_PORT = env_int("QUOTA_PORT", 500, minimum=-1)
QUOTA_ROUTER = env_int("QUOTA_ROUTER", 10, minimum=-1)
QUOTA_FLOATINGIP = env_int("QUOTA_FLOATINGIP", 50, minimum=-1)
#: Nova's [neutron] default_floating_pool: the external network (name or id) a floating IP of the compute
#: API's proxy (POST /os-floating-ips, up to 2.35) comes from when the request names no pool. Nova's default
#: is "nova"; devstack sets "public", the external network of the demo cloud.
DEFAULT_FLOATING_POOL = env_str("DEFAULT_FLOATING_POOL", "public")
IMAGE_STORE_DIR = Path(env_str("IMAGE_STORE_DIR", str(VAR_DIR / "images")))
#: The tasks API's ``import`` (an image from a URL, read by the conductor: ``images.fetch``): the most
#: bytes it reads from one URL, and how long one connect or read may wait (seconds).
IMAGE_IMPORT_MAX_BYTES = env_int("IMAGE_IMPORT_MAX_BYTES", 4 * 1024**3, minimum=1)
IMAGE_IMPORT_TIMEOUT = env_int("IMAGE_IMPORT_TIMEOUT", 30, minimum=1)
#: Where such a URL may point (Glance's [import_filtering_opts], and more): the ports a URL may name
#: (comma-separated; empty: any; a URL naming none uses its scheme's), and the networks (CIDRs) that
#: may be reached although their addresses are not global ones: every address that is not (loopback,
#: private, link-local, shared, reserved) is refused by default, checked on the address connected to.
IMAGE_IMPORT_ALLOWED_PORTS = [int(p) for p in env_str("IMAGE_IMPORT_ALLOWED_PORTS", "80,443").split(",")
                              if p.strip()]
IMAGE_IMPORT_ALLOWED_NETWORKS = [n.strip() for n in env_str("IMAGE_IMPORT_ALLOWED_NETWORKS", "").split(",")
                                 if n.strip()]
#: Hours a finished image task is kept (its ``expires_at``; Glance's task_time_to_live).
IMAGE_TASK_TIME_TO_LIVE = env_int("IMAGE_TASK_TIME_TO_LIVE", 48, minimum=1)
VOLUME_POOL_DIR = Path(env_str("VOLUME_POOL_DIR", str(VAR_DIR / "volumes")))
#: operator overrides of policy rules' checks (``manage.py policy override``; OpenStack's policy.yaml)
POLICY_FILE = Path(env_str("POLICY_FILE", str(VAR_DIR / "policy.yaml")))
#: where volume backups are written (Cinder's posix backup driver's ``backup_posix_path``)
BACKUP_DIR = Path(env_str("BACKUP_DIR", str(VAR_DIR / "backups")))
STATE_PATH = Path(env_str("STATE_PATH", str(VAR_DIR / "state")))
#: Nova's [DEFAULT]my_ip: the compute host's IP address, reported as its hypervisor's ``host_ip``;
#: empty = the address of the interface the default route leaves by (127.0.0.1 without one)
MY_IP = env_str("MY_IP", "")
LIBVIRT_VIRT_TYPE = env_str("LIBVIRT_VIRT_TYPE", "auto")  # kvm, qemu (TCG) or auto
# Nova's [DEFAULT]force_config_drive: every server gets a config drive, asked for or not (run_cloud
# turns it on for the demo cloud)
FORCE_CONFIG_DRIVE = env_bool("FORCE_CONFIG_DRIVE", False)
# Nova's [DEFAULT]default_ephemeral_format: the file system (mkfs type, e.g. ext4) a flavor's
# ephemeral disk is created with on a real hypervisor; empty = the disk is left blank (unformatted)
DEFAULT_EPHEMERAL_FORMAT = env_str("DEFAULT_EPHEMERAL_FORMAT", "")
# libvirt URI of the demo compute hosts (run_cloud): empty = each its own simulated host on the
# test driver; e.g. qemu:///system = real guests, the four hosts sharing that one daemon
DEMO_LIBVIRT_URI = env_str("DEMO_LIBVIRT_URI", "")
# run_cloud: the database URL the demo compute hosts of a cell connect with when they run isolated
# (COMPUTE_ISOLATION), "cell1=url,cell2=url" (e.g. a role that may connect only to that cell's
# database); a cell not named here: its cell mapping's URL
DEMO_COMPUTE_DATABASES = url_map(env_str("DEMO_COMPUTE_DATABASES", ""))
PUBLIC_URL = env_str("PUBLIC_URL", "http://127.0.0.1:8000")

# --- Consoles (Nova's [vnc], [serial_console] and [consoleauth] options) -------------------------
# A console token lives this many seconds (Nova's consoleauth.token_ttl).
CONSOLE_TOKEN_TTL = env_int("CONSOLE_TOKEN_TTL", 600, minimum=1)
# The address the console proxy reaches a compute host's guest consoles on (Nova's
# vnc.server_proxyclient_address / serial_console.proxyclient_address) and the one a guest's VNC
# server listens on (vnc.server_listen).
CONSOLE_PROXYCLIENT_ADDRESS = env_str("CONSOLE_PROXYCLIENT_ADDRESS", "127.0.0.1")
VNC_ENABLED = env_bool("VNC_ENABLED", True)
VNC_SERVER_LISTEN = env_str("VNC_SERVER_LISTEN", "127.0.0.1")
# Nova's serial console is off by default; cloudcore's is on (issue 18: a guest's serial console
# is reachable through the proxy).
SERIAL_CONSOLE_ENABLED = env_bool("SERIAL_CONSOLE_ENABLED", True)
# where a real guest's serial TCP server listens on its host (Nova's serial_console.proxyclient_address
# side) and the ports it may take (Nova's serial_console.port_range, "low:high")
SERIAL_CONSOLE_LISTEN = env_str("SERIAL_CONSOLE_LISTEN", "127.0.0.1")
_serial_range = env_str("SERIAL_CONSOLE_PORT_RANGE", "10000:20000")
if not re.fullmatch(r"\d+:\d+", _serial_range) or int(_serial_range.split(":")[0]) > int(_serial_range.split(":")[1]):
    raise ImproperlyConfigured(f"CLOUDCORE_SERIAL_CONSOLE_PORT_RANGE={_serial_range!r} is not low:high")
SERIAL_CONSOLE_PORT_RANGE = (int(_serial_range.split(":")[0]), int(_serial_range.split(":")[1]))
# The console proxies run_cloud starts (websockify with cloudcore's token plugin).
# Host names a browser page may open a console from besides the proxy's own (Nova's [console]
# allowed_origins); "a,b" in CLOUDCORE_CONSOLE_ALLOWED_ORIGINS.
CONSOLE_ALLOWED_ORIGINS = [o.strip() for o in env_str("CONSOLE_ALLOWED_ORIGINS", "").split(",") if o.strip()]
NOVNCPROXY_HOST = env_str("NOVNCPROXY_HOST", "127.0.0.1")
NOVNCPROXY_PORT = env_int("NOVNCPROXY_PORT", 6080, minimum=1)
SERIALPROXY_HOST = env_str("SERIALPROXY_HOST", "127.0.0.1")
SERIALPROXY_PORT = env_int("SERIALPROXY_PORT", 6083, minimum=1)
# The URLs handed to clients (a token is appended): Nova's vnc.novncproxy_base_url and
# serial_console.base_url.
NOVNCPROXY_BASE_URL = env_str("NOVNCPROXY_BASE_URL", f"http://127.0.0.1:{NOVNCPROXY_PORT}/vnc_lite.html")
SERIALPROXY_BASE_URL = env_str("SERIALPROXY_BASE_URL", f"ws://127.0.0.1:{SERIALPROXY_PORT}/")
# noVNC's web client, served by the VNC proxy (Debian's novnc package)
NOVNC_WEB_DIR = env_str("NOVNC_WEB_DIR", "/usr/share/novnc")
# How long the API waits for a compute host to answer a console request (Nova's rpc_response_timeout).
RPC_RESPONSE_TIMEOUT = env_int("RPC_RESPONSE_TIMEOUT", 60, minimum=1)
# The service user compute agents authenticate as (compute.clients); its password defaults to one
# derived from SECRET_KEY, which every process of a deployment shares.
SERVICE_USER_NAME = env_str("SERVICE_USER_NAME", "cloudcore-service")
SERVICE_PASSWORD = env_str("SERVICE_PASSWORD", "") or hmac.new(
    SECRET_KEY.encode(), b"cloudcore-service-user", hashlib.sha256).hexdigest()
SERVICE_AUTH_URL = env_str("SERVICE_AUTH_URL", "") or PUBLIC_URL.rstrip("/") + "/identity/v3"
# "http": real requests to the endpoints of the catalog; "inprocess": through this process's
# WSGI handler (the test suite, where every service runs in the test's own process).
SERVICE_TRANSPORT = env_str("SERVICE_TRANSPORT", "http")

# --- Scheduler (scheduling app; Nova's [scheduler]/[filter_scheduler] options) ---------------------
MAX_PLACEMENT_RESULTS = env_int("MAX_PLACEMENT_RESULTS", 1000, minimum=1)
# The console's placement-usage chart: the resource audit samples placement's usage at most once
# per PLACEMENT_USAGE_SAMPLE_INTERVAL seconds (0: at every audit), keeping the newest
# PLACEMENT_USAGE_SAMPLES_KEPT samples (288 at five minutes is a day).
PLACEMENT_USAGE_SAMPLE_INTERVAL = env_int("PLACEMENT_USAGE_SAMPLE_INTERVAL", 300, minimum=0)
PLACEMENT_USAGE_SAMPLES_KEPT = env_int("PLACEMENT_USAGE_SAMPLES_KEPT", 288, minimum=2)
RANDOMIZE_ALLOCATION_CANDIDATES = env_bool("RANDOMIZE_ALLOCATION_CANDIDATES", False)
# cloudcore (issue 22): how many hosts a scheduling trace names per filter, weighing and shortfall
SCHEDULER_TRACE_HOSTS = env_int("SCHEDULER_TRACE_HOSTS", 20, minimum=1)
# How long (seconds) a scheduler process counts on a trace body it stored (or found stored) being
# there, and does not write it again; and how long the archive keeps a body no record names when
# a record named it within that time (scheduling.services.traces). The grace must outlast what a
# process remembers by at least SCHEDULER_TRACE_SCOPE_MARGIN (the longest a request scope may
# hold its rows before writing them, with room), or a process could name a body that is gone.
SCHEDULER_TRACE_BODY_REMEMBERED = env_int("SCHEDULER_TRACE_BODY_REMEMBERED", 3600, minimum=0)
SCHEDULER_TRACE_ORPHAN_GRACE = env_int("SCHEDULER_TRACE_ORPHAN_GRACE", 86400, minimum=0)
SCHEDULER_TRACE_SCOPE_MARGIN = 3600
if SCHEDULER_TRACE_ORPHAN_GRACE < SCHEDULER_TRACE_BODY_REMEMBERED + SCHEDULER_TRACE_SCOPE_MARGIN:
    raise ImproperlyConfigured(
        f"CLOUDCORE_SCHEDULER_TRACE_ORPHAN_GRACE={SCHEDULER_TRACE_ORPHAN_GRACE} must be at least "
        f"CLOUDCORE_SCHEDULER_TRACE_BODY_REMEMBERED ({SCHEDULER_TRACE_BODY_REMEMBERED}) + "
        f"{SCHEDULER_TRACE_SCOPE_MARGIN} seconds")
RAM_WEIGHT_MULTIPLIER = env_float("RAM_WEIGHT_MULTIPLIER", 1.0)
DISK_WEIGHT_MULTIPLIER = env_float("DISK_WEIGHT_MULTIPLIER", 1.0)
CPU_WEIGHT_MULTIPLIER = env_float("CPU_WEIGHT_MULTIPLIER", 1.0)
INTERNAL_SERVICE_AVAILABILITY_ZONE = env_str("INTERNAL_SERVICE_AVAILABILITY_ZONE", "internal")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(process)d %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- volumes (issue 7) -------------------------------------------------------------------------
# libvirt URI on which the volume pool is also defined as a libvirt ``dir`` pool (empty: files only)
VOLUME_LIBVIRT_URI = env_str("VOLUME_LIBVIRT_URI", "")
