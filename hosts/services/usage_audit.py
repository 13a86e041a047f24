"""``os-instance_usage_audit_log``: how far the compute hosts got with the periodic instance usage
audit of a period. cloudcore's compute hosts do not run that audit (Nova's
``instance_usage_audit`` option, off by default), so every compute host is reported as not having
run it, for the last completed audit period (a calendar month, Nova's default) before a time."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize

from .services_admin import service_list

FORMAT = "%Y-%m-%d %H:%M:%S"


def last_completed_month(before: datetime) -> tuple[datetime, datetime]:
    """The calendar month that ended last at or before ``before`` (UTC)."""
    end = before.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    start = end.replace(year=end.year - 1, month=12) if end.month == 1 else end.replace(month=end.month - 1)
    return start, end


def parse_before(raw: str) -> datetime:
    for fmt in ("%Y-%m-%d %H:%M:%S.%f", FORMAT, "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(raw, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise Invalid(f"Invalid timestamp for date {raw}")


def audit_log(*, actor: RequestContext, before: datetime | None, rule: str) -> dict[str, Any]:
    authorize(actor, f"os_compute_api:os-instance-usage-audit-log:{rule}")
    start, end = last_completed_month(before or datetime.now(UTC))
    hosts = sorted({cs.service.host for cs in service_list(binary="nova-compute")})
    return {"hosts_not_run": hosts, "log": {}, "num_hosts": len(hosts), "num_hosts_done": 0,
            "num_hosts_not_run": len(hosts), "num_hosts_running": 0,
            "overall_status": f"0 of {len(hosts)} hosts done. 0 errors.",
            "period_beginning": start.strftime(FORMAT), "period_ending": end.strftime(FORMAT),
            "total_errors": 0, "total_instances": 0}
