"""os-services, os-hypervisors and the deprecated os-hosts routes (under /compute/v2.1/)."""
from django.urls import path

from . import legacy_hosts, usage_audit, views

urlpatterns = [
    path("os-services", views.ServicesView.as_view(), name="compute-services"),
    path("os-services/<str:service_id>", views.ServiceView.as_view(), name="compute-service"),
    path("os-hypervisors", views.HypervisorsView.as_view(), name="compute-hypervisors"),
    path("os-hypervisors/detail", views.HypervisorsDetailView.as_view(), name="compute-hypervisors-detail"),
    path("os-hypervisors/statistics", views.HypervisorStatisticsView.as_view(), name="compute-hypervisor-statistics"),
    path("os-hypervisors/<str:hypervisor_id>/uptime", views.HypervisorUptimeView.as_view(),
         name="compute-hypervisor-uptime"),
    path("os-hypervisors/<str:pattern>/search", views.HypervisorSearchView.as_view()),
    path("os-hypervisors/<str:pattern>/servers", views.HypervisorServersView.as_view()),
    path("os-hypervisors/<str:hypervisor_id>", views.HypervisorView.as_view(), name="compute-hypervisor"),
    path("os-instance_usage_audit_log", usage_audit.UsageAuditLogsView.as_view(), name="compute-usage-audit-logs"),
    path("os-instance_usage_audit_log/<str:before>", usage_audit.UsageAuditLogView.as_view(),
         name="compute-usage-audit-log"),
    path("os-hosts", legacy_hosts.HostsView.as_view(), name="compute-hosts"),
    path("os-hosts/<str:host>", legacy_hosts.HostView.as_view(), name="compute-host"),
    *(path(f"os-hosts/<str:host>/{action}", legacy_hosts.HostPowerView.as_view(action=action))
      for action in ("reboot", "shutdown", "startup")),
]
