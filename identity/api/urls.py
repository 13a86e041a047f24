"""URL routes of the identity API, mounted under ``^identity/?`` by cloudcore/urls.py."""
from django.urls import re_path

from . import views

urlpatterns = [
    re_path(r"^$", views.VersionsView.as_view(), name="identity-versions"),
    re_path(r"^v3/?$", views.V3View.as_view(), name="identity-v3"),
    re_path(r"^v3/auth/tokens/?$", views.TokensView.as_view(), name="identity-tokens"),
    re_path(r"^v3/auth/catalog/?$", views.CatalogView.as_view(), name="identity-catalog"),
    re_path(r"^v3/auth/projects/?$", views.AuthProjectsView.as_view(), name="identity-auth-projects"),
    re_path(r"^v3/auth/domains/?$", views.AuthDomainsView.as_view(), name="identity-auth-domains"),
    re_path(r"^v3/services/?$", views.ServicesView.as_view(), name="identity-services"),
    re_path(r"^v3/services/(?P<service_id>[^/]+)/?$", views.ServiceView.as_view(), name="identity-service"),
    re_path(r"^v3/endpoints/?$", views.EndpointsView.as_view(), name="identity-endpoints"),
    re_path(r"^v3/endpoints/(?P<endpoint_id>[^/]+)/?$", views.EndpointView.as_view(), name="identity-endpoint"),
    re_path(r"^v3/regions/?$", views.RegionsView.as_view(), name="identity-regions"),
    re_path(r"^v3/domains/?$", views.DomainsView.as_view(), name="identity-domains"),
    re_path(r"^v3/domains/(?P<domain_id>[^/]+)/?$", views.DomainView.as_view(), name="identity-domain"),
    re_path(r"^v3/projects/?$", views.ProjectsView.as_view(), name="identity-projects"),
    re_path(r"^v3/projects/(?P<project_id>[^/]+)/?$", views.ProjectView.as_view(), name="identity-project"),
    re_path(r"^v3/projects/(?P<project_id>[^/]+)/users/(?P<user_id>[^/]+)/roles/?$",
            views.ProjectUserRolesView.as_view(), name="identity-project-user-roles"),
    re_path(r"^v3/projects/(?P<project_id>[^/]+)/users/(?P<user_id>[^/]+)/roles/(?P<role_id>[^/]+)/?$",
            views.ProjectUserRoleView.as_view(), name="identity-project-user-role"),
    re_path(r"^v3/users/?$", views.UsersView.as_view(), name="identity-users"),
    re_path(r"^v3/users/(?P<user_id>[^/]+)/?$", views.UserView.as_view(), name="identity-user"),
    re_path(r"^v3/users/(?P<user_id>[^/]+)/password/?$", views.UserPasswordView.as_view(),
            name="identity-user-password"),
    re_path(r"^v3/users/(?P<user_id>[^/]+)/projects/?$", views.UserProjectsView.as_view(),
            name="identity-user-projects"),
    re_path(r"^v3/users/(?P<user_id>[^/]+)/application_credentials/?$", views.ApplicationCredentialsView.as_view(),
            name="identity-application-credentials"),
    re_path(r"^v3/users/(?P<user_id>[^/]+)/application_credentials/(?P<application_credential_id>[^/]+)/?$",
            views.ApplicationCredentialView.as_view(), name="identity-application-credential"),
    re_path(r"^v3/roles/?$", views.RolesView.as_view(), name="identity-roles"),
    re_path(r"^v3/roles/(?P<role_id>[^/]+)/?$", views.RoleView.as_view(), name="identity-role"),
    re_path(r"^v3/role_assignments/?$", views.RoleAssignmentsView.as_view(), name="identity-role-assignments"),
]
