"""Cinder's policy rules (names as Cinder's), registered in the one registry."""
from cloudcore.core.policy import register

_OWNER = "project_member_or_admin"
_READER = "project_reader_or_admin"
for _name, _check, _desc, _ops in [
    ("volume:create", _OWNER, "Create a volume.", [("POST", "/volumes")]),
    ("volume:get_all", _READER, "List volumes.", [("GET", "/volumes"), ("GET", "/volumes/detail")]),
    ("volume:get", _READER, "Show a volume.", [("GET", "/volumes/{volume_id}")]),
    ("volume_extension:volume_tenant_attribute", _READER,
     "Add 'os-vol-tenant-attr:tenant_id' to volume show and list detail.",
     [("GET", "/volumes/{volume_id}"), ("GET", "/volumes/detail")]),
    ("volume:update", _OWNER, "Update a volume.", [("PUT", "/volumes/{volume_id}")]),
    ("volume:delete", _OWNER, "Delete a volume.", [("DELETE", "/volumes/{volume_id}")]),
    ("volume:extend", _OWNER, "Extend a volume.", [("POST", "/volumes/{volume_id}/action (os-extend)")]),
    ("volume:reimage", _OWNER, "Reimage a volume (destroys its data).",
     [("POST", "/volumes/{volume_id}/action (os-reimage)")]),
    ("volume_extension:volume_actions:reserve", _OWNER, "Reserve a volume (legacy attach).",
     [("POST", "/volumes/{volume_id}/action (os-reserve)")]),
    ("volume_extension:volume_actions:unreserve", _OWNER, "Unreserve a volume (legacy attach).",
     [("POST", "/volumes/{volume_id}/action (os-unreserve)")]),
    ("volume:update_readonly_flag", _OWNER, "Set a volume's read-only flag.",
     [("POST", "/volumes/{volume_id}/action (os-update_readonly_flag)")]),
    ("volume:upload_image", _OWNER, "Upload a volume's data to a new image.",
     [("POST", "/volumes/{volume_id}/action (os-volume_upload_image)")]),
    ("volume:get_volume_metadata", _READER, "Show a volume's metadata.",
     [("GET", "/volumes/{volume_id}/metadata"), ("GET", "/volumes/{volume_id}/metadata/{key}")]),
    ("volume:create_volume_metadata", _OWNER, "Add metadata to a volume.",
     [("POST", "/volumes/{volume_id}/metadata")]),
    ("volume:update_volume_metadata", _OWNER, "Replace a volume's metadata or one item of it.",
     [("PUT", "/volumes/{volume_id}/metadata"), ("PUT", "/volumes/{volume_id}/metadata/{key}")]),
    ("volume:delete_volume_metadata", _OWNER, "Delete a volume's metadata item.",
     [("DELETE", "/volumes/{volume_id}/metadata/{key}")]),
    ("volume:attachment_create", _OWNER, "Create an attachment.", [("POST", "/attachments")]),
    ("volume:attachment_update", _OWNER, "Update an attachment.", [("PUT", "/attachments/{attachment_id}")]),
    ("volume:attachment_delete", _OWNER, "Delete an attachment.", [("DELETE", "/attachments/{attachment_id}")]),
    ("volume:attachment_complete", _OWNER, "Complete an attachment.",
     [("POST", "/attachments/{attachment_id}/action (os-complete)")]),
    ("limits_extension:used_limits", _READER, "Show the project's limits with usage.", [("GET", "/limits")]),
]:
    register(_name, _check, _desc, _ops)

