"""Neutron routes, mounted at ``^network/?`` (see cloudcore/urls.py)."""
from django.urls import re_path

from . import l3, security_groups, views

urlpatterns = [
    re_path(r"^$", views.NetworkVersionsView.as_view()),
    re_path(r"^v2\.0/?$", views.NetworkRootView.as_view()),
    re_path(r"^v2\.0/extensions/?$", views.ExtensionsView.as_view()),
    re_path(r"^v2\.0/networks/?$", views.NetworksView.as_view()),
    re_path(r"^v2\.0/networks/(?P<net_id>[^/]+)/?$", views.NetworkView.as_view()),
    re_path(r"^v2\.0/subnets/?$", views.SubnetsView.as_view()),
    re_path(r"^v2\.0/subnets/(?P<subnet_id>[^/]+)/?$", views.SubnetView.as_view()),
    re_path(r"^v2\.0/ports/?$", views.PortsView.as_view()),
    re_path(r"^v2\.0/ports/(?P<port_id>[^/]+)/?$", views.PortView.as_view()),
    re_path(r"^v2\.0/ports/(?P<port_id>[^/]+)/bindings/?$", views.PortBindingsView.as_view()),
    re_path(r"^v2\.0/ports/(?P<port_id>[^/]+)/bindings/(?P<host>[^/]+)/?$", views.PortBindingView.as_view()),
    re_path(r"^v2\.0/ports/(?P<port_id>[^/]+)/bindings/(?P<host>[^/]+)/activate/?$",
            views.PortBindingActivateView.as_view()),
    re_path(r"^v2\.0/security-groups/?$", security_groups.SecurityGroupsView.as_view()),
    re_path(r"^v2\.0/security-groups/(?P<group_id>[^/]+)/?$", security_groups.SecurityGroupView.as_view()),
    re_path(r"^v2\.0/security-groups/(?P<group_id>[^/]+)/tags/?$", security_groups.SecurityGroupTagsView.as_view()),
    re_path(r"^v2\.0/security-groups/(?P<group_id>[^/]+)/tags/(?P<tag>[^/]+)/?$",
            security_groups.SecurityGroupTagView.as_view()),
    re_path(r"^v2\.0/security-group-rules/?$", security_groups.SecurityGroupRulesView.as_view()),
    re_path(r"^v2\.0/security-group-rules/(?P<rule_id>[^/]+)/?$", security_groups.SecurityGroupRuleView.as_view()),
    re_path(r"^v2\.0/routers/?$", l3.RoutersView.as_view()),
    re_path(r"^v2\.0/routers/(?P<router_id>[^/]+)/?$", l3.RouterView.as_view()),
    re_path(r"^v2\.0/routers/(?P<router_id>[^/]+)/add_router_interface/?$",
            l3.RouterInterfaceView.as_view(operation="add")),
    re_path(r"^v2\.0/routers/(?P<router_id>[^/]+)/remove_router_interface/?$",
            l3.RouterInterfaceView.as_view(operation="remove")),
    re_path(r"^v2\.0/floatingips/?$", l3.FloatingIPsView.as_view()),
    re_path(r"^v2\.0/floatingips/(?P<fip_id>[^/]+)/?$", l3.FloatingIPView.as_view()),
]
