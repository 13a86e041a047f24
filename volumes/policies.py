"""Cinder's policy rules (names as Cinder's), registered in the one registry."""
from cloudcore.core.policy import register

_OWNER = "project_member_or_admin"
_READER = "project_reader_or_admin"
for _name, _check, _desc, _ops in [
    ("volume:create", _OWNER, "Create a volume.", [("POST", "/volumes")]),
    ("volume:get_all", _READER, "List volumes.", [("GET", "/volumes"), ("GET", "/volumes/detail")]),
    ("volume:get", _READER, "Show a volume.", [("GET", "/volumes/{volume_id}")]),
    ("volume:update", _OWNER, "Update a volume.", [("PUT", "/volumes/{volume_id}")]),
    ("volume:delete", _OWNER, "Delete a volume.", [("DELETE", "/volumes/{volume_id}")]),
    ("volume:extend", _OWNER, "Extend a volume.", [("POST", "/volumes/{volume_id}/action (os-extend)")]),
    ("volume:reimage", _OWNER, "Reimage a volume (destroys its data).",
     [("POST", "/volumes/{volume_id}/action (os-reimage)")]),
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

QUOTAS = "/os-quota-sets/{project_id}"
for _name, _check, _desc, _ops in [
    ("volume_extension:quotas:show", _READER, "Show a project's quotas, with usage, or the defaults.",
     [("GET", QUOTAS), ("GET", f"{QUOTAS}?usage=True"), ("GET", f"{QUOTAS}/defaults")]),
    ("volume_extension:quotas:update", "admin", "Update a project's quotas.", [("PUT", QUOTAS)]),
    ("volume_extension:quotas:delete", "admin", "Delete a project's quotas (back to the defaults).",
     [("DELETE", QUOTAS)]),
]:
    register(_name, _check, _desc, _ops)