for _name, _check, _desc, _ops in [
    ("volume:create_snapshot", _OWNER, "Create a snapshot.", [("POST", "/snapshots")]),
    ("volume:get_all_snapshots", _READER, "List snapshots.", [("GET", "/snapshots"), ("GET", "/snapshots/detail")]),
    ("volume:get_snapshot", _READER, "Show a snapshot.", [("GET", "/snapshots/{snapshot_id}")]),
    ("volume:update_snapshot", _OWNER, "Update a snapshot.", [("PUT", "/snapshots/{snapshot_id}")]),
    ("volume:delete_snapshot", _OWNER, "Delete a snapshot.", [("DELETE", "/snapshots/{snapshot_id}")]),
    ("volume:get_snapshot_metadata", _READER, "Show a snapshot's metadata.",
     [("GET", "/snapshots/{snapshot_id}/metadata")]),
    ("volume:update_snapshot_metadata", _OWNER, "Set a snapshot's metadata.",
     [("POST", "/snapshots/{snapshot_id}/metadata"), ("PUT", "/snapshots/{snapshot_id}/metadata")]),
    ("volume:delete_snapshot_metadata", _OWNER, "Delete a snapshot's metadata item.",
     [("DELETE", "/snapshots/{snapshot_id}/metadata/{key}")]),
]:
    register(_name, _check, _desc, _ops)

_T = "/types/{volume_type_id}"
for _name, _check, _desc, _ops in [
    ("volume_extension:type_create", "admin", "Create a volume type.", [("POST", "/types")]),
    ("volume_extension:type_update", "admin", "Update a volume type.", [("PUT", _T)]),
    ("volume_extension:type_delete", "admin", "Delete a volume type.", [("DELETE", _T)]),
    ("volume_extension:type_get", _READER, "Show a volume type.", [("GET", _T)]),
    ("volume_extension:type_get_all", _READER, "List volume types.", [("GET", "/types")]),
    ("volume_extension:access_types_extra_specs", _READER,
     "Add 'extra_specs' to volume type responses.", [("GET", "/types"), ("GET", _T)]),
    ("volume_extension:access_types_qos_specs_id", "admin",
     "Add 'qos_specs_id' to volume type responses.", [("GET", "/types"), ("GET", _T)]),
    ("volume_extension:types_extra_specs:index", _READER, "List a volume type's extra specs.",
     [("GET", f"{_T}/extra_specs")]),
    ("volume_extension:types_extra_specs:show", _READER, "Show one extra spec of a volume type.",
     [("GET", f"{_T}/extra_specs/{{extra_spec_key}}")]),
    ("volume_extension:types_extra_specs:create", "admin", "Add extra specs to a volume type.",
     [("POST", f"{_T}/extra_specs")]),
    ("volume_extension:types_extra_specs:update", "admin", "Update one extra spec of a volume type.",
     [("PUT", f"{_T}/extra_specs/{{extra_spec_key}}")]),
    ("volume_extension:types_extra_specs:delete", "admin", "Delete one extra spec of a volume type.",
     [("DELETE", f"{_T}/extra_specs/{{extra_spec_key}}")]),
    ("volume_extension:types_extra_specs:read_sensitive", "admin",
     "See the extra specs that are not user-visible (only 'multiattach', 'replication_enabled' and "
     "'RESKEY:availability_zones' are).", [("GET", "/types"), ("GET", _T), ("GET", f"{_T}/extra_specs")]),
    ("volume_extension:volume_type_access", _READER,
     "Add 'os-volume-type-access:is_public' to volume type responses.", [("GET", "/types"), ("GET", _T)]),
    ("volume_extension:volume_type_access:addProjectAccess", "admin", "Give a project access to a private type.",
     [("POST", f"{_T}/action (addProjectAccess)")]),
    ("volume_extension:volume_type_access:removeProjectAccess", "admin",
     "Take a project's access to a private type away.", [("POST", f"{_T}/action (removeProjectAccess)")]),
    ("volume_extension:volume_type_access:get_all_for_type", "admin", "List the projects with access to a type.",
     [("GET", f"{_T}/os-volume-type-access")]),
]:
    register(_name, _check, _desc, _ops)

