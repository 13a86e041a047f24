"""Glance v2 routes, mounted at ``^image/?`` (see cloudcore/urls.py)."""
from django.urls import path, re_path

from . import views

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
    re_path(r"^v2/schemas/(?P<kind>image|images|member|members|task|tasks)$", views.ImageSchemaView.as_view()),
]
