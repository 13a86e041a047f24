"""Server states, as Nova names them (vm_state, task_state, power_state)."""
from __future__ import annotations


class VmState:
    ACTIVE = "active"
    BUILDING = "building"
    PAUSED = "paused"
    SUSPENDED = "suspended"
    STOPPED = "stopped"
    RESCUED = "rescued"
    RESIZED = "resized"
    SOFT_DELETED = "soft-delete"
    DELETED = "deleted"
    ERROR = "error"
    SHELVED = "shelved"
    SHELVED_OFFLOADED = "shelved_offloaded"
    PENDING = "pending"  # cloudcore (seed 3): NoValidHost with USE_PENDING_STATE on

    ALL = (
        ACTIVE, BUILDING, PAUSED, SUSPENDED, STOPPED, RESCUED, RESIZED, SOFT_DELETED, DELETED,
        ERROR, SHELVED, SHELVED_OFFLOADED, PENDING,
    )


class TaskState:
    SCHEDULING = "scheduling"
    BLOCK_DEVICE_MAPPING = "block_device_mapping"
    NETWORKING = "networking"
    SPAWNING = "spawning"
    IMAGE_SNAPSHOT = "image_snapshot"
    IMAGE_SNAPSHOT_PENDING = "image_snapshot_pending"
    IMAGE_PENDING_UPLOAD = "image_pending_upload"
    IMAGE_UPLOADING = "image_uploading"
    IMAGE_BACKUP = "image_backup"
    UPDATING_PASSWORD = "updating_password"
    RESIZE_PREP = "resize_prep"
    RESIZE_MIGRATING = "resize_migrating"
    RESIZE_MIGRATED = "resize_migrated"
    RESIZE_FINISH = "resize_finish"
    RESIZE_REVERTING = "resize_reverting"
    RESIZE_CONFIRMING = "resize_confirming"
    REBOOTING = "rebooting"
    REBOOT_PENDING = "reboot_pending"
    REBOOT_STARTED = "reboot_started"
    REBOOTING_HARD = "rebooting_hard"
    REBOOT_PENDING_HARD = "reboot_pending_hard"
    REBOOT_STARTED_HARD = "reboot_started_hard"
    PAUSING = "pausing"
    UNPAUSING = "unpausing"
    SUSPENDING = "suspending"
    RESUMING = "resuming"
    POWERING_OFF = "powering-off"
    POWERING_ON = "powering-on"
    RESCUING = "rescuing"
    UNRESCUING = "unrescuing"
    REBUILDING = "rebuilding"
    REBUILD_BLOCK_DEVICE_MAPPING = "rebuild_block_device_mapping"
    REBUILD_SPAWNING = "rebuild_spawning"
    MIGRATING = "migrating"
    DELETING = "deleting"
    SOFT_DELETING = "soft-deleting"
    RESTORING = "restoring"
    SHELVING = "shelving"
    SHELVING_IMAGE_PENDING_UPLOAD = "shelving_image_pending_upload"
    SHELVING_IMAGE_UPLOADING = "shelving_image_uploading"
    SHELVING_OFFLOADING = "shelving_offloading"
    UNSHELVING = "unshelving"


class PowerState:
    NOSTATE = 0
    RUNNING = 1
    PAUSED = 3
    SHUTDOWN = 4
    CRASHED = 6
    SUSPENDED = 7

    NAMES = {0: "pending", 1: "running", 3: "paused", 4: "shutdown", 6: "crashed", 7: "suspended"}


class MigrationStatus:
    PRE_MIGRATING = "pre-migrating"
    MIGRATING = "migrating"
    POST_MIGRATING = "post-migrating"
    FINISHED = "finished"
    CONFIRMING = "confirming"
    CONFIRMED = "confirmed"
    REVERTING = "reverting"
    REVERTED = "reverted"
    ERROR = "error"
    FAILED = "failed"
    DONE = "done"
    #: an evacuation whose source host destroyed its guest when it came back
    COMPLETED = "completed"
    ACCEPTED = "accepted"
    #: a live migration's steps (Nova's): scheduled and cast to the source, the destination
    #: preparing, the guest moving; ``cancelled`` an aborted queued one
    QUEUED = "queued"
    PREPARING = "preparing"
    RUNNING = "running"
    CANCELLED = "cancelled"
    #: a move in these states is still under way: it never ends by itself if its worker died
    UNFINISHED = (PRE_MIGRATING, MIGRATING, POST_MIGRATING, QUEUED, PREPARING, RUNNING)
    #: every step a move passes through while it is moving (what consoles draw as in flight)
    IN_FLIGHT = (ACCEPTED, PRE_MIGRATING, MIGRATING, POST_MIGRATING, CONFIRMING, REVERTING, QUEUED, PREPARING,
                 RUNNING)
    #: a live migration ``GET /servers/{id}/migrations`` shows (Nova's in-progress ones)
    LIVE_IN_PROGRESS = (QUEUED, PREPARING, RUNNING, POST_MIGRATING)


class MigrationType:
    MIGRATION = "migration"
    RESIZE = "resize"
    LIVE_MIGRATION = "live-migration"
    EVACUATION = "evacuation"