for _name, _check, _desc, _ops in [
    ("volume_extension:quotas:show", _READER, "Show a project's block storage quotas (with usage) and the defaults.",
     [("GET", "/os-quota-sets/{project_id}"), ("GET", "/os-quota-sets/{project_id}/defaults")]),
    ("volume_extension:quotas:update", "admin", "Update a project's block storage quotas.",
     [("PUT", "/os-quota-sets/{project_id}")]),
    ("volume_extension:quota_classes", "admin", "Show and update a quota class (the 'default' class sets the "
     "defaults).", [("GET", "/os-quota-class-sets/{quota_class}"), ("PUT", "/os-quota-class-sets/{quota_class}")]),
    ("volume_extension:quotas:delete", "admin", "Reset a project's block storage quotas to the defaults.",
     [("DELETE", "/os-quota-sets/{project_id}")]),
]:
    register(_name, _check, _desc, _ops)

_V = "/volumes/{volume_id}/action"
_S = "/snapshots/{snapshot_id}/action"
for _name, _check, _desc, _ops in [
    ("volume_extension:volume_admin_actions:reset_status", "admin",
     "Reset a volume's status, attach status or migration status.", [("POST", f"{_V} (os-reset_status)")]),
    ("volume_extension:volume_admin_actions:force_delete", "admin", "Delete a volume whatever its status.",
     [("POST", f"{_V} (os-force_delete)")]),
    ("volume_extension:volume_admin_actions:force_detach", "admin", "Remove a volume's attachment by force.",
     [("POST", f"{_V} (os-force_detach)")]),
    ("volume_extension:volume_actions:attach", _OWNER, "Attach a volume (legacy, without Nova).",
     [("POST", f"{_V} (os-attach)")]),
    ("volume_extension:volume_actions:detach", _OWNER, "Detach a volume (legacy, without Nova).",
     [("POST", f"{_V} (os-detach)")]),
    ("volume_extension:volume_image_metadata:show", _READER, "Show a volume's image metadata.",
     [("POST", f"{_V} (os-show_image_metadata)")]),
    ("volume_extension:volume_image_metadata:set", _OWNER, "Set a volume's image metadata.",
     [("POST", f"{_V} (os-set_image_metadata)")]),
    ("volume_extension:volume_image_metadata:remove", _OWNER, "Remove a key of a volume's image metadata.",
     [("POST", f"{_V} (os-unset_image_metadata)")]),
    ("volume_extension:snapshot_admin_actions:reset_status", "admin", "Reset a snapshot's status.",
     [("POST", f"{_S} (os-reset_status)")]),
    ("volume_extension:snapshot_admin_actions:force_delete", "admin", "Delete a snapshot whatever its status.",
     [("POST", f"{_S} (os-force_delete)")]),
    ("snapshot_extension:snapshot_actions:update_snapshot_status", _OWNER,
     "Update a creating or deleting snapshot's status and progress.", [("POST", f"{_S} (os-update_snapshot_status)")]),
]:
    register(_name, _check, _desc, _ops)

_X = "/volume-transfers"
for _name, _check, _desc, _ops in [
    ("volume:create_transfer", _OWNER, "Offer a volume to another project.", [("POST", _X)]),
    ("volume:get_transfer", _READER, "Show a volume transfer.", [("GET", f"{_X}/{{transfer_id}}")]),
    ("volume:get_all_transfers", _READER, "List volume transfers.", [("GET", _X), ("GET", f"{_X}/detail")]),
    ("volume:delete_transfer", _OWNER, "Cancel a volume transfer.", [("DELETE", f"{_X}/{{transfer_id}}")]),
    ("volume:accept_transfer", _OWNER, "Accept a volume transfer (with its auth key).",
     [("POST", f"{_X}/{{transfer_id}}/accept")]),
]:
    register(_name, _check, _desc, _ops)

