"""Neutron's policy rules for what the networks app checks (names and secure-RBAC defaults as Neutron's),
registered in the one registry (``cloudcore.core.policy``)."""
from cloudcore.core.policy import register

_MEMBER = "project_member_or_admin"
_READER = "project_reader_or_admin"
_SERVICE = "service_or_admin"
SG = "/v2.0/security-groups"
RULE = "/v2.0/security-group-rules"
BINDINGS = "/v2.0/ports/{port_id}/bindings"
ROUTERS = "/v2.0/routers"
FIPS = "/v2.0/floatingips"
_ADMIN = "admin"
for _name, _check, _desc, _ops in [
    ("create_security_group", _MEMBER, "Create a security group", [("POST", SG)]),
    ("get_security_group", _READER, "Get a security group", [("GET", SG), ("GET", f"{SG}/{{id}}")]),
    ("update_security_group", _MEMBER, "Update a security group", [("PUT", f"{SG}/{{id}}")]),
    ("delete_security_group", _MEMBER, "Delete a security group", [("DELETE", f"{SG}/{{id}}")]),
    ("update_security_group:tags", _MEMBER, "Update the tags of a security group",
     [("PUT", f"{SG}/{{id}}/tags"), ("PUT", f"{SG}/{{id}}/tags/{{tag}}"), ("DELETE", f"{SG}/{{id}}/tags"),
      ("DELETE", f"{SG}/{{id}}/tags/{{tag}}")]),
    ("create_security_group_rule", _MEMBER, "Create a security group rule", [("POST", RULE)]),
    ("get_security_group_rule", _READER, "Get a security group rule", [("GET", RULE), ("GET", f"{RULE}/{{id}}")]),
    ("delete_security_group_rule", _MEMBER, "Delete a security group rule", [("DELETE", f"{RULE}/{{id}}")]),
    ("create_port:allowed_address_pairs", _MEMBER,
     "Specify allowed_address_pairs when creating a port (admin, or a member of the network's project)",
     [("POST", "/v2.0/ports")]),
    ("update_port:allowed_address_pairs", _MEMBER,
     "Update allowed_address_pairs of a port (admin, or a member of the network's project)",
     [("PUT", "/v2.0/ports/{id}")]),
    ("create_port:binding:profile", _SERVICE, "Specify binding:profile when creating a port",
     [("POST", "/v2.0/ports")]),
    ("update_port:binding:profile", _SERVICE, "Update binding:profile of a port", [("PUT", "/v2.0/ports/{id}")]),
    ("get_port_binding", _SERVICE, "Get a port's bindings (binding-extended)",
     [("GET", f"{BINDINGS}"), ("GET", f"{BINDINGS}/{{host}}")]),
    ("create_port_binding", _SERVICE, "Create a binding of a port on a host", [("POST", BINDINGS)]),
    ("activate", _SERVICE, "Make a port's binding on a host the active one",
     [("PUT", f"{BINDINGS}/{{host}}/activate")]),
    ("delete_port_binding", _SERVICE, "Delete a port's binding on a host", [("DELETE", f"{BINDINGS}/{{host}}")]),
    ("create_network:router:external", _ADMIN, "Create an external network", [("POST", "/v2.0/networks")]),
    ("update_network:router:external", _ADMIN, "Make a network external or internal",
     [("PUT", "/v2.0/networks/{id}")]),
    ("create_router", _MEMBER, "Create a router", [("POST", ROUTERS)]),
    ("create_router:external_gateway_info:enable_snat", _ADMIN, "Choose enable_snat when creating a router",
     [("POST", ROUTERS)]),
    ("create_router:external_gateway_info:external_fixed_ips", _ADMIN,
     "Choose the gateway's external fixed IPs when creating a router", [("POST", ROUTERS)]),
    ("get_router", _READER, "Get a router", [("GET", ROUTERS), ("GET", f"{ROUTERS}/{{id}}")]),
    ("update_router", _MEMBER, "Update a router", [("PUT", f"{ROUTERS}/{{id}}")]),
    ("update_router:external_gateway_info:enable_snat", _ADMIN, "Change a router's enable_snat",
     [("PUT", f"{ROUTERS}/{{id}}")]),
    ("update_router:external_gateway_info:external_fixed_ips", _ADMIN,
     "Change the external fixed IPs of a router's gateway", [("PUT", f"{ROUTERS}/{{id}}")]),
    ("delete_router", _MEMBER, "Delete a router", [("DELETE", f"{ROUTERS}/{{id}}")]),
    ("add_router_interface", _MEMBER, "Add an interface to a router",
     [("PUT", f"{ROUTERS}/{{id}}/add_router_interface")]),
    ("remove_router_interface", _MEMBER, "Remove an interface from a router",
     [("PUT", f"{ROUTERS}/{{id}}/remove_router_interface")]),
    ("create_floatingip", _MEMBER, "Create a floating IP", [("POST", FIPS)]),
    ("create_floatingip:floating_ip_address", _ADMIN, "Create a floating IP with a given address",
     [("POST", FIPS)]),
    ("get_floatingip", _READER, "Get a floating IP", [("GET", FIPS), ("GET", f"{FIPS}/{{id}}")]),
    ("update_floatingip", _MEMBER, "Update (associate, disassociate) a floating IP", [("PUT", f"{FIPS}/{{id}}")]),
    ("delete_floatingip", _MEMBER, "Delete a floating IP", [("DELETE", f"{FIPS}/{{id}}")]),
    ("get_network_ip_availability", _ADMIN, "Get the IP availability of networks",
     [("GET", "/v2.0/network-ip-availabilities"), ("GET", "/v2.0/network-ip-availabilities/{network_id}")]),
    ("get_quota", _READER, "Get a project's network quotas (limits, defaults, usage)",
     [("GET", "/v2.0/quotas"), ("GET", "/v2.0/quotas/{project_id}"), ("GET", "/v2.0/quotas/{project_id}/default"),
      ("GET", "/v2.0/quotas/{project_id}/details")]),
    ("update_quota", _ADMIN, "Set a project's network quotas", [("PUT", "/v2.0/quotas/{project_id}")]),
    ("delete_quota", _ADMIN, "Reset a project's network quotas to the defaults",
     [("DELETE", "/v2.0/quotas/{project_id}")]),
]:
    register(_name, _check, _desc, _ops)
