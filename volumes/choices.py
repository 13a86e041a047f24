"""Volume states (Cinder's names), importable by the other apps without ``volumes.models``."""
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