_B = "/backups/{backup_id}"
for _name, _check, _desc, _ops in [
    ("backup:create", _OWNER, "Create a backup of a volume.", [("POST", "/backups")]),
    ("backup:get_all", _READER, "List backups.", [("GET", "/backups"), ("GET", "/backups/detail")]),
    ("backup:get", _READER, "Show a backup.", [("GET", _B)]),
    ("backup:delete", _OWNER, "Delete a backup.", [("DELETE", _B)]),
    ("backup:force_delete", "admin", "Delete a backup whatever its status.",
     [("POST", f"{_B}/action (os-force_delete)")]),
    ("backup:restore", _OWNER, "Restore a backup into a new or an existing volume.", [("POST", f"{_B}/restore")]),
    ("backup:update", _OWNER, "Update a backup's name, description and metadata (3.9).", [("PUT", _B)]),
    ("backup:export-import", "admin", "Export a backup's record.", [("GET", f"{_B}/export_record")]),
    ("backup:backup-import", "admin", "Import a backup record.", [("POST", "/backups/import_record")]),
    ("volume_extension:backup_admin_actions:reset_status", "admin", "Reset a backup's status.",
     [("POST", f"{_B}/action (os-reset_status)")]),
    ("backup:backup_project_attribute", "admin", "Add 'os-backup-project-attr:project_id' to backup responses.",
     [("GET", _B), ("GET", "/backups/detail")]),
    ("volume_extension:hosts", "admin", "List the block storage hosts and show a host's volumes and snapshots.",
     [("GET", "/os-hosts"), ("GET", "/os-hosts/{host_name}")]),
]:
    register(_name, _check, _desc, _ops)

_E = "/types/{type_id}/encryption"
for _name, _check, _desc, _ops in [
    ("volume_extension:volume_type_encryption:create", "admin", "Create a volume type's encryption spec.",
     [("POST", _E)]),
    ("volume_extension:volume_type_encryption:get", "admin", "Show a volume type's encryption spec or one item of it.",
     [("GET", _E), ("GET", f"{_E}/{{encryption_key}}")]),
    ("volume_extension:volume_type_encryption:update", "admin", "Update a volume type's encryption spec.",
     [("PUT", f"{_E}/{{encryption_id}}")]),
    ("volume_extension:volume_type_encryption:delete", "admin", "Delete a volume type's encryption spec.",
     [("DELETE", f"{_E}/{{encryption_id}}")]),
]:
    register(_name, _check, _desc, _ops)

_G, _GT, _GS = "/groups/{group_id}", "/group_types/{group_type_id}", "/group_snapshots/{group_snapshot_id}"
for _name, _check, _desc, _ops in [
    ("group:group_types:create", "admin", "Create a group type.", [("POST", "/group_types")]),
    ("group:group_types:update", "admin", "Update a group type.", [("PUT", _GT)]),
    ("group:group_types:delete", "admin", "Delete a group type.", [("DELETE", _GT)]),
    ("group:access_group_types_specs", "admin", "Show 'group_specs' in group type responses.",
     [("GET", "/group_types"), ("GET", _GT)]),
    ("group:group_types_specs:get", "admin", "Show a group type's specs or one of them.",
     [("GET", f"{_GT}/group_specs"), ("GET", f"{_GT}/group_specs/{{key}}")]),
    ("group:group_types_specs:create", "admin", "Set group type specs.",
     [("POST", f"{_GT}/group_specs"), ("PUT", f"{_GT}/group_specs/{{key}}")]),
    ("group:group_types_specs:delete", "admin", "Delete a group type spec.",
     [("DELETE", f"{_GT}/group_specs/{{key}}")]),
    ("group:get_all", _READER, "List groups.", [("GET", "/groups"), ("GET", "/groups/detail")]),
    ("group:get", _READER, "Show a group.", [("GET", _G)]),
    ("group:create", _OWNER, "Create a group (also from a group snapshot or a source group).",
     [("POST", "/groups"), ("POST", "/groups/action (create-from-src)")]),
    ("group:update", _OWNER, "Update a group, add or remove its volumes.", [("PUT", _G)]),
    ("group:delete", _OWNER, "Delete a group (and its volumes with delete-volumes).",
     [("POST", f"{_G}/action (delete)")]),
    ("group:reset_status", "admin", "Reset a group's status.", [("POST", f"{_G}/action (reset_status)")]),
    ("group:get_all_group_snapshots", _READER, "List group snapshots.",
     [("GET", "/group_snapshots"), ("GET", "/group_snapshots/detail")]),
    ("group:get_group_snapshot", _READER, "Show a group snapshot.", [("GET", _GS)]),
    ("group:create_group_snapshot", _OWNER, "Create a group snapshot.", [("POST", "/group_snapshots")]),
    ("group:delete_group_snapshot", _OWNER, "Delete a group snapshot.", [("DELETE", _GS)]),
    ("group:reset_group_snapshot_status", "admin", "Reset a group snapshot's status.",
     [("POST", f"{_GS}/action (reset_status)")]),
]:
    register(_name, _check, _desc, _ops)

