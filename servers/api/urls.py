"""URL routes of the servers API (included by cloudcore/urls.py)."""
from django.urls import path  # noqa: F401

urlpatterns: list = []

# --- flavors, keypairs, limits (servers/api/{flavors,keypairs,limits}.py) ---------------------
from . import flavors as _flavors  # noqa: E402
from . import keypairs as _keypairs  # noqa: E402
from . import limits as _limits  # noqa: E402

urlpatterns += [
    path("flavors", _flavors.FlavorsView.as_view(), name="compute-flavors"),
    path("flavors/detail", _flavors.FlavorsDetailView.as_view(), name="compute-flavors-detail"),
    path("flavors/<str:flavor_id>", _flavors.FlavorView.as_view(), name="compute-flavor"),
    path("flavors/<str:flavor_id>/action", _flavors.FlavorActionView.as_view(), name="compute-flavor-action"),
    path("flavors/<str:flavor_id>/os-extra_specs", _flavors.FlavorExtraSpecsView.as_view(),
         name="compute-flavor-extra-specs"),
    path("flavors/<str:flavor_id>/os-extra_specs/<str:key>", _flavors.FlavorExtraSpecView.as_view(),
         name="compute-flavor-extra-spec"),
    path("flavors/<str:flavor_id>/os-flavor-access", _flavors.FlavorAccessView.as_view(),
         name="compute-flavor-access"),
    path("os-keypairs", _keypairs.KeypairsView.as_view(), name="compute-keypairs"),
    path("os-keypairs/<str:keypair_name>", _keypairs.KeypairView.as_view(), name="compute-keypair"),
    path("limits", _limits.LimitsView.as_view(), name="compute-limits"),
]

# --- servers, metadata, tags, instance actions (servers/api/{servers,instance_actions}.py) ---------
from . import instance_actions as _instance_actions  # noqa: E402
from . import servers as _servers  # noqa: E402

urlpatterns += [
    path("servers", _servers.ServersView.as_view(), name="compute-servers"),
    path("servers/detail", _servers.ServersDetailView.as_view(), name="compute-servers-detail"),
    path("servers/<str:server_id>", _servers.ServerView.as_view(), name="compute-server"),
    path("servers/<str:server_id>/metadata", _servers.ServerMetadataView.as_view(), name="compute-server-metadata"),
    path("servers/<str:server_id>/metadata/<str:key>", _servers.ServerMetadataItemView.as_view(),
         name="compute-server-metadata-item"),
    path("servers/<str:server_id>/tags", _servers.ServerTagsView.as_view(), name="compute-server-tags"),
    path("servers/<str:server_id>/tags/<str:tag>", _servers.ServerTagView.as_view(), name="compute-server-tag"),
    path("servers/<str:server_id>/os-instance-actions", _instance_actions.InstanceActionsView.as_view(),
         name="compute-instance-actions"),
    path("servers/<str:server_id>/os-instance-actions/<str:request_id>",
         _instance_actions.InstanceActionView.as_view(), name="compute-instance-action"),
]

# --- server actions (servers/api/actions.py) -------------------------------------------------------
from . import actions as _actions  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/action", _actions.ServerActionView.as_view(), name="compute-server-action"),
]

# --- migrations (servers/api/migrations.py) ---------------------------------------------------------
from . import migrations as _migrations  # noqa: E402

urlpatterns += [
    path("os-migrations", _migrations.MigrationsView.as_view(), name="compute-migrations"),
    path("servers/<str:server_id>/migrations", _migrations.ServerMigrationsView.as_view(),
         name="compute-server-migrations"),
    path("servers/<str:server_id>/migrations/<str:migration_id>", _migrations.ServerMigrationView.as_view(),
         name="compute-server-migration"),
    path("servers/<str:server_id>/migrations/<str:migration_id>/action",
         _migrations.ServerMigrationActionView.as_view(), name="compute-server-migration-action"),
]

