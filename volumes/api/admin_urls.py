"""Cinder's admin routes beside the volumes: QoS specs, block storage services, back-end pools and
capabilities, and user messages; ``urls.py`` mounts them with its project-id prefix."""
from django.urls import URLPattern, re_path

from . import messages, qos, services


def admin_urlpatterns(prefix: str) -> list[URLPattern]:
    q = prefix + r"qos-specs"
    return [
        re_path(q + r"/?$", qos.QosSpecsView.as_view()),
        re_path(q + r"/(?P<specs_id>[^/]+)/delete_keys/?$", qos.QosDeleteKeysView.as_view()),
        re_path(q + r"/(?P<specs_id>[^/]+)/associations/?$", qos.QosAssociationsView.as_view()),
        *[re_path(q + rf"/(?P<specs_id>[^/]+)/{op}/?$", qos.QosAssociateView.as_view(operation=op))
          for op in ("associate", "disassociate", "disassociate_all")],
        re_path(q + r"/(?P<specs_id>[^/]+)/?$", qos.QosSpecView.as_view()),
        re_path(prefix + r"os-services/?$", services.ServicesView.as_view()),
        re_path(prefix + r"os-services/(?P<action>[^/]+)/?$", services.ServiceActionView.as_view()),
        re_path(prefix + r"scheduler-stats/get_pools/?$", services.PoolsView.as_view()),
        re_path(prefix + r"capabilities/(?P<host>[^/]+)/?$", services.CapabilitiesView.as_view()),
        re_path(prefix + r"messages/?$", messages.MessagesView.as_view()),
        re_path(prefix + r"messages/(?P<message_id>[^/]+)/?$", messages.MessageView.as_view()),
    ]
