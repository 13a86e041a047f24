from django.urls import path

from . import launch_views, operator_views, project_views, remote_consoles, server_views, views

app_name = "console"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("login/", views.login_view, name="login"),
    path("logout/", views.logout_view, name="logout"),
    path("project/", views.switch_project, name="switch-project"),
    path("resources/", project_views.project_resources, name="project-resources"),
    path("hosts/", views.hosts, name="hosts"),
    path("hosts/action/", server_views.host_action, name="host-action"),
    path("servers/", server_views.server_list, name="servers"),
    path("servers/new/", launch_views.server_launch, name="server-create"),
    path("servers/<str:server_id>/", server_views.server_detail, name="server"),
    path("servers/<str:server_id>/action/", server_views.server_action, name="server-action"),
    path("servers/<str:server_id>/console/<str:kind>/", remote_consoles.server_console, name="server-console"),
    path("migrations/", server_views.migrations, name="migrations"),
    path("policy/", views.policy_page, name="policy"),
    path("policy/change/", views.policy_change, name="policy-change"),
    path("notifications/", views.notifications, name="notifications"),
    path("quotas/", operator_views.quotas, name="quotas"),
    path("quotas/<str:project_id>/", operator_views.quota_update, name="quota-update"),
    path("flavors/", operator_views.flavors, name="flavors"),
    path("flavors/new/", operator_views.flavor_create, name="flavor-create"),
    path("flavors/<str:flavor_id>/action/", operator_views.flavor_action, name="flavor-action"),
    path("aggregates/", operator_views.aggregates, name="aggregates"),
    path("aggregates/new/", operator_views.aggregate_create, name="aggregate-create"),
    path("aggregates/<str:aggregate_id>/action/", operator_views.aggregate_action, name="aggregate-action"),
    path("server-groups/", operator_views.server_groups, name="server-groups"),
]
