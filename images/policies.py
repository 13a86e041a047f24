"""Glance's policy rules for what the images app checks (names and defaults as Glance's), registered
in the one registry (``cloudcore.core.policy``)."""
from cloudcore.core.policy import register

TASKS_API_ACCESS = "tasks_api_access"

register(TASKS_API_ACCESS, "admin",
         "Use the tasks API (create, list and show tasks). A task's import makes the cloud read the URL "
         "it names: cloud admins only by default, as in Glance.",
         [("POST", "/v2/tasks"), ("GET", "/v2/tasks"), ("GET", "/v2/tasks/{task_id}")])


# --- metadata definitions (/v2/metadefs): Glance's rule names and secure-RBAC defaults. Reading is
# for everyone on a public namespace and for its owner's project on a private one (a namespace the
# actor may not read is a 404, never a 403); every write is for cloud admins.

_NS = "/v2/metadefs/namespaces/{namespace_name}"
#: what Glance's ADMIN_OR_PROJECT_READER_GET_NAMESPACE allows: admins, and readers of the namespace's
#: project or of any project when it is public
_READ_NAMESPACE = "project_reader_or_admin_or_public"

METADEF_RULES: dict[str, tuple[str, str, list[tuple[str, str]]]] = {
    "get_metadef_namespace": (_READ_NAMESPACE, "Get a namespace.", [("GET", _NS)]),
    "get_metadef_namespaces": ("project_reader_or_admin", "List the namespaces the actor may read.",
                               [("GET", "/v2/metadefs/namespaces")]),
    "modify_metadef_namespace": ("admin", "Change a namespace.", [("PUT", _NS)]),
    "add_metadef_namespace": ("admin", "Create a namespace.", [("POST", "/v2/metadefs/namespaces")]),
    "delete_metadef_namespace": ("admin", "Delete a namespace, or all the objects or properties of one.",
                                 [("DELETE", _NS), ("DELETE", f"{_NS}/objects"), ("DELETE", f"{_NS}/properties")]),
    "get_metadef_object": (_READ_NAMESPACE, "Get an object of a namespace.",
                           [("GET", f"{_NS}/objects/{{object_name}}")]),
    "get_metadef_objects": (_READ_NAMESPACE, "List the objects of a namespace.", [("GET", f"{_NS}/objects")]),
    "modify_metadef_object": ("admin", "Change an object of a namespace.", [("PUT", f"{_NS}/objects/{{object_name}}")]),
    "add_metadef_object": ("admin", "Create an object in a namespace.", [("POST", f"{_NS}/objects")]),
    "delete_metadef_object": ("admin", "Delete an object of a namespace.",
                              [("DELETE", f"{_NS}/objects/{{object_name}}")]),
    "list_metadef_resource_types": ("project_reader_or_admin", "List the resource types.",
                                    [("GET", "/v2/metadefs/resource_types")]),
    "get_metadef_resource_type": (_READ_NAMESPACE, "List the resource types a namespace is associated with.",
                                  [("GET", f"{_NS}/resource_types")]),
    "add_metadef_resource_type_association": ("admin", "Associate a namespace with a resource type.",
                                              [("POST", f"{_NS}/resource_types")]),
    "remove_metadef_resource_type_association": ("admin", "Dissociate a namespace from a resource type.",
                                                 [("DELETE", f"{_NS}/resource_types/{{name}}")]),
    "get_metadef_property": (_READ_NAMESPACE, "Get a property definition of a namespace.",
                             [("GET", f"{_NS}/properties/{{property_name}}")]),
    "get_metadef_properties": (_READ_NAMESPACE, "List the property definitions of a namespace.",
                               [("GET", f"{_NS}/properties")]),
    "modify_metadef_property": ("admin", "Change a property definition of a namespace.",
                                [("PUT", f"{_NS}/properties/{{property_name}}")]),
    "add_metadef_property": ("admin", "Create a property definition in a namespace.", [("POST", f"{_NS}/properties")]),
    "remove_metadef_property": ("admin", "Delete a property definition of a namespace.",
                                [("DELETE", f"{_NS}/properties/{{property_name}}")]),
    "get_metadef_tag": (_READ_NAMESPACE, "Get a tag definition of a namespace.", [("GET", f"{_NS}/tags/{{tag_name}}")]),
    "get_metadef_tags": (_READ_NAMESPACE, "List the tag definitions of a namespace.", [("GET", f"{_NS}/tags")]),
    "modify_metadef_tag": ("admin", "Rename a tag definition of a namespace.", [("PUT", f"{_NS}/tags/{{tag_name}}")]),
    "add_metadef_tag": ("admin", "Create a tag definition in a namespace.", [("POST", f"{_NS}/tags/{{tag_name}}")]),
    "add_metadef_tags": ("admin", "Create (or replace) several tag definitions of a namespace.",
                         [("POST", f"{_NS}/tags")]),
    "delete_metadef_tag": ("admin", "Delete a tag definition of a namespace.",
                           [("DELETE", f"{_NS}/tags/{{tag_name}}")]),
    "delete_metadef_tags": ("admin", "Delete every tag definition of a namespace.", [("DELETE", f"{_NS}/tags")]),
}

for _name, (_check, _description, _operations) in METADEF_RULES.items():
    register(_name, _check, _description, _operations)
