"""API status of a server from its vm_state and task_state (Nova's state map), plus PENDING.

PENDING (seed 3) is shown as ``PENDING`` from microversion 2.105 and as ``ERROR`` below, both in
``status`` and in ``OS-EXT-STS:vm_state``.
"""
from __future__ import annotations

import logging

from .choices import TaskState, VmState

log = logging.getLogger(__name__)

PENDING_MICROVERSION = (2, 105)

_REBUILD_TASKS = {TaskState.REBUILDING, TaskState.REBUILD_BLOCK_DEVICE_MAPPING, TaskState.REBUILD_SPAWNING}
_STATE_MAP: dict[str, dict[str | None, str]] = {
    VmState.ACTIVE: {
        "default": "ACTIVE",
        TaskState.REBOOTING: "REBOOT",
        TaskState.REBOOT_PENDING: "REBOOT",
        TaskState.REBOOT_STARTED: "REBOOT",
        TaskState.REBOOTING_HARD: "HARD_REBOOT",
        TaskState.REBOOT_PENDING_HARD: "HARD_REBOOT",
        TaskState.REBOOT_STARTED_HARD: "HARD_REBOOT",
        TaskState.UPDATING_PASSWORD: "PASSWORD",
        TaskState.REBUILDING: "REBUILD",
        TaskState.REBUILD_BLOCK_DEVICE_MAPPING: "REBUILD",
        TaskState.REBUILD_SPAWNING: "REBUILD",
        TaskState.MIGRATING: "MIGRATING",
        TaskState.RESIZE_PREP: "RESIZE",
        TaskState.RESIZE_MIGRATING: "RESIZE",
        TaskState.RESIZE_MIGRATED: "RESIZE",
        TaskState.RESIZE_FINISH: "RESIZE",
    },
    VmState.BUILDING: {"default": "BUILD"},
    VmState.STOPPED: {
        "default": "SHUTOFF",
        TaskState.RESIZE_PREP: "RESIZE",
        TaskState.RESIZE_MIGRATING: "RESIZE",
        TaskState.RESIZE_MIGRATED: "RESIZE",
        TaskState.RESIZE_FINISH: "RESIZE",
        TaskState.REBUILDING: "REBUILD",
        TaskState.REBUILD_BLOCK_DEVICE_MAPPING: "REBUILD",
        TaskState.REBUILD_SPAWNING: "REBUILD",
    },
    VmState.RESIZED: {"default": "VERIFY_RESIZE", TaskState.RESIZE_REVERTING: "REVERT_RESIZE"},
    VmState.PAUSED: {"default": "PAUSED", TaskState.MIGRATING: "MIGRATING"},
    VmState.SUSPENDED: {"default": "SUSPENDED"},
    VmState.RESCUED: {"default": "RESCUE"},
    VmState.ERROR: {
        "default": "ERROR",
        TaskState.REBUILDING: "REBUILD",
        TaskState.REBUILD_BLOCK_DEVICE_MAPPING: "REBUILD",
        TaskState.REBUILD_SPAWNING: "REBUILD",
    },
    VmState.DELETED: {"default": "DELETED"},
    VmState.SOFT_DELETED: {"default": "SOFT_DELETED"},
    VmState.SHELVED: {"default": "SHELVED"},
    VmState.SHELVED_OFFLOADED: {"default": "SHELVED_OFFLOADED"},
    VmState.PENDING: {"default": "PENDING", TaskState.REBUILDING: "REBUILD"},
}

#: Statuses for which ``progress`` is shown.
#: Statuses that show ``progress``; PENDING is one (seed 3: a build waiting for room).
PROGRESS_STATUSES = {"ACTIVE", "BUILD", "REBUILD", "RESIZE", "VERIFY_RESIZE", "MIGRATING", "PENDING"}


def shown_vm_state(vm_state: str, version: tuple[int, int]) -> str:
    """``OS-EXT-STS:vm_state`` as a client of ``version`` sees it."""
    if vm_state == VmState.PENDING and version < PENDING_MICROVERSION:
        return VmState.ERROR
    return vm_state


def status_from_state(vm_state: str, task_state: str | None, version: tuple[int, int] = (2, 1)) -> str:
    """Nova's ``status`` for (vm_state, task_state); PENDING only from 2.105."""
    vm_state = shown_vm_state(vm_state, version)
    task_map = _STATE_MAP.get(vm_state)
    if task_map is None:
        log.error("unknown vm_state %r", vm_state)
        return "UNKNOWN"
    return task_map.get(task_state, task_map["default"])


def states_for_status(status: str, version: tuple[int, int] = (2, 1)) -> tuple[list[str], list[str | None] | None]:
    """The vm_states (and task_states, or None for any) a ``?status=`` filter means."""
    status = status.upper()
    vm_states: list[str] = []
    task_states: list[str | None] = []
    any_task = False
    for vm_state, task_map in _STATE_MAP.items():
        for task_state, shown in task_map.items():
            if shown != status:
                continue
            vm_states.append(vm_state)
            if task_state == "default":
                any_task = True
            else:
                task_states.append(task_state)
    if status == "ERROR" and version < PENDING_MICROVERSION:
        vm_states.append(VmState.PENDING)
        any_task = True
    if status == "PENDING" and version < PENDING_MICROVERSION:
        return [], None
    return sorted(set(vm_states)), (None if any_task else task_states)
