"""An isolated compute process: its cell from its own configuration, and the environment that
starts one.

A compute host of cell X is configured with that cell alone (as nova-compute's ``[database]
connection`` names only its cell database): ``CLOUDCORE_COMPUTE_CELL`` (the cell's uuid, which the
conductor's tasks name), ``CLOUDCORE_COMPUTE_CELL_NAME`` (optional) and
``CLOUDCORE_COMPUTE_CELL_DATABASE_URL``, plus the broker URL and the service user's credentials
(``compute.clients``). It has no API database URL: ``settings.DATABASES["default"]`` is an empty
in-memory database and the process is the compute agent of its cell (``cells.isolation``).
"""
from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping

from django.conf import settings

from cloudcore.core.exceptions import InvalidConfiguration

from .isolation import AgentCell, agent_process
from .models import CellMapping

#: What only the API side has: never in an isolated compute's environment.
API_ONLY_ENV = ("CLOUDCORE_DATABASE_URL", "CLOUDCORE_CELL_DATABASES", "CLOUDCORE_DEMO_COMPUTE_DATABASES")


def configured_cell() -> CellMapping | None:
    """This process's own cell when it runs isolated (an unsaved CellMapping built from the
    settings, no API database read); None when the process has the API database."""
    if not settings.COMPUTE_CELL_DATABASE_URL:
        return None
    try:
        cell_uuid = str(uuidlib.UUID(settings.COMPUTE_CELL))
    except ValueError:
        raise InvalidConfiguration(
            f"CLOUDCORE_COMPUTE_CELL={settings.COMPUTE_CELL!r} must be the cell's uuid (manage.py cell_v2 "
            "list_cells): the conductor names cells by uuid and an isolated compute cannot look a name up in the "
            "API database; the name goes in CLOUDCORE_COMPUTE_CELL_NAME") from None
    return CellMapping(uuid=cell_uuid, name=settings.COMPUTE_CELL_NAME or None,
                       database_connection=settings.COMPUTE_CELL_DATABASE_URL)


def enter_configured_cell() -> AgentCell | None:
    """Make this process the compute agent of its configured cell (``configured_cell``), if any."""
    cell = configured_cell()
    return agent_process(cell) if cell is not None else None


def isolated_environment(env: Mapping[str, str], *, cell: CellMapping,
                         database_url: str | None = None) -> dict[str, str]:
    """``env`` made into the environment of an isolated compute process of ``cell``: without the API
    database (or any other database) and with ``database_url`` (default: the cell mapping's) as its
    only database, the broker URL and the service user's credentials."""
    isolated = {key: value for key, value in env.items() if key not in API_ONLY_ENV}
    public_url = env.get("CLOUDCORE_PUBLIC_URL", settings.PUBLIC_URL)
    isolated.update({
        "CLOUDCORE_COMPUTE_CELL": str(cell.uuid),
        "CLOUDCORE_COMPUTE_CELL_NAME": cell.name or "",
        "CLOUDCORE_COMPUTE_CELL_DATABASE_URL": database_url or cell.database_connection,
        "CLOUDCORE_BROKER_URL": env.get("CLOUDCORE_BROKER_URL") or settings.CELERY_BROKER_URL,
        "CLOUDCORE_SERVICE_USER_NAME": settings.SERVICE_USER_NAME,
        "CLOUDCORE_SERVICE_PASSWORD": env.get("CLOUDCORE_SERVICE_PASSWORD") or settings.SERVICE_PASSWORD,
        "CLOUDCORE_SERVICE_AUTH_URL": env.get("CLOUDCORE_SERVICE_AUTH_URL")
        or public_url.rstrip("/") + "/identity/v3",
        "CLOUDCORE_ADMIN_PROJECT_NAME": settings.ADMIN_PROJECT_NAME,
    })
    return isolated
