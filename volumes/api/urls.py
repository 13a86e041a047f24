"""Cinder v3 routes, mounted at ``^volume/?``; every v3 path also answers with the project id in
the URL (``/volume/v3/<project_id>/...``), as clients build it from the catalog."""
from django.urls import re_path

from . import backups, quotas, snapshots, transfers, types, views
from .admin_urls import admin_urlpatterns

P = r"^v3/(?:[0-9a-zA-Z_-]{1,64}/)??"

urlpatterns = [
    re_path(r"^$", views.VolumeVersionsView.as_view()),
    re_path(r"^v3/?$", views.VolumeVersionsView.as_view()),
    # no trailing slash: "volumes/" names no volume (404, as Cinder answers it)
    re_path(P + r"volumes$", views.VolumesView.as_view()),
    re_path(P + r"volumes/detail/?$", views.VolumesDetailView.as_view()),
    re_path(P + r"volumes/summary/?$", views.VolumeSummaryView.as_view()),
    re_path(P + r"volumes/(?P<volume_id>[^/]+)/action/?$", views.VolumeActionView.as_view()),
    re_path(P + r"volumes/(?P<volume_id>[^/]+)/metadata/?$", views.VolumeMetadataView.as_view()),
    re_path(P + r"volumes/(?P<volume_id>[^/]+)/metadata/(?P<key>[^/]+)/?$", views.VolumeMetadataItemView.as_view()),
    re_path(P + r"volumes/(?P<volume_id>[^/]+)/?$", views.VolumeView.as_view()),
    re_path(P + r"snapshots/?$", snapshots.SnapshotsView.as_view()),
    re_path(P + r"snapshots/detail/?$", snapshots.SnapshotsDetailView.as_view()),
    re_path(P + r"snapshots/(?P<snapshot_id>[^/]+)/action/?$", snapshots.SnapshotActionView.as_view()),
    re_path(P + r"snapshots/(?P<snapshot_id>[^/]+)/metadata/?$", snapshots.SnapshotMetadataView.as_view()),
    re_path(P + r"snapshots/(?P<snapshot_id>[^/]+)/metadata/(?P<key>[^/]+)/?$",
            snapshots.SnapshotMetadataItemView.as_view()),
    re_path(P + r"snapshots/(?P<snapshot_id>[^/]+)/?$", snapshots.SnapshotView.as_view()),
    re_path(P + r"backups/?$", backups.BackupsView.as_view()),
    re_path(P + r"backups/detail/?$", backups.BackupsDetailView.as_view()),
    re_path(P + r"backups/(?P<backup_id>[^/]+)/restore/?$", backups.BackupRestoreView.as_view()),
    re_path(P + r"backups/(?P<backup_id>[^/]+)/action/?$", backups.BackupActionView.as_view()),
    re_path(P + r"backups/(?P<backup_id>[^/]+)/?$", backups.BackupView.as_view()),
    *[route for path in ("os-volume-transfer", "volume-transfers") for route in (
        re_path(P + path + r"/?$", transfers.TransfersView.as_view(path=path)),
        re_path(P + path + r"/detail/?$", transfers.TransfersDetailView.as_view(path=path)),
        re_path(P + path + r"/(?P<transfer_id>[^/]+)/accept/?$", transfers.TransferAcceptView.as_view(path=path)),
        re_path(P + path + r"/(?P<transfer_id>[^/]+)/?$", transfers.TransferView.as_view(path=path)))],
    re_path(P + r"os-hosts/?$", backups.HostsView.as_view()),
    re_path(P + r"os-hosts/(?P<host_name>[^/]+)/?$", backups.HostView.as_view()),
    re_path(P + r"attachments/?$", views.AttachmentsView.as_view()),
    re_path(P + r"attachments/(?P<attachment_id>[^/]+)/action/?$", views.AttachmentActionView.as_view()),
    re_path(P + r"attachments/(?P<attachment_id>[^/]+)/?$", views.AttachmentView.as_view()),
    re_path(P + r"types/?$", types.TypesView.as_view()),
    re_path(P + r"types/(?P<type_id>[^/]+)/extra_specs/?$", types.TypeExtraSpecsView.as_view()),
    re_path(P + r"types/(?P<type_id>[^/]+)/extra_specs/(?P<key>[^/]+)/?$", types.TypeExtraSpecView.as_view()),
    re_path(P + r"types/(?P<type_id>[^/]+)/action/?$", types.TypeActionView.as_view()),
    re_path(P + r"types/(?P<type_id>[^/]+)/os-volume-type-access/?$", types.TypeAccessView.as_view()),
    re_path(P + r"os-availability-zone/?$", views.AvailabilityZonesView.as_view()),
    re_path(P + r"extensions/?$", views.ExtensionsView.as_view()),
    re_path(P + r"limits/?$", views.LimitsView.as_view()),
    re_path(P + r"os-quota-sets/(?P<target_project>[^/]+)/defaults/?$", quotas.QuotaDefaultsView.as_view()),
    re_path(P + r"os-quota-sets/(?P<target_project>[^/]+)/?$", quotas.QuotaSetView.as_view()),
    re_path(P + r"os-quota-class-sets/(?P<class_name>[^/]+)/?$", quotas.QuotaClassSetView.as_view()),
    re_path(P + r"types/(?P<type_id>[^/]+)/?$", types.TypeView.as_view()),
    *admin_urlpatterns(P),
]