# --- os-server-external-events (servers/api/external_events.py, issue 7) ------------------------
from . import external_events as _external_events  # noqa: E402

urlpatterns += [
    path("os-server-external-events", _external_events.ServerExternalEventsView.as_view(),
         name="compute-server-external-events"),
]

# --- os-volume_attachments (servers/api/volume_attachments.py, issue 7) -------------------------
from . import volume_attachments as _volume_attachments  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/os-volume_attachments", _volume_attachments.VolumeAttachmentsView.as_view(),
         name="compute-volume-attachments"),
    path("servers/<str:server_id>/os-volume_attachments/<str:volume_id>",
         _volume_attachments.VolumeAttachmentView.as_view(), name="compute-volume-attachment"),
]

# --- os-interface (servers/api/interfaces.py) -----------------------------------------------------
from . import interfaces as _interfaces  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/os-interface", _interfaces.InterfacesView.as_view(), name="compute-interfaces"),
    path("servers/<str:server_id>/os-interface/<str:port_id>", _interfaces.InterfaceView.as_view(),
         name="compute-interface"),
]

# --- ips (servers/api/ips.py) ---------------------------------------------------------------------
from . import ips as _ips  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/ips", _ips.ServerIpsView.as_view(), name="compute-server-ips"),
    path("servers/<str:server_id>/ips/<str:network_label>", _ips.ServerIpsNetworkView.as_view(),
         name="compute-server-ips-network"),
]

# --- the image proxy, up to 2.35 (servers/api/images.py) ----------------------------------------
from . import images as _images  # noqa: E402

urlpatterns += [
    path("images", _images.ImagesView.as_view(), name="compute-images"),
    path("images/detail", _images.ImagesDetailView.as_view(), name="compute-images-detail"),
    path("images/<str:image_id>", _images.ImageView.as_view(), name="compute-image"),
    path("images/<str:image_id>/metadata", _images.ImageMetadataView.as_view(), name="compute-image-metadata"),
    path("images/<str:image_id>/metadata/<str:key>", _images.ImageMetadataItemView.as_view(),
         name="compute-image-metadata-item"),
]

# --- the proxies up to 2.35 (volumes, networks, floating IPs) and a server's security groups
# (servers/api/{volumes_proxy,networks_proxy,floating_ips,security_groups}.py; the actions are in actions.py) --
from . import floating_ips as _floating_ips  # noqa: E402
from . import networks_proxy as _networks_proxy  # noqa: E402
from . import security_groups as _security_groups  # noqa: E402
from . import volumes_proxy as _volumes_proxy  # noqa: E402

urlpatterns += [
    path("os-volumes", _volumes_proxy.VolumesView.as_view(), name="compute-volumes"),
    path("os-volumes/detail", _volumes_proxy.VolumesDetailView.as_view(), name="compute-volumes-detail"),
    path("os-volumes/<str:volume_id>", _volumes_proxy.VolumeView.as_view(), name="compute-volume"),
    path("os-snapshots", _volumes_proxy.SnapshotsView.as_view(), name="compute-snapshots"),
    path("os-snapshots/detail", _volumes_proxy.SnapshotsDetailView.as_view(), name="compute-snapshots-detail"),
    path("os-snapshots/<str:snapshot_id>", _volumes_proxy.SnapshotView.as_view(), name="compute-snapshot"),
    path("os-networks", _networks_proxy.NetworksView.as_view(), name="compute-networks"),
    path("os-networks/<str:network_id>", _networks_proxy.NetworkView.as_view(), name="compute-network"),
    path("os-networks/<str:network_id>/action", _networks_proxy.NetworkView.as_view()),
    path("os-tenant-networks", _networks_proxy.TenantNetworksView.as_view(), name="compute-tenant-networks"),
    path("os-tenant-networks/<str:network_id>", _networks_proxy.TenantNetworkView.as_view(),
         name="compute-tenant-network"),
    path("os-floating-ips", _floating_ips.FloatingIPsView.as_view(), name="compute-floating-ips"),
    path("os-floating-ips/<str:fip_id>", _floating_ips.FloatingIPView.as_view(), name="compute-floating-ip"),
    path("os-floating-ip-pools", _floating_ips.FloatingIPPoolsView.as_view(), name="compute-floating-ip-pools"),
    path("os-security-groups", _security_groups.SecurityGroupsView.as_view(), name="compute-security-groups"),
    path("os-security-groups/<str:group_id>", _security_groups.SecurityGroupView.as_view(),
         name="compute-security-group"),
    path("os-security-group-rules", _security_groups.SecurityGroupRulesView.as_view(),
         name="compute-security-group-rules"),
    path("os-security-group-rules/<str:rule_id>", _security_groups.SecurityGroupRuleView.as_view(),
         name="compute-security-group-rule"),
    path("servers/<str:server_id>/os-security-groups", _security_groups.ServerSecurityGroupsView.as_view(),
         name="compute-server-security-groups"),
]

