"""Glance v2 routes, mounted at ``^image/?`` (see cloudcore/urls.py)."""
from django.urls import path, re_path

from . import metadefs, views

_NS = "v2/metadefs/namespaces/<str:namespace>"

urlpatterns = [
    re_path(r"^$", views.ImageVersionsView.as_view()),
    re_path(r"^versions/?$", views.ImageVersionsView.as_view()),
    re_path(r"^v2/?$", views.ImageVersionsView.as_view()),
    path("v2/images", views.ImagesView.as_view()),
    path("v2/images/<str:image_id>", views.ImageView.as_view()),
    path("v2/images/<str:image_id>/file", views.ImageFileView.as_view()),
    path("v2/images/<str:image_id>/stage", views.ImageStageView.as_view()),
    path("v2/images/<str:image_id>/import", views.ImageImportView.as_view()),
    path("v2/images/<str:image_id>/tasks", views.ImageTasksView.as_view()),
    re_path(r"^v2/images/(?P<image_id>[^/]+)/actions/(?P<action>deactivate|reactivate)$",
            views.ImageActionView.as_view()),
    path("v2/images/<str:image_id>/members", views.ImageMembersView.as_view()),
    path("v2/images/<str:image_id>/members/<str:member_id>", views.ImageMemberView.as_view()),
    path("v2/images/<str:image_id>/tags/<str:tag>", views.ImageTagView.as_view()),
    path("v2/tasks", views.TasksView.as_view()),
    path("v2/tasks/<str:task_id>", views.TaskView.as_view()),
    path("v2/info/import", views.ImportInfoView.as_view()),
    re_path(r"^v2/schemas/(?P<kind>image|images|member|members|task|tasks|metadefs/(?:namespaces?|objects?|"
            r"property|properties|tags?|resource_types?))$", views.ImageSchemaView.as_view()),
    path("v2/metadefs/namespaces", metadefs.MetadefNamespacesView.as_view()),
    path(_NS, metadefs.MetadefNamespaceView.as_view()),
    path(f"{_NS}/objects", metadefs.MetadefObjectsView.as_view()),
    path(f"{_NS}/objects/<str:object_name>", metadefs.MetadefObjectView.as_view()),
    path(f"{_NS}/properties", metadefs.MetadefPropertiesView.as_view()),
    path(f"{_NS}/properties/<str:property_name>", metadefs.MetadefPropertyView.as_view()),
    path(f"{_NS}/tags", metadefs.MetadefTagsView.as_view()),
    path(f"{_NS}/tags/<str:tag_name>", metadefs.MetadefTagView.as_view()),
    path(f"{_NS}/resource_types", metadefs.MetadefAssociationsView.as_view()),
    path(f"{_NS}/resource_types/<str:resource_type>", metadefs.MetadefAssociationView.as_view()),
    path("v2/metadefs/resource_types", metadefs.MetadefResourceTypesView.as_view()),
]