_Q = "/qos-specs"
for _name, _check, _desc, _ops in [
    ("volume_extension:qos_specs_manage:create", "admin", "Create QoS specs.", [("POST", _Q)]),
    ("volume_extension:qos_specs_manage:get", "admin", "Show QoS specs.", [("GET", f"{_Q}/{{qos_id}}")]),
    ("volume_extension:qos_specs_manage:get_all", "admin", "List QoS specs and their associations.",
     [("GET", _Q), ("GET", f"{_Q}/{{qos_id}}/associations")]),
    ("volume_extension:qos_specs_manage:update", "admin",
     "Set or delete keys of QoS specs; associate or disassociate them with volume types.",
     [("PUT", f"{_Q}/{{qos_id}}"), ("PUT", f"{_Q}/{{qos_id}}/delete_keys"), ("GET", f"{_Q}/{{qos_id}}/associate"),
      ("GET", f"{_Q}/{{qos_id}}/disassociate"), ("GET", f"{_Q}/{{qos_id}}/disassociate_all")]),
    ("volume_extension:qos_specs_manage:delete", "admin", "Delete QoS specs.", [("DELETE", f"{_Q}/{{qos_id}}")]),
]:
    register(_name, _check, _desc, _ops)

register("volume:retype", _OWNER, "Change a volume's type.", [("POST", "/volumes/{volume_id}/action (os-retype)")])

for _name, _check, _desc, _ops in [
    ("volume_extension:services:index", "admin", "List the block storage services.", [("GET", "/os-services")]),
    ("volume_extension:services:update", "admin", "Enable or disable a block storage service.",
     [("PUT", "/os-services/enable"), ("PUT", "/os-services/disable"), ("PUT", "/os-services/disable-log-reason")]),
]:
    register(_name, _check, _desc, _ops)

for _name, _check, _desc, _ops in [
    ("scheduler_extension:scheduler_stats:get_pools", "admin", "List the back-end pools and their capabilities.",
     [("GET", "/scheduler-stats/get_pools")]),
    ("volume_extension:capabilities", "admin", "Show a back end's capabilities.", [("GET", "/capabilities/{host}")]),
]:
    register(_name, _check, _desc, _ops)

for _name, _check, _desc, _ops in [
    ("message:get_all", _READER, "List the project's user messages.", [("GET", "/messages")]),
    ("message:get", _READER, "Show a user message.", [("GET", "/messages/{message_id}")]),
    ("message:delete", _OWNER, "Delete a user message.", [("DELETE", "/messages/{message_id}")]),
]:
    register(_name, _check, _desc, _ops)

for _name, _check, _desc, _ops in [
    ("volume_extension:volume_host_attribute", "admin",
     "Add 'os-vol-host-attr:host' and the 'os-vol-mig-status-attr:' migration status to volume show and list "
     "detail.",
     [("GET", "/volumes/{volume_id}"), ("GET", "/volumes/detail")]),
]:
    register(_name, _check, _desc, _ops)