# --- quota sets and quota classes (servers/api/quotas.py) ------------------------------------
from . import quotas as _quotas  # noqa: E402

urlpatterns += [
    path("os-quota-sets/<str:project_id>", _quotas.QuotaSetView.as_view(), name="compute-quota-set"),
    path("os-quota-sets/<str:project_id>/defaults", _quotas.QuotaSetDefaultsView.as_view(),
         name="compute-quota-set-defaults"),
    path("os-quota-sets/<str:project_id>/detail", _quotas.QuotaSetDetailView.as_view(),
         name="compute-quota-set-detail"),
    path("os-quota-class-sets/<str:class_name>", _quotas.QuotaClassSetView.as_view(),
         name="compute-quota-class-set"),
]

# --- server groups (servers/api/server_groups.py) -----------------------------------------------
from . import server_groups as _server_groups  # noqa: E402

urlpatterns += [
    path("os-server-groups", _server_groups.ServerGroupsView.as_view(), name="compute-server-groups"),
    path("os-server-groups/<str:group_id>", _server_groups.ServerGroupView.as_view(), name="compute-server-group"),
]

# --- os-simple-tenant-usage (servers/api/usage.py, issue 18) --------------------------------------
from . import usage as _usage  # noqa: E402

urlpatterns += [
    path("os-simple-tenant-usage", _usage.TenantUsagesView.as_view(), name="compute-tenant-usages"),
    path("os-simple-tenant-usage/<str:tenant_id>", _usage.TenantUsageView.as_view(), name="compute-tenant-usage"),
]

# --- server password, topology, extensions (servers/api/server_info.py, issue 18) ----------------
from . import server_info as _server_info  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/os-server-password", _server_info.ServerPasswordView.as_view(),
         name="compute-server-password"),
    path("servers/<str:server_id>/topology", _server_info.ServerTopologyView.as_view(), name="compute-server-topology"),
    path("extensions", _server_info.ExtensionsView.as_view(), name="compute-extensions"),
    path("extensions/<str:alias>", _server_info.ExtensionView.as_view(), name="compute-extension"),
]

# --- server diagnostics (servers/api/diagnostics.py, issue 18) ------------------------------------
from . import diagnostics as _diagnostics  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/diagnostics", _diagnostics.ServerDiagnosticsView.as_view(),
         name="compute-server-diagnostics"),
]

# --- remote consoles and console tokens (servers/api/consoles.py, issue 18) ---------------------
from . import consoles as _consoles  # noqa: E402

urlpatterns += [
    path("servers/<str:server_id>/remote-consoles", _consoles.RemoteConsolesView.as_view(),
         name="compute-server-remote-consoles"),
    path("os-console-auth-tokens/<str:console_token>", _consoles.ConsoleAuthTokenView.as_view(),
         name="compute-console-auth-token"),
]
