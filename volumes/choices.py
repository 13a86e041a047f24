"""Volume and attachment states, as Cinder names them (not models: other apps import them from
here)."""
from __future__ import annotations


class VolumeStatus:
    CREATING = "creating"
    AVAILABLE = "available"
    RESERVED = "reserved"
    ATTACHING = "attaching"
    IN_USE = "in-use"
    DETACHING = "detaching"
    DELETING = "deleting"
    ERROR = "error"
    ERROR_DELETING = "error_deleting"
    EXTENDING = "extending"
    ERROR_EXTENDING = "error_extending"
    DOWNLOADING = "downloading"
    UPLOADING = "uploading"
    MAINTENANCE = "maintenance"
    BACKING_UP = "backing-up"
    RESTORING_BACKUP = "restoring-backup"
    ERROR_RESTORING = "error_restoring"


class AttachStatus:
    ATTACHED = "attached"
    ATTACHING = "attaching"
    DETACHED = "detached"
    RESERVED = "reserved"
    DETACHING = "detaching"
    ERROR_ATTACHING = "error_attaching"
    ERROR_DETACHING = "error_detaching"


class BackupStatus:
    CREATING = "creating"
    AVAILABLE = "available"
    RESTORING = "restoring"
    DELETING = "deleting"
    ERROR = "error"
    ERROR_DELETING = "error_deleting"
