from django.urls import path

from . import project_views, remote_consoles, server_views, views

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
    path("servers/new/", server_views.server_create, name="server-create"),
    path("servers/<str:server_id>/", server_views.server_detail, name="server"),
    path("servers/<str:server_id>/action/", server_views.server_action, name="server-action"),
    path("servers/<str:server_id>/console/<str:kind>/", remote_consoles.server_console, name="server-console"),
    path("migrations/", server_views.migrations, name="migrations"),
    path("policy/", views.policy_page, name="policy"),
    path("policy/change/", views.policy_change, name="policy-change"),
    path("notifications/", views.notifications, name="notifications"),
]
